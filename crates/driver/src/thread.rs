//! The measured path: one worker thread of a step, and what it shares with
//! the collector. Everything here runs per operation, so it touches as few
//! cache lines as it can (docs/design.md, driver).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::Worker;
use crate::metrics::{Latency, Recorder};
use crate::probe::mono_ns;
use crate::rng::Rng;

/// One thread's counters, alone in their cache line (only that thread
/// writes them).
#[repr(align(128))]
#[derive(Default)]
pub(super) struct Slot {
    pub(super) ops: AtomicU64,
    pub(super) written: AtomicU64,
}

/// What every thread reads before each operation, alone in its cache line:
/// the collector writes it a few times per step, so it stays in every
/// core's cache and costs the measured path one line.
#[repr(align(128))]
pub(super) struct Signals {
    /// Foreground threads stop (end of the phase, an error, Ctrl-C).
    pub(super) stop: AtomicBool,
    /// The background writer stops.
    pub(super) bg_stop: AtomicBool,
    /// The current interval.
    pub(super) epoch: AtomicU64,
}

/// What the collector and the threads of one step share.
pub(super) struct Shared {
    pub(super) signals: Signals,
    pub(super) fg_running: AtomicUsize,
    pub(super) fg: Vec<Slot>,
    pub(super) bg: Slot,
    pub(super) error: Mutex<Option<String>>,
}

impl Shared {
    /// Records the first error and stops every thread.
    pub(super) fn fail(&self, e: String) {
        if let Ok(mut g) = self.error.lock() {
            g.get_or_insert(e);
        }
        self.signals.stop.store(true, Ordering::SeqCst);
        self.signals.bg_stop.store(true, Ordering::SeqCst);
    }
    /// Foreground ops, background ops, and bytes written so far.
    pub(super) fn totals(&self) -> (u64, u64, u64) {
        let ops = self.fg.iter().map(|s| s.ops.load(Ordering::Relaxed)).sum();
        let w: u64 = self
            .fg
            .iter()
            .map(|s| s.written.load(Ordering::Relaxed))
            .sum();
        let bw = self.bg.written.load(Ordering::Relaxed);
        (ops, self.bg.ops.load(Ordering::Relaxed), w + bw)
    }
}

/// An interval's histograms from one thread: (epoch, foreground?, per kind).
/// One epoch's histograms: foreground and background, one per kind.
pub(super) type EpochHists = (Vec<Latency>, Vec<Latency>);

/// The interval histograms threads hand over, by epoch (foreground, then
/// background, one per operation kind), and emptied ones for reuse: the
/// collector writes an epoch once every thread has handed it over, then
/// puts its histograms back, so a run's intervals allocate nothing after
/// the first few.
#[derive(Default)]
pub(super) struct Pending {
    pub(super) by_epoch: std::collections::BTreeMap<u64, EpochHists>,
    pub(super) free: Vec<Vec<Latency>>,
}

impl Pending {
    /// Epoch `e`'s histograms (made, or taken from the free list).
    fn slot(&mut self, e: u64) -> &mut EpochHists {
        if !self.by_epoch.contains_key(&e) {
            let f = self.free.pop().unwrap_or_default();
            let b = self.free.pop().unwrap_or_default();
            self.by_epoch.insert(e, (f, b));
        }
        self.by_epoch.entry(e).or_default()
    }

    /// Gives emptied histograms back for reuse.
    pub(super) fn recycle(&mut self, mut v: Vec<Latency>) {
        v.iter_mut().for_each(Latency::reset);
        self.free.push(v);
    }
}

/// Converts between the step's `Instant`s and [`mono_ns`] readings: both
/// are CLOCK_MONOTONIC, so one pair read together gives the offset (to
/// within the tens of ns between the two reads).
struct Clock {
    i0: Instant,
    t0: u64,
}

impl Clock {
    fn new() -> Clock {
        let i0 = Instant::now();
        Clock { i0, t0: mono_ns() }
    }
    fn ns(&self, i: Instant) -> u64 {
        match i.checked_duration_since(self.i0) {
            Some(d) => self.t0 + d.as_nanos() as u64,
            None => self.t0.saturating_sub((self.i0 - i).as_nanos() as u64),
        }
    }
    fn instant(&self, ns: u64) -> Instant {
        self.i0 + Duration::from_nanos(ns.saturating_sub(self.t0))
    }
}

/// Sleeps until `t` (ns, [`mono_ns`]): the OS sleep for most of the wait,
/// a short spin for the last 30 µs so scheduled starts are kept closely.
fn sleep_until(t: u64) {
    loop {
        let now = mono_ns();
        if now >= t {
            return;
        }
        let left = t - now;
        if left > 80_000 {
            std::thread::sleep(Duration::from_nanos(left - 50_000));
        } else if left > 30_000 {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

/// One worker thread of a step: the measured path.
pub(super) struct Thread<'s> {
    pub(super) shared: &'s Shared,
    pub(super) pending: &'s Mutex<Pending>,
    pub(super) fg: bool,
    pub(super) slot: &'s Slot,
    pub(super) kinds: usize,
    pub(super) origin: Instant,
    pub(super) start: Instant,
    pub(super) end: Option<Instant>,
    pub(super) rate: Option<(f64, super::Gaps)>,
    /// Under a rate: make up for calls a stall missed (see
    /// `Background::catch_up`).
    pub(super) catch_up: bool,
    pub(super) seed: u64,
}

impl Thread<'_> {
    /// Runs the worker; returns its histograms, the worker itself, so it
    /// (and any server connection it holds) outlives the end sample, and
    /// when its last operation ended.
    /// Sends interval `epoch`'s histograms to the collector and adds them
    /// to the step's; the recorders start empty.
    fn hand_over(&self, epoch: u64, int: &mut [Recorder], step: &mut Vec<Latency>) {
        if step.len() < int.len() {
            step.resize(int.len(), Latency::new());
        }
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let slot = p.slot(epoch);
        let acc = if self.fg { &mut slot.0 } else { &mut slot.1 };
        if acc.len() < int.len() {
            acc.resize(int.len(), Latency::new());
        }
        for ((r, a), s) in int.iter_mut().zip(acc.iter_mut()).zip(step.iter_mut()) {
            r.drain_into(&mut [a, s]);
        }
    }

    // Long: a worker thread's loop, on the measured path of every operation:
    // recorders, the interval hand-over, pacing and stopping share its locals.
    pub(super) fn run<'w>(self, mut w: Box<dyn Worker + 'w>) -> Ran<'w> {
        // Each operation is recorded once, by the interval's recorders
        // (usually one counter of a flat array); their histograms are added
        // to the step's when the interval is handed over, so the measured
        // path touches one line for the response time, not a histogram's
        // three for each of the interval and the step.
        let mut step = vec![Latency::new(); self.kinds];
        let mut int = vec![Recorder::new(); self.kinds];
        let mut epoch = 0u64;
        let mut rng = Rng::new(self.seed);
        let clock = Clock::new();
        let mut next = clock.ns(self.origin);
        let (start, end) = (clock.ns(self.start), self.end.map(|e| clock.ns(e)));
        let signals = &self.shared.signals;
        // The collector turns Ctrl-C into `stop`, so one flag is read per
        // operation.
        let stop = if self.fg {
            &signals.stop
        } else {
            &signals.bg_stop
        };
        // This thread's totals, published to its slot after each operation
        // by plain stores (only this thread writes the slot).
        let (mut ops, mut written) = (0u64, 0u64);
        // In closed loop an operation starts when the previous one ends, so
        // the previous end time is the next start: one clock read per
        // operation (clock reads are not free in a VM). After work of the
        // harness's own (an interval handed over) the clock is read again, so
        // that work is not charged to the next operation.
        let mut last_end: Option<u64> = None;
        let mut reuse: Option<u64> = None;
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let now = match (self.rate, reuse) {
                (None, Some(t)) => t,
                _ => mono_ns(),
            };
            if end.is_some_and(|e| now >= e) {
                break;
            }
            let intended = match self.rate {
                None => now,
                Some((per_sec, gaps)) => {
                    if !self.catch_up && next < now {
                        // Behind: the missed calls are lost, the schedule
                        // starts again from now.
                        next = now;
                    }
                    let t = next;
                    let gap = match gaps {
                        super::Gaps::Poisson => rng.exponential(1.0 / per_sec),
                        super::Gaps::Uniform => 1.0 / per_sec,
                    };
                    next += (gap * 1e9) as u64;
                    if t > now {
                        if end.is_some_and(|e| t >= e) {
                            break;
                        }
                        sleep_until(t);
                    }
                    t
                }
            };
            let r = w.op();
            let done_at = mono_ns();
            last_end = Some(done_at);
            reuse = last_end;
            match r {
                Err(e) => {
                    self.shared.fail(format!("{e:#}"));
                    break;
                }
                Ok(None) => break,
                Ok(Some(d)) => {
                    if intended < start {
                        continue; // warm-up: run, do not record
                    }
                    let e = signals.epoch.load(Ordering::Relaxed);
                    if e != epoch {
                        self.hand_over(epoch, &mut int, &mut step);
                        epoch = e;
                        reuse = None;
                    }
                    let us = done_at.saturating_sub(intended) / 1000;
                    int[d.kind.min(self.kinds - 1)].record(us);
                    ops += d.ops;
                    self.slot.ops.store(ops, Ordering::Relaxed);
                    if d.written > 0 {
                        written += d.written;
                        self.slot.written.store(written, Ordering::Relaxed);
                    }
                }
            }
        }
        self.hand_over(epoch, &mut int, &mut step);
        if self.fg {
            self.shared.fg_running.fetch_sub(1, Ordering::SeqCst);
        }
        (step, Some(w), last_end.map(|t| clock.instant(t)))
    }
}

/// What a thread hands back: its step histograms, its worker, and when its
/// last operation ended.
pub(super) type Ran<'w> = (Vec<Latency>, Option<Box<dyn Worker + 'w>>, Option<Instant>);

/// Adds per-kind histograms into `acc`, growing it as needed.
pub(super) fn merge_into(acc: &mut Vec<Latency>, add: &[Latency]) {
    if acc.len() < add.len() {
        acc.resize(add.len(), Latency::new());
    }
    for (a, b) in acc.iter_mut().zip(add) {
        a.merge(b);
    }
}
