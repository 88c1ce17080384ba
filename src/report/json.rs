//! JSON and CSV reports.

use serde_json::{Map, Value, json};

use crate::metrics::Metric;
use crate::results::RunView;

/// Stored figures by name, null where not measured.
fn figures(
    f: &std::collections::BTreeMap<Metric, crate::results::read::Stored>,
) -> Map<String, Value> {
    f.iter()
        .map(|(k, (v, _))| (k.name().to_string(), v.map_or(Value::Null, |v| json!(v))))
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
                let (v, note) = s.figures.get(m).cloned().unwrap_or((None, Some("not recorded".into())));
                figs.insert(m.name().into(), v.map_or(Value::Null, |v| json!(v)));
                if v.is_none() {
                    why.insert(m.name().into(), json!(note));
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
                "engine": s.engine, "step": s.step, "status": s.status, "error": s.error, "secs": s.secs,
                "settle": s.settle, "latency": lat, "notes": s.notes,
                "extras": s.extras.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<Map<String, Value>>(),
                "not_measured": why, "intervals": intervals, "slices": slices,
            });
            if let Value::Object(m) = &mut o {
                m.extend(figs);
            }
            o
        })
        .collect();
    let v = json!({
        "run": {"id": run.id, "started": run.started, "ended": run.ended, "status": run.status, "command": run.command,
                "workload": run.workload, "engines": run.engines, "seed": run.seed, "config": run.config,
                "versions": run.versions, "machine": run.machine},
        "steps": steps,
    });
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

/// One CSV row per (engine, step) with every figure; empty cells are not measured.
pub fn csv(run: &RunView) -> String {
    let mut out = format!("run,engine,step,status,{}\n", Metric::names().join(","));
    for s in &run.steps {
        let cells: Vec<String> = Metric::ALL
            .iter()
            .map(|m| s.fig(*m).map_or(String::new(), |v| format!("{v}")))
            .collect();
        out.push_str(&format!(
            "{},{},{},{},{}\n",
            run.id,
            s.engine,
            s.step,
            s.status,
            cells.join(",")
        ));
    }
    out
}
