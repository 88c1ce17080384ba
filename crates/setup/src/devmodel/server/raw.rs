//! The raw pieces the ring loops use (`uring.rs`): FUSE's ring commands
//! and their submissions, the host file's IO outside the ring, and how
//! many queues and loops there are.

use std::os::fd::RawFd;

use io_uring::squeue;

/// `FUSE_IO_URING_CMD_REGISTER`.
pub(super) const REGISTER: u32 = 1;
/// `FUSE_IO_URING_CMD_COMMIT_AND_FETCH`.
pub(super) const COMMIT_AND_FETCH: u32 = 2;

/// The CPU queues the kernel makes: one per possible CPU
/// (`num_possible_cpus`, a count of the mask `0-3,8-11`).
pub(super) fn possible_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .map(|s| {
            s.trim()
                .split(',')
                .filter_map(|r| match r.split_once('-') {
                    Some((a, b)) => Some(b.parse::<usize>().ok()? + 1 - a.parse::<usize>().ok()?),
                    None => r.parse::<usize>().ok().map(|_| 1),
                })
                .sum::<usize>()
        })
        .filter(|n| *n > 0)
        .unwrap_or(1)
}

/// How many loops serve the queues: `AMPBENCH_DEVICE_RINGS` (1 to the
/// number of queues), else one per queue.
pub(super) fn rings(queues: usize) -> usize {
    std::env::var("AMPBENCH_DEVICE_RINGS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(queues)
        .clamp(1, queues)
}

/// The host file's IO at once if it need not wait (`RWF_NOWAIT`: a read
/// from the page cache, a write into it): its result, or `None` when it
/// would block (or the file cannot say), for the ring to do.
pub(super) fn nowait(fd: RawFd, write: bool, buf: &mut [u8], off: u64) -> Option<i32> {
    let iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: one valid iovec over `buf`, on an open descriptor.
    let r = unsafe {
        if write {
            libc::pwritev2(fd, &iov, 1, off as libc::off_t, libc::RWF_NOWAIT)
        } else {
            libc::preadv2(fd, &iov, 1, off as libc::off_t, libc::RWF_NOWAIT)
        }
    };
    if r as usize == buf.len() {
        return Some(r as i32);
    }
    // Short, would block, or not supported: the ring does it whole.
    None
}

/// A whole buffered write of `buf` at `off`: its length, or an errno.
pub(super) fn rw_at(fd: RawFd, buf: &[u8], off: u64) -> Result<usize, i32> {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: a valid buffer on an open descriptor.
        let r = unsafe {
            libc::pwrite(
                fd,
                buf[done..].as_ptr().cast(),
                buf.len() - done,
                (off + done as u64) as libc::off_t,
            )
        };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e.raw_os_error().unwrap_or(libc::EIO));
        }
        if r == 0 {
            return Err(libc::EIO);
        }
        done += r as usize;
    }
    Ok(done)
}

/// `sqe` with its `len` field set: `UringCmd80` leaves it 0, and
/// registration takes the number of iovecs there.
pub(super) fn with_len(sqe: squeue::Entry128, len: u32) -> squeue::Entry128 {
    const _: () = assert!(std::mem::size_of::<squeue::Entry128>() == 128);
    // SAFETY: Entry128 is repr(C): a 64-byte io_uring_sqe (its `len` at
    // byte 24, a u32) and 64 command bytes; any bytes are a valid value.
    let mut raw: [u8; 128] = unsafe { std::mem::transmute(sqe) };
    raw[24..28].copy_from_slice(&len.to_ne_bytes());
    // SAFETY: as above.
    unsafe { std::mem::transmute(raw) }
}

/// The command bytes of a submission: `struct fuse_uring_cmd_req`.
pub(super) fn cmd_req(commit_id: u64, qid: u16) -> [u8; 80] {
    let mut c = [0u8; 80];
    c[8..16].copy_from_slice(&commit_id.to_ne_bytes());
    c[16..18].copy_from_slice(&qid.to_ne_bytes());
    c
}
