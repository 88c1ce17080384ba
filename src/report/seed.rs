//! A seed post's table beside this machine's: the figures a post
//! published (typed into its plan file under `[post]`, with the post's
//! file name and the table they come from), the same figure measured by
//! the run, and whether each comparison the post draws goes the same way
//! here. Absolute numbers are not expected to match (other hardware, a
//! far smaller scale); the directions are what a reproduction checks.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::UsageError;
use crate::metrics::Metric;
use crate::results::{RunView, StepView};

/// A plan file's `[post]` table: which seed post the plan reproduces,
/// what it published and which comparisons it draws.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SeedSpec {
    /// The post's file in the seeds directory (`003_00017efa7efe7952.txt`).
    pub file: String,
    /// The post's title.
    pub title: String,
    /// What this plan runs, and how it differs from the post's setup.
    pub setup: String,
    /// The workload parameters `-p scale=X` multiplies (sizes such as
    /// `maxid1` or `docs`); the scale used is stored with the run.
    #[serde(default)]
    pub scale_params: Vec<String>,
    /// The post's published figures, each with where ours comes from.
    #[serde(default, rename = "figure")]
    pub figures: Vec<Published>,
    /// The comparisons the post draws between its figures.
    #[serde(default, rename = "claim")]
    pub claims: Vec<Claim>,
}

/// One published figure.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Published {
    /// A short name the claims refer to (`tps.disk-array.ratio`).
    pub id: String,
    /// The post's table (its caption or heading).
    pub table: String,
    /// The row and column of that table, as the post labels them.
    pub row: String,
    /// The column.
    pub column: String,
    /// The post's number; absent where the post shows it only in a
    /// graph (printed as `graph`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// Where this run's figure comes from.
    pub ours: Ref,
}

/// A figure of the run: an engine's (as labelled in the report, e.g.
/// `io:mariadb-myrocks`) figure in a step, or the ratio of two.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Ref {
    /// The engine label.
    pub engine: String,
    /// The step (`request`, `request@disk-array`), or `all`: every step
    /// of the engine added up, for figures that add (the column families'
    /// MB written, as a post's whole-run totals; see [`whole_run`]).
    pub step: String,
    /// A figure's stable name (`ops_per_sec`, `wkb_per_op`, `w_amp`…) or
    /// a workload figure (`getlinkslist_rows_mean`).
    pub figure: String,
    /// The step's `--slice` slice, 1-based (a post's "2nd hour" is the
    /// 2nd slice), instead of the whole step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice: Option<usize>,
    /// Divide by this figure (for the post's ratio columns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over: Option<Box<Ref>>,
}

/// A direction the post states between its figures.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// The comparison in the post's words.
    pub text: String,
    /// `rises` (each figure above the one before), `falls`, `less` (the
    /// first below `factor` × the second), `more` (the first above
    /// `factor` × the second), `least` and `most` (the first below, or
    /// above, every other), `below` or `above` (one figure against
    /// `factor`).
    pub kind: ClaimKind,
    /// The figures' ids, in order.
    pub figures: Vec<String>,
    /// For `less` and `more`: the factor (default 1); for `below` and
    /// `above`: the value compared with (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub factor: Option<f64>,
}

/// The shape of a claim.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ClaimKind {
    /// Strictly increasing along the figures.
    Rises,
    /// Strictly decreasing.
    Falls,
    /// The first below factor × the second.
    Less,
    /// The first above factor × the second.
    More,
    /// The first below every other.
    Least,
    /// The first above every other.
    Most,
    /// The one figure below factor.
    Below,
    /// The one figure above factor.
    Above,
}

/// Whether a claim's direction holds for a list of values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It holds.
    Holds,
    /// It does not.
    DoesNotHold,
    /// A figure was not measured.
    NotMeasured,
}

impl Verdict {
    /// The words the report prints.
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::DoesNotHold => "does not hold",
            Verdict::NotMeasured => "not measured",
        }
    }
}

impl ClaimKind {
    /// The verdict on `values` (None where a figure was not measured).
    pub fn verdict(self, values: &[Option<f64>], factor: Option<f64>) -> Verdict {
        let Some(v) = values.iter().copied().collect::<Option<Vec<f64>>>() else {
            return Verdict::NotMeasured;
        };
        let f = factor.unwrap_or(1.0);
        let ok = match (self, v.as_slice()) {
            (ClaimKind::Rises, _) if v.len() >= 2 => v.windows(2).all(|w| w[0] < w[1]),
            (ClaimKind::Falls, _) if v.len() >= 2 => v.windows(2).all(|w| w[0] > w[1]),
            (ClaimKind::Less, [a, b]) => *a < f * b,
            (ClaimKind::Least, [a, rest @ ..]) if !rest.is_empty() => rest.iter().all(|x| a < x),
            (ClaimKind::Most, [a, rest @ ..]) if !rest.is_empty() => rest.iter().all(|x| a > x),
            (ClaimKind::More, [a, b]) => *a > f * b,
            (ClaimKind::Below, [a]) => *a < f,
            (ClaimKind::Above, [a]) => *a > f,
            _ => return Verdict::NotMeasured,
        };
        if ok {
            Verdict::Holds
        } else {
            Verdict::DoesNotHold
        }
    }
}

impl SeedSpec {
    /// Checks that every claim names known figures, in a number its kind
    /// takes; the error names the claim.
    pub fn check(&self) -> Result<(), String> {
        for c in &self.claims {
            for id in &c.figures {
                if !self.figures.iter().any(|f| &f.id == id) {
                    return Err(format!("seed claim '{}': no figure with id '{id}'", c.text));
                }
            }
            let n = c.figures.len();
            let (fits, takes) = match c.kind {
                ClaimKind::Rises | ClaimKind::Falls | ClaimKind::Least | ClaimKind::Most => {
                    (n >= 2, "two or more")
                }
                ClaimKind::Less | ClaimKind::More => (n == 2, "two"),
                ClaimKind::Below | ClaimKind::Above => (n == 1, "one"),
            };
            if !fits {
                return Err(format!(
                    "seed claim '{}': {:?} takes {takes} figure(s), it names {n}",
                    c.text, c.kind
                ));
            }
        }
        Ok(())
    }
}

/// A figure of an engine's whole run (`step = "all"`): a workload figure
/// (an extra, such as `cf.NAME.flush_mb`) added up over every step, or
/// one made from the column families' writes: `cf_total_mb` (flush and
/// compaction MB of every family), `cf_ingest_mb` (flush MB),
/// `cf_write_amp` (total / ingest) and `cf.NAME.write_amp` (one family's).
/// Throughputs and per-operation figures do not add, so they are None.
pub fn whole_run(run: &RunView, engine: &str, figure: &str) -> Option<f64> {
    let steps: Vec<&StepView> = run.steps.iter().filter(|s| s.engine == engine).collect();
    // None when no step has the figure at all.
    let sum = |keep: &dyn Fn(&str) -> bool| {
        steps
            .iter()
            .flat_map(|s| s.extras.iter().filter(|(k, _)| keep(k)))
            .fold(None, |t: Option<f64>, (_, v)| Some(t.unwrap_or(0.0) + v))
    };
    let cf = |k: &str, f: &str| k.starts_with("cf.") && k.ends_with(f);
    let ratio =
        |t: Option<f64>, i: Option<f64>| t.zip(i).filter(|(_, i)| *i > 0.0).map(|(t, i)| t / i);
    match figure {
        "cf_total_mb" => sum(&|k| cf(k, ".flush_mb") || cf(k, ".compaction_mb")),
        "cf_ingest_mb" => sum(&|k| cf(k, ".flush_mb")),
        "cf_write_amp" => ratio(
            whole_run(run, engine, "cf_total_mb"),
            whole_run(run, engine, "cf_ingest_mb"),
        ),
        f => match f
            .strip_suffix(".write_amp")
            .filter(|n| n.starts_with("cf."))
        {
            Some(n) => {
                let (fl, co) = (format!("{n}.flush_mb"), format!("{n}.compaction_mb"));
                ratio(sum(&|k| k == fl || k == co), sum(&|k| k == fl))
            }
            None if Metric::parse(f).is_ok() => None,
            None => sum(&|k| k == f),
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

/// `r`'s figure in its step (or slice), without `over`.
fn step_value(run: &RunView, r: &Ref) -> Option<f64> {
    let s = run
        .steps
        .iter()
        .find(|s| s.engine == r.engine && s.step == r.step)?;
    match (Metric::parse(&r.figure), r.slice) {
        (Ok(m), None) => s.fig(m),
        (Ok(m), Some(i)) => s.slices.get(i.checked_sub(1)?)?.fig(m),
        (Err(_), None) => s
            .extras
            .iter()
            .find(|(k, _)| k == &r.figure)
            .map(|(_, v)| *v),
        (Err(_), Some(_)) => None,
    }
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
}

/// Every claim of the seed checked against the run.
pub fn check<'a>(seed: &'a SeedSpec, run: &RunView) -> Vec<Checked<'a>> {
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
                post,
                ours,
            }
        })
        .collect()
}

/// The run's seed post, from its stored configuration.
pub fn of_run(run: &RunView) -> Option<SeedSpec> {
    serde_json::from_value(run.config.get("post")?.clone()).ok()
}

/// The scale the run used (`-p scale=`), 1 when not given.
pub fn scale_of(run: &RunView) -> f64 {
    run.config
        .get("post_scale")
        .and_then(|v| v.as_f64())
        .unwrap_or(1.0)
}

/// The text section: the post's figures beside ours, then each claim with
/// its verdict.
pub fn render(seed: &SeedSpec, run: &RunView) -> String {
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
        let _ = writeln!(
            o,
            "  {}: post {}; here {}: {}",
            c.claim.text,
            arrow(
                c.post
                    .iter()
                    .map(|v| v.map_or("graph".into(), num))
                    .collect()
            ),
            arrow(c.ours.iter().map(|v| v.map_or("-".into(), num)).collect()),
            c.verdict.words()
        );
    }
    o
}

/// `-p scale=X` on a seed plan: removes it from the parameters and
/// multiplies each of the seed's `scale_params` by it (rounded; the
/// parameter must be set in the plan). None without `scale`; an error
/// naming the key for a plan without `[seed]`, a bad number, or a size
/// parameter the plan does not set.
pub fn scale(
    seed: Option<&SeedSpec>,
    params: &mut Vec<(String, String)>,
) -> Result<Option<f64>, crate::UsageError> {
    let Some(i) = params.iter().rposition(|(k, _)| k == "scale") else {
        return Ok(None);
    };
    let (_, v) = params.remove(i);
    params.retain(|(k, _)| k != "scale");
    let Some(seed) = seed else {
        return Err(UsageError(
            "-p scale: only a seed plan (plans/seeds/, with a [post] table) takes a scale".into(),
        ));
    };
    let x: f64 = v
        .parse()
        .ok()
        .filter(|x: &f64| x.is_finite() && *x > 0.0 && *x <= 1000.0)
        .ok_or_else(|| {
            UsageError(format!(
                "-p scale={v}: expected a number above 0, at most 1000"
            ))
        })?;
    for key in &seed.scale_params {
        let Some(j) = params.iter().rposition(|(k, _)| k == key) else {
            return Err(UsageError(format!(
                "-p scale: the seed plan scales '{key}' but does not set it under [params]"
            )));
        };
        let n: f64 = params[j].1.parse().map_err(|_| {
            UsageError(format!(
                "-p scale: '{key}' = '{}' is not a number",
                params[j].1
            ))
        })?;
        params[j].1 = format!("{}", (n * x).round().max(1.0) as u64);
    }
    Ok(Some(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_multiplies_the_named_sizes_and_names_bad_input() {
        let seed = SeedSpec {
            scale_params: vec!["maxid1".into()],
            ..SeedSpec::default()
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
