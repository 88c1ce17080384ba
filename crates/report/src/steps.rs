//! Per-step tables beside the main ones: the insert benchmark's table in
//! the seeds' shape (ips or qps, per-insert or per-query efficiency, p99
//! and max, size, the query steps' writer against its target) and every
//! step's throughput in ten equal slices (stalls a mean hides).

use std::fmt::Write;

use super::parts::cell;
use crate::metrics::Metric;
use crate::record::SLICES;
use crate::record::workload_figure::{WRITER_BEHIND, WRITER_IPS, WRITER_TARGET_IPS};
use crate::results::{RunView, StepView};

/// True for a step whose operations are queries (`qr100`, `qp500@slow-ssd`).
fn is_query(step: &str) -> bool {
    step.starts_with("qr") || step.starts_with("qp")
}

/// The insert benchmark's table; empty for other workloads.
pub fn render_insert(run: &RunView) -> String {
    let mut o = String::new();
    if run.workload != "insert" {
        return o;
    }
    let _ = writeln!(
        o,
        "\ninsert benchmark: per insert (/i) in load and write steps, per query (/q) in query steps"
    );
    let _ = writeln!(
        o,
        "{:<16} {:<15} {:>4} {:>10} {:>7} {:>8} {:>8} {:>7} {:>6} {:>9} {:>9} {:>7}  writer ips/target",
        "step",
        "engine",
        "",
        "rate",
        "r/x",
        "rKB/x",
        "wKB/x",
        "cpu/x",
        "cs/x",
        "p99.us",
        "max.us",
        "db.gb"
    );
    for s in &run.steps {
        let q = is_query(&s.step);
        let main = s
            .latencies
            .iter()
            .find(|(op, _)| !crate::record::is_background(op));
        let extra = |k: &str| s.extras.workload.get(k).copied();
        let writer = match (extra(WRITER_IPS), extra(WRITER_TARGET_IPS)) {
            (Some(a), Some(t)) => format!(
                "{a:.0}/{t:.0}{}",
                if extra(WRITER_BEHIND).is_some() {
                    " BEHIND"
                } else {
                    ""
                }
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            o,
            "{:<16} {:<15} {:>4} {:>10} {:>7} {:>8} {:>8} {:>7} {:>6} {:>9} {:>9} {:>7}  {writer}",
            s.step,
            s.engine,
            if q {
                "qps"
            } else if s.step.starts_with("l.i") {
                "ips"
            } else {
                "ops"
            },
            cell(s.fig(Metric::OpsPerSec), 0),
            cell(s.fig(Metric::RPerOp), 3),
            cell(s.fig(Metric::RkbPerOp), 3),
            cell(s.fig(Metric::WkbPerOp), 3),
            cell(s.fig(Metric::CpuUsPerOp), 0),
            cell(s.fig(Metric::CsPerOp), 2),
            main.map_or("-".into(), |(_, l)| l.p99.to_string()),
            main.map_or("-".into(), |(_, l)| l.max.to_string()),
            cell(s.fig(Metric::DbBytes).map(|b| b / 1e9), 3),
        );
    }
    let _ = writeln!(
        o,
        "ips: rows inserted/s · ops: indexes built/s (l.x), 1 op (debt) · qps: queries/s (a point query reads rows_per_query ids) · \
         r/x rKB/x wKB/x cpu/x cs/x: device reads, KB read, KB written, CPU µs and context switches of the engine per insert or query \
         (a query step's include its writer's work, as the reference's ios.sh divides by the query rate) · \
         p99, max: the step's own operation (a commit of rows, or a query), µs · writer: achieved and targeted inserts/s per client"
    );
    o
}

/// Every step's throughput in ten equal slices, with the lowest slice as
/// a share of the highest; empty when no step recorded slices.
pub fn render_slices(run: &RunView) -> String {
    let mut o = String::new();
    let rows: Vec<(&StepView, Vec<f64>)> = run
        .steps
        .iter()
        .filter_map(|s| {
            let v = s.extras.harness.slices.clone();
            (v.len() == SLICES).then_some((s, v))
        })
        .collect();
    if rows.is_empty() {
        return o;
    }
    let _ = writeln!(
        o,
        "\nthroughput in {SLICES} equal slices of each step (ops/s), and min/max"
    );
    let _ = write!(o, "{:<15} {:<16}", "engine", "step");
    for i in 1..=SLICES {
        let _ = write!(o, " {:>9}", format!("s{i}"));
    }
    let _ = writeln!(o, " {:>8}", "min/max");
    for (s, v) in rows {
        let _ = write!(o, "{:<15} {:<16}", s.engine, s.step);
        for x in &v {
            let _ = write!(o, " {x:>9.0}");
        }
        let max = v.iter().cloned().fold(0.0, f64::max);
        let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
        let _ = writeln!(
            o,
            " {:>8}",
            if max > 0.0 {
                format!("{:.2}", min / max)
            } else {
                "-".into()
            }
        );
    }
    o
}
