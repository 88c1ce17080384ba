//! The device model's server: a FUSE filesystem of one file, the loop
//! device's backing file, run as a process of its own (`ampbench
//! device-model`, hidden) outside any memory group of an engine.
//!
//! Each IO the loop device sends is done on a real sparse file on the
//! host (buffered, so its pages live in the host's page cache, charged to
//! this process and not to the engine's limit), then held until the time
//! the [`Model`] gives, then answered. The model's clock is
//! CLOCK_MONOTONIC.
//!
//! Three ways to serve, chosen at start and printed (`ready …`):
//! - `uring`: FUSE over io_uring. One event loop per CPU, pinned, each
//!   with its ring and its queue's entries; a request arrives as a
//!   completion, the host file's read or write goes through the same
//!   ring (a page-cache miss on the host never blocks the loop), due
//!   replies wait in a heap, and one `io_uring_enter` sends the replies
//!   due and waits for the next request or deadline ([`uring`]).
//! - `fuse-dev`: the same loop over a non-blocking `/dev/fuse` with
//!   `ppoll`'s timeout as its timer, the host file read and written in
//!   the loop ([`devloop`]); also the control loop of `uring` (FUSE_INIT,
//!   lookups, and what the kernel sends before the rings are ready).
//! - `threads`: the first server, a thread per IO in flight sleeping
//!   until its IO is due ([`threads`]), kept as the reference its cost is
//!   measured against.
//!
//! The loops sleep until a little before the next deadline, by what a
//! wake-up has been taking on this machine ([`timer`]), and spin the
//! rest; they run in the real-time class when the machine allows it.

use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail};

use super::medium::Shadow;

mod devloop;
mod mount;
mod power;
mod proto;
mod raw;
mod threads;
mod timer;
pub use timer::sleep_cost_us;
mod uring;
use super::model::{Model, Nanos, Op, Params};
// The model's clock: CLOCK_MONOTONIC in ns, as the driver's.
use crate::probe::modelstats::{Mapped, bucket};
use crate::probe::mono_ns as now;

/// The deepest queue the device takes (per CPU queue with `uring`).
pub const QUEUE_DEPTH: usize = 64;
/// The largest IO the kernel sends.
pub const MAX_IO: u32 = 1 << 20;
/// prctl(2)'s PR_SET_IO_FLUSHER (Linux 5.6; not in the libc crate for
/// Linux).
const PR_SET_IO_FLUSHER: libc::c_int = 57;
/// An IO answered later than its due time by more than this is counted
/// late (the counters' `late`, `late_ns`).
pub const LATE_NS: Nanos = 20_000;

/// How the server serves, `AMPBENCH_DEVICE_LOOP` (default `auto`: `uring`
/// where the kernel offers it, else `fuse-dev`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Loop {
    /// `uring` where it can, else `fuse-dev`.
    Auto,
    /// FUSE over io_uring, a loop per CPU.
    Uring,
    /// One loop over a non-blocking `/dev/fuse`.
    FuseDev,
    /// The reference: a thread per IO in flight.
    Threads,
}

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
    /// How to serve.
    #[arg(long, value_enum, default_value = "auto")]
    pub serve: Loop,
}

/// What the loops and the power thread share.
pub struct Shared {
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
    /// The run's directory of parameter files.
    dir: PathBuf,
    /// The parameters' generation being served.
    generation: AtomicU64,
}

/// The errno of an IO error (EIO when it has none).
fn errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

impl Shared {
    /// A sweep's next class, if the run has asked for one: its model,
    /// built before the lock is taken. A file that cannot be read is
    /// counted as an error (and the run reports it).
    fn next_class(&self) -> Option<(u64, Model)> {
        let g = self.counters.get().params_gen.load(Relaxed);
        let had = self.generation.load(Relaxed);
        // One loop takes a switch up; another at the same moment does not.
        if g == had
            || self
                .generation
                .compare_exchange(had, g, Relaxed, Relaxed)
                .is_err()
        {
            return None;
        }
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

    /// Runs one IO that arrived at `t` through the model: when it is due,
    /// and the power epoch it began in. `at_medium` runs under the
    /// model's lock before the IO is submitted (a write's data, when the
    /// medium is kept). Fails (an errno) while the power is off.
    fn serve(
        &self,
        op: Op,
        offset: u64,
        len: u64,
        t: Nanos,
        at_medium: impl FnOnce(&mut Model) -> std::io::Result<()>,
    ) -> Result<(Nanos, u64), i32> {
        // Switching class (once per sweep step) is the one time the IO
        // path allocates: the new model is made outside the lock.
        let next = self.next_class();
        let c = self.counters.get();
        let (d, epoch) = {
            // A poisoned lock means a thread panicked mid-update; the
            // model's figures are still usable for timing.
            let mut m = self.model.lock().unwrap_or_else(|e| e.into_inner());
            if self.off.load(SeqCst) {
                return Err(libc::EIO);
            }
            if let Some((g, mut fresh)) = next {
                // The medium's counts carry on.
                (fresh.medium_reads, fresh.medium_writes) = (m.medium_reads, m.medium_writes);
                fresh.dirty_byte_ns = m.dirty_byte_ns;
                if self.shadow.is_some() {
                    fresh.track_refresh();
                }
                *m = fresh;
                c.params_applied.store(g, Relaxed);
            }
            if let Err(e) = at_medium(&mut m) {
                c.errors.fetch_add(1, Relaxed);
                return Err(errno(&e));
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
            let ms = m.dirty_byte_ns / 1_000_000;
            c.dirty_byte_ms
                .store(u64::try_from(ms).unwrap_or(u64::MAX), Relaxed);
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
        if d.absorbed {
            c.absorbed.fetch_add(1, Relaxed);
        }
        if d.cache_read {
            c.cache_reads.fetch_add(1, Relaxed);
        }
        // The device's latency as the model has it, not less the path's.
        c.latency_ns.fetch_add(d.own, Relaxed);
        c.hist[bucket(d.own)].fetch_add(1, Relaxed);
        Ok((d.at, epoch))
    }

    /// A write that arrived at `t`, done on the host file now: with the
    /// medium kept, its old content, the data and the model's record of
    /// it change together.
    fn write_now(&self, offset: u64, data: &[u8], t: Nanos) -> Result<(Nanos, u64), i32> {
        let len = data.len() as u64;
        if offset.saturating_add(len) > self.size {
            return Err(libc::ENOSPC);
        }
        match &self.shadow {
            Some(sh) => self.serve(Op::Write, offset, len, t, |m| {
                m.settle(t);
                let mut sh = sh.lock().unwrap_or_else(|e| e.into_inner());
                sh.refresh(m, &self.file, self.size);
                sh.before_write(m, &self.file, self.size, offset, len);
                self.counters.get().unkept.store(sh.unkept, Relaxed);
                self.file.write_all_at(data, offset)
            }),
            None => {
                if self.off.load(SeqCst) {
                    return Err(libc::EIO);
                }
                if let Err(e) = self.file.write_all_at(data, offset) {
                    self.counters.get().errors.fetch_add(1, Relaxed);
                    return Err(errno(&e));
                }
                self.serve(Op::Write, offset, len, t, |_| Ok(()))
            }
        }
    }

    /// A read that arrived at `t`, done on the host file now into `buf`
    /// (cut at the file's end): its length and when it is due.
    fn read_now(&self, offset: u64, buf: &mut [u8], t: Nanos) -> Result<(usize, Nanos, u64), i32> {
        let len = (buf.len() as u64).min(self.size.saturating_sub(offset)) as usize;
        if let Err(e) = self.file.read_exact_at(&mut buf[..len], offset) {
            self.counters.get().errors.fetch_add(1, Relaxed);
            return Err(errno(&e));
        }
        let (at, epoch) = self.serve(Op::Read, offset, len as u64, t, |_| Ok(()))?;
        Ok((len, at, epoch))
    }

    /// Discards (punched holes) and zeroed ranges from the loop device:
    /// done on the host file, not timed.
    fn fallocate(&self, offset: u64, length: u64, mode: i32) -> Result<(), i32> {
        use std::os::fd::AsRawFd;
        if self.off.load(SeqCst) {
            return Err(libc::EIO);
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
            Ok(())
        } else {
            Err(errno(&std::io::Error::last_os_error()))
        }
    }

    /// An IO due at `at`, answered now: fails if the power was cut since
    /// it began (`epoch`). One answered later than [`LATE_NS`] after its
    /// time is counted late.
    fn answer(&self, at: Nanos, epoch: u64) -> Result<(), i32> {
        let late = now().saturating_sub(at);
        if late > LATE_NS {
            let c = self.counters.get();
            c.late.fetch_add(1, Relaxed);
            c.late_ns.fetch_add(late, Relaxed);
        }
        if self.off.load(SeqCst) || self.epoch.load(SeqCst) != epoch {
            return Err(libc::EIO);
        }
        Ok(())
    }
}

/// Prints the line the run waits for: `ready`, then how the server
/// serves.
fn say_ready(how: &str) -> Result<()> {
    use std::io::Write as _;
    let mut o = std::io::stdout();
    writeln!(o, "ready {how}")?;
    o.flush()?;
    Ok(())
}

/// The hidden command: mounts and serves until unmounted. Prints `ready`
/// and how it serves on standard output once the file can be opened.
// Long: the hidden command's sequence (backing file, signals ignored, the
// model and its power thread, mount, FUSE_INIT awaited, io_uring or /dev/fuse
// chosen, ready line, serve until unmounted); its steps share the model.
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
        dir: a
            .counters
            .parent()
            .map(|p| p.to_path_buf())
            .unwrap_or_default(),
        generation: AtomicU64::new(0),
    });
    if a.medium {
        let s = shared.clone();
        std::thread::Builder::new()
            .name("power".into())
            .spawn(move || s.power_loop())
            .context("cannot start the power thread")?;
    }
    if a.serve == Loop::Threads {
        threads::run(shared, &a.mount, &a.name)?;
        return Ok(0);
    }
    let shape = proto::Shape {
        name: a.name.as_bytes().to_vec(),
        size,
        // SAFETY: no preconditions.
        uid: unsafe { libc::geteuid() },
        // SAFETY: no preconditions.
        gid: unsafe { libc::getegid() },
        max_io: MAX_IO,
        max_background: (QUEUE_DEPTH * 2) as u16,
        want_uring: a.serve != Loop::FuseDev,
    };
    let fd = mount::mount(&a.mount)?;
    let sched = timer::realtime();
    let control = devloop::Loop::new(shared.clone(), shape.clone(), fd.clone())?;
    let agreed = control.agreed.clone();
    let handle = std::thread::Builder::new()
        .name("fuse-dev".into())
        .spawn(move || control.run())
        .context("cannot start the device model's loop")?;
    // FUSE_INIT was queued at the mount: the loop answers it first.
    let t0 = std::time::Instant::now();
    let init = loop {
        if let Some(a) = *agreed.lock().unwrap_or_else(|e| e.into_inner()) {
            break a;
        }
        if handle.is_finished() || t0.elapsed() > std::time::Duration::from_secs(10) {
            bail!("the kernel sent no FUSE_INIT to the device model");
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    };
    let how = if init.uring {
        match uring::start(&shared, &shape, &fd) {
            Ok((q, l)) => format!(
                "uring: FUSE over io_uring, {q} CPU queues of {QUEUE_DEPTH} entries, {}, {sched}",
                if q == l {
                    if std::env::var("AMPBENCH_DEVICE_PIN").is_ok_and(|v| v == "1") {
                        "a loop per queue pinned to its CPU".to_string()
                    } else {
                        "a loop per queue".to_string()
                    }
                } else {
                    format!("{l} loop(s)")
                }
            ),
            Err(e) if a.serve == Loop::Uring => return Err(e),
            Err(e) => {
                format!("fuse-dev: one loop over /dev/fuse ({sched}); io_uring not used: {e:#}")
            }
        }
    } else {
        let why = if a.serve == Loop::FuseDev {
            "asked for"
        } else if a.serve == Loop::Uring {
            bail!(
                "FUSE over io_uring was asked for and the kernel did not offer it (/sys/module/fuse/parameters/enable_uring)"
            );
        } else {
            "the kernel did not offer FUSE over io_uring"
        };
        format!("fuse-dev: one loop over /dev/fuse ({sched}; {why})")
    };
    say_ready(&how)?;
    match handle.join() {
        Ok(r) => r?,
        Err(_) => bail!("the device model's loop panicked"),
    }
    Ok(0)
}
