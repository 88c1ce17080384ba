//! JSON and CSV reports, both under [`SCHEMA_VERSION`] (docs/results.md
//! documents every field and column).

use serde_json::{Map, Value, json};

use crate::metrics::Metric;
use crate::results::RunView;

/// The version of the JSON and CSV layouts: raised when a field or column
/// is renamed or removed (added ones keep it).
pub const SCHEMA_VERSION: u32 = 1;

/// Stored figures by name, null where not measured.
fn figures(f: &std::collections::BTreeMap<Metric, crate::metrics::Figure>) -> Map<String, Value> {
    f.iter()
        .map(|(k, v)| {
            (
                k.name().to_string(),
                v.value().map_or(Value::Null, |v| json!(v)),
            )
        })
        .collect()
}

/// The run as JSON: run facts, then per step every figure of
/// [`Metric`] (null when not measured, with the reason under `not_measured`),
/// extras, intervals and `--slice` slices with their figures, and latency per operation kind {count, mean, p50, p95, p99, p999, max} in µs.
pub fn render(run: &RunView) -> String {
    let steps: Vec<Value> = run
        .steps
        .iter()
        .map(|s| {
            let mut figs = Map::new();
            let mut why = Map::new();
            for m in Metric::ALL {
                let f = s.figures.get(m);
                let v = f.and_then(crate::metrics::Figure::value);
                figs.insert(m.name().into(), v.map_or(Value::Null, |v| json!(v)));
                if v.is_none() {
                    why.insert(m.name().into(), json!(f.map_or("not recorded", |f| f.why().unwrap_or_default())));
                }
            }
            let lat: Map<String, Value> = s
                .latencies
                .iter()
                .map(|(op, l)| (op.clone(), json!({"count": l.count, "mean": l.mean, "p50": l.p50, "p95": l.p95, "p99": l.p99, "p999": l.p999, "max": l.max})))
                .collect();
            let intervals: Vec<Value> = s
                .intervals
                .iter()
                .map(|i| {
                    json!({"idx": i.idx, "t0": i.t0, "t1": i.t1, "ops": i.ops, "bg_ops": i.bg_ops, "figures": figures(&i.figures)})
                })
                .collect();
            let slices: Vec<Value> = s
                .slices
                .iter()
                .map(|i| {
                    json!({"idx": i.idx, "t0": i.t0, "t1": i.t1, "ops": i.ops, "partial": i.partial, "figures": figures(&i.figures)})
                })
                .collect();
            let mut o = json!({
                "engine": s.engine, "step": s.step, "rep": s.rep, "status": s.status, "error": s.error, "secs": s.secs,
                "settle": s.settle, "latency": lat, "notes": s.notes, "model_checks": s.checks,
                "extras": s.extras.rows().into_iter().map(|(k, v)| (k, json!(v))).collect::<Map<String, Value>>(),
                "not_measured": why, "intervals": intervals, "slices": slices,
                "rates": s.rates.iter().map(|(a, b, v)| json!({"t0": a, "t1": b, "ops_per_sec": v})).collect::<Vec<_>>(),
                "latency_spectrum": s.spectra.iter().map(|(op, sp)| (op.clone(), json!(sp.iter().map(|(p, v)| json!({"percentile": p, "us": v})).collect::<Vec<_>>()))).collect::<Map<String, Value>>(),
            });
            if let Value::Object(m) = &mut o {
                m.extend(figs);
            }
            o
        })
        .collect();
    let mut v = json!({
        "schema_version": SCHEMA_VERSION,
        "run": {"id": run.id, "started": run.started, "ended": run.ended, "status": run.status, "command": run.command,
                "workload": run.workload, "engines": run.engines, "seed": run.seed, "config": run.config,
                "versions": run.versions, "machine": run.machine},
        "steps": steps,
    });
    if let (Some(c), Value::Object(m)) = (&run.clients, &mut v) {
        m.insert("clients".into(), json!(c));
    }
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

/// Every figure as JSON.
pub struct Json;

impl crate::Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }
    fn about(&self) -> &'static str {
        "Every figure, stable names"
    }
    fn render(&self, run: &RunView, _: &crate::Inputs<'_>) -> anyhow::Result<String> {
        Ok(render(run))
    }
}

#[cfg(test)]
mod doc_tests {
    use super::*;

    #[test]
    fn docs_results_md_names_every_figure() {
        let doc = include_str!("../../../docs/results.md");
        for m in Metric::ALL {
            assert!(doc.contains(&format!("| `{}` |", m.name())), "{}", m.name());
        }
        assert!(doc.contains(&format!("now **{SCHEMA_VERSION}**")));
    }
}
