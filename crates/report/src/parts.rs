//! What the full report (`text`) and the short one (`summary`) both
//! print (the header, the workload's notes, the `note:` lines), and how a
//! cell of their tables is written.

use std::fmt::Write;

use super::compare::{failures, title};
use crate::results::RunView;

/// A figure with `prec` decimals, or `-` when it was not measured.
pub fn cell(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.prec$}"))
}

/// Bytes as GB with 3 decimals, or `-` when not measured.
pub fn gb(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.3}", v / 1e9))
}

/// The run's first lines: which run, workload, engines, seed, start and
/// status, then what each corner ran with.
pub fn header(run: &RunView) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} · {} · {} · seed {} · {} · {}",
        title(run),
        run.workload,
        run.engines,
        run.seed,
        run.started,
        run.status
    );
    for c in &run.corners {
        let _ = writeln!(o, "  {c}");
    }
    if let Some(c) = &run.clients {
        let _ = writeln!(
            o,
            "  {} clients (run name {}): each step's figures are theirs merged; each client's rows are at the end",
            c.clients, c.name
        );
    }
    o
}

/// An extra figure: whole numbers without decimals.
pub fn extra_value(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// What the workload said of each step (consistency, concurrency).
pub fn workload_notes(run: &RunView) -> String {
    let mut o = String::new();
    let workload_note = |n: &&crate::record::Note| !n.is_model();
    if run
        .steps
        .iter()
        .any(|s| s.notes.iter().any(|n| workload_note(&n)))
    {
        let _ = writeln!(o, "\nworkload notes");
        for s in &run.steps {
            for n in s.notes.iter().filter(workload_note) {
                let _ = writeln!(o, "{:<15} {:<10} {}", s.engine, s.step, n.text());
            }
        }
    }
    o
}

/// `note:` lines: every failed step, then `more` (figures not measured
/// and why).
pub fn notes(run: &RunView, more: &[String]) -> String {
    let mut o = String::new();
    let failed = failures(run);
    if !failed.is_empty() || !more.is_empty() {
        let _ = writeln!(o);
        for f in failed.iter().chain(more.iter()) {
            let _ = writeln!(o, "note: {f}");
        }
    }
    o
}
