//! The collector's side of a step: the state it keeps over the measured
//! phase (the last sample and counts, the interval being filled, the
//! timeline, the sink's first error) and what it does at each boundary
//! and at the end.

use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::thread::{self, EpochHists, Shared};
use super::{IntervalRecord, StepSink, StepSpec, Timeline};
use crate::probe::{Probe, Sample};
use crate::signals::INTERRUPTED;

/// Foreground ops, background ops and bytes written, as counted so far.
pub(super) type Counts = (u64, u64, u64);

/// The collector over one step's measured phase.
pub(super) struct Collector<'s> {
    spec: &'s StepSpec,
    probe: &'s Probe,
    shared: &'s Shared,
    pending: &'s Mutex<thread::Pending>,
    bg_names: &'s [String],
    /// When the measured phase started.
    pub(super) t0: Instant,
    /// The sample at that start.
    pub(super) first: Sample,
    /// The sample and counts at the last boundary.
    last: Sample,
    last_counts: Counts,
    /// The index of the interval being filled.
    pub(super) idx: usize,
    boundary: Instant,
    pub(super) timeline: Timeline,
    /// The first error the sink returned.
    pub(super) sink_error: Option<String>,
}

impl<'s> Collector<'s> {
    /// Starts the measured phase now: the first sample.
    pub(super) fn start(
        spec: &'s StepSpec,
        probe: &'s Probe,
        shared: &'s Shared,
        pending: &'s Mutex<thread::Pending>,
        bg_names: &'s [String],
    ) -> Collector<'s> {
        let t0 = Instant::now();
        let first = probe.sample(0.0);
        Collector {
            spec,
            probe,
            shared,
            pending,
            bg_names,
            t0,
            first,
            last: first,
            last_counts: (0, 0, 0),
            idx: 0,
            boundary: t0 + spec.interval,
            timeline: Timeline::new(),
            sink_error: None,
        }
    }

    /// Keeps the first of the sink's errors.
    fn note(&mut self, e: &anyhow::Error) {
        self.sink_error.get_or_insert(format!("{e:#}"));
    }

    /// Closes the interval being filled at `end` with `counts`.
    fn close(&mut self, end: Sample, counts: Counts, sink: &mut dyn StepSink) -> bool {
        let (prev, last) = (self.last_counts, self.last);
        let rec = IntervalRecord {
            idx: self.idx,
            start: last,
            end,
            ops: counts.0 - prev.0,
            bg_ops: counts.1 - prev.1,
            written: counts.2 - prev.2,
        };
        match sink.interval(&rec) {
            Ok(()) => true,
            Err(e) => {
                self.note(&e);
                self.shared.fail(format!("results: {e:#}"));
                false
            }
        }
    }

    /// Hands the sink the response times of the epochs `keep` selects
    /// (numbered at most `max_idx`), then recycles their histograms.
    fn hand_over(&mut self, keep: &dyn Fn(u64) -> bool, max_idx: usize, sink: &mut dyn StepSink) {
        let taken: Vec<(u64, EpochHists)> = {
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            let done: Vec<u64> = p.by_epoch.keys().copied().filter(|e| keep(*e)).collect();
            done.into_iter()
                .filter_map(|e| p.by_epoch.remove(&e).map(|v| (e, v)))
                .collect()
        };
        for (e, (f, b)) in taken {
            let l = super::named(&self.spec.op_names, self.bg_names, &f, &b);
            if let Err(err) = sink.interval_latency((e as usize).min(max_idx), &l) {
                self.note(&err);
            }
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            p.recycle(f);
            p.recycle(b);
        }
    }

    /// One turn of the collector's loop: closes an interval at its
    /// boundary, or notes progress and sleeps until the next look (50 ms
    /// at most). False once the measured phase is over: the workers are
    /// done, something stopped them, or its time is up.
    pub(super) fn turn(&mut self, end: Option<Instant>, sink: &mut dyn StepSink) -> bool {
        if let Some(why) = sink.health() {
            self.shared.fail(why);
        }
        let now = Instant::now();
        let running = self.shared.fg_running.load(Ordering::SeqCst) > 0;
        let stopping =
            self.shared.signals.stop.load(Ordering::Relaxed) || INTERRUPTED.load(Ordering::Relaxed);
        if !running || stopping || end.is_some_and(|e| now >= e) {
            return false;
        }
        if now >= self.boundary {
            let s = self.probe.sample(self.t0.elapsed().as_secs_f64());
            let counts = self.shared.totals();
            self.shared
                .signals
                .epoch
                .store(self.idx as u64 + 1, Ordering::SeqCst);
            self.close(s, counts, sink);
            // The interval before this one is complete now: hand it over.
            if self.idx > 0 {
                let idx = self.idx as u64;
                self.hand_over(&|e| e < idx, usize::MAX, sink);
            }
            self.last = s;
            self.last_counts = counts;
            self.idx += 1;
            self.boundary += self.spec.interval;
            return true;
        }
        let (ops, secs) = (
            self.shared.totals().0,
            now.duration_since(self.t0).as_secs_f64(),
        );
        self.timeline.push(secs, ops);
        sink.progress(ops, secs);
        std::thread::sleep((self.boundary - now).min(Duration::from_millis(50)));
        true
    }

    /// After the workers stopped: the last interval (closed at `end`
    /// unless nothing happened since the last boundary) and every
    /// response time not yet handed over. The final counts.
    pub(super) fn finish(&mut self, end: Sample, sink: &mut dyn StepSink) -> Counts {
        let counts = self.shared.totals();
        if counts != self.last_counts || self.idx == 0 {
            self.close(end, counts, sink);
            self.idx += 1;
        }
        let max_idx = self.idx.saturating_sub(1);
        self.hand_over(&|_| true, max_idx, sink);
        counts
    }
}
