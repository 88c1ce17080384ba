//! Data of the KV workloads: keys hashed from a document number (so a load
//! in number order is not in key order), values of a given length
//! distribution and compressibility with random bytes fresh per value, and
//! the live logical bytes.

use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};

use crate::dist::scramble;
use crate::rng::Rng;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Writes the key of document `i`: 16 hex digits of a bijective hash of
/// `i` (so keys are distinct for distinct documents), extended to `len`
/// bytes with more digits derived from `i`. `len` ≥ 16.
pub fn doc_key(i: u64, len: usize, out: &mut Vec<u8>) {
    out.clear();
    let mut h = scramble(i);
    let mut round = 0u64;
    while out.len() < len {
        for s in (0..16).rev() {
            out.push(HEX[((h >> (s * 4)) & 0xf) as usize]);
        }
        round += 1;
        h = scramble(i ^ round.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    }
    out.truncate(len);
}

/// Values: length normal(median, sd) clamped to [1, 4·median+1]; the first
/// (100 − compressibility)% of the bytes random (fresh for every value), the
/// rest a constant filler, so a compressor saves about compressibility%.
#[derive(Clone, Copy, Debug)]
pub struct ValueGen {
    /// Median length in bytes.
    pub median: f64,
    /// Standard deviation of the length.
    pub sd: f64,
    /// Share of the value that compresses away, percent (0–100).
    pub compressibility: f64,
}

impl ValueGen {
    /// Fills `out` with a new value.
    pub fn fill(&self, r: &mut Rng, out: &mut Vec<u8>) {
        let len = if self.sd > 0.0 {
            (self.median + self.sd * r.normal())
                .round()
                .clamp(1.0, 4.0 * self.median + 1.0) as usize
        } else {
            self.median.max(1.0) as usize
        };
        let random = ((len as f64) * (100.0 - self.compressibility) / 100.0).round() as usize;
        out.clear();
        out.resize(len, b'x');
        r.fill(&mut out[..random.min(len)]);
    }
}

/// db_bench's values (its `RandomGenerator`): one buffer of at least 1 MiB
/// made of 100-byte pieces, each `ratio`·100 random bytes repeated to fill
/// the piece, so a compressor keeps about `ratio` of it; a value is the
/// buffer's next `len` bytes, from the start again when they run out. Values
/// recur every MiB, as db_bench's do (the micro workload measures the data
/// set db_bench measures); the pattern workload's [`ValueGen`] makes every
/// value fresh instead.
pub struct ValuePool {
    data: Vec<u8>,
}

impl ValuePool {
    /// The pool for values of `len` bytes compressing to `ratio` (0–1),
    /// filled from a fixed seed (db_bench's is fixed too).
    pub fn new(len: usize, ratio: f64) -> ValuePool {
        const PIECE: usize = 100;
        let size = len.max(1 << 20);
        let raw = ((PIECE as f64 * ratio.clamp(0.0, 1.0)) as usize).max(1);
        let mut r = Rng::new(301);
        let mut data = Vec::with_capacity(size + PIECE);
        let mut random = vec![0u8; raw];
        while data.len() < size {
            r.fill(&mut random);
            let piece_end = data.len() + PIECE;
            while data.len() < piece_end {
                let n = raw.min(piece_end - data.len());
                data.extend_from_slice(&random[..n]);
            }
        }
        ValuePool { data }
    }

    /// The next value of `len` bytes for a writer at `pos` (advanced).
    #[inline]
    pub fn next(&self, pos: &mut usize, len: usize) -> &[u8] {
        let len = len.min(self.data.len());
        if *pos + len > self.data.len() {
            *pos = 0;
        }
        let v = &self.data[*pos..*pos + len];
        *pos += len;
        v
    }
}

/// Live logical bytes (key + value) of every document, kept exactly as
/// documents are written: the space-amp denominator. Documents of varying
/// size keep their length (a swap per write). Documents of one fixed size
/// need only a flag each, set by a plain store: a write then never waits for
/// the flag's cache line (a read-modify-write would stall the writer on a
/// line the engine has evicted, measured at 2% of a db_bench-style fill),
/// and the total is counted from the flags when asked (at each interval).
pub enum Live {
    /// A length per document, and their sum.
    Varying {
        /// Each document's key + value bytes (0: not live).
        lens: Vec<AtomicU32>,
        /// Their sum.
        total: AtomicU64,
    },
    /// A flag per document, all of one size.
    Fixed {
        /// 1 when the document is live.
        flags: Vec<AtomicU8>,
        /// Key + value bytes of every document.
        bytes: u64,
    },
}

/// A cap on the memory [`Live::check_room`] allows, in bytes (`u64::MAX`:
/// none but the machine's). The fuzz targets set it, so their memory limit
/// tests the readers, not how much a legitimately large workload takes.
pub static ROOM_CAP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(u64::MAX);

impl Live {
    /// Room for `n` documents of varying size, none live.
    pub fn new(n: u64) -> Live {
        Live::Varying {
            lens: (0..n).map(|_| AtomicU32::new(0)).collect(),
            total: AtomicU64::new(0),
        }
    }

    /// Checks that a map of `n` entries of `per` bytes each fits in
    /// memory (half of this machine's, as /proc/meminfo says) before it is
    /// made: a parameter like `num=99999999999999` is an error naming the
    /// parameter, not an allocation that aborts.
    pub fn check_room(param: &str, n: u64, per: u64) -> Result<(), crate::UsageError> {
        let cap = ROOM_CAP.load(std::sync::atomic::Ordering::Relaxed);
        let total = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find_map(|l| l.strip_prefix("MemTotal:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
            .map_or(u64::MAX, |kb| kb.saturating_mul(1024))
            .min(cap.saturating_mul(2));
        let need = n.saturating_mul(per);
        if need > total / 2 {
            return Err(crate::UsageError(format!(
                "-p {param}={n}: keeping track of {n} entries takes {:.1} GB, more than half this machine's memory ({:.1} GB)",
                need as f64 / 1e9,
                total as f64 / 1e9
            )));
        }
        Ok(())
    }

    /// Room for `n` documents of `bytes` each (one byte of memory per
    /// document), none live.
    pub fn fixed(n: u64, bytes: u64) -> Live {
        Live::Fixed {
            flags: (0..n).map(|_| AtomicU8::new(0)).collect(),
            bytes,
        }
    }

    /// Document `i` now has `bytes` of key + value (for fixed-size
    /// documents, the size given at creation).
    #[inline]
    pub fn set(&self, i: u64, bytes: u64) {
        match self {
            Live::Fixed { flags, .. } => {
                if let Some(f) = flags.get(i as usize) {
                    f.store(1, Ordering::Relaxed);
                }
            }
            Live::Varying { lens, total } => {
                if let Some(slot) = lens.get(i as usize) {
                    let old = slot.swap(bytes as u32, Ordering::Relaxed) as u64;
                    if bytes >= old {
                        total.fetch_add(bytes - old, Ordering::Relaxed);
                    } else {
                        total.fetch_sub(old - bytes, Ordering::Relaxed);
                    }
                }
            }
        }
    }

    /// Total live bytes.
    pub fn total(&self) -> u64 {
        match self {
            Live::Fixed { flags, bytes } => {
                let live = flags
                    .iter()
                    .filter(|f| f.load(Ordering::Relaxed) != 0)
                    .count() as u64;
                live * bytes
            }
            Live::Varying { total, .. } => total.load(Ordering::Relaxed),
        }
    }

    /// Live documents.
    pub fn count(&self) -> u64 {
        match self {
            Live::Fixed { flags, .. } => flags
                .iter()
                .filter(|f| f.load(Ordering::Relaxed) != 0)
                .count() as u64,
            Live::Varying { lens, .. } => lens
                .iter()
                .filter(|l| l.load(Ordering::Relaxed) != 0)
                .count() as u64,
        }
    }

    /// Documents with room for a value.
    pub fn capacity(&self) -> u64 {
        match self {
            Live::Fixed { flags, .. } => flags.len() as u64,
            Live::Varying { lens, .. } => lens.len() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_distinct_and_sized() {
        let mut seen = std::collections::HashSet::new();
        let mut k = Vec::new();
        for i in 0..50_000 {
            doc_key(i, 32, &mut k);
            assert_eq!(k.len(), 32);
            assert!(seen.insert(k.clone()));
        }
        doc_key(7, 16, &mut k);
        assert_eq!(k.len(), 16);
    }

    #[test]
    fn compressibility_measured_with_lz4() {
        for c in [0.0, 50.0, 80.0] {
            let g = ValueGen {
                median: 512.0,
                sd: 32.0,
                compressibility: c,
            };
            let mut r = Rng::new(9);
            let mut all = Vec::new();
            let mut v = Vec::new();
            for _ in 0..2000 {
                g.fill(&mut r, &mut v);
                all.extend_from_slice(&v);
            }
            let z = lz4_flex::compress(&all);
            let saved = 100.0 * (1.0 - z.len() as f64 / all.len() as f64);
            assert!(
                (saved - c).abs() < 10.0,
                "setting {c}%: lz4 saved {saved:.1}%"
            );
        }
    }

    #[test]
    fn pooled_values_compress_as_set_measured_with_lz4() {
        for ratio in [0.25, 0.5, 1.0] {
            let p = ValuePool::new(100, ratio);
            let mut pos = 0;
            let mut all = Vec::new();
            // 3 MiB of values: the pool wraps around, as in a long fill.
            for _ in 0..30_000 {
                let v = p.next(&mut pos, 100);
                assert_eq!(v.len(), 100);
                all.extend_from_slice(v);
            }
            // Compress value by value, as a block compressor sees values
            // from scattered positions of the pool.
            let z: usize = all.chunks(100).map(|c| lz4_flex::compress(c).len()).sum();
            let kept = z as f64 / all.len() as f64;
            assert!(
                (kept - ratio).abs() < 0.15,
                "ratio {ratio}: lz4 kept {kept:.2} of the bytes"
            );
        }
        let p = ValuePool::new(100, 0.5);
        let (mut a, mut b) = (0, 0);
        assert_eq!(p.next(&mut a, 100), p.next(&mut b, 100));
        assert_ne!(p.next(&mut a, 100), p.next(&mut a, 100));
    }

    #[test]
    fn fixed_size_live_bytes_count_distinct_documents() {
        let l = Live::fixed(200, 116);
        for i in [3, 150, 3, 64, 150] {
            l.set(i, 116);
        }
        assert_eq!(l.total(), 3 * 116);
    }

    #[test]
    fn live_bytes_follow_overwrites() {
        let l = Live::new(3);
        l.set(0, 100);
        l.set(1, 50);
        l.set(0, 30);
        assert_eq!(l.total(), 80);
    }
}
