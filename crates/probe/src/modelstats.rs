//! The device model's counters (see `setup::devmodel`), in a small file
//! both the model's server and the run map shared: the server adds to them on every IO (atomics, nothing
//! allocated), the run reads them around each step. Mean queue depth
//! over an interval is, by Little's law, the latency summed over the
//! interval's IOs divided by its length.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// Latency buckets: 8 per power of two from 1 µs, up to about 70 s.
pub const BUCKETS: usize = 8 * 26;

/// What the file holds, to refuse a file of another layout.
const MAGIC: u64 = 0x616d_7064_6576_0004;

/// The counters as laid out in the file.
#[repr(C)]
pub struct Counters {
    magic: AtomicU64,
    /// Reads served.
    pub reads: AtomicU64,
    /// Writes served.
    pub writes: AtomicU64,
    /// Flushes (fsync) served.
    pub flushes: AtomicU64,
    /// Bytes read.
    pub read_bytes: AtomicU64,
    /// Bytes written.
    pub write_bytes: AtomicU64,
    /// IOs that waited for the shared budget or for room in the cache.
    pub waited: AtomicU64,
    /// IOs the write cache served without the medium.
    pub cached: AtomicU64,
    /// Reads that reached the medium.
    pub medium_reads: AtomicU64,
    /// Writes that reached the medium (destaged ones included).
    pub medium_writes: AtomicU64,
    /// The device's latency summed over IOs, ns.
    pub latency_ns: AtomicU64,
    /// Read or write errors of the backing file.
    pub errors: AtomicU64,
    /// The parameters' generation: the run writes `params.N.json` in
    /// the model's directory, then sets N here; the server takes it up
    /// before its next IO.
    pub params_gen: AtomicU64,
    /// The generation the server has applied (at its first IO after the
    /// switch).
    pub params_applied: AtomicU64,
    /// Power: the run sets an odd number to cut the power, the next
    /// even one to bring it back (see `Served::power_cut`).
    pub power_req: AtomicU64,
    /// The last power request the server carried out.
    pub power_done: AtomicU64,
    /// Blocks whose writes power cuts dropped, in all.
    pub power_dropped: AtomicU64,
    /// Blocks made dirty whose old content could not be kept (a cut
    /// cannot drop their writes).
    pub unkept: AtomicU64,
    /// IOs answered later than due by more than the server's
    /// `LATE_NS` (the server's own delay: a wake-up, the host file).
    pub late: AtomicU64,
    /// How late those were, summed, ns.
    pub late_ns: AtomicU64,
    /// Writes the cache absorbed: every block already dirty in it.
    pub absorbed: AtomicU64,
    /// Reads the cache served: every block dirty in it.
    pub cache_reads: AtomicU64,
    /// Dirty bytes in the cache integrated over time, byte·ms.
    pub dirty_byte_ms: AtomicU64,
    /// Latency histogram: see [`bucket`].
    pub hist: [AtomicU64; BUCKETS],
}

/// The bucket of a latency: 8 per power of two of µs.
pub fn bucket(ns: u64) -> usize {
    let us = (ns / 1000).max(1);
    let octave = 63 - us.leading_zeros() as usize;
    let sub = if octave >= 3 {
        ((us >> (octave - 3)) & 7) as usize
    } else {
        ((us << (3 - octave)) & 7) as usize
    };
    (octave * 8 + sub).min(BUCKETS - 1)
}

/// The lowest latency (µs) of a bucket.
pub fn bucket_floor_us(i: usize) -> f64 {
    let (octave, sub) = (i / 8, i % 8);
    (1u64 << octave) as f64 * (1.0 + sub as f64 / 8.0)
}

/// The counters file, mapped.
pub struct Mapped {
    ptr: *mut Counters,
    _file: File,
}

// SAFETY: the mapping is only ever accessed through atomics.
unsafe impl Send for Mapped {}
// SAFETY: as above.
unsafe impl Sync for Mapped {}

impl Mapped {
    /// Makes the file (new, 0600, never following a link) and maps it.
    pub fn create(path: &Path) -> Result<Mapped> {
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        f.set_len(std::mem::size_of::<Counters>() as u64)?;
        let m = Mapped::map(f, path)?;
        m.get().magic.store(MAGIC, Relaxed);
        Ok(m)
    }

    /// Maps an existing counters file.
    pub fn open(path: &Path) -> Result<Mapped> {
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        let m = Mapped::map(f, path)?;
        if m.get().magic.load(Relaxed) != MAGIC {
            bail!("{} is not a device model's counters file", path.display());
        }
        Ok(m)
    }

    fn map(f: File, path: &Path) -> Result<Mapped> {
        let len = std::mem::size_of::<Counters>();
        if f.metadata()?.len() < len as u64 {
            bail!("{} is too short for the counters", path.display());
        }
        // SAFETY: a shared mapping of `len` bytes of a file at least that
        // long; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("cannot map {}", path.display()));
        }
        Ok(Mapped {
            ptr: p.cast(),
            _file: f,
        })
    }

    /// The counters.
    pub fn get(&self) -> &Counters {
        // SAFETY: ptr maps a live, page-aligned region the size of
        // Counters, whose fields are all atomics (any bytes are valid).
        unsafe { &*self.ptr }
    }

    /// A copy of every counter now.
    pub fn snapshot(&self) -> Snapshot {
        let c = self.get();
        Snapshot {
            reads: c.reads.load(Relaxed),
            writes: c.writes.load(Relaxed),
            flushes: c.flushes.load(Relaxed),
            read_bytes: c.read_bytes.load(Relaxed),
            write_bytes: c.write_bytes.load(Relaxed),
            waited: c.waited.load(Relaxed),
            cached: c.cached.load(Relaxed),
            medium_reads: c.medium_reads.load(Relaxed),
            medium_writes: c.medium_writes.load(Relaxed),
            latency_ns: c.latency_ns.load(Relaxed),
            errors: c.errors.load(Relaxed),
            late: c.late.load(Relaxed),
            late_ns: c.late_ns.load(Relaxed),
            absorbed: c.absorbed.load(Relaxed),
            cache_reads: c.cache_reads.load(Relaxed),
            dirty_byte_ms: c.dirty_byte_ms.load(Relaxed),
            hist: c.hist.iter().map(|h| h.load(Relaxed)).collect(),
        }
    }
}

impl std::fmt::Debug for Mapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Mapped(device model counters)")
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what map made; nothing refers to it after.
        unsafe {
            libc::munmap(self.ptr.cast(), std::mem::size_of::<Counters>());
        }
    }
}

/// The counters a probe sample keeps (the histogram is read apart).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelCounters {
    /// Reads, writes and flushes served.
    pub ios: u64,
    /// Flushes served.
    pub flushes: u64,
    /// IOs that waited for the budget or for room in the cache.
    pub waited: u64,
    /// IOs the cache served alone.
    pub cached: u64,
    /// Reads at the medium.
    pub medium_reads: u64,
    /// Writes at the medium.
    pub medium_writes: u64,
    /// Summed latency, ns.
    pub latency_ns: u64,
    /// IOs the server answered late (its own delay), and by how much in
    /// all, ns.
    #[serde(default)]
    pub late: u64,
    /// See `late`.
    #[serde(default)]
    pub late_ns: u64,
    /// Writes the cache absorbed (every block already dirty).
    #[serde(default)]
    pub absorbed: u64,
    /// Reads the cache served.
    #[serde(default)]
    pub cache_reads: u64,
    /// Dirty bytes integrated over time, byte·ms (over an interval, the
    /// mean dirty bytes times its length).
    #[serde(default)]
    pub dirty_byte_ms: u64,
}

impl Mapped {
    /// The counters a sample keeps, and the device counters as the model
    /// saw them (reads, writes and their bytes).
    pub fn sample(&self) -> (ModelCounters, super::DiskCounters) {
        let s = self.snapshot();
        (
            ModelCounters {
                ios: s.ios(),
                flushes: s.flushes,
                waited: s.waited,
                cached: s.cached,
                medium_reads: s.medium_reads,
                medium_writes: s.medium_writes,
                latency_ns: s.latency_ns,
                late: s.late,
                late_ns: s.late_ns,
                absorbed: s.absorbed,
                cache_reads: s.cache_reads,
                dirty_byte_ms: s.dirty_byte_ms,
            },
            super::DiskCounters {
                reads: s.reads,
                sectors_read: s.read_bytes / 512,
                writes: s.writes,
                sectors_written: s.write_bytes / 512,
            },
        )
    }

    /// The counters file of the device model serving loop device `name`
    /// (`loopN`), if one does: its backing file is
    /// `…/ampbench-PID-RAND-model/mnt/FILE`, the counters beside `mnt`.
    pub fn of_loop(name: &str) -> Option<Mapped> {
        let back = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).ok()?;
        let back = Path::new(back.trim());
        let mnt = back.parent()?;
        let dir = mnt.parent()?;
        let named = dir
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("ampbench-") && n.ends_with("-model"));
        // Only a model's own: root's private directory, a root-owned
        // regular file of the right size (another user's loop device on a
        // look-alike path must not feed the run's figures).
        use std::os::unix::fs::MetadataExt;
        let root_only = |p: &Path, dir: bool| {
            std::fs::symlink_metadata(p).is_ok_and(|m| {
                m.uid() == 0
                    && if dir {
                        m.is_dir() && m.mode() & 0o077 == 0
                    } else {
                        m.is_file()
                            && m.mode() & 0o077 == 0
                            && m.len() == std::mem::size_of::<Counters>() as u64
                    }
            })
        };
        let counters = dir.join("counters");
        (mnt.file_name()? == "mnt" && named && root_only(dir, true) && root_only(&counters, false))
            .then(|| Mapped::open(&counters).ok())
            .flatten()
    }
}

/// The counters at one moment; subtract two for an interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Reads served.
    pub reads: u64,
    /// Writes served.
    pub writes: u64,
    /// Flushes served.
    pub flushes: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// IOs that waited for budget or cache room.
    pub waited: u64,
    /// IOs served by the cache alone.
    pub cached: u64,
    /// Reads at the medium.
    pub medium_reads: u64,
    /// Writes at the medium.
    pub medium_writes: u64,
    /// Summed latency, ns.
    pub latency_ns: u64,
    /// Backing-file errors.
    pub errors: u64,
    /// IOs answered late by the server (its own delay).
    #[serde(default)]
    pub late: u64,
    /// How late those were in all, ns.
    #[serde(default)]
    pub late_ns: u64,
    /// Writes the cache absorbed.
    #[serde(default)]
    pub absorbed: u64,
    /// Reads the cache served.
    #[serde(default)]
    pub cache_reads: u64,
    /// Dirty bytes integrated over time, byte·ms.
    #[serde(default)]
    pub dirty_byte_ms: u64,
    /// Latency histogram.
    pub hist: Vec<u64>,
}

impl Snapshot {
    /// `self - earlier`, counter by counter.
    pub fn since(&self, earlier: &Snapshot) -> Snapshot {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        Snapshot {
            reads: d(self.reads, earlier.reads),
            writes: d(self.writes, earlier.writes),
            flushes: d(self.flushes, earlier.flushes),
            read_bytes: d(self.read_bytes, earlier.read_bytes),
            write_bytes: d(self.write_bytes, earlier.write_bytes),
            waited: d(self.waited, earlier.waited),
            cached: d(self.cached, earlier.cached),
            medium_reads: d(self.medium_reads, earlier.medium_reads),
            medium_writes: d(self.medium_writes, earlier.medium_writes),
            latency_ns: d(self.latency_ns, earlier.latency_ns),
            errors: d(self.errors, earlier.errors),
            late: d(self.late, earlier.late),
            late_ns: d(self.late_ns, earlier.late_ns),
            absorbed: d(self.absorbed, earlier.absorbed),
            cache_reads: d(self.cache_reads, earlier.cache_reads),
            dirty_byte_ms: d(self.dirty_byte_ms, earlier.dirty_byte_ms),
            hist: self
                .hist
                .iter()
                .zip(earlier.hist.iter().chain(std::iter::repeat(&0)))
                .map(|(a, b)| d(*a, *b))
                .collect(),
        }
    }

    /// IOs of every kind.
    pub fn ios(&self) -> u64 {
        self.reads + self.writes + self.flushes
    }

    /// The latency at quantile `q` (0–1), µs, as its bucket's floor.
    pub fn quantile_us(&self, q: f64) -> Option<f64> {
        let n: u64 = self.hist.iter().sum();
        if n == 0 {
            return None;
        }
        let want = ((n as f64 * q).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for (i, h) in self.hist.iter().enumerate() {
            seen += h;
            if seen >= want {
                return Some(bucket_floor_us(i));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_eight_per_octave() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1_000), 0);
        assert_eq!(bucket(8_000), 24);
        assert_eq!(bucket(8_999), 24);
        assert_eq!(bucket(9_000), 25);
        assert_eq!(bucket(15_999), 31);
        for us in [1u64, 3, 7, 100, 1234, 8000, 65_000, 1_000_000] {
            let b = bucket(us * 1000);
            assert!(bucket_floor_us(b) <= us as f64, "{us} µs in {b}");
            assert!(bucket_floor_us(b + 1) > us as f64, "{us} µs in {b}");
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn a_mapped_file_is_shared_and_checked() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("c");
        let a = Mapped::create(&p).unwrap();
        let b = Mapped::open(&p).unwrap();
        a.get().reads.fetch_add(3, Relaxed);
        a.get().hist[bucket(8_000_000)].fetch_add(1, Relaxed);
        let s = b.snapshot();
        assert_eq!(s.reads, 3);
        assert_eq!(s.quantile_us(0.5), Some(7680.0)); // 4096 µs × (1 + 7/8)
        assert!(Mapped::create(&p).is_err(), "never reuses a file");
        std::fs::write(d.path().join("x"), vec![0u8; 4096]).unwrap();
        assert!(Mapped::open(&d.path().join("x")).is_err());
    }
}
