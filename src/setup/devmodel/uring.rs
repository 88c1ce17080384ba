//! The machine's switch for FUSE over io_uring
//! (`/sys/module/fuse/parameters/enable_uring`): off by default, root
//! may set it. A run sets it only while its server registers its rings
//! (a connection that agreed to io_uring keeps it after the switch is put
//! back), and says so on the storage line.

use std::path::Path;

const PARAM: &str = "/sys/module/fuse/parameters/enable_uring";

/// The switch was off and this run turned it on: to be put back.
#[derive(Debug)]
pub struct Set;

/// Turns the switch on if it is off and can be set; `Some` when this
/// run changed it.
pub fn enable() -> Option<Set> {
    let p = Path::new(PARAM);
    let now = std::fs::read_to_string(p).ok()?;
    if now.trim() != "N" {
        return None;
    }
    std::fs::write(p, "Y\n").ok().map(|_| Set)
}

/// Puts the switch back to off; what was done, in words.
pub fn restore(_: Set) -> String {
    match std::fs::write(PARAM, "N\n") {
        Ok(()) => format!("{PARAM} set to Y for the mount and put back to N"),
        Err(e) => format!("{PARAM} set to Y for the mount; putting it back to N failed: {e}"),
    }
}
