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

#![warn(missing_docs)]

// The crates below, under the module names the code has always used:
// `crate::metrics` is the ampbench-metrics crate (Cargo.toml lists them).
use ampbench_core::{record, rng, signals};
use ampbench_metrics as metrics;
use ampbench_probe as probe;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::metrics::Latency;
use crate::probe::{Probe, Sample};
use collect::Collector;
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

/// The gaps between the operations of a fixed arrival rate: the one
/// shape of `--arrival`, a plan's `arrival` and the driver's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Gaps {
    /// Exponential gaps.
    #[default]
    Poisson,
    /// Equal gaps.
    Uniform,
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
        /// The gaps between them.
        gaps: Gaps,
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
            out.push((crate::record::background_op(n), l.clone()));
        }
    }
    out
}

/// Runs one step to its end (or its first error, or Ctrl-C), feeding the
/// sink as intervals close, and returns what it measured.
// Long: the driver's step: threads started, intervals closed and fed to the
// sink, Ctrl-C and errors, threads joined; one scope holds the threads and
// what they share.
pub fn run_step<'w>(
    spec: &StepSpec,
    fg: &WorkerFactory<'w>,
    bg: Option<&WorkerFactory<'w>>,
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
        Arrival::Fixed { per_sec, gaps } => Some((per_sec / threads as f64, gaps)),
    };

    let mut outcome = std::thread::scope(|scope| {
        let fg_handles: Vec<_> = (0..threads)
            .map(|i| {
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
                spawn(scope, t, fg, i)
            })
            .collect();
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
                    rate: Some((b.per_sec, Gaps::Uniform)),
                    catch_up: b.catch_up,
                    seed: crate::rng::derive_seed(spec.seed, &[2, 0]),
                };
                Some(spawn(scope, t, factory, 0))
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
        let mut c = Collector::start(spec, probe, &shared, &pending, &bg_names);
        while c.turn(end, sink) {}
        // End of the measured phase (or Ctrl-C): stop everyone, then sample.
        shared.signals.stop.store(true, Ordering::SeqCst);
        shared.signals.bg_stop.store(true, Ordering::SeqCst);
        let j = join(fg_handles, bg_handle, &shared);
        // The measured phase ends when the last foreground operation ends
        // (as db_bench times a benchmark), not when this thread notices: it
        // polls every 50 ms, which would add up to 50 ms to every step.
        let secs = match j.last_op {
            Some(t) if t > c.t0 => t.duration_since(c.t0).as_secs_f64(),
            _ => c.t0.elapsed().as_secs_f64(),
        };
        // Workers (and a server's connections, whose backends do the work)
        // are still alive here, so the end sample counts them.
        let end_s = probe.sample(secs);
        drop(j.keep);
        let counts = c.finish(end_s, sink);
        StepOutcome {
            start: c.first,
            end: end_s,
            secs,
            ops: counts.0,
            bg_ops: counts.1,
            written: counts.2,
            latencies: named(&spec.op_names, &bg_names, &j.fg, &j.bg),
            intervals: c.idx,
            timeline: c.timeline.finish(secs, counts.0),
            error: c.sink_error,
            interrupted: INTERRUPTED.load(Ordering::Relaxed),
        }
    });
    if outcome.error.is_none() {
        outcome.error = shared.error.lock().ok().and_then(|g| g.clone());
    }
    outcome
}

/// Starts thread `i` of a step (the background writer: a background
/// `t`) with the worker `factory` makes, or fails the step with why the
/// worker could not be made.
fn spawn<'scope, 'env, 'w>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    t: Thread<'env>,
    factory: &'env WorkerFactory<'w>,
    i: usize,
) -> std::thread::ScopedJoinHandle<'scope, thread::Ran<'w>>
where
    'w: 'scope,
{
    scope.spawn(move || match factory(i) {
        Ok(w) => t.run(w),
        Err(e) => {
            let shared = t.shared;
            if t.fg {
                shared.fail(format!("starting worker {i}: {e:#}"));
                shared.fg_running.fetch_sub(1, Ordering::SeqCst);
            } else {
                shared.fail(format!("starting the background writer: {e:#}"));
            }
            (Vec::new(), None, None)
        }
    })
}

/// What a step's threads left once joined: their histograms, their
/// workers (kept alive until the end sample), when the last foreground
/// operation ended.
struct Joined<'w> {
    fg: Vec<Latency>,
    bg: Vec<Latency>,
    keep: Vec<Option<Box<dyn Worker + 'w>>>,
    last_op: Option<Instant>,
}

/// Joins the foreground threads, then the background writer (stopped
/// before this), noting a thread that panicked.
fn join<'w>(
    fg: Vec<std::thread::ScopedJoinHandle<'_, thread::Ran<'w>>>,
    bg: Option<std::thread::ScopedJoinHandle<'_, thread::Ran<'w>>>,
    shared: &Shared,
) -> Joined<'w> {
    let mut j = Joined {
        fg: Vec::new(),
        bg: Vec::new(),
        keep: Vec::new(),
        last_op: None,
    };
    for h in fg {
        if let Ok((v, w, last)) = h.join() {
            merge_into(&mut j.fg, &v);
            j.keep.push(w);
            j.last_op = j.last_op.max(last);
        } else {
            shared.fail("a worker thread panicked".into());
        }
    }
    if let Some(h) = bg {
        if let Ok((v, w, _)) = h.join() {
            merge_into(&mut j.bg, &v);
            j.keep.push(w);
        }
    }
    j
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

mod collect;
mod thread;

#[cfg(test)]
mod tests;
