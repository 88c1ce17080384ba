//! `--storage` and the flags and plan keys that shape the run's device:
//! the classes (with a `custom:` device model written out key by key),
//! caps, the device model's settings and `--io-scale`.

use anyhow::Result;

use crate::UsageError;
use crate::plan::Settings;
use crate::setup::devmodel::{self, Params, Service};
use crate::setup::storage::{Caps, StorageClass, parse_pair};
use crate::setup::{IoScale, StorageConfig};

/// `storage` with `iops`, `mbps`, `fs`, `device_size`, `device_model`
/// and `io_scale`, as the flags and the plan left them.
// Long: the storage flags (class, caps, fs, size, model, scale) checked
// against each other, each error naming its flag.
pub(super) fn config(s: &Settings) -> Result<StorageConfig> {
    let iops = s.iops.clone();
    let mbps = s.mbps.clone();
    let listed = s.storage.clone().map(|c| c.into_vec()).unwrap_or_default();
    let (listed, custom_model) = parse_classes(&listed)?;
    let mut classes: Vec<StorageClass> = Vec::new();
    for c in listed {
        if !classes.contains(&c) {
            classes.push(c);
        }
    }
    let io_scale = match s.io_scale.as_deref() {
        Some(s) => Some(parse_io_scale(s)?),
        None => None,
    };
    if classes.is_empty() {
        classes.push(if iops.is_some() || mbps.is_some() {
            StorageClass::Custom
        } else {
            StorageClass::default()
        });
    }
    if classes.len() > 1 && classes.contains(&StorageClass::Native) {
        return Err(UsageError(
            "--storage: a sweep runs on one dedicated device; native cannot be one of its classes"
                .into(),
        )
        .into());
    }
    if classes == [StorageClass::Native] && (iops.is_some() || mbps.is_some()) {
        return Err(UsageError(
            "--iops/--mbps need a dedicated device: not with --storage native".into(),
        )
        .into());
    }
    if classes.len() > 1
        && (iops.is_some() || mbps.is_some())
        && !classes.contains(&StorageClass::Custom)
    {
        return Err(UsageError(
                "--iops/--mbps in a --storage sweep set the custom class's caps: add custom to the list".into(),
            )
            .into());
    }
    let mut sweep = Vec::new();
    for &class in &classes {
        let mut caps: Caps = class.caps().scaled(io_scale.map_or(1.0, |s| s.factor()));
        // With one class the flags replace its caps; in a sweep they
        // are the custom class's.
        if classes.len() == 1 || class == StorageClass::Custom {
            if let Some(s) = &iops {
                let (r, w) = parse_pair("iops", s)?;
                (caps.read_iops, caps.write_iops) = (Some(r), Some(w));
            }
            if let Some(s) = &mbps {
                let (r, w) = parse_pair("mbps", s)?;
                (caps.read_mbps, caps.write_mbps) = (Some(r), Some(w));
            }
        }
        if class == StorageClass::Custom && caps.none() {
            return Err(UsageError("--storage custom: give --iops and/or --mbps".into()).into());
        }
        sweep.push((class, caps));
    }
    let (class, caps) = sweep[0];
    let size = match s.device_size.as_deref() {
        Some(s) => {
            let b = crate::units::parse_size(s)
                .map_err(|e| UsageError(format!("--device-size: {e}")))?;
            if b < 32 << 20 {
                return Err(UsageError(format!("--device-size {s}: at least 32MB")).into());
            }
            Some(b)
        }
        None => None,
    };
    let given = &s.device_model;
    let mut model_set = Vec::new();
    for kv in given {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| UsageError(format!("--device-model {kv}: expected KEY=VALUE")))?;
        model_set.push((k.trim().to_string(), v.trim().to_string()));
    }
    let (probe_secs, probe_from) = probe_secs(s)?;
    let cfg = StorageConfig {
        class,
        caps,
        sweep: if sweep.len() > 1 { sweep } else { Vec::new() },
        fs: s.fs,
        size,
        model_set,
        custom_model,
        io_scale,
        // A bad --memory is named where the limit is read.
        memory: s
            .memory
            .as_deref()
            .and_then(|m| crate::units::parse_size(m).ok())
            .unwrap_or_else(crate::runner::mem_total_bytes),
        probe_secs,
        probe_from,
    };
    if !cfg.model_set.is_empty() && !cfg.modelled() {
        return Err(UsageError(format!(
            "--device-model: {} is not a modelled class (disk-array, slow-ssd and custom: are)",
            cfg.class
        ))
        .into());
    }
    for c in std::iter::once(cfg.class).chain(cfg.sweep.iter().map(|(c, _)| *c)) {
        cfg.model_of(c).map_err(UsageError)?;
    }
    Ok(cfg)
}

/// The keys a `custom:` device must give: what no default could stand for.
const CUSTOM_REQUIRED: &[&str] = &["units", "read_us", "write_us", "iops", "mbps"];

/// Splits `--storage`'s items into classes: `custom:KEY=VALUE` starts a
/// modelled device of the user's own and takes every later item with an
/// `=` in it (`custom:units=4,read_us=300,write_us=500,iops=5000,mbps=300`),
/// since a class name never has one.
pub(crate) fn parse_classes(
    items: &[String],
) -> Result<(Vec<StorageClass>, Option<Params>), UsageError> {
    let mut classes = Vec::new();
    let mut custom: Option<Vec<(String, String)>> = None;
    let mut in_custom = false;
    // A plan's `storage = "custom:units=4,read_us=300,…"` is one string.
    for item in items.iter().flat_map(|s| s.split(',')) {
        let item = item.trim();
        if let Some(first) = item.strip_prefix("custom:") {
            if custom.is_some() {
                return Err(UsageError("--storage: one custom: device per run".into()));
            }
            custom = Some(Vec::new());
            classes.push(StorageClass::CustomModel);
            in_custom = true;
            if first.is_empty() {
                continue;
            }
            push_kv(custom.as_mut(), first)?;
        } else if in_custom && item.contains('=') {
            push_kv(custom.as_mut(), item)?;
        } else {
            in_custom = false;
            let c = <StorageClass as clap::ValueEnum>::from_str(item, true)
                .ok()
                .filter(|c| *c != StorageClass::CustomModel)
                .ok_or_else(|| {
                    UsageError(format!(
                        "--storage {item}: unknown class (native, dedicated, fast-ssd, slow-ssd, disk-array, fast-ssd-cap, slow-ssd-cap, disk-array-cap, custom, custom:KEY=VALUE,…)"
                    ))
                })?;
            classes.push(c);
        }
    }
    let model = match custom {
        Some(kv) => Some(custom_params(&kv).map_err(UsageError)?),
        None => None,
    };
    Ok((classes, model))
}

fn push_kv(to: Option<&mut Vec<(String, String)>>, kv: &str) -> Result<(), UsageError> {
    let (k, v) = kv
        .split_once('=')
        .ok_or_else(|| UsageError(format!("--storage custom:{kv}: expected KEY=VALUE")))?;
    if let Some(to) = to {
        to.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok(())
}

/// A `custom:` device from its keys: the required ones given, the rest
/// from neutral defaults (σ 0.3, 64 KiB stripes, 20 µs per sequential
/// IO, each unit a share of the bandwidth, no flush time, no cache).
pub(crate) fn custom_params(kv: &[(String, String)]) -> Result<Params, String> {
    let missing: Vec<&str> = CUSTOM_REQUIRED
        .iter()
        .filter(|k| !kv.iter().any(|(g, _)| g == *k))
        .copied()
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "--storage custom: give {} (other keys: {})",
            missing.join(", "),
            devmodel::KEYS
                .iter()
                .map(|(k, _)| *k)
                .filter(|k| !CUSTOM_REQUIRED.contains(k))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let mut p = Params {
        units: 1,
        stripe: 64 << 10,
        read: Service {
            mean_us: 1.0,
            sigma: 0.3,
        },
        write: Service {
            mean_us: 1.0,
            sigma: 0.3,
        },
        seq_us: 20.0,
        unit_mbps: 0.0,
        iops: 1.0,
        mbps: 1.0,
        // No flush time, cache, queueing or flash physics unless given.
        ..Params::transparent()
    };
    devmodel::set_all(&mut p, kv).map_err(|e| e.replace("--device-model", "--storage custom:"))?;
    if !kv.iter().any(|(k, _)| k == "unit_mbps") {
        p.unit_mbps = (p.mbps / p.units as f64).max(1.0);
    }
    p.check()
        .map_err(|e| e.replace("--device-model", "--storage custom:"))?;
    Ok(p)
}

/// `--io-scale cores=N`: budgets scaled by this machine's cores over N.
pub(crate) fn parse_io_scale(s: &str) -> Result<IoScale, UsageError> {
    let bad = || {
        UsageError(format!(
            "--io-scale {s}: expected cores=N, N from 1 to 4096 (the reference machine's cores)"
        ))
    };
    let n = s
        .trim()
        .strip_prefix("cores=")
        .and_then(|n| n.trim().parse::<u32>().ok())
        .filter(|n| (1..=4096).contains(n))
        .ok_or_else(bad)?;
    Ok(IoScale {
        reference_cores: n,
        cores: crate::setup::machine_cores(),
    })
}

/// The probe's phase: `--storage-probe` (or the plan's `storage_probe`),
/// else the environment's AMPBENCH_STORAGE_PROBE (the test suite's
/// shorter probe), with where it came from; 0.1 to 10 s, or 0 for none.
fn probe_secs(s: &Settings) -> Result<(Option<f64>, Option<String>), UsageError> {
    const VAR: &str = "AMPBENCH_STORAGE_PROBE";
    let (v, from) = match (s.storage_probe, std::env::var(VAR)) {
        (Some(v), _) => (v, None),
        (None, Ok(e)) => {
            let v = crate::units::parse_secs(&e)
                .map_err(|why| UsageError(format!("{VAR}={e}: {why}")))?;
            (v, Some(format!("{VAR}={e}")))
        }
        (None, Err(_)) => return Ok((None, None)),
    };
    if v != 0.0 && !(0.1..=10.0).contains(&v) {
        let shown = if v.abs() < 1e6 {
            format!("{v}")
        } else {
            format!("{v:e}")
        };
        let name = match &from {
            Some(_) => VAR,
            None => "--storage-probe",
        };
        return Err(UsageError(format!(
            "{name} {shown}: seconds a phase, 0.1 to 10, or 0 for no probe"
        )));
    }
    Ok((Some(v), from))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_custom_device_takes_its_keys_and_later_classes_stay_classes() {
        let (c, p) = parse_classes(&strs(&[
            "disk-array",
            "custom:units=4",
            "read_us=300",
            "write_us=500",
            "iops=5000",
            "mbps=300",
            "cache=volatile",
            "slow-ssd",
        ]))
        .unwrap();
        assert_eq!(
            c,
            [
                StorageClass::DiskArray,
                StorageClass::CustomModel,
                StorageClass::SlowSsd
            ]
        );
        let p = p.unwrap();
        assert_eq!((p.units, p.iops, p.mbps), (4, 5000.0, 300.0));
        assert_eq!((p.read.mean_us, p.write.mean_us), (300.0, 500.0));
        assert_eq!(p.unit_mbps, 75.0);
        assert!(p.cache.is_some_and(|c| !c.battery));
    }

    #[test]
    fn a_custom_device_names_what_is_missing_or_wrong() {
        let e = parse_classes(&strs(&["custom:units=4", "iops=5000"])).unwrap_err();
        assert!(e.0.contains("give read_us, write_us, mbps"), "{}", e.0);
        let e = parse_classes(&strs(&[
            "custom:units=4",
            "read_us=300",
            "write_us=500",
            "iops=0",
            "mbps=300",
        ]))
        .unwrap_err();
        assert!(
            e.0.starts_with("--storage custom: iops=0: expected"),
            "{}",
            e.0
        );
        let e = parse_classes(&strs(&["disk-aray"])).unwrap_err();
        assert!(
            e.0.starts_with("--storage disk-aray: unknown class"),
            "{}",
            e.0
        );
        let e = parse_classes(&strs(&["custom:units=1", "custom:units=2"])).unwrap_err();
        assert!(e.0.contains("one custom: device"), "{}", e.0);
        assert!(parse_classes(&strs(&["custom-model"])).is_err());
    }

    #[test]
    fn io_scale_takes_the_reference_cores() {
        let s = parse_io_scale("cores=24").unwrap();
        assert_eq!(s.reference_cores, 24);
        assert!((s.factor() - s.cores as f64 / 24.0).abs() < 1e-12);
        for bad in ["24", "cores=0", "cores=x", "threads=24"] {
            assert!(parse_io_scale(bad).unwrap_err().0.contains("--io-scale"));
        }
    }

    #[test]
    fn a_custom_cache_takes_its_defaults_from_the_budgets_wherever_they_stand() {
        // One string, as a plan's `storage = "custom:…"` gives it.
        let (_, p) = parse_classes(&strs(&[
            "custom:cache=volatile,units=2,read_us=100,write_us=100,iops=5000,mbps=300",
        ]))
        .unwrap();
        let c = p.unwrap().cache.unwrap();
        assert_eq!((c.destage_iops, c.destage_mbps), (2500.0, 150.0));
    }
}
