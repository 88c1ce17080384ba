//! The Markdown report: tables in the seeds' shape, to paste into an
//! issue or a post.

use std::fmt::Write as _;

use super::compare::{engines, failures, find, floor, steps, title};
use super::repeat::{self, RatioCell};
use crate::metrics::Metric;
use crate::results::RunView;

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
// Long: the Markdown report's sections in the text report's order, each a
// table or a list.
pub fn render(run: &RunView, base: Option<&str>) -> String {
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
                let c = RatioCell::of(*m, s, bs);
                ns |= c.not_significant();
                floored |= c == RatioCell::Floored;
                cells.push(match c {
                    RatioCell::Value(_, Some(ci)) => {
                        format!("{} ({:.2}–{:.2})", c.short(), ci.lo, ci.hi)
                    }
                    _ => c.short(),
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

/// Markdown tables.
pub struct Markdown;

impl crate::Exporter for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }
    fn about(&self) -> &'static str {
        "Markdown tables, to paste into an issue or a post"
    }
    fn render(&self, run: &RunView, on: &crate::Inputs<'_>) -> anyhow::Result<String> {
        Ok(crate::with_post(run, render(run, on.base), true))
    }
}
