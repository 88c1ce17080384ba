//! `--allocator glibc|jemalloc|tcmalloc`: the C allocator under the
//! engines, as the seed varied it (tcmalloc vs jemalloc under WiredTiger).
//!
//! Debian's libjemalloc2 or libtcmalloc-minimal4 is preloaded
//! (`LD_PRELOAD`). An embedded engine runs inside ampbench, so ampbench
//! runs itself again as a child with the library preloaded and waits for
//! it (the child does the run; Ctrl-C and SIGTERM reach it); the servers
//! it starts inherit the preload. ampbench's own Rust allocations stay on
//! mimalloc (its global allocator): what changes is every `malloc` of the
//! engines' C and C++ code. Whether the library is really mapped in each
//! engine's process is read from `/proc/PID/maps` and printed.

use std::path::Path;

use anyhow::{Context, Result, bail};

crate::named! {
    /// The C allocators `--allocator` offers.
    pub enum Allocator: "allocator" {
        /// The C library's malloc (no preload).
        Glibc = "glibc",
        /// jemalloc (Debian's libjemalloc2).
        Jemalloc = "jemalloc",
        /// tcmalloc (Debian's libtcmalloc-minimal4).
        Tcmalloc = "tcmalloc",
    }
}

impl<'de> serde::Deserialize<'de> for Allocator {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Allocator, D::Error> {
        let s = String::deserialize(d)?;
        Allocator::parse(&s).map_err(|e| serde::de::Error::custom(e.0))
    }
}

/// Set in the child ampbench runs under the preload, so it does not run
/// itself again.
const CHILD: &str = "AMPBENCH_ALLOCATOR";

impl Allocator {
    /// The shared library to preload (None for glibc).
    pub fn library(self) -> Option<&'static str> {
        match self {
            Allocator::Glibc => None,
            Allocator::Jemalloc => Some("libjemalloc.so.2"),
            Allocator::Tcmalloc => Some("libtcmalloc_minimal.so.4"),
        }
    }

    /// Its Debian package.
    pub fn package(self) -> &'static str {
        match self {
            Allocator::Glibc => "libc6",
            Allocator::Jemalloc => "libjemalloc2",
            Allocator::Tcmalloc => "libtcmalloc-minimal4",
        }
    }

    /// The library's full path, found in the multiarch library directories.
    pub fn path(self) -> Result<Option<String>> {
        let Some(lib) = self.library() else {
            return Ok(None);
        };
        for dir in [
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib64",
            "/usr/lib",
        ] {
            let p = Path::new(dir).join(lib);
            if p.exists() {
                return Ok(Some(p.display().to_string()));
            }
        }
        bail!(crate::UsageError(format!(
            "--allocator {}: {lib} not found (make deps installs {})",
            self.name(),
            self.package()
        )))
    }

    /// What `/proc/PID/maps` says: the library's mapped path when it is
    /// in the process, None otherwise (glibc: always None).
    pub fn mapped_in(self, pid: u32) -> Option<String> {
        let lib = self.library()?;
        let stem = lib.split(".so").next()?;
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
        maps.lines()
            .filter_map(|l| l.split_whitespace().nth(5))
            .find(|p| p.rsplit('/').next().is_some_and(|f| f.starts_with(stem)))
            .map(str::to_string)
    }

    /// One line on the allocator of the engine running as `pid`.
    pub fn describe(self, pid: u32) -> String {
        match (self, self.mapped_in(pid)) {
            (Allocator::Glibc, _) => "allocator: glibc malloc".into(),
            (a, Some(p)) => format!("allocator: {} ({p} mapped in pid {pid})", a.name()),
            (a, None) => format!(
                "allocator: {} NOT in effect: no {} mapped in pid {pid}",
                a.name(),
                a.library().unwrap_or("")
            ),
        }
    }
}

/// Runs ampbench again with `a` preloaded, unless this process is that
/// child already or `a` is glibc: returns the child's exit code, or None
/// when this process should do the run itself. Ctrl-C (which the
/// terminal sends to both) and SIGTERM (sent to this process only,
/// forwarded) stop the child's step as they would this process's.
pub fn run_under(a: Allocator) -> Result<Option<i32>> {
    let Some(path) = a.path()? else {
        return Ok(None);
    };
    if std::env::var(CHILD).as_deref() == Ok(a.name()) {
        return Ok(None);
    }
    let exe = std::env::current_exe().context("cannot find ampbench's own executable")?;
    let mut child = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env("LD_PRELOAD", &path)
        .env(CHILD, a.name())
        .spawn()
        .context("cannot run ampbench under the allocator")?;
    let mut forwarded = false;
    loop {
        if let Some(st) = child.try_wait()? {
            return Ok(Some(st.code().unwrap_or(1)));
        }
        if !forwarded && crate::signals::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
            forwarded = true;
            // SAFETY: kill(2) on our own child's pid, which try_wait has
            // not reaped yet, so the pid is still ours.
            unsafe {
                libc::kill(child.id() as i32, libc::SIGTERM);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glibc_needs_no_preload_and_libc_is_not_mistaken_for_one() {
        assert_eq!(Allocator::Glibc.path().unwrap(), None);
        assert_eq!(Allocator::parse("tcmalloc").unwrap(), Allocator::Tcmalloc);
        assert!(
            Allocator::parse("hoard")
                .unwrap_err()
                .0
                .contains("jemalloc")
        );
        // This test process has neither library preloaded.
        let me = std::process::id();
        assert_eq!(Allocator::Jemalloc.mapped_in(me), None);
        assert_eq!(Allocator::Tcmalloc.mapped_in(me), None);
        assert!(Allocator::Jemalloc.describe(me).contains("NOT in effect"));
    }
}
