//! The loop device in front of a device model: checked so every IO
//! reaches the model as the engine issued it.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use super::Device;

impl Device {
    /// On a modelled device every IO must reach the model as it was
    /// issued: the loop device in direct IO (no second page cache in
    /// front of the model, no readahead of its own), and no request
    /// larger than one FUSE request (a larger one would reach the model
    /// as two IOs). The largest request is lowered to fit; either check
    /// failing fails the device.
    pub(super) fn fit_model_path(&self, name: &str, max_io: u32) -> Result<()> {
        let sys = PathBuf::from(format!("/sys/block/{name}"));
        let read = |f: &str| -> Result<String> {
            std::fs::read_to_string(sys.join(f))
                .map(|s| s.trim().to_string())
                .with_context(|| format!("cannot read {}", sys.join(f).display()))
        };
        if read("loop/dio")? != "1" {
            bail!(
                "{} runs without direct IO (loop/dio is 0): the model would see the loop device's own page cache, not the engine's IOs",
                self.loopdev.display()
            );
        }
        let limit = u64::from(max_io / 1024);
        let kb: u64 = read("queue/max_sectors_kb")?.parse()?;
        if kb > limit {
            let f = sys.join("queue/max_sectors_kb");
            std::fs::write(&f, format!("{limit}\n"))
                .with_context(|| format!("cannot lower {} to {limit}", f.display()))?;
            let now: u64 = read("queue/max_sectors_kb")?.parse()?;
            if now > limit {
                bail!(
                    "{}: requests up to {now} KiB, more than one FUSE request ({limit} KiB)",
                    f.display()
                );
            }
        }
        Ok(())
    }
}
