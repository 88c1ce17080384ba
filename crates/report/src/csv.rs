//! The CSV report: one row per (engine, step, repetition) with every
//! figure, columns named as in JSON (docs/results.md).

use crate::json::SCHEMA_VERSION;
use crate::metrics::Metric;
use crate::results::RunView;

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
pub fn render(run: &RunView) -> String {
    let mut w = ::csv::Writer::from_writer(Vec::new());
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

/// One CSV row per (engine, step).
pub struct Csv;

impl crate::Exporter for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }
    fn about(&self) -> &'static str {
        "One row per (engine, step)"
    }
    fn render(&self, run: &RunView, _: &crate::Inputs<'_>) -> anyhow::Result<String> {
        Ok(render(run))
    }
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
        let text = render(&run);
        let mut r = ::csv::Reader::from_reader(text.as_bytes());
        let head: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(&head[..CSV_FIXED.len()], CSV_FIXED);
        assert_eq!(head.len(), CSV_FIXED.len() + Metric::ALL.len());
        let rows: Vec<::csv::StringRecord> = r.records().map(Result::unwrap).collect();
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

    #[test]
    fn docs_results_md_names_every_column() {
        let doc = include_str!("../../../docs/results.md");
        for c in CSV_FIXED {
            assert!(doc.contains(&format!("`{c}`")), "{c}");
        }
    }
}
