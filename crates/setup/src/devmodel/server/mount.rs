//! Mounting the model's filesystem without a helper: `/dev/fuse` opened
//! non-blocking, `mount(2)` with its descriptor. Named
//! `ampbench-device-model` (as `clean_leftovers` looks for it), no
//! set-uid, devices or programs, and only root (the mounting user) may
//! use it: no `allow_other`.

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};

/// Mounts the filesystem at `at`; the descriptor the kernel sends its
/// requests to.
pub fn mount(at: &Path) -> Result<Arc<OwnedFd>> {
    // SAFETY: a constant path; the result is checked.
    let raw = unsafe {
        libc::open(
            c"/dev/fuse".as_ptr(),
            libc::O_RDWR | libc::O_CLOEXEC | libc::O_NONBLOCK,
        )
    };
    if raw < 0 {
        return Err(std::io::Error::last_os_error()).context("cannot open /dev/fuse");
    }
    // SAFETY: raw was just opened and is owned here alone.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: no preconditions.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    let opts = std::ffi::CString::new(format!(
        "fd={raw},rootmode=40000,user_id={uid},group_id={gid}"
    ))?;
    let target = std::ffi::CString::new(at.as_os_str().as_encoded_bytes())
        .with_context(|| format!("{}: not a path", at.display()))?;
    // SAFETY: valid C strings; the kernel reads them only.
    let r = unsafe {
        libc::mount(
            c"ampbench-device-model".as_ptr(),
            target.as_ptr(),
            c"fuse".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            opts.as_ptr().cast(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("cannot mount the device model at {}", at.display()));
    }
    Ok(Arc::new(fd))
}
