//! Theory beside measurement: every step's measured write-amp and
//! space-amp next to the model's prediction (`pred`), and per step one
//! `explain` line: which term dominates, and whether the two agree
//! within 2× (if not, the likely reason). The model's terms and inputs
//! follow, as recorded with the step.

use std::fmt::Write;

use super::text::cell;
use crate::metrics::Metric;
use crate::results::{RunView, StepView};
use crate::runner::{EXPLAIN_NOTE, MODEL_NOTE};

fn extra(s: &StepView, name: &str) -> Option<f64> {
    s.extras.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
}

/// True for a note the model wrote (shown here, not among the
/// workload's notes).
pub fn is_model_note(n: &str) -> bool {
    n.starts_with(MODEL_NOTE) || n.starts_with(EXPLAIN_NOTE)
}

/// The table, the explain lines and the model's terms; empty when no
/// step has a prediction.
pub fn render(run: &RunView) -> String {
    let mut o = String::new();
    let with: Vec<&StepView> = run
        .steps
        .iter()
        .filter(|s| extra(s, "pred_write_amp").is_some())
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
            cell(extra(s, "pred_write_amp"), 2),
            cell(s.fig(Metric::SpaceAmp), 2),
            cell(extra(s, "pred_space_amp"), 2),
        );
    }
    let _ = writeln!(o, "\nexplain");
    for s in &with {
        for n in s.notes.iter().filter(|n| n.starts_with(EXPLAIN_NOTE)) {
            let _ = writeln!(o, "  {} {}: {}", s.engine, s.step, &n[EXPLAIN_NOTE.len()..]);
        }
    }
    let _ = writeln!(
        o,
        "\nthe model's terms and inputs (a step whose are its engine's previous step's is left out)"
    );
    let mut last: Vec<(&str, &str)> = Vec::new();
    for s in &with {
        for n in s.notes.iter().filter(|n| n.starts_with(MODEL_NOTE)) {
            let t = &n[MODEL_NOTE.len()..];
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
