//! Exports in the ecosystem's formats: Markdown tables in the seeds' shape
//! (to paste into an issue or a post), and HdrHistogram interval logs
//! (`.hlog`, read by HdrHistogram's HistogramLogProcessor and by every
//! HdrHistogram library's log reader).

use std::fmt::Write as _;

use anyhow::{Context, Result};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};

use super::compare::{engines, failures, find, floor, steps, title};
use super::repeat;
use crate::metrics::Metric;
use crate::results::{Results, RunView, read};

/// The figures of the Markdown efficiency and ratio tables.
const FIGURES: &[(Metric, &str, usize)] = &[
    (Metric::OpsPerSec, "ops/s", 0),
    (Metric::DbBytes, "db GB", 3),
    (Metric::RPerOp, "r/o", 3),
    (Metric::RkbPerOp, "rKB/o", 3),
    (Metric::WkbPerOp, "wKB/o", 3),
    (Metric::CsPerOp, "cs/o", 2),
    (Metric::CpuUsPerOp, "cpu µs/o", 1),
    (Metric::SpaceAmp, "s-amp", 2),
    (Metric::WriteAmp, "w-amp", 2),
];

/// A Markdown table cell: `|` escaped.
fn md(s: &str) -> String {
    s.replace('|', "\\|")
}

fn row(o: &mut String, cells: &[String]) {
    let _ = writeln!(o, "| {} |", cells.join(" | "));
}

fn rule(o: &mut String, n: usize, first_left: usize) {
    let cells: Vec<&str> = (0..n)
        .map(|i| if i < first_left { "---" } else { "---:" })
        .collect();
    let _ = writeln!(o, "|{}|", cells.join("|"));
}

/// The run as Markdown: a header line, throughput per step, efficiency
/// per operation, and ratios to `base` (repetitions as means with their
/// intervals, ratios below their floor as `-*`, not-significant ones
/// with `~`).
pub fn markdown(run: &RunView, base: Option<&str>) -> String {
    let run = &repeat::collapse(run);
    let (es, ss) = (engines(run), steps(run));
    let mut o = String::new();
    let _ = writeln!(
        o,
        "**ampbench {}** · {} · {} · seed {} · {} · {}\n",
        title(run),
        md(&run.workload),
        md(&run.engines),
        run.seed,
        run.started,
        run.status
    );
    let _ = writeln!(o, "Operations/second for each step\n");
    let mut head = vec!["step".to_string()];
    head.extend(es.iter().map(|e| md(e)));
    row(&mut o, &head);
    rule(&mut o, head.len(), 1);
    for st in &ss {
        let mut cells = vec![md(st)];
        for e in &es {
            cells.push(
                find(run, e, st).map_or("-".into(), |s| repeat::with_ci(s, Metric::OpsPerSec, 0)),
            );
        }
        row(&mut o, &cells);
    }
    let _ = writeln!(o, "\nEfficiency per operation\n");
    let mut head = vec!["engine".to_string(), "step".to_string()];
    head.extend(FIGURES.iter().map(|f| f.1.to_string()));
    row(&mut o, &head);
    rule(&mut o, head.len(), 2);
    for s in &run.steps {
        let mut cells = vec![md(&s.engine), md(&s.step)];
        for (m, _, p) in FIGURES {
            let v = if *m == Metric::DbBytes {
                s.fig(*m).map_or("-".into(), |v| format!("{:.3}", v / 1e9))
            } else {
                repeat::with_ci(s, *m, *p)
            };
            cells.push(v);
        }
        row(&mut o, &cells);
    }
    let base = base.map(str::to_string).or_else(|| es.first().cloned());
    if let Some(b) = base.filter(|_| es.len() > 1) {
        let _ = writeln!(o, "\nRatios to {} (same step; above 1 is more)\n", md(&b));
        row(&mut o, &head);
        rule(&mut o, head.len(), 2);
        let (mut floored, mut ns) = (false, false);
        for s in run.steps.iter().filter(|s| s.engine != b) {
            let Some(bs) = find(run, &b, &s.step) else {
                continue;
            };
            let mut cells = vec![md(&s.engine), md(&s.step)];
            for (m, _, _) in FIGURES {
                cells.push(match repeat::ratio(*m, s, bs) {
                    Ok((r, Some(ci))) => {
                        let mark = if ci.significant() {
                            ""
                        } else {
                            ns = true;
                            "~"
                        };
                        format!("{r:.2}{mark} ({:.2}–{:.2})", ci.lo, ci.hi)
                    }
                    Ok((r, None)) => format!("{r:.2}"),
                    Err(true) => {
                        floored = true;
                        "-*".into()
                    }
                    Err(false) => "-".into(),
                });
            }
            row(&mut o, &cells);
        }
        if ns {
            let _ = writeln!(
                o,
                "\n~ the ratio's 95% interval (in brackets) includes 1: not significant."
            );
        }
        if floored {
            let mut why: Vec<&str> = Vec::new();
            for (_, w) in FIGURES.iter().filter_map(|(m, _, _)| floor(*m)) {
                if !why.contains(&w) {
                    why.push(w);
                }
            }
            let _ = writeln!(
                o,
                "\n-* the base's figure is below its noise floor ({}): no ratio.",
                why.join("; ")
            );
        }
    }
    for f in failures(run) {
        let _ = writeln!(o, "\n> {}", md(&f));
    }
    o
}

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
pub fn hlog(results: &Results, run: &RunView) -> Result<String> {
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
