//! A server's user and files: the system user it runs as, its directory
//! made its user's only, and whether that user can reach the data
//! directory at all.

use std::path::Path;

use anyhow::{Context, Result, bail};

/// The uid and gid of a system user (a server that refuses root runs as it).
pub fn user_ids(name: &str) -> Result<(u32, u32)> {
    let c = std::ffi::CString::new(name).context("user name")?;
    // SAFETY: getpwnam returns a pointer to static storage or null; read at once.
    let pw = unsafe { libc::getpwnam(c.as_ptr()) };
    if pw.is_null() {
        bail!("no '{name}' user");
    }
    // SAFETY: non-null, valid until the next getpw* call.
    Ok(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

/// Gives `p` and everything below it to `uid`:`gid`, never following a
/// symbolic link: a link is changed itself, and the walk goes from each
/// directory's descriptor (opened `O_NOFOLLOW`) to its entries
/// (`fchownat` without following, `openat` with `O_NOFOLLOW`), so an
/// entry swapped for a link while the walk runs cannot hand another file
/// on the machine to the server's user.
pub fn chown_tree(p: &Path, uid: u32, gid: u32) -> Result<()> {
    use std::os::fd::{FromRawFd, OwnedFd};
    std::os::unix::fs::lchown(p, Some(uid), Some(gid))
        .with_context(|| format!("cannot chown {}", p.display()))?;
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).context("path")?;
    // SAFETY: a plain open of a NUL-terminated path; the fd is owned below.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        // Not a directory (or a link): its own owner was all there was.
        return Ok(());
    }
    // SAFETY: a new fd that nothing else owns.
    let dir = unsafe { OwnedFd::from_raw_fd(fd) };
    chown_below(&dir, uid, gid).with_context(|| format!("cannot chown below {}", p.display()))?;
    Ok(())
}

/// Every entry below the directory `dir` (see [`chown_tree`]).
fn chown_below(dir: &std::os::fd::OwnedFd, uid: u32, gid: u32) -> Result<()> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // The directory's own entries, read through its descriptor.
    let listed = std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))?;
    for e in listed {
        let e = e?;
        let name = std::ffi::CString::new(e.file_name().as_encoded_bytes()).context("name")?;
        // A file with another name elsewhere (a hard link someone made
        // in the tree) is not given away with it.
        // SAFETY: name is NUL-terminated; st is a valid out pointer.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe {
            libc::fstatat(
                dir.as_raw_fd(),
                name.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        } == 0
            && st.st_mode & libc::S_IFMT != libc::S_IFDIR
            && st.st_nlink > 1
        {
            anyhow::bail!(
                "{}: a file with {} names (a hard link), refused",
                e.file_name().to_string_lossy(),
                st.st_nlink
            );
        }
        // SAFETY: name is NUL-terminated; dir is an open directory.
        let rc = unsafe {
            libc::fchownat(
                dir.as_raw_fd(),
                name.as_ptr(),
                uid,
                gid,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("chown {}", e.file_name().to_string_lossy()));
        }
        // SAFETY: as above; a link or a file is refused by the flags.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd >= 0 {
            // SAFETY: a new fd that nothing else owns.
            let sub = unsafe { OwnedFd::from_raw_fd(fd) };
            chown_below(&sub, uid, gid)?;
        }
    }
    Ok(())
}

/// Creates the file `path` new with `mode` and `contents`, then gives it
/// to `owner` (uid, gid) through the open descriptor: never through a
/// symbolic link and never over a file that is already there, so a
/// directory another user can write cannot turn root's write into one
/// of a file elsewhere (`pwfile -> /etc/ld.so.preload`).
pub fn create_new(
    path: &Path,
    contents: &[u8],
    mode: u32,
    owner: Option<(u32, u32)>,
) -> Result<()> {
    use std::io::Write as _;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| refused_new(path, e))?;
    if let Some((uid, gid)) = owner {
        // SAFETY: fchown on a descriptor this function owns.
        if unsafe { libc::fchown(f.as_raw_fd(), uid, gid) } != 0 {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("cannot chown {}", path.display()));
        }
    }
    f.write_all(contents)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// The error of making `path` new: one already there (a file, or a link
/// someone planted) is refused by name.
fn refused_new(path: &Path, e: std::io::Error) -> anyhow::Error {
    match e.raw_os_error() {
        Some(libc::EEXIST | libc::ELOOP) => anyhow::anyhow!(
            "{}: already there (a file or a symbolic link ampbench did not make), refused",
            path.display()
        ),
        _ => anyhow::Error::new(e).context(format!("cannot create {}", path.display())),
    }
}

/// Makes the directory `path` new with `mode` and gives it to `owner`
/// through its descriptor (see [`create_new`]): an existing directory
/// or a link in its place is an error.
pub fn create_dir_new(path: &Path, mode: u32, owner: Option<(u32, u32)>) -> Result<()> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .mode(mode)
        .create(path)
        .map_err(|e| refused_new(path, e))?;
    let Some((uid, gid)) = owner else {
        return Ok(());
    };
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).context("path")?;
    // SAFETY: a plain open of a NUL-terminated path; the fd is owned below.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("cannot open {}", path.display()));
    }
    // SAFETY: a new fd that nothing else owns.
    let dir = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: fchown on a descriptor owned here.
    if unsafe { libc::fchown(dir.as_raw_fd(), uid, gid) } != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("cannot chown {}", path.display()));
    }
    Ok(())
}

/// Opens `path` as root opens a file in a directory a server's user may
/// write: never through a symbolic link, never blocking (a FIFO planted
/// in its place would hang the open), and only a regular file with no
/// other name (a hard link to a file elsewhere is refused). `append`
/// opens it to append, creating it if needed; otherwise to read.
pub fn open_guarded(path: &Path, append: bool) -> Result<std::fs::File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let mut o = std::fs::OpenOptions::new();
    if append {
        o.create(true).append(true).mode(0o600);
    } else {
        o.read(true);
    }
    let f = o
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => anyhow::anyhow!("{}: a symbolic link, refused", path.display()),
            // O_WRONLY|O_NONBLOCK on a FIFO without a reader.
            Some(libc::ENXIO) => anyhow::anyhow!("{}: not a regular file, refused", path.display()),
            _ => anyhow::Error::new(e).context(format!("cannot open {}", path.display())),
        })?;
    let m = f
        .metadata()
        .with_context(|| format!("cannot stat {}", path.display()))?;
    if !m.is_file() {
        bail!("{}: not a regular file, refused", path.display());
    }
    if m.nlink() != 1 {
        bail!(
            "{}: a file with {} names (a hard link), refused",
            path.display(),
            m.nlink()
        );
    }
    Ok(f)
}

/// The last `max` bytes of a log, read as [`open_guarded`] opens it
/// (empty when it cannot be): what an error message quotes from a
/// server's log, never a file a link points at.
pub fn read_log(path: &Path, max: u64) -> Vec<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = open_guarded(path, false) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(max)));
    let mut b = Vec::new();
    let _ = f.take(max).read_to_end(&mut b);
    b
}

/// Makes a server's directory its owner's only (0700): its unix socket,
/// configuration and data are out of other users' reach.
pub fn private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("cannot make {} private (0700)", dir.display()))
}

/// Checks that system user `user` can enter `dir` and every directory
/// above it (a server running as that user keeps its data below `dir`).
/// The error names the first directory it cannot enter and what to do.
pub fn check_reachable(user: &str, server: &str, dir: &Path) -> Result<(), crate::UsageError> {
    use std::os::unix::fs::MetadataExt;
    let Ok((uid, gid)) = user_ids(user) else {
        return Ok(()); // no such user: the server's start says so
    };
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    for p in dir.ancestors().collect::<Vec<_>>().into_iter().rev() {
        let Ok(m) = std::fs::metadata(p) else {
            continue;
        };
        let mode = m.mode();
        let x = if m.uid() == uid {
            mode & 0o100
        } else if m.gid() == gid {
            mode & 0o010
        } else {
            mode & 0o001
        };
        if uid != 0 && x == 0 {
            return Err(crate::UsageError(format!(
                "--dir {}: the {server} server runs as '{user}', which cannot enter {} (mode {:o}, owner uid {}): pass a --dir it can reach (e.g. under /tmp) or let others search {} (chmod o+x)",
                dir.display(),
                p.display(),
                mode & 0o7777,
                m.uid(),
                p.display()
            )));
        }
    }
    Ok(())
}
