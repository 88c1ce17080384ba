//! Where ampbench's output goes: a reader that went away ends the command
//! quietly; any other failure to write is an error line.

use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};

mod common;
use common::BIN;

/// A pipe whose reading end is already closed: every write to it fails
/// with EPIPE.
fn closed_pipe() -> OwnedFd {
    let mut fds = [0; 2];
    // SAFETY: pipe fills the two-int array it is given.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both fds were just opened by pipe and are owned here only.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(r);
    w
}

/// `ampbench list | head -0`: exit 0, nothing on standard error.
#[test]
fn a_reader_that_went_away_ends_the_command_quietly() {
    let o = Command::new(BIN)
        .arg("list")
        .stdout(Stdio::from(closed_pipe()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{:?}: {err}", o.status);
    assert!(err.is_empty(), "{err}");
}

/// A full device is not a reader going away: exit 1 and one line.
#[test]
fn a_full_output_is_still_an_error() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = Command::new(BIN)
        .arg("list")
        .stdout(Stdio::from(full))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("No space left on device"), "{err}");
}
