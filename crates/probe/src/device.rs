//! Finds the block device that holds a directory, for /proc/diskstats.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// A whole-disk block device (the parent disk when the directory is on a
/// partition), as named in /proc/diskstats.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Device {
    /// Kernel name, e.g. `vda`, `nvme0n1`, `dm-0`.
    pub name: String,
    /// Major number.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
}

/// The disk behind a loop device's backing file (None for other
/// devices): what a dedicated device costs the machine's own disk.
pub fn backing_of(dev: &Device) -> Option<Device> {
    let file =
        std::fs::read_to_string(format!("/sys/block/{}/loop/backing_file", dev.name)).ok()?;
    let file = file.trim().trim_end_matches(" (deleted)");
    device_for(Path::new(file).parent()?).ok()
}

/// The device behind `dir`, or why there is none (tmpfs, overlay, …).
pub fn device_for(dir: &Path) -> Result<Device, String> {
    let md = std::fs::metadata(dir).map_err(|e| format!("cannot stat {}: {e}", dir.display()))?;
    let dev = md.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    if major == 0 {
        return Err(format!(
            "{} is on a filesystem with no block device (device {major}:{minor}: tmpfs, overlay or similar)",
            dir.display()
        ));
    }
    let sys = Path::new("/sys/dev/block").join(format!("{major}:{minor}"));
    let real = std::fs::canonicalize(&sys)
        .map_err(|e| format!("cannot resolve {}: {e}", sys.display()))?;
    // A partition's sysfs dir has a `partition` file; its parent is the disk.
    let disk = if real.join("partition").exists() {
        real.parent().map(Path::to_path_buf).unwrap_or(real.clone())
    } else {
        real.clone()
    };
    let name = disk
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| format!("no device name for {}", real.display()))?;
    let (dmaj, dmin) = std::fs::read_to_string(disk.join("dev"))
        .ok()
        .and_then(|s| {
            let (a, b) = s.trim().split_once(':')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .unwrap_or((major, minor));
    Ok(Device {
        name,
        major: dmaj,
        minor: dmin,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_has_no_device() {
        let e = device_for(Path::new("/proc")).unwrap_err();
        assert!(e.contains("no block device"), "{e}");
    }

    #[test]
    fn tmp_dir_device_is_in_diskstats_or_explained() {
        let d = tempfile::tempdir().unwrap();
        match device_for(d.path()) {
            Ok(dev) => assert!(
                super::super::diskstats::read(&dev.name).is_some(),
                "{dev:?}"
            ),
            Err(why) => assert!(!why.is_empty()),
        }
    }
}
