//! The Runner: for each engine, open it in a fresh data directory, build the
//! workload, and run the selected steps through the driver, writing every
//! interval and every step to the results file as it goes.
//!
//! A failed step is recorded with its error and ends that engine's steps
//! (its data may be half-written); the next engine still runs. Ctrl-C ends
//! the step in progress, records it as interrupted, and ends the run.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use crate::driver::{self, Arrival, IntervalRecord, StepSink};
use crate::engine::{self, EngineKind, EngineOptions, EngineRef, OpenSpec};
use crate::metrics::{self, Latency, Metric, WorkDone};
use crate::names::Status;
use crate::probe::Probe;
use crate::results::{Results, RunRecord};
use crate::rng::derive_seed;
use crate::workload::{Params, StepCtx, Workload, WorkloadKind};

/// A validated run configuration: plain data, recorded with the run.
#[derive(Clone, Debug, Serialize)]
pub struct RunConfig {
    /// The workload.
    pub workload: WorkloadKind,
    /// Engines, in run order.
    pub engines: Vec<EngineKind>,
    /// Steps, in run order.
    pub steps: Vec<String>,
    /// Workload parameters as given (`-p`).
    pub params: Vec<(String, String)>,
    /// Engine options (`--set`).
    pub sets: BTreeMap<EngineKind, EngineOptions>,
    /// Threads for multi-threaded steps.
    pub threads: usize,
    /// Warm-up seconds per timed step.
    pub warmup: f64,
    /// Measured seconds per timed step.
    pub duration: f64,
    /// Seconds between probe samples.
    pub interval: f64,
    /// Total operations/s for a fixed arrival rate; closed loop when None.
    pub rate: Option<f64>,
    /// Poisson (true) or uniform arrivals under `rate`.
    pub poisson: bool,
    /// The run seed.
    pub seed: u64,
    /// Engine cache bytes.
    pub cache_bytes: u64,
    /// Results file.
    pub results: PathBuf,
    /// Parent of the engines' data directories.
    pub dir: PathBuf,
    /// Keep data directories afterwards.
    pub keep: bool,
    /// Wait for engine background work after each load step.
    pub settle: bool,
}

/// Writes figures and latencies to the results file as the driver reports them.
struct Sink<'r> {
    results: &'r mut Results,
    step: i64,
    workload: &'r dyn Workload,
    no_device: Option<String>,
    bar: ProgressBar,
    label: String,
}

impl StepSink for Sink<'_> {
    fn interval(&mut self, r: &IntervalRecord) -> Result<()> {
        let w = WorkDone {
            ops: r.ops,
            secs: r.end.t - r.start.t,
            logical_bytes: self.workload.live_bytes(),
            logical_written: r.written,
        };
        let figs = metrics::compute(
            &r.start,
            &r.end,
            &w,
            self.no_device.as_deref(),
            crate::probe::cpu::ticks_per_sec(),
        );
        self.results
            .add_interval(
                self.step,
                r.idx,
                (r.start.t, r.end.t),
                (r.ops, r.bg_ops, r.written),
                &figs,
                (&r.start, &r.end),
            )
            .context("writing an interval to the results file")
    }
    fn interval_latency(&mut self, idx: usize, l: &[(String, Latency)]) -> Result<()> {
        self.results.add_latencies(self.step, idx as i64, l)
    }
    fn progress(&mut self, ops: u64, secs: f64) {
        let rate = if secs > 0.0 { ops as f64 / secs } else { 0.0 };
        self.bar.set_message(format!(
            "{}: {ops} ops, {rate:.0} ops/s, {secs:.0}s",
            self.label
        ));
        self.bar.tick();
    }
}

/// Machine facts recorded with every run.
pub fn machine_facts(dir: &std::path::Path) -> serde_json::Value {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|s| s.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default();
    let mem_kb = read("/proc/meminfo")
        .lines()
        .find_map(|l| {
            l.strip_prefix("MemTotal:")
                .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        })
        .unwrap_or(0);
    let device = match crate::probe::device::device_for(dir) {
        Ok(d) => serde_json::json!({"name": d.name, "major": d.major, "minor": d.minor}),
        Err(why) => serde_json::json!({"none": why}),
    };
    serde_json::json!({
        "kernel": read("/proc/sys/kernel/osrelease").trim(),
        "cpu": cpu,
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "mem_bytes": mem_kb * 1024,
        "data_dir": dir.display().to_string(),
        "device": device,
        "ampbench": env!("CARGO_PKG_VERSION"),
    })
}

/// Runs every engine through the steps; returns the run id. Per-step lines
/// go to `out`.
pub fn run(cfg: &RunConfig, command: &str, out: &mut dyn Write) -> Result<i64> {
    let params = Params::new(cfg.workload.name(), cfg.workload.params(), &cfg.params)?;
    // Validate everything before anything runs.
    cfg.workload.build(&params)?;
    for e in &cfg.engines {
        engine::validate_options(*e, cfg.sets.get(e).unwrap_or(&EngineOptions::default()))?;
    }
    for s in &cfg.steps {
        if !cfg.workload.steps().contains(&s.as_str()) {
            return Err(crate::UsageError(format!(
                "unknown step '{s}' for workload {} (steps: {})",
                cfg.workload.name(),
                cfg.workload.steps().join(", ")
            ))
            .into());
        }
    }
    // A selection that reads data but loads none gets the load step first.
    let mut steps = cfg.steps.clone();
    let added = cfg.workload.load_first(&steps);
    if let Some(load) = added {
        steps.insert(0, load.to_string());
    }
    std::fs::create_dir_all(&cfg.dir)
        .with_context(|| format!("cannot create data directory {}", cfg.dir.display()))?;
    let mut results = Results::open(&cfg.results)?;
    let mut versions = serde_json::Map::new();
    for e in &cfg.engines {
        let v = e
            .library_version()
            .unwrap_or_else(|err| format!("unavailable: {err:#}"));
        versions.insert(e.name().into(), v.into());
    }
    let mut config = serde_json::to_value(cfg)?;
    config["params_effective"] = serde_json::to_value(params.effective())?;
    config["steps_run"] = serde_json::to_value(&steps)?;
    let run_id = results.begin_run(&RunRecord {
        command: command.to_string(),
        workload: cfg.workload.name().into(),
        engines: cfg
            .engines
            .iter()
            .map(|e| e.name())
            .collect::<Vec<_>>()
            .join(","),
        seed: cfg.seed,
        config,
        versions: serde_json::Value::Object(versions),
        machine: machine_facts(&cfg.dir),
    })?;
    writeln!(
        out,
        "run {run_id}: workload {} on {} · seed {} · results {}",
        cfg.workload.name(),
        cfg.engines
            .iter()
            .map(|e| e.name())
            .collect::<Vec<_>>()
            .join(", "),
        cfg.seed,
        cfg.results.display()
    )?;
    writeln!(
        out,
        "parameters: {}",
        params
            .effective()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    )?;
    if let Some(load) = added {
        writeln!(
            out,
            "steps: {} ('{load}' added first: the selected steps read the data it loads)",
            steps.join(",")
        )?;
    }
    let mut status = Status::Done;
    let mut failures: Vec<String> = Vec::new();
    let mut ordinal = 0usize;
    'engines: for kind in &cfg.engines {
        let opts = cfg.sets.get(kind).cloned().unwrap_or_default();
        let tmp = tempfile::Builder::new()
            .prefix(&format!("ampbench-{kind}-"))
            .tempdir_in(&cfg.dir)
            .with_context(|| format!("cannot create a data directory in {}", cfg.dir.display()))?;
        let mut workload = cfg.workload.build(&params)?;
        workload.configure(&steps);
        let spec = OpenSpec {
            dir: tmp.path().to_path_buf(),
            tables: workload.tables(),
            cache_bytes: cfg.cache_bytes,
            options: opts,
            transactions: workload.transactions(),
        };
        let eng = match engine::open(*kind, &spec) {
            Ok(e) => e,
            Err(e) => {
                writeln!(out, "{kind}: cannot open: {e:#}")?;
                failures.push(format!("{kind}: cannot open: {e:#}"));
                let id = results.begin_step(
                    run_id,
                    ordinal,
                    kind.name(),
                    "open",
                    &serde_json::json!({}),
                )?;
                ordinal += 1;
                results.end_step(
                    id,
                    Status::Failed,
                    Some(&format!("cannot open: {e:#}")),
                    0.0,
                    None,
                )?;
                status = Status::Failed;
                continue;
            }
        };
        if let EngineRef::Sql(s) = eng.face() {
            let ddl = workload.sql_schema(s.dialect(), s.table_options());
            let created = s
                .connect()
                .and_then(|mut c| ddl.iter().try_for_each(|q| c.batch(q)));
            if let Err(e) = created {
                writeln!(out, "{kind}: cannot create the schema: {e:#}")?;
                failures.push(format!("{kind}: cannot create the schema: {e:#}"));
                status = Status::Failed;
                let _ = eng.close();
                continue;
            }
        }
        writeln!(
            out,
            "{kind} {} in {} (pid {})",
            eng.version(),
            tmp.path().display(),
            eng.pid()
        )?;
        let settings = eng.settings();
        if !settings.is_empty() {
            writeln!(
                out,
                "  settings: {}",
                settings
                    .iter()
                    .map(|(k, v)| if v.is_empty() {
                        k.clone()
                    } else {
                        format!("{k}={v}")
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            )?;
        }
        let probe = Probe::with_paths(eng.dir(), eng.data_paths(), eng.pid());
        let no_device = probe.device().as_ref().err().cloned();
        for (si, step) in steps.iter().enumerate() {
            let ctx = StepCtx {
                threads: cfg.threads.max(1),
                warmup: Duration::from_secs_f64(cfg.warmup),
                duration: Duration::from_secs_f64(cfg.duration),
                interval: Duration::from_secs_f64(cfg.interval),
                arrival: match cfg.rate {
                    Some(r) => Arrival::Fixed {
                        per_sec: r,
                        poisson: cfg.poisson,
                    },
                    None => Arrival::Closed,
                },
                seed: derive_seed(cfg.seed, &[si as u64]),
            };
            let planned = match workload.plan(step, eng.face(), &ctx) {
                Ok(p) => p,
                Err(e)
                    if e.chain()
                        .any(|c| c.downcast_ref::<crate::UsageError>().is_some()) =>
                {
                    return Err(e);
                }
                Err(e) => {
                    writeln!(out, "  {step}: FAILED: {e:#}")?;
                    failures.push(format!("{kind} {step}: {e:#}"));
                    status = Status::Failed;
                    break;
                }
            };
            let spec_json = serde_json::json!({
                "engine_version": eng.version(),
                "settings": settings,
                "threads": planned.spec.threads,
                "ops": planned.spec.op_names,
                "warmup_s": planned.spec.warmup.as_secs_f64(),
                "stop": planned.spec.stop,
                "arrival": planned.spec.arrival,
                "background": planned.spec.background,
                "seed": ctx.seed,
            });
            let step_id = results.begin_step(run_id, ordinal, kind.name(), step, &spec_json)?;
            ordinal += 1;
            let bar = if std::io::stdout().is_terminal() && std::io::stderr().is_terminal() {
                let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
                b.set_style(
                    ProgressStyle::with_template("{spinner} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                b
            } else {
                ProgressBar::hidden()
            };
            let mut sink = Sink {
                results: &mut results,
                step: step_id,
                workload: &*workload,
                no_device: no_device.clone(),
                bar,
                label: format!("{kind} {step}"),
            };
            let o = driver::run_step(
                &planned.spec,
                &*planned.fg,
                planned.bg.as_deref(),
                &probe,
                &mut sink,
            );
            sink.bar.finish_and_clear();
            drop(planned);
            let w = WorkDone {
                ops: o.ops,
                secs: o.secs,
                logical_bytes: workload.live_bytes(),
                logical_written: o.written,
            };
            let figs = metrics::compute(
                &o.start,
                &o.end,
                &w,
                no_device.as_deref(),
                crate::probe::cpu::ticks_per_sec(),
            );
            let mut notes = match workload.finish(step, eng.face()) {
                Ok(n) => n,
                Err(e) => crate::workload::StepNotes {
                    extras: Vec::new(),
                    lines: vec![format!("after {step}: {e:#}")],
                },
            };
            if o.bg_ops > 0 {
                notes.extras.push(("bg_ops".into(), o.bg_ops as f64));
            }
            results.add_step_figures(step_id, &figs, &notes, (&o.start, &o.end))?;
            results.add_latencies(step_id, crate::results::WHOLE_STEP, &o.latencies)?;
            if let Ok(st) = eng.stats() {
                results.add_engine_stats(step_id, &st)?;
            }
            let mut settle_note = None;
            if cfg.settle && o.error.is_none() && (step == "load" || step.starts_with("fill")) {
                settle_note = Some(
                    eng.settle()
                        .unwrap_or_else(|e| format!("settle failed: {e:#}")),
                );
            }
            let step_status = if o.error.is_some() {
                Status::Failed
            } else if o.interrupted {
                Status::Interrupted
            } else {
                Status::Done
            };
            results.end_step(
                step_id,
                step_status,
                o.error.as_deref(),
                o.secs,
                settle_note.as_deref(),
            )?;
            let f = |n: Metric| {
                figs.iter()
                    .find(|(k, _)| *k == n)
                    .and_then(|(_, v)| v.value())
            };
            writeln!(
                out,
                "  {:<8} {:>10} ops {:>10.0} ops/s  wKB/o {:>8}  cpu/o {:>7}  db {:>7.3} GB  {}",
                step,
                o.ops,
                f(Metric::OpsPerSec).unwrap_or(0.0),
                f(Metric::WkbPerOp).map_or("-".into(), |v| format!("{v:.3}")),
                f(Metric::CpuUsPerOp).map_or("-".into(), |v| format!("{v:.0}")),
                f(Metric::DbBytes).unwrap_or(0.0) / 1e9,
                match (&o.error, o.interrupted) {
                    (Some(e), _) => format!("FAILED: {e}"),
                    (None, true) => "interrupted".into(),
                    _ => String::new(),
                }
            )?;
            if let Some(n) = settle_note {
                writeln!(out, "  settle: {n}")?;
            }
            for l in &notes.lines {
                writeln!(out, "  {l}")?;
            }
            if let Some(e) = &o.error {
                failures.push(format!("{kind} {step}: {e}"));
                status = Status::Failed;
                break;
            }
            if o.interrupted {
                status = Status::Interrupted;
                let _ = eng.close();
                keep_or_remove(tmp, cfg.keep, out)?;
                break 'engines;
            }
        }
        if let Err(e) = eng.close() {
            writeln!(out, "{kind}: close failed: {e:#}")?;
        }
        keep_or_remove(tmp, cfg.keep, out)?;
    }
    results.end_run(run_id, status)?;
    Ok(run_id)
}

fn keep_or_remove(tmp: tempfile::TempDir, keep: bool, out: &mut dyn Write) -> Result<()> {
    if keep {
        let p = tmp.keep();
        writeln!(out, "  kept {}", p.display())?;
    }
    Ok(())
}
