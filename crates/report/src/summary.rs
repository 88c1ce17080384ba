//! The short report `run` prints at its end: the tables of the full text
//! report, each as one figure per step (rows) and engine (columns), so a
//! run of six engines and thirteen steps reads in one screen a table.
//! Every figure per engine and step stays in `ampbench report` (and in
//! `run -v`'s closing report).

use super::compare::{base_pairs, by_corner, corner_pairs, engines, find, floor, shown, steps};
use super::repeat::RatioCell;
use super::table::Table;
use crate::check::ModelFigure;
use crate::metrics::Metric;
use crate::names::Status;
use crate::record::SLICES;
use crate::results::{RunView, StepView};

/// The short report: the run's header, then the tables of [`tables`].
pub fn render(run: &RunView, base: Option<&str>) -> String {
    let mut o = super::parts::header(run);
    o.push_str(&legend(run).text());
    for t in tables(run, base) {
        o.push_str(&t.text());
    }
    // Tables of other workloads and options, as the full report shows
    // them: they are short (one row per step of one kind).
    o.push_str(&super::steps::render_insert(run));
    o.push_str(&super::repeat::render(run));
    o.push_str(&super::slices::render(run));
    o.push_str(&super::sweep::render(run));
    // The model's divergences in one line: their table is in the full
    // report (`run -v`, `ampbench report`).
    o.push_str(&super::theory::diverging_line(run));
    o.push_str(&super::parts::workload_notes(run));
    o.push_str(&super::parts::notes(run, &[]));
    o.push_str(&super::concurrency::render(run));
    o.push_str(&super::clients::render(run));
    o
}

/// What each step that ran does, once (its name is all the tables
/// show): the first engine's record of it.
pub(super) fn legend(run: &RunView) -> Table {
    let mut t = Table::new("steps", "step").label("what it does");
    for st in steps(run) {
        let about = run
            .steps
            .iter()
            .filter(|s| s.step == st)
            .find_map(|s| s.about.clone());
        if let Some(a) = about {
            t.row(vec![st, a.trim_end_matches('.').replace('`', "")]);
        }
    }
    t
}

/// A figure of a step, formatted.
pub(super) type Cell<'a> = &'a dyn Fn(&StepView) -> Option<String>;

/// Steps as rows and engines as columns; `keep_empty` keeps a step no
/// engine has a cell for (as `-`).
fn pivot(run: &RunView, title: &str, keep_empty: bool, f: Cell) -> Table {
    pivot_as(run, title, keep_empty, true, f)
}

/// [`pivot`], with consecutive steps of the same cells in one row only
/// when `collapse`.
pub(super) fn pivot_as(
    run: &RunView,
    title: &str,
    keep_empty: bool,
    collapse: bool,
    f: Cell,
) -> Table {
    let es = engines(run);
    let mut t = Table::new(title, "step");
    for e in &es {
        t = t.figure(shown(run, e));
    }
    // Consecutive steps with the same cells share a row (`pqw.1…rq.n`):
    // a read-only step leaves sizes and space-amp as they were.
    let mut last: Option<String> = None;
    for st in steps(run) {
        let cells: Vec<Option<String>> = es.iter().map(|e| find(run, e, &st).and_then(f)).collect();
        if !keep_empty && cells.iter().all(Option::is_none) {
            last = None;
            continue;
        }
        let cells: Vec<String> = cells
            .into_iter()
            .map(|c| c.unwrap_or_else(|| "-".into()))
            .collect();
        if let (true, Some(first), Some(prev)) = (collapse, &last, t.rows.last_mut()) {
            if prev[1..] == cells[..] {
                prev[0] = format!("{first}…{st}");
                continue;
            }
        }
        last = Some(st.clone());
        let mut row = vec![st];
        row.extend(cells);
        t.row(row);
    }
    t
}

/// The size table's title (both reports have it).
pub(super) const SIZE_TITLE: &str = "size in GB after each step (allocated/apparent)";

/// A step's database size, allocated/apparent, in GB.
pub(super) fn size(s: &StepView) -> Option<String> {
    let gb = super::parts::gb;
    Some(format!(
        "{}/{}",
        gb(s.fig(Metric::DbBytes)),
        gb(s.fig(Metric::DbApparentBytes))
    ))
}

pub(super) fn fig(m: Metric, prec: usize) -> impl Fn(&StepView) -> Option<String> {
    move |s| s.fig(m).map(|v| format!("{v:.prec$}"))
}

/// The short report's tables, in the full report's order.
pub fn tables(run: &RunView, base: Option<&str>) -> Vec<Table> {
    let mut v = vec![
        ops(run),
        pivot(
            run,
            "calls/second where a call is several operations (a batch, or a range query)",
            false,
            &|s| s.extras.harness.calls_per_sec.map(|v| format!("{v:.0}")),
        ),
        pivot(run, SIZE_TITLE, true, &size),
    ];
    // Efficiency: one figure a table (title, figure, decimals, whether
    // a step no engine has it for keeps its row).
    for (title, m, prec, keep) in [
        ("device reads per operation (r/o)", Metric::RPerOp, 3, true),
        (
            "KB written to the device per operation (wKB/o)",
            Metric::WkbPerOp,
            3,
            true,
        ),
        (
            "CPU µs per operation of the engine's process (cpu/o)",
            Metric::CpuUsPerOp,
            0,
            true,
        ),
        (
            "client CPU µs per operation (ampbench's own process, server engines)",
            Metric::ClientCpuUsPerOp,
            1,
            false,
        ),
    ] {
        v.push(pivot(run, title, keep, &fig(m, prec)));
    }
    v.push(amp(
        run,
        Metric::WriteAmp,
        ModelFigure::WriteAmp,
        "write-amp",
    ));
    v.push(amp(
        run,
        Metric::SpaceAmp,
        ModelFigure::SpaceAmp,
        "space-amp",
    ));
    if let Some(b) = base
        .map(str::to_string)
        .or_else(|| engines(run).first().cloned())
    {
        v.push(ratios(run, &b));
    }
    v.push(p99(run));
    v.push(pivot(
        run,
        &format!(
            "steadiness: the lowest of {SLICES} equal slices of a step over the highest (ops/s)"
        ),
        false,
        &|s| {
            let r = &s.extras.harness.slices;
            let max = r.iter().cloned().fold(0.0, f64::max);
            let min = r.iter().cloned().fold(f64::INFINITY, f64::min);
            (r.len() == SLICES && max > 0.0).then(|| format!("{:.2}", min / max))
        },
    ));
    v.push(workload_figures(run));
    v
}

/// ops/s per step and engine; a step that did not finish is marked `!`,
/// one in which no operation finished is `none` (with a note saying in
/// how long).
fn ops(run: &RunView) -> Table {
    let mut t = pivot(run, "operations/second", true, &|s| {
        let v = s.fig(Metric::OpsPerSec)?;
        let mark = if s.status == Status::Done { "" } else { "!" };
        if none_finished(s) {
            return Some(format!("none{mark}"));
        }
        Some(format!("{v:.0}{mark}"))
    });
    if t.rows.iter().flatten().any(|c| c.ends_with('!')) {
        t.notes
            .push("!: the step failed or was stopped (see the note: lines below)".into());
    }
    for s in run.steps.iter().filter(|s| none_finished(s)) {
        t.notes.push(format!(
            "none: {} {}: no operation finished in {:.0} s (its ratios are left empty)",
            shown(run, &s.engine),
            s.step,
            s.secs.unwrap_or(0.0)
        ));
    }
    t
}

/// True for a step that ran and in which no operation finished: its
/// ops/s is 0, and a ratio to it or of it says nothing.
pub(super) fn none_finished(s: &StepView) -> bool {
    s.fig(Metric::OpsPerSec) == Some(0.0)
}

/// Measured amplification with the model's prediction in brackets (none
/// for an engine the model has no prediction for).
fn amp(run: &RunView, m: Metric, pred: ModelFigure, name: &str) -> Table {
    pivot(
        run,
        &format!("{name} measured (the model's prediction; `ampbench model` shows the formulas)"),
        false,
        &|s| match (s.fig(m), s.extras.prediction.map(|p| p.of(pred))) {
            (Some(v), Some(p)) => Some(format!("{v:.2} ({p:.2})")),
            (Some(v), None) => Some(format!("{v:.2}")),
            (None, _) => None,
        },
    )
}

/// A ratio of ops/s, `-*` below the floor, `~` when not significant;
/// none when either step finished no operation.
fn ops_ratio(s: &StepView, b: &StepView) -> Option<String> {
    if none_finished(s) || none_finished(b) {
        return None;
    }
    match RatioCell::of(Metric::OpsPerSec, s, b) {
        RatioCell::Missing => None,
        c => Some(c.short()),
    }
}

/// ops/s ratios in one table: each engine of `base`'s corner over
/// `base`, then (runs merged by corner) each engine of a later corner
/// over itself in the first corner.
fn ratios(run: &RunView, base: &str) -> Table {
    let mut pairs = base_pairs(run, base);
    let (more, first) = corner_pairs(run);
    pairs.extend(more);
    let title = if by_corner(run) {
        format!(
            "ops/s: ratios to {} among engines of the same memory, and per engine of IO-bound to {} (IO-bound ENGINE / {} ENGINE); above 1 is faster",
            shown(run, base),
            first.map_or("", |c| c.in_words()),
            first.map_or("", |c| c.in_words())
        )
    } else {
        format!("ops/s: ratios to {base}; above 1 is faster")
    };
    // A column is named by its engine; `ENGINE/BASE` when two would
    // share a name (a --base in a later corner).
    let named = |e: &String| pairs.iter().filter(|(x, _)| x == e).count() > 1;
    let mut t = Table::new(title, "step");
    for (e, b) in &pairs {
        t = t.figure(if named(e) {
            format!("{}/{}", shown(run, e), shown(run, b))
        } else {
            shown(run, e)
        });
    }
    if pairs.is_empty() {
        return t;
    }
    for st in steps(run) {
        let mut row = vec![st.clone()];
        for (e, b) in &pairs {
            let r = find(run, e, &st)
                .zip(find(run, b, &st))
                .and_then(|(s, b)| ops_ratio(s, b));
            row.push(r.unwrap_or_else(|| "-".into()));
        }
        t.row(row);
    }
    if t.rows.iter().flatten().any(|c| c.ends_with('~')) {
        t.notes.push(
            "~: the ratio's 95% interval includes 1: the difference is not significant".into(),
        );
    }
    if t.rows.iter().flatten().any(|c| c == "-*") {
        if let Some((_, why)) = floor(Metric::OpsPerSec) {
            t.notes.push(format!("-*: below the noise floor ({why})"));
        }
    }
    t
}

/// p99 response time per step and kind of operation, per engine.
fn p99(run: &RunView) -> Table {
    let es = engines(run);
    let mut t = Table::new(
        "p99 response time in µs per operation (count, mean, p50…max: ampbench report)",
        "step",
    )
    .label("op");
    for e in &es {
        t = t.figure(shown(run, e));
    }
    for st in steps(run) {
        let mut ops: Vec<&str> = Vec::new();
        for e in &es {
            if let Some(s) = find(run, e, &st) {
                for (op, _) in &s.latencies {
                    if !ops.contains(&op.as_str()) {
                        ops.push(op);
                    }
                }
            }
        }
        for op in ops {
            let mut row = vec![st.clone(), op.to_string()];
            for e in &es {
                let l = find(run, e, &st)
                    .and_then(|s| s.latencies.iter().find(|(o, _)| o == op))
                    .map(|(_, l)| l.p99.to_string());
                row.push(l.unwrap_or_else(|| "-".into()));
            }
            t.row(row);
        }
    }
    t
}

/// The workload's own figures (links per node, background ops…), one
/// row per step and figure. The memory cgroup's per step are left out:
/// the run's line for each engine gives their peak and total.
fn workload_figures(run: &RunView) -> Table {
    let es = engines(run);
    let mut t = Table::new("workload figures", "step").label("figure");
    for e in &es {
        t = t.figure(shown(run, e));
    }
    for st in steps(run) {
        let mut keys: Vec<String> = Vec::new();
        for e in &es {
            if let Some(s) = find(run, e, &st) {
                for (k, _) in s.extras.shown_with_workload(false) {
                    if !keys.contains(&k) {
                        keys.push(k);
                    }
                }
            }
        }
        for k in keys {
            let mut row = vec![st.clone(), k.clone()];
            for e in &es {
                let v = find(run, e, &st).and_then(|s| s.extras.named(&k));
                row.push(v.map_or("-".into(), super::parts::extra_value));
            }
            t.row(row);
        }
    }
    t
}

/// The short text report.
pub struct Summary;

impl crate::Exporter for Summary {
    fn name(&self) -> &'static str {
        "summary"
    }
    fn about(&self) -> &'static str {
        "The short text report `run` prints: one figure per step and engine in each table"
    }
    fn render(&self, run: &RunView, on: &crate::Inputs<'_>) -> anyhow::Result<String> {
        let t = render(&crate::repeat::collapse(run), on.base);
        Ok(crate::with_post(run, t, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 47: a step in which no operation finished says so under
    /// the table, and its ratio is left empty (not 0.00).
    #[test]
    fn a_step_with_no_operation_says_so() {
        let mut slow = StepView::with_figures("lmdb", "ows.1", &[(Metric::OpsPerSec, 0.0)]);
        slow.secs = Some(1.0);
        let run = RunView {
            steps: vec![
                StepView::with_figures("rocksdb", "ows.1", &[(Metric::OpsPerSec, 1686.0)]),
                slow,
            ],
            ..RunView::empty()
        };
        let t = ops(&run);
        assert_eq!(t.rows, vec![vec!["ows.1", "1686", "none"]]);
        assert!(
            t.notes.iter().any(|n| n
                == "none: lmdb ows.1: no operation finished in 1 s (its ratios are left empty)"),
            "{:?}",
            t.notes
        );
        let r = ratios(&run, "rocksdb");
        assert_eq!(r.rows, vec![vec!["ows.1", "-"]]);
    }
}
