//! Our own system calls, counted by the kernel: a perf counter on the
//! `raw_syscalls:sys_enter` tracepoint for this process, inherited by every
//! thread created after it opens (so it is opened before any worker), and
//! by no child process (a server we start counts its own).
//! /proc has no such counter (`/proc/PID/io` syscr/syscw miss send and
//! recv), and the client's cost per request is mostly system calls.
//!
//! Needs root (or `perf_event_paranoid` ≤ -1) and tracefs: when tracefs is
//! not mounted, it is mounted on a temporary directory for the moment it
//! takes to read the tracepoint's id, then unmounted. Counting costs the
//! counted process a little CPU per system call; it is opened only when a
//! run measures a server's client.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::OnceLock;

/// `perf_event_attr`, the first published layout (PERF_ATTR_SIZE_VER0).
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const PERF_TYPE_TRACEPOINT: u32 = 2;
/// `inherit`: bit 1 of the flags.
const INHERIT: u64 = 1 << 1;
/// `inherit_thread` (Linux 5.13): inherited by threads only, not by child
/// processes, so the servers we start are not counted as ours.
const INHERIT_THREAD: u64 = 1 << 35;

/// The counter, once opened (or why it could not be).
static COUNTER: OnceLock<Result<OwnedFd, String>> = OnceLock::new();

/// Opens the process-wide counter; later calls return the first result.
/// Call it before spawning the threads to count.
pub fn start() -> Result<(), String> {
    COUNTER
        .get_or_init(open)
        .as_ref()
        .map(|_| ())
        .map_err(Clone::clone)
}

/// System calls made so far by this process's threads created after
/// [`start`] (and the thread that called it); `None` if not counting.
pub fn read() -> Option<u64> {
    let fd = COUNTER.get()?.as_ref().ok()?;
    let mut v = 0u64;
    // SAFETY: reads 8 bytes into `v` from a perf counter fd we own.
    let n = unsafe { libc::read(fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    (n == 8).then_some(v)
}

/// Why system calls are not counted, if they are not.
pub fn not_counted() -> Option<String> {
    match COUNTER.get() {
        None => Some("system calls are counted only when a run measures a server's client".into()),
        Some(Err(e)) => Some(e.clone()),
        Some(Ok(_)) => None,
    }
}

fn tracepoint_id() -> Result<u64, String> {
    const REL: &str = "events/raw_syscalls/sys_enter/id";
    for root in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        if let Ok(s) = std::fs::read_to_string(format!("{root}/{REL}")) {
            return s.trim().parse().map_err(|e| format!("{root}/{REL}: {e}"));
        }
    }
    // Not mounted: mount tracefs privately for one read.
    let dir = tempfile::tempdir().map_err(|e| format!("tracefs: {e}"))?;
    let out = std::process::Command::new("mount")
        .args(["-t", "tracefs", "nodev"])
        .arg(dir.path())
        .output()
        .map_err(|e| format!("tracefs: cannot run mount: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "tracefs is not mounted and cannot be: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let id = std::fs::read_to_string(dir.path().join(REL));
    let _ = std::process::Command::new("umount")
        .arg(dir.path())
        .status();
    id.map_err(|e| format!("tracefs has no raw_syscalls:sys_enter: {e}"))?
        .trim()
        .parse()
        .map_err(|e| format!("raw_syscalls:sys_enter id: {e}"))
}

fn open() -> Result<OwnedFd, String> {
    let id = tracepoint_id()?;
    let attr = PerfEventAttr {
        kind: PERF_TYPE_TRACEPOINT,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: id,
        flags: INHERIT | INHERIT_THREAD,
        ..Default::default()
    };
    // SAFETY: perf_event_open(attr, pid 0 = this thread (inherited by the
    // threads it creates), cpu -1 = any, no group, no flags); `attr` lives
    // across the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            0,
            -1,
            -1,
            0,
        )
    };
    if fd < 0 {
        return Err(format!(
            "perf_event_open(raw_syscalls:sys_enter): {} (needs root or kernel.perf_event_paranoid <= -1)",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: the kernel returned a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_a_threads_system_calls() {
        if let Err(why) = super::start() {
            crate::testing::skip("counts_a_threads_system_calls", &why);
            return;
        }
        let before = super::read().unwrap();
        std::thread::spawn(|| {
            for _ in 0..1000 {
                // SAFETY: getppid has no arguments and cannot fail.
                unsafe { libc::getppid() };
            }
        })
        .join()
        .unwrap();
        let d = super::read().unwrap() - before;
        // 1000 getppid plus the thread's own start and exit.
        assert!((1000..1300).contains(&d), "{d}");
        // A child process is not ours.
        let before = super::read().unwrap();
        let st = std::process::Command::new("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 2000 ]; do i=$((i+1)); : </dev/null; done",
            ])
            .status()
            .unwrap();
        assert!(st.success());
        let d = super::read().unwrap() - before;
        assert!(d < 1000, "a child's system calls counted: {d}");
    }
}
