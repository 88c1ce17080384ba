//! `crashcheck --power-cut`: each engine's data on a device of its own,
//! served by the device model with a volatile write cache that keeps the
//! medium's content. At the kill the power is cut: the writes the cache
//! held and had not destaged are dropped, every later IO fails (so the
//! kernel's unwritten pages are lost with it), then the filesystem is
//! mounted again and recovers from what reached the medium, and then the
//! engine recovers from what the filesystem kept.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::UsageError;
use crate::engine::EngineKind;
use crate::setup::devmodel::{self, Params};
use crate::setup::storage::{Device, Fs, StorageClass};

/// The device's size: room for a server's logs and a few rounds.
const SIZE: u64 = 2 << 30;

/// The seed of the device's draws.
const SEED: u64 = 0x706f_7765_7263_7574;

/// The power-cut device every engine gets.
#[derive(Debug)]
pub struct Setup {
    params: Params,
    mount_options: Option<String>,
}

impl Setup {
    /// `--power-cut` with its `--device-model` settings and
    /// `--mount-options`; None without `--power-cut`.
    pub fn from_args(on: bool, sets: &[String], mount: Option<&str>) -> Result<Option<Setup>> {
        if !on {
            if let Some(k) = sets.first() {
                return Err(UsageError(format!("--device-model {k}: needs --power-cut")).into());
            }
            if let Some(m) = mount {
                return Err(UsageError(format!("--mount-options {m}: needs --power-cut")).into());
            }
            return Ok(None);
        }
        // slow-ssd with its cache volatile and small, so a flush waits
        // for little and each round's outcome settles fast; a write stays
        // in it up to 100 ms unless flushed, as a drive's DRAM cache may
        // hold writes to combine them, so what no flush covered is lost.
        let mut params = crate::setup::class::class_params(StorageClass::SlowSsd)
            .ok_or_else(|| anyhow::anyhow!("slow-ssd is not modelled"))?;
        for (k, v) in [
            ("cache", "volatile"),
            ("cache_mb", "64"),
            ("delay_us", "100000"),
        ] {
            devmodel::set(&mut params, k, v).map_err(UsageError)?;
        }
        let mut given = Vec::new();
        for kv in sets {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| UsageError(format!("--device-model {kv}: expected KEY=VALUE")))?;
            given.push((k.trim().to_string(), v.trim().to_string()));
        }
        devmodel::set_all(&mut params, &given).map_err(UsageError)?;
        params.check().map_err(UsageError)?;
        let mount_options = match mount {
            Some(m) => Some(check_mount_options(m)?),
            None => None,
        };
        Ok(Some(Setup {
            params,
            mount_options,
        }))
    }

    /// The line the check prints about itself.
    pub fn describe(&self) -> String {
        let lose = match self.params.cache {
            Some(c) if !c.battery => {
                "drops the writes its volatile cache held and had not destaged"
            }
            Some(_) => "keeps its battery-backed cache (nothing it acknowledged is lost)",
            None => "has no write cache (nothing it acknowledged is lost)",
        };
        format!(
            "checks a power cut: at each kill the device ({}) {lose}, and the kernel's unwritten pages are lost; ext4 mounted with {}nosuid,nodev",
            self.params.show(),
            self.mount_options
                .as_deref()
                .map(|m| format!("{m},"))
                .unwrap_or_default()
        )
    }

    /// A fresh device for `kind` under `parent`, mounted, with a data
    /// directory on it.
    pub fn device(&self, parent: &Path, kind: EngineKind) -> Result<PowerDevice> {
        let mut dev = Device::create_with(parent, SIZE, Fs::Ext4, Some((&self.params, SEED)), true)
            .context("--power-cut: cannot make the device")?;
        if let Some(m) = &self.mount_options {
            dev.remount_with(m)
                .with_context(|| format!("--mount-options {m}"))?;
        }
        let data = tempfile::Builder::new()
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .prefix(&format!("{}-", kind.name()))
            .tempdir_in(&dev.mount)
            .with_context(|| format!("cannot create a directory in {}", dev.mount.display()))?
            .keep();
        Ok(PowerDevice { dev, data })
    }
}

/// The ext4 options `--mount-options` may set: those that change how
/// and when the filesystem makes data durable, nothing else (no
/// `errors=panic`, no `suid`).
const MOUNT_OPTIONS: &[&str] = &[
    "barrier",
    "nobarrier",
    "barrier=0",
    "barrier=1",
    "data=ordered",
    "data=writeback",
    "data=journal",
    "journal_checksum",
    "nojournal_checksum",
    "journal_async_commit",
    "delalloc",
    "nodelalloc",
    "auto_da_alloc",
    "noauto_da_alloc",
    "dioread_nolock",
    "dioread_lock",
];

/// `--mount-options`: each option one of [`MOUNT_OPTIONS`] or
/// `commit=SECONDS`; the device's own (`errors=remount-ro`, then
/// nosuid,nodev) come after, so none can be undone.
fn check_mount_options(m: &str) -> Result<String> {
    for o in m.split(',') {
        let commit = o
            .strip_prefix("commit=")
            .is_some_and(|n| n.parse::<u32>().is_ok_and(|n| n <= 3600));
        if !commit && !MOUNT_OPTIONS.contains(&o) {
            return Err(UsageError(format!(
                "--mount-options {m}: {o} is not an option this check sets (it takes {}, commit=SECONDS)",
                MOUNT_OPTIONS.join(", ")
            ))
            .into());
        }
    }
    Ok(format!("{m},errors=remount-ro"))
}

/// An engine's power-cut device.
pub struct PowerDevice {
    dev: Device,
    /// The engine's directory on it.
    pub data: PathBuf,
}

impl PowerDevice {
    /// Everything written so far reaches the medium (syncfs, which
    /// flushes the device's cache).
    pub fn settle(&mut self) -> Result<()> {
        self.dev.sync()
    }

    /// Cuts the power: the blocks dropped from the volatile cache.
    pub fn cut(&mut self) -> Result<u64> {
        self.dev.power_cut().context("cutting the power")
    }

    /// Brings the power back and mounts the filesystem again.
    pub fn restore(&mut self) -> Result<()> {
        self.dev
            .power_on()
            .context("bringing the power back (remounting the filesystem)")
    }

    /// Unmounts and removes the device (its image kept with `keep`).
    pub fn close(mut self, keep: bool) -> Result<()> {
        if keep {
            self.dev.keep_image();
        }
        self.dev.close()
    }
}
