//! The HdrHistogram interval log (`.hlog`, read by HdrHistogram's
//! HistogramLogProcessor and by every HdrHistogram library's log reader).

use anyhow::{Context, Result};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};

use crate::compare::title;
use crate::results::{Results, RunView, read};

/// Seconds since the epoch of a stored `YYYY-MM-DDTHH:MM:SSZ` time.
fn epoch_secs(t: &str) -> Option<i64> {
    let n = |a: usize, b: usize| t.get(a..b)?.parse::<i64>().ok();
    let (y, m, d) = (n(0, 4)?, n(5, 7)?, n(8, 10)?);
    let (hh, mm, ss) = (n(11, 13)?, n(14, 16)?, n(17, 19)?);
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3_600 + mm * 60 + ss)
}

/// The run's response times as one HdrHistogram interval log: every
/// interval's histogram of every operation kind, tagged
/// `ENGINE/STEP/OP` (`#N` appended for repetition N > 1; spaces and
/// commas, which tags cannot hold, become `_`). Timestamps are seconds
/// since the run began (the `StartTime` header), values µs, and the
/// `Interval_Max` column is in ms (max value divisor 1000).
pub fn render(results: &Results, run: &RunView) -> Result<String> {
    let c = results.conn();
    let started = |id: i64| -> Result<Option<i64>> {
        let t: String = c
            .query_row("SELECT started FROM steps WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .context("reading a step's start time")?;
        Ok(epoch_secs(&t))
    };
    let run_start = epoch_secs(&run.started).unwrap_or(0);
    let mut out = Vec::new();
    let mut ser = V2DeflateSerializer::new();
    {
        let mut w = IntervalLogWriterBuilder::new()
            .add_comment(&format!(
                "ampbench {} · {} · {} · response times in µs; tags ENGINE/STEP/OP",
                title(run),
                run.workload,
                run.engines
            ))
            .with_start_time(
                std::time::UNIX_EPOCH + std::time::Duration::from_secs(run_start.max(0) as u64),
            )
            .with_max_value_divisor(1000.0)
            .begin_log_with(&mut out, &mut ser)?;
        for s in &run.steps {
            let offset = started(s.id)?.map_or(0, |t| (t - run_start).max(0)) as f64;
            for (idx, op, h) in interval_histograms(results, s)? {
                let Some(iv) = s.intervals.iter().find(|i| i.idx == idx) else {
                    continue;
                };
                let rep = if s.rep > 0 {
                    format!("#{}", s.rep + 1)
                } else {
                    String::new()
                };
                let tag = format!("{}/{}/{op}{rep}", s.engine, s.step).replace([' ', ','], "_");
                let at = std::time::Duration::from_secs_f64(offset + iv.t0.max(0.0));
                let len = std::time::Duration::from_secs_f64((iv.t1 - iv.t0).max(0.0));
                w.write_histogram(h.histogram(), at, len, Tag::new(&tag))
                    .map_err(|e| anyhow::anyhow!("writing the interval log: {e:?}"))?;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// A step's per-interval histograms `(interval, op, histogram)`; for a
/// step merged from several clients, theirs merged on the run's timeline
/// (each client's intervals shifted as the merged intervals are).
fn interval_histograms(
    results: &Results,
    s: &crate::results::read::StepView,
) -> Result<Vec<(i64, String, crate::metrics::Latency)>> {
    if s.members.is_empty() {
        return read::histograms(results, s.id, None);
    }
    let mut all: std::collections::BTreeMap<(i64, String), crate::metrics::Latency> =
        Default::default();
    for (id, by) in &s.members {
        for (idx, op, h) in read::histograms(results, *id, None)? {
            match all.entry((idx + by, op)) {
                std::collections::btree_map::Entry::Occupied(mut e) => e.get_mut().merge(&h),
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(h);
                }
            }
        }
    }
    Ok(all.into_iter().map(|((i, op), h)| (i, op, h)).collect())
}

/// The interval log.
pub struct Hlog;

impl crate::Exporter for Hlog {
    fn name(&self) -> &'static str {
        "hlog"
    }
    fn about(&self) -> &'static str {
        "HdrHistogram interval log of every step's response times"
    }
    fn render(&self, run: &RunView, on: &crate::Inputs<'_>) -> anyhow::Result<String> {
        render(on.results, run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_times_convert_to_epoch_seconds() {
        assert_eq!(epoch_secs("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(epoch_secs("2000-03-01T00:00:01Z"), Some(951_868_801));
        assert_eq!(epoch_secs("2026-11-24T15:42:57Z"), Some(1_795_534_977));
        assert_eq!(epoch_secs("garbage"), None);
    }
}
