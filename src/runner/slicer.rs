//! `--slice DURATION`: a long step reported as consecutive slices, each
//! with the full set of figures, as the seeds' hourly tables do.
//!
//! Slices are built from the intervals the driver already closes: a slice
//! is the run of whole intervals whose end falls nearest its boundary
//! (k × DURATION), so no second measuring path exists and a slice's
//! figures are exactly those of its intervals taken together.

use crate::driver::IntervalRecord;
use crate::metrics::{self, WorkDone};
use crate::probe::Sample;

pub use crate::results::Slice;

/// Groups intervals into slices of `len` seconds.
pub struct Slicer {
    len: f64,
    idx: usize,
    acc: Option<(Sample, Sample, u64, u64, u64)>,
    no_device: Option<String>,
}

impl Slicer {
    /// Slices of `len` seconds; `no_device` is why device figures are
    /// missing, when they are.
    pub fn new(len: f64, no_device: Option<String>) -> Slicer {
        Slicer {
            len,
            idx: 0,
            acc: None,
            no_device,
        }
    }

    /// Adds an interval; returns the slice it closes, if any. `live` is
    /// the workload's live logical bytes now (for space-amp).
    pub fn push(&mut self, r: &IntervalRecord, live: u64) -> Option<Slice> {
        let acc = self.acc.get_or_insert((r.start, r.start, 0, 0, 0));
        acc.1 = r.end;
        acc.2 += r.ops;
        acc.3 += r.bg_ops;
        acc.4 += r.written;
        // The interval that ends nearest the boundary closes the slice.
        let boundary = (self.idx + 1) as f64 * self.len;
        let half = (r.end.t - r.start.t) / 2.0;
        (r.end.t + half >= boundary).then(|| self.close(live, false))?
    }

    /// The last, possibly shorter, slice at the step's end.
    pub fn finish(&mut self, live: u64) -> Option<Slice> {
        let partial = self
            .acc
            .as_ref()
            .is_some_and(|a| a.1.t - a.0.t < 0.9 * self.len);
        self.close(live, partial)
    }

    fn close(&mut self, live: u64, partial: bool) -> Option<Slice> {
        let (a, b, ops, bg, written) = self.acc.take()?;
        let w = WorkDone {
            ops,
            secs: b.t - a.t,
            logical_bytes: live,
            logical_written: written,
        };
        let figures = metrics::compute(
            &a,
            &b,
            &w,
            self.no_device.as_deref(),
            crate::probe::cpu::ticks_per_sec(),
        );
        let s = Slice {
            idx: self.idx,
            t: (a.t, b.t),
            counts: (ops, bg, written),
            partial,
            figures,
        };
        self.idx += 1;
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metric;

    fn rec(idx: usize, t0: f64, t1: f64, ops: u64) -> IntervalRecord {
        IntervalRecord {
            idx,
            start: Sample {
                t: t0,
                ..Sample::default()
            },
            end: Sample {
                t: t1,
                ..Sample::default()
            },
            ops,
            bg_ops: 0,
            written: ops * 10,
        }
    }

    #[test]
    fn groups_whole_intervals_and_keeps_a_short_tail() {
        let mut s = Slicer::new(30.0, None);
        let mut out = Vec::new();
        // Ten-second intervals over 75 s: slices 0-30, 30-60, then 60-75.
        let ends = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 75.0];
        let mut t0 = 0.0;
        for (i, t1) in ends.iter().enumerate() {
            if let Some(x) = s.push(&rec(i, t0, *t1, 100), 0) {
                out.push(x);
            }
            t0 = *t1;
        }
        out.extend(s.finish(0));
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].t, (0.0, 30.0));
        assert_eq!(out[1].t, (30.0, 60.0));
        assert_eq!(out[2].t, (60.0, 75.0));
        assert_eq!(out[0].counts, (300, 0, 3000));
        assert_eq!(out[2].counts.0, 200);
        assert!(!out[1].partial && out[2].partial);
        let ops_s = |s: &Slice| {
            s.figures
                .iter()
                .find(|(m, _)| *m == Metric::OpsPerSec)
                .and_then(|(_, f)| f.value())
        };
        assert_eq!(ops_s(&out[0]), Some(10.0));
        assert_eq!(ops_s(&out[2]), Some(200.0 / 15.0));
        assert!(s.finish(0).is_none());
    }

    #[test]
    fn an_interval_ending_near_the_boundary_closes_the_slice() {
        // Intervals drift (10.2 s each): the one ending at 30.6 is nearest 30.
        let mut s = Slicer::new(30.0, None);
        let mut closed = Vec::new();
        for i in 0..6 {
            let (t0, t1) = (i as f64 * 10.2, (i + 1) as f64 * 10.2);
            if let Some(x) = s.push(&rec(i, t0, t1, 1), 0) {
                closed.push((i, x.t.1));
            }
        }
        assert_eq!(closed.len(), 2);
        assert_eq!(closed[0].0, 2);
        assert_eq!(closed[1].0, 5);
    }
}
