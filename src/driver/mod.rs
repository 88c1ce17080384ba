//! The driver runs one Step: worker threads doing a workload's operations,
//! a warm-up whose operations are not recorded, then a fixed duration or
//! until the workers run out of work; an optional rate-limited background
//! writer; intervals sampled by the probes; a progress line; a clean stop
//! on Ctrl-C that keeps what was measured.
//!
//! The harness times every operation, never the engine adapter. Each
//! thread records into its own histograms: nothing is locked on the
//! measured path. At an interval boundary the collector bumps an epoch;
//! each thread, at its next operation, sends its interval histograms over a
//! channel and starts new ones.
//!
//! Arrivals are closed loop by default (a thread starts its next operation
//! when the last one ends). With a fixed arrival rate each thread follows
//! its own schedule (uniform or Poisson gaps) and latency is measured from
//! the *intended* start, so a stall delays every operation queued behind it
//! and shows in the percentiles (no coordinated omission).
//!
//! `thread.rs` is the measured path (a worker thread's loop and what it
//! shares with the collector); this file is the step's types and the
//! collector.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::metrics::Latency;
use crate::probe::{Probe, Sample};
use thread::{Shared, Signals, Slot, Thread, merge_into};

use crate::signals::INTERRUPTED;

/// What one operation did, as told by the worker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Done {
    /// Index of the operation's kind in the step's operation names.
    pub kind: usize,
    /// Logical operations it counts as (e.g. 4096 for a batch of 4096
    /// inserts, the documents returned by a range read).
    pub ops: u64,
    /// User key+value bytes it wrote.
    pub written: u64,
}

/// One thread's source of operations. The driver calls `op` in a loop and
/// times each call.
pub trait Worker: Send {
    /// Does one operation; `Ok(None)` when this worker has no more work.
    fn op(&mut self) -> Result<Option<Done>>;
}

/// Makes the worker for a thread index.
pub type WorkerFactory<'a> = dyn Fn(usize) -> Result<Box<dyn Worker + 'a>> + Sync + 'a;

/// When the measured phase ends.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Stop {
    /// After this long.
    Duration(Duration),
    /// When every foreground worker has run out of work.
    Exhausted,
}

/// How operations arrive.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Arrival {
    /// Each thread starts an operation when its previous one ends.
    Closed,
    /// A total rate split evenly over the threads, latency measured from the
    /// intended start.
    Fixed {
        /// Total operations (calls) per second.
        per_sec: f64,
        /// Exponential gaps when true, equal gaps otherwise.
        poisson: bool,
    },
}

/// A rate-limited background writer that runs while the foreground works.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Background {
    /// Calls per second.
    pub per_sec: f64,
    /// After a stall, make up the calls it missed (true), or go on at the
    /// rate from where it is, the missed ones lost (false: the insert
    /// benchmark's reference writer).
    #[serde(default = "yes")]
    pub catch_up: bool,
    /// Names of its operation kinds (reported as `bg.NAME`).
    pub op_names: Vec<String>,
}

fn yes() -> bool {
    true
}

/// How to run one step.
#[derive(Clone, Debug)]
pub struct StepSpec {
    /// Foreground threads.
    pub threads: usize,
    /// Names of the foreground operation kinds ([`Done::kind`] indexes this).
    pub op_names: Vec<String>,
    /// Unrecorded time before the measured phase.
    pub warmup: Duration,
    /// When to stop.
    pub stop: Stop,
    /// Arrival process.
    pub arrival: Arrival,
    /// Interval between probe samples.
    pub interval: Duration,
    /// Optional background writer.
    pub background: Option<Background>,
    /// Seed for arrival gaps (Poisson).
    pub seed: u64,
}

/// One closed interval, handed to the sink as soon as it closes.
#[derive(Clone, Debug)]
pub struct IntervalRecord {
    /// 0-based index.
    pub idx: usize,
    /// Sample at the interval's start.
    pub start: Sample,
    /// Sample at its end.
    pub end: Sample,
    /// Foreground operations in the interval.
    pub ops: u64,
    /// Background operations in the interval.
    pub bg_ops: u64,
    /// User bytes written (foreground and background) in the interval.
    pub written: u64,
}

/// Receives what the driver measures as it goes.
pub trait StepSink {
    /// An interval closed (counts and samples).
    fn interval(&mut self, rec: &IntervalRecord) -> Result<()>;
    /// The response times of interval `idx`, once every thread has handed
    /// them over (one boundary later).
    fn interval_latency(&mut self, idx: usize, latencies: &[(String, Latency)]) -> Result<()>;
    /// Progress: foreground ops and seconds so far in the measured phase.
    fn progress(&mut self, _ops: u64, _secs: f64) {}
    /// Why the step must fail now (e.g. the engine ran out of memory at
    /// its limit), checked while the step runs; None while all is well.
    fn health(&mut self) -> Option<String> {
        None
    }
}

/// What a step measured.
#[derive(Clone, Debug)]
pub struct StepOutcome {
    /// Sample at the start of the measured phase.
    pub start: Sample,
    /// Sample at its end.
    pub end: Sample,
    /// Seconds of the measured phase.
    pub secs: f64,
    /// Foreground operations.
    pub ops: u64,
    /// Background operations.
    pub bg_ops: u64,
    /// User bytes written, foreground and background.
    pub written: u64,
    /// Response times per kind over the whole phase: foreground kinds, then
    /// `bg.` kinds.
    pub latencies: Vec<(String, Latency)>,
    /// Number of intervals recorded.
    pub intervals: usize,
    /// Foreground operations so far, sampled by the collector every 50 ms
    /// at most (seconds into the measured phase, count): the step's
    /// throughput over time, finer than its intervals; see [`slices`].
    pub timeline: Vec<(f64, u64)>,
    /// The first error a worker or the sink hit, if any.
    pub error: Option<String>,
    /// True when Ctrl-C stopped the step.
    pub interrupted: bool,
}

/// Merges snapshots of one epoch into per-kind histograms with names.
fn named(
    fg_names: &[String],
    bg_names: &[String],
    fg: &[Latency],
    bg: &[Latency],
) -> Vec<(String, Latency)> {
    let mut out: Vec<(String, Latency)> = Vec::new();
    for (n, l) in fg_names.iter().zip(fg) {
        if l.count() > 0 {
            out.push((n.clone(), l.clone()));
        }
    }
    for (n, l) in bg_names.iter().zip(bg) {
        if l.count() > 0 {
            out.push((format!("bg.{n}"), l.clone()));
        }
    }
    out
}

/// Runs one step to its end (or its first error, or Ctrl-C), feeding the
/// sink as intervals close, and returns what it measured.
pub fn run_step(
    spec: &StepSpec,
    fg: &WorkerFactory<'_>,
    bg: Option<&WorkerFactory<'_>>,
    probe: &Probe,
    sink: &mut dyn StepSink,
) -> StepOutcome {
    let threads = spec.threads.max(1);
    let shared = Shared {
        signals: Signals {
            stop: AtomicBool::new(false),
            bg_stop: AtomicBool::new(false),
            epoch: AtomicU64::new(0),
        },
        fg_running: AtomicUsize::new(threads),
        fg: (0..threads).map(|_| Slot::default()).collect(),
        bg: Slot::default(),
        error: Mutex::new(None),
    };
    let bg_spec = spec.background.as_ref().filter(|_| bg.is_some());
    let bg_names: Vec<String> = bg_spec.map(|b| b.op_names.clone()).unwrap_or_default();
    let pending = Mutex::new(thread::Pending::default());
    let origin = Instant::now();
    let start = origin + spec.warmup;
    let end = match spec.stop {
        Stop::Duration(d) => Some(start + d),
        Stop::Exhausted => None,
    };
    let per_thread_rate = match spec.arrival {
        Arrival::Closed => None,
        Arrival::Fixed { per_sec, poisson } => Some((per_sec / threads as f64, poisson)),
    };

    let mut outcome = std::thread::scope(|scope| {
        let mut fg_handles = Vec::new();
        for i in 0..threads {
            let t = Thread {
                shared: &shared,
                pending: &pending,
                fg: true,
                slot: &shared.fg[i],
                kinds: spec.op_names.len().max(1),
                origin,
                start,
                end,
                rate: per_thread_rate,
                catch_up: true,
                seed: crate::rng::derive_seed(spec.seed, &[1, i as u64]),
            };
            let shared = &shared;
            fg_handles.push(scope.spawn(move || match fg(i) {
                Ok(w) => t.run(w),
                Err(e) => {
                    shared.fail(format!("starting worker {i}: {e:#}"));
                    shared.fg_running.fetch_sub(1, Ordering::SeqCst);
                    (Vec::new(), None, None)
                }
            }));
        }
        let bg_handle = match (bg_spec, bg) {
            (Some(b), Some(factory)) => {
                let t = Thread {
                    shared: &shared,
                    pending: &pending,
                    fg: false,
                    slot: &shared.bg,
                    kinds: b.op_names.len().max(1),
                    origin,
                    start,
                    end: None,
                    rate: Some((b.per_sec, false)),
                    catch_up: b.catch_up,
                    seed: crate::rng::derive_seed(spec.seed, &[2, 0]),
                };
                let shared = &shared;
                Some(scope.spawn(move || match factory(0) {
                    Ok(w) => t.run(w),
                    Err(e) => {
                        shared.fail(format!("starting the background writer: {e:#}"));
                        (Vec::new(), None, None)
                    }
                }))
            }
            _ => None,
        };

        // Warm-up: wait for the measured phase, unless the workers finish
        // first or Ctrl-C stops them.
        while Instant::now() < start
            && shared.fg_running.load(Ordering::SeqCst) > 0
            && !INTERRUPTED.load(Ordering::Relaxed)
        {
            if let Some(why) = sink.health() {
                shared.fail(why);
            }
            std::thread::sleep((start - Instant::now()).min(Duration::from_millis(20)));
        }
        let t0 = Instant::now();
        let first = probe.sample(0.0);
        let mut last = first;
        let mut last_counts = (0u64, 0u64, 0u64);
        let mut timeline = Timeline::new();
        let mut idx = 0usize;
        let mut boundary = t0 + spec.interval;
        let mut sink_error: Option<String> = None;
        // Takes the handed-over epochs `keep` selects, by epoch.
        let take = |keep: &dyn Fn(u64) -> bool| -> Vec<(u64, thread::EpochHists)> {
            let mut p = pending.lock().unwrap_or_else(|e| e.into_inner());
            let done: Vec<u64> = p.by_epoch.keys().copied().filter(|e| keep(*e)).collect();
            done.into_iter()
                .filter_map(|e| p.by_epoch.remove(&e).map(|v| (e, v)))
                .collect()
        };
        // Puts an epoch's histograms back, emptied.
        let recycle = |(f, b): thread::EpochHists| {
            let mut p = pending.lock().unwrap_or_else(|e| e.into_inner());
            p.recycle(f);
            p.recycle(b);
        };
        let close = |idx: usize,
                     end_s: Sample,
                     last: &Sample,
                     counts: (u64, u64, u64),
                     prev: (u64, u64, u64),
                     sink: &mut dyn StepSink| {
            let rec = IntervalRecord {
                idx,
                start: *last,
                end: end_s,
                ops: counts.0 - prev.0,
                bg_ops: counts.1 - prev.1,
                written: counts.2 - prev.2,
            };
            sink.interval(&rec)
        };
        loop {
            if let Some(why) = sink.health() {
                shared.fail(why);
            }
            let now = Instant::now();
            let running = shared.fg_running.load(Ordering::SeqCst) > 0;
            let stopping =
                shared.signals.stop.load(Ordering::Relaxed) || INTERRUPTED.load(Ordering::Relaxed);
            if !running || stopping || end.is_some_and(|e| now >= e) {
                break;
            }
            if now >= boundary {
                let s = probe.sample(t0.elapsed().as_secs_f64());
                let counts = shared.totals();
                shared.signals.epoch.store(idx as u64 + 1, Ordering::SeqCst);
                if let Err(e) = close(idx, s, &last, counts, last_counts, sink) {
                    sink_error.get_or_insert(format!("{e:#}"));
                    shared.fail(format!("results: {e:#}"));
                }
                // The interval before this one is complete now: hand it over.
                if idx > 0 {
                    for (e, (f, b)) in take(&|e| e < idx as u64) {
                        let l = named(&spec.op_names, &bg_names, &f, &b);
                        if let Err(err) = sink.interval_latency(e as usize, &l) {
                            sink_error.get_or_insert(format!("{err:#}"));
                        }
                        recycle((f, b));
                    }
                }
                last = s;
                last_counts = counts;
                idx += 1;
                boundary += spec.interval;
                continue;
            }
            let (ops, secs) = (shared.totals().0, now.duration_since(t0).as_secs_f64());
            timeline.push(secs, ops);
            sink.progress(ops, secs);
            std::thread::sleep((boundary - now).min(Duration::from_millis(50)));
        }
        // End of the measured phase (or Ctrl-C): stop everyone, then sample.
        shared.signals.stop.store(true, Ordering::SeqCst);
        shared.signals.bg_stop.store(true, Ordering::SeqCst);
        let mut fg_hists: Vec<Latency> = Vec::new();
        let mut keep = Vec::new();
        let mut last_op: Option<Instant> = None;
        for h in fg_handles {
            if let Ok((v, w, last)) = h.join() {
                merge_into(&mut fg_hists, &v);
                keep.push(w);
                last_op = last_op.max(last);
            } else {
                shared.fail("a worker thread panicked".into());
            }
        }
        // The measured phase ends when the last foreground operation ends
        // (as db_bench times a benchmark), not when this thread notices: it
        // polls every 50 ms, which would add up to 50 ms to every step.
        let secs = match last_op {
            Some(t) if t > t0 => t.duration_since(t0).as_secs_f64(),
            _ => t0.elapsed().as_secs_f64(),
        };
        let mut bg_hists: Vec<Latency> = Vec::new();
        if let Some(h) = bg_handle {
            if let Ok((v, w, _)) = h.join() {
                merge_into(&mut bg_hists, &v);
                keep.push(w);
            }
        }
        // Workers (and a server's connections, whose backends do the work)
        // are still alive here, so the end sample counts them.
        let end_s = probe.sample(secs);
        drop(keep);
        let counts = shared.totals();
        if counts != last_counts || idx == 0 {
            if let Err(e) = close(idx, end_s, &last, counts, last_counts, sink) {
                sink_error.get_or_insert(format!("{e:#}"));
            }
            idx += 1;
        }
        for (e, (f, b)) in take(&|_| true) {
            let l = named(&spec.op_names, &bg_names, &f, &b);
            if let Err(err) = sink.interval_latency((e as usize).min(idx.saturating_sub(1)), &l) {
                sink_error.get_or_insert(format!("{err:#}"));
            }
        }
        StepOutcome {
            start: first,
            end: end_s,
            secs,
            ops: counts.0,
            bg_ops: counts.1,
            written: counts.2,
            latencies: named(&spec.op_names, &bg_names, &fg_hists, &bg_hists),
            intervals: idx,
            timeline: timeline.finish(secs, counts.0),
            error: sink_error,
            interrupted: INTERRUPTED.load(Ordering::Relaxed),
        }
    });
    if outcome.error.is_none() {
        outcome.error = shared.error.lock().ok().and_then(|g| g.clone());
    }
    outcome
}

/// Samples of a step's foreground operations so far, at most
/// [`Timeline::CAP`] of them: when full, every other sample is dropped and
/// the spacing doubles. A long step's timeline then takes a fixed 128 KB
/// (at 50 ms for a whole day it grew by 1.15 MB per hour, a quarter of
/// the client's memory growth in a 30-minute soak), while [`rates`]'
/// about 120 bins and [`slices`]' 10 still get dozens of samples each.
pub(crate) struct Timeline {
    points: Vec<(f64, u64)>,
    /// The least spacing kept (0 until the first thinning).
    gap: f64,
}

impl Timeline {
    /// Samples kept at most.
    pub(crate) const CAP: usize = 8192;

    /// A timeline starting at (0 s, 0 ops).
    pub(crate) fn new() -> Timeline {
        let mut points = Vec::with_capacity(Timeline::CAP);
        points.push((0.0, 0));
        Timeline { points, gap: 0.0 }
    }

    /// Adds a sample (dropped when closer than the spacing kept).
    pub(crate) fn push(&mut self, secs: f64, ops: u64) {
        if self.points.last().is_some_and(|l| secs - l.0 < self.gap) {
            return;
        }
        self.points.push((secs, ops));
        if self.points.len() >= Timeline::CAP {
            let mut i = 0;
            self.points.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            let span = self.points.last().map_or(0.0, |l| l.0) - self.points[0].0;
            self.gap = span / (self.points.len().max(2) - 1) as f64;
        }
    }

    /// The samples, with the step's end as the last.
    pub(crate) fn finish(mut self, secs: f64, ops: u64) -> Vec<(f64, u64)> {
        self.points.push((secs, ops));
        self.points
    }
}

/// Throughput in `n` equal slices of a step of `secs` seconds, from its
/// [`StepOutcome::timeline`] (counts between samples taken as even): the
/// reference insert benchmark's "rate in 10 time slices", which shows a
/// stall a step's mean hides. None when the step is too short for the
/// samples to resolve its slices (under two samples' spacing each).
pub fn slices(timeline: &[(f64, u64)], secs: f64, n: usize) -> Option<Vec<f64>> {
    if n == 0 || secs <= 0.0 || timeline.len() < 2 || secs / (n as f64) < 0.1 {
        return None;
    }
    let w = secs / n as f64;
    let edges: Vec<f64> = (0..=n).map(|k| w * k as f64).collect();
    let c = counts_at(timeline, &edges);
    Some(c.windows(2).map(|c| (c[1] - c[0]) / w).collect())
}

/// Throughput over time at a resolution of its own, independent of the
/// probe interval: the step's [`StepOutcome::timeline`] in bins of a round
/// width (0.1 s, 0.2 s, 0.5 s, 1 s, 2 s, 5 s, 10 s, 30 s, 1 min, 5 min…)
/// chosen for about 120 bins, never under 0.1 s (the collector samples
/// every 50 ms). Returns `(t0, t1, ops/s)` per bin; the last bin ends at
/// `secs`. Empty when the timeline cannot resolve one bin.
pub fn rates(timeline: &[(f64, u64)], secs: f64) -> Vec<(f64, f64, f64)> {
    const NICE: [f64; 12] = [
        0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 600.0, 1800.0,
    ];
    if secs < 0.1 || timeline.len() < 2 {
        return Vec::new();
    }
    let want = (secs / 120.0).max(0.1);
    let w = NICE.iter().copied().find(|w| *w >= want).unwrap_or(3600.0);
    let n = (secs / w).ceil() as usize;
    let edges: Vec<f64> = (0..=n).map(|k| (k as f64 * w).min(secs)).collect();
    let counts = counts_at(timeline, &edges);
    edges
        .windows(2)
        .zip(counts.windows(2))
        .filter(|(e, _)| e[1] - e[0] > 1e-9)
        .map(|(e, c)| (e[0], e[1], (c[1] - c[0]) / (e[1] - e[0])))
        .collect()
}

/// The operation count at each of `ts`, interpolated between the
/// timeline's samples (counts between samples taken as even).
fn counts_at(timeline: &[(f64, u64)], ts: &[f64]) -> Vec<f64> {
    ts.iter()
        .map(|&t| {
            let i = timeline.partition_point(|(s, _)| *s <= t);
            if i == 0 {
                return timeline.first().map_or(0.0, |p| p.1 as f64);
            }
            if i == timeline.len() {
                return timeline[i - 1].1 as f64;
            }
            let ((t0, c0), (t1, c1)) = (timeline[i - 1], timeline[i]);
            let f = if t1 > t0 { (t - t0) / (t1 - t0) } else { 1.0 };
            c0 as f64 + f * (c1 as f64 - c0 as f64)
        })
        .collect()
}

mod thread;

#[cfg(test)]
mod tests;
