//! The clients of a run (`--clients`): who they were, and each client's
//! rows beside their merge (the run's figures in the other tables).

use std::fmt::Write;

use super::table::Table;
use crate::results::RunView;

/// One row group: client, ops/s, CPU per op, start lag (ms), response
/// times per op kind, status.
type Row = (
    String,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Vec<(String, crate::metrics::LatencySummary)>,
    String,
);

/// The clients' tables; empty for a run of one client.
// Long: the clients' tables (who joined, skew, each client's steps) built from
// one pass over the run.
pub fn render(run: &RunView) -> String {
    let Some(c) = &run.clients else {
        return String::new();
    };
    let mut o = String::new();
    let mut t = Table::new(
        format!(
            "the run's clients ({} of {} registered; run name {}): clock offsets measured against the store's",
            c.joined.len(),
            c.clients,
            c.name
        ),
        "client",
    )
    .label("host")
    .figure("skew.ms")
    .label("status")
    .label("error");
    for j in &c.joined {
        t.row(vec![
            j.client.to_string(),
            j.host.clone(),
            format!("{:+.1}", -j.skew * 1e3),
            j.status.clone(),
            j.error.clone().unwrap_or_default(),
        ]);
    }
    o.push_str(&t.text());
    let mut t = Table::new(
        "each client's steps, and their merge (all: throughput summed, percentiles of the merged histograms)",
        "engine",
    )
    .label("step")
    .label("client")
    .figure("ops/s")
    .figure("cl.cpu")
    .figure("start.ms")
    .label("op")
    .figure("count")
    .figure("p50")
    .figure("p99")
    .figure("p99.9")
    .label("status");
    let num = |v: Option<f64>, p: usize| v.map_or("-".to_string(), |v| format!("{v:.p$}"));
    for s in &run.steps {
        let mine: Vec<_> = c
            .steps
            .iter()
            .filter(|r| r.ordinal == s.ordinal && r.engine == s.engine && r.step == s.step)
            .collect();
        let mut rows: Vec<Row> = mine
            .iter()
            .map(|r| {
                (
                    r.client.to_string(),
                    r.ops_per_sec,
                    r.client_cpu_us_per_op,
                    r.start_lag.map(|l| l * 1e3),
                    r.latencies.clone(),
                    r.status.name().to_string(),
                )
            })
            .collect();
        rows.push((
            "all".into(),
            s.fig(crate::metrics::Metric::OpsPerSec),
            s.fig(crate::metrics::Metric::ClientCpuUsPerOp),
            mine.iter()
                .filter_map(|r| r.start_lag)
                .reduce(f64::max)
                .map(|l| l * 1e3),
            s.latencies.clone(),
            s.status.name().to_string(),
        ));
        for (client, ops, cpu, lag, lats, status) in rows {
            let lats = if lats.is_empty() {
                vec![(String::from("-"), Default::default())]
            } else {
                lats
            };
            for (op, l) in lats {
                let l: crate::metrics::LatencySummary = l;
                t.row(vec![
                    s.engine.clone(),
                    s.step.clone(),
                    client.clone(),
                    num(ops, 0),
                    num(cpu, 1),
                    num(lag, 1),
                    op,
                    l.count.to_string(),
                    l.p50.to_string(),
                    l.p99.to_string(),
                    l.p999.to_string(),
                    status.clone(),
                ]);
            }
        }
    }
    o.push_str(&t.text());
    let _ = writeln!(
        o,
        "start.ms: from the step's start barrier releasing (the last client arriving) to the client starting its workers, on the store's clock; for all, the latest"
    );
    o
}
