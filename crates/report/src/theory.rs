//! Theory beside measurement: every step's measured write-amp and
//! space-amp next to the model's prediction (`pred`), then only the
//! figures where the two differ by more than 2×, with the likely reason
//! (from the step's stored [`ModelCheck`]s; every step's explanation in
//! words stays in its notes: JSON, `run -v`). The model's terms and
//! inputs follow, as recorded with the step.

use std::fmt::Write;

use super::parts::cell;
use super::table::Table;
use crate::check::{ModelCheck, Verdict};
use crate::metrics::Metric;
use crate::record::Note;
use crate::results::{RunView, StepView};

/// The model's predicted write-amp or space-amp of a step.
fn pred(s: &StepView, f: crate::check::ModelFigure) -> Option<f64> {
    s.extras.prediction.map(|p| p.of(f))
}

/// The table, the explain lines and the model's terms; empty when no
/// step has a prediction.
pub fn render(run: &RunView) -> String {
    let mut o = String::new();
    let with: Vec<&StepView> = run
        .steps
        .iter()
        .filter(|s| s.extras.prediction.is_some())
        .collect();
    if with.is_empty() {
        return o;
    }
    let _ = writeln!(
        o,
        "\nwrite-amp and space-amp: measured beside the model's prediction (pred; `ampbench model` shows the formulas)"
    );
    let w = with
        .iter()
        .map(|s| s.engine.len())
        .max()
        .unwrap_or(18)
        .max(18);
    let _ = writeln!(
        o,
        "{:<w$} {:<16} {:>8} {:>8} {:>8} {:>8}",
        "engine", "step", "w-amp", "pred", "s-amp", "pred"
    );
    for s in &with {
        let _ = writeln!(
            o,
            "{:<w$} {:<16} {:>8} {:>8} {:>8} {:>8}",
            s.engine,
            s.step,
            cell(s.fig(Metric::WriteAmp), 2),
            cell(pred(s, crate::check::ModelFigure::WriteAmp), 2),
            cell(s.fig(Metric::SpaceAmp), 2),
            cell(pred(s, crate::check::ModelFigure::SpaceAmp), 2),
        );
    }
    o.push_str(&diverging(run).text());
    let _ = writeln!(
        o,
        "\nthe model's terms and inputs (a step whose are its engine's previous step's is left out)"
    );
    let mut last: Vec<(&str, &str)> = Vec::new();
    for s in &with {
        for n in &s.notes {
            let Note::Model(t) = n else { continue };
            let t = t.as_str();
            match last.iter_mut().find(|(e, _)| *e == s.engine) {
                Some((_, prev)) if *prev == t => continue,
                Some((_, prev)) => *prev = t,
                None => last.push((&s.engine, t)),
            }
            let _ = writeln!(o, "  {} {}: {t}", s.engine, s.step);
        }
    }
    o
}

/// The short report's one line on the model: how many figures differ
/// from the prediction by more than 2×, and where their table is; empty
/// when no step has a prediction.
pub fn diverging_line(run: &RunView) -> String {
    let with: Vec<&StepView> = run
        .steps
        .iter()
        .filter(|s| s.extras.prediction.is_some())
        .collect();
    let all: Vec<_> = with.iter().flat_map(|s| &s.checks).collect();
    if all.is_empty() {
        return String::new();
    }
    let n = all.iter().filter(|k| k.diverges()).count();
    let agree = all.iter().filter(|k| k.verdict == Verdict::Agree).count();
    format!(
        "
the model: {agree} of {} write-amp and space-amp figures agree with its prediction within 2×, {n} differ by more (the others wrote nothing or were not measured); `run -v` or `ampbench report` lists each with its likely reason\n",
        all.len()
    )
}

/// The figures where measured and predicted differ by more than 2×,
/// with the likely reason; consecutive steps of an engine that differ
/// the same way share a row. No rows when no step has a prediction.
pub fn diverging(run: &RunView) -> Table {
    let with: Vec<&StepView> = run
        .steps
        .iter()
        .filter(|s| s.extras.prediction.is_some())
        .collect();
    let n = with
        .iter()
        .flat_map(|s| &s.checks)
        .filter(|k| k.diverges())
        .count();
    let agree = with
        .iter()
        .flat_map(|s| &s.checks)
        .filter(|k| k.verdict == Verdict::Agree)
        .count();
    let mut t = Table::new(
        format!(
            "where measured and predicted differ by more than 2× ({n} of {} figures; {agree} agree within 2×, the others wrote nothing or were not measured)",
            with.iter().map(|s| s.checks.len()).sum::<usize>(),
        ),
        "engine",
    )
    .label("steps")
    .label("figure")
    .figure("measured")
    .figure("pred")
    .figure("measured/")
    .label("likely reason");
    for g in groups(&with) {
        let k = g.check;
        let engine = super::compare::shown(run, g.engine);
        let ratio = k.ratio().map_or("-".into(), |r| {
            if r >= 1.0 {
                format!("{r:.1}× above")
            } else {
                format!("{:.1}× below", 1.0 / r)
            }
        });
        let reason = if k.reason.is_empty() {
            "(not recorded with this run)"
        } else {
            &k.reason
        };
        let steps = match g.n {
            1 => g.first.to_string(),
            n => format!("{}…{} ({n})", g.first, g.last),
        };
        t.row(vec![
            engine,
            steps,
            k.figure.name().to_string(),
            cell(k.measured, 2),
            cell(Some(k.predicted), 2),
            ratio,
            reason.to_string(),
        ]);
    }
    if n == 0 && !with.is_empty() {
        t.notes.push("(none)".into());
    }
    t
}

/// Consecutive steps of one engine whose check of one figure diverges
/// the same way, with the same figures and reason (a read-only step
/// leaves space-amp as the step before left it): one row.
struct Group<'a> {
    engine: &'a str,
    first: &'a str,
    last: &'a str,
    n: usize,
    check: &'a ModelCheck,
}

fn groups<'a>(steps: &[&'a StepView]) -> Vec<Group<'a>> {
    let same = |a: &ModelCheck, b: &ModelCheck| {
        cell(a.measured, 2) == cell(b.measured, 2)
            && cell(Some(a.predicted), 2) == cell(Some(b.predicted), 2)
            && a.verdict == b.verdict
            && a.reason == b.reason
    };
    let mut out: Vec<Group> = Vec::new();
    // Per engine and figure, the group the previous step extended.
    let mut open: Vec<(&str, crate::check::ModelFigure, Option<usize>)> = Vec::new();
    for s in steps {
        for k in &s.checks {
            let slot = match open
                .iter()
                .position(|(e, f, _)| *e == s.engine && *f == k.figure)
            {
                Some(i) => i,
                None => {
                    open.push((&s.engine, k.figure, None));
                    open.len() - 1
                }
            };
            if !k.diverges() {
                open[slot].2 = None;
                continue;
            }
            match open[slot].2 {
                Some(g) if same(out[g].check, k) => {
                    out[g].last = &s.step;
                    out[g].n += 1;
                }
                _ => {
                    out.push(Group {
                        engine: &s.engine,
                        first: &s.step,
                        last: &s.step,
                        n: 1,
                        check: k,
                    });
                    open[slot].2 = Some(out.len() - 1);
                }
            }
        }
    }
    out
}
