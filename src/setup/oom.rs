//! The memory limit's watcher for embedded engines (see [`OomWatch`]).

use super::cgroup::{MemCgroup, Version};

/// Keeps an embedded engine's run alive at its memory limit: with the
/// group's OOM killer off (cgroup v1 `memory.oom_control`), a watcher
/// process forked before ampbench joins the group (so it is outside the
/// limit and never blocks with it) sees the group run out of memory,
/// raises the limit by half so the blocked threads go on, and counts it in
/// a shared page, so the step fails with a message instead of ampbench
/// hanging or being killed without a word. After three raises the OOM
/// killer is turned back on. The watcher only makes system calls (no
/// allocation, no locks: it is a fork of a threaded process) and dies
/// with ampbench (`PR_SET_PDEATHSIG`).
pub struct OomWatch {
    /// A shared anonymous page: [fired count, stop flag].
    page: *mut std::sync::atomic::AtomicU32,
    child: libc::pid_t,
}

/// Reads a small cgroup file into `buf` without allocating.
fn read_raw(path: &std::ffi::CStr, buf: &mut [u8]) -> usize {
    // SAFETY: open/read/close on a valid C string and a stack buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_RDONLY);
        if fd < 0 {
            return 0;
        }
        let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        n.max(0) as usize
    }
}

/// Writes bytes to a cgroup file without allocating.
fn write_raw(path: &std::ffi::CStr, bytes: &[u8]) -> bool {
    // SAFETY: open/write/close on a valid C string and a byte slice.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY);
        if fd < 0 {
            return false;
        }
        let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        n == bytes.len() as isize
    }
}

impl OomWatch {
    /// Turns the OOM killer off for `cg` and starts the watcher (v1 only;
    /// None elsewhere). Call before ampbench joins the group.
    pub fn start(cg: &MemCgroup, limit: u64) -> Option<OomWatch> {
        use std::sync::atomic::AtomicU32;
        if cg.version() != Version::V1
            || std::fs::write(cg.dir().join("memory.oom_control"), "1").is_err()
        {
            return None;
        }
        let c =
            |f: &str| std::ffi::CString::new(cg.dir().join(f).as_os_str().as_encoded_bytes()).ok();
        let (oom, lim) = (c("memory.oom_control")?, c("memory.limit_in_bytes")?);
        // The raised limits, formatted now: nothing is formatted in the child.
        let raised: Vec<Vec<u8>> = (1..=3i32)
            .map(|i| ((limit as f64) * 1.5f64.powi(i)) as u64)
            .map(|b| b.to_string().into_bytes())
            .collect();
        // SAFETY: an anonymous shared mapping of one page, checked below,
        // unmapped on drop; two AtomicU32 fit in it and it is zeroed.
        let page = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if page == libc::MAP_FAILED {
            return None;
        }
        let page = page.cast::<AtomicU32>();
        // SAFETY: fork; the child runs `watch` (system calls only) and _exits.
        let child = unsafe { libc::fork() };
        if child == 0 {
            // SAFETY: in the child: async-signal-safe calls only.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                watch(&*page, &*page.add(1), &oom, &lim, &raised);
                libc::_exit(0);
            }
        }
        if child < 0 {
            // SAFETY: mapped above.
            unsafe { libc::munmap(page.cast(), 4096) };
            return None;
        }
        Some(OomWatch { page, child })
    }

    /// How many times the group ran out of memory so far.
    pub fn fired(&self) -> u32 {
        // SAFETY: the page lives until drop.
        unsafe { (*self.page).load(std::sync::atomic::Ordering::Relaxed) }
    }
}

/// The watcher's loop (in the forked child).
fn watch(
    fired: &std::sync::atomic::AtomicU32,
    stop: &std::sync::atomic::AtomicU32,
    oom: &std::ffi::CStr,
    lim: &std::ffi::CStr,
    raised: &[Vec<u8>],
) {
    use std::sync::atomic::Ordering;
    let mut buf = [0u8; 256];
    while stop.load(Ordering::Relaxed) == 0 {
        let n = read_raw(oom, &mut buf);
        if buf[..n].windows(11).any(|w| w == b"under_oom 1") {
            let k = fired.load(Ordering::Relaxed) as usize;
            match raised.get(k) {
                Some(b) => write_raw(lim, b),
                None => write_raw(oom, b"0"),
            };
            fired.fetch_add(1, Ordering::Relaxed);
        }
        let ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 20_000_000,
        };
        // SAFETY: nanosleep with a valid timespec.
        unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
    }
}

impl Drop for OomWatch {
    fn drop(&mut self) {
        // SAFETY: the page is mapped until munmap below; the child is ours.
        unsafe {
            (*self.page.add(1)).store(1, std::sync::atomic::Ordering::Relaxed);
            let mut st = 0;
            libc::waitpid(self.child, &mut st, 0);
            libc::munmap(self.page.cast(), 4096);
        }
    }
}
