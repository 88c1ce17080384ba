//! The device physics the model's timing rests on, each a small function
//! of published figures: command queueing at a disk, an SSD's garbage
//! collection at steady state, and the streams a write cache merges.

/// How much a unit's random positioning shrinks when it can choose among
/// `depth` queued IOs (itself included): the positioning time is
/// multiplied by `1 / (1 + a·ln depth)`, with `a` set so that a depth of
/// 32 serves `1 + gain32` times the IOs of a depth of 1. A 7,200 rpm SATA
/// disk with NCQ and the OS's queue on served about 50% more random reads
/// with 32 threads than with one (G. Danti, "A look at how NCQ, software
/// queue and I/O schedulers impact disk performance", ilsistemista.net,
/// 2013); 0 is a device that does not reorder (flash). A disk chooses
/// among at most 32 commands (NCQ's tags), so a deeper queue (a
/// controller's cache sorted by address) gains no more: what is left is
/// the rotation, which only the disk can order.
pub fn queue_factor(gain32: f64, depth: usize) -> f64 {
    if gain32 <= 0.0 || depth <= 1 {
        return 1.0;
    }
    let a = gain32 / 32f64.ln();
    1.0 / (1.0 + a * (depth.min(TAGS) as f64).ln())
}

/// The most commands a disk reorders among (NCQ's 32 tags).
pub const TAGS: usize = 32;

/// An SSD's write amplification at steady state under uniformly random
/// writes with greedy garbage collection, for spare area `spare` (the
/// share of physical flash beyond the user capacity, as a fraction of the
/// user capacity): `(1+ρ) / (1+ρ + W₀(-(1+ρ)·e^-(1+ρ)))` (L. Xiang and
/// B. M. Kurkoski, "An improved analytic expression for write amplification
/// in NAND flash", arXiv:1110.4245; 2.36 at ρ = 0.3 against 2.35
/// simulated). 1 with no spare figure (not flash).
pub fn write_amp(spare: f64) -> f64 {
    if spare <= 0.0 {
        return 1.0;
    }
    let x = 1.0 + spare;
    let z = -x * (-x).exp();
    x / (x + lambert_w0(z))
}

/// The principal branch of Lambert's W on [-1/e, 0), by Newton's method
/// from a start near the branch point (converges in a few steps).
fn lambert_w0(z: f64) -> f64 {
    let e = std::f64::consts::E;
    // Near -1/e, W ≈ -1 + sqrt(2(1 + e·z)).
    let mut w = -1.0 + (2.0 * (1.0 + e * z)).max(0.0).sqrt();
    for _ in 0..50 {
        let ew = w.exp();
        let f = w * ew - z;
        let step = f / (ew * (w + 1.0)).max(1e-12);
        w -= step;
        if step.abs() < 1e-12 {
            break;
        }
    }
    w
}

/// How many write streams a cache follows at once.
pub const STREAMS: usize = 16;

/// The ends of the last few write streams: a write that starts where one
/// of them ended continues it (a log, a journal, a file written in order
/// between other writes), not only one that follows the very last write.
#[derive(Clone, Debug)]
pub struct Streams {
    ends: [u64; STREAMS],
    next: usize,
}

impl Default for Streams {
    fn default() -> Self {
        Streams {
            ends: [u64::MAX; STREAMS],
            next: 0,
        }
    }
}

impl Streams {
    /// A write of `[offset, end)`: whether it continues a stream; either
    /// way its end is kept (in the stream it continued, else in place of
    /// the oldest).
    pub fn write(&mut self, offset: u64, end: u64) -> bool {
        if let Some(i) = self.ends.iter().position(|&e| e == offset) {
            self.ends[i] = end;
            return true;
        }
        self.ends[self.next] = end;
        self.next = (self.next + 1) % STREAMS;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queueing_gives_the_measured_gain_at_32_and_nothing_at_1() {
        assert_eq!(queue_factor(0.5, 1), 1.0);
        assert!((1.0 / queue_factor(0.5, 32) - 1.5).abs() < 1e-9);
        // Monotone in between, and nothing for a device that does not
        // reorder.
        assert!(queue_factor(0.5, 4) < 1.0 && queue_factor(0.5, 4) > queue_factor(0.5, 8));
        assert_eq!(queue_factor(0.0, 32), 1.0);
        // No more than 32 commands are reordered.
        assert_eq!(queue_factor(0.5, 1000), queue_factor(0.5, 32));
    }

    #[test]
    fn write_amp_matches_the_papers_figures() {
        // arXiv:1110.4245: 2.36 at an over-provisioning factor of 0.3.
        assert!((write_amp(0.3) - 2.36).abs() < 0.01, "{}", write_amp(0.3));
        // Less spare, more amplification; none without a spare figure.
        assert!(write_amp(0.07) > write_amp(0.28));
        assert!(write_amp(0.07) > 7.0, "{}", write_amp(0.07));
        assert_eq!(write_amp(0.0), 1.0);
    }

    #[test]
    fn a_write_continues_any_recent_stream() {
        let mut s = Streams::default();
        assert!(!s.write(0, 4096)); // a log
        assert!(!s.write(1 << 30, (1 << 30) + 8192)); // a page elsewhere
        assert!(s.write(4096, 8192)); // the log again: continues it
        assert!(s.write((1 << 30) + 8192, (1 << 30) + 12288));
        // Seventeen other streams push the log's end out.
        for i in 0..STREAMS as u64 {
            s.write((i + 2) << 32, ((i + 2) << 32) + 4096);
        }
        assert!(!s.write(8192, 12288));
    }
}
