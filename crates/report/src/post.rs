//! A seed post's table beside this machine's: the figures a post
//! published (typed into its plan file under `[post]`, with the post's
//! file name and the table they come from), the same figure measured by
//! the run, and whether each comparison the post draws goes the same way
//! here. Absolute numbers are not expected to match (other hardware, a
//! far smaller scale); the directions are what a reproduction checks.

use std::fmt::Write;

use crate::metrics::Metric;
use crate::names::Status;
use crate::record::{FamilyWrites, StepExtras};
use crate::results::{RunView, StepView};

pub use crate::postspec::*;

/// A figure of an engine's whole run (`step = "all"`): a workload figure
/// (an extra, such as `cf.NAME.flush_mb`) added up over every step, or
/// one made from the column families' writes (`cf_total_mb`, `cf_ingest_mb`,
/// `cf_write_amp`, `cf.NAME.write_amp`).
/// Throughputs and per-operation figures do not add, so they are None.
pub fn whole_run(run: &RunView, engine: &str, figure: &str) -> Option<f64> {
    // Steps that ended: a failed or cut-short repetition is not a run.
    let mine: Vec<&StepView> = run
        .steps
        .iter()
        .filter(|s| s.engine == engine && s.status == Status::Done)
        .collect();
    // Under --repeat --reuse the later repetitions ran on the first's
    // database without its load, so no repetition is a whole run: the
    // figure is the history's, every step added.
    if run.recorded.reuse {
        return families(&mine, figure);
    }
    // Under --repeat, each repetition's run is added up on its own and
    // the repetitions averaged (summing them all would count the work
    // once per repetition).
    let mut reps: Vec<i64> = mine.iter().map(|s| s.rep).collect();
    reps.sort_unstable();
    reps.dedup();
    mean(reps.into_iter().map(|rep| {
        let of: Vec<&StepView> = mine.iter().copied().filter(|s| s.rep == rep).collect();
        families(&of, figure)
    }))
}

/// The mean of the values present; None when none is.
fn mean(vals: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let (n, sum) = vals
        .flatten()
        .fold((0u32, 0.0), |(n, sum), v| (n + 1, sum + v));
    (n > 0).then(|| sum / f64::from(n))
}

/// A figure added up over `steps`: `cf_total_mb` (flush and compaction
/// MB of every family), `cf_ingest_mb` (flush MB), `cf_write_amp` (total
/// / ingest), `cf.NAME.write_amp` (one family's), or any other extra
/// summed; None when no step has it, or for a [`Metric`].
fn families(steps: &[&StepView], figure: &str) -> Option<f64> {
    // Added up over every step's families (or the one named), None when
    // no step has any.
    let total = |pick: &dyn Fn(&FamilyWrites) -> [Option<f64>; 2], only: Option<&str>| {
        steps
            .iter()
            .flat_map(|s| &s.extras.families)
            .filter(|(n, _)| only.is_none_or(|o| o == n.as_str()))
            .flat_map(|(_, f)| pick(f))
            .flatten()
            .fold(None, |t: Option<f64>, v| Some(t.unwrap_or(0.0) + v))
    };
    let all = |f: &FamilyWrites| [f.flush_mb, f.compaction_mb];
    let ingest = |f: &FamilyWrites| [f.flush_mb, None];
    let ratio =
        |t: Option<f64>, i: Option<f64>| t.zip(i).filter(|(_, i)| *i > 0.0).map(|(t, i)| t / i);
    match figure {
        "cf_total_mb" => total(&all, None),
        "cf_ingest_mb" => total(&ingest, None),
        "cf_write_amp" => ratio(total(&all, None), total(&ingest, None)),
        f => match f
            .strip_suffix(".write_amp")
            .and_then(StepExtras::names_family)
        {
            Some(n) => ratio(total(&all, Some(n)), total(&ingest, Some(n))),
            None if Metric::parse(f).is_ok() => None,
            None => steps
                .iter()
                .filter_map(|s| s.extras.named(f))
                .fold(None, |t: Option<f64>, v| Some(t.unwrap_or(0.0) + v)),
        },
    }
}

/// A figure of the run, or None where it was not measured.
pub fn value(run: &RunView, r: &Ref) -> Option<f64> {
    let v = if r.step == "all" {
        whole_run(run, &r.engine, &r.figure).filter(|_| r.slice.is_none())?
    } else {
        step_value(run, r)?
    };
    match &r.over {
        None => Some(v),
        Some(o) => value(run, o).filter(|d| *d != 0.0).map(|d| v / d),
    }
}

/// `r`'s figure in its step (or slice), without `over`: under --repeat,
/// the mean over the repetitions that have it.
fn step_value(run: &RunView, r: &Ref) -> Option<f64> {
    let steps: Vec<&StepView> = run
        .steps
        .iter()
        .filter(|s| s.engine == r.engine && s.step == r.step)
        .collect();
    // A repetition that failed or was cut short is not averaged with
    // those that ended; alone, its figures are still what was measured.
    let done: Vec<&StepView> = steps
        .iter()
        .copied()
        .filter(|s| s.status == Status::Done)
        .collect();
    let from = if done.is_empty() { steps } else { done };
    mean(from.into_iter().map(|s| one_step_value(s, r)))
}

/// `r`'s figure in one step (or its slice).
fn one_step_value(s: &StepView, r: &Ref) -> Option<f64> {
    match (Metric::parse(&r.figure), r.slice) {
        (Ok(m), None) => s.fig(m),
        (Ok(m), Some(i)) => s.slices.get(i.checked_sub(1)?)?.fig(m),
        (Err(_), None) => s
            .extras
            .named(&r.figure)
            .or_else(|| families(&[s], &r.figure)),
        (Err(_), Some(_)) => None,
    }
}

/// `v`, outside `r`'s bounds, with the digits that show it is: 0.396
/// against a bound of 0.4 prints as 0.396, not 0.40.
fn num_off(v: f64, r: &Regime) -> String {
    let shown = num(v);
    let close = [r.min, r.max]
        .into_iter()
        .flatten()
        .any(|b| num(b) == shown || shown.parse::<f64>().is_ok_and(|x| r.within(x)));
    if close { format!("{v:.4}") } else { shown }
}

fn num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// One claim checked: the post's values, ours, the verdict.
pub struct Checked<'a> {
    /// The claim.
    pub claim: &'a Claim,
    /// The post's values, in order (None: only in a graph).
    pub post: Vec<Option<f64>>,
    /// Ours (None: not measured).
    pub ours: Vec<Option<f64>>,
    /// Ours against the claim.
    pub verdict: Verdict,
    /// The post's own figures against the claim (a typing check).
    pub post_verdict: Verdict,
    /// Whether the run was in the post's regime for this claim.
    pub regime: RegimeMark,
}

/// A claim's regime, checked.
#[derive(Clone, Debug, PartialEq)]
pub enum RegimeMark {
    /// The claim names no regime figure.
    Unstated,
    /// Every regime figure it names holds: the figures, in words.
    Judged(Vec<String>),
    /// One or more are off (or not measured): those, in words.
    NotJudged(Vec<String>),
}

/// A regime figure of the run: `ours` times `scale` and `times`,
/// divided by the memory limit when `per_memory` (None without a limit
/// or where a figure was not measured).
pub fn regime_value(run: &RunView, r: &Regime) -> Option<f64> {
    let mut v = value(run, &r.ours)? * r.scale.unwrap_or(1.0);
    if let Some(t) = &r.times {
        v *= value(run, t)?;
    }
    if r.per_memory {
        // Merged runs (`--bound cache,io`): the memory of the run the
        // label names (`io:rocksdb`), not the first run's.
        let merged = run
            .label(&r.ours.engine)
            .prefix()
            .and_then(|l| run.memories.get(&l).copied());
        let m = merged.or(run.recorded.memory).filter(|m| *m > 0)?;
        Some(v / m as f64)
    } else {
        Some(v)
    }
}

/// The claim's regime figures checked against the run.
fn regime_mark(seed: &PostSpec, run: &RunView, c: &Claim) -> RegimeMark {
    if c.regime.is_empty() {
        return RegimeMark::Unstated;
    }
    let (mut ok, mut off) = (Vec::new(), Vec::new());
    for r in c
        .regime
        .iter()
        .filter_map(|id| seed.regimes.iter().find(|r| &r.id == id))
    {
        match regime_value(run, r) {
            Some(v) if r.within(v) => ok.push(format!("{} {} ({})", r.text, num(v), r.bounds())),
            Some(v) => off.push(format!("{} {}, not {}", r.text, num_off(v, r), r.bounds())),
            None => off.push(format!("{} not measured", r.text)),
        }
    }
    if off.is_empty() {
        RegimeMark::Judged(ok)
    } else {
        RegimeMark::NotJudged(off)
    }
}

/// Every claim of the seed checked against the run.
pub fn check<'a>(seed: &'a PostSpec, run: &RunView) -> Vec<Checked<'a>> {
    seed.claims
        .iter()
        .map(|c| {
            let figs: Vec<&Published> = c
                .figures
                .iter()
                .filter_map(|id| seed.figures.iter().find(|f| &f.id == id))
                .collect();
            let post: Vec<Option<f64>> = figs.iter().map(|f| f.value).collect();
            let ours: Vec<Option<f64>> = figs.iter().map(|f| value(run, &f.ours)).collect();
            Checked {
                claim: c,
                verdict: c.kind.verdict(&ours, c.factor),
                post_verdict: c.kind.verdict(&post, c.factor),
                regime: regime_mark(seed, run, c),
                post,
                ours,
            }
        })
        .collect()
}

/// The run's seed post, from its stored configuration.
pub fn of_run(run: &RunView) -> Option<PostSpec> {
    run.recorded.post.clone()
}

/// The scale the run used (`-p scale=`), 1 when not given.
pub fn scale_of(run: &RunView) -> f64 {
    run.recorded.post_scale.unwrap_or(1.0)
}

/// The text section: the post's figures beside ours, then each claim with
/// its verdict.
// Long: the post's section in its order (its figures beside this run's, its
// regimes here, each claim with its verdict).
pub fn render(seed: &PostSpec, run: &RunView) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "seed post {}: \"{}\" (scale {} here)",
        seed.file,
        seed.title,
        scale_of(run)
    );
    let _ = writeln!(o, "  {}", seed.setup);
    let _ = writeln!(
        o,
        "  absolute figures are not expected to match (other hardware, a far smaller scale): the directions are the check"
    );
    let width = |f: fn(&Published) -> &str, head: &str| {
        seed.figures
            .iter()
            .map(|p| f(p).chars().count())
            .chain([head.len()])
            .max()
            .unwrap_or(0)
    };
    let (wt, wr, wc) = (
        width(|p| &p.table, "table"),
        width(|p| &p.row, "row"),
        width(|p| &p.column, "column"),
    );
    let _ = writeln!(
        o,
        "{:<wt$}  {:<wr$}  {:<wc$} {:>10} {:>10}",
        "table", "row", "column", "post", "here"
    );
    for f in &seed.figures {
        let here = value(run, &f.ours).map_or("-".into(), num);
        let _ = writeln!(
            o,
            "{:<wt$}  {:<wr$}  {:<wc$} {:>10} {:>10}",
            f.table,
            f.row,
            f.column,
            f.value.map_or("graph".into(), num),
            here
        );
    }
    if !seed.regimes.is_empty() {
        let _ = writeln!(o, "the post's regime, here");
        for r in &seed.regimes {
            let here = regime_value(run, r);
            let _ = writeln!(
                o,
                "  {}: post {}; here {} (in the regime: {}): {}",
                r.text,
                r.post.map_or("-".into(), num),
                here.map_or("-".into(), |v| if r.within(v) {
                    num(v)
                } else {
                    num_off(v, r)
                }),
                r.bounds(),
                match here {
                    Some(v) if r.within(v) => "in",
                    Some(_) => "off",
                    None => "not measured",
                }
            );
        }
    }
    let _ = writeln!(o, "the post's comparisons, here");
    for c in check(seed, run) {
        let sep = match c.claim.kind {
            ClaimKind::Rises | ClaimKind::Falls => " → ",
            _ => " vs ",
        };
        let arrow = |v: Vec<String>| {
            let mut t = v.join(sep);
            if let (ClaimKind::Below | ClaimKind::Above, Some(f)) = (c.claim.kind, c.claim.factor) {
                t.push_str(&format!(" (against {})", num(f)));
            }
            t
        };
        let verdict = match &c.regime {
            // Nothing to judge: the regime would only add noise.
            _ if c.verdict == Verdict::NotMeasured => c.verdict.words().to_string(),
            RegimeMark::Unstated => c.verdict.words().to_string(),
            RegimeMark::Judged(f) => format!(
                "{}, judged in the post's regime ({})",
                c.verdict.words(),
                f.join("; ")
            ),
            // Every figure that stops it was not measured: the run may
            // well be in the regime, it cannot say.
            RegimeMark::NotJudged(f) if f.iter().all(|f| f.ends_with(" not measured")) => {
                format!(
                    "not judged: {} (the post's regime is not known here; the direction here would be: {})",
                    f.join("; "),
                    c.verdict.words()
                )
            }
            RegimeMark::NotJudged(f) => format!(
                "not judged: {} (outside the post's regime, the direction here would be: {})",
                f.join("; "),
                c.verdict.words()
            ),
        };
        let _ = writeln!(
            o,
            "  {}: post {}; here {}: {verdict}",
            c.claim.text,
            arrow(
                c.post
                    .iter()
                    .map(|v| v.map_or("graph".into(), num))
                    .collect()
            ),
            arrow(c.ours.iter().map(|v| v.map_or("-".into(), num)).collect()),
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In merged runs a figure over memory divides by the memory of the
    /// run its label names, not the first run's (a cached corner has none).
    #[test]
    fn a_merged_runs_figure_over_memory_is_its_own_runs() {
        let mut cache = RunView {
            steps: vec![StepView::with_figures(
                "rocksdb",
                "request",
                &[(Metric::DbBytes, 1e9)],
            )],
            ..RunView::empty()
        };
        cache.recorded.bound = Some(crate::bound::Bound::Cache);
        let mut io = cache.clone();
        io.id = 2;
        io.recorded.bound = Some(crate::bound::Bound::Io);
        io.recorded.memory = Some(250_000_000);
        let run = crate::compare::merge(vec![cache, io]);
        let r: Regime = toml::from_str(
            r#"
            id = "db"
            text = "db over memory"
            ours = { engine = "io:rocksdb", step = "request", figure = "db_bytes" }
            per_memory = true
            min = 2.0
        "#,
        )
        .unwrap();
        assert_eq!(regime_value(&run, &r), Some(4.0));
        let cached = Regime {
            ours: Ref {
                engine: "cache:rocksdb".into(),
                ..r.ours.clone()
            },
            ..r
        };
        assert_eq!(regime_value(&run, &cached), None, "no limit: no ratio");
    }

    /// Under --repeat a figure is the mean over the repetitions, and a
    /// whole-run figure is added up per repetition, then averaged.
    #[test]
    fn repetitions_are_averaged_not_the_first_taken() {
        let step = |rep: i64, ops: f64, flush: f64| {
            let mut s = StepView::with_figures("a", "request", &[(Metric::OpsPerSec, ops)]);
            s.rep = rep;
            s.extras.families.insert(
                "default".into(),
                crate::record::FamilyWrites {
                    flush_mb: Some(flush),
                    ..Default::default()
                },
            );
            s
        };
        let run = RunView {
            steps: vec![step(0, 100.0, 10.0), step(1, 300.0, 30.0)],
            ..RunView::empty()
        };
        let r = Ref {
            engine: "a".into(),
            step: "request".into(),
            figure: "ops_per_sec".into(),
            slice: None,
            over: None,
        };
        assert_eq!(value(&run, &r), Some(200.0));
        // 10 and 30 MB flushed by the two repetitions: 20 per run, not 40.
        assert_eq!(whole_run(&run, "a", "cf_ingest_mb"), Some(20.0));
        // A repetition that failed is not averaged with one that ended.
        let mut failed = run.clone();
        failed.steps[1].status = Status::Failed;
        assert_eq!(value(&failed, &r), Some(100.0));
        // A repetition without the figure does not pull the mean down.
        let mut run = run;
        run.steps[1].figures.clear();
        assert_eq!(value(&run, &r), Some(100.0));
        // --repeat --reuse: the second repetition has no load, so the
        // whole run is the history (load 50 MB + 10 + 30), not a mean.
        let mut load = step(0, 0.0, 50.0);
        load.step = "load".into();
        run.steps.insert(0, load);
        run.recorded.reuse = true;
        assert_eq!(whole_run(&run, "a", "cf_ingest_mb"), Some(90.0));
        // A repetition that failed is left out of the whole run too.
        run.steps[2].status = Status::Failed;
        assert_eq!(whole_run(&run, "a", "cf_ingest_mb"), Some(60.0));
    }

    #[test]
    fn a_figure_just_off_its_bound_shows_the_digits_that_say_so() {
        let r: Regime = toml::from_str(
            "id = \"x\"\ntext = \"t\"\nours = { engine = \"e\", step = \"s\", figure = \"f\" }\nmin = 0.4",
        )
        .unwrap();
        assert_eq!(num_off(0.3962, &r), "0.3962");
        assert_eq!(num_off(0.2, &r), "0.20");
        assert_eq!(num(0.3962), "0.40");
    }

    #[test]
    fn scale_multiplies_the_named_sizes_and_names_bad_input() {
        let seed = PostSpec {
            scale_params: vec!["maxid1".into()],
            ..PostSpec::default()
        };
        let kv = |v: &[(&str, &str)]| {
            v.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        let mut p = kv(&[("maxid1", "200001"), ("check", "false"), ("scale", "0.5")]);
        assert_eq!(scale(Some(&seed), &mut p).unwrap(), Some(0.5));
        assert_eq!(p, kv(&[("maxid1", "100001"), ("check", "false")]));
        let mut p = kv(&[("maxid1", "200001")]);
        assert_eq!(scale(Some(&seed), &mut p).unwrap(), None);
        for (params, says) in [
            (kv(&[("maxid1", "9"), ("scale", "0")]), "scale=0"),
            (kv(&[("maxid1", "9"), ("scale", "big")]), "scale=big"),
            (kv(&[("scale", "2")]), "'maxid1'"),
        ] {
            let e = scale(Some(&seed), &mut params.clone()).unwrap_err();
            assert!(e.0.contains(says), "{}", e.0);
        }
        let e = scale(None, &mut kv(&[("scale", "2")])).unwrap_err();
        assert!(e.0.contains("only a seed plan"), "{}", e.0);
    }

    /// Issue 49: a claim naming regime figures is judged only when they
    /// hold; otherwise it says which figure is off, and by how much.
    #[test]
    fn a_claim_is_judged_only_in_the_posts_regime() {
        let toml = r#"
            file = "003.txt"
            title = "t"
            setup = "s"
            [[figure]]
            id = "a"
            table = "T"
            row = "r"
            column = "A"
            value = 2.0
            ours = { engine = "a", step = "request", figure = "ops_per_sec" }
            [[figure]]
            id = "b"
            table = "T"
            row = "r"
            column = "B"
            value = 1.0
            ours = { engine = "b", step = "request", figure = "ops_per_sec" }
            [[regime]]
            id = "q"
            text = "A's device queue"
            ours = { engine = "a", step = "request", figure = "dev_qd" }
            min = 4.0
            [[regime]]
            id = "db"
            text = "A's database over memory"
            post = 8.0
            ours = { engine = "a", step = "request", figure = "db_bytes" }
            per_memory = true
            min = 4.0
            [[regime]]
            id = "cpu"
            text = "A's CPU, cores"
            ours = { engine = "a", step = "request", figure = "cpu_us_per_op" }
            times = { engine = "a", step = "request", figure = "ops_per_sec" }
            scale = 1e-6
            max = 1.0
            [[claim]]
            text = "A beats B"
            kind = "more"
            figures = ["a", "b"]
            regime = ["q", "db", "cpu"]
        "#;
        let seed: PostSpec = toml::from_str(toml).unwrap();
        seed.check().unwrap();
        let run = |qd: f64| {
            let mut r = RunView {
                steps: vec![
                    StepView::with_figures(
                        "a",
                        "request",
                        &[
                            (Metric::OpsPerSec, 1000.0),
                            (Metric::DevQueueDepth, qd),
                            (Metric::DbBytes, 6.0 * 512.0 * 1048576.0),
                            (Metric::CpuUsPerOp, 800.0),
                        ],
                    ),
                    StepView::with_figures("b", "request", &[(Metric::OpsPerSec, 500.0)]),
                ],
                ..RunView::empty()
            };
            r.recorded.memory = Some(512 << 20);
            r
        };
        // Queue 6, database 6x memory, 0.8 cores: judged.
        let c = check(&seed, &run(6.0));
        assert_eq!(c[0].verdict, Verdict::Holds);
        let RegimeMark::Judged(f) = &c[0].regime else {
            panic!("{:?}", c[0].regime)
        };
        assert_eq!(f[1], "A's database over memory 6.00 (≥ 4)");
        assert_eq!(f[2], "A's CPU, cores 0.80 (≤ 1)");
        let text = render(&seed, &run(6.0));
        assert!(
            text.contains("holds, judged in the post's regime"),
            "{text}"
        );
        assert!(
            text.contains(
                "A's database over memory: post 8.00; here 6.00 (in the regime: ≥ 4): in"
            ),
            "{text}"
        );
        // A queue of 2: not judged, whatever the direction.
        let c = check(&seed, &run(2.0));
        assert_eq!(
            c[0].regime,
            RegimeMark::NotJudged(vec!["A's device queue 2.00, not ≥ 4".into()])
        );
        let text = render(&seed, &run(2.0));
        assert!(
            text.contains("A beats B: post 2.00 vs 1.00; here 1000 vs 500: not judged: A's device queue 2.00, not ≥ 4 (outside the post's regime, the direction here would be: holds)"),
            "{text}"
        );
        // No regime figure measured: not judged, and not said to be
        // outside the regime; no figure of the claim: not measured only.
        let bare = |engines: &[&str]| RunView {
            steps: engines
                .iter()
                .map(|e| StepView::with_figures(e, "request", &[(Metric::OpsPerSec, 1000.0)]))
                .collect(),
            ..RunView::empty()
        };
        let text = render(&seed, &bare(&["a", "b"]));
        assert!(
            text.contains("A beats B: post 2.00 vs 1.00; here 1000 vs 1000: not judged: A's device queue not measured; A's database over memory not measured; A's CPU, cores not measured (the post's regime is not known here; the direction here would be: does not hold)"),
            "{text}"
        );
        let text = render(&seed, &bare(&["a"]));
        assert!(
            text.contains("A beats B: post 2.00 vs 1.00; here 1000 vs -: not measured\n"),
            "{text}"
        );
        // A regime id that does not exist, or a regime without bounds.
        let bad = toml.replace(r#"regime = ["q", "db", "cpu"]"#, r#"regime = ["nope"]"#);
        let e = toml::from_str::<PostSpec>(&bad)
            .unwrap()
            .check()
            .unwrap_err();
        assert!(e.contains("no regime with id 'nope'"), "{e}");
        let bad = toml.replace(
            "min = 4.0
            [[regime]]
            id = \"db\"",
            "[[regime]]
            id = \"db\"",
        );
        let e = toml::from_str::<PostSpec>(&bad)
            .unwrap()
            .check()
            .unwrap_err();
        assert!(e.contains("give min or max"), "{e}");
    }

    #[test]
    fn verdicts_follow_the_claim_kind() {
        let s = |v: &[f64]| v.iter().map(|x| Some(*x)).collect::<Vec<_>>();
        assert_eq!(
            ClaimKind::Rises.verdict(&s(&[1.4, 2.3, 5.3]), None),
            Verdict::Holds
        );
        assert_eq!(
            ClaimKind::Rises.verdict(&s(&[1.4, 2.3, 2.0]), None),
            Verdict::DoesNotHold
        );
        assert_eq!(
            ClaimKind::Falls.verdict(&s(&[3.0, 2.0]), None),
            Verdict::Holds
        );
        assert_eq!(
            ClaimKind::Less.verdict(&s(&[0.5, 1.0]), Some(0.6)),
            Verdict::Holds
        );
        assert_eq!(
            ClaimKind::Less.verdict(&s(&[0.7, 1.0]), Some(0.6)),
            Verdict::DoesNotHold
        );
        assert_eq!(
            ClaimKind::More.verdict(&s(&[2.0, 1.0]), None),
            Verdict::Holds
        );
        assert_eq!(
            ClaimKind::More.verdict(&[Some(2.0), None], None),
            Verdict::NotMeasured
        );
        assert_eq!(ClaimKind::Above.verdict(&s(&[1.34]), None), Verdict::Holds);
        assert_eq!(
            ClaimKind::Below.verdict(&s(&[1.34]), Some(1.2)),
            Verdict::DoesNotHold
        );
        // A claim given the wrong number of figures is never a verdict.
        assert_eq!(
            ClaimKind::Less.verdict(&s(&[1.0]), None),
            Verdict::NotMeasured
        );
        assert_eq!(
            ClaimKind::Least.verdict(&s(&[1.0, 2.0, 1.5]), None),
            Verdict::Holds
        );
        assert_eq!(
            ClaimKind::Least.verdict(&s(&[1.0, 2.0, 0.5]), None),
            Verdict::DoesNotHold
        );
        assert_eq!(
            ClaimKind::Most.verdict(&s(&[3.0, 2.0, 1.5]), None),
            Verdict::Holds
        );
        assert_eq!(
            ClaimKind::Most.verdict(&s(&[1.0]), None),
            Verdict::NotMeasured
        );
    }
}
