//! A local server process ampbench starts and always stops: on close, on
//! drop (errors, panics), on Ctrl-C (it is in its own process group, so the
//! terminal's SIGINT reaches only us, and we stop it), and when ampbench
//! itself dies (the kernel sends it SIGTERM: `PR_SET_PDEATHSIG`).

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

mod bin;
mod files;
mod netns;
mod running;
mod settings;

pub use crate::sys::random_password;
pub use bin::ServerBin;
pub use files::{
    check_reachable, chown_tree, create_dir_new, create_new, open_guarded, private_dir, read_log,
    user_ids,
};
pub use netns::PrivateNet;
use running::kill_family;
pub use running::{Knock, Server, Starter};
pub use settings::{Settings, check_setting, shell_quote};

/// A running server process.
pub struct ServerProcess {
    child: Option<Child>,
    name: String,
    stop_signal: i32,
    log: std::path::PathBuf,
}

/// The search path of the servers ampbench starts and of their scripts.
pub const SERVER_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// A free TCP port on 127.0.0.1 (bound, then released).
pub fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("no free port on 127.0.0.1")?;
    Ok(l.local_addr()?.port())
}

/// Makes `cmd` a managed child: own process group, SIGTERM when we die,
/// output to `log`, glibc malloc arenas as ampbench's.
pub fn managed(cmd: &mut Command, log: &Path) -> Result<()> {
    // Appended to: a server started again after a crash keeps the first
    // start's lines. Never through a link, a FIFO or a hard link: the
    // directory may be the server user's.
    let out = open_guarded(log, true)?;
    let err = out.try_clone()?;
    cmd.stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        // The servers' glibc malloc keeps one arena per CPU, as ampbench's
        // own does (see `cgroup::harness_memory`).
        .env("MALLOC_ARENA_MAX", crate::sys::arenas().to_string())
        // Programs the server and its scripts run (a Galera state
        // transfer's rsync, ps, mktemp) are found only in the system's
        // directories, never in a writable one root's PATH may hold;
        // `--server-bin` gives its programs by their full paths.
        .env("PATH", SERVER_PATH)
        // ampbench's secrets stay out of a server's environment (readable
        // by the server's user in /proc/PID/environ).
        .env_remove("AMPBENCH_TARGET_PASSWORD")
        .env_remove("AMPBENCH_RESULTS_PASSWORD")
        .env_remove("AMPBENCH_HOST_ARGS");
    // SAFETY: prctl is async-signal-safe; it only sets this child's
    // parent-death signal between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}

/// The most of a log an error message reads: its last MiB.
const LOG_READ: u64 = 1 << 20;

/// The last lines of a log file, for an error message (read as
/// [`open_guarded`] opens it, control characters removed).
pub fn tail(log: &Path, lines: usize) -> String {
    let b = read_log(log, LOG_READ);
    let t = String::from_utf8_lossy(&b);
    let v: Vec<&str> = t.lines().filter(|l| !l.trim().is_empty()).collect();
    crate::sys::printable(&v[v.len().saturating_sub(lines)..].join(" | ")).into_owned()
}

/// The error lines of a tool's log (lines naming `ERROR`), or its last
/// lines when it has none: install scripts end on pages of advice that
/// hide the one line saying what failed.
pub fn errors_or_tail(log: &Path, lines: usize) -> String {
    errors_or_tail_from(log, 0, lines)
}

/// [`errors_or_tail`] of what the log gained after byte `from`: one
/// start's lines in a log that every start of a server appends to.
pub fn errors_or_tail_from(log: &Path, from: u64, lines: usize) -> String {
    let len = std::fs::symlink_metadata(log).map_or(0, |m| m.len());
    let b = read_log(log, len.saturating_sub(from).min(LOG_READ));
    let t = String::from_utf8_lossy(&b);
    let errs: Vec<&str> = t
        .lines()
        .filter(|l| l.contains("ERROR") || l.contains("[Error]"))
        .take(lines)
        .collect();
    let s = if errs.is_empty() {
        let v: Vec<&str> = t.lines().filter(|l| !l.trim().is_empty()).collect();
        v[v.len().saturating_sub(lines)..].join(" | ")
    } else {
        errs.join(" | ")
    };
    crate::sys::printable(&s).into_owned()
}

impl ServerProcess {
    /// Starts `cmd` (already made [`managed`]) and waits until `ready`
    /// returns true, the process exits, or `timeout` passes.
    pub fn start(
        name: &str,
        mut cmd: Command,
        log: &Path,
        stop_signal: i32,
        timeout: Duration,
        ready: impl Fn() -> bool,
    ) -> Result<ServerProcess> {
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {name}"))?;
        register(child.id());
        let mut p = ServerProcess {
            child: Some(child),
            name: name.into(),
            stop_signal,
            log: log.to_path_buf(),
        };
        let t0 = Instant::now();
        loop {
            if let Some(c) = p.child.as_mut() {
                if let Some(st) = c.try_wait()? {
                    unregister(c.id());
                    p.child = None;
                    bail!("{name} exited during start-up ({st}): {}", tail(log, 5));
                }
            }
            if ready() {
                return Ok(p);
            }
            if t0.elapsed() > timeout {
                let _ = p.stop();
                bail!(
                    "{name} not ready after {}s: {}",
                    timeout.as_secs(),
                    tail(log, 5)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    /// True while the process runs.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// Stops the server: its stop signal, up to 60 s, then SIGKILL.
    pub fn stop(&mut self) -> Result<()> {
        let Some(mut c) = self.child.take() else {
            return Ok(());
        };
        unregister(c.id());
        if c.try_wait()?.is_some() {
            return Ok(());
        }
        // SAFETY: signals our own child; SIGCONT lets a stopped one
        // (SIGSTOP, a debugger) act on the stop signal.
        unsafe {
            libc::kill(c.id() as i32, self.stop_signal);
            libc::kill(c.id() as i32, libc::SIGCONT);
        }
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(60) {
            if c.try_wait()?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // Its helpers too (a state transfer's script and rsync daemon).
        kill_family(c.id());
        let _ = c.wait();
        bail!(
            "{} did not stop within 60 s and was killed: {}",
            self.name,
            tail(&self.log, 3)
        )
    }

    /// Waits for a server that was killed to exit (up to 10 s).
    pub fn reap(&mut self) -> Result<()> {
        let Some(mut c) = self.child.take() else {
            return Ok(());
        };
        unregister(c.id());
        let t0 = Instant::now();
        while c.try_wait()?.is_none() {
            if t0.elapsed() > Duration::from_secs(10) {
                kill_family(c.id());
                c.wait()?;
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// The processes a run started and may have to kill at once (servers,
/// engine hosts): a second Ctrl-C kills them all ([`kill_registered`]).
static STARTED: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// Notes a process this run started (see [`kill_registered`]).
pub fn register(pid: u32) {
    if let Ok(mut v) = STARTED.lock() {
        v.push(pid);
    }
}

/// Forgets a process that ended.
pub fn unregister(pid: u32) {
    if let Ok(mut v) = STARTED.lock() {
        v.retain(|p| *p != pid);
    }
}

/// Kills every registered process with its group and descendants, and
/// waits up to 5 s until none of them runs.
pub fn kill_registered() {
    let pids: Vec<u32> = STARTED.lock().map(|v| v.clone()).unwrap_or_default();
    let mut all = Vec::new();
    for p in pids {
        all.push(p);
        all.extend(kill_family(p));
    }
    let t0 = Instant::now();
    while any_running(&all) && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every process's (pid, state, parent) from /proc.
fn processes() -> Vec<(u32, char, u32)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse().ok()?;
            let s = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // Fields after the command's closing paren: state, ppid, ….
            let mut f = s.rsplit_once(')')?.1.split_whitespace();
            let state = f.next()?.chars().next()?;
            Some((pid, state, f.next()?.parse().ok()?))
        })
        .collect()
}

/// `root`'s descendants that are running (zombies do not count).
fn descendants(root: u32) -> Vec<u32> {
    let all = processes();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            all.iter()
                .filter(|p| p.2 == parent && p.1 != 'Z')
                .map(|p| p.0),
        );
        i += 1;
    }
    found.remove(0);
    found
}

/// True while one of `pids` runs (a zombie holds no memory or files).
fn any_running(pids: &[u32]) -> bool {
    processes()
        .iter()
        .any(|p| p.1 != 'Z' && pids.contains(&p.0))
}

/// Makes `cmd` join a cgroup before it runs, by writing `0` (the writer
/// itself) to the group's `cgroup.procs`: the server and every process it
/// forks are charged to the group from their first byte.
pub fn join_cgroup(cmd: &mut Command, procs: Option<&Path>) -> Result<()> {
    let Some(procs) = procs else {
        return Ok(());
    };
    let c = std::ffi::CString::new(procs.as_os_str().as_encoded_bytes()).context("cgroup path")?;
    // SAFETY: enter_cgroup is async-signal-safe; the path was built
    // before fork, so nothing is allocated in the child.
    unsafe {
        cmd.pre_exec(move || enter_cgroup(&c));
    }
    Ok(())
}

/// Moves the calling process into the cgroup whose `cgroup.procs` is
/// `procs`, by writing `0` (itself) to it. Only async-signal-safe calls
/// (open, write, close) and no allocation: it runs between fork and exec.
pub fn enter_cgroup(procs: &std::ffi::CStr) -> std::io::Result<()> {
    // SAFETY: a NUL-terminated path; the descriptor is closed on every path.
    unsafe {
        let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = libc::write(fd, b"0".as_ptr().cast(), 1);
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if n != 1 {
            return Err(err);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_lines_before_the_advice() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("install.log");
        std::fs::write(
            &log,
            "Installing tables ...\nERROR: 1051  Unknown table 'mysql.tmp_user_sys'\n\
             2026-11-24 0 [ERROR] Aborting\nInstallation failed!\n\nadvice 1\nadvice 2\n",
        )
        .unwrap();
        assert_eq!(
            errors_or_tail(&log, 5),
            "ERROR: 1051  Unknown table 'mysql.tmp_user_sys' | 2026-11-24 0 [ERROR] Aborting"
        );
        std::fs::write(&log, "one\ntwo\n\nthree\n").unwrap();
        assert_eq!(errors_or_tail(&log, 2), "two | three");
    }
}

#[cfg(test)]
mod access_tests {
    use super::*;

    #[test]
    fn settings_cannot_inject_or_open_the_server() {
        let r = &Settings {
            extra: '-',
            noun: "a my.cnf setting",
        };
        assert!(check_setting("m", "innodb_buffer_pool_size", "1G", r).is_ok());
        for (k, v) in [
            ("innodb_buffer_pool_size", "1G\nbind-address=0.0.0.0"),
            ("innodb_buffer_pool_size", "1G\r"),
            ("x", "a\0b"),
            ("x", "[client]"),
        ] {
            let e = check_setting("mariadb-innodb", k, v, r).unwrap_err().0;
            assert!(e.starts_with(&format!("--set mariadb-innodb.{k}")), "{e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }

    #[test]
    fn shell_quoting_keeps_a_path_one_word() {
        assert_eq!(shell_quote("/a b/c"), "'/a b/c'");
        assert_eq!(shell_quote("/x';rm"), r"'/x'\'';rm'");
        // The shell reads it back as the one word it was.
        let o = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf %s {}", shell_quote("/x'; echo no; '")))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&o.stdout), "/x'; echo no; '");
    }

    #[test]
    fn root_opens_no_link_fifo_or_hard_link_in_a_servers_directory() {
        let d = tempfile::tempdir().unwrap();
        let outside = d.path().join("outside");
        std::fs::write(&outside, b"secret\n").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        // A new file: never through a link, never over a file.
        let e = create_new(&link, b"x", 0o600, None).unwrap_err();
        assert!(format!("{e:#}").contains("symbolic link"), "{e:#}");
        assert!(create_new(&outside, b"x", 0o600, None).is_err());
        assert_eq!(std::fs::read(&outside).unwrap(), b"secret\n");
        let e = create_dir_new(&link, 0o700, None).unwrap_err();
        assert!(format!("{e:#}").contains("link"), "{e:#}");
        // A log: refused as a link, a FIFO (without blocking) or a hard
        // link, and never quoted in an error through one.
        for append in [true, false] {
            let e = open_guarded(&link, append).unwrap_err();
            assert!(format!("{e:#}").contains("symbolic link"), "{e:#}");
        }
        assert_eq!(tail(&link, 5), "");
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for append in [true, false] {
            let e = open_guarded(&fifo, append).unwrap_err();
            assert!(format!("{e:#}").contains("not a regular file"), "{e:#}");
        }
        let hard = d.path().join("hard");
        std::fs::hard_link(&outside, &hard).unwrap();
        let e = open_guarded(&hard, true).unwrap_err();
        assert!(format!("{e:#}").contains("hard link"), "{e:#}");
        assert_eq!(tail(&hard, 5), "");
        // A plain log is appended to, and its tail is quoted printable.
        let log = d.path().join("log");
        use std::io::Write as _;
        open_guarded(&log, true)
            .unwrap()
            .write_all(b"one\n\x1b[2Jtwo\n")
            .unwrap();
        assert_eq!(tail(&log, 5), "one | ?[2Jtwo");
    }

    #[test]
    fn chown_tree_does_not_follow_links() {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            crate::testing::skip("chown_tree_does_not_follow_links", "needs root to chown");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::NamedTempFile::new().unwrap();
        let tree = d.path().join("tree");
        std::fs::create_dir_all(tree.join("sub")).unwrap();
        std::fs::write(tree.join("sub/f"), b"x").unwrap();
        std::os::unix::fs::symlink(outside.path(), tree.join("sub/link")).unwrap();
        std::os::unix::fs::symlink(std::path::Path::new("/etc"), tree.join("dirlink")).unwrap();
        let before = std::fs::metadata(outside.path()).unwrap();
        let etc = std::fs::metadata("/etc").unwrap();
        let (uid, gid) = (before.uid() + 4242, before.gid() + 4242);
        chown_tree(&tree, uid, gid).unwrap();
        for p in ["sub", "sub/f"] {
            assert_eq!(std::fs::metadata(tree.join(p)).unwrap().uid(), uid, "{p}");
        }
        assert_eq!(
            std::fs::symlink_metadata(tree.join("sub/link"))
                .unwrap()
                .uid(),
            uid
        );
        // What the links point at keeps its owner.
        assert_eq!(
            std::fs::metadata(outside.path()).unwrap().uid(),
            before.uid()
        );
        assert_eq!(std::fs::metadata("/etc").unwrap().uid(), etc.uid());
    }

    #[test]
    fn passwords_are_random_hex() {
        let (a, b) = (random_password().unwrap(), random_password().unwrap());
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
