//! Which charts the HTML page draws, from the stored figures: throughput
//! per step, throughput over time, response-time spectra, efficiency
//! normalised to the base engine, size and RSS, amplification beside the
//! model, and concurrency curves with their fit. `charts.rs` draws them.

use super::charts::{self, Bar, Series};
use super::compare::{find, floor, metric_ratio};
use crate::check::ModelFigure;
use crate::metrics::{Metric, stats, usl};
use crate::results::{RunView, StepView};

/// The configuration a chart's title names: workload, the step's threads
/// (when the chart is of one step), bound.
pub fn config(run: &RunView) -> String {
    step_config(run, None)
}

/// [`config`] for a chart of one step: with the threads it ran.
pub fn step_config(run: &RunView, step: Option<&str>) -> String {
    let mut parts = vec![run.workload.clone()];
    let threads = step.and_then(|st| run.steps.iter().find(|s| s.step == st)?.threads);
    if let Some(t) = threads {
        parts.push(format!("{t} thread{}", if t == 1 { "" } else { "s" }));
    }
    // Merged corners name theirs in the engine labels.
    if let Some(b) = run.recorded.bound.filter(|_| run.corners.is_empty()) {
        parts.push(b.name().to_string());
    }
    parts.join(", ")
}

/// Per-engine bars over the steps for one figure (scaled by `div`).
fn per_step(
    run: &RunView,
    es: &[String],
    ss: &[String],
    value: impl Fn(&StepView) -> Option<f64>,
    mark: impl Fn(&StepView) -> Option<f64>,
) -> Vec<Series<Vec<Bar>>> {
    es.iter()
        .enumerate()
        .map(|(i, e)| Series {
            label: e.clone(),
            colour: i,
            data: ss
                .iter()
                .map(|st| {
                    find(run, e, st).map_or(Bar::default(), |s| Bar {
                        value: value(s),
                        mark: mark(s),
                        err: None,
                    })
                })
                .collect(),
        })
        .collect()
}

/// Operations/s per step per engine: (linear, log) charts.
pub fn throughput(run: &RunView, es: &[String], ss: &[String]) -> Option<(String, String)> {
    let mut series = per_step(run, es, ss, |s| s.fig(Metric::OpsPerSec), |_| None);
    // Repetitions: the mean's 95% interval as a whisker.
    let mut any = false;
    for s in &mut series {
        for (bar, st) in s.data.iter_mut().zip(ss) {
            let ci = find(run, &s.label, st)
                .and_then(|v| v.reps.get(&Metric::OpsPerSec))
                .and_then(|v| stats::mean_ci(v));
            if let Some((m, h)) = ci {
                bar.err = Some(((m - h).max(m * 1e-3), m + h));
                any = true;
            }
        }
    }
    let t = format!(
        "operations/s per step ({}){}",
        config(run),
        if any { ", 95% intervals" } else { "" }
    );
    let lin = charts::bars(&t, "ops/s", ss, &series, false, None)?;
    let log = charts::bars(&format!("{t}, log scale"), "ops/s", ss, &series, true, None)?;
    Some((lin, log))
}

/// Throughput over time in one step, a line per engine: the step's rates
/// (finer than its intervals), or its intervals for runs recorded before
/// rates were.
pub fn over_time(run: &RunView, step: &str, es: &[String]) -> Option<String> {
    let series: Vec<Series<Vec<(f64, f64)>>> = es
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let s = find(run, e, step)?;
            let data: Vec<(f64, f64)> = if s.rates.is_empty() {
                s.intervals
                    .iter()
                    .filter_map(|iv| Some((iv.t1, iv.figures.get(&Metric::OpsPerSec)?.value()?)))
                    .collect()
            } else {
                // A point at each bin's middle.
                s.rates
                    .iter()
                    .map(|(a, b, v)| ((a + b) / 2.0, *v))
                    .collect()
            };
            (!data.is_empty()).then(|| Series {
                label: e.clone(),
                colour: i,
                data,
            })
        })
        .collect();
    let width = es
        .iter()
        .filter_map(|e| find(run, e, step))
        .find_map(|s| s.rates.first().map(|(a, b, _)| b - a));
    // Lines twenty times apart (a cached corner beside an IO-bound
    // one) go on a log axis, or the lower ones lie flat on zero.
    let medians: Vec<f64> = series.iter().filter_map(|s| median(&s.data)).collect();
    let lo = medians.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = medians.iter().copied().fold(0.0, f64::max);
    let log = lo > 0.0 && hi / lo > 20.0;
    let t = format!(
        "{step}: operations/s over time{}{} ({})",
        if log { ", log scale" } else { "" },
        width.map_or(String::new(), |w| format!(", {w} s bins")),
        step_config(run, Some(step))
    );
    charts::lines(&t, "seconds into the step", "ops/s", &series, log)
}

/// The median of a line's values; None for an empty line.
fn median(data: &[(f64, f64)]) -> Option<f64> {
    let mut v: Vec<f64> = data.iter().map(|p| p.1).filter(|y| y.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// The response-time percentile spectrum of each operation kind of one
/// step, a line per engine.
pub fn spectra(run: &RunView, step: &str, es: &[String]) -> Vec<String> {
    let mut ops: Vec<String> = Vec::new();
    for e in es {
        if let Some(s) = find(run, e, step) {
            for (op, _) in &s.spectra {
                if !ops.contains(op) {
                    ops.push(op.clone());
                }
            }
        }
    }
    ops.iter()
        .filter_map(|op| {
            let series: Vec<Series<Vec<(f64, u64)>>> = es
                .iter()
                .enumerate()
                .filter_map(|(i, e)| {
                    let s = find(run, e, step)?;
                    let (_, sp) = s.spectra.iter().find(|(o, _)| o == op)?;
                    Some(Series {
                        label: e.clone(),
                        colour: i,
                        data: sp.clone(),
                    })
                })
                .collect();
            charts::spectrum(
                &format!(
                    "{step} · {op}: response time by percentile ({})",
                    config(run)
                ),
                &series,
            )
        })
        .collect()
}

/// The efficiency figures normalised to the base engine.
const EFFICIENCY: &[(Metric, &str)] = &[
    (Metric::RPerOp, "r/o"),
    (Metric::RkbPerOp, "rKB/o"),
    (Metric::WkbPerOp, "wKB/o"),
    (Metric::CpuUsPerOp, "cpu/o"),
    (Metric::CsPerOp, "cs/o"),
];

/// Efficiency of one step as bars of engine / base (log axis, bars from
/// 1), with the figures left out because the base is below its floor.
// Long: one step's efficiency chart: each engine against its corner's base,
// the figures whose base is below its floor left out and listed.
pub fn efficiency(
    run: &RunView,
    step: &str,
    es: &[String],
    base: &str,
) -> Option<(String, Vec<String>)> {
    // Runs merged by corner compare each engine with the base engine of
    // its own corner (io:lmdb with io:rocksdb), as the text report does.
    let corners = super::compare::by_corner(run);
    let base_label = run.label(base);
    let base_of = |e: &str| -> String {
        if corners {
            base_label.in_corner(run.label(e).corner).to_string()
        } else {
            base.to_string()
        }
    };
    let mut bases: Vec<String> = es.iter().map(|e| base_of(e)).collect();
    bases.dedup();
    let bss: Vec<&StepView> = bases.iter().filter_map(|b| find(run, b, step)).collect();
    let first = bss.first()?;
    let mut skipped = Vec::new();
    let groups: Vec<(Metric, &str)> = EFFICIENCY
        .iter()
        .copied()
        .filter(|(m, t)| {
            if bss
                .iter()
                .any(|b| metric_ratio(*m, Some(1.0), b.fig(*m)).is_ok())
            {
                return true;
            }
            let below = metric_ratio(*m, Some(1.0), first.fig(*m)) == Err(true);
            skipped.push(match (below, floor(*m)) {
                (true, Some((_, why))) => format!("{t} (the base's is {why})"),
                _ => format!("{t} (not measured for the base)"),
            });
            false
        })
        .collect();
    let series: Vec<Series<Vec<Bar>>> = es
        .iter()
        .enumerate()
        .filter(|(_, e)| !bases.contains(e))
        .filter_map(|(i, e)| {
            let s = find(run, e, step)?;
            let bs = find(run, &base_of(e), step)?;
            Some(Series {
                label: e.clone(),
                colour: i,
                data: groups
                    .iter()
                    .map(|(m, _)| {
                        let r = super::repeat::ratio(*m, s, bs).ok();
                        Bar {
                            value: r.map(|r| r.0),
                            mark: None,
                            err: r.and_then(|r| r.1).map(|c| (c.lo, c.hi)),
                        }
                    })
                    .collect(),
            })
        })
        .collect();
    let names: Vec<String> = groups.iter().map(|(_, t)| t.to_string()).collect();
    let against = if corners && bases.len() > 1 {
        format!("{} (same corner)", base_label.engine)
    } else {
        base.to_string()
    };
    let svg = charts::bars(
        &format!(
            "{step}: cost per operation relative to {against} ({})",
            step_config(run, Some(step))
        ),
        &format!("× {against}"),
        &names,
        &series,
        true,
        Some(1.0),
    )?;
    Some((svg, skipped))
}

/// Database size and RSS across the steps, bars per engine.
pub fn sizes(run: &RunView, es: &[String], ss: &[String]) -> Vec<String> {
    let gb = |m: Metric| move |s: &StepView| s.fig(m).map(|v| v / 1e9);
    [
        (Metric::DbBytes, "database size after each step"),
        (
            Metric::RssBytes,
            "RSS of the engine's process at each step's end",
        ),
    ]
    .iter()
    .filter_map(|(m, t)| {
        let series = per_step(run, es, ss, gb(*m), |_| None);
        charts::bars(
            &format!("{t} ({})", config(run)),
            "GB",
            ss,
            &series,
            false,
            None,
        )
    })
    .collect()
}

/// Write-amp and space-amp per step, the model's prediction marked as a
/// black bar across each engine's bar.
pub fn amplification(run: &RunView, es: &[String], ss: &[String]) -> Vec<String> {
    [
        (Metric::WriteAmp, ModelFigure::WriteAmp, "write-amp"),
        (Metric::SpaceAmp, ModelFigure::SpaceAmp, "space-amp"),
    ]
    .iter()
    .filter_map(|(m, f, t)| {
        let pred = |s: &StepView| s.extras.prediction.map(|p| p.of(*f));
        let series = per_step(run, es, ss, |s| s.fig(*m), pred);
        let with_pred = run.steps.iter().any(|s| pred(s).is_some());
        let title = format!(
            "{t} measured{} ({})",
            if with_pred {
                ", the model's prediction marked —"
            } else {
                ""
            },
            config(run)
        );
        charts::bars(&title, t, ss, &series, false, None)
    })
    .collect()
}

/// Throughput against threads for each `--threads` sweep, the Universal
/// Scalability Law's fit beside each engine's points.
pub fn concurrency(run: &RunView, es: &[String]) -> Vec<String> {
    let sw = super::concurrency::sweeps(run);
    let mut steps: Vec<&String> = sw.keys().map(|(_, s)| s).collect();
    steps.dedup();
    let mut out = Vec::new();
    for st in steps {
        let mut series = Vec::new();
        for (i, e) in es.iter().enumerate() {
            let Some(rows) = sw.get(&(e.clone(), st.clone())) else {
                continue;
            };
            let pts: Vec<(f64, f64)> = rows.iter().map(|r| (r.0 as f64, r.1)).collect();
            if let Some(f) = usl::fit(&pts) {
                let hi = pts.iter().map(|p| p.0).fold(1.0, f64::max);
                let fit: Vec<(f64, f64)> = (0..=40)
                    .map(|k| {
                        let n = 1.0 + (hi - 1.0) * k as f64 / 40.0;
                        (n, f.predict(n))
                    })
                    .collect();
                series.push(Series {
                    label: format!("{e} USL fit"),
                    colour: i,
                    data: fit,
                });
            }
            series.push(Series {
                label: e.clone(),
                colour: i,
                data: pts,
            });
        }
        if let Some(svg) = charts::lines(
            &format!("{st}: throughput by thread count ({})", run.workload),
            "threads",
            "ops/s",
            &series,
            false,
        ) {
            out.push(svg);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(name: &str, ops: f64) -> StepView {
        StepView::with_figures("a", name, &[(Metric::OpsPerSec, ops)])
    }

    #[test]
    fn a_thread_sweep_draws_its_points_and_the_usl_fit() {
        let run = RunView {
            workload: "pattern".into(),
            steps: vec![
                step("pq.n@1", 100.0),
                step("pq.n@2", 190.0),
                step("pq.n@4", 340.0),
                step("pq.n@8", 520.0),
            ],
            ..RunView::empty()
        };
        let svgs = concurrency(&run, &["a".to_string()]);
        assert_eq!(svgs.len(), 1);
        let svg = &svgs[0];
        assert!(svg.contains("pq.n: throughput by thread count"), "{svg}");
        assert!(
            svg.contains("\na USL fit\n") && svg.contains("\na\n"),
            "{svg}"
        );
        // The measured points are dotted (four or fewer): 4 dots.
        assert_eq!(svg.matches("<circle").count(), 4, "{svg}");
        assert!(concurrency(&RunView::empty(), &[]).is_empty());
    }

    #[test]
    fn lines_far_apart_go_on_a_log_axis() {
        let with_rates = |engine: &str, per_sec: f64| {
            let mut s = StepView::with_figures(engine, "pq.1", &[]);
            s.rates = (0..10)
                .map(|i| (i as f64 / 10.0, (i + 1) as f64 / 10.0, per_sec))
                .collect();
            s
        };
        let es = ["a".to_string(), "b".to_string()];
        let title = |b: f64| {
            let run = RunView {
                steps: vec![with_rates("a", 1000.0), with_rates("b", b)],
                ..RunView::empty()
            };
            let svg = over_time(&run, "pq.1", &es).unwrap();
            svg.contains("over time, log scale, 0.1 s bins")
        };
        assert!(title(30_000.0), "30x apart: log");
        assert!(!title(10_000.0), "10x apart: linear");
        assert!(!title(0.0), "a line at zero: linear");
    }
}
