//! The fixtures' data directories made once and copied: a MariaDB
//! install-db (1.2 s, 0.8 CPU-s) and a PostgreSQL initdb (1.0 s, 1.1
//! CPU-s) gave the same directory each of the 31 times the suite's
//! fixtures made one (process accounting, 2026-11-29); a copy takes 0.2 s.
//! The template sits in the target's temporary directory, keyed by the
//! server binary's size and time, so the test processes running at once
//! share it; one makes it under a lock while the others wait.

use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::fixture::{server_dir, sh};

/// The version of the fixtures' recipes for their templates (install-db's
/// and initdb's arguments, the password): one more when they change.
const RECIPE: u32 = 1;

/// `to` (which must not exist) as a copy of the template `name` of
/// `binary`, with owners and modes. The first time, `make` is given an
/// empty directory in /tmp owned by `owner` (the server's user may not
/// pass through the target's directories) and makes the template in
/// its `data`.
pub fn copy(
    name: &str,
    binary: &Path,
    owner: &str,
    to: &Path,
    make: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<(), String> {
    let at = made(name, binary, owner, make)?;
    cp(&at, to)
}

/// `from` copied to `to` by root, with owners, modes and holes.
fn cp(from: &Path, to: &Path) -> Result<(), String> {
    sh(Command::new("cp")
        .args([
            "-a",
            "--sparse=always",
            "--no-dereference",
            "--no-target-directory",
        ])
        .arg(from)
        .arg(to))
    .map(drop)
}

/// The template's directory, made unless there already.
fn made(
    name: &str,
    binary: &Path,
    owner: &str,
    make: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<PathBuf, String> {
    let m = std::fs::metadata(binary).map_err(|e| format!("{}: {e}", binary.display()))?;
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fixture-templates");
    std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    // Keyed by the binary, the server user's ids (a copy keeps numeric
    // owners) and RECIPE: a change to how `make` makes it bumps that.
    let (uid, gid) = super::fixture::ids(owner)?;
    let at = root.join(format!(
        "{name}-{RECIPE}-{}-{}-{uid}.{gid}",
        m.len(),
        m.mtime()
    ));
    let lock_path = root.join(format!("{name}.lock"));
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("{}: {e}", lock_path.display()))?;
    // SAFETY: flock on a descriptor this File owns until it is dropped
    // at the end of this function, which releases the lock.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(format!("flock {}", lock_path.display()));
    }
    if at.is_dir() {
        return Ok(at);
    }
    // What a process killed while copying left (the lock is ours).
    for e in std::fs::read_dir(&root)
        .map_err(|e| e.to_string())?
        .flatten()
    {
        if e.file_name()
            .to_string_lossy()
            .starts_with(&format!("{name}.new-"))
        {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    let (work, _, _) = server_dir(&format!("ampt-{name}-template"), owner)?;
    make(work.path())?;
    // Copied beside it and renamed: a process killed meanwhile leaves no
    // half template under the name.
    let new = root.join(format!("{name}.new-{}", std::process::id()));
    cp(&work.path().join("data"), &new)?;
    std::fs::rename(&new, &at).map_err(|e| format!("{}: {e}", at.display()))?;
    Ok(at)
}
