//! `--warmup-steady`: a timed step warms up in unrecorded slices until
//! its throughput stops rising (the caches are full, the LSM's shape
//! settled), rather than for a fixed time that may be mostly a cold
//! start on a slow device. Each slice is the step itself, planned and
//! driven for one slice on a stream of its own, so the measured phase
//! does not replay the warm-up's operations.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::Serialize;

use crate::driver::{self, IntervalRecord, StepSink, Stop};
use crate::engine::Engine;
use crate::metrics::Latency;
use crate::probe::Probe;
use crate::rng::derive_seed;
use crate::signals::INTERRUPTED;
use crate::workload::{Step, StepCtx, Workload};

/// The shortest slice: shorter ones are too noisy to compare.
const MIN_SLICE_S: f64 = 5.0;
/// The fewest slices that can be judged steady.
const MIN_SLICES: usize = 3;
/// Steady: a slice at most this much above the slice two before it.
const RISE: f64 = 0.03;
/// The tag of the warm-up slices' streams under the step's seed.
const WARM_STREAM: u64 = 0x3a;

/// How a step warmed up: recorded with it and printed before its line.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub(super) struct Warmed {
    /// Each slice's length, seconds.
    pub slice_s: f64,
    /// Each slice's foreground operations per second, in order.
    pub rates: Vec<f64>,
    /// Seconds spent warming up.
    pub secs: f64,
    /// True when the rate stopped rising; false when the maximum (or
    /// Ctrl-C) ended the warm-up first.
    pub steady: bool,
    /// True when Ctrl-C ended the warm-up.
    pub interrupted: bool,
}

impl Warmed {
    /// The line printed before the step's own.
    pub fn line(&self, label: &str) -> String {
        let rates: Vec<String> = self.rates.iter().map(|r| format!("{r:.0}")).collect();
        format!(
            "  {label}: warmed up {:.0} s, {} (ops/s over {:.0} s slices: {})",
            self.secs,
            if self.steady {
                "until the throughput stopped rising"
            } else if self.interrupted {
                "interrupted (Ctrl-C) before the throughput was steady"
            } else {
                "NOT steady at the --warmup-steady limit: the measured phase starts while it still rises"
            },
            self.slice_s,
            rates.join(", ")
        )
    }
}

/// Whether the rates so far are steady: three slices at least, the last
/// within [`RISE`] of the one two before it (one slice back would stop
/// on a rise that merely pauses), after `min_s` of warm-up.
pub(super) fn steady(rates: &[f64], slice_s: f64, min_s: f64) -> bool {
    let n = rates.len();
    n >= MIN_SLICES && n as f64 * slice_s >= min_s && rates[n - 1] <= rates[n - 3] * (1.0 + RISE)
}

/// The length of a slice: the interval, 5 s at least.
pub(super) fn slice_len(ctx: &StepCtx) -> f64 {
    slice_of(ctx.interval.as_secs_f64())
}

fn slice_of(interval_s: f64) -> f64 {
    interval_s.max(MIN_SLICE_S)
}

/// The shortest `--warmup-steady` that can be judged at `interval_s`:
/// three whole slices.
pub(crate) fn shortest(interval_s: f64) -> f64 {
    MIN_SLICES as f64 * slice_of(interval_s)
}

/// Warms `step` up until [`steady`] or `max_s`; None for a step that is
/// not timed (a load runs once, until its data is in). An error fails
/// the step (a worker's, or the engine's health: its memory limit, a
/// dead device model).
pub(super) fn warm_up(
    step: Step,
    eng: &dyn Engine,
    workload: &dyn Workload,
    probe: &Probe,
    ctx: &StepCtx,
    (min_s, max_s): (f64, f64),
    health: &mut dyn FnMut() -> Option<String>,
) -> anyhow::Result<Option<Warmed>> {
    if !step.repeatable() {
        return Ok(None);
    }
    let slice_s = slice_len(ctx);
    let mut w = Warmed {
        slice_s,
        rates: Vec::new(),
        secs: 0.0,
        steady: false,
        interrupted: false,
    };
    // Whole slices only: a last slice cut short by the limit would be
    // compared with whole ones.
    while (w.rates.len() + 1) as f64 * slice_s <= max_s * (1.0 + 1e-9) {
        if INTERRUPTED.load(Ordering::SeqCst) {
            w.interrupted = true;
            break;
        }
        let k = w.rates.len() as u64;
        let c = StepCtx {
            warmup: Duration::ZERO,
            duration: Duration::from_secs_f64(slice_s),
            seed: derive_seed(ctx.seed, &[WARM_STREAM, k]),
            ..*ctx
        };
        let planned = workload.plan(step, eng.face(), &c)?;
        if !matches!(planned.spec.stop, Stop::Duration(_)) {
            return Ok(None);
        }
        let mut sink = Quiet { health };
        let o = driver::run_step(
            &planned.spec,
            &*planned.fg,
            planned.bg.as_deref(),
            probe,
            &mut sink,
        );
        if let Some(e) = o.error {
            anyhow::bail!("in the warm-up's slice {}: {e}", k + 1);
        }
        if o.interrupted {
            w.interrupted = true;
            break;
        }
        w.secs += o.secs;
        w.rates.push(if o.secs > 0.0 {
            o.ops as f64 / o.secs
        } else {
            0.0
        });
        if steady(&w.rates, slice_s, min_s) {
            w.steady = true;
            break;
        }
    }
    Ok(Some(w))
}

/// A sink that records nothing and only checks the engine's health.
struct Quiet<'h> {
    health: &'h mut dyn FnMut() -> Option<String>,
}

impl StepSink for Quiet<'_> {
    fn interval(&mut self, _: &IntervalRecord) -> anyhow::Result<()> {
        Ok(())
    }
    fn interval_latency(&mut self, _: usize, _: &[(String, Latency)]) -> anyhow::Result<()> {
        Ok(())
    }
    fn health(&mut self) -> Option<String> {
        (self.health)()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_when_a_slice_is_within_3_percent_of_two_before() {
        // Too few slices, whatever they are.
        assert!(!steady(&[100.0, 100.0], 10.0, 0.0));
        // A cold cache filling: still rising.
        assert!(!steady(&[100.0, 300.0, 600.0], 10.0, 0.0));
        assert!(!steady(&[100.0, 300.0, 600.0, 700.0, 800.0], 10.0, 0.0));
        // Flat within 3% over two slices.
        assert!(steady(&[100.0, 300.0, 600.0, 700.0, 610.0], 10.0, 0.0));
        assert!(steady(&[500.0, 520.0, 515.0], 10.0, 0.0));
        // A pause in a rise is not the end of it: 600 → 605 is flat, but
        // 605 is 21% over 500.
        assert!(!steady(&[300.0, 500.0, 600.0, 605.0], 10.0, 0.0));
        // Falling counts as steady (a write stall starts; it will not rise).
        assert!(steady(&[800.0, 700.0, 600.0], 10.0, 0.0));
        // Not before --warmup: 3 slices of 10 s under a 40 s minimum.
        assert!(!steady(&[500.0, 500.0, 500.0], 10.0, 40.0));
        assert!(steady(&[500.0, 500.0, 500.0, 500.0], 10.0, 40.0));
    }

    #[test]
    fn the_line_says_whether_it_settled() {
        let w = Warmed {
            slice_s: 20.0,
            rates: vec![812.4, 1034.0, 1051.0, 1049.0],
            secs: 80.2,
            steady: true,
            interrupted: false,
        };
        assert_eq!(
            w.line("request@disk-array"),
            "  request@disk-array: warmed up 80 s, until the throughput stopped rising (ops/s over 20 s slices: 812, 1034, 1051, 1049)"
        );
        let w = Warmed { steady: false, ..w };
        assert!(w.line("r").contains("NOT steady"), "{}", w.line("r"));
        let w = Warmed {
            interrupted: true,
            ..w
        };
        assert!(
            w.line("r").contains("interrupted (Ctrl-C)"),
            "{}",
            w.line("r")
        );
    }

    #[test]
    fn the_shortest_limit_is_three_whole_slices() {
        assert_eq!(shortest(20.0), 60.0);
        // Slices are 5 s at least.
        assert_eq!(shortest(1.0), 15.0);
    }
}
