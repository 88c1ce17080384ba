//! Out-of-memory at the `--memory` limit, said in words.
//!
//! The kernel's OOM killer stays on: turning it off (cgroup v1
//! `memory.oom_control`) makes a write(2) that cannot charge its page
//! cache fail with ENOMEM instead, and RocksDB then aborts on its own
//! assertion; the engine waiting at the limit for dirty pages to be
//! written back on a throttled device is worse than a clear kill. So:
//! - [`oom_kills`]: the group's OOM kills so far; the runner fails a step
//!   of a server engine with that reason when the server was the victim.
//! - [`DeathNote`]: an embedded engine runs in ampbench, so the victim is
//!   ampbench itself. A process forked before ampbench joins the group
//!   (outside the limit) waits on a pipe; when ampbench dies without
//!   closing it in order, it reads the group's OOM kill count and, if the
//!   OOM killer was the cause, prints one line saying so. Then it becomes
//!   `ampbench doctor --cleanup --dead PID` (exec), which removes the
//!   run's device, mount and cgroup, so nothing of a killed run outlives
//!   it. Until the exec it only makes system calls (it is a fork of a
//!   threaded process: no allocation, no locks).

use super::cgroup::{MemCgroup, Version};

/// OOM kills in the group so far (v1 `memory.oom_control` `oom_kill`, v2
/// `memory.events` `oom_kill`).
pub fn oom_kills(cg: &MemCgroup) -> Option<u64> {
    let file = match cg.version() {
        Version::V1 => "memory.oom_control",
        Version::V2 => "memory.events",
    };
    std::fs::read_to_string(cg.dir().join(file))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("oom_kill ")?.trim().parse().ok())
}

/// The watcher of an embedded engine's group (see the module doc).
pub struct DeathNote {
    /// The write end of the pipe; closed after `done` is written.
    fd: libc::c_int,
    child: libc::pid_t,
}

impl DeathNote {
    /// Starts the watcher for `cg` (call before ampbench joins it).
    pub fn start(cg: &MemCgroup, limit: u64, engine: &str) -> Option<DeathNote> {
        let file = match cg.version() {
            Version::V1 => "memory.oom_control",
            Version::V2 => "memory.events",
        };
        let path =
            std::ffi::CString::new(cg.dir().join(file).as_os_str().as_encoded_bytes()).ok()?;
        // Formatted now: nothing is formatted in the child.
        let note = format!(
            "ampbench: killed by the kernel's out-of-memory killer at the --memory limit of {} while {engine} ran in it; give more --memory or a smaller --cache (results so far are in the results file; its device and cgroup are removed next)\n",
            crate::engine::options::format_size(limit)
        )
        .into_bytes();
        // The cleanup command, made now: nothing is allocated in the child.
        let exe = std::env::current_exe()
            .ok()
            .and_then(|p| std::ffi::CString::new(p.into_os_string().into_encoded_bytes()).ok())?;
        let args: Vec<std::ffi::CString> = [
            "ampbench".to_string(),
            "doctor".into(),
            "--cleanup".into(),
            "--dead".into(),
            std::process::id().to_string(),
        ]
        .into_iter()
        .filter_map(|a| std::ffi::CString::new(a).ok())
        .collect();
        let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 fills two descriptors.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return None;
        }
        // SAFETY: fork; the child runs `wait_for` (system calls only) and _exits.
        let child = unsafe { libc::fork() };
        if child == 0 {
            // SAFETY: in the child: async-signal-safe calls only.
            unsafe {
                libc::close(fds[1]);
                if wait_for(fds[0], &path, &note) {
                    // ampbench has closed its files: it is exiting. Give
                    // it a moment to leave its cgroup, then clean up.
                    let pause = libc::timespec {
                        tv_sec: 0,
                        tv_nsec: 200_000_000,
                    };
                    libc::nanosleep(&pause, std::ptr::null_mut());
                    libc::execv(exe.as_ptr(), argv.as_ptr());
                }
                libc::_exit(0);
            }
        }
        // SAFETY: our own descriptor.
        unsafe { libc::close(fds[0]) };
        if child < 0 {
            // SAFETY: our own descriptor.
            unsafe { libc::close(fds[1]) };
            return None;
        }
        Some(DeathNote { fd: fds[1], child })
    }
}

/// The child: reads the pipe until ampbench writes `d` (an orderly end) or
/// dies (EOF), then, on a death with an OOM kill in the group, prints the
/// note to the inherited stderr. True when ampbench died.
fn wait_for(fd: libc::c_int, events: &std::ffi::CStr, note: &[u8]) -> bool {
    let mut b = [0u8; 1];
    // SAFETY: reads one byte into a stack buffer.
    let n = unsafe { libc::read(fd, b.as_mut_ptr().cast(), 1) };
    if n == 1 && b[0] == b'd' {
        return false;
    }
    let mut buf = [0u8; 512];
    // SAFETY: open/read/close on a valid C string and a stack buffer.
    let len = unsafe {
        let f = libc::open(events.as_ptr(), libc::O_RDONLY);
        if f < 0 {
            return true;
        }
        let len = libc::read(f, buf.as_mut_ptr().cast(), buf.len());
        libc::close(f);
        len.max(0) as usize
    };
    let text = &buf[..len];
    let key = b"oom_kill ";
    let killed = text
        .windows(key.len())
        .position(|w| w == key)
        .and_then(|i| text.get(i + key.len()))
        .is_some_and(|c| c.is_ascii_digit() && *c != b'0');
    if killed {
        // SAFETY: writes the prepared note to stderr.
        unsafe { libc::write(2, note.as_ptr().cast(), note.len()) };
    }
    true
}

impl Drop for DeathNote {
    fn drop(&mut self) {
        // SAFETY: our descriptor and child.
        unsafe {
            libc::write(self.fd, b"d".as_ptr().cast(), 1);
            libc::close(self.fd);
            let mut st = 0;
            libc::waitpid(self.child, &mut st, 0);
        }
    }
}
