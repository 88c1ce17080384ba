//! Reading a run back from the results file, for reports.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::db::Val;
use super::{Results, WHOLE_STEP};
use crate::metrics::{self, Figure, LatencySummary, Metric, WorkDone};
use crate::names::Status;
use crate::probe::Sample;

/// One interval of a step.
#[derive(Clone, Debug, Serialize)]
pub struct IntervalView {
    /// 0-based index.
    pub idx: i64,
    /// Start, seconds since the measured phase began.
    pub t0: f64,
    /// End.
    pub t1: f64,
    /// Foreground operations.
    pub ops: i64,
    /// Background operations.
    pub bg_ops: i64,
    /// Figures by name.
    pub figures: BTreeMap<Metric, Figure>,
}

/// One `--slice` slice of a step: consecutive whole intervals.
#[derive(Clone, Debug, Serialize)]
pub struct SliceView {
    /// 0-based index.
    pub idx: i64,
    /// Start, seconds since the measured phase began.
    pub t0: f64,
    /// End.
    pub t1: f64,
    /// Foreground operations.
    pub ops: i64,
    /// True for a last slice shorter than nine tenths of the others.
    pub partial: bool,
    /// Figures by name.
    pub figures: BTreeMap<Metric, Figure>,
}

impl SliceView {
    /// A figure's value.
    pub fn fig(&self, m: Metric) -> Option<f64> {
        self.figures.get(&m).and_then(Figure::value)
    }
}

/// One step as recorded.
#[derive(Clone, Debug, Serialize)]
pub struct StepView {
    /// Row id.
    pub id: i64,
    /// Position in the run.
    pub ordinal: i64,
    /// Its repetition (`--repeat`, 0-based).
    pub rep: i64,
    /// Its foreground threads, as recorded in its spec.
    pub threads: Option<u64>,
    /// Its place in the run (step, sweep class, thread level), as
    /// recorded in its spec, or from its label in an older file.
    #[serde(skip)]
    pub identity: crate::identity::StepIdentity,
    /// Engine name, as shown: its label's text.
    pub engine: String,
    /// Which engine, and in a merged view which run or corner.
    #[serde(skip)]
    pub label: crate::record::EngineLabel,
    /// Step name.
    pub step: String,
    /// What the step does, one line, as recorded in its spec (None for
    /// a run recorded before steps said so).
    #[serde(skip)]
    pub about: Option<String>,
    /// How the step ended (`running`: never finished, the process died;
    /// figures then come from the completed intervals).
    pub status: Status,
    /// The error, for a failed step.
    pub error: Option<String>,
    /// Seconds measured.
    pub secs: Option<f64>,
    /// What settling did after this step, if asked.
    pub settle: Option<String>,
    /// Whole-step figures by name.
    pub figures: BTreeMap<Metric, Figure>,
    /// Whole-step response times per operation kind.
    pub latencies: Vec<(String, LatencySummary)>,
    /// The rest of its record: the harness's, the model's and the
    /// workload's figures.
    #[serde(skip)]
    pub extras: crate::record::StepExtras,
    /// What the workload and the model said of the step (e.g. its
    /// consistency check, the prediction).
    pub notes: Vec<crate::record::Note>,
    /// Its write-amp and space-amp beside the model's predictions (empty
    /// when the model has none for its engine).
    pub checks: Vec<crate::check::ModelCheck>,
    /// The intervals.
    pub intervals: Vec<IntervalView>,
    /// The `--slice` slices (empty without `--slice`).
    pub slices: Vec<SliceView>,
    /// Throughput over time, finer than the intervals: `(t0, t1, ops/s)`
    /// (see ampbench-driver's `rates`).
    pub rates: Vec<(f64, f64, f64)>,
    /// Whole-step percentile spectrum per operation kind (see
    /// [`crate::metrics::Latency::spectrum`]).
    pub spectra: Vec<(String, Vec<(f64, u64)>)>,
    /// For a step collapsed from repetitions (see
    /// `report::repeat::collapse`): each figure's value in every
    /// repetition, in run order; `figures` then holds their means.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub reps: BTreeMap<Metric, Vec<f64>>,
    /// A Galera server's replication over the step: each of
    /// [`WSREP_COUNTERS`] as its end less its start (the first endpoint's
    /// `SHOW GLOBAL STATUS`); empty for other servers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replication: Vec<(String, f64)>,
    /// For a step merged from several clients' (see `results::merge`):
    /// each client's step id and how many intervals its intervals are
    /// shifted by on the run's timeline; empty for a lone client.
    #[serde(skip)]
    pub members: Vec<(i64, i64)>,
}

/// The cumulative `wsrep_*` status counters a step's replication table
/// shows: write sets replicated and received (count, bytes), certification
/// failures, brute-force aborts, and flow control (ns paused, messages
/// sent and received).
pub const WSREP_COUNTERS: &[&str] = &[
    "wsrep_replicated",
    "wsrep_replicated_bytes",
    "wsrep_received",
    "wsrep_received_bytes",
    "wsrep_local_cert_failures",
    "wsrep_local_bf_aborts",
    "wsrep_flow_control_paused_ns",
    "wsrep_flow_control_sent",
    "wsrep_flow_control_recv",
];

impl RunView {
    /// The label of the steps shown as `shown` (an engine of a lone run
    /// when no step is).
    pub fn label(&self, shown: &str) -> crate::record::EngineLabel {
        self.steps.iter().find(|s| s.engine == shown).map_or_else(
            || crate::record::EngineLabel::plain(shown),
            |s| s.label.clone(),
        )
    }
}

impl StepView {
    /// A whole-step figure's value.
    pub fn fig(&self, m: Metric) -> Option<f64> {
        self.figures.get(&m).and_then(Figure::value)
    }

    /// A finished step of `engine` with these whole-step figures and
    /// nothing else (for tests of the reports).
    pub fn with_figures(engine: &str, step: &str, figs: &[(Metric, f64)]) -> StepView {
        StepView {
            id: 0,
            ordinal: 0,
            rep: 0,
            threads: None,
            identity: crate::identity::StepIdentity::parse(step),
            engine: engine.into(),
            label: crate::record::EngineLabel::plain(engine),
            step: step.into(),
            about: None,
            status: crate::names::Status::Done,
            error: None,
            secs: Some(1.0),
            settle: None,
            figures: figs.iter().map(|(k, v)| (*k, Figure::Value(*v))).collect(),
            latencies: Vec::new(),
            extras: Default::default(),
            notes: Vec::new(),
            checks: Vec::new(),
            intervals: Vec::new(),
            slices: Vec::new(),
            rates: Vec::new(),
            spectra: Vec::new(),
            reps: BTreeMap::new(),
            replication: Vec::new(),
            members: Vec::new(),
        }
    }
}

/// One client's part of a merged step.
#[derive(Clone, Debug, Serialize)]
pub struct ClientStep {
    /// The client, 0-based.
    pub client: usize,
    /// The step's position in the run.
    pub ordinal: i64,
    /// Engine label.
    pub engine: String,
    /// Step label.
    pub step: String,
    /// How the client's step ended.
    pub status: Status,
    /// Its error, if it failed.
    pub error: Option<String>,
    /// Its operations.
    pub ops: Option<f64>,
    /// Its operations per second.
    pub ops_per_sec: Option<f64>,
    /// Its own CPU per operation, µs.
    pub client_cpu_us_per_op: Option<f64>,
    /// Its response times per operation kind.
    pub latencies: Vec<(String, LatencySummary)>,
    /// Seconds from the step's start barrier releasing (the last client
    /// arriving) to this client starting its workers, on the store's
    /// clock.
    pub start_lag: Option<f64>,
}

/// A client of the run as it registered.
#[derive(Clone, Debug, Serialize)]
pub struct ClientInfo {
    /// The client, 0-based.
    pub client: usize,
    /// Its host name.
    pub host: String,
    /// The store's clock less the client's, seconds.
    pub skew: f64,
    /// `running`, `done`, `failed` or `died`.
    pub status: String,
    /// Why it failed or died.
    pub error: Option<String>,
}

/// The clients of a run and their steps.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ClientsView {
    /// The run's name (`--run-name`).
    pub name: String,
    /// How many clients the run was made for.
    pub clients: usize,
    /// Those that registered.
    pub joined: Vec<ClientInfo>,
    /// Every client's steps.
    pub steps: Vec<ClientStep>,
}

/// One run as recorded.
#[derive(Clone, Debug, Serialize)]
pub struct RunView {
    /// Run id.
    pub id: i64,
    /// Start time (UTC).
    pub started: String,
    /// End time.
    pub ended: Option<String>,
    /// How the run ended (`running` if it never did).
    pub status: Status,
    /// The command line.
    pub command: String,
    /// Workload.
    pub workload: String,
    /// Engines.
    pub engines: String,
    /// Seed.
    pub seed: i64,
    /// Configuration, as recorded.
    pub config: serde_json::Value,
    /// What the reports read of it, typed.
    #[serde(skip)]
    pub recorded: super::RecordedConfig,
    /// Versions.
    pub versions: serde_json::Value,
    /// Machine facts.
    pub machine: serde_json::Value,
    /// Steps in order.
    pub steps: Vec<StepView>,
    /// For a report merging several runs: their ids (empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<i64>,
    /// For merged runs: one line per label on what it ran with (memory,
    /// cache, storage).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub corners: Vec<String>,
    /// For merged runs: each label's memory limit, bytes (a label whose
    /// run had none is absent): what a figure over memory divides by.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub memories: BTreeMap<String, u64>,
    /// A run of several clients (`--clients`): each client's rows; the
    /// steps are then the clients' merged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clients: Option<ClientsView>,
}

impl RunView {
    /// A run with no steps, to build on (merged runs, tests).
    pub fn empty() -> RunView {
        RunView {
            id: 0,
            started: String::new(),
            ended: None,
            status: Status::Done,
            command: String::new(),
            workload: String::new(),
            engines: String::new(),
            seed: 0,
            config: serde_json::Value::Null,
            recorded: Default::default(),
            versions: serde_json::Value::Null,
            machine: serde_json::Value::Null,
            steps: Vec::new(),
            merged_from: Vec::new(),
            corners: Vec::new(),
            memories: BTreeMap::new(),
            clients: None,
        }
    }
}

/// Which run to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunSel {
    /// The newest run.
    Latest,
    /// A run id.
    Id(i64),
}

impl RunSel {
    /// Parses `latest` or a number.
    pub fn parse(s: &str) -> Result<RunSel, crate::UsageError> {
        if s == "latest" {
            return Ok(RunSel::Latest);
        }
        s.parse()
            .map(RunSel::Id)
            .map_err(|_| crate::UsageError(format!("--run '{s}': expected a run id or 'latest'")))
    }
}

/// The stored figures of a step or interval; a name this version does not
/// know (a newer file's) is skipped.
fn figures(r: &Results, step: i64, idx: i64) -> Result<BTreeMap<Metric, Figure>> {
    let mut st = r.conn().prepare_cached(
        "SELECT name, value, note FROM figures WHERE step_id = ?1 AND interval_idx = ?2",
    )?;
    let rows = st.query_map(params![step, idx], |row| {
        let (value, note): (Option<f64>, Option<String>) = (row.get(1)?, row.get(2)?);
        Ok((row.get::<_, String>(0)?, value, note))
    })?;
    let mut out = BTreeMap::new();
    for row in rows {
        let (name, value, note) = row?;
        if let Ok(m) = Metric::parse(&name) {
            // A row has its value, or its reason (this version never
            // writes a null value without one).
            let f = match value {
                Some(v) => Figure::Value(v),
                None => Figure::NotMeasured(note.unwrap_or_else(|| "no reason recorded".into())),
            };
            out.insert(m, f);
        }
    }
    Ok(out)
}

fn sample(r: &Results, step: i64, idx: i64, at: &str) -> Result<Option<Sample>> {
    let s: Option<String> = r
        .conn()
        .query_row(
            "SELECT sample FROM samples WHERE step_id = ?1 AND interval_idx = ?2 AND at = ?3",
            params![step, idx, at],
            |row| row.get(0),
        )
        .optional()?;
    Ok(s.and_then(|s| serde_json::from_str(&s).ok()))
}

/// The runs `--run latest` names: the newest run together with the other
/// runs of its `ampbench run` (one per corner of `bound = ["cache",
/// "io"]`), in id order.
pub fn latest_ids(r: &mut Results) -> Result<Vec<i64>> {
    // Asked of the store itself: a PostgreSQL store is copied only run
    // by run, as they are read.
    let last = r.query(
        "SELECT id, invocation FROM runs ORDER BY id DESC LIMIT 1",
        &[],
    )?;
    let row = last.first();
    let id = row
        .and_then(|r| r.first())
        .and_then(Val::int)
        .ok_or_else(|| crate::UsageError("the results file has no runs".into()))?;
    let first = row.and_then(|r| r.get(1)).and_then(Val::int).unwrap_or(id);
    let ids = r
        .query(
            "SELECT id FROM runs WHERE id = ?1 OR invocation = ?1 ORDER BY id",
            &[Val::Int(first)],
        )?
        .iter()
        .filter_map(|r| r.first().and_then(Val::int))
        .collect();
    Ok(ids)
}

/// Reads a run with all its steps, each client's apart (see
/// [`super::load`], which merges a run of several clients).
// Long: one read of a run and every step's rows (figures, latencies,
// intervals, extras, notes), each decoded where it is read; the steps' fields
// are one record.
pub(super) fn load_steps(r: &mut Results, sel: RunSel) -> Result<RunView> {
    let id: i64 = match sel {
        RunSel::Latest => r
            .query("SELECT max(id) FROM runs", &[])?
            .first()
            .and_then(|r| r.first())
            .and_then(Val::int)
            .ok_or_else(|| crate::UsageError("the results file has no runs".into()))?,
        RunSel::Id(i) => i,
    };
    r.read_runs(&[id])?;
    let r: &Results = r;
    let c = r.conn();
    let mut run = c
        .query_row(
            "SELECT id, started, ended, status, command, workload, engines, seed, config, versions, machine FROM runs WHERE id = ?1",
            params![id],
            |row| {
                let js = |s: String| serde_json::from_str(&s).unwrap_or(serde_json::Value::Null);
                Ok(RunView {
                    id: row.get(0)?,
                    started: row.get(1)?,
                    ended: row.get(2)?,
                    status: status(row.get(3)?, 3)?,
                    command: row.get(4)?,
                    workload: row.get(5)?,
                    engines: row.get(6)?,
                    seed: row.get(7)?,
                    config: js(row.get(8)?),
                    recorded: Default::default(),
                    versions: js(row.get(9)?),
                    machine: js(row.get(10)?),
                    steps: Vec::new(),
                    merged_from: Vec::new(),
                    corners: Vec::new(),
            memories: BTreeMap::new(),
                    clients: None,
                })
            },
        )
        .optional()?
        .ok_or_else(|| crate::UsageError(format!("no run {id} in the results file")))?;
    run.recorded = super::RecordedConfig::of(&run.config);
    let mut st = c.prepare(
        "SELECT id, ordinal, engine, step, status, error, secs, settle, rep, spec FROM steps WHERE run_id = ?1 ORDER BY ordinal, client",
    )?;
    let steps: Vec<StepView> = st
        .query_map(params![id], |row| {
            let spec = serde_json::from_str::<serde_json::Value>(&row.get::<_, String>(9)?).ok();
            let label: String = row.get(3)?;
            Ok(StepView {
                id: row.get(0)?,
                ordinal: row.get(1)?,
                engine: row.get(2)?,
                label: crate::record::EngineLabel::plain(&row.get::<_, String>(2)?),
                step: label.clone(),
                about: spec
                    .as_ref()
                    .and_then(|v| v["about"].as_str().map(String::from)),
                status: status(row.get(4)?, 4)?,
                error: row.get(5)?,
                secs: row.get(6)?,
                settle: row.get(7)?,
                rep: row.get(8)?,
                threads: spec.as_ref().and_then(|v| v["threads"].as_u64()),
                identity: spec
                    .as_ref()
                    .and_then(|v| serde_json::from_value(v["identity"].clone()).ok())
                    .unwrap_or_else(|| crate::identity::StepIdentity::parse(&label)),
                figures: BTreeMap::new(),
                latencies: Vec::new(),
                extras: Default::default(),
                notes: Vec::new(),
                checks: Vec::new(),
                intervals: Vec::new(),
                slices: Vec::new(),
                rates: Vec::new(),
                spectra: Vec::new(),
                reps: BTreeMap::new(),
                replication: Vec::new(),
                members: Vec::new(),
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    for mut s in steps {
        s.figures = figures(r, s.id, WHOLE_STEP)?;
        let mut lq = c.prepare_cached(
            "SELECT op, count, mean, p50, p95, p99, p999, max FROM latencies WHERE step_id = ?1 AND interval_idx = ?2 ORDER BY op",
        )?;
        s.latencies = lq
            .query_map(params![s.id, WHOLE_STEP], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    LatencySummary {
                        count: row.get::<_, i64>(1)? as u64,
                        mean: row.get(2)?,
                        p50: row.get::<_, i64>(3)? as u64,
                        p95: row.get::<_, i64>(4)? as u64,
                        p99: row.get::<_, i64>(5)? as u64,
                        p999: row.get::<_, i64>(6)? as u64,
                        max: row.get::<_, i64>(7)? as u64,
                    },
                ))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let mut eq =
            c.prepare_cached("SELECT name, value FROM extras WHERE step_id = ?1 ORDER BY name")?;
        let rows: Vec<(String, f64)> = eq
            .query_map(params![s.id], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        s.extras = crate::record::StepExtras::from_rows(rows.iter().map(|(k, v)| (k.as_str(), *v)));
        let mut nq =
            c.prepare_cached("SELECT line FROM step_notes WHERE step_id = ?1 ORDER BY idx")?;
        s.notes = nq
            .query_map(params![s.id], |row| {
                Ok(crate::record::Note::from_stored(&row.get::<_, String>(0)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        s.checks = model_checks(c, &s)?;
        s.replication = replication(c, s.id)?;
        let mut iq = c.prepare_cached(
            "SELECT idx, t0, t1, ops, bg_ops FROM intervals WHERE step_id = ?1 ORDER BY idx",
        )?;
        let ivs: Vec<IntervalView> = iq
            .query_map(params![s.id], |row| {
                Ok(IntervalView {
                    idx: row.get(0)?,
                    t0: row.get(1)?,
                    t1: row.get(2)?,
                    ops: row.get(3)?,
                    bg_ops: row.get(4)?,
                    figures: BTreeMap::new(),
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        for mut iv in ivs {
            iv.figures = figures(r, s.id, iv.idx)?;
            s.intervals.push(iv);
        }
        let mut sq = c.prepare_cached(
            "SELECT idx, t0, t1, ops, partial FROM slices WHERE step_id = ?1 ORDER BY idx",
        )?;
        let sls: Vec<SliceView> = sq
            .query_map(params![s.id], |row| {
                Ok(SliceView {
                    idx: row.get(0)?,
                    t0: row.get(1)?,
                    t1: row.get(2)?,
                    ops: row.get(3)?,
                    partial: row.get(4)?,
                    figures: BTreeMap::new(),
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        for mut sl in sls {
            sl.figures = figures(r, s.id, super::slice_idx(sl.idx))?;
            s.slices.push(sl);
        }
        let mut rq =
            c.prepare_cached("SELECT t0, t1, per_sec FROM rates WHERE step_id = ?1 ORDER BY idx")?;
        s.rates = rq
            .query_map(params![s.id], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        s.spectra = histograms(r, s.id, Some(WHOLE_STEP))?
            .into_iter()
            .map(|(_, op, h)| (op, h.spectrum()))
            .collect();
        if s.figures.is_empty() && !s.intervals.is_empty() {
            s.figures = from_intervals(r, &s).context("recomputing figures from intervals")?;
            if s.secs.is_none() {
                s.secs = s.intervals.last().map(|i| i.t1);
            }
        }
        run.steps.push(s);
    }
    Ok(run)
}

/// A step's stored histograms as `(interval_idx, op, histogram)`: those of
/// one `interval_idx` (e.g. [`WHOLE_STEP`]), or of every interval (idx ≥ 0)
/// when None; in interval, then op order.
pub fn histograms(
    r: &Results,
    step: i64,
    idx: Option<i64>,
) -> Result<Vec<(i64, String, crate::metrics::Latency)>> {
    let c = r.conn();
    let mut q = c.prepare_cached(
        "SELECT interval_idx, op, hist FROM latencies WHERE step_id = ?1 \
         AND ((?2 IS NULL AND interval_idx >= 0) OR interval_idx = ?2) ORDER BY interval_idx, op",
    )?;
    let rows: Vec<(i64, String, Vec<u8>)> = q
        .query_map(params![step, idx], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    rows.into_iter()
        .map(|(i, op, b)| Ok((i, op, crate::metrics::Latency::from_bytes(&b)?)))
        .collect()
}

/// Figures of a step that never finished, from its completed intervals:
/// the first interval's start sample, the last one's end sample, and the
/// summed operations.
fn from_intervals(r: &Results, s: &StepView) -> Result<BTreeMap<Metric, Figure>> {
    let (Some(first), Some(last)) = (s.intervals.first(), s.intervals.last()) else {
        return Ok(BTreeMap::new());
    };
    let (Some(a), Some(b)) = (
        sample(r, s.id, first.idx, "start")?,
        sample(r, s.id, last.idx, "end")?,
    ) else {
        return Ok(BTreeMap::new());
    };
    let written: i64 = r.conn().query_row(
        "SELECT coalesce(sum(written), 0) FROM intervals WHERE step_id = ?1",
        params![s.id],
        |row| row.get(0),
    )?;
    let w = WorkDone {
        ops: s.intervals.iter().map(|i| i.ops as u64).sum(),
        secs: last.t1 - first.t0,
        logical_bytes: last
            .figures
            .get(&Metric::LogicalBytes)
            .and_then(Figure::value)
            .unwrap_or(0.0) as u64,
        logical_written: written as u64,
    };
    let no_dev = a
        .disk
        .is_none()
        .then_some("no device counters were recorded");
    // Figures of the completed intervals of a step that did not finish
    // (its status says so).
    Ok(
        metrics::compute(&a, &b, &w, no_dev, crate::probe::cpu::ticks_per_sec())
            .into_iter()
            .collect(),
    )
}

/// A step's [`WSREP_COUNTERS`], end less start, from its engine
/// statistics (empty when the server has none).
fn replication(c: &rusqlite::Connection, step: i64) -> Result<Vec<(String, f64)>> {
    let mut q = c.prepare_cached(
        "SELECT name, at, value FROM engine_stats WHERE step_id = ?1 AND name LIKE 'wsrep%' AND value IS NOT NULL",
    )?;
    let rows: Vec<(String, String, f64)> = q
        .query_map(params![step], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let at = |n: &str, when: &str| {
        rows.iter()
            .find(|(k, a, _)| k == n && a == when)
            .map(|(_, _, v)| *v)
    };
    Ok(WSREP_COUNTERS
        .iter()
        .filter_map(|n| Some((n.to_string(), at(n, "end")? - at(n, "start")?)))
        .collect())
}

/// A stored status; an unknown one is a corrupt results file.
fn status(s: String, col: usize) -> rusqlite::Result<Status> {
    Status::parse(&s).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(col, rusqlite::types::Type::Text, Box::new(e))
    })
}

/// A step's model checks as stored; for a step recorded before they were
/// (a results file of an older ampbench), the verdicts from its measured
/// figures and the stored prediction, without a reason.
fn model_checks(c: &rusqlite::Connection, s: &StepView) -> Result<Vec<crate::check::ModelCheck>> {
    use crate::check::{ModelCheck, ModelFigure, Verdict};
    let mut q = c.prepare_cached(
        "SELECT figure, measured, predicted, dominant, verdict, reason FROM model_checks
         WHERE step_id = ?1 ORDER BY figure DESC",
    )?;
    let bad = |i: usize, e: crate::UsageError| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))
    };
    let out: Vec<ModelCheck> = q
        .query_map(params![s.id], |r| {
            Ok(ModelCheck {
                figure: ModelFigure::parse(&r.get::<_, String>(0)?).map_err(|e| bad(0, e))?,
                measured: r.get(1)?,
                predicted: r.get(2)?,
                dominant: r.get(3)?,
                verdict: Verdict::parse(&r.get::<_, String>(4)?).map_err(|e| bad(4, e))?,
                reason: r.get(5)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    if !out.is_empty() {
        return Ok(out);
    }
    let mut out = out;
    let Some(p) = s.extras.prediction else {
        return Ok(out);
    };
    for (figure, metric, predicted) in [
        (ModelFigure::WriteAmp, Metric::WriteAmp, p.write_amp),
        (ModelFigure::SpaceAmp, Metric::SpaceAmp, p.space_amp),
    ] {
        let measured = s.fig(metric);
        let verdict = Verdict::of(measured, predicted);
        out.push(ModelCheck {
            figure,
            measured,
            predicted,
            dominant: None,
            verdict,
            reason: String::new(),
        });
    }
    Ok(out)
}
