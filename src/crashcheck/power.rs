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
        let mut params = devmodel::class_params(StorageClass::SlowSsd)
            .ok_or_else(|| anyhow::anyhow!("slow-ssd is not modelled"))?;
        for (k, v) in [
            ("cache", "volatile"),
            ("cache_mb", "64"),
            ("delay_us", "100000"),
        ] {
            devmodel::set(&mut params, k, v).map_err(UsageError)?;
        }
        for kv in sets {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| UsageError(format!("--device-model {kv}: expected KEY=VALUE")))?;
            devmodel::set(&mut params, k.trim(), v.trim()).map_err(UsageError)?;
        }
        params.check().map_err(UsageError)?;
        let mount_options = match mount {
            // One argument to mount(8), but only option characters: no
            // way to pass it anything else.
            Some(m)
                if m.is_empty()
                    || !m
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_=,.".contains(c)) =>
            {
                return Err(UsageError(format!(
                    "--mount-options {m}: expected mount options like nobarrier or data=writeback"
                ))
                .into());
            }
            m => m.map(str::to_string),
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
            "checks a power cut: at each kill the device ({}) {lose}, and the kernel's unwritten pages are lost; ext4 mounted with nosuid,nodev{}",
            self.params.show(),
            self.mount_options
                .as_deref()
                .map(|m| format!(",{m}"))
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
