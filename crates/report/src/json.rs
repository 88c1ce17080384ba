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

/// The CSV's columns before the figures.
pub const CSV_FIXED: &[&str] = &[
    "schema_version",
    "run",
    "engine",
    "step",
    "rep",
    "status",
    "secs",
    "error",
];

/// One CSV row per (engine, step, repetition) with every figure, written
/// by the `csv` crate (RFC 4180 quoting); an empty cell is a figure not
/// measured (the JSON report says why).
pub fn csv(run: &RunView) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let header: Vec<&str> = CSV_FIXED.iter().copied().chain(Metric::names()).collect();
    // Writing to a Vec cannot fail: the errors are I/O errors.
    let _ = w.write_record(&header);
    for s in &run.steps {
        let mut row: Vec<String> = vec![
            SCHEMA_VERSION.to_string(),
            run.id.to_string(),
            s.engine.clone(),
            s.step.clone(),
            s.rep.to_string(),
            s.status.to_string(),
            s.secs.map_or(String::new(), |v| v.to_string()),
            s.error.clone().unwrap_or_default(),
        ];
        row.extend(
            Metric::ALL
                .iter()
                .map(|m| s.fig(*m).map_or(String::new(), |v| v.to_string())),
        );
        let _ = w.write_record(&row);
    }
    w.into_inner()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::Status;
    use crate::results::StepView;

    #[test]
    fn csv_round_trips_commas_and_quotes() {
        let step = StepView {
            rep: 1,
            status: Status::Failed,
            error: Some("write /d/x: No space left, said \"ENOSPC\"\nthen stopped".into()),
            secs: Some(1.5),
            ..StepView::with_figures("rocksdb[a=1,b=2]", "load", &[(Metric::OpsPerSec, 1234.5)])
        };
        let run = RunView {
            id: 7,
            steps: vec![step.clone()],
            ..RunView::empty()
        };
        let text = csv(&run);
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let head: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(&head[..CSV_FIXED.len()], CSV_FIXED);
        assert_eq!(head.len(), CSV_FIXED.len() + Metric::ALL.len());
        let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 1);
        let get = |k: &str| rows[0][head.iter().position(|h| h == k).unwrap()].to_string();
        assert_eq!(get("engine"), step.engine);
        assert_eq!(get("error"), step.error.unwrap());
        assert_eq!(
            (get("run"), get("rep"), get("status")),
            ("7".into(), "1".into(), "failed".into())
        );
        assert_eq!(get("ops_per_sec").parse::<f64>().unwrap(), 1234.5);
        assert_eq!(get("write_amp"), "", "not measured: empty");
        assert_eq!(get("schema_version"), SCHEMA_VERSION.to_string());
    }
}

#[cfg(test)]
mod doc_tests {
    use super::*;

    #[test]
    fn docs_results_md_names_every_figure_and_column() {
        let doc = include_str!("../../../docs/results.md");
        for m in Metric::ALL {
            assert!(doc.contains(&format!("| `{}` |", m.name())), "{}", m.name());
        }
        for c in CSV_FIXED {
            assert!(doc.contains(&format!("`{c}`")), "{c}");
        }
        assert!(doc.contains(&format!("now **{SCHEMA_VERSION}**")));
    }
}
