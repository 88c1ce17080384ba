//! Text tables in the seeds' shape.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::compare::{engines, render_ratios};
use super::parts::{cell, extra_value, gb, header, notes, workload_notes};
use super::summary::{SIZE_TITLE, fig, pivot_as, size};
use super::table::Table;
use crate::metrics::{Figure, Metric};
use crate::names::Status;
use crate::results::{RunView, StepView};

/// Renders the run's tables; with several engines, a ratio table against
/// `base` (default: the first engine) follows the efficiency table.
pub fn render(run: &RunView, base: Option<&str>) -> String {
    let mut o = header(run);
    o.push_str(&super::summary::legend(run).text());
    let es = engines(run);
    // 1. Throughput side by side; calls where a call is several
    // operations; size after each step.
    let tables = [
        pivot_as(
            run,
            "operations/second for each step",
            true,
            false,
            &fig(Metric::OpsPerSec, 0),
        ),
        pivot_as(
            run,
            "calls/second where a call is several operations (above, ops/s counts each row of a batch \
             and each document a range query returns; here each batch or query counts once)",
            false,
            false,
            &|s| s.extras.harness.calls_per_sec.map(|v| format!("{v:.0}")),
        ),
        pivot_as(run, SIZE_TITLE, true, false, &size),
    ];
    for t in &tables {
        o.push_str(&t.text());
    }
    // 3. Efficiency per (engine, step).
    let (t, mut notes) = efficiency(run);
    o.push_str(&t.text());
    o.push_str(&super::steps::render_insert(run));
    // 3a. The client's own cost, where the engine is a server.
    let (t, more) = client_cost(run);
    o.push_str(&t.text());
    notes.extend(more);
    // 3b. The server's own counters, where the engine is a server.
    o.push_str(&server_counters(run).text());
    o.push_str(&replication(run).text());
    o.push_str(&host_counters(run).text());
    // 3b. Ratios to the base engine.
    if let Some(b) = base.map(str::to_string).or_else(|| es.first().cloned()) {
        o.push_str(&super::repeat::render(run));
        o.push_str(&render_ratios(run, &b));
    }
    o.push_str(&super::compare::render_corner_ratios(run));
    // 4. Response time.
    o.push_str(&response_times(run).text());
    o.push_str(&super::steps::render_slices(run));
    o.push_str(&super::slices::render(run));
    o.push_str(&super::theory::render(run));
    o.push_str(&super::sweep::render(run));
    o.push_str(&workload_figures(run));
    o.push_str(&workload_notes(run));
    let notes: Vec<String> = notes.into_iter().collect();
    o.push_str(&self::notes(run, &notes));
    o.push_str(&super::concurrency::render(run));
    o.push_str(&super::clients::render(run));
    let _ = writeln!(o, "\n{LEGEND}");
    o
}

/// Efficiency per (engine, step), with a note for every figure not
/// measured (but write-amp of a step that wrote nothing: its `-` says
/// enough).
pub fn efficiency(run: &RunView) -> (Table, BTreeSet<String>) {
    let mut t = Table::new("efficiency per operation", "ops").right_first();
    for c in [
        "db.gb", "r/o", "rKB/o", "wKB/o", "cs/o", "cpu/o", "cl.cpu", "rss.gb", "s-amp", "w-amp",
    ] {
        t = t.figure(c);
    }
    t = t.label("engine").label("step");
    let mut notes = BTreeSet::new();
    for s in &run.steps {
        for n in [
            Metric::RPerOp,
            Metric::WkbPerOp,
            Metric::SpaceAmp,
            Metric::WriteAmp,
        ] {
            if let Some(Figure::NotMeasured(why)) = s.figures.get(&n) {
                if why.contains("wrote nothing") {
                    continue;
                }
                notes.insert(format!(
                    "{n} not measured for {} {}: {why}",
                    s.engine, s.step
                ));
            }
        }
        let status = if s.status == Status::Done {
            String::new()
        } else {
            format!(" ({})", s.status)
        };
        t.row(vec![
            cell(s.fig(Metric::OpsPerSec), 0),
            gb(s.fig(Metric::DbBytes)),
            cell(s.fig(Metric::RPerOp), 3),
            cell(s.fig(Metric::RkbPerOp), 3),
            cell(s.fig(Metric::WkbPerOp), 3),
            cell(s.fig(Metric::CsPerOp), 1),
            cell(s.fig(Metric::CpuUsPerOp), 0),
            cell(s.fig(Metric::ClientCpuUsPerOp), 0),
            gb(s.fig(Metric::RssBytes)),
            cell(s.fig(Metric::SpaceAmp), 2),
            cell(s.fig(Metric::WriteAmp), 2),
            s.engine.clone(),
            format!("{}{status}", s.step),
        ]);
    }
    (t, notes)
}

/// The client's own cost per operation where the engine is a server
/// (no rows otherwise), with a note for system calls not measured.
pub fn client_cost(run: &RunView) -> (Table, Vec<String>) {
    let mut t = Table::new(
        "client cost per operation (ampbench's own process, server engines)",
        "cpu.us",
    )
    .right_first();
    for c in ["user.us", "sys.us", "cs/o", "syscall/o"] {
        t = t.figure(c);
    }
    t = t.label("engine").label("step");
    let mut notes = Vec::new();
    for s in run
        .steps
        .iter()
        .filter(|s| s.fig(Metric::ClientCpuUsPerOp).is_some())
    {
        t.row(vec![
            cell(s.fig(Metric::ClientCpuUsPerOp), 1),
            cell(s.fig(Metric::ClientUserUsPerOp), 1),
            cell(s.fig(Metric::ClientSysUsPerOp), 1),
            cell(s.fig(Metric::ClientCsPerOp), 2),
            cell(s.fig(Metric::ClientSyscallsPerOp), 2),
            s.engine.clone(),
            s.step.clone(),
        ]);
        if let Some(Figure::NotMeasured(why)) = s.figures.get(&Metric::ClientSyscallsPerOp) {
            notes.push(format!(
                "client system calls not measured for {} {}: {why}",
                s.engine, s.step
            ));
        }
    }
    (t, notes)
}

/// Efficiency per operation by a server's own counters (no rows for
/// embedded engines): the only efficiency figures of an external target,
/// and a second source beside /proc for a server ampbench started.
pub fn server_counters(run: &RunView) -> Table {
    let mut t = Table::new(
        "efficiency per operation by the server's own counters (SHOW GLOBAL STATUS, pg_stat_*)",
        "ops",
    )
    .right_first();
    for c in ["srv.gb", "r/o", "rKB/o", "wKB/o", "logKB/o", "s-amp"] {
        t = t.figure(c);
    }
    t = t.label("engine").label("step");
    for s in run
        .steps
        .iter()
        .filter(|s| s.fig(Metric::SrvDbBytes).is_some() || s.fig(Metric::SrvWkbPerOp).is_some())
    {
        let logical = s.fig(Metric::LogicalBytes).filter(|l| *l > 0.0);
        t.row(vec![
            cell(s.fig(Metric::OpsPerSec), 0),
            gb(s.fig(Metric::SrvDbBytes)),
            cell(s.fig(Metric::SrvRPerOp), 3),
            cell(s.fig(Metric::SrvRkbPerOp), 3),
            cell(s.fig(Metric::SrvWkbPerOp), 3),
            cell(s.fig(Metric::SrvLogKbPerOp), 3),
            cell(
                s.fig(Metric::SrvDbBytes).zip(logical).map(|(d, l)| d / l),
                2,
            ),
            s.engine.clone(),
            s.step.clone(),
        ]);
    }
    t
}

/// Efficiency per operation by the server host's node exporter
/// (`--host-metrics`): its devices and CPU, whatever else runs there.
pub fn host_counters(run: &RunView) -> Table {
    let mut t = Table::new(
        "efficiency per operation by the server host's node exporter (--host-metrics)",
        "ops",
    )
    .right_first();
    for c in ["r/o", "rKB/o", "wKB/o", "cpu.us/o"] {
        t = t.figure(c);
    }
    t = t.label("engine").label("step");
    for s in run
        .steps
        .iter()
        .filter(|s| s.fig(Metric::HostCpuUsPerOp).is_some())
    {
        t.row(vec![
            cell(s.fig(Metric::OpsPerSec), 0),
            cell(s.fig(Metric::HostRPerOp), 3),
            cell(s.fig(Metric::HostRkbPerOp), 3),
            cell(s.fig(Metric::HostWkbPerOp), 3),
            cell(s.fig(Metric::HostCpuUsPerOp), 1),
            s.engine.clone(),
            s.step.clone(),
        ]);
    }
    t
}

/// A Galera server's replication per step (its `wsrep_*` counters, end
/// less start, at the first endpoint): write sets and KB replicated and
/// received per operation, certification failures and brute-force
/// aborts, and flow control (ms paused, messages sent).
pub fn replication(run: &RunView) -> Table {
    let mut t = Table::new(
        "Galera replication per step (wsrep_* end less start: summed over the nodes ampbench started, or a target's first endpoint)",
        "ops",
    )
    .right_first();
    for c in [
        "ws/o",
        "replKB/o",
        "recvKB/o",
        "cert.fail",
        "bf.abort",
        "fc.ms",
        "fc.sent",
    ] {
        t = t.figure(c);
    }
    t = t.label("engine").label("step");
    for s in run.steps.iter().filter(|s| !s.replication.is_empty()) {
        let d = |n: &str| s.replication.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        let ops = s.fig(Metric::Ops).filter(|o| *o > 0.0);
        let per = |v: Option<f64>, scale: f64| v.zip(ops).map(|(v, o)| v / scale / o);
        t.row(vec![
            cell(s.fig(Metric::OpsPerSec), 0),
            cell(per(d("wsrep_replicated"), 1.0), 3),
            cell(per(d("wsrep_replicated_bytes"), 1024.0), 3),
            cell(per(d("wsrep_received_bytes"), 1024.0), 3),
            cell(d("wsrep_local_cert_failures"), 0),
            cell(d("wsrep_local_bf_aborts"), 0),
            cell(d("wsrep_flow_control_paused_ns").map(|n| n / 1e6), 1),
            cell(d("wsrep_flow_control_sent"), 0),
            s.engine.clone(),
            s.step.clone(),
        ]);
    }
    t
}

/// Response time per (engine, step, kind of operation), µs.
pub fn response_times(run: &RunView) -> Table {
    let mut t = Table::new("response time per operation (µs)", "engine")
        .label("step")
        .label("op");
    for c in ["count", "mean", "p50", "p95", "p99", "p99.9", "max"] {
        t = t.figure(c);
    }
    for s in &run.steps {
        for (op, l) in &s.latencies {
            t.row(vec![
                s.engine.clone(),
                s.step.clone(),
                op.clone(),
                l.count.to_string(),
                format!("{:.1}", l.mean),
                l.p50.to_string(),
                l.p95.to_string(),
                l.p99.to_string(),
                l.p999.to_string(),
                l.max.to_string(),
            ]);
        }
    }
    t
}

/// What each column's name means.
pub const LEGEND: &str = "ops: operations/s · db.gb: data dir allocated GB · r/o, rKB/o, wKB/o: device reads, KB read, KB written per op · \
     cs/o, cpu/o: context switches and CPU µs per op of the engine's process (a server with its children) · \
     cl.cpu: ampbench's own CPU µs per op when the engine is a server · rss.gb: the engine's RSS · \
     s-amp: db bytes / live logical bytes · w-amp: device bytes written / logical bytes written";

/// Workload figures (links per node, consistency check, found rates…)
/// per engine and step.
fn workload_figures(run: &RunView) -> String {
    let mut o = String::new();
    let with = |s: &&StepView| !s.extras.shown_with_workload(true).is_empty();
    if !run.steps.iter().any(|s| with(&s)) {
        return o;
    }
    let _ = writeln!(o, "\nworkload figures");
    for s in run.steps.iter().filter(with) {
        let v: Vec<String> = s
            .extras
            .shown_with_workload(true)
            .iter()
            .map(|(k, v)| format!("{k}={}", extra_value(*v)))
            .collect();
        let _ = writeln!(o, "{:<15} {:<10} {}", s.engine, s.step, v.join(" "));
    }
    o
}

/// The full text report.
pub struct Text;

impl crate::Exporter for Text {
    fn name(&self) -> &'static str {
        "text"
    }
    fn about(&self) -> &'static str {
        "Text tables in the seeds' shape"
    }
    fn render(&self, run: &RunView, on: &crate::Inputs<'_>) -> anyhow::Result<String> {
        let t = render(&crate::repeat::collapse(run), on.base);
        Ok(crate::with_post(run, t, false))
    }
}
