//! `--sweep` tables: one per step, a row per setting, with throughput,
//! KB written per operation, measured write-amp and, for RocksDB and
//! MyRocks, each column family's write-amp in the step (its flush +
//! compaction bytes / its flush bytes) and what it wrote, as seed 004
//! compares compaction_pri settings; then the most over the least total
//! writes.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::parts::cell;
use crate::metrics::Metric;
use crate::results::{RunView, StepView};

/// Column families whose flushes a step records.
fn cfs(s: &StepView) -> Vec<String> {
    s.extras
        .families
        .iter()
        .filter(|(_, f)| f.flush_mb.is_some())
        .map(|(cf, _)| cf.clone())
        .collect()
}

/// A table row: the setting's label, its leading figures, and per column
/// family (flush, compaction, memtable) MB.
type Row<'a> = (&'a str, String, Vec<(f64, f64, f64)>);

/// A column family's cell: write-amp (MB written + MB in the memtable).
fn cf_cell(flush: f64, comp: f64, mem: f64) -> String {
    let wa = if flush > 0.0 {
        format!("{:.2}", (flush + comp) / flush)
    } else {
        "-".into()
    };
    format!("{wa} ({:.1}+{mem:.1})", flush + comp)
}

/// Prints one table: a row per (label, per-CF flush, compaction, memtable
/// MB) with the figures `lead` gives; returns the total MB per label.
fn table<'a>(
    o: &mut String,
    rows: &[Row<'a>],
    lead_head: &str,
    cfs: &[String],
) -> Vec<(f64, &'a str)> {
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(10).max(10);
    let _ = write!(o, "  {:<w$} {lead_head} {:>9}", "setting", "cf MB");
    for cf in cfs {
        let _ = write!(o, " {cf:>22}");
    }
    let _ = writeln!(o);
    let mut totals = Vec::new();
    for (label, lead, per) in rows {
        let total: f64 = per.iter().map(|(f, c, _)| f + c).sum();
        let _ = write!(o, "  {label:<w$} {lead} {total:>9.1}");
        for (f, c, m) in per {
            let _ = write!(o, " {:>22}", cf_cell(*f, *c, *m));
        }
        let _ = writeln!(o);
        if total > 0.0 {
            totals.push((total, *label));
        }
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
    totals
}

/// (flush, compaction, memtable) MB of `cf` in a step.
fn cf_mb(s: &StepView, cf: &str) -> (f64, f64, f64) {
    let f = s.extras.families.get(cf).copied().unwrap_or_default();
    let g = |v: Option<f64>| v.unwrap_or(0.0);
    (g(f.flush_mb), g(f.compaction_mb), g(f.memtable_mb))
}

/// The tables; empty for a run without `--sweep`.
// Long: the sweep's tables, one per step with a row per setting, then the
// whole run's; they share the column families that wrote anything.
pub fn render(run: &RunView) -> String {
    let mut o = String::new();
    if run.recorded.sweep.is_empty() {
        return o;
    }
    let mut names: Vec<&str> = Vec::new();
    let mut labels: Vec<&str> = Vec::new();
    for s in &run.steps {
        if s.step != "open" && !names.contains(&s.step.as_str()) {
            names.push(&s.step);
        }
        if !labels.contains(&s.engine.as_str()) {
            labels.push(&s.engine);
        }
    }
    // Column families that wrote or held anything in some step (an empty
    // memtable reports its arena, a few KB).
    let all: Vec<String> = run
        .steps
        .iter()
        .flat_map(cfs)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|cf| {
            run.steps.iter().any(|s| {
                let (f, c, m) = cf_mb(s, cf);
                f + c > 0.0 || m > 0.05
            })
        })
        .collect();
    let _ = writeln!(
        o,
        "\nsweep: a row per setting; per column family: write-amp in the step (flush + compaction bytes / flush bytes; - before a flush) and (MB written + MB still in its memtables)"
    );
    for name in &names {
        let _ = writeln!(o, "{name}");
        let rows: Vec<Row> = run
            .steps
            .iter()
            .filter(|s| s.step == *name)
            .map(|s| {
                let lead = format!(
                    "{:>9} {:>8} {:>7}",
                    cell(s.fig(Metric::OpsPerSec), 0),
                    cell(s.fig(Metric::WkbPerOp), 3),
                    cell(s.fig(Metric::WriteAmp), 2)
                );
                (
                    s.engine.as_str(),
                    lead,
                    all.iter().map(|cf| cf_mb(s, cf)).collect(),
                )
            })
            .collect();
        let head = format!("{:>9} {:>8} {:>7}", "ops/s", "wKB/o", "w-amp");
        table(&mut o, &rows, &head, &all);
    }
    if all.is_empty() {
        return o;
    }
    // The whole engine run: the steps' writes added up (memtables at the end).
    let _ = writeln!(
        o,
        "whole run (every step of a setting added up, as the seed's totals)"
    );
    let rows: Vec<Row> = labels
        .iter()
        .map(|l| {
            let steps: Vec<&StepView> = run.steps.iter().filter(|s| s.engine == *l).collect();
            let per = all
                .iter()
                .map(|cf| {
                    let (f, c) = steps.iter().fold((0.0, 0.0), |a, s| {
                        let (f, c, _) = cf_mb(s, cf);
                        (a.0 + f, a.1 + c)
                    });
                    (f, c, steps.last().map_or(0.0, |s| cf_mb(s, cf).2))
                })
                .collect();
            (*l, String::new(), per)
        })
        .collect();
    let compacted: f64 = rows.iter().flat_map(|r| r.2.iter().map(|x| x.1)).sum();
    table(&mut o, &rows, "", &all);
    if compacted == 0.0 {
        let _ = writeln!(
            o,
            "  no column family was compacted under any setting: the options swept had nothing to act on; give the run more data or smaller memtables (bench/seed-004-compaction-pri.sh scales them down)"
        );
    }
    o
}
