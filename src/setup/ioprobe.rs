//! What a device really does: a short fio-like probe of our own run on the
//! dedicated device before the engines — 4 KiB random direct reads at
//! queue depth 1 and 8 (one thread per outstanding read), and 4 KiB
//! overwrites each followed by `fdatasync` — with the device's own
//! counters read around each phase, so a user sees the IOPS the class
//! setting gave, not only the setting.

use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::probe::diskstats;

/// The file the probe reads and writes.
const FILE_BYTES: u64 = 64 << 20;
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
}

/// The probe's result, stored with the run.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Measured {
    /// 4 KiB random direct reads, one at a time.
    pub read_qd1: Phase,
    /// 4 KiB random direct reads, 8 at a time.
    pub read_qd8: Phase,
    /// 4 KiB direct overwrites, each followed by fdatasync.
    pub write_sync: Phase,
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

/// Runs every phase for `secs` each in `dir` (on the device `dev`, a
/// /proc/diskstats name); removes its file.
pub fn measure(dir: &Path, dev: &str, secs: f64) -> Result<Measured> {
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
        Ok(Measured {
            read_qd1: phase(dev, d, 1, read_one, &path)?,
            read_qd8: phase(dev, d, 8, read_one, &path)?,
            write_sync: phase(dev, d, 1, write_sync, &path)?,
        })
    })();
    let _ = std::fs::remove_file(&path);
    r
}

fn read_one(f: &File, r: &mut u64, buf: &mut Aligned) -> std::io::Result<()> {
    f.read_exact_at(buf.slice(BLOCK), next_block(r))
}

fn write_sync(f: &File, r: &mut u64, buf: &mut Aligned) -> std::io::Result<()> {
    f.write_all_at(buf.slice(BLOCK), next_block(r))?;
    f.sync_data()
}

/// A block offset from a xorshift stream.
fn next_block(r: &mut u64) -> u64 {
    *r ^= *r << 13;
    *r ^= *r >> 7;
    *r ^= *r << 17;
    (*r % (FILE_BYTES / BLOCK as u64)) * BLOCK as u64
}

/// `depth` threads each doing `op` in a loop for `d`.
fn phase(
    dev: &str,
    d: Duration,
    depth: usize,
    op: fn(&File, &mut u64, &mut Aligned) -> std::io::Result<()>,
    path: &Path,
) -> Result<Phase> {
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
            .enumerate()
            .map(|(i, f)| {
                s.spawn(move || -> std::io::Result<u64> {
                    let mut r = 0x9e37_79b9_7f4a_7c15_u64 ^ (i as u64 + 1);
                    let mut buf = Aligned::new(BLOCK, 0xa5);
                    let mut n = 0;
                    while t0.elapsed() < t_end {
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
        let before = (diskstats::read(dev), Instant::now());
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
    let (counts, (before, t1)) = counts;
    let secs = t1.elapsed().as_secs_f64();
    let after = diskstats::read(dev);
    let ops: u64 = counts.iter().sum();
    let per = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) => b.saturating_sub(a) as f64 / secs,
        _ => f64::NAN,
    };
    Ok(Phase {
        ops_per_sec: ops as f64 / secs,
        dev_reads_per_sec: per(before.map(|s| s.reads), after.map(|s| s.reads)),
        dev_writes_per_sec: per(before.map(|s| s.writes), after.map(|s| s.writes)),
        mean_us: if ops > 0 {
            secs * 1e6 * depth as f64 / ops as f64
        } else {
            f64::NAN
        },
    })
}

impl Measured {
    /// `read QD1 998/s (QD8 1002/s), write+fdatasync 310/s (620 device writes/s)`.
    pub fn show(&self) -> String {
        format!(
            "4 KiB random reads {:.0}/s at QD1, {:.0}/s at QD8; 4 KiB write+fdatasync {:.0}/s ({:.0} device writes/s)",
            self.read_qd1.ops_per_sec,
            self.read_qd8.ops_per_sec,
            self.write_sync.ops_per_sec,
            self.write_sync.dev_writes_per_sec
        )
    }
}
