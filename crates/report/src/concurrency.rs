//! The concurrency table of a `--threads 1,2,4,…` sweep: per engine and
//! step, throughput and p99 at each level, and the Universal Scalability
//! Law fitted to them with each level's residual.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::metrics::{Metric, usl};
use crate::results::read::RunView;

/// A sweep's rows: (engine, step) → [(threads, ops/s, p99 µs)].
type Sweeps = BTreeMap<(String, String), Vec<(usize, f64, Option<u64>)>>;

/// The steps a thread sweep ran at a level (`STEP@N`), grouped.
pub(crate) fn sweeps(run: &RunView) -> Sweeps {
    let mut m: Sweeps = BTreeMap::new();
    for s in &run.steps {
        let (Some(n), Some(x)) = (s.identity.level, s.fig(Metric::OpsPerSec)) else {
            continue;
        };
        let base = s.identity.without_level();
        // The p99 of the operation kind done most.
        let p99 = s
            .latencies
            .iter()
            .max_by_key(|(_, l)| l.count)
            .map(|(_, l)| l.p99);
        m.entry((s.engine.clone(), base))
            .or_default()
            .push((n, x, p99));
    }
    m
}

/// The section, empty when the run has no sweep.
pub fn render(run: &RunView) -> String {
    let mut o = String::new();
    let sw = sweeps(run);
    if sw.is_empty() {
        return o;
    }
    let _ = writeln!(
        o,
        "\nconcurrency: throughput and p99 per thread count, with the Universal Scalability Law fitted\n\
         (X(N) = λN / (1 + σ(N−1) + κN(N−1)); resid = measured / fitted − 1)"
    );
    for ((engine, step), rows) in &sw {
        let pts: Vec<(f64, f64)> = rows.iter().map(|r| (r.0 as f64, r.1)).collect();
        let f = usl::fit(&pts);
        let _ = writeln!(o, "{engine} {step}");
        let _ = writeln!(
            o,
            "  {:>7} {:>12} {:>10} {:>12} {:>8}",
            "threads", "ops/s", "p99 µs", "USL ops/s", "resid"
        );
        for (i, (n, x, p99)) in rows.iter().enumerate() {
            let (pred, res) = match &f {
                Some(f) => (
                    format!("{:.0}", f.predict(*n as f64)),
                    format!("{:+.1}%", f.residuals[i] * 100.0),
                ),
                None => ("-".into(), "-".into()),
            };
            let _ = writeln!(
                o,
                "  {n:>7} {x:>12.0} {:>10} {pred:>12} {res:>8}",
                p99.map_or("-".into(), |v| v.to_string())
            );
        }
        let _ = match &f {
            Some(f) => writeln!(
                o,
                "  USL: λ = {:.0} ops/s per thread, σ = {:.4}, κ = {:.5}, {}",
                f.lambda,
                f.sigma,
                f.kappa,
                match f.peak_n {
                    Some(p) => format!("peak at N = {p:.1} ({:.0} ops/s)", f.predict(p)),
                    None => "no peak (κ = 0)".into(),
                }
            ),
            None => writeln!(o, "  USL: not fitted (needs three thread counts or more)"),
        };
    }
    o
}
