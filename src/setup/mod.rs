//! What changes or inspects the machine for a run, and always undoes it:
//! a dedicated, throttled device ([`storage`]), a memory cgroup
//! ([`cgroup`]), the class probe ([`ioprobe`]), dropping caches, local
//! servers ([`server`]) and `doctor`'s checks.

pub mod allocator;
pub mod cgroup;
pub mod doctor;
pub mod ioprobe;
pub mod oom;
pub mod server;
pub mod storage;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use storage::{Caps, Device, Fs, StorageClass};

/// Where the engines' data goes and how it is throttled (`--storage`,
/// `--fs`, `--device-size`, `--iops`, `--mbps`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StorageConfig {
    /// The class.
    pub class: StorageClass,
    /// Its caps (the class's, or `--iops`/`--mbps` for custom or to
    /// override).
    pub caps: Caps,
    /// A sweep: every class with its caps, the first being `class`
    /// (empty: no sweep). Loads run at the first; repeatable steps at
    /// each in turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweep: Vec<(StorageClass, Caps)>,
    /// Filesystem on the dedicated device.
    pub fs: Fs,
    /// Device size in bytes; None: half the free space under `--dir`,
    /// between 1 GiB and 64 GiB.
    pub size: Option<u64>,
}

/// The storage a run got: the dedicated device (None: native), what was
/// set and measured, and why it fell back to native if it did.
pub struct Prepared {
    /// The device, undone on drop.
    pub device: Option<Device>,
    /// Where the engines' data directories are made.
    pub parent: PathBuf,
    /// What is recorded with the run (`config.storage_effective`).
    pub record: serde_json::Value,
    /// Lines for the console.
    pub lines: Vec<String>,
    /// Caps to apply as v2 `io.max` in each engine's cgroup (v2 only).
    pub io_max: Option<String>,
    /// The classes of a `--storage` sweep with their caps (empty: none).
    pub sweep: Vec<(StorageClass, Caps)>,
}

impl Prepared {
    /// The storage of a run prepared by another process (the engine
    /// host's parent, which owns its device): data under `parent`.
    pub fn elsewhere(parent: &Path) -> Prepared {
        Prepared {
            device: None,
            parent: parent.to_path_buf(),
            record: serde_json::Value::Null,
            lines: Vec::new(),
            io_max: None,
            sweep: Vec::new(),
        }
    }

    /// Throttles the device to class `i` of the sweep. On cgroup v1 the
    /// device rule is rewritten here; on v2 the returned `io.max` line is
    /// for the caller to write into the engine's cgroup.
    pub fn switch(&mut self, i: usize) -> anyhow::Result<Option<String>> {
        let Some(&(_, caps)) = self.sweep.get(i) else {
            return Ok(None);
        };
        let Some(dev) = self.device.as_mut() else {
            return Ok(None);
        };
        if cgroup::version() == Some(cgroup::Version::V2) {
            return Ok(Some(storage::io_max_line(&dev.maj_min(), &caps)));
        }
        dev.throttle_v1(&caps)?;
        Ok(None)
    }
}

/// True while a process with that PID exists (a leftover's owner).
pub fn alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// Removes what killed runs left (devices, mounts, throttles, cgroups),
/// counting `dead` (a run that has exited and may not be reaped yet) as
/// killed; one line per thing removed.
pub fn clean_leftovers(dead: Option<u32>) -> Vec<String> {
    let owner_alive = |pid: u32| Some(pid) != dead && alive(pid);
    let mut v = storage::clean_leftovers(owner_alive);
    v.extend(cgroup::clean_leftovers(owner_alive));
    v
}

/// Free bytes of the filesystem holding `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct; c is a valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    (unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0)
        .then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

/// Makes the run's storage: for every class but native a dedicated
/// device under `dir`, throttled, and probed once. Where the machine
/// cannot, falls back to native and says why (one line, recorded).
pub fn prepare(cfg: &StorageConfig, dir: &Path, probe_secs: f64) -> Prepared {
    let mut record = serde_json::json!({
        "class": cfg.class,
        "caps": cfg.caps,
        "fs": cfg.fs,
    });
    let native = |record: serde_json::Value, lines| Prepared {
        device: None,
        parent: dir.to_path_buf(),
        record,
        lines,
        io_max: None,
        sweep: Vec::new(),
    };
    if cfg.class == StorageClass::Native {
        return native(
            record,
            vec!["storage: native (the data directory's own disk, shared with the machine)".into()],
        );
    }
    let size = cfg.size.unwrap_or_else(|| {
        free_bytes(dir)
            .map_or(8 << 30, |f| f / 2)
            .clamp(1 << 30, 64 << 30)
    });
    let v2 = cgroup::version() == Some(cgroup::Version::V2);
    let made = Device::create(dir, size, cfg.fs).and_then(|mut d| {
        if !cfg.caps.none() && !v2 {
            d.throttle_v1(&cfg.caps)?;
        }
        Ok(d)
    });
    let dev = match made {
        Ok(d) => d,
        Err(e) => {
            let why = format!("{e:#}");
            record["fallback"] = why.clone().into();
            record["class_effective"] = "native".into();
            return native(
                record,
                vec![format!(
                    "storage: {} not possible here ({why}): running on native storage instead",
                    cfg.class
                )],
            );
        }
    };
    record["device"] = dev.name().into();
    record["maj_min"] = dev.maj_min().into();
    record["size_bytes"] = size.into();
    record["image"] = dev.image.display().to_string().into();
    record["throttle"] = if cfg.caps.none() {
        "none".into()
    } else if v2 {
        "cgroup v2 io.max in each engine's cgroup".into()
    } else {
        "cgroup v1 blkio device rule (every submitter, writeback included)".into()
    };
    let mut lines = vec![format!(
        "storage: {} on {} ({} {}, {:.1} GiB, image {}), {}",
        cfg.class,
        dev.loopdev.display(),
        match cfg.fs {
            Fs::Ext4 => "ext4",
            Fs::Xfs => "xfs",
        },
        dev.maj_min(),
        size as f64 / (1u64 << 30) as f64,
        dev.image.display(),
        cfg.caps.show()
    )];
    if v2 && !cfg.caps.none() {
        lines.push(
            "  cgroup v2: the throttle holds the engine's cgroup (io.max), not the device".into(),
        );
    }
    // On v2 the probe runs unthrottled (it is not in an engine's cgroup);
    // on v1 it sees the class. A sweep probes every class, then throttles
    // to the first.
    let mut dev = dev;
    if probe_secs > 0.0 && cfg.sweep.is_empty() {
        let (line, value) = probe(&dev, probe_secs);
        lines.push(format!("  measured: {line}"));
        record["measured"] = value;
    }
    let mut measured = serde_json::Map::new();
    for (class, caps) in &cfg.sweep {
        if !v2 {
            if let Err(e) = dev.throttle_v1(caps) {
                lines.push(format!("  {class}: cannot throttle: {e:#}"));
            }
        }
        let (line, value) = probe(&dev, probe_secs.max(1.0));
        lines.push(format!("  {class} ({}): measured {line}", caps.show()));
        measured.insert(class.name().into(), value);
    }
    if !cfg.sweep.is_empty() {
        record["sweep"] = serde_json::to_value(&cfg.sweep).unwrap_or_default();
        record["measured"] = measured.into();
        if !v2 {
            if let Err(e) = dev.throttle_v1(&cfg.caps) {
                lines.push(format!("  cannot throttle to {}: {e:#}", cfg.class));
            }
        }
        lines.push(format!(
            "  loads run at {}; every other step at each class in turn (STEP@CLASS)",
            cfg.class
        ));
    }
    let io_max = (v2 && (!cfg.caps.none() || !cfg.sweep.is_empty()))
        .then(|| storage::io_max_line(&dev.maj_min(), &cfg.caps));
    Prepared {
        parent: dev.mount.clone(),
        io_max,
        device: Some(dev),
        record,
        lines,
        sweep: cfg.sweep.clone(),
    }
}

/// The class probe on the device as it is throttled now: a line for the
/// console and the value recorded (the figures, or why not measured).
fn probe(dev: &Device, secs: f64) -> (String, serde_json::Value) {
    match ioprobe::measure(&dev.mount, &dev.name(), secs) {
        Ok(m) => (m.show(), serde_json::to_value(m).unwrap_or_default()),
        Err(e) => (
            format!("not measured: {e:#}"),
            format!("not measured: {e:#}").into(),
        ),
    }
}

/// Drops the page cache (after `sync`), for `--drop-caches`.
pub fn drop_caches() -> Result<(), String> {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3\n")
        .map_err(|e| format!("cannot write /proc/sys/vm/drop_caches: {e}"))
}
