//! Storage classes: what a run's device behaves like, as caps on the
//! machine's device or as a device model's parameters, and where the
//! classes' figures come from.

use serde::{Deserialize, Serialize};

use super::devmodel::{Params, Service, WriteCache};
use super::throttle::Caps;

/// A storage class: what the dedicated device behaves like.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum StorageClass {
    /// The data directory as it is: no device of our own, no throttle.
    Native,
    /// A dedicated device without a throttle (the machine's own speed).
    #[default]
    Dedicated,
    /// ≈ 100k IOPS, 2 GB/s: a fast NVMe SSD. Not modelled (the model's
    /// server cannot serve it on 2 cores): the machine's device under a
    /// cap, as fast-ssd-cap.
    FastSsd,
    /// A modelled SATA SSD: ≈ 10k IOPS shared by reads and writes, 250 µs
    /// per random read, a power-safe write cache.
    SlowSsd,
    /// A modelled array of ten 7,200 rpm disks: ≈ 133 random reads/s at
    /// QD1, 1k IOPS shared at depth, a battery-backed write cache.
    DiskArray,
    /// A cap of 100k IOPS and 2 GB/s each way (no latency of its own).
    FastSsdCap,
    /// A cap of 10k IOPS and 400 MB/s each way, reads and writes
    /// separately (the classes before the device model).
    SlowSsdCap,
    /// A cap of 1k IOPS and 200 MB/s each way, reads and writes separately.
    DiskArrayCap,
    /// `--iops R[,W]` and `--mbps R[,W]`.
    Custom,
    /// A device model of the user's own: `--storage
    /// custom:units=4,read_us=300,write_us=500,iops=5000,mbps=300[,KEY=VALUE…]`.
    #[value(skip)]
    CustomModel,
}

impl StorageClass {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            StorageClass::Native => "native",
            StorageClass::Dedicated => "dedicated",
            StorageClass::FastSsd => "fast-ssd",
            StorageClass::SlowSsd => "slow-ssd",
            StorageClass::DiskArray => "disk-array",
            StorageClass::FastSsdCap => "fast-ssd-cap",
            StorageClass::SlowSsdCap => "slow-ssd-cap",
            StorageClass::DiskArrayCap => "disk-array-cap",
            StorageClass::Custom => "custom",
            StorageClass::CustomModel => "custom-model",
        }
    }

    /// The class's caps (custom: none until `--iops`/`--mbps` fill them;
    /// a modelled class: none, the model is its limit).
    pub fn caps(self) -> Caps {
        let c = |iops: u64, mbps: u64| Caps {
            read_iops: Some(iops),
            write_iops: Some(iops),
            read_mbps: Some(mbps),
            write_mbps: Some(mbps),
        };
        match self {
            StorageClass::FastSsd | StorageClass::FastSsdCap => c(100_000, 2_000),
            StorageClass::SlowSsdCap => c(10_000, 400),
            StorageClass::DiskArrayCap => c(1_000, 200),
            _ => Caps::default(),
        }
    }

    /// The device model's parameters, for a modelled class.
    pub fn model(self) -> Option<Params> {
        class_params(self)
    }
}

impl std::fmt::Display for StorageClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The modelled parameters of a class, or None for a class the model
/// does not serve.
// Long: one arm per modelled class (disk-array, slow-ssd), each its device's
// parameters with their sources.
pub fn class_params(class: StorageClass) -> Option<Params> {
    use StorageClass as C;
    match class {
        // About ten 7,200 rpm disks in RAID 0 behind a controller with a
        // battery-backed cache. A random IO positions the head: a short
        // seek over the database's part of the disk plus half a turn
        // (4.17 ms at 7,200 rpm), 7.5 ms for a read, 8.5 for a write, so
        // 133 random reads/s at QD1. At depth the ten disks could give
        // about 1,250/s; the array's budget is 1,000 IOPS (seed 003:
        // "approximately 1k for the disk array") and 1,000 MB/s (ten disks
        // at 150 MB/s, less the controller's share). The cache: 512 MB,
        // destaging 400 random writes/s in arrival order and 600/s sorted
        // by address with 32 or more waiting per disk (the sort is the
        // model's `queueing`), so a synced write is acknowledged from it
        // (seed 001's 4,649 synced overwrites/s on its array).
        C::DiskArray => Some(Params {
            units: 10,
            stripe: 256 << 10,
            read: Service {
                mean_us: 7_500.0,
                sigma: 0.35,
            },
            write: Service {
                mean_us: 8_500.0,
                sigma: 0.35,
            },
            seq_us: 100.0,
            unit_mbps: 150.0,
            iops: 1_000.0,
            mbps: 1_000.0,
            flush_us: 200.0,
            cache: Some(WriteCache {
                bytes: 512 << 20,
                destage_iops: 400.0,
                destage_mbps: 800.0,
                battery: true,
                hit_us: 30.0,
                delay_us: 0.0,
            }),
            path_us: 0.0,
            // Each spindle reorders its queue (TCQ/NCQ): 50% more random
            // IOs at a depth of 32 (docs/storage.md), and the controller
            // destages its cache in address order the same way.
            queueing: 0.5,
            spare: 0.0,
            preconditioned: false,
        }),
        // A SATA SSD of the seeds' years: about 10k random IOPS at depth
        // (seed 003), shared by reads and writes; 4 flash channels at 250
        // µs per random read (4k/s at QD1), 400 MB/s. Its 256 MB cache is
        // protected against power loss, as the seeds' enterprise SSDs
        // were (an Intel S3700 in seed 001), and destages 8,000 writes/s.
        C::SlowSsd => Some(Params {
            units: 4,
            stripe: 64 << 10,
            read: Service {
                mean_us: 250.0,
                sigma: 0.3,
            },
            write: Service {
                mean_us: 400.0,
                sigma: 0.3,
            },
            seq_us: 20.0,
            unit_mbps: 200.0,
            iops: 10_000.0,
            mbps: 400.0,
            flush_us: 50.0,
            cache: Some(WriteCache {
                bytes: 256 << 20,
                destage_iops: 8_000.0,
                destage_mbps: 350.0,
                battery: true,
                hit_us: 20.0,
                delay_us: 0.0,
            }),
            path_us: 0.0,
            // Flash does not reorder for position. 28% spare area, as the
            // era's enterprise SATA drives kept, at steady state (the
            // seeds' databases filled their drives for hours): a random
            // write costs garbage collection's 2.5 writes.
            queueing: 0.0,
            spare: 0.28,
            preconditioned: true,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devmodel::set;

    #[test]
    fn classes_are_capped_or_modelled() {
        assert_eq!(
            StorageClass::DiskArrayCap.caps(),
            Caps {
                read_iops: Some(1000),
                write_iops: Some(1000),
                read_mbps: Some(200),
                write_mbps: Some(200),
            }
        );
        assert!(StorageClass::Dedicated.caps().none());
        assert!(
            StorageClass::DiskArray.caps().none(),
            "modelled, not capped"
        );
        assert!(
            StorageClass::DiskArray.model().is_some() && StorageClass::FastSsd.model().is_none()
        );
    }

    #[test]
    fn settings_are_checked_and_name_their_key() {
        let mut p = class_params(StorageClass::DiskArray).unwrap();
        set(&mut p, "iops", "2000").unwrap();
        assert_eq!(p.iops, 2000.0);
        set(&mut p, "cache", "off").unwrap();
        assert!(p.cache.is_none());
        let e = set(&mut p, "destage_iops", "10").unwrap_err();
        assert!(
            e.contains("destage_iops") && e.contains("no write cache"),
            "{e}"
        );
        set(&mut p, "cache", "volatile").unwrap();
        assert!(p.cache.is_some_and(|c| !c.battery));
        for (k, v) in [
            ("iops", "0"),
            ("iops", "1e-12"),
            ("stripe_kb", "1e30"),
            ("units", "5000"),
            ("read_us", "x"),
        ] {
            let e = set(&mut p, k, v).unwrap_err();
            assert!(
                e.starts_with(&format!("--device-model {k}={v}: expected")),
                "{e}"
            );
        }
        assert!(
            set(&mut p, "colour", "1")
                .unwrap_err()
                .contains("unknown key")
        );
        set(&mut p, "destage_iops", "5000").unwrap();
        assert!(p.check().unwrap_err().contains("destage_iops=5000"));
    }
}
