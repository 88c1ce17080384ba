//! The reference server: the `fuser` crate's session with a thread per
//! IO in flight ([`THREADS`]), each sleeping until its IO is due. The
//! first device model's server, kept so `bench/device-model.sh` can
//! measure the event loops beside it in one script
//! (`AMPBENCH_DEVICE_LOOP=threads`); the loops in `devloop` and `uring`
//! serve by default. Each IO wakes a thread and puts it to sleep until
//! its due time: two context switches, 45% of its CPU in perf.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;

use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyWrite, Request, WriteFlags,
};

use super::{MAX_IO, Nanos, Op, Shared, now};

/// Threads serving IOs: the deepest queue the device takes.
pub const THREADS: usize = 64;
/// The one file's inode.
const FILE_INO: u64 = 2;

/// Sleeps until `at` on the model's clock.
fn sleep_until(at: Nanos) {
    let ts = libc::timespec {
        tv_sec: (at / 1_000_000_000) as libc::time_t,
        tv_nsec: (at % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: an absolute sleep on a valid timespec; EINTR retries.
    while unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    } == libc::EINTR
    {}
}

thread_local! {
    /// This thread's IO buffer (made on its first IO).
    static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Sets this thread's timer slack to 1 ns, once.
fn tight_timers() {
    thread_local!(static DONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
    DONE.with(|d| {
        if !d.get() {
            // SAFETY: PR_SET_TIMERSLACK takes a value; it cannot fail for 1.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
            d.set(true);
        }
    });
}

struct Disk {
    s: Arc<Shared>,
    name: String,
    uid: u32,
    gid: u32,
}

impl std::ops::Deref for Disk {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.s
    }
}

impl Disk {
    fn attr(&self, ino: u64) -> FileAttr {
        let dir = ino != FILE_INO;
        FileAttr {
            ino: INodeNo(ino),
            size: if dir { 0 } else { self.size },
            blocks: if dir { 0 } else { self.size / 512 },
            atime: SystemTime::UNIX_EPOCH,
            mtime: SystemTime::UNIX_EPOCH,
            ctime: SystemTime::UNIX_EPOCH,
            crtime: SystemTime::UNIX_EPOCH,
            kind: if dir {
                FileType::Directory
            } else {
                FileType::RegularFile
            },
            perm: if dir { 0o700 } else { 0o600 },
            nlink: if dir { 2 } else { 1 },
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    /// Sleeps until an IO is due; an IO the power cut in between fails.
    fn due(&self, served: Result<(Nanos, u64), i32>) -> Result<(), Errno> {
        let (at, epoch) = served.map_err(Errno::from_i32)?;
        sleep_until(at);
        self.s.answer(at, epoch).map_err(Errno::from_i32)
    }
}

impl Filesystem for Disk {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Direct IO answered asynchronously, so the loop device keeps
        // many IOs in flight; large IOs.
        let _ = config.add_capabilities(InitFlags::FUSE_ASYNC_DIO | InitFlags::FUSE_ASYNC_READ);
        let _ = config.add_capabilities(InitFlags::FUSE_MAX_PAGES);
        let _ = config.set_max_write(MAX_IO);
        let _ = config.set_max_background(THREADS as u16 * 2);
        let _ = config.set_congestion_threshold(THREADS as u16 * 2);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if parent.0 == 1 && name == OsStr::new(&self.name) {
            reply.entry(
                &Duration::from_secs(3600),
                &self.attr(FILE_INO),
                fuser::Generation(0),
            );
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        reply.attr(&Duration::from_secs(3600), &self.attr(ino.0));
    }

    #[allow(clippy::too_many_arguments)]
    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        _size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        // The device's size is fixed; nothing else is kept.
        reply.attr(&Duration::from_secs(3600), &self.attr(ino.0));
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if ino.0 != 1 {
            reply.error(Errno::ENOTDIR);
            return;
        }
        let entries = [
            (1, FileType::Directory, "."),
            (1, FileType::Directory, ".."),
            (FILE_INO, FileType::RegularFile, self.name.as_str()),
        ];
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*ino), i as u64 + 1, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if ino.0 != FILE_INO {
            reply.error(Errno::EISDIR);
            return;
        }
        // No page cache of the kernel's for the served file (the host
        // file below has it), and writes in parallel.
        reply.opened(
            FileHandle(0),
            FopenFlags::FOPEN_DIRECT_IO | FopenFlags::FOPEN_PARALLEL_DIRECT_WRITES,
        );
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let t = now();
        tight_timers();
        BUF.with(|b| {
            let mut b = b.borrow_mut();
            if b.len() < MAX_IO as usize {
                b.resize(MAX_IO as usize, 0);
            }
            let want = (size as usize).min(MAX_IO as usize);
            match self.s.read_now(offset, &mut b[..want], t) {
                Ok((len, at, epoch)) => match self.due(Ok((at, epoch))) {
                    Ok(()) => reply.data(&b[..len]),
                    Err(e) => reply.error(e),
                },
                Err(e) => reply.error(Errno::from_i32(e)),
            }
        });
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let t = now();
        tight_timers();
        match self.due(self.s.write_now(offset, data, t)) {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // A close, not a cache flush.
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let t = now();
        tight_timers();
        match self.due(self.s.serve(Op::Flush, 0, 0, t, |_| Ok(()))) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        // Discards (punched holes) and zeroed ranges: not timed.
        match self.s.fallocate(offset, length, mode) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(Errno::from_i32(e)),
        }
    }
}

/// Serves `s` at `mount` until unmounted, a thread per IO.
pub fn run(s: Arc<Shared>, mount: &Path, name: &str) -> Result<()> {
    let disk = Disk {
        s,
        name: name.to_string(),
        // SAFETY: no preconditions.
        uid: unsafe { libc::geteuid() },
        // SAFETY: no preconditions.
        gid: unsafe { libc::getegid() },
    };
    let mut cfg = fuser::Config::default();
    cfg.mount_options = vec![
        fuser::MountOption::FSName("ampbench-device-model".into()),
        fuser::MountOption::NoSuid,
        fuser::MountOption::NoDev,
        fuser::MountOption::NoExec,
    ];
    cfg.n_threads = Some(THREADS);
    cfg.clone_fd = true;
    let session = fuser::Session::new(disk, mount, &cfg)
        .with_context(|| format!("cannot mount the device model at {}", mount.display()))?;
    super::say_ready(&format!(
        "threads: {THREADS} threads, a thread per IO in flight"
    ))?;
    session.run().context("the device model's session")?;
    Ok(())
}
