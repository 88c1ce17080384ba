//! `ampbench doctor`: which engines of the registry are usable here (each
//! opened, written and read back; servers started and stopped) and what the
//! machine can do for a run.

use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::engine::{self, Durability, EngineKind, EngineRef, OpenSpec, Structure, Table};

/// Opens the engine in a scratch directory, writes, reads back (or, for a
/// server, runs `SELECT 1`) and closes. Returns what to show: the version.
pub fn engine_usable(kind: EngineKind) -> Result<String, String> {
    let fail = |e: anyhow::Error| format!("{e:#}");
    let version = kind.library_version().map_err(fail)?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let spec = OpenSpec::new(dir.path(), vec!["t".into()], 8 << 20);
    let e = engine::open(kind, &spec).map_err(fail)?;
    let checked = match e.face() {
        EngineRef::Kv(kv) => kv.session().and_then(|mut s| {
            s.put(Table(0), b"doctor", b"ok", Durability::Sync)?;
            let got = s.get(Table(0), b"doctor")?;
            if kind.structure() != Structure::None && got.as_deref() != Some(b"ok") {
                anyhow::bail!("wrote a key and could not read it back");
            }
            Ok(version)
        }),
        EngineRef::Sql(sql) => sql.connect().and_then(|mut c| {
            if c.query("SELECT 1", &[])?.len() != 1 {
                anyhow::bail!("SELECT 1 returned no row");
            }
            Ok(format!("{} (started and stopped)", sql.version()))
        }),
    };
    e.close().map_err(fail)?;
    checked.map_err(fail)
}

/// The cgroup version and which controllers a child group can be made in.
pub fn cgroups() -> String {
    let root = Path::new("/sys/fs/cgroup");
    if root.join("cgroup.controllers").exists() && !root.join("memory").is_dir() {
        let ctl = std::fs::read_to_string(root.join("cgroup.controllers")).unwrap_or_default();
        return format!("v2, controllers: {}", ctl.trim());
    }
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut parts = Vec::new();
    for c in ["memory", "blkio", "cpu"] {
        let path = own
            .lines()
            .find_map(|l| {
                let mut f = l.splitn(3, ':');
                let (_, names, p) = (f.next()?, f.next()?, f.next()?);
                names.split(',').any(|n| n == c).then(|| p.to_string())
            })
            .unwrap_or_else(|| "/".into());
        let base = root.join(c).join(path.trim_start_matches('/'));
        let probe = base.join(format!("ampbench-doctor-{}", std::process::id()));
        let ok = std::fs::create_dir(&probe).is_ok();
        if ok {
            let _ = std::fs::remove_dir(&probe);
        }
        parts.push(format!(
            "{c} {}",
            if ok { "writable" } else { "not writable" }
        ));
    }
    format!("v1: {}", parts.join(", "))
}

/// Whether a memory cgroup with a limit can be made (made and removed).
pub fn memory_limit() -> String {
    match crate::setup::cgroup::MemCgroup::create("doctor", Some(64 << 20)) {
        Ok(mut c) => {
            let v = c.version();
            match c.remove() {
                Ok(()) => format!("works (cgroup {v:?}, page cache charged): --memory"),
                Err(e) => format!("made but not removed: {e:#}"),
            }
        }
        Err(e) => format!("not available: {e:#} (--memory cannot be used)"),
    }
}

/// Whether a dedicated loop device can be made, and how it is throttled.
pub fn dedicated(dir: &Path) -> String {
    use crate::setup::storage::{Caps, Device, Fs};
    let made = Device::create(dir, 64 << 20, Fs::Ext4, None).and_then(|mut d| {
        let how = match crate::setup::cgroup::version() {
            Some(crate::setup::cgroup::Version::V2) => {
                "throttled by io.max in the engine's cgroup (cgroup v2)".to_string()
            }
            _ => {
                let caps = Caps {
                    read_iops: Some(1000),
                    ..Caps::default()
                };
                match d.throttle_v1(&caps) {
                    Ok(()) => {
                        "throttled at the device (cgroup v1 blkio, writeback included)".into()
                    }
                    Err(e) => format!("NOT throttled: {e:#}"),
                }
            }
        };
        d.close()?;
        Ok(how)
    });
    match made {
        Ok(how) => format!("works (loop device, ext4, mount), {how}: --storage CLASS"),
        Err(e) => format!("not available: {e:#} (runs fall back to --storage native)"),
    }
}

/// Whether the page cache can be dropped: drop_caches opens for
/// writing. Nothing is written: dropping the machine's page cache to
/// check would slow every other program on it (and made a concurrent
/// test's cached reads reach its device).
pub fn drop_caches() -> String {
    match std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/sys/vm/drop_caches")
    {
        Ok(_) => "works (drop_caches is writable; --drop-caches drops it before each step)".into(),
        Err(e) => format!("not available: {e}"),
    }
}

/// Whether O_DIRECT writes work in `dir`.
pub fn o_direct(dir: &Path) -> String {
    // A new file with a random name, never an existing one or a link
    // (the directory may be a shared one like /tmp), removed when done.
    let r = (|| -> std::io::Result<()> {
        let made = tempfile::Builder::new()
            .prefix(".ampbench-odirect-")
            .make_in(dir, |p| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .custom_flags(libc::O_DIRECT | libc::O_NOFOLLOW)
                    .open(p)
            })?;
        let mut f = made.as_file();
        let layout =
            std::alloc::Layout::from_size_align(4096, 4096).map_err(std::io::Error::other)?;
        // SAFETY: a 4096-byte, 4096-aligned buffer, zeroed, freed below.
        let buf = unsafe { std::alloc::alloc_zeroed(layout) };
        if buf.is_null() {
            return Err(std::io::Error::other("allocation failed"));
        }
        // SAFETY: buf points at 4096 initialized bytes.
        let res = f.write_all(unsafe { std::slice::from_raw_parts(buf, 4096) });
        // SAFETY: allocated above with the same layout.
        unsafe { std::alloc::dealloc(buf, layout) };
        res
    })();
    match r {
        Ok(()) => format!("works in {}", dir.display()),
        Err(e) => format!("not available in {}: {e}", dir.display()),
    }
}

/// The doctor's report and whether any real engine is usable.
pub fn report(dir: &Path) -> (String, bool) {
    let mut o = String::new();
    let mut any = false;
    let _ = writeln!(o, "engines");
    // Checked at once, each on a thread of its own (a server's start
    // mostly waits on its disk), shown in registry order.
    let checked: Vec<(EngineKind, Result<String, String>)> = std::thread::scope(|s| {
        let threads: Vec<_> = EngineKind::all()
            .map(|kind| (kind, s.spawn(move || engine_usable(kind))))
            .collect();
        threads
            .into_iter()
            .map(|(kind, t)| {
                let r = t
                    .join()
                    .unwrap_or_else(|_| Err("its check panicked".to_string()));
                (kind, r)
            })
            .collect()
    });
    for (kind, result) in checked {
        match result {
            Ok(v) => {
                any |= kind.structure() != Structure::None;
                let _ = writeln!(
                    o,
                    "  {:<16} {:<44} usable ({})",
                    kind.name(),
                    v,
                    kind.structure().name()
                );
            }
            Err(e) => {
                let _ = writeln!(o, "  {:<16} {:<44} NOT usable: {e}", kind.name(), "-");
            }
        }
    }
    let dev = match crate::probe::device::device_for(dir) {
        Ok(d) => format!("block device {} ({}:{})", d.name, d.major, d.minor),
        Err(why) => {
            format!("no block device: {why} (device figures will be reported as not measured)")
        }
    };
    let _ = writeln!(o, "data directory  {} -> {dev}", dir.display());
    let _ = writeln!(o, "cgroups         {}", cgroups());
    let _ = writeln!(o, "memory limit    {}", memory_limit());
    let _ = writeln!(o, "dedicated dev.  {}", dedicated(dir));
    let _ = writeln!(o, "drop_caches     {}", drop_caches());
    let _ = writeln!(o, "O_DIRECT        {}", o_direct(dir));
    (o, any)
}
