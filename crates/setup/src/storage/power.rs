//! Power cuts on a modelled device (`crashcheck --power-cut`): the cut,
//! and the power back with the filesystem mounted again; mount options
//! and syncfs for the check.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};

use super::{Device, run};

impl Device {
    /// Mounts the filesystem again with `extra` options (`nobarrier`:
    /// ext4 sends no cache flushes), nosuid,nodev after them.
    pub fn remount_with(&mut self, extra: &str) -> Result<()> {
        crate::mounts::unmount_or(&self.mount, false)?;
        self.mount_options = format!("{extra},nosuid,nodev");
        self.mount()
    }

    /// Writes everything the filesystem holds to the device and flushes
    /// its cache (syncfs).
    pub fn sync(&self) -> Result<()> {
        use std::os::fd::AsRawFd;
        let d = std::fs::File::open(&self.mount)
            .with_context(|| format!("cannot open {}", self.mount.display()))?;
        // SAFETY: syncfs on an open descriptor.
        if unsafe { libc::syncfs(d.as_raw_fd()) } != 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("syncfs {}", self.mount.display()));
        }
        Ok(())
    }

    /// Cuts the power under the filesystem: the device model drops what
    /// its volatile cache held and fails every IO from now, so what the
    /// kernel had not written (its page cache) is lost too. Returns the
    /// blocks dropped. [`Device::power_on`] brings it back.
    pub fn power_cut(&mut self) -> Result<u64> {
        self.model
            .as_mut()
            .ok_or_else(|| anyhow!("a power cut needs a modelled device"))?
            .power_cut()
    }

    /// After [`Device::power_cut`]: the filesystem is unmounted (its
    /// unwritten pages fail and are gone), the loop device detached, the
    /// power brought back, and the image attached and mounted again, so
    /// the filesystem recovers from what reached the medium.
    ///
    /// The power comes back only once the old loop device is gone: one
    /// still open (a probe of udev's, a mount another namespace holds)
    /// is only marked to clear itself, and a filesystem living on in it
    /// would write the image while it is mounted again.
    pub fn power_on(&mut self) -> Result<()> {
        crate::mounts::unmount_or(&self.mount, false)?;
        run(Command::new("losetup").arg("-d").arg(&self.loopdev))?;
        if let Some(why) = crate::mounts::wait_detached(&self.loopdev, Duration::from_secs(10)) {
            bail!("{why}: {} is not mounted again", self.image.display());
        }
        self.loopdev = PathBuf::new();
        self.model
            .as_mut()
            .ok_or_else(|| anyhow!("a power cut needs a modelled device"))?
            .power_on()?;
        self.attach()?;
        self.mount()
    }
}
