//! A device that behaves like a storage class's device, not only like its
//! rate: latency per IO, parallel units, one budget shared by reads and
//! writes, a write cache. The engines still see a real filesystem on a
//! real block device (the run's loop device, see [`super::storage`]); the
//! loop device's backing file is served by the model's own process over
//! FUSE ([`server`]), which holds every IO until the [`model`] says the
//! device would have finished it.
//!
//! The classes' figures and where they come from: [`class_params`](super::class::class_params) and
//! docs/storage.md.

pub mod medium;
pub mod model;
mod params;
pub mod physics;
pub mod server;
mod settings;
mod uring;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

use crate::probe::modelstats::Mapped;
pub use model::{Params, Service, WriteCache};
pub use settings::{KEYS, set, set_all};

/// A running device model: its process, its FUSE mount with the one
/// served file, and its counters. Stopped on close and on drop.
pub struct Served {
    child: Option<Child>,
    /// The model's private directory (`ampbench-PID-RAND-model`).
    pub dir: PathBuf,
    /// The FUSE mount.
    pub mount: PathBuf,
    /// The served file: the loop device's backing file.
    pub image: PathBuf,
    /// The counters.
    pub counters: Mapped,
    /// The parameters it serves.
    pub params: Params,
    /// How the server serves (`uring: …`, `fuse-dev: …`, `threads: …`),
    /// as it said when ready.
    pub serving: String,
    closed: bool,
}

impl Served {
    /// Starts a model of `params` serving a `size`-byte file named
    /// `name` in a new private directory under `parent`. With `medium`,
    /// the model keeps what the medium holds under a volatile cache, so
    /// [`Served::power_cut`] can drop what the cache held.
    // Long: the device model's start (private directory, backing file,
    // counters, the io_uring switch set for the start, the server process and
    // its ready line); the guard, then Served's drop, undo it on failure.
    pub fn start(
        parent: &Path,
        name: &str,
        size: u64,
        params: &Params,
        seed: u64,
        medium: bool,
    ) -> Result<Served> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let dir = parent.join(format!(
            "ampbench-{}-{}-model",
            std::process::id(),
            crate::sys::random_password()?.get(..8).unwrap_or("0")
        ));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        // Removed on every error until the Served below owns it.
        struct Guard(Option<PathBuf>);
        impl Drop for Guard {
            fn drop(&mut self) {
                if let Some(d) = self.0.take() {
                    let _ = std::fs::remove_dir_all(d);
                }
            }
        }
        let mut guard = Guard(Some(dir.clone()));
        let mount = dir.join("mnt");
        let backing = dir.join("data");
        let counters_path = dir.join("counters");
        std::fs::DirBuilder::new().mode(0o700).create(&mount)?;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&backing)
            .with_context(|| format!("cannot create {}", backing.display()))?;
        f.set_len(size)?;
        drop(f);
        let counters = Mapped::create(&counters_path)?;
        guard.0 = None;
        let mut s = Served {
            child: None,
            image: mount.join(name),
            dir: dir.clone(),
            mount: mount.clone(),
            counters,
            params: *params,
            serving: String::new(),
            closed: false,
        };
        // AMPBENCH_DEVICE_LOOP: how the server serves (auto, uring,
        // fuse-dev, threads); bench/device-model.sh sets it to measure
        // the servers side by side.
        let serve = std::env::var("AMPBENCH_DEVICE_LOOP").unwrap_or_else(|_| "auto".into());
        if !["auto", "uring", "fuse-dev", "threads"].contains(&serve.as_str()) {
            bail!("AMPBENCH_DEVICE_LOOP={serve}: auto, uring, fuse-dev or threads");
        }
        // FUSE over io_uring is a module parameter, off by default: set
        // for as long as the server takes to register its rings (a
        // connection that agreed to it keeps it), then put back.
        let uring_set = (serve != "fuse-dev" && serve != "threads")
            .then(uring::enable)
            .flatten();
        let mut cmd = Command::new(std::env::current_exe().context("cannot find ampbench itself")?);
        cmd.arg("device-model")
            .arg("--mount")
            .arg(&mount)
            .arg("--backing")
            .arg(&backing)
            .args(["--name", name])
            .arg("--counters")
            .arg(&counters_path)
            .args(["--params", &serde_json::to_string(params)?])
            .args(["--seed", &seed.to_string()])
            .args(medium.then_some("--medium"))
            .args(["--serve", &serve])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            // Ctrl-C reaches the run, which unmounts in order; the model
            // must outlive the filesystem above it.
            .process_group(0);
        // SAFETY: prctl, getppid and setpriority are async-signal-safe. The model dies
        // with the run; a run that died before prctl took effect is seen
        // by the parent having changed, and the model does not start.
        let parent_pid = std::process::id() as libc::pid_t;
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != parent_pid {
                    return Err(std::io::Error::other("the run ended"));
                }
                // The device's latency must not include waiting for a
                // core the engine (or anything else) keeps busy: the model
                // and every thread it starts run 10 nice levels above the run, ahead of
                // the engine's. It sleeps between IOs, so it takes no
                // more CPU than before, only sooner. Best effort: without
                // the privilege it runs at the run's priority.
                // Relative to the run's own (a `nice -n 19` run's model
                // does not outrank everyone else's processes).
                *libc::__errno_location() = 0;
                let now = libc::getpriority(libc::PRIO_PROCESS, 0);
                libc::setpriority(libc::PRIO_PROCESS, 0, (now - 10).max(-20));
                Ok(())
            });
        }
        let mut child = cmd.spawn().context("cannot start the device model")?;
        let out = child.stdout.take();
        s.child = Some(child);
        // "ready" once mounted; a model that neither says it nor dies in
        // 30 s is stopped.
        let (tx, rx) = std::sync::mpsc::channel();
        if let Some(out) = out {
            std::thread::spawn(move || {
                let mut line = String::new();
                let _ = BufReader::new(out).read_line(&mut line);
                let _ = tx.send(line);
            });
        }
        let line = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_default();
        let put_back = uring_set.map(uring::restore);
        let Some(how) = line.trim().strip_prefix("ready") else {
            let _ = s.close();
            bail!("the device model did not start (see its error above)");
        };
        s.serving = how.trim().to_string();
        if let Some(note) = put_back {
            s.serving.push_str(&format!("; {note}"));
        }
        Ok(s)
    }

    /// Serves `p` from the next IO on (a sweep's next class).
    pub fn set_params(&mut self, p: &Params) -> Result<()> {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt;
        use std::sync::atomic::Ordering::SeqCst;
        let g = self.counters.get().params_gen.load(SeqCst) + 1;
        let path = self.dir.join(format!("params.{g}.json"));
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .and_then(|mut f| f.write_all(serde_json::to_string(p)?.as_bytes()))
            .with_context(|| format!("cannot write {}", path.display()))?;
        self.counters.get().params_gen.store(g, SeqCst);
        self.params = *p;
        Ok(())
    }

    /// Cuts the power: the writes a volatile cache still holds are
    /// dropped (the host file gets the medium's content back) and every
    /// IO fails until [`Served::power_on`]. Returns the blocks dropped.
    /// Needs a model started with `medium`.
    pub fn power_cut(&mut self) -> Result<u64> {
        use std::sync::atomic::Ordering::SeqCst;
        let c = self.counters.get();
        let (before, done) = (c.power_dropped.load(SeqCst), c.power_done.load(SeqCst));
        if done % 2 == 1 {
            bail!("the device model's power is already off");
        }
        self.power(done + 1)?;
        let c = self.counters.get();
        let (unkept, errors) = (c.unkept.load(SeqCst), c.errors.load(SeqCst));
        if unkept > 0 || errors > 0 {
            bail!(
                "the power cut was not exact: {unkept} blocks' old content could not be kept, {errors} errors on the model's host file"
            );
        }
        Ok(c.power_dropped.load(SeqCst) - before)
    }

    /// Brings the power back: an empty cache, the same parameters.
    pub fn power_on(&mut self) -> Result<()> {
        use std::sync::atomic::Ordering::SeqCst;
        let done = self.counters.get().power_done.load(SeqCst);
        if done % 2 == 0 {
            return Ok(());
        }
        self.power(done + 1)
    }

    fn power(&mut self, req: u64) -> Result<()> {
        use std::sync::atomic::Ordering::SeqCst;
        self.counters.get().power_req.store(req, SeqCst);
        let t0 = Instant::now();
        while self.counters.get().power_done.load(SeqCst) != req {
            if !self.alive() {
                bail!("the device model died while switching its power");
            }
            if t0.elapsed() > Duration::from_secs(30) {
                bail!("the device model did not switch its power in 30 s");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    /// The model process's CPU time so far, seconds (user + system).
    pub fn cpu_secs(&self) -> Option<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid()?)).ok()?;
        let rest = stat.rsplit_once(')')?.1;
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        Some(ticks / hz)
    }

    /// Why the model can no longer be trusted, if it cannot: its process
    /// died, or it counted errors (its host file's, or a class it could
    /// not read). Checked after every step.
    pub fn failure(&mut self) -> Option<String> {
        use std::os::unix::process::ExitStatusExt;
        use std::sync::atomic::Ordering::Relaxed;
        let pid = self.pid().unwrap_or(0);
        if let Some(c) = self.child.as_mut() {
            if let Ok(Some(st)) = c.try_wait() {
                return Some(match st.signal() {
                    Some(sig) => format!("the device model (pid {pid}) died by signal {sig}"),
                    None => format!("the device model (pid {pid}) ended ({st})"),
                });
            }
        }
        let c = self.counters.get();
        let errors = c.errors.load(Relaxed);
        (errors > 0).then(|| {
            format!(
                "the device model (pid {pid}) counted {errors} errors (reading or writing its host file {}, or reading a class's parameters)",
                self.dir.join("data").display()
            )
        })
    }

    /// The model's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// True while the model's process runs.
    pub fn alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Unmounts (the process then ends), waits for it, removes the
    /// directory. Call after the loop device on the file is detached.
    pub fn close(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let mut errs = Vec::new();
        if super::mounts::mounted(&self.mount) {
            if let Err(e) = super::mounts::unmount(&self.mount) {
                errs.push(format!("{e:#}"));
            }
        }
        if let Some(mut c) = self.child.take() {
            let t0 = Instant::now();
            while matches!(c.try_wait(), Ok(None)) && t0.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            errs.push(format!("cannot remove {}: {e}", self.dir.display()));
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(anyhow!("the device model: {}", errs.join("; ")))
        }
    }
}

impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Served")
            .field("dir", &self.dir)
            .field("pid", &self.pid())
            .finish()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            eprintln!("ampbench: {e:#}");
        }
    }
}

/// The device models a killed ampbench left: every FUSE mount at
/// `…/ampbench-PID-RAND-model/mnt` with PID no longer running is
/// unmounted and its directory removed. Run after the loop devices on
/// them are gone ([`super::mounts::clean_leftovers`]). One line each.
pub fn clean_leftovers(alive: impl Fn(u32) -> bool) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut out = Vec::new();
    for l in info.lines() {
        // Only a model's own mount: FUSE, named by us, mounted by root.
        let mut after = l.split(" - ").nth(1).unwrap_or("").split(' ');
        let (fstype, source, opts) = (
            after.next().unwrap_or(""),
            after.next().unwrap_or(""),
            after.next().unwrap_or(""),
        );
        if !fstype.starts_with("fuse")
            || source != "ampbench-device-model"
            || !opts.split(',').any(|o| o == "user_id=0")
        {
            continue;
        }
        let Some(m) = l.split(' ').nth(4).map(super::mounts::unescape) else {
            continue;
        };
        let Some(dir) = m
            .parent()
            .filter(|_| m.file_name().is_some_and(|n| n == "mnt"))
        else {
            continue;
        };
        let Some(pid) = dir
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix("-model"))
            .and_then(|n| super::cgroup::leftover_pid(&format!("{n}-")))
        else {
            continue;
        };
        if alive(pid) {
            continue;
        }
        // Ours: a real directory (not a link), root's, 0700.
        let ours = std::fs::symlink_metadata(dir)
            .is_ok_and(|md| md.is_dir() && md.uid() == 0 && md.mode() & 0o777 == 0o700);
        if !ours {
            out.push(format!(
                "{}: looks like a device model's but is not root's own directory; left alone",
                dir.display()
            ));
            continue;
        }
        let r = unmount_nofollow(&m).and_then(|_| {
            std::fs::remove_dir_all(dir).with_context(|| format!("cannot remove {}", dir.display()))
        });
        out.push(match r {
            Ok(()) => format!(
                "removed the device model {} left by ampbench {pid}",
                dir.display()
            ),
            Err(e) => format!("{}: {e:#}", dir.display()),
        });
    }
    out
}

/// Unmounts `m` without following a link in its path, lazily if busy.
fn unmount_nofollow(m: &Path) -> Result<()> {
    let c = std::ffi::CString::new(m.as_os_str().as_encoded_bytes())?;
    // SAFETY: c is a valid C string; umount2 reads it only.
    if unsafe { libc::umount2(c.as_ptr(), libc::UMOUNT_NOFOLLOW) } == 0 {
        return Ok(());
    }
    // SAFETY: as above.
    if unsafe { libc::umount2(c.as_ptr(), libc::UMOUNT_NOFOLLOW | libc::MNT_DETACH) } == 0 {
        return Ok(());
    }
    Err(std::io::Error::last_os_error()).with_context(|| format!("cannot unmount {}", m.display()))
}
