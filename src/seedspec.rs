//! A seed plan's `[post]` table as types: which seed post a plan
//! reproduces, the figures it published and the comparisons it draws
//! (checked by `report::seed` against a run), and `-p scale=X`. Below
//! the plan, the runner and the report, which all read it.

use serde::{Deserialize, Serialize};

use crate::UsageError;

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
