//! The clients of one run (`--clients`), merged for the reports: each
//! step of every client becomes one step whose figures are the run's —
//! throughput summed, percentiles from the clients' HDR histograms merged
//! exactly, the shared server's figures per op over every client's ops —
//! beside one row per client and step (its own throughput, response
//! times, CPU per op, and how late it started after the barrier).

use std::collections::BTreeMap;

use anyhow::Result;
use rusqlite::params;

use super::read::{ClientInfo, ClientStep, ClientsView, IntervalView, RunView, StepView};
use super::{Results, WHOLE_STEP};
use crate::metrics::{Figure, Latency, Metric};
use crate::names::Status;
use crate::record::Note;

/// How a figure of the clients' steps becomes the run's.
enum Rule {
    /// Summed.
    Sum,
    /// Per op of each client's own work: Σ figure × ops / Σ ops.
    Weighted,
    /// Per op of the shared server, which every client sampled: client
    /// 0's figure × its ops / Σ ops.
    Shared,
    /// A state of the shared server (a size): client 0's.
    Lead,
    /// Of each client's host only, not merged.
    Own,
}

fn rule(m: Metric) -> Rule {
    use Metric as M;
    match m {
        M::Ops | M::OpsPerSec | M::LogicalBytes => Rule::Sum,
        M::ClientCpuUsPerOp
        | M::ClientUserUsPerOp
        | M::ClientSysUsPerOp
        | M::ClientCsPerOp
        | M::ClientSyscallsPerOp => Rule::Weighted,
        M::RssBytes
        | M::RssPeakBytes
        | M::DbBytes
        | M::DbApparentBytes
        | M::SrvDbBytes
        | M::DevLatencyUs
        | M::DevQueueDepth
        | M::DevWaitedShare => Rule::Lead,
        M::SysCpuUsPerOp | M::SysCsPerOp => Rule::Own,
        M::SpaceAmp => Rule::Lead,
        // Recomputed below from the lead's device bytes over every
        // client's logical bytes.
        M::WriteAmp => Rule::Lead,
        _ => Rule::Shared,
    }
}

/// Merges a run of several clients in place: `run.steps` become the
/// merged steps (client 0's order), `run.clients` the clients' rows.
pub fn merge_clients(r: &Results, run: &mut RunView, name: String, n: usize) -> Result<()> {
    let c = r.conn();
    let joined: Vec<ClientInfo> = c
        .prepare("SELECT client, host, skew, status, error FROM run_clients WHERE run_id = ?1 ORDER BY client")?
        .query_map(params![run.id], |row| {
            Ok(ClientInfo {
                client: row.get::<_, i64>(0)? as usize,
                host: row.get(1)?,
                skew: row.get(2)?,
                status: row.get(3)?,
                error: row.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut meta: BTreeMap<i64, (usize, Option<f64>)> = BTreeMap::new();
    for row in c
        .prepare("SELECT id, client, t0_store FROM steps WHERE run_id = ?1")?
        .query_map(params![run.id], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?, row.get(2)?))
        })?
    {
        let (id, client, t0) = row?;
        meta.insert(id, (client as usize, t0));
    }
    let released = |ordinal: i64| -> Option<f64> {
        c.query_row(
            "SELECT max(at) FROM barriers WHERE run_id = ?1 AND name = ?2",
            params![run.id, format!("step {ordinal} start")],
            |row| row.get(0),
        )
        .ok()
        .flatten()
    };
    // (ordinal, repetition, engine, step) → the clients' steps.
    type Key = (i64, i64, String, String);
    let mut groups: Vec<(Key, Vec<StepView>)> = Vec::new();
    for s in std::mem::take(&mut run.steps) {
        let k = (s.ordinal, s.rep, s.engine.clone(), s.step.clone());
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, v)) => v.push(s),
            None => groups.push((k, vec![s])),
        }
    }
    let mut rows = Vec::new();
    for ((ordinal, ..), mut g) in groups {
        g.sort_by_key(|s| meta.get(&s.id).map_or(0, |m| m.0));
        let release = released(ordinal);
        for s in &g {
            let (client, t0) = meta.get(&s.id).copied().unwrap_or((0, None));
            rows.push(ClientStep {
                client,
                ordinal,
                engine: s.engine.clone(),
                step: s.step.clone(),
                status: s.status,
                error: s.error.clone(),
                ops: s.fig(Metric::Ops),
                ops_per_sec: s.fig(Metric::OpsPerSec),
                client_cpu_us_per_op: s.fig(Metric::ClientCpuUsPerOp),
                latencies: s.latencies.clone(),
                start_lag: t0.zip(release).map(|(t, r)| t - r),
            });
        }
        run.steps.push(merge_step(r, &g, &meta)?);
    }
    run.clients = Some(ClientsView {
        name,
        clients: n,
        joined,
        steps: rows,
    });
    Ok(())
}

/// One step from its clients' (client 0's first, when it has one).
// Long: one merged step, field by field from its clients' (status, operations,
// each figure's rule: summed, over the common window, or the lead's); the
// rules read best side by side.
fn merge_step(
    r: &Results,
    g: &[StepView],
    meta: &BTreeMap<i64, (usize, Option<f64>)>,
) -> Result<StepView> {
    let lead = &g[0];
    let mut out = lead.clone();
    if g.len() < 2 {
        return Ok(out);
    }
    let all_done = g.iter().all(|s| s.status == Status::Done);
    out.status = if all_done {
        Status::Done
    } else if g.iter().any(|s| s.status == Status::Done) {
        Status::Partial
    } else {
        lead.status
    };
    if !all_done {
        let bad: Vec<String> = g
            .iter()
            .filter(|s| s.status != Status::Done)
            .map(|s| {
                let c = meta.get(&s.id).map_or(0, |m| m.0);
                format!("client {c} {}", s.status.name())
            })
            .collect();
        out.error = Some(bad.join("; "));
    }
    let ops: Vec<f64> = g
        .iter()
        .map(|s| s.fig(Metric::Ops).unwrap_or(0.0))
        .collect();
    let total: f64 = ops.iter().sum();
    // The lead for the shared server's figures: the client whose step
    // ended last on the store's clock (its window, from the common start,
    // holds every client's work); client 0 when that is not known.
    let ends: Vec<Option<f64>> = g
        .iter()
        .map(|s| Some(meta.get(&s.id)?.1? + s.secs?))
        .collect();
    let li = (0..g.len())
        .max_by(|a, b| {
            let (x, y) = (ends[*a].unwrap_or(f64::MIN), ends[*b].unwrap_or(f64::MIN));
            x.total_cmp(&y).then(b.cmp(a))
        })
        .unwrap_or(0);
    let lead_ops = ops[li];
    let mut figures: BTreeMap<Metric, Figure> = BTreeMap::new();
    let names: std::collections::BTreeSet<Metric> =
        g.iter().flat_map(|s| s.figures.keys().copied()).collect();
    for m in names {
        let vals: Vec<Option<f64>> = g.iter().map(|s| s.fig(m)).collect();
        let v = match rule(m) {
            Rule::Sum => Some(vals.iter().map(|v| v.unwrap_or(0.0)).sum::<f64>()),
            Rule::Weighted if total > 0.0 && vals.iter().all(Option::is_some) => Some(
                vals.iter()
                    .zip(&ops)
                    .map(|(v, o)| v.unwrap_or(0.0) * o)
                    .sum::<f64>()
                    / total,
            ),
            Rule::Shared if total > 0.0 => vals[li].map(|v| v * lead_ops / total),
            Rule::Lead => vals[li],
            Rule::Own => {
                figures.insert(
                    m,
                    Figure::NotMeasured("of each client's own host: see the clients' rows".into()),
                );
                continue;
            }
            _ => None,
        };
        let f = match v {
            Some(v) => Figure::Value(v),
            None => Figure::NotMeasured(
                lead.figures
                    .get(&m)
                    .and_then(Figure::why)
                    .unwrap_or("not given by every client")
                    .to_string(),
            ),
        };
        figures.insert(m, f);
    }
    // Space-amp of the whole database over every client's live bytes.
    let db = figures
        .get(&Metric::DbBytes)
        .and_then(Figure::value)
        .or_else(|| figures.get(&Metric::SrvDbBytes).and_then(Figure::value));
    if let (Some(db), Some(live)) = (
        db,
        figures.get(&Metric::LogicalBytes).and_then(Figure::value),
    ) {
        if live > 0.0 {
            figures.insert(Metric::SpaceAmp, Figure::Value(db / live));
        }
    }
    // Throughput over the clients' common time on the store's clock, from
    // the first start to the last end: the sum of their rates when they
    // ran together, less when one ran longer (a count-bound load).
    let starts = g.iter().filter_map(|s| meta.get(&s.id).and_then(|m| m.1));
    if let (Some(first), Some(last)) = (
        starts.reduce(f64::min),
        ends.iter().flatten().copied().reduce(f64::max),
    ) {
        if ends.iter().all(Option::is_some) && last > first {
            figures.insert(Metric::OpsPerSec, Figure::Value(total / (last - first)));
        }
    }
    // Write-amp: the lead's device bytes over every client's logical
    // bytes written.
    if let Some(wa) = figures.get(&Metric::WriteAmp).and_then(Figure::value) {
        let written = |id: i64| -> f64 {
            r.conn()
                .query_row(
                    "SELECT coalesce(sum(written), 0) FROM intervals WHERE step_id = ?1",
                    params![id],
                    |row| row.get::<_, i64>(0),
                )
                .unwrap_or(0) as f64
        };
        let all: f64 = g.iter().map(|s| written(s.id)).sum();
        if all > 0.0 {
            let w = wa * written(g[li].id) / all;
            figures.insert(Metric::WriteAmp, Figure::Value(w));
        }
    }
    out.figures = figures;
    out.secs = g.iter().filter_map(|s| s.secs).reduce(f64::max);
    // Response times: the clients' histograms merged, per op kind.
    let mut merged: BTreeMap<String, Latency> = BTreeMap::new();
    for s in g {
        for (_, op, h) in super::read::histograms(r, s.id, Some(WHOLE_STEP))? {
            merged.entry(op).or_default().merge(&h);
        }
    }
    out.latencies = merged
        .iter()
        .map(|(op, h)| (op.clone(), h.summary()))
        .collect();
    out.spectra = merged
        .iter()
        .map(|(op, h)| (op.clone(), h.spectrum()))
        .collect();
    // The model's checks against the merged figures.
    for k in &mut out.checks {
        let m = match k.figure {
            crate::check::ModelFigure::WriteAmp => Metric::WriteAmp,
            crate::check::ModelFigure::SpaceAmp => Metric::SpaceAmp,
        };
        k.measured = out.figures.get(&m).and_then(Figure::value);
        k.verdict = crate::check::Verdict::of(k.measured, k.predicted);
    }
    // What each client's workload said (its consistency check of its
    // tables, its retries), each line under its client; the model's
    // lines, of the one engine they share, as the first client's
    // prediction is taken (an ampbench before the typed notes showed each
    // client's among the workload notes, as text it did not recognise).
    out.notes = g
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            let c = meta.get(&s.id).map_or(0, |m| m.0);
            s.notes
                .iter()
                .filter(move |l| i == 0 || !l.is_model())
                .map(move |l| match l {
                    Note::Said(t) => Note::Said(format!("client {c}: {t}")),
                    model => model.clone(),
                })
        })
        .collect();
    // The server's replication: the samples of the client that ended last.
    out.replication = g[li].replication.clone();
    out.intervals = merge_intervals(g, meta);
    out.rates = merge_rates(g, meta);
    out.members = g.iter().map(|s| (s.id, shift(s, g, meta))).collect();
    out.extras = crate::record::StepExtras::merge(&g.iter().map(|s| &s.extras).collect::<Vec<_>>());
    Ok(out)
}

/// The interval length of the clients' steps, when they have intervals.
fn interval_len(g: &[StepView]) -> Option<f64> {
    g.iter()
        .find_map(|s| s.intervals.first().map(|i| i.t1 - i.t0))
        .filter(|l| *l > 0.0)
}

/// How far `s` starts after the earliest of `g` on the store's clock, in
/// units of `len` seconds (rounded); 0 when a start is not recorded.
fn units_after(
    s: &StepView,
    g: &[StepView],
    meta: &BTreeMap<i64, (usize, Option<f64>)>,
    len: Option<f64>,
) -> i64 {
    let start = |s: &StepView| meta.get(&s.id).and_then(|m| m.1);
    let first = g.iter().filter_map(start).reduce(f64::min);
    match (start(s), first, len) {
        (Some(t), Some(f), Some(l)) if l > 0.0 => ((t - f) / l).round() as i64,
        _ => 0,
    }
}

/// Client step `s`'s shift in whole intervals on the run's timeline.
fn shift(s: &StepView, g: &[StepView], meta: &BTreeMap<i64, (usize, Option<f64>)>) -> i64 {
    units_after(s, g, meta, interval_len(g))
}

/// The clients' throughput over time: their bins lined up on the store's
/// clock (shifted by whole bins) and summed.
fn merge_rates(g: &[StepView], meta: &BTreeMap<i64, (usize, Option<f64>)>) -> Vec<(f64, f64, f64)> {
    let Some(width) = g
        .iter()
        .find_map(|s| s.rates.first().map(|(a, b, _)| b - a))
        .filter(|w| *w > 0.0)
    else {
        return Vec::new();
    };
    let mut bins: BTreeMap<i64, f64> = BTreeMap::new();
    for s in g {
        let by = units_after(s, g, meta, Some(width));
        for (a, _, v) in &s.rates {
            *bins.entry((a / width).round() as i64 + by).or_default() += v;
        }
    }
    bins.into_iter()
        .map(|(i, v)| (i as f64 * width, (i + 1) as f64 * width, v))
        .collect()
}

/// The clients' intervals lined up on the store's clock: client `k`'s
/// interval `i` is the run's interval `i + offset_k`, its offset its step
/// start's distance from the earliest, in whole intervals. Operations and
/// throughput are summed.
fn merge_intervals(
    g: &[StepView],
    meta: &BTreeMap<i64, (usize, Option<f64>)>,
) -> Vec<IntervalView> {
    let len = interval_len(g);
    let mut out: BTreeMap<i64, IntervalView> = BTreeMap::new();
    for s in g {
        let offset = shift(s, g, meta);
        for iv in &s.intervals {
            let idx = iv.idx + offset;
            let e = out.entry(idx).or_insert_with(|| IntervalView {
                idx,
                t0: iv.t0 + offset as f64 * len.unwrap_or(0.0),
                t1: iv.t1 + offset as f64 * len.unwrap_or(0.0),
                ops: 0,
                bg_ops: 0,
                figures: BTreeMap::new(),
            });
            e.ops += iv.ops;
            e.bg_ops += iv.bg_ops;
            for m in [Metric::Ops, Metric::OpsPerSec] {
                if let Some(v) = iv.figures.get(&m).and_then(Figure::value) {
                    let f = e.figures.entry(m).or_insert(Figure::Value(0.0));
                    *f = Figure::Value(f.value().unwrap_or(0.0) + v);
                }
            }
        }
    }
    out.into_values().collect()
}
