//! A seed plan's `[post]` table as types: which seed post a plan
//! reproduces, the figures it published and the comparisons it draws
//! (checked by `report::post` against a run), and `-p scale=X`. Below
//! the plan, the runner and the report, which all read it.

use serde::{Deserialize, Serialize};

use crate::UsageError;

/// A plan file's `[post]` table: which seed post the plan reproduces,
/// what it published and which comparisons it draws.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PostSpec {
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
    /// The regime the post measured in, as figures of the run with
    /// bounds: a claim naming them is judged only when they hold.
    #[serde(default, rename = "regime", skip_serializing_if = "Vec::is_empty")]
    pub regimes: Vec<Regime>,
}

/// One figure of the post's regime: what the post's setup had (a
/// database many times its memory, a device queue several deep, a
/// server with CPU to spare) as a bound on a figure of the run.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Regime {
    /// A short name claims refer to (`disk.queue.innodb`).
    pub id: String,
    /// What it checks, in words (`InnoDB's device queue at the disk
    /// array`).
    pub text: String,
    /// The post's own figure, where it gives or implies one (printed
    /// beside ours).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post: Option<f64>,
    /// Where this run's figure comes from.
    pub ours: Ref,
    /// Multiply ours by this figure (CPU µs per op times ops per second
    /// is CPU µs per second).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<Ref>,
    /// Multiply ours by this constant (1e-6: µs per second to cores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<f64>,
    /// Divide ours by the run's memory limit (bytes over bytes: a
    /// database-to-memory ratio).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub per_memory: bool,
    /// The least ours may be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// The most ours may be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

impl Regime {
    /// Whether `v` is within the bounds.
    pub fn within(&self, v: f64) -> bool {
        self.min.is_none_or(|m| v >= m) && self.max.is_none_or(|m| v <= m)
    }

    /// The bounds in words: `≥ 4`, `≤ 0.5`, `4 to 8`.
    pub fn bounds(&self) -> String {
        let n = |v: f64| format!("{}", (v * 1000.0).round() / 1000.0);
        match (self.min, self.max) {
            (Some(a), Some(b)) => format!("{} to {}", n(a), n(b)),
            (Some(a), None) => format!("≥ {}", n(a)),
            (None, Some(b)) => format!("≤ {}", n(b)),
            (None, None) => "any".into(),
        }
    }
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
    /// The regime figures (ids of `[[post.regime]]`) that must hold for
    /// the verdict to be judged; outside them the verdict is printed as
    /// not judged, neither a pass nor a failure of the post.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regime: Vec<String>,
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

impl PostSpec {
    /// Checks that every claim names known figures, in a number its kind
    /// takes; the error names the claim.
    pub fn check(&self) -> Result<(), String> {
        for r in &self.regimes {
            if r.min.is_none() && r.max.is_none() {
                return Err(format!("seed regime '{}': give min or max", r.id));
            }
        }
        for c in &self.claims {
            for id in &c.regime {
                if !self.regimes.iter().any(|r| &r.id == id) {
                    return Err(format!("seed claim '{}': no regime with id '{id}'", c.text));
                }
            }
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

/// `-p scale=X` on a seed plan: removes it from the parameters and
/// multiplies each of the seed's `scale_params` by it (rounded; the
/// parameter must be set in the plan). None without `scale`; an error
/// naming the key for a plan without `[post]`, a bad number, or a size
/// parameter the plan does not set.
pub fn scale(
    seed: Option<&PostSpec>,
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
