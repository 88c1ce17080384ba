//! Repeated runs (`--repeat N`): the repetitions of each (engine, step)
//! collapsed into one step whose figures are their means, with every
//! repetition's value kept for intervals; the table of means with 95%
//! intervals; and ratios with their intervals (ratio of geometric means,
//! paired by repetition, see `metrics::stats`).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::ratio::metric_ratio;
use crate::metrics::LatencySummary;
use crate::metrics::stats::{RatioCi, mean_ci, ratio_ci};
use crate::metrics::{Figure, Metric};
use crate::names::Status;
use crate::results::{RunView, StepView};

/// The run with each (engine, step)'s repetitions collapsed into one step:
/// figures are the means over the repetitions that finished (a failed or
/// interrupted one is left out, and a note says so), `reps` keeps each
/// repetition's value, latency summaries are averaged field by field
/// (counts summed), and the charts' series (intervals, rates, spectra)
/// are the first repetition's. A run without repetitions comes back as is.
pub fn collapse(run: &RunView) -> RunView {
    let mut order: Vec<(String, String)> = Vec::new();
    let mut groups: BTreeMap<(String, String), Vec<&StepView>> = BTreeMap::new();
    for s in &run.steps {
        let k = (s.engine.clone(), s.step.clone());
        if !groups.contains_key(&k) {
            order.push(k.clone());
        }
        groups.entry(k).or_default().push(s);
    }
    if groups.values().all(|g| g.len() < 2) {
        return run.clone();
    }
    let steps = order
        .iter()
        .filter_map(|k| groups.get(k))
        .map(|g| if g.len() < 2 { g[0].clone() } else { merge(g) })
        .collect();
    RunView {
        steps,
        ..run.clone()
    }
}

/// One step from its repetitions.
fn merge(g: &[&StepView]) -> StepView {
    let done: Vec<&StepView> = g
        .iter()
        .copied()
        .filter(|s| s.status == Status::Done)
        .collect();
    let Some(first) = done.first() else {
        // None finished: the first failure stands for them (a group
        // has at least one step).
        let stand_in = g.iter().find(|s| s.error.is_some()).unwrap_or(&g[0]);
        return (*stand_in).clone();
    };
    let mut s = (*first).clone();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let metrics: Vec<Metric> = done
        .iter()
        .flat_map(|s| s.figures.keys().copied())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    for m in metrics {
        let vals: Vec<f64> = done.iter().filter_map(|s| s.fig(m)).collect();
        if vals.is_empty() {
            continue; // the first repetition's note says why
        }
        // The mean of the repetitions that measured it (`reps` holds
        // them, so how many of the finished ones did is known).
        s.figures.insert(m, Figure::Value(mean(&vals)));
        s.reps.insert(m, vals);
    }
    s.secs = Some(mean(
        &done.iter().filter_map(|s| s.secs).collect::<Vec<_>>(),
    ))
    .filter(|v| v.is_finite());
    s.latencies = s
        .latencies
        .iter()
        .map(|(op, _)| {
            let ls: Vec<&LatencySummary> = done
                .iter()
                .filter_map(|s| s.latencies.iter().find(|(o, _)| o == op).map(|(_, l)| l))
                .collect();
            let avg = |f: fn(&LatencySummary) -> f64| {
                ls.iter().map(|l| f(l)).sum::<f64>() / ls.len() as f64
            };
            (
                op.clone(),
                LatencySummary {
                    count: ls.iter().map(|l| l.count).sum(),
                    mean: avg(|l| l.mean),
                    p50: avg(|l| l.p50 as f64).round() as u64,
                    p95: avg(|l| l.p95 as f64).round() as u64,
                    p99: avg(|l| l.p99 as f64).round() as u64,
                    p999: avg(|l| l.p999 as f64).round() as u64,
                    max: ls.iter().map(|l| l.max).max().unwrap_or(0),
                },
            )
        })
        .collect();
    s.extras = crate::record::StepExtras::mean(&done.iter().map(|d| &d.extras).collect::<Vec<_>>());
    let left_out = g.len() - done.len();
    if left_out > 0 {
        s.notes.push(crate::record::Note::Said(format!(
            "{left_out} of {} repetitions did not finish and are left out of the means",
            g.len()
        )));
    }
    s
}

/// A ratio of `s` to `base` for figure `m`: with its 95% interval when
/// both have repetitions, Err as [`metric_ratio`] when there is none.
pub fn ratio(m: Metric, s: &StepView, base: &StepView) -> Result<(f64, Option<RatioCi>), bool> {
    let r = metric_ratio(m, s.fig(m), base.fig(m))?;
    let ci = match (s.reps.get(&m), base.reps.get(&m)) {
        (Some(a), Some(b)) => ratio_ci(a, b),
        _ => None,
    };
    Ok((ci.map_or(r, |c| c.ratio), ci))
}

/// One cell of a ratio table, decided once for every format: each
/// exporter only renders it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RatioCell {
    /// The ratio, and its 95% interval when both steps have repetitions.
    Value(f64, Option<RatioCi>),
    /// The base's figure is below its noise floor: no ratio (`-*`).
    Floored,
    /// Either figure is missing (`-`).
    Missing,
}

impl RatioCell {
    /// The cell of figure `m` for `s` over `base`.
    pub fn of(m: Metric, s: &StepView, base: &StepView) -> RatioCell {
        match ratio(m, s, base) {
            Ok((r, ci)) => RatioCell::Value(r, ci),
            Err(true) => RatioCell::Floored,
            Err(false) => RatioCell::Missing,
        }
    }

    /// True when its interval includes 1: the difference is not
    /// significant (marked `~`).
    pub fn not_significant(&self) -> bool {
        matches!(self, RatioCell::Value(_, Some(ci)) if !ci.significant())
    }

    /// As plain text shows it: `1.23`, `1.23~` when not significant,
    /// `-*` below the floor, `-` when missing.
    pub fn short(&self) -> String {
        match self {
            RatioCell::Value(r, _) if self.not_significant() => format!("{r:.2}~"),
            RatioCell::Value(r, _) => format!("{r:.2}"),
            RatioCell::Floored => "-*".into(),
            RatioCell::Missing => "-".into(),
        }
    }
}

/// The figures the table of means shows: (figure, title, decimals).
const SHOWN: &[(Metric, &str, usize)] = &[
    (Metric::OpsPerSec, "ops/s", 0),
    (Metric::RPerOp, "r/o", 3),
    (Metric::RkbPerOp, "rKB/o", 2),
    (Metric::WkbPerOp, "wKB/o", 2),
    (Metric::CpuUsPerOp, "cpu/o", 1),
    (Metric::CsPerOp, "cs/o", 2),
    (Metric::WriteAmp, "w-amp", 2),
];

/// `mean±half` of a collapsed figure, or its value when it has no
/// interval.
pub fn with_ci(s: &StepView, m: Metric, prec: usize) -> String {
    match (s.reps.get(&m).and_then(|v| mean_ci(v)), s.fig(m)) {
        (Some((mean, half)), _) => format!("{mean:.prec$}±{half:.prec$}"),
        (None, Some(v)) => format!("{v:.prec$}"),
        (None, None) => "-".into(),
    }
}

/// The table of means with their 95% intervals; empty without
/// repetitions.
pub fn render(run: &RunView) -> String {
    let mut o = String::new();
    let with: Vec<&StepView> = run.steps.iter().filter(|s| !s.reps.is_empty()).collect();
    if with.is_empty() {
        return o;
    }
    let n = with
        .iter()
        .filter_map(|s| s.reps.get(&Metric::OpsPerSec).map(Vec::len))
        .max()
        .unwrap_or(0);
    let _ = writeln!(
        o,
        "\nrepeated runs: mean ± half-width of its 95% interval (Student's t) over {n} repetitions"
    );
    let w = with
        .iter()
        .map(|s| s.engine.len())
        .max()
        .unwrap_or(14)
        .max(14);
    let _ = write!(o, "{:<w$} {:<14}", "engine", "step");
    for (_, t, _) in SHOWN {
        let _ = write!(o, " {t:>15}");
    }
    let _ = writeln!(o);
    for s in with {
        let _ = write!(o, "{:<w$} {:<14}", s.engine, s.step);
        for (m, _, p) in SHOWN {
            let _ = write!(o, " {:>15}", with_ci(s, *m, *p));
        }
        let _ = writeln!(o);
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(engine: &str, rep: i64, ops: f64, status: Status) -> StepView {
        StepView {
            id: rep,
            ordinal: rep,
            rep,
            status,
            extras: crate::record::StepExtras::from_rows([("x", ops)]),
            ..StepView::with_figures(engine, "pq.1", &[(Metric::OpsPerSec, ops)])
        }
    }

    #[test]
    fn repetitions_collapse_to_means_and_keep_their_values() {
        let run = RunView {
            steps: vec![
                step("a", 0, 100.0, Status::Done),
                step("b", 0, 50.0, Status::Done),
                step("b", 1, 70.0, Status::Done),
                step("a", 1, 110.0, Status::Done),
                step("a", 2, 1.0, Status::Failed),
                step("b", 2, 60.0, Status::Done),
            ],
            ..RunView::empty()
        };
        let c = collapse(&run);
        assert_eq!(c.steps.len(), 2);
        let a = &c.steps[0];
        assert_eq!(
            a.fig(Metric::OpsPerSec),
            Some(105.0),
            "the failed one left out"
        );
        assert_eq!(a.reps[&Metric::OpsPerSec], vec![100.0, 110.0]);
        assert!(a.notes[0].text().starts_with("1 of 3 repetitions"));
        let b = &c.steps[1];
        assert_eq!(b.fig(Metric::OpsPerSec), Some(60.0));
        assert_eq!(b.extras.rows(), vec![("x".to_string(), 60.0)]);
        // 50, 70, 60: sd 10, half 4.303 × 10 / √3 = 24.84.
        assert_eq!(with_ci(b, Metric::OpsPerSec, 1), "60.0±24.8");
        // a / b unpaired (2 vs 3 values): 105/60 ≈ 1.75 as geometric means.
        let (r, ci) = ratio(Metric::OpsPerSec, a, b).unwrap();
        let ci = ci.unwrap();
        assert!((r - ci.ratio).abs() < 1e-12 && r > 1.6 && r < 1.9, "{r}");
        let t = render(&c);
        assert!(
            t.contains("over 3 repetitions") && t.contains("60±25"),
            "{t}"
        );
        // Without repetitions nothing changes.
        let one = RunView {
            steps: vec![step("a", 0, 1.0, Status::Done)],
            ..RunView::empty()
        };
        assert_eq!(collapse(&one).steps[0].reps.len(), 0);
        assert!(render(&one).is_empty());
    }
}
