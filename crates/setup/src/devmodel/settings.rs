//! `--device-model KEY=VALUE`: the keys that change a modelled class's
//! parameters, each within what a device could be, and the checks across
//! keys.

use super::{Params, WriteCache};

/// The keys `--device-model KEY=VALUE` sets, with what each means.
pub const KEYS: &[(&str, &str)] = &[
    ("units", "parallel units (spindles, flash channels)"),
    ("stripe_kb", "KiB per stripe chunk"),
    ("read_us", "mean random read time, µs"),
    ("read_sigma", "σ of ln(read time)"),
    ("write_us", "mean random write time at the medium, µs"),
    ("write_sigma", "σ of ln(write time)"),
    ("seq_us", "a sequential IO's overhead, µs"),
    ("unit_mbps", "one unit's transfer rate, MB/s"),
    ("iops", "the IOPS budget shared by reads and writes"),
    (
        "mbps",
        "the bandwidth budget shared by reads and writes, MB/s",
    ),
    ("flush_us", "a flush's time at the medium, µs"),
    (
        "queueing",
        "command queueing: a unit's extra random IOs at depth 32, as a share (0.5: 50% more)",
    ),
    (
        "spare",
        "flash spare area, share of the user capacity (0: not flash)",
    ),
    (
        "preconditioned",
        "flash at steady state (true) or fresh (false): random writes pay garbage collection",
    ),
    ("cache", "write cache: off, battery or volatile"),
    ("cache_mb", "write cache size, MB (2^20 bytes)"),
    (
        "cache_share",
        "write cache size as a share of the run's memory limit (of the machine's memory without one)",
    ),
    ("destage_iops", "writes per second the cache destages"),
    ("destage_mbps", "MB/s the cache destages"),
    ("hit_us", "a write into (or read from) the cache, µs"),
    (
        "delay_us",
        "how long a write stays in the cache unless flushed, µs",
    ),
];

/// Each numeric key's range.
const KEY_RANGE: &[(&str, f64, f64)] = &[
    ("units", 1.0, 1024.0),
    ("stripe_kb", 4.0, 1_048_576.0),
    ("read_us", 1.0, 10_000_000.0),
    ("read_sigma", 0.0, 3.0),
    ("write_us", 1.0, 10_000_000.0),
    ("write_sigma", 0.0, 3.0),
    ("seq_us", 0.0, 1_000_000.0),
    ("unit_mbps", 1.0, 100_000.0),
    ("iops", 1.0, 10_000_000.0),
    ("mbps", 1.0, 100_000.0),
    ("flush_us", 0.0, 10_000_000.0),
    ("queueing", 0.0, 10.0),
    ("spare", 0.0, 10.0),
    ("cache_mb", 1.0, 1_048_576.0),
    ("destage_iops", 1.0, 10_000_000.0),
    ("destage_mbps", 1.0, 100_000.0),
    ("hit_us", 0.0, 1_000_000.0),
    ("delay_us", 0.0, 10_000_000.0),
];

/// Sets every `(key, value)` in `p`: the device's own keys first, then
/// `cache`, then the cache's (so a cache made by `cache=volatile` takes
/// its defaults from the budgets as given, wherever they stand in the
/// list). A key given twice: the last wins.
pub fn set_all(p: &mut Params, kv: &[(String, String)]) -> Result<(), String> {
    const CACHE: &[&str] = &[
        "cache_mb",
        "destage_iops",
        "destage_mbps",
        "hit_us",
        "delay_us",
    ];
    let rank = |k: &str| match k {
        "cache" => 1,
        k if CACHE.contains(&k) => 2,
        _ => 0,
    };
    let mut ordered: Vec<&(String, String)> = kv.iter().collect();
    ordered.sort_by_key(|(k, _)| rank(k));
    for (k, v) in ordered {
        set(p, k, v)?;
    }
    Ok(())
}

/// Sets `key` to `value` in `p`; the error names the key.
// Long: one match arm per device-model key, each with its range.
pub fn set(p: &mut Params, key: &str, value: &str) -> Result<(), String> {
    // Every value within what a device could be: out of range is a
    // one-line error naming the key (and never an overflow in the model).
    let (lo, hi) = KEY_RANGE
        .iter()
        .find(|(k, ..)| *k == key)
        .map(|(_, lo, hi)| (*lo, *hi))
        .unwrap_or((0.0, f64::MAX));
    let num = || -> Result<f64, String> {
        value
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= lo && *v <= hi)
            .ok_or_else(|| {
                format!("--device-model {key}={value}: expected a number from {lo} to {hi}")
            })
    };
    let pos = num;
    let default_cache = WriteCache {
        bytes: 256 << 20,
        destage_iops: p.iops / 2.0,
        destage_mbps: p.mbps / 2.0,
        battery: true,
        hit_us: 30.0,
        delay_us: 0.0,
    };
    fn cache<'a>(p: &'a mut Params, key: &str) -> Result<&'a mut WriteCache, String> {
        p.cache.as_mut().ok_or_else(|| {
            format!("--device-model {key}: the device has no write cache (set cache=battery or cache=volatile first)")
        })
    }
    match key {
        "units" => p.units = pos()? as u32,
        "stripe_kb" => p.stripe = (pos()? as u64) << 10,
        "read_us" => p.read.mean_us = pos()?,
        "read_sigma" => p.read.sigma = num()?,
        "write_us" => p.write.mean_us = pos()?,
        "write_sigma" => p.write.sigma = num()?,
        "seq_us" => p.seq_us = num()?,
        "unit_mbps" => p.unit_mbps = pos()?,
        "iops" => p.iops = pos()?,
        "mbps" => p.mbps = pos()?,
        "flush_us" => p.flush_us = num()?,
        "queueing" => p.queueing = num()?,
        "spare" => {
            // Below 1% the write amplification's formula loses its
            // precision (and no drive keeps less).
            let v = num()?;
            if v > 0.0 && v < 0.01 {
                return Err(format!(
                    "--device-model spare={value}: expected 0 (not flash) or from 0.01 to 10"
                ));
            }
            p.spare = v;
        }
        "preconditioned" => {
            p.preconditioned = match value {
                "true" | "yes" | "1" => true,
                "false" | "no" | "0" => false,
                _ => {
                    return Err(format!(
                        "--device-model preconditioned={value}: expected true or false"
                    ));
                }
            }
        }
        "cache" => match value {
            "off" => p.cache = None,
            "battery" | "volatile" => {
                let c = p.cache.get_or_insert(default_cache);
                c.battery = value == "battery";
            }
            _ => {
                return Err(format!(
                    "--device-model cache={value}: expected off, battery or volatile"
                ));
            }
        },
        "cache_share" => {
            return Err(format!(
                "--device-model cache_share={value}: a share of the run's memory, given with --device-model (not in a custom: device)"
            ));
        }
        "cache_mb" => cache(p, key)?.bytes = (pos()? * (1u64 << 20) as f64) as u64,
        "destage_iops" => cache(p, key)?.destage_iops = pos()?,
        "destage_mbps" => cache(p, key)?.destage_mbps = pos()?,
        "hit_us" => cache(p, key)?.hit_us = num()?,
        "delay_us" => cache(p, key)?.delay_us = num()?,
        _ => {
            let known: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
            return Err(format!(
                "--device-model {key}: unknown key (known: {})",
                known.join(", ")
            ));
        }
    }
    Ok(())
}

impl Params {
    /// What no single key's range catches: a cache that destages faster
    /// than the device's budget would lend the medium capacity it does
    /// not have.
    pub fn check(&self) -> Result<(), String> {
        if let Some(c) = &self.cache {
            if c.destage_iops > self.iops {
                return Err(format!(
                    "--device-model destage_iops={}: above the device's iops={}",
                    c.destage_iops, self.iops
                ));
            }
            if c.destage_mbps > self.mbps {
                return Err(format!(
                    "--device-model destage_mbps={}: above the device's mbps={}",
                    c.destage_mbps, self.mbps
                ));
            }
        }
        Ok(())
    }
}
