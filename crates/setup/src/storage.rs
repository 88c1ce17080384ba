//! A device of the run's own: a file-backed loop device (`losetup
//! --direct-io=on`, so the backing file is not cached a second time), a
//! fresh filesystem mounted under `--dir`, and a throttle on the device
//! that emulates a storage class. Device counters of the loop device see
//! only this run. Everything is undone on close and on drop; a killed
//! run's device (image, loop device, mount, throttle) is found by its name,
//! `ampbench-PID-dev`, and removed by the next run or `doctor --cleanup`.
//!
//! The throttle: on cgroup v1 a rule for the loop device's MAJ:MIN in the
//! root blkio group (`blkio.throttle.{read,write}_{iops,bps}_device`),
//! which holds every submitter to it, kernel writeback threads included;
//! on cgroup v2 an `io.max` line in the engine's cgroup (v2 attributes
//! writeback to the cgroup that dirtied the pages).

use std::path::{Path, PathBuf};
use std::process::Command;

mod modelpath;
mod power;

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};

pub use super::class::StorageClass;
use super::mounts::run;
pub use super::throttle::{Caps, MAX_CAP, io_max_line, parse_pair};
use super::throttle::{blkio_root, rules, unthrottle};

/// The filesystem made on the dedicated device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Fs {
    /// ext4 (`mkfs.ext4`).
    #[default]
    Ext4,
    /// XFS (`mkfs.xfs`, Debian's xfsprogs).
    Xfs,
}

/// A dedicated loop device with a mounted filesystem, undone on drop.
#[derive(Debug)]
pub struct Device {
    /// `/dev/loopN`.
    pub loopdev: PathBuf,
    /// Its major number.
    pub major: u32,
    /// Its minor number.
    pub minor: u32,
    /// The backing file.
    pub image: PathBuf,
    /// Where the filesystem is mounted.
    pub mount: PathBuf,
    /// True while a v1 device throttle is set.
    throttled: bool,
    closed: bool,
    keep_image: bool,
    /// The device model serving the image, if the class is modelled.
    pub model: Option<super::devmodel::Served>,
    /// The filesystem's mount options.
    mount_options: String,
}

/// Whether this machine can make a dedicated device: root, loop devices,
/// mkfs for `fs`. The error says what is missing.
pub fn check_abilities(fs: Fs) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root (loop devices and mounts need root)".into());
    }
    if !Path::new("/dev/loop-control").exists() {
        return Err("no loop device support (/dev/loop-control missing)".into());
    }
    let mkfs = match fs {
        Fs::Ext4 => "mkfs.ext4",
        Fs::Xfs => "mkfs.xfs",
    };
    let found = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        .iter()
        .any(|d| Path::new(d).join(mkfs).exists());
    if !found {
        return Err(format!("{mkfs} not installed"));
    }
    Ok(())
}

impl Device {
    /// Makes a `size`-byte sparse image in `parent`, a loop device on it,
    /// a filesystem, and mounts it at `parent/ampbench-PID-RANDOM-dev`.
    /// With a `model`, the image is the file a device model serves (in
    /// `parent/ampbench-PID-RANDOM-model`, see [`super::devmodel`]).
    ///
    /// `parent` may be a shared directory (/tmp): the names hold a random
    /// part, the image is made new (never an existing file or a link
    /// someone planted) and only root may read it (0600), the mount point
    /// is made new and root's (0700 until the filesystem covers it).
    pub fn create(
        parent: &Path,
        size: u64,
        fs: Fs,
        model: Option<(&super::devmodel::Params, u64)>,
    ) -> Result<Device> {
        Device::create_with(parent, size, fs, model, false)
    }

    /// As [`Device::create`]; with `medium`, the model keeps the medium's
    /// content so [`Device::power_cut`] can be played.
    pub fn create_with(
        parent: &Path,
        size: u64,
        fs: Fs,
        model: Option<(&super::devmodel::Params, u64)>,
        medium: bool,
    ) -> Result<Device> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        check_abilities(fs).map_err(|e| anyhow!(e))?;
        check_parent(parent)?;
        let base = parent.join(format!(
            "ampbench-{}-{}-dev",
            std::process::id(),
            crate::sys::random_password()?.get(..8).unwrap_or("0")
        ));
        let mut image = base.with_extension("img");
        let mount = base;
        let served = match model {
            Some((params, seed)) => {
                let name = image
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let m = super::devmodel::Served::start(parent, &name, size, params, seed, medium)?;
                image = m.image.clone();
                Some(m)
            }
            None => {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(&image)
                    .with_context(|| format!("cannot create {}", image.display()))?;
                f.set_len(size)
                    .with_context(|| format!("cannot size {}", image.display()))?;
                None
            }
        };
        let mut dev = Device {
            loopdev: PathBuf::new(),
            major: 0,
            minor: 0,
            image: image.clone(),
            mount: mount.clone(),
            throttled: false,
            closed: false,
            keep_image: false,
            model: served,
            mount_options: "nosuid,nodev".into(),
        };
        dev.attach()?;
        match fs {
            // Inode tables and journal written now, not by a background
            // thread during the benchmark; one inode per MB of space.
            Fs::Ext4 => run(Command::new("mkfs.ext4")
                .args(["-q", "-F", "-T", "largefile", "-E"])
                .arg("lazy_itable_init=0,lazy_journal_init=0")
                .arg(&dev.loopdev))?,
            Fs::Xfs => run(Command::new("mkfs.xfs")
                .args(["-q", "-f"])
                .arg(&dev.loopdev))?,
        };
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&mount)
            .with_context(|| format!("cannot create {}", mount.display()))?;
        dev.mount()?;
        Ok(dev)
    }

    fn mount(&self) -> Result<()> {
        // No set-user-id program or device node on it takes effect.
        run(Command::new("mount")
            .args(["-o", &self.mount_options])
            .arg(&self.loopdev)
            .arg(&self.mount))?;
        Ok(())
    }

    fn attach(&mut self) -> Result<()> {
        let loopdev = run(Command::new("losetup")
            .args(["-f", "--show", "--direct-io=on"])
            .arg(&self.image))?;
        self.loopdev = PathBuf::from(&loopdev);
        let name = loopdev.trim_start_matches("/dev/");
        let mm = std::fs::read_to_string(format!("/sys/block/{name}/dev"))
            .with_context(|| format!("no /sys/block/{name}/dev"))?;
        let (ma, mi) = mm
            .trim()
            .split_once(':')
            .ok_or_else(|| anyhow!("bad /sys/block/{name}/dev: {mm}"))?;
        self.major = ma.parse()?;
        self.minor = mi.parse()?;
        if self.model.is_some() {
            self.fit_model_path(name, super::devmodel::server::MAX_IO)?;
        }
        Ok(())
    }

    /// `MAJ:MIN`.
    pub fn maj_min(&self) -> String {
        format!("{}:{}", self.major, self.minor)
    }

    /// The device's name in /proc/diskstats (`loopN`).
    pub fn name(&self) -> String {
        self.loopdev
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Throttles the device on cgroup v1 (root blkio group). On v2 the
    /// caller writes [`io_max_line`] to the engine's cgroup instead.
    pub fn throttle_v1(&mut self, caps: &Caps) -> Result<()> {
        let root = blkio_root().ok_or_else(|| anyhow!("no v1 blkio controller"))?;
        self.throttled = true;
        for (file, v) in rules(caps) {
            let line = format!("{} {}", self.maj_min(), v.unwrap_or(0));
            std::fs::write(root.join(file), &line)
                .with_context(|| format!("cannot write '{line}' to blkio.{file}"))?;
        }
        Ok(())
    }

    /// Keeps the image file when the device is closed (`--keep`): the
    /// data stays readable with `mount -o loop IMAGE DIR`.
    pub fn keep_image(&mut self) {
        self.keep_image = true;
    }

    /// Where a kept image is when the device is closed:
    /// `ampbench-PID-kept.img` beside it. Not a name the sweep of killed
    /// runs' devices looks for, so mounting the kept image again does not
    /// make the next run take it for a leftover and delete it.
    pub fn kept_image(&self) -> PathBuf {
        let name = self
            .image
            .file_name()
            .map(|n| n.to_string_lossy().replace("-dev.img", "-kept.img"))
            .unwrap_or_default();
        // Beside the mount point, in the run's --dir (a modelled device's
        // image is inside the model's mount).
        self.mount.with_file_name(name)
    }

    /// Removes the throttle, unmounts, detaches and deletes the image
    /// (unless [`Device::keep_image`]).
    pub fn close(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let mut errs = Vec::new();
        if self.throttled {
            unthrottle(&self.maj_min());
        }
        // The filesystem's last writes go through at once, not at the
        // class's speed (a disk array's cache destaging at 600/s would
        // hold an unmount, and a Ctrl-C, for minutes).
        if let Some(m) = self.model.as_mut() {
            let _ = m.set_params(&super::devmodel::Params::transparent());
        }
        if let Err(e) = super::mounts::unmount(&self.mount) {
            errs.push(format!("{e:#}"));
        }
        if !self.loopdev.as_os_str().is_empty() {
            if let Err(e) = run(Command::new("losetup").arg("-d").arg(&self.loopdev)) {
                errs.push(format!("{e:#}"));
            } else if let Some(e) =
                super::mounts::wait_detached(&self.loopdev, std::time::Duration::from_secs(5))
            {
                errs.push(e);
            }
        }
        let _ = std::fs::remove_dir(&self.mount);
        if let Some(mut m) = self.model.take() {
            // The data is the model's host file; a kept image is that
            // file, moved beside the model's directory before it goes.
            if self.keep_image {
                let kept = self.kept_image();
                if let Err(e) = std::fs::rename(m.dir.join("data"), &kept) {
                    errs.push(format!("cannot keep the image as {}: {e}", kept.display()));
                }
            }
            if let Err(e) = m.close() {
                errs.push(format!("{e:#}"));
            }
        } else if !self.keep_image {
            let _ = std::fs::remove_file(&self.image);
        } else if let Err(e) = std::fs::rename(&self.image, self.kept_image()) {
            errs.push(format!(
                "cannot rename the kept image {}: {e}",
                self.image.display()
            ));
        }
        if errs.is_empty() {
            Ok(())
        } else {
            bail!("{}", errs.join("; "))
        }
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            eprintln!("ampbench: cleaning up the dedicated device: {e:#}");
        }
    }
}

/// Refuses a parent directory another user could rename things in: one
/// (or one above it) that another user owns, or that others may write
/// and that is not sticky. There what root makes (a device's image and
/// mount point, a server's directory before it is handed over) could be
/// swapped for a link between its making and its use. A sticky
/// directory of root's such as /tmp is fine: nobody renames another's
/// entries.
pub fn check_parent(parent: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let dir = parent
        .canonicalize()
        .unwrap_or_else(|_| parent.to_path_buf());
    for p in dir.ancestors() {
        let Ok(m) = std::fs::metadata(p) else {
            continue;
        };
        let why = if m.uid() != 0 {
            format!("is owned by uid {}, not root", m.uid())
        } else if m.mode() & 0o022 != 0 && m.mode() & 0o1000 == 0 {
            "is writable by other users and not sticky".to_string()
        } else {
            continue;
        };
        return Err(crate::UsageError(format!(
            "--dir {}: {} {why}, so what ampbench (as root) makes there (a device's image and mount point, a server's directory) could be swapped; pass a directory only root can write in, or a sticky one of root's like /tmp",
            parent.display(),
            p.display()
        ))
        .into());
    }
    Ok(())
}

/// When the file system holding `path` is full (under 1 MB, or under 1%
/// of it, left to unprivileged writers), says so with the path and the
/// space left: an engine's own error may not (LMDB's commit reports
/// EIO). None while there is room, or when it cannot be read.
pub fn full_note(path: &Path) -> Option<String> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statvfs writes the struct it is given; zeroed is a valid
    // initial value for it.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid NUL-terminated path; st a valid out pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let unit = st.f_frsize as u64;
    let (free, total) = (st.f_bavail as u64 * unit, st.f_blocks as u64 * unit);
    (free < (1 << 20).max(total / 100)).then(|| {
        format!(
            "no space left on the device of {}: {:.1} MB free of {:.0} MB",
            path.display(),
            free as f64 / 1e6,
            total as f64 / 1e6
        )
    })
}
