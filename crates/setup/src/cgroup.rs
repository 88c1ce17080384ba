//! The run's memory cgroup: the engine's process (a server and its
//! children, or ampbench itself while an embedded engine is open) under a
//! memory limit, page cache included.
//!
//! cgroup v1 (this machine): a child of ampbench's own memory cgroup with
//! `memory.limit_in_bytes`. cgroup v2: a child of ampbench's own cgroup with
//! `memory.max` (and `io.max` for a device throttle, which v2 applies per
//! cgroup rather than per device). Groups are named `ampbench-PID-…`, so a
//! later run or `ampbench doctor --cleanup` can tell a killed run's
//! leftovers by the dead PID.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

/// Where cgroups are mounted.
const ROOT: &str = "/sys/fs/cgroup";

/// The cgroup version in use for memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// Controllers mounted one per hierarchy (`/sys/fs/cgroup/memory`).
    V1,
    /// The unified hierarchy (`/sys/fs/cgroup/cgroup.controllers`).
    V2,
}

/// Which cgroup version holds the memory controller here.
pub fn version() -> Option<Version> {
    let root = Path::new(ROOT);
    if root.join("memory").join("memory.limit_in_bytes").exists() {
        Some(Version::V1)
    } else if std::fs::read_to_string(root.join("cgroup.controllers"))
        .is_ok_and(|c| c.split_whitespace().any(|w| w == "memory"))
    {
        Some(Version::V2)
    } else {
        None
    }
}

/// Sets up this process's memory behaviour before any thread starts, the
/// same for every run so the cached and IO-bound corners measure the same
/// harness and allocators:
/// - transparent huge pages off: the Rust allocator commits its arenas
///   eagerly and THP charges each touched region as a whole 2 MB page (the
///   harness took 42 MB with the null engine and 4 threads, 24 MB without);
/// - glibc malloc, which the C engines use, keeps one arena per CPU (at
///   least 2) instead of eight: memory freed by short-lived worker threads
///   stayed in their arenas, and RocksDB was killed at a 256 MB limit in
///   the default IO-bound run that it completes this way.
///
/// [`arenas`] gives the arena count, recorded with the run.
pub fn harness_memory() {
    // SAFETY: prctl with PR_SET_THP_DISABLE only sets a flag of this
    // process; a failure (an old kernel) leaves THP as it was.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
    // SAFETY: mallopt changes a glibc tunable; called before the engines'
    // threads exist.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, arenas());
    }
}

pub use crate::sys::arenas;

/// This process's cgroup directory for a v1 controller (`memory`,
/// `blkio`), or for v2 when `controller` is None.
pub fn own_dir(controller: Option<&str>) -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, names, p) = (f.next()?, f.next()?, f.next()?);
        let hit = match controller {
            Some(c) => names.split(',').any(|n| n == c),
            None => names.is_empty(),
        };
        hit.then(|| p.to_string())
    })?;
    let mut dir = PathBuf::from(ROOT);
    if let Some(c) = controller {
        dir.push(c);
    }
    Some(dir.join(path.trim_start_matches('/')))
}

/// A cgroup of ours with a memory limit, removed on drop.
#[derive(Debug)]
pub struct MemCgroup {
    dir: PathBuf,
    version: Version,

    /// Made by this process, and removed by it on drop.
    owned: bool,
    /// What v1 counted before each [`reset_peak`](Self::reset_peak): the
    /// highest peak and the refusals, for the group's whole life.
    earlier_peak: std::cell::Cell<u64>,
    earlier_hits: std::cell::Cell<u64>,
}

fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| f.write_all(value.as_bytes()))
        .with_context(|| format!("cannot write '{value}' to {}", path.display()))
}

impl MemCgroup {
    /// Creates `ampbench-PID-NAME` below ampbench's own memory cgroup,
    /// with a limit of `bytes` when given (otherwise it only counts).
    pub fn create(name: &str, bytes: Option<u64>) -> Result<MemCgroup> {
        let version = version().ok_or_else(|| anyhow!("no memory cgroup controller mounted"))?;
        let home = match version {
            Version::V1 => own_dir(Some("memory")),
            Version::V2 => own_dir(None),
        }
        .ok_or_else(|| anyhow!("cannot find this process's memory cgroup"))?;
        let dir = home.join(format!("ampbench-{}-{name}", std::process::id()));
        if version == Version::V2 {
            // Children of a v2 group get a controller only when the parent
            // delegates it; fails (and is reported) where we may not.
            let _ = write(&home.join("cgroup.subtree_control"), "+memory +io");
        }
        std::fs::create_dir(&dir)
            .with_context(|| format!("cannot create memory cgroup {}", dir.display()))?;
        let cg = MemCgroup {
            dir,
            version,
            owned: true,
            earlier_peak: Default::default(),
            earlier_hits: Default::default(),
        };
        if let Some(b) = bytes {
            cg.set_limit(b)?;
        }
        Ok(cg)
    }

    /// A group another process made (the engine host's parent): read
    /// here, never removed.
    pub fn attach(dir: &Path) -> Result<MemCgroup> {
        let version = version().ok_or_else(|| anyhow!("no memory cgroup controller mounted"))?;
        if !dir.is_dir() {
            return Err(anyhow!("no memory cgroup {}", dir.display()));
        }
        Ok(MemCgroup {
            dir: dir.to_path_buf(),
            version,
            owned: false,
            earlier_peak: Default::default(),
            earlier_hits: Default::default(),
        })
    }

    /// The group's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its version.
    pub fn version(&self) -> Version {
        self.version
    }

    /// Sets (or changes, e.g. after a load) the memory limit.
    pub fn set_limit(&self, bytes: u64) -> Result<()> {
        let file = match self.version {
            Version::V1 => "memory.limit_in_bytes",
            Version::V2 => "memory.max",
        };
        write(&self.dir.join(file), &bytes.to_string())
    }

    /// The file a process writes `0` to in order to join (see
    /// ampbench-engine's `server::join_cgroup`).
    pub fn procs_file(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// Bytes charged now (memory and page cache).
    pub fn usage(&self) -> Option<u64> {
        self.read_u64(match self.version {
            Version::V1 => "memory.usage_in_bytes",
            Version::V2 => "memory.current",
        })
    }

    /// The most bytes charged since creation or the last [`reset_peak`](Self::reset_peak).
    pub fn peak(&self) -> Option<u64> {
        self.read_u64(match self.version {
            Version::V1 => "memory.max_usage_in_bytes",
            Version::V2 => "memory.peak",
        })
    }

    /// Starts a new peak and refusal count (v1 only; v2 keeps one per
    /// group); what was counted stays in the whole-life figures.
    pub fn reset_peak(&self) {
        if self.version == Version::V1 {
            let p = self.peak().unwrap_or(0);
            self.earlier_peak.set(self.earlier_peak.get().max(p));
            let h = self.limit_hits().unwrap_or(0);
            self.earlier_hits.set(self.earlier_hits.get() + h);
            let _ = write(&self.dir.join("memory.max_usage_in_bytes"), "0");
            let _ = write(&self.dir.join("memory.failcnt"), "0");
        }
    }

    /// Times the kernel refused a charge at the limit (v1 `memory.failcnt`,
    /// v2 `memory.events` max).
    pub fn limit_hits(&self) -> Option<u64> {
        match self.version {
            Version::V1 => self.read_u64("memory.failcnt"),
            Version::V2 => std::fs::read_to_string(self.dir.join("memory.events"))
                .ok()?
                .lines()
                .find_map(|l| l.strip_prefix("max ")?.trim().parse().ok()),
        }
    }

    /// The most bytes charged over the group's whole life, across resets.
    pub fn life_peak(&self) -> Option<u64> {
        self.peak().map(|p| p.max(self.earlier_peak.get()))
    }

    /// Refusals at the limit over the group's whole life, across resets.
    pub fn life_limit_hits(&self) -> Option<u64> {
        self.limit_hits().map(|h| h + self.earlier_hits.get())
    }

    /// Sets a v2 `io.max` line for a device (v1 throttles at the device
    /// in the root blkio group instead: see `setup::storage`).
    pub fn set_io_max(&self, line: &str) -> Result<()> {
        write(&self.dir.join("io.max"), line)
    }

    fn read_u64(&self, file: &str) -> Option<u64> {
        std::fs::read_to_string(self.dir.join(file))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Leaves, waits up to 10 s for the group to empty (a stopped server's
    /// last children), and removes it.
    pub fn remove(&mut self) -> Result<()> {
        remove_dir(&self.dir)
    }
}

/// Removes a cgroup directory once no process is left in it.
fn remove_dir(dir: &Path) -> Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    let t0 = Instant::now();
    loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if t0.elapsed() > Duration::from_secs(10) => {
                let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
                bail!(
                    "cannot remove cgroup {}: {e} (processes still in it: {})",
                    dir.display(),
                    procs.split_whitespace().collect::<Vec<_>>().join(" ")
                );
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        if self.owned {
            let _ = self.remove();
        }
    }
}

/// The cgroups a killed ampbench left (named `ampbench-PID-…` with PID no
/// longer an ampbench process): their processes are killed and the groups
/// removed. Returns one line per group removed or not removable.
pub fn clean_leftovers(alive: impl Fn(u32) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    let homes = [own_dir(Some("memory")), own_dir(None)];
    for home in homes.into_iter().flatten() {
        let Ok(rd) = std::fs::read_dir(&home) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = leftover_pid(&name) else {
                continue;
            };
            if alive(pid) {
                continue;
            }
            let procs = std::fs::read_to_string(e.path().join("cgroup.procs")).unwrap_or_default();
            for p in procs
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
            {
                // SAFETY: kill(2) on a pid read from our own leftover group.
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
            out.push(match remove_dir(&e.path()) {
                Ok(()) => format!("removed cgroup {}", e.path().display()),
                Err(err) => format!("{err:#}"),
            });
        }
    }
    out
}

/// The PID in a name of ours (`ampbench-PID-…`).
pub fn leftover_pid(name: &str) -> Option<u32> {
    name.strip_prefix("ampbench-")?
        .split('-')
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftover_names() {
        assert_eq!(leftover_pid("ampbench-123-rocksdb"), Some(123));
        assert_eq!(leftover_pid("ampbench-dev-1"), None);
        assert_eq!(leftover_pid("other-123"), None);
    }
}
