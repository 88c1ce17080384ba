//! Data of the KV workloads: keys hashed from a document number (so a load
//! in number order is not in key order), values of a given length
//! distribution and compressibility with random bytes fresh per value, and
//! the live logical bytes.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::rng::Rng;
use crate::workload::dist::scramble;

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

/// Live logical bytes (key + value) of every document, kept exactly as
/// documents are written: the space-amp denominator. Documents of varying
/// size keep their length; documents of one fixed size need only one bit
/// each (32× less memory touched per write, so the tracker does not evict
/// the engine's own cache lines).
pub struct Live {
    lens: Vec<AtomicU32>,
    bits: Vec<AtomicU64>,
    fixed: u64,
    total: AtomicU64,
}

impl Live {
    /// Room for `n` documents of varying size, none live.
    pub fn new(n: u64) -> Live {
        Live {
            lens: (0..n).map(|_| AtomicU32::new(0)).collect(),
            bits: Vec::new(),
            fixed: 0,
            total: AtomicU64::new(0),
        }
    }

    /// Room for `n` documents of `bytes` each, none live.
    pub fn fixed(n: u64, bytes: u64) -> Live {
        Live {
            lens: Vec::new(),
            bits: (0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            fixed: bytes,
            total: AtomicU64::new(0),
        }
    }

    /// Document `i` now has `bytes` of key + value.
    pub fn set(&self, i: u64, bytes: u64) {
        if self.fixed > 0 {
            if let Some(w) = self.bits.get((i / 64) as usize) {
                let bit = 1u64 << (i % 64);
                // A plain load first: an overwrite of a live document then
                // costs no locked instruction (fetch_or stays the arbiter
                // when the bit looks clear).
                if w.load(Ordering::Relaxed) & bit == 0
                    && w.fetch_or(bit, Ordering::Relaxed) & bit == 0
                {
                    self.total.fetch_add(self.fixed, Ordering::Relaxed);
                }
            }
            return;
        }
        if let Some(slot) = self.lens.get(i as usize) {
            let old = slot.swap(bytes as u32, Ordering::Relaxed) as u64;
            if bytes >= old {
                self.total.fetch_add(bytes - old, Ordering::Relaxed);
            } else {
                self.total.fetch_sub(old - bytes, Ordering::Relaxed);
            }
        }
    }

    /// Total live bytes.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// Documents with a value.
    pub fn capacity(&self) -> u64 {
        if self.fixed > 0 {
            self.bits.len() as u64 * 64
        } else {
            self.lens.len() as u64
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
