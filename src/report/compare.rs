//! Comparisons: ratio tables (each engine's figures divided by a base
//! engine's, step by step, as the seeds' "MyRocks/InnoDB" columns), and
//! several runs merged into one view so the same engine under two
//! configurations is compared like two engines.

use std::fmt::Write;

use crate::UsageError;
use crate::metrics::Metric;
use crate::names::Status;
use crate::results::{RunView, StepView};

/// The figures a ratio table shows: (figure name, column title).
const RATIO_FIGURES: &[(Metric, &str)] = &[
    (Metric::OpsPerSec, "ops"),
    (Metric::DbBytes, "db.gb"),
    (Metric::RPerOp, "r/o"),
    (Metric::RkbPerOp, "rKB/o"),
    (Metric::WkbPerOp, "wKB/o"),
    (Metric::CsPerOp, "cs/o"),
    (Metric::CpuUsPerOp, "cpu/o"),
    (Metric::SpaceAmp, "s-amp"),
    (Metric::WriteAmp, "w-amp"),
];

/// `a / b` when both were measured and `b` is not zero.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    }
}

/// Distinct values of `key` over a run's steps, in first-seen order.
fn first_seen(run: &RunView, key: impl Fn(&StepView) -> &String) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for s in &run.steps {
        if !seen.contains(key(s)) {
            seen.push(key(s).clone());
        }
    }
    seen
}

/// The engines of a run in the order they first appear.
pub fn engines(run: &RunView) -> Vec<String> {
    first_seen(run, |s| &s.engine)
}

/// Checks `--base`: it must name an engine of the run (or, for merged runs,
/// a `RUN:ENGINE` label). `None` picks the first engine.
pub fn base_engine(run: &RunView, base: Option<&str>) -> Result<Option<String>, UsageError> {
    let es = engines(run);
    match base {
        None => Ok(es.first().cloned()),
        Some(b) if es.iter().any(|e| e == b) => Ok(Some(b.to_string())),
        Some(b) => Err(UsageError(format!(
            "--base '{b}': not an engine of this report (engines: {})",
            es.join(", ")
        ))),
    }
}

/// "run 3", or "runs 3,5 merged" for a merged view.
pub fn title(run: &RunView) -> String {
    if run.merged_from.is_empty() {
        format!("run {}", run.id)
    } else {
        let ids: Vec<String> = run.merged_from.iter().map(i64::to_string).collect();
        format!("runs {} merged", ids.join(","))
    }
}

/// "ENGINE STEP failed: ERROR" for every failed step.
pub fn failures(run: &RunView) -> Vec<String> {
    run.steps
        .iter()
        .filter_map(|s| {
            s.error
                .as_ref()
                .map(|e| format!("{} {} failed: {e}", s.engine, s.step))
        })
        .collect()
}

/// The steps of a run in the order they first appear.
pub fn steps(run: &RunView) -> Vec<String> {
    first_seen(run, |s| &s.step)
}

/// One engine's record of one step.
pub fn find<'a>(run: &'a RunView, engine: &str, step: &str) -> Option<&'a StepView> {
    run.steps
        .iter()
        .find(|s| s.engine == engine && s.step == step)
}

/// The ratio table against `base`, or nothing when the run has one engine.
pub fn render_ratios(run: &RunView, base: &str) -> String {
    let mut o = String::new();
    let others: Vec<String> = engines(run).into_iter().filter(|e| e != base).collect();
    if others.is_empty() {
        return o;
    }
    let _ = writeln!(
        o,
        "\nratios to {base} (engine's figure / {base}'s, same step; above 1 is more: better for ops, worse for the costs)"
    );
    let _ = write!(o, "{:<18} {:<18}", "engine", "step");
    for (_, title) in RATIO_FIGURES {
        let _ = write!(o, " {title:>7}");
    }
    let _ = writeln!(o);
    for e in &others {
        for s in run.steps.iter().filter(|s| &s.engine == e) {
            let Some(b) = find(run, base, &s.step) else {
                continue;
            };
            let _ = write!(o, "{:<18} {:<18}", e, s.step);
            for (name, _) in RATIO_FIGURES {
                let r = ratio(s.fig(*name), b.fig(*name));
                let _ = write!(o, " {:>7}", r.map_or("-".into(), |r| format!("{r:.2}")));
            }
            let _ = writeln!(o);
        }
    }
    o
}

/// Merges runs into one view: engines are labelled `RUN:ENGINE`, steps keep
/// their order within each run. The header fields list every run.
pub fn merge(views: Vec<RunView>) -> RunView {
    let mut views = views.into_iter();
    let Some(mut out) = views.next() else {
        // An empty list never reaches here (the CLI asks for one run at
        // least); an empty view is the honest answer anyway.
        return RunView::empty();
    };
    let mut all = vec![std::mem::take(&mut out.steps)];
    let mut ids = vec![out.id.to_string()];
    let mut workloads = vec![out.workload.clone()];
    let mut statuses = vec![out.status];
    let label = |id: i64, steps: &mut Vec<StepView>| {
        for s in steps.iter_mut() {
            s.engine = format!("{id}:{}", s.engine);
        }
    };
    label(out.id, &mut all[0]);
    for mut v in views {
        label(v.id, &mut v.steps);
        ids.push(v.id.to_string());
        if !workloads.contains(&v.workload) {
            workloads.push(v.workload.clone());
        }
        statuses.push(v.status);
        all.push(v.steps);
    }
    out.steps = all.into_iter().flatten().collect();
    out.workload = workloads.join("+");
    out.engines = engines(&out).join(",");
    // The merged status is the worst of the runs'.
    out.status = [Status::Failed, Status::Interrupted, Status::Running]
        .into_iter()
        .find(|s| statuses.contains(s))
        .unwrap_or(Status::Done);
    out.merged_from = ids.iter().filter_map(|i| i.parse().ok()).collect();
    out.command = format!("runs {}", ids.join(","));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn step(engine: &str, name: &str, figs: &[(Metric, f64)]) -> StepView {
        StepView {
            id: 0,
            ordinal: 0,
            engine: engine.into(),
            step: name.into(),
            status: Status::Done,
            error: None,
            secs: Some(1.0),
            settle: None,
            figures: figs
                .iter()
                .map(|(k, v)| (*k, (Some(*v), None)))
                .collect::<BTreeMap<_, _>>(),
            latencies: Vec::new(),
            extras: Vec::new(),
            notes: Vec::new(),
            intervals: Vec::new(),
        }
    }

    fn run(id: i64, steps: Vec<StepView>) -> RunView {
        RunView {
            id,
            steps,
            ..RunView::empty()
        }
    }

    #[test]
    fn ratios_are_engine_over_base_per_step() {
        let r = run(
            1,
            vec![
                step(
                    "innodb",
                    "load",
                    &[(Metric::OpsPerSec, 1000.0), (Metric::WkbPerOp, 8.0)],
                ),
                step(
                    "myrocks",
                    "load",
                    &[(Metric::OpsPerSec, 2500.0), (Metric::WkbPerOp, 2.0)],
                ),
            ],
        );
        let t = render_ratios(&r, "innodb");
        let row = t.lines().find(|l| l.starts_with("myrocks")).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        // engine, step, ops, db.gb, r/o, rKB/o, wKB/o, …
        assert_eq!(cells[2], "2.50", "{t}");
        assert_eq!(cells[3], "-", "db.gb not measured on either side: {t}");
        assert_eq!(cells[6], "0.25", "{t}");
        assert!(
            !t.lines().any(|l| l.starts_with("innodb ")),
            "no base row: {t}"
        );
        assert_eq!(render_ratios(&run(1, vec![step("a", "s", &[])]), "a"), "");
    }

    #[test]
    fn ratio_needs_both_and_a_nonzero_base() {
        assert_eq!(ratio(Some(3.0), Some(2.0)), Some(1.5));
        assert_eq!(ratio(Some(3.0), Some(0.0)), None);
        assert_eq!(ratio(None, Some(2.0)), None);
    }

    #[test]
    fn base_must_be_an_engine_of_the_report() {
        let r = run(1, vec![step("rocksdb", "s", &[]), step("lmdb", "s", &[])]);
        assert_eq!(base_engine(&r, None).unwrap().as_deref(), Some("rocksdb"));
        assert_eq!(
            base_engine(&r, Some("lmdb")).unwrap().as_deref(),
            Some("lmdb")
        );
        let e = base_engine(&r, Some("innodb")).unwrap_err();
        assert!(
            e.0.contains("--base 'innodb'") && e.0.contains("rocksdb, lmdb"),
            "{e}"
        );
    }

    #[test]
    fn merged_runs_label_engines_by_run() {
        let m = merge(vec![
            run(
                3,
                vec![step("rocksdb", "load", &[(Metric::OpsPerSec, 10.0)])],
            ),
            run(
                5,
                vec![step("rocksdb", "load", &[(Metric::OpsPerSec, 15.0)])],
            ),
        ]);
        assert_eq!(engines(&m), vec!["3:rocksdb", "5:rocksdb"]);
        assert_eq!(m.command, "runs 3,5");
        let t = render_ratios(&m, "3:rocksdb");
        assert!(
            t.lines()
                .any(|l| l.starts_with("5:rocksdb") && l.contains("1.50")),
            "{t}"
        );
    }
}
