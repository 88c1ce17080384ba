//! The device model's server: a FUSE filesystem of one file, the loop
//! device's backing file, run as a process of its own (`ampbench
//! device-model`, hidden) outside any memory group of an engine.
//!
//! Each IO the loop device sends is done on a real sparse file on the
//! host (buffered, so its pages live in the host's page cache, charged to
//! this process and not to the engine's limit), then held until the time
//! the [`Model`] gives, then answered. The model's clock is
//! CLOCK_MONOTONIC; a thread sleeps to an absolute time with a timer
//! slack of 1 ns. Threads serve one IO each, so the device's queue depth
//! is at most [`THREADS`].
//!
//! Nothing on the IO path allocates: each thread's buffer is made when
//! the thread first serves, the model's state when it is made. The
//! process is outside the engine's memory group, so the engine's limit
//! never reclaims from it. It does not lock its memory: the FUSE crate
//! gives each of the 64 threads a 16 MB request buffer, mostly never
//! touched, and locking would pin 1 GB.

use std::ffi::OsStr;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyWrite, Request, WriteFlags,
};

use super::medium::Shadow;

mod power;
use super::model::{Model, Nanos, Op, Params};
// The model's clock: CLOCK_MONOTONIC in ns, as the driver's.
use crate::probe::modelstats::{Mapped, bucket};
use crate::probe::mono_ns as now;

/// Threads serving IOs: the deepest queue the device takes.
pub const THREADS: usize = 64;
/// The largest IO the kernel sends (and each thread's buffer).
pub const MAX_IO: u32 = 1 << 20;
/// The one file's inode.
const FILE_INO: u64 = 2;
/// prctl(2)'s PR_SET_IO_FLUSHER (Linux 5.6; not in the libc crate for
/// Linux).
const PR_SET_IO_FLUSHER: libc::c_int = 57;

/// The hidden command's arguments.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Where to mount (an empty directory).
    #[arg(long)]
    pub mount: PathBuf,
    /// The host file holding the data.
    #[arg(long)]
    pub backing: PathBuf,
    /// The served file's name.
    #[arg(long)]
    pub name: String,
    /// The counters file (made by the run).
    #[arg(long)]
    pub counters: PathBuf,
    /// The model's parameters, JSON.
    #[arg(long)]
    pub params: String,
    /// The seed of the model's draws.
    #[arg(long)]
    pub seed: u64,
    /// Keep the medium's content under a volatile write cache, so the run
    /// can cut the power (`crashcheck --power-cut`).
    #[arg(long)]
    pub medium: bool,
}

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

/// What the IO threads and the power thread share.
struct Shared {
    /// The seed of the model's draws (a class after a switch: derived
    /// from it and the generation).
    seed: u64,
    file: std::fs::File,
    size: u64,
    model: Mutex<Model>,
    /// The medium's kept blocks, when power cuts are played (`--medium`).
    shadow: Option<Mutex<Shadow>>,
    /// The power is off: every IO fails.
    off: AtomicBool,
    /// Power cuts so far: an IO begun before one is not answered as done
    /// after it.
    epoch: AtomicU64,
    counters: Mapped,
}

struct Disk {
    s: Arc<Shared>,
    dir: PathBuf,
    /// The parameters' generation being served.
    generation: AtomicU64,
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

    /// A sweep's next class, if the run has asked for one: its model,
    /// built before the lock is taken. A file that cannot be read is
    /// counted as an error (and the run reports it).
    fn next_class(&self) -> Option<(u64, Model)> {
        let g = self.counters.get().params_gen.load(Relaxed);
        if g == self.generation.load(Relaxed) {
            return None;
        }
        self.generation.store(g, Relaxed);
        let path = self.dir.join(format!("params.{g}.json"));
        match std::fs::read_to_string(&path)
            .ok()
            .and_then(|j| serde_json::from_str::<Params>(&j).ok())
        {
            Some(p) => Some((g, Model::new(p, crate::rng::derive_seed(self.seed, &[g])))),
            None => {
                self.counters.get().errors.fetch_add(1, Relaxed);
                None
            }
        }
    }

    /// Runs one IO through the model: when it is due (and the power
    /// epoch it began in), it is answered. `at_medium` runs under the
    /// model's lock before the IO is submitted (a write's data, when the
    /// medium is kept). Fails while the power is off.
    fn serve(
        &self,
        op: Op,
        offset: u64,
        len: u64,
        t: Nanos,
        at_medium: impl FnOnce(&mut Model) -> std::io::Result<()>,
    ) -> Result<(Nanos, u64), Errno> {
        // Switching class (once per sweep step) is the one time the IO
        // path allocates: the new model is made outside the lock.
        let next = self.next_class();
        let c = self.counters.get();
        let (d, epoch) = {
            // A poisoned lock means a thread panicked mid-update; the
            // model's figures are still usable for timing.
            let mut m = self.model.lock().unwrap_or_else(|e| e.into_inner());
            if self.off.load(SeqCst) {
                return Err(Errno::EIO);
            }
            if let Some((g, mut fresh)) = next {
                // The medium's counts carry on.
                (fresh.medium_reads, fresh.medium_writes) = (m.medium_reads, m.medium_writes);
                if self.shadow.is_some() {
                    fresh.track_refresh();
                }
                *m = fresh;
                c.params_applied.store(g, Relaxed);
            }
            if let Err(e) = at_medium(&mut m) {
                c.errors.fetch_add(1, Relaxed);
                return Err(Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO)));
            }
            let d = m.submit(t, op, offset, len);
            if let Some(sh) = &self.shadow {
                sh.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .refresh(&mut m, &self.file, self.size);
            }
            // Stored under the lock, so they never go backwards.
            c.medium_reads.store(m.medium_reads, Relaxed);
            c.medium_writes.store(m.medium_writes, Relaxed);
            (d, self.epoch.load(SeqCst))
        };
        match op {
            Op::Read => {
                c.reads.fetch_add(1, Relaxed);
                c.read_bytes.fetch_add(len, Relaxed);
            }
            Op::Write => {
                c.writes.fetch_add(1, Relaxed);
                c.write_bytes.fetch_add(len, Relaxed);
            }
            Op::Flush => {
                c.flushes.fetch_add(1, Relaxed);
            }
        }
        if d.waited {
            c.waited.fetch_add(1, Relaxed);
        }
        if d.cached {
            c.cached.fetch_add(1, Relaxed);
        }
        // The device's latency as the model has it, not less the path's.
        c.latency_ns.fetch_add(d.own, Relaxed);
        c.hist[bucket(d.own)].fetch_add(1, Relaxed);
        Ok((d.at, epoch))
    }

    /// Sleeps until an IO is due; an IO the power cut in between fails.
    fn due(&self, served: Result<(Nanos, u64), Errno>) -> Result<(), Errno> {
        let (at, epoch) = served?;
        sleep_until(at);
        if self.off.load(SeqCst) || self.epoch.load(SeqCst) != epoch {
            return Err(Errno::EIO);
        }
        Ok(())
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
        let len = (size as u64).min(self.size.saturating_sub(offset)) as usize;
        BUF.with(|b| {
            let mut b = b.borrow_mut();
            if b.len() < MAX_IO as usize {
                b.resize(MAX_IO as usize, 0);
            }
            let buf = &mut b[..len.min(MAX_IO as usize)];
            if let Err(e) = self.file.read_exact_at(buf, offset) {
                self.counters.get().errors.fetch_add(1, Relaxed);
                reply.error(Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO)));
                return;
            }
            match self.due(self.serve(Op::Read, offset, buf.len() as u64, t, |_| Ok(()))) {
                Ok(()) => reply.data(buf),
                Err(e) => reply.error(e),
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
        if offset.saturating_add(data.len() as u64) > self.size {
            reply.error(Errno::ENOSPC);
            return;
        }
        let len = data.len() as u64;
        let served = match &self.shadow {
            // The medium kept: the old content, the data and the model's
            // record of it change together.
            Some(sh) => self.serve(Op::Write, offset, len, t, |m| {
                m.settle(t);
                let mut sh = sh.lock().unwrap_or_else(|e| e.into_inner());
                sh.refresh(m, &self.file, self.size);
                sh.before_write(m, &self.file, self.size, offset, len);
                let unkept = sh.unkept;
                self.counters.get().unkept.store(unkept, Relaxed);
                self.file.write_all_at(data, offset)
            }),
            None => {
                if self.off.load(SeqCst) {
                    reply.error(Errno::EIO);
                    return;
                }
                if let Err(e) = self.file.write_all_at(data, offset) {
                    self.counters.get().errors.fetch_add(1, Relaxed);
                    reply.error(Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO)));
                    return;
                }
                self.serve(Op::Write, offset, len, t, |_| Ok(()))
            }
        };
        match self.due(served) {
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
        match self.due(self.serve(Op::Flush, 0, 0, t, |_| Ok(()))) {
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
        // Discards (punched holes) and zeroed ranges from the loop device:
        // done on the host file, not timed.
        use std::os::fd::AsRawFd;
        if self.off.load(SeqCst) {
            reply.error(Errno::EIO);
            return;
        }
        // SAFETY: fallocate on an open descriptor with the kernel's own
        // mode bits; the result is checked.
        let r = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                mode | libc::FALLOC_FL_KEEP_SIZE,
                offset as libc::off_t,
                length as libc::off_t,
            )
        };
        if r == 0 {
            reply.ok();
        } else {
            let e = std::io::Error::last_os_error();
            reply.error(Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO)));
        }
    }
}

/// The hidden command: mounts and serves until unmounted. Prints `ready`
/// on standard output once the file can be opened.
pub fn main(a: ServeArgs) -> Result<i32> {
    let params: Params = serde_json::from_str(&a.params).context("--params")?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&a.backing)
        .with_context(|| format!("cannot open {}", a.backing.display()))?;
    let size = file.metadata()?.len();
    let counters = Mapped::open(&a.counters)?;
    // SAFETY: plain calls with constant arguments. The run stops the model
    // by unmounting (or SIGKILL); a terminal's or a service manager's
    // SIGINT or SIGTERM to the process group must not take the device
    // from under a mounted filesystem. PR_SET_IO_FLUSHER: the kernel's
    // reclaim on this process's allocations must not wait on IO (which
    // may be waiting on this process), as the prctl man page asks of a
    // FUSE server behind a loop device.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
        libc::prctl(PR_SET_IO_FLUSHER, 1 as libc::c_ulong, 0, 0, 0);
    }
    // The medium is kept only under a volatile cache: nothing else loses
    // writes at a power cut.
    let shadow = match params.cache {
        Some(c) if a.medium && !c.battery => Some(Mutex::new(Shadow::new(c.bytes))),
        _ => None,
    };
    let mut model = Model::new(params, a.seed);
    if shadow.is_some() {
        model.track_refresh();
    }
    let shared = Arc::new(Shared {
        seed: a.seed,
        file,
        size,
        model: Mutex::new(model),
        shadow,
        off: AtomicBool::new(false),
        epoch: AtomicU64::new(0),
        counters,
    });
    if a.medium {
        let s = shared.clone();
        std::thread::Builder::new()
            .name("power".into())
            .spawn(move || s.power_loop())
            .context("cannot start the power thread")?;
    }
    let disk = Disk {
        s: shared,
        dir: a
            .counters
            .parent()
            .map(|p| p.to_path_buf())
            .unwrap_or_default(),
        generation: AtomicU64::new(0),
        name: a.name.clone(),
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
    let session = fuser::Session::new(disk, &a.mount, &cfg)
        .with_context(|| format!("cannot mount the device model at {}", a.mount.display()))?;
    println!("ready");
    use std::io::Write as _;
    std::io::stdout().flush()?;
    session.run().context("the device model's session")?;
    Ok(0)
}
