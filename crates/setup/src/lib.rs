//! What changes or inspects the machine for a run, and always undoes it:
//! a dedicated, throttled device ([`storage`]), a memory cgroup
//! ([`cgroup`]), the class probe ([`ioprobe`]), dropping caches, local
//! servers ([`server`]); `doctor` (in cli) reports on them.

#![warn(missing_docs)]

// The crates below, under the module names the code has always used:
// `crate::probe` is the ampbench-probe crate (Cargo.toml lists them).
use ampbench_core::{UsageError, named, rng, signals, sys};
use ampbench_probe as probe;

pub mod allocator;
pub mod cgroup;
pub mod class;
pub mod devmodel;
pub mod ioprobe;
pub mod mounts;
pub mod oom;
mod probeline;
pub mod storage;
pub mod throttle;

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use probeline::{path_warning, probe};
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
    /// `--device-model KEY=VALUE` settings over the modelled classes'
    /// parameters, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_set: Vec<(String, String)>,
    /// The `custom:` device's parameters (class `custom-model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_model: Option<devmodel::Params>,
    /// `--io-scale cores=N`: budgets scaled by this machine's cores over N.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_scale: Option<IoScale>,
    /// The memory a `cache_share` setting is a share of: the run's
    /// memory limit, else the machine's memory, bytes (0: unknown).
    #[serde(default)]
    pub memory: u64,
    /// Seconds of each phase of the class probe (`--storage-probe`, 0.1
    /// to 10, at least 1 in a sweep; 0 skips it); None: 1 s on a limited
    /// class, 0.5 s otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_secs: Option<f64>,
    /// Where `probe_secs` came from when neither the flag nor the plan
    /// gave it: the environment variable that did (said on the storage
    /// lines and recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_from: Option<String>,
}

/// `--io-scale cores=N`: a class's budgets times this machine's cores over
/// the reference machine's, so the reference's IO:CPU balance holds here.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct IoScale {
    /// The reference machine's cores (N).
    pub reference_cores: u32,
    /// This machine's cores.
    pub cores: u32,
}

impl IoScale {
    /// The factor on budgets: cores here over the reference's.
    pub fn factor(&self) -> f64 {
        self.cores as f64 / self.reference_cores.max(1) as f64
    }
}

/// This machine's online cores (what the engines can run on).
pub fn machine_cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

impl StorageConfig {
    /// The device model's parameters for `class` (with `--device-model`
    /// applied), or None for a class the model does not serve.
    /// Scaled by `--io-scale` when given.
    pub fn model_of(&self, class: StorageClass) -> Result<Option<devmodel::Params>, String> {
        let Some(mut p) = self.nominal_of(class)? else {
            return Ok(None);
        };
        if let Some(s) = &self.io_scale {
            p = p.scaled(s.factor());
        }
        Ok(Some(p))
    }

    /// The device model's parameters for `class` as the class (or
    /// `custom:`) and `--device-model` give them, before `--io-scale`.
    pub fn nominal_of(&self, class: StorageClass) -> Result<Option<devmodel::Params>, String> {
        let base = if class == StorageClass::CustomModel {
            self.custom_model
        } else {
            class.model()
        };
        let Some(mut p) = base else {
            return match self.model_set.first() {
                Some((k, _)) if self.sweep.is_empty() => Err(format!(
                    "--device-model {k}: {class} is not a modelled class (disk-array, slow-ssd and custom: are)"
                )),
                _ => Ok(None),
            };
        };
        let set = self.with_cache_share()?;
        devmodel::set_all(&mut p, &set)?;
        p.check()?;
        Ok(Some(p))
    }

    /// The settings with `cache_share=F` turned into the `cache_mb` it
    /// means for this run's memory.
    fn with_cache_share(&self) -> Result<Vec<(String, String)>, String> {
        let mut out = Vec::with_capacity(self.model_set.len());
        for (k, v) in &self.model_set {
            if k != "cache_share" {
                out.push((k.clone(), v.clone()));
                continue;
            }
            let share = v
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && *f > 0.0 && *f <= 4.0)
                .ok_or_else(|| {
                    format!("--device-model cache_share={v}: expected a share of memory above 0, at most 4")
                })?;
            if self.memory == 0 {
                return Err(format!(
                    "--device-model cache_share={v}: the memory it is a share of is unknown (give --memory)"
                ));
            }
            let mb = (share * self.memory as f64 / (1u64 << 20) as f64).max(1.0);
            out.push(("cache_mb".into(), format!("{mb}")));
        }
        Ok(out)
    }

    /// True when the run's device is served by the model: some class of
    /// the run is modelled.
    pub fn modelled(&self) -> bool {
        std::iter::once(self.class)
            .chain(self.sweep.iter().map(|(c, _)| *c))
            .any(|c| matches!(self.nominal_of(c), Ok(Some(_))))
    }
}

/// The seed of the device model's draws (fixed: the device behaves the
/// same in every run; recorded).
pub const MODEL_SEED: u64 = 0x6465_7669_6365_0001;

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
    /// The sweep's classes' model parameters (None: not modelled).
    pub models: Vec<Option<devmodel::Params>>,
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
            models: Vec::new(),
        }
    }

    /// Throttles the device to class `i` of the sweep. On cgroup v1 the
    /// device rule is rewritten here; on v2 the returned `io.max` line is
    /// for the caller to write into the engine's cgroup.
    pub fn switch(&mut self, i: usize) -> anyhow::Result<Option<String>> {
        let Some(&(class, caps)) = self.sweep.get(i) else {
            return Ok(None);
        };
        let Some(dev) = self.device.as_mut() else {
            return Ok(None);
        };
        if let Some(m) = dev.model.as_mut() {
            let p = self
                .models
                .get(i)
                .copied()
                .flatten()
                .unwrap_or_else(devmodel::Params::transparent);
            m.set_params(&p)
                .with_context(|| format!("switching the device model to {class}"))?;
        }
        if cgroup::version() == Some(cgroup::Version::V2) {
            return Ok(Some(storage::io_max_line(&dev.maj_min(), &caps)));
        }
        dev.throttle_v1(&caps)?;
        Ok(None)
    }
}

impl Prepared {
    /// Why the device model serving the run's device failed, if it did
    /// (None without a model).
    pub fn model_failure(&mut self) -> Option<String> {
        self.device.as_mut()?.model.as_mut()?.failure()
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
    let mut v = mounts::clean_leftovers(owner_alive);
    v.extend(devmodel::clean_leftovers(owner_alive));
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
// Long: the storage's set-up in order (the class's model, the device, its
// line, the model served, the notes, the probe); only the model and the device
// fall back to native storage, with the reason; its parts are describe,
// serve_model, class_notes and probe_classes.
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
        models: Vec::new(),
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
    // A sweep with a modelled class has the model under every class; an
    // unmodelled one is served without delay (then capped as today).
    let model = if cfg.modelled() {
        match cfg.model_of(cfg.class) {
            Ok(p) => Some(p.unwrap_or_else(devmodel::Params::transparent)),
            Err(e) => {
                record["fallback"] = e.clone().into();
                return native(record, vec![format!("storage: {e}")]);
            }
        }
    } else {
        None
    };
    // The device is made (mkfs) on a model that adds nothing; the class
    // is set once the path is measured.
    let transparent = devmodel::Params::transparent();
    let made = Device::create(
        dir,
        size,
        cfg.fs,
        model.as_ref().map(|_| (&transparent, MODEL_SEED)),
    )
    .and_then(|mut d| {
        if !cfg.caps.none() && !v2 {
            d.throttle_v1(&cfg.caps)?;
        }
        Ok(d)
    });
    let mut dev = match made {
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
    let mut lines = vec![describe(&dev, cfg, size, v2, model.as_ref(), &mut record)];
    let path_us = match &model {
        Some(p) => serve_model(&mut dev, cfg, p, &mut record, &mut lines),
        None => 0.0,
    };
    lines.extend(class_notes(cfg, v2, &mut record));
    probe_classes(
        &mut dev,
        cfg,
        v2,
        path_us,
        probe_secs,
        &mut record,
        &mut lines,
    );
    let io_max = (v2 && (!cfg.caps.none() || !cfg.sweep.is_empty()))
        .then(|| storage::io_max_line(&dev.maj_min(), &cfg.caps));
    Prepared {
        parent: dev.mount.clone(),
        io_max,
        device: Some(dev),
        record,
        lines,
        models: cfg
            .sweep
            .iter()
            .map(|(c, _)| {
                cfg.model_of(*c).ok().flatten().map(|mut p| {
                    p.path_us = path_us;
                    p
                })
            })
            .collect(),
        sweep: cfg.sweep.clone(),
    }
}

/// The device's facts into `record`, and the run's `storage:` line.
fn describe(
    dev: &Device,
    cfg: &StorageConfig,
    size: u64,
    v2: bool,
    model: Option<&devmodel::Params>,
    record: &mut serde_json::Value,
) -> String {
    record["device"] = dev.name().into();
    record["maj_min"] = dev.maj_min().into();
    // What the model sees of the loop device (checked when it is made).
    for (key, file) in [
        ("loop_dio", "loop/dio"),
        ("loop_max_request_kb", "queue/max_sectors_kb"),
    ] {
        if let Ok(v) = std::fs::read_to_string(format!("/sys/block/{}/{file}", dev.name())) {
            record[key] = v
                .trim()
                .parse::<u64>()
                .map_or_else(|_| v.trim().into(), Into::into);
        }
    }
    record["size_bytes"] = size.into();
    record["image"] = dev.image.display().to_string().into();
    if let Some(p) = model {
        record["model"] = serde_json::to_value(p).unwrap_or_default();
        record["model_seed"] = MODEL_SEED.into();
    }
    record["throttle"] = if cfg.caps.none() {
        "none".into()
    } else if v2 {
        "cgroup v2 io.max in each engine's cgroup".into()
    } else {
        "cgroup v1 blkio device rule (every submitter, writeback included)".into()
    };
    format!(
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
        match model {
            Some(p) if !p.is_transparent() && cfg.caps.none() =>
                "a device model, no throttle".into(),
            _ => cfg.caps.show(),
        }
    )
}

/// Puts the class's model in front of `dev`, measured against the path
/// to it (loop device, filesystem, FUSE); its lines and record. The
/// path's latency in µs (0 where it could not be measured).
fn serve_model(
    dev: &mut Device,
    cfg: &StorageConfig,
    p: &devmodel::Params,
    record: &mut serde_json::Value,
    lines: &mut Vec<String>,
) -> f64 {
    let mut path_us = 0.0;
    match ioprobe::path_latency_us(&dev.mount, 0.5) {
        Ok(us) => path_us = us,
        Err(e) => lines.push(format!("  the path's latency not measured: {e:#}")),
    }
    record["model_path_us"] = path_us.into();
    if let Err(e) = switch_model(dev, cfg, cfg.class, path_us) {
        lines.push(format!("  {}: {e:#}", cfg.class));
    }
    lines.push(format!(
        "  device model: {}; the path to it (loop device, filesystem, FUSE) takes {path_us:.0} µs per IO, taken off the model's times",
        p.show()
    ));
    if let Some(warn) = path_warning(p, path_us) {
        lines.push(format!("  warning: {warn}"));
        record["model_path_warning"] = warn.into();
    }
    if let Some(m) = dev.model.as_ref() {
        record["model_server"] = m.serving.clone().into();
        lines.push(format!("  the model's server: {}", m.serving));
    }
    path_us
}

/// What the class's lines say besides the device: its scaling to this
/// machine's cores, why fast-ssd is not modelled, where a cgroup v2
/// throttle holds.
fn class_notes(cfg: &StorageConfig, v2: bool, record: &mut serde_json::Value) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(s) = &cfg.io_scale {
        lines.push(scale_line(cfg, s));
        record["io_scale"] = serde_json::json!({
            "reference_cores": s.reference_cores,
            "cores": s.cores,
            "factor": s.factor(),
        });
        if let Ok(Some(n)) = cfg.nominal_of(cfg.class) {
            record["model_nominal"] = serde_json::to_value(n).unwrap_or_default();
        }
    }
    if cfg.class == StorageClass::FastSsd {
        // The model's CPU per IO as bench/device-model.sh measured it
        // (uring server, slow-ssd's probe, 3 rounds, 2026-11-28): the
        // figure the decision rests on, named as such.
        const US_PER_IO: f64 = 17.0;
        let cores = machine_cores();
        lines.push(format!(
            "  fast-ssd is not modelled: at the model's {US_PER_IO:.0} µs of CPU per IO (bench/device-model.sh, 2026-11-28; about one timed sleep's cost on that machine, the floor of a server that wakes once per IO), 100k IOPS would take {:.1} cores of this machine's {cores}, where the model may have half of one; this is the machine's own device under a 100k IOPS cap",
            100_000.0 * US_PER_IO * 1e-6
        ));
    }
    if v2 && !cfg.caps.none() {
        lines.push(
            "  cgroup v2: the throttle holds the engine's cgroup (io.max), not the device".into(),
        );
    }
    lines
}

/// Probes the class (or each class of a sweep, then throttles back to
/// the first), unless `probe_secs` is 0; the figures into `record`.
fn probe_classes(
    dev: &mut Device,
    cfg: &StorageConfig,
    v2: bool,
    path_us: f64,
    probe_secs: f64,
    record: &mut serde_json::Value,
    lines: &mut Vec<String>,
) {
    // On v2 the probe runs unthrottled (it is not in an engine's cgroup);
    // on v1 it sees the class. A sweep probes every class, then throttles
    // to the first.
    // The full probe (depths, writes, the mix) where a model serves the
    // device; a cap or the bare device gets the short one (QD1, QD32,
    // synced writes), which keeps the default run under 5 minutes.
    let full = cfg.modelled();
    if let Some(from) = &cfg.probe_from {
        lines.push(format!("  probe: its phase from {from}"));
    }
    let skipped = "not measured: --storage-probe 0 skipped the class probe";
    if probe_secs <= 0.0 {
        lines.push(format!("  measured: {skipped}"));
        record["measured"] = if cfg.sweep.is_empty() {
            skipped.into()
        } else {
            // As a sweep's probe records it: by class.
            cfg.sweep
                .iter()
                .map(|(c, _)| (c.name().to_string(), serde_json::Value::from(skipped)))
                .collect::<serde_json::Map<_, _>>()
                .into()
        };
    } else if cfg.sweep.is_empty() {
        let (line, value) = probe(dev, probe_secs, full);
        lines.push(format!("  measured: {line}"));
        record["measured"] = value;
        // The probe's writes are forgotten by a fresh model: the engines
        // start on an empty write cache.
        if let Err(e) = switch_model(dev, cfg, cfg.class, path_us) {
            lines.push(format!("  {}: {e:#}", cfg.class));
        }
    }
    let mut measured = serde_json::Map::new();
    for (class, caps) in cfg.sweep.iter().filter(|_| probe_secs > 0.0) {
        if let Err(e) = switch_model(dev, cfg, *class, path_us) {
            lines.push(format!("  {class}: {e:#}"));
        }
        if !v2 {
            if let Err(e) = dev.throttle_v1(caps) {
                lines.push(format!("  {class}: cannot throttle: {e:#}"));
            }
        }
        let (line, value) = probe(dev, probe_secs.max(1.0), full);
        lines.push(format!("  {class} ({}): measured {line}", caps.show()));
        measured.insert(class.name().into(), value);
    }
    if !cfg.sweep.is_empty() {
        record["sweep"] = serde_json::to_value(&cfg.sweep).unwrap_or_default();
        if probe_secs > 0.0 {
            record["measured"] = measured.into();
        }
        if let Err(e) = switch_model(dev, cfg, cfg.class, path_us) {
            lines.push(format!("  {}: {e:#}", cfg.class));
        }
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
}

/// `  CPU-scaled: budgets x 2/24 = 0.083 of nominal: 83 IOPS …; nominal 1000 IOPS …`.
fn scale_line(cfg: &StorageConfig, s: &IoScale) -> String {
    let head = format!(
        "  CPU-scaled (--io-scale cores={}): budgets x {}/{} = {:.3} of the class's",
        s.reference_cores,
        s.cores,
        s.reference_cores,
        s.factor()
    );
    let budgets = |p: &devmodel::Params| {
        let cache = p
            .cache
            .map(|c| format!(", destaging {:.0}/s", c.destage_iops))
            .unwrap_or_default();
        format!("{:.0} IOPS and {:.0} MB/s{cache}", p.iops, p.mbps)
    };
    match (cfg.model_of(cfg.class), cfg.nominal_of(cfg.class)) {
        (Ok(Some(m)), Ok(Some(n))) => {
            format!("{head}: scaled {}; nominal {}", budgets(&m), budgets(&n))
        }
        _ if !cfg.caps.none() => format!(
            "{head}: scaled {}; nominal {}",
            cfg.caps.show(),
            cfg.class.caps().show()
        ),
        _ => format!("{head}: {} has no budget to scale", cfg.class),
    }
}

/// Points the device's model (if any) at `class`'s parameters.
fn switch_model(
    dev: &mut Device,
    cfg: &StorageConfig,
    class: StorageClass,
    path_us: f64,
) -> anyhow::Result<()> {
    let Some(m) = dev.model.as_mut() else {
        return Ok(());
    };
    let mut p = cfg
        .model_of(class)
        .map_err(|e| anyhow::anyhow!(e))?
        .unwrap_or_else(devmodel::Params::transparent);
    if !p.is_transparent() {
        p.path_us = path_us;
    }
    m.set_params(&p)
}

/// Drops the page cache (after `sync`), for `--drop-caches`.
pub fn drop_caches() -> Result<(), String> {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3\n")
        .map_err(|e| format!("cannot write /proc/sys/vm/drop_caches: {e}"))
}
