//! Comparisons: ratio tables (each engine's figures divided by a base
//! engine's, step by step, as the seeds' "MyRocks/InnoDB" columns), and
//! several runs merged into one view so the same engine under two
//! configurations is compared like two engines.

use std::fmt::Write;

use super::repeat::RatioCell;
use crate::UsageError;
use crate::bound::Bound;
use crate::metrics::Metric;
use crate::names::Status;
use crate::record::EngineLabel;
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

pub use super::ratio::{floor, metric_ratio, ratio};

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
/// In runs merged by corner only the engines of `base`'s corner are
/// compared with it ([`render_corner_ratios`] compares the corners).
pub fn render_ratios(run: &RunView, base: &str) -> String {
    ratio_table(
        run,
        &base_pairs(run, base),
        &format!(
            "ratios to {base} (engine's figure / {base}'s, same step; above 1 is more: better for ops, worse for the costs)"
        ),
    )
}

/// (engine, `base`) for every other engine; in runs merged by corner,
/// only the engines of `base`'s corner.
pub(crate) fn base_pairs(run: &RunView, base: &str) -> Vec<(String, String)> {
    let corner = run.label(base).corner;
    engines(run)
        .into_iter()
        .filter(|e| e != base)
        .filter(|e| !by_corner(run) || run.label(e).corner == corner)
        .map(|e| (e, base.to_string()))
        .collect()
}

/// For runs merged by corner (`cache:E`, `io:E`): (`io:E`, `cache:E`)
/// for every engine of a later corner, with the first corner; no pairs
/// for other views.
pub(crate) fn corner_pairs(run: &RunView) -> (Vec<(String, String)>, Option<Bound>) {
    let es = engines(run);
    let Some(first) = es.first().and_then(|e| run.label(e).corner) else {
        return (Vec::new(), None);
    };
    if !by_corner(run) {
        return (Vec::new(), Some(first));
    }
    let pairs = es
        .iter()
        .filter_map(|e| {
            let l = run.label(e);
            (l.corner != Some(first)).then(|| (e.clone(), l.in_corner(Some(first)).to_string()))
        })
        .filter(|(_, b)| es.contains(b))
        .collect();
    (pairs, Some(first))
}

/// For runs merged by corner (`cache:E`, `io:E`): each engine against
/// itself in the first corner, step by step (`io:rocksdb` /
/// `cache:rocksdb`): what the memory limit costs each engine. Nothing for
/// other views.
pub fn render_corner_ratios(run: &RunView) -> String {
    let (pairs, first) = corner_pairs(run);
    let Some(first) = first.filter(|_| !pairs.is_empty()) else {
        return String::new();
    };
    let first = first.name();
    ratio_table(
        run,
        &pairs,
        &format!(
            "ratios of each corner to {first}, per engine (e.g. io:ENGINE / {first}:ENGINE, same step; above 1 is more)"
        ),
    )
}

/// True for runs merged by corner: every engine labelled `CORNER:ENGINE`
/// (not `RUN:ENGINE`).
pub(crate) fn by_corner(run: &RunView) -> bool {
    !run.corners.is_empty() && run.steps.iter().all(|s| s.label.corner.is_some())
}

/// Rows of `engine / base` ratios for each (engine, base) pair, step by
/// step, under `heading`; nothing when there are no pairs.
// Long: one ratio table, its footnotes, then its intervals' table; each cell's
// rule (significant, below its floor, not measured) is decided once for all
// three.
fn ratio_table(run: &RunView, pairs: &[(String, String)], heading: &str) -> String {
    let mut o = String::new();
    if pairs.is_empty() {
        return o;
    }
    let w = pairs
        .iter()
        .map(|(e, _)| e.len() + 1)
        .max()
        .unwrap_or(18)
        .max(18);
    let _ = writeln!(o, "\n{heading}");
    let mut floored: Vec<&str> = Vec::new();
    let mut not_significant = false;
    let mut intervals: Vec<(String, String, Vec<String>)> = Vec::new();
    let _ = write!(o, "{:<w$} {:<18}", "engine", "step");
    for (_, title) in RATIO_FIGURES {
        let _ = write!(o, " {title:>7}");
    }
    let _ = writeln!(o);
    for (e, base) in pairs {
        for s in run.steps.iter().filter(|s| &s.engine == e) {
            let Some(b) = find(run, base, &s.step) else {
                continue;
            };
            let _ = write!(o, "{:<w$} {:<18}", e, s.step);
            let mut row_ci = Vec::new();
            for (name, _) in RATIO_FIGURES {
                let cell = RatioCell::of(*name, s, b);
                not_significant |= cell.not_significant();
                row_ci.push(match cell {
                    RatioCell::Value(_, Some(ci)) => format!("{:.2}-{:.2}", ci.lo, ci.hi),
                    _ => "-".into(),
                });
                if let (RatioCell::Floored, Some((_, why))) = (cell, floor(*name)) {
                    if !floored.contains(&why) {
                        floored.push(why);
                    }
                }
                let _ = write!(o, " {:>7}", cell.short());
            }
            let _ = writeln!(o);
            if row_ci.iter().any(|c| c != "-") {
                intervals.push((e.clone(), s.step.clone(), row_ci));
            }
        }
    }
    if not_significant {
        let _ = writeln!(
            o,
            "~: the ratio's 95% interval includes 1: the difference is not significant"
        );
    }
    if !floored.is_empty() {
        let _ = writeln!(
            o,
            "-*: the base's figure is below its noise floor ({}), so no ratio is printed",
            floored.join("; ")
        );
    }
    if !intervals.is_empty() {
        let _ = writeln!(
            o,
            "\n95% intervals of those ratios (geometric mean of the per-repetition ratios, Student's t on their logs)"
        );
        let _ = write!(o, "{:<w$} {:<18}", "engine", "step");
        for (_, title) in RATIO_FIGURES {
            let _ = write!(o, " {title:>11}");
        }
        let _ = writeln!(o);
        for (e, st, cells) in intervals {
            let _ = write!(o, "{e:<w$} {st:<18}");
            for c in cells {
                let _ = write!(o, " {c:>11}");
            }
            let _ = writeln!(o);
        }
    }
    o
}

/// An engine's label as the short report shows it: a corner in words
/// (`cache:rocksdb` is `cached rocksdb`, `io:rocksdb` is `IO-bound
/// rocksdb`); other labels as they are.
pub(crate) fn shown(run: &RunView, label: &str) -> String {
    run.label(label).in_words()
}

/// Merges runs into one view: engines are labelled by each run's corner
/// (`cache:ENGINE`, `io:ENGINE`) when the runs are one each of different
/// corners (`--bound cache,io`), else `RUN:ENGINE`; steps keep their order
/// within each run. The header fields list every run, and `corners` says
/// what each label ran with.
// Long: runs merged by label in one pass: the header fields, the steps
// relabelled, the corners said.
pub fn merge(views: Vec<RunView>) -> RunView {
    let corners: Vec<Option<Bound>> = views.iter().map(|v| v.recorded.bound).collect();
    let by_corner = corners.iter().all(Option::is_some)
        && corners
            .iter()
            .enumerate()
            .all(|(i, c)| !corners[..i].contains(c));
    // Each run's label, without its engine.
    let labels: Vec<EngineLabel> = views
        .iter()
        .zip(&corners)
        .map(|(v, c)| match c {
            Some(c) if by_corner => EngineLabel {
                corner: Some(*c),
                ..EngineLabel::default()
            },
            _ => EngineLabel {
                run: Some(v.id),
                ..EngineLabel::default()
            },
        })
        .collect();
    let notes: Vec<String> = views
        .iter()
        .zip(&labels)
        .map(|(v, l)| {
            format!(
                "{}: run {}, {}",
                l.corner
                    .map_or_else(|| v.id.to_string(), |c| c.in_words().to_string()),
                v.id,
                corner_summary(&v.recorded)
            )
        })
        .collect();
    let memories = views
        .iter()
        .zip(&labels)
        .filter_map(|(v, l)| Some((l.prefix()?, v.recorded.memory?)))
        .collect();
    let mut views = views.into_iter().zip(labels);
    let Some((mut out, first)) = views.next() else {
        // An empty list never reaches here (the CLI asks for one run at
        // least); an empty view is the honest answer anyway.
        return RunView::empty();
    };
    let label = |l: &EngineLabel, steps: &mut Vec<StepView>| {
        for s in steps.iter_mut() {
            s.label = EngineLabel {
                engine: s.label.engine.clone(),
                ..l.clone()
            };
            s.engine = s.label.to_string();
        }
    };
    let mut all = vec![std::mem::take(&mut out.steps)];
    label(&first, &mut all[0]);
    let mut ids = vec![out.id.to_string()];
    let mut workloads = vec![out.workload.clone()];
    let mut statuses = vec![out.status];
    for (mut v, l) in views {
        label(&l, &mut v.steps);
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
    out.corners = notes;
    out.memories = memories;
    out.command = format!("runs {}", ids.join(","));
    out
}

/// One line on a run's memory and storage, from its recorded config:
/// `memory 192MB (cache 48MB), slow-ssd`.
pub fn corner_summary(c: &crate::results::RecordedConfig) -> String {
    let mb = |b: Option<u64>| b.map(|b| format!("{:.0}MB", b as f64 / (1u64 << 20) as f64));
    let memory = match mb(c.memory) {
        Some(m) => format!("memory {m}"),
        None => "memory unlimited".into(),
    };
    let cache = mb(c.cache_bytes).unwrap_or_else(|| "-".into());
    let storage = c.class().unwrap_or("-");
    format!("{memory} (engine cache {cache}), storage {storage}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(engine: &str, name: &str, figs: &[(Metric, f64)]) -> StepView {
        StepView::with_figures(engine, name, figs)
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
    fn no_ratio_to_a_base_below_its_floor() {
        assert_eq!(
            metric_ratio(Metric::WkbPerOp, Some(5.0), Some(0.002)),
            Err(true)
        );
        assert_eq!(
            metric_ratio(Metric::WkbPerOp, Some(5.0), Some(2.0)),
            Ok(2.5)
        );
        assert_eq!(
            metric_ratio(Metric::CsPerOp, Some(3.0), Some(0.009)),
            Err(true)
        );
        assert_eq!(
            metric_ratio(Metric::OpsPerSec, Some(3.0), Some(0.001)),
            Ok(3000.0)
        );
        assert_eq!(metric_ratio(Metric::WkbPerOp, Some(5.0), None), Err(false));
        let r = run(
            1,
            vec![
                step(
                    "a",
                    "s",
                    &[(Metric::WkbPerOp, 0.004), (Metric::OpsPerSec, 10.0)],
                ),
                step(
                    "b",
                    "s",
                    &[(Metric::WkbPerOp, 9.8), (Metric::OpsPerSec, 20.0)],
                ),
            ],
        );
        let t = render_ratios(&r, "a");
        assert!(t.contains("    2.00"), "{t}");
        assert!(t.contains("     -*"), "{t}");
        assert!(!t.contains("2450"), "{t}");
        assert!(t.contains("wKB/o under 0.01"), "{t}");
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
        assert_eq!(render_corner_ratios(&m), "");
    }

    /// Runs of two corners are labelled by corner; each engine's io figures
    /// are divided by its own cached ones, and the base table keeps to the
    /// base's corner.
    #[test]
    fn corners_label_engines_and_compare_each_engine_with_itself() {
        let corner = |id, bound: &str, memory: serde_json::Value, ops: [f64; 2]| {
            let mut r = run(
                id,
                vec![
                    step("rocksdb", "pq.1", &[(Metric::OpsPerSec, ops[0])]),
                    step("lmdb", "pq.1", &[(Metric::OpsPerSec, ops[1])]),
                ],
            );
            r.config = serde_json::json!({
                "bound": bound, "memory": memory, "cache_bytes": 64u64 << 20,
                "storage": {"class": "slow-ssd"}
            });
            r.recorded = crate::results::RecordedConfig::of(&r.config);
            r
        };
        let m = merge(vec![
            corner(7, "cache", serde_json::Value::Null, [400.0, 1000.0]),
            corner(8, "io", (256u64 << 20).into(), [100.0, 50.0]),
        ]);
        assert_eq!(
            engines(&m),
            vec!["cache:rocksdb", "cache:lmdb", "io:rocksdb", "io:lmdb"]
        );
        assert_eq!(
            m.corners,
            vec![
                "cached: run 7, memory unlimited (engine cache 64MB), storage slow-ssd",
                "IO-bound: run 8, memory 256MB (engine cache 64MB), storage slow-ssd"
            ]
        );
        let t = render_corner_ratios(&m);
        let row = |name: &str| {
            t.lines()
                .find(|l| l.starts_with(name))
                .unwrap_or("")
                .to_string()
        };
        assert!(row("io:rocksdb").contains(" 0.25"), "{t}");
        assert!(row("io:lmdb").contains(" 0.05"), "{t}");
        let b = render_ratios(&m, "cache:rocksdb");
        assert!(row_in(&b, "cache:lmdb").contains(" 2.50"), "{b}");
        assert!(!b.contains("io:"), "{b}");
    }

    fn row_in(t: &str, name: &str) -> String {
        t.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or("")
            .to_string()
    }
}
