//! Mounts and leftovers: unmounting with retries, finding mount points
//! in /proc/self/mountinfo, and removing the devices a killed run left
//! (see [`super::storage`]).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::throttle::unthrottle;

/// Runs a command; its trimmed output, or an error with its stderr.
pub(super) fn run(cmd: &mut Command) -> Result<String> {
    let what = format!("{cmd:?}").replace('"', "");
    let o = cmd.output().with_context(|| format!("cannot run {what}"))?;
    if !o.status.success() {
        bail!(
            "{what} failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// Unmounts, retrying while busy for up to 10 s, then lazily.
pub(super) fn unmount(dir: &Path) -> Result<()> {
    unmount_or(dir, true)
}

/// Unmounts, retrying while busy for up to 10 s, then lazily if `lazy`
/// (else the error: a filesystem about to be mounted again from the same
/// image must really be gone, or two would write it).
pub(super) fn unmount_or(dir: &Path, lazy: bool) -> Result<()> {
    if !mounted(dir) {
        return Ok(());
    }
    let t0 = Instant::now();
    loop {
        match run(Command::new("umount").arg(dir)) {
            Ok(_) => return Ok(()),
            Err(_) if t0.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(100))
            }
            Err(e) if lazy => {
                run(Command::new("umount").arg("-l").arg(dir))
                    .with_context(|| format!("{e:#}; lazy unmount failed too"))?;
                return Ok(());
            }
            Err(e) => return Err(e),
        }
    }
}

/// True when `dir` is a mount point (by /proc/self/mountinfo).
pub(super) fn mounted(dir: &Path) -> bool {
    let Ok(canon) = dir.canonicalize() else {
        return false;
    };
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    info.lines()
        .any(|l| l.split(' ').nth(4).is_some_and(|m| unescape(m) == canon))
}

/// A path as /proc/self/mountinfo writes it, with its escapes undone:
/// the kernel writes a space, tab, newline and backslash in a path as
/// `\040`, `\011`, `\012` and `\134`.
pub(super) fn unescape(field: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b.get(i + 1..i + 4).filter(|d| {
            b[i] == b'\\' && d[0] <= b'3' && d.iter().all(|c| (b'0'..=b'7').contains(c))
        });
        match octal {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

/// The devices a killed ampbench left: every loop device whose backing
/// file is `…/ampbench-PID-dev.img` with PID no longer running is
/// unthrottled, unmounted, detached and its image deleted. One line each.
pub fn clean_leftovers(alive: impl Fn(u32) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/sys/block") else {
        return out;
    };
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(back) = std::fs::read_to_string(e.path().join("loop/backing_file")) else {
            continue;
        };
        let back = back.trim().trim_end_matches(" (deleted)").to_string();
        let image = PathBuf::from(&back);
        let Some(pid) = image
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix("-dev.img"))
            .and_then(|n| super::cgroup::leftover_pid(&format!("{n}-")))
        else {
            continue;
        };
        if alive(pid) {
            continue;
        }
        let mm = std::fs::read_to_string(e.path().join("dev")).unwrap_or_default();
        unthrottle(mm.trim());
        let dev = format!("/dev/{name}");
        let mounts: Vec<PathBuf> = info
            .lines()
            .filter(|l| l.split(" - ").nth(1).and_then(|r| r.split(' ').nth(1)) == Some(&dev))
            .filter_map(|l| l.split(' ').nth(4).map(unescape))
            .collect();
        let mut errs = Vec::new();
        for m in &mounts {
            if let Err(err) = unmount(m) {
                errs.push(format!("{err:#}"));
            }
            let _ = std::fs::remove_dir(m);
        }
        if let Err(err) = run(Command::new("losetup").arg("-d").arg(&dev)) {
            errs.push(format!("{err:#}"));
        } else if let Some(err) = wait_detached(Path::new(&dev), Duration::from_secs(5)) {
            errs.push(err);
        }
        let _ = std::fs::remove_file(&image);
        out.push(if errs.is_empty() {
            format!("removed {dev} ({back}) left by ampbench {pid}")
        } else {
            format!("{dev} ({back}): {}", errs.join("; "))
        });
    }
    out
}

/// Waits (up to `within`) until a loop device `losetup -d` was given is
/// free: the kernel detaches a device someone still has open (udev
/// probing it, another program reading it) only when they close it, so a
/// run that ended at once could leave it attached for a moment. Some(why)
/// when it is still attached.
pub(crate) fn wait_detached(loopdev: &Path, within: Duration) -> Option<String> {
    let name = loopdev.file_name()?.to_string_lossy().into_owned();
    let backing = Path::new("/sys/block")
        .join(&name)
        .join("loop/backing_file");
    let t0 = Instant::now();
    while backing.exists() {
        if t0.elapsed() > within {
            return Some(format!(
                "{} is still attached {} s after it was detached (something holds it open; the kernel frees it when that closes it)",
                loopdev.display(),
                within.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_paths_are_unescaped() {
        assert_eq!(
            unescape(r"/tmp/a\040b/ampbench-1-dev"),
            PathBuf::from("/tmp/a b/ampbench-1-dev")
        );
        assert_eq!(unescape(r"/x\011y\134z\012"), PathBuf::from("/x\ty\\z\n"));
        assert_eq!(unescape(r"/plain\9"), PathBuf::from(r"/plain\9"));
    }
}
