//! What a device really does: a short fio-like probe of our own run on the
//! dedicated device before the engines, with the device's own counters
//! read around each phase, so a user sees what the class gave, not only
//! its setting:
//! - 4 KiB random direct reads at queue depth 1, 4, 16 and 32 (one thread
//!   per outstanding read);
//! - 4 KiB random direct writes at QD1, and each followed by `fdatasync`;
//! - a 50/50 mix at QD16 (8 readers, 8 writers), which shows whether reads
//!   and writes share one budget;
//! - sequential 1 MiB direct reads, MB/s.
//!
//! Reads go to the first half of the probe's file, writes to the second,
//! so a write cache does not answer the reads.

use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::probe::diskstats;
use crate::probe::modelstats::Mapped;

/// The file the probe reads and writes.
const FILE_BYTES: u64 = 128 << 20;
/// Where the writes go: the file's second half.
const WRITE_BASE: u64 = FILE_BYTES / 2;
/// One IO.
const BLOCK: usize = 4096;

/// One phase's figures.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Phase {
    /// Operations completed per second by the probe.
    pub ops_per_sec: f64,
    /// Reads the device counted per second.
    pub dev_reads_per_sec: f64,
    /// Writes the device counted per second.
    pub dev_writes_per_sec: f64,
    /// Mean latency per operation, µs.
    pub mean_us: f64,
    /// Reads and writes at the medium per second, a write cache's
    /// destages included, when a device model serves the device (else NaN):
    /// what the class's shared budget holds.
    pub medium_per_sec: f64,
}

/// The probe's result, stored with the run.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Measured {
    /// 4 KiB random direct reads, one at a time.
    pub read_qd1: Phase,
    /// 32 at a time.
    pub read_qd32: Phase,
    /// 4 KiB direct overwrites, each followed by fdatasync.
    pub write_sync: Phase,
    /// The phases of a class's full probe (None: the short probe of a
    /// device without a class).
    pub full: Option<Full>,
}

/// The phases only a class's probe runs.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Full {
    /// 4 KiB random direct reads, 4 at a time.
    pub read_qd4: Phase,
    /// 16 at a time.
    pub read_qd16: Phase,
    /// 4 KiB random direct overwrites, one at a time.
    pub write_qd1: Phase,
    /// 8 threads reading and 8 writing, 4 KiB random: the reads.
    pub mix_reads: Phase,
    /// The mix's writes.
    pub mix_writes: Phase,
    /// Sequential 1 MiB direct reads, MB/s (10⁶ bytes).
    pub seq_read_mbps: f64,
}

/// A 4 KiB buffer aligned for O_DIRECT.
struct Aligned {
    buf: Vec<u8>,
    off: usize,
}

impl Aligned {
    fn new(len: usize, fill: u8) -> Aligned {
        let buf = vec![fill; len + BLOCK];
        let off = buf.as_ptr().align_offset(BLOCK);
        Aligned { buf, off }
    }
    fn slice(&mut self, len: usize) -> &mut [u8] {
        &mut self.buf[self.off..self.off + len]
    }
}

fn open_direct(path: &Path, write: bool) -> Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(write)
        .create(write)
        .truncate(false)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .with_context(|| format!("cannot open {} with O_DIRECT", path.display()))
}

/// Runs the phases for `secs` each in `dir` (on the device `dev`, a
/// /proc/diskstats name), every phase when `full`; removes its file.
pub fn measure(
    dir: &Path,
    dev: &str,
    secs: f64,
    full: bool,
    model: Option<&Mapped>,
) -> Result<Measured> {
    let path = dir.join(".ampbench-ioprobe");
    let r = (|| {
        let f = open_direct(&path, true)?;
        // Written for real: reads of unwritten extents would not reach
        // the device.
        let mut chunk = Aligned::new(1 << 20, 0x5a);
        let mut off = 0;
        while off < FILE_BYTES {
            f.write_all_at(chunk.slice(1 << 20), off)
                .with_context(|| format!("writing {}", path.display()))?;
            off += 1 << 20;
        }
        f.sync_all()?;
        let d = Duration::from_secs_f64(secs);
        let reads = |depth| phase(dev, d, depth, &[read_one], &path, model);
        // Reads first: writes leave work in a write cache that later
        // phases share the device with (as the mix should).
        let read_qd1 = reads(1)?;
        let (read_qd4, read_qd16) = if full {
            (reads(4)?, reads(16)?)
        } else {
            Default::default()
        };
        let read_qd32 = reads(32)?;
        let seq = if full {
            phase(dev, d, 1, &[read_seq], &path, model)?.ops_per_sec * SEQ as f64 / 1e6
        } else {
            0.0
        };
        let write_sync = phase(dev, d, 1, &[write_sync], &path, model)?;
        let full = if full {
            let write_qd1 = phase(dev, d, 1, &[write_one], &path, model)?;
            let (mix_reads, mix_writes) = phase_split(dev, d, 16, &path, model)?;
            Some(Full {
                read_qd4,
                read_qd16,
                write_qd1,
                mix_reads,
                mix_writes,
                seq_read_mbps: seq,
            })
        } else {
            None
        };
        Ok(Measured {
            read_qd1,
            read_qd32,
            write_sync,
            full,
        })
    })();
    let _ = std::fs::remove_file(&path);
    r
}

/// The median latency of 4 KiB random direct reads at QD1 over `secs` in a
/// 16 MB file of its own in `dir` (removed): what the path to the device
/// costs when the device adds nothing.
pub fn path_latency_us(dir: &Path, secs: f64) -> Result<f64> {
    let path = dir.join(".ampbench-pathprobe");
    let r = (|| {
        let f = open_direct(&path, true)?;
        let mut chunk = Aligned::new(1 << 20, 0x5a);
        for i in 0..16u64 {
            f.write_all_at(chunk.slice(1 << 20), i << 20)
                .with_context(|| format!("writing {}", path.display()))?;
        }
        f.sync_all()?;
        let mut buf = Aligned::new(BLOCK, 0);
        let mut r = 0x2545_f491_4f6c_dd1d_u64;
        // Warm the path (threads, caches) before timing it.
        for _ in 0..200 {
            f.read_exact_at(buf.slice(BLOCK), next_block(&mut r, 0) % (16 << 20))?;
        }
        // The median IO: the path's own time. A mean would add what other
        // work on the machine delays the probe's thread by, which the
        // engine meets too and a device does not give back.
        let t0 = Instant::now();
        let mut took: Vec<f64> = Vec::with_capacity(1 << 16);
        while t0.elapsed().as_secs_f64() < secs {
            let t = Instant::now();
            f.read_exact_at(buf.slice(BLOCK), next_block(&mut r, 0) % (16 << 20))?;
            took.push(t.elapsed().as_secs_f64() * 1e6);
        }
        took.sort_by(f64::total_cmp);
        Ok(took.get(took.len() / 2).copied().unwrap_or(0.0))
    })();
    let _ = std::fs::remove_file(&path);
    r
}

/// One IO of the probe: a file, its thread's random state, a buffer.
type IoFn = fn(&File, &mut u64, &mut Aligned) -> std::io::Result<()>;

/// A sequential read's size.
const SEQ: usize = 1 << 20;

fn read_one(f: &File, r: &mut u64, buf: &mut Aligned) -> std::io::Result<()> {
    f.read_exact_at(buf.slice(BLOCK), next_block(r, 0))
}

fn write_one(f: &File, r: &mut u64, buf: &mut Aligned) -> std::io::Result<()> {
    f.write_all_at(buf.slice(BLOCK), next_block(r, WRITE_BASE))
}

fn write_sync(f: &File, r: &mut u64, buf: &mut Aligned) -> std::io::Result<()> {
    f.write_all_at(buf.slice(BLOCK), next_block(r, WRITE_BASE))?;
    f.sync_data()
}

/// The next 1 MiB of the read half, from where this thread's state says.
fn read_seq(f: &File, r: &mut u64, buf: &mut Aligned) -> std::io::Result<()> {
    let off = (*r % (WRITE_BASE / SEQ as u64)) * SEQ as u64;
    *r = r.wrapping_add(1);
    f.read_exact_at(buf.slice(SEQ), off)
}

/// A block offset in the half at `base`, from a xorshift stream.
fn next_block(r: &mut u64, base: u64) -> u64 {
    *r ^= *r << 13;
    *r ^= *r >> 7;
    *r ^= *r << 17;
    base + (*r % (WRITE_BASE / BLOCK as u64)) * BLOCK as u64
}

/// Half the threads reading, half writing: the reads' and the writes'
/// figures (the device counters are the phase's, in both).
fn phase_split(
    dev: &str,
    d: Duration,
    depth: usize,
    path: &Path,
    model: Option<&Mapped>,
) -> Result<(Phase, Phase)> {
    let ops: Vec<IoFn> = (0..depth)
        .map(|i| {
            if i % 2 == 0 {
                read_one as IoFn
            } else {
                write_one
            }
        })
        .collect();
    let (all, per) = phase_counts(dev, d, &ops, path, model)?;
    let half = |k: usize| {
        let n: u64 = per.iter().skip(k).step_by(2).sum();
        Phase {
            ops_per_sec: n as f64 / all.1,
            mean_us: if n > 0 {
                all.1 * 1e6 * (depth / 2) as f64 / n as f64
            } else {
                f64::NAN
            },
            ..all.0
        }
    };
    Ok((half(0), half(1)))
}

/// `depth` threads each doing `ops[i % ops.len()]` in a loop for `d`.
fn phase(
    dev: &str,
    d: Duration,
    depth: usize,
    ops: &[IoFn],
    path: &Path,
    model: Option<&Mapped>,
) -> Result<Phase> {
    let ops: Vec<IoFn> = (0..depth).map(|i| ops[i % ops.len()]).collect();
    let ((p, _), _) = phase_counts(dev, d, &ops, path, model)?;
    Ok(p)
}

/// One thread per op for `d`: the phase's figures with its length in
/// seconds, and each thread's count.
// Long: one probe phase: threads started on the same clock, their counts and
// the device's gathered at one instant.
fn phase_counts(
    dev: &str,
    d: Duration,
    ops: &[IoFn],
    path: &Path,
    model: Option<&Mapped>,
) -> Result<((Phase, f64), Vec<u64>)> {
    let medium = || {
        model
            .map(|m| m.snapshot())
            .map(|s| s.medium_reads + s.medium_writes)
    };
    let depth = ops.len();
    let files: Vec<File> = (0..depth)
        .map(|_| open_direct(path, true))
        .collect::<Result<_>>()?;
    // A throttle starts with a slice of credit: the first quarter second
    // is not counted.
    let warm = Duration::from_millis(250);
    let t0 = Instant::now();
    let counted = std::sync::atomic::AtomicBool::new(false);
    let counts = std::thread::scope(|s| {
        let (counted, t_end) = (&counted, d + warm);
        let hs: Vec<_> = files
            .iter()
            .zip(ops)
            .enumerate()
            .map(|(i, (f, op))| {
                s.spawn(move || -> std::io::Result<u64> {
                    let mut r = 0x9e37_79b9_7f4a_7c15_u64 ^ (i as u64 + 1);
                    let mut buf = Aligned::new(SEQ, 0xa5);
                    let mut n = 0;
                    // A Ctrl-C or SIGTERM ends the phase: the run's
                    // orderly end follows the probe.
                    while t0.elapsed() < t_end
                        && !crate::signals::INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed)
                    {
                        op(f, &mut r, &mut buf)?;
                        if counted.load(std::sync::atomic::Ordering::Relaxed) {
                            n += 1;
                        }
                    }
                    Ok(n)
                })
            })
            .collect();
        std::thread::sleep(warm);
        let before = (diskstats::read(dev), medium(), Instant::now());
        counted.store(true, std::sync::atomic::Ordering::Relaxed);
        let r = hs
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("probe thread panicked")))
            })
            .collect::<std::io::Result<Vec<u64>>>();
        r.map(|c| (c, before))
    })
    .with_context(|| format!("probing {}", path.display()))?;
    let (counts, (before, medium0, t1)) = counts;
    let secs = t1.elapsed().as_secs_f64();
    let after = diskstats::read(dev);
    let medium_per_sec = match (medium0, medium()) {
        (Some(a), Some(b)) => b.saturating_sub(a) as f64 / secs,
        _ => f64::NAN,
    };
    let ops: u64 = counts.iter().sum();
    let per = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) => b.saturating_sub(a) as f64 / secs,
        _ => f64::NAN,
    };
    let p = Phase {
        ops_per_sec: ops as f64 / secs,
        dev_reads_per_sec: per(before.map(|s| s.reads), after.map(|s| s.reads)),
        dev_writes_per_sec: per(before.map(|s| s.writes), after.map(|s| s.writes)),
        mean_us: if ops > 0 {
            secs * 1e6 * depth as f64 / ops as f64
        } else {
            f64::NAN
        },
        medium_per_sec,
    };
    Ok(((p, secs), counts))
}

impl Measured {
    /// One line: reads by depth, writes, the mix, synced writes,
    /// sequential reads.
    pub fn show(&self) -> String {
        let sync = format!(
            "write+fdatasync {:.0}/s ({:.0} device writes/s)",
            self.write_sync.ops_per_sec, self.write_sync.dev_writes_per_sec
        );
        match &self.full {
            None => format!(
                "4 KiB random reads {:.0}/s at QD1, {:.0}/s at QD32; 4 KiB {sync}",
                self.read_qd1.ops_per_sec, self.read_qd32.ops_per_sec
            ),
            Some(f) => format!(
                "4 KiB random reads/s {:.0} at QD1, {:.0} at QD4, {:.0} at QD16, {:.0} at QD32; writes {:.0}/s; 50/50 mix at QD16 {:.0} reads + {:.0} writes = {:.0}/s{}; {sync}; sequential reads {:.0} MB/s",
                self.read_qd1.ops_per_sec,
                f.read_qd4.ops_per_sec,
                f.read_qd16.ops_per_sec,
                self.read_qd32.ops_per_sec,
                f.write_qd1.ops_per_sec,
                f.mix_reads.ops_per_sec,
                f.mix_writes.ops_per_sec,
                f.mix_reads.ops_per_sec + f.mix_writes.ops_per_sec,
                if f.mix_reads.medium_per_sec.is_nan() {
                    String::new()
                } else {
                    format!(" ({:.0}/s at the medium)", f.mix_reads.medium_per_sec)
                },
                f.seq_read_mbps
            ),
        }
    }
}
