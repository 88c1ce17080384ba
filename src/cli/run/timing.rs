//! The run's times, rate and thread levels from the merged settings,
//! each checked with a one-line error naming its flag.

use super::{MAX_THREADS, MIN_INTERVAL, RATE_RANGE, positive, shown};
use crate::UsageError;
use crate::plan::Settings;
use crate::units::MAX_SECS;
use crate::workload::WorkloadKind;

/// A step's length, its slices and its sampling interval, seconds.
pub(super) struct Timing {
    /// `--duration`.
    pub(super) duration: f64,
    /// `--slice`, when given.
    pub(super) slice: Option<f64>,
    /// `--interval`, or a sixth of the slice (at most 10 s), or 10 s.
    pub(super) interval: f64,
}

/// `--rate`, when given, within [`RATE_RANGE`].
pub(super) fn rate(s: &Settings) -> Result<(), UsageError> {
    match s.rate {
        Some(r) if !(r.is_finite() && r >= RATE_RANGE.0 && r <= RATE_RANGE.1) => {
            Err(UsageError(format!(
                "--rate {}: must be {} to {} ops/s",
                shown(r),
                RATE_RANGE.0,
                shown(RATE_RANGE.1)
            )))
        }
        _ => Ok(()),
    }
}

/// The thread levels (`--threads 1,4,16`): each 1 to [`MAX_THREADS`], one
/// level for the insert benchmark.
pub(super) fn levels(s: &Settings, workload: WorkloadKind) -> Result<Vec<usize>, UsageError> {
    let levels = match &s.threads {
        crate::plan::Threads::One(n) => vec![*n],
        crate::plan::Threads::Many(v) => v.clone(),
    };
    if levels.is_empty() || levels.iter().any(|&l| l == 0 || l > MAX_THREADS) {
        return Err(UsageError(format!(
            "--threads: every level must be 1 to {MAX_THREADS}"
        )));
    }
    if workload == WorkloadKind::Insert && levels.len() > 1 {
        return Err(UsageError(format!(
            "--threads {}: the insert benchmark's clients own a table each, so one run has one client count; run each count on its own (bench/seed-001-insert.sh runs 1, 2, 4 and 8)",
            levels
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join(",")
        )));
    }
    Ok(levels)
}

/// `--duration`, `--slice` and `--interval`, and the warm-up flags
/// against them.
pub(super) fn timing(s: &Settings) -> Result<Timing, UsageError> {
    let duration = positive("duration", s.duration)?;
    let slice = s.slice.map(|v| positive("slice", v)).transpose()?;
    let interval = match (s.interval, slice) {
        (Some(i), _) if i < MIN_INTERVAL => {
            return Err(UsageError(format!(
                "--interval {}: at least {MIN_INTERVAL} s",
                shown(i)
            )));
        }
        (Some(i), _) => positive("interval", i)?,
        (None, Some(sl)) => (sl / 6.0).min(10.0),
        (None, None) => 10.0,
    };
    if let Some(sl) = slice {
        if sl < interval {
            return Err(UsageError(format!(
                "--slice {sl}s is shorter than --interval {interval}s: a slice is made of whole intervals"
            )));
        }
    }
    warmup(s, interval)?;
    Ok(Timing {
        duration,
        slice,
        interval,
    })
}

/// `--warmup`, and `--warmup-steady` against it, the rate, the clients
/// and the interval.
fn warmup(s: &Settings, interval: f64) -> Result<(), UsageError> {
    if !(0.0..=MAX_SECS).contains(&s.warmup) {
        return Err(UsageError(format!(
            "--warmup {}: must be 0 to {MAX_SECS} seconds (366 days)",
            shown(s.warmup)
        )));
    }
    let Some(m) = s.warmup_steady else {
        return Ok(());
    };
    // A fixed rate holds the throughput flat from the start, and several
    // clients would each judge their own: refused rather than judged
    // wrong.
    if s.rate.is_some() || s.clients > 1 {
        return Err(UsageError(format!(
            "--warmup-steady {}: judged by throughput, so not with --rate or --clients (use --warmup)",
            shown(m)
        )));
    }
    if !(m > 0.0 && m <= MAX_SECS) || m < s.warmup {
        return Err(UsageError(format!(
            "--warmup-steady {}: must be more than 0, at least --warmup ({}) and at most {MAX_SECS} seconds",
            shown(m),
            shown(s.warmup)
        )));
    }
    // Slices are whole: the limit's whole slices must hold three and
    // --warmup, or the warm-up would end short of either.
    let least = crate::runner::shortest_warmup_steady(interval);
    let slice = least / 3.0;
    let whole = (m / slice + 1e-9).floor() * slice;
    if whole < least.max(s.warmup) {
        return Err(UsageError(format!(
            "--warmup-steady {}: its whole slices of --interval ({} s, 5 s at least) must hold three and --warmup ({} s): {} s at least",
            shown(m),
            shown(interval),
            shown(s.warmup),
            least.max((s.warmup / slice - 1e-9).ceil() * slice)
        )));
    }
    Ok(())
}
