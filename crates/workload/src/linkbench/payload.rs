//! LinkBench's payload generator (MotifDataGenerator).

use crate::rng::Rng;

/// Payload bytes: 128-byte chunks, each fresh random bytes in
/// [start, end] with probability `uniqueness`, else a window of a per-worker
/// motif buffer (LinkBench's MotifDataGenerator; links 32–100 at 0.225,
/// nodes 50–220 at 0.63).
pub struct Motif {
    motif: Vec<u8>,
    start: u8,
    span: u64,
    uniqueness: f64,
}

impl Motif {
    /// A generator for bytes in [start, end].
    pub fn new(r: &mut Rng, start: u8, end: u8, uniqueness: f64) -> Motif {
        let span = u64::from(end - start) + 1;
        let motif = (0..512).map(|_| start + r.below(span) as u8).collect();
        Motif {
            motif,
            start,
            span,
            uniqueness,
        }
    }
    /// `len` payload bytes.
    pub fn fill(&self, r: &mut Rng, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len);
        self.fill_into(r, len, &mut out);
        out
    }

    /// `len` payload bytes into `out` (cleared first; its allocation is
    /// reused).
    pub fn fill_into(&self, r: &mut Rng, len: usize, out: &mut Vec<u8>) {
        out.clear();
        while out.len() < len {
            let n = (len - out.len()).min(128);
            if r.chance(self.uniqueness) {
                out.extend((0..n).map(|_| self.start + r.below(self.span) as u8));
            } else {
                let at = r.below((512 - n) as u64 + 1) as usize;
                out.extend_from_slice(&self.motif[at..at + n]);
            }
        }
    }
}
