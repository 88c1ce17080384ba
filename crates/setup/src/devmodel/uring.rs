//! The machine's switch for FUSE over io_uring
//! (`/sys/module/fuse/parameters/enable_uring`): off by default, root
//! may set it. A run sets it only while its server registers its rings
//! (a connection that agreed to io_uring keeps it after the switch is put
//! back), and says so on the storage line. While it is on, any user of
//! the machine could mount a FUSE filesystem over io_uring (fusermount3):
//! the window is the server's start, milliseconds. Two runs starting at
//! once may meet: one puts the switch back before the other's server has
//! agreed to io_uring, and that one serves over `/dev/fuse` (`auto`,
//! said on its storage line) or fails (`uring`).

use std::path::Path;

const PARAM: &str = "/sys/module/fuse/parameters/enable_uring";

/// The switch was off and this run turned it on: put back by
/// [`restore`], or when dropped (an error or panic between the two).
#[derive(Debug)]
pub struct Set {
    back: bool,
}

impl Drop for Set {
    fn drop(&mut self) {
        if !self.back {
            let _ = std::fs::write(PARAM, "N\n");
        }
    }
}

/// Turns the switch on if it is off and can be set; `Some` when this
/// run changed it.
pub fn enable() -> Option<Set> {
    let p = Path::new(PARAM);
    let now = std::fs::read_to_string(p).ok()?;
    if now.trim() != "N" {
        return None;
    }
    std::fs::write(p, "Y\n").ok().map(|_| Set { back: false })
}

/// Puts the switch back to off; what was done, in words.
pub fn restore(mut set: Set) -> String {
    set.back = true;
    match std::fs::write(PARAM, "N\n") {
        Ok(()) => format!("{PARAM} set to Y for the mount and put back to N"),
        Err(e) => format!("{PARAM} set to Y for the mount; putting it back to N failed: {e}"),
    }
}
