//! The throttle on a run's device: its caps (`--iops`, `--mbps`, a capped
//! class's), and the kernel's rules that hold them, on cgroup v1 the root
//! blkio group's, on v2 an `io.max` line (see [`super::storage`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// IOPS and bandwidth caps on the device; None is no cap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caps {
    /// Read operations per second.
    pub read_iops: Option<u64>,
    /// Write operations per second.
    pub write_iops: Option<u64>,
    /// Read MB/s (10⁶ bytes).
    pub read_mbps: Option<u64>,
    /// Write MB/s (10⁶ bytes).
    pub write_mbps: Option<u64>,
}

impl Caps {
    /// Every cap times `f` (`--io-scale`), at least 1.
    pub fn scaled(&self, f: f64) -> Caps {
        let s = |v: Option<u64>| v.map(|v| ((v as f64 * f).round() as u64).max(1));
        Caps {
            read_iops: s(self.read_iops),
            write_iops: s(self.write_iops),
            read_mbps: s(self.read_mbps),
            write_mbps: s(self.write_mbps),
        }
    }

    /// True when nothing is capped.
    pub fn none(&self) -> bool {
        *self == Caps::default()
    }

    /// `read 1000 IOPS 200 MB/s, write …` for the console.
    pub fn show(&self) -> String {
        if self.none() {
            return "no throttle".into();
        }
        let one = |iops: Option<u64>, mbps: Option<u64>| {
            let i = iops.map_or("∞".into(), |v| v.to_string());
            let m = mbps.map_or("∞".into(), |v| v.to_string());
            format!("{i} IOPS {m} MB/s")
        };
        format!(
            "read {}, write {}",
            one(self.read_iops, self.read_mbps),
            one(self.write_iops, self.write_mbps)
        )
    }
}

/// The largest cap `--iops` (IOs/s) and `--mbps` (MB/s) take: far past
/// any device, and small enough that bytes per second fit the kernel's
/// 64-bit throttle values.
pub const MAX_CAP: u64 = 100_000_000;

/// Parses `R` or `R,W` (a single value caps both directions).
pub fn parse_pair(flag: &str, s: &str) -> Result<(u64, u64), crate::UsageError> {
    let bad = || {
        crate::UsageError(format!(
            "--{flag} {s}: expected a number from 1 to {MAX_CAP}, or READ,WRITE"
        ))
    };
    let v: Vec<u64> = s
        .split(',')
        .map(|p| {
            p.trim()
                .parse::<u64>()
                .ok()
                .filter(|&n| n > 0 && n <= MAX_CAP)
        })
        .collect::<Option<_>>()
        .ok_or_else(bad)?;
    match v[..] {
        [a] => Ok((a, a)),
        [r, w] => Ok((r, w)),
        _ => Err(bad()),
    }
}

/// The root blkio group (v1), where a device rule holds every submitter.
pub(super) fn blkio_root() -> Option<PathBuf> {
    let p = Path::new("/sys/fs/cgroup/blkio");
    p.join("blkio.throttle.read_iops_device")
        .exists()
        .then(|| p.to_path_buf())
}

/// The v1 throttle files and their values for caps (MB/s as bytes/s).
pub(super) fn rules(caps: &Caps) -> [(&'static str, Option<u64>); 4] {
    [
        ("blkio.throttle.read_iops_device", caps.read_iops),
        ("blkio.throttle.write_iops_device", caps.write_iops),
        (
            "blkio.throttle.read_bps_device",
            caps.read_mbps.map(|m| m * 1_000_000),
        ),
        (
            "blkio.throttle.write_bps_device",
            caps.write_mbps.map(|m| m * 1_000_000),
        ),
    ]
}

/// The cgroup v2 `io.max` line for a device and caps.
pub fn io_max_line(maj_min: &str, caps: &Caps) -> String {
    let v = |o: Option<u64>, scale: u64| o.map_or("max".into(), |n| (n * scale).to_string());
    format!(
        "{maj_min} riops={} wiops={} rbps={} wbps={}",
        v(caps.read_iops, 1),
        v(caps.write_iops, 1),
        v(caps.read_mbps, 1_000_000),
        v(caps.write_mbps, 1_000_000)
    )
}

/// Removes every v1 throttle rule for a device (0 = no limit).
pub(super) fn unthrottle(maj_min: &str) {
    if let Some(root) = blkio_root() {
        for (file, _) in rules(&Caps::default()) {
            let _ = std::fs::write(root.join(file), format!("{maj_min} 0"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_and_lines() {
        assert_eq!(parse_pair("iops", "500").unwrap(), (500, 500));
        assert_eq!(parse_pair("iops", "500,200").unwrap(), (500, 200));
        assert!(parse_pair("iops", "0").is_err());
        assert!(parse_pair("iops", "1,2,3").is_err());
        let c = Caps {
            read_iops: Some(1000),
            write_iops: Some(1000),
            read_mbps: Some(200),
            write_mbps: Some(200),
        };
        assert_eq!(
            io_max_line("7:0", &c),
            "7:0 riops=1000 wiops=1000 rbps=200000000 wbps=200000000"
        );
        assert_eq!(
            rules(&c)[2],
            ("blkio.throttle.read_bps_device", Some(200_000_000))
        );
    }
}
