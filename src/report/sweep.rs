//! `--sweep` tables: one per step, a row per setting, with throughput,
//! KB written per operation, measured write-amp and, for RocksDB and
//! MyRocks, each column family's write-amp in the step (its flush +
//! compaction bytes / its flush bytes) and what it wrote, as seed 004
//! compares compaction_pri settings; then the most over the least total
//! writes.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::text::cell;
use crate::metrics::Metric;
use crate::results::{RunView, StepView};

fn extra(s: &StepView, name: &str) -> Option<f64> {
    s.extras.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
}

/// Column families named in a step's extras (`cf.NAME.flush_mb`).
fn cfs(s: &StepView) -> Vec<String> {
    s.extras
        .iter()
        .filter_map(|(k, _)| k.strip_prefix("cf.")?.strip_suffix(".flush_mb"))
        .map(str::to_string)
        .collect()
}

/// The tables; empty for a run without `--sweep`.
pub fn render(run: &RunView) -> String {
    let mut o = String::new();
    let swept = run.config["sweep"]
        .as_array()
        .is_some_and(|a| !a.is_empty());
    if !swept {
        return o;
    }
    let mut names: Vec<&str> = Vec::new();
    for s in &run.steps {
        if s.step != "open" && !names.contains(&s.step.as_str()) {
            names.push(&s.step);
        }
    }
    let _ = writeln!(
        o,
        "\nsweep: a row per setting; per column family: write-amp in the step (flush + compaction bytes / flush bytes) and MB written"
    );
    for name in names {
        let rows: Vec<&StepView> = run.steps.iter().filter(|s| s.step == name).collect();
        let all: BTreeSet<String> = rows.iter().flat_map(|s| cfs(s)).collect();
        let _ = writeln!(o, "{name}");
        let w = rows
            .iter()
            .map(|s| s.engine.len())
            .max()
            .unwrap_or(10)
            .max(10);
        let _ = write!(
            o,
            "  {:<w$} {:>9} {:>8} {:>7} {:>9}",
            "setting", "ops/s", "wKB/o", "w-amp", "cf MB"
        );
        for cf in &all {
            let _ = write!(o, " {:>16}", cf);
        }
        let _ = writeln!(o);
        let mut totals: Vec<(f64, &str)> = Vec::new();
        for s in &rows {
            let total: f64 = cfs(s)
                .iter()
                .map(|cf| {
                    extra(s, &format!("cf.{cf}.flush_mb")).unwrap_or(0.0)
                        + extra(s, &format!("cf.{cf}.compaction_mb")).unwrap_or(0.0)
                })
                .sum();
            let _ = write!(
                o,
                "  {:<w$} {:>9} {:>8} {:>7} {:>9}",
                s.engine,
                cell(s.fig(Metric::OpsPerSec), 0),
                cell(s.fig(Metric::WkbPerOp), 3),
                cell(s.fig(Metric::WriteAmp), 2),
                if all.is_empty() {
                    "-".into()
                } else {
                    format!("{total:.1}")
                },
            );
            if total > 0.0 {
                totals.push((total, &s.engine));
            }
            for cf in &all {
                let wa = extra(s, &format!("cf.{cf}.w_amp"));
                let mb = extra(s, &format!("cf.{cf}.flush_mb")).unwrap_or(0.0)
                    + extra(s, &format!("cf.{cf}.compaction_mb")).unwrap_or(0.0);
                let v = match wa {
                    Some(a) => format!("{a:.2} ({mb:.1})"),
                    None if mb > 0.0 => format!("- ({mb:.1})"),
                    None => "-".into(),
                };
                let _ = write!(o, " {v:>16}");
            }
            let _ = writeln!(o);
        }
        totals.sort_by(|a, b| a.0.total_cmp(&b.0));
        if let (Some(lo), Some(hi)) = (totals.first(), totals.last()) {
            if totals.len() > 1 {
                let _ = writeln!(
                    o,
                    "  most/least column-family writes: {:.2}× ({} {:.1} MB / {} {:.1} MB)",
                    hi.0 / lo.0,
                    hi.1,
                    hi.0,
                    lo.1,
                    lo.0
                );
            }
        }
    }
    o
}
