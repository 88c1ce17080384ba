//! The Runner: for each engine, open it in a fresh data directory, build the
//! workload, and run the selected steps through the driver, writing every
//! interval and every step to the results file as it goes.
//!
//! A failed step is recorded with its error and ends that engine's steps
//! (its data may be half-written); the next engine still runs. Ctrl-C ends
//! the step in progress, records it as interrupted, and ends the run.

mod env;
mod predict;
mod sink;
mod slicer;
mod step;
pub mod sweep;

use env::{
    EngineMem, Level, engine_cgroup, engine_options, memory_line, progress_bar, throttle_to,
};
pub use env::{machine_facts, step_ctx};
pub use predict::{EXPLAIN_NOTE, MODEL_NOTE};
pub use slicer::{Slice, Slicer};
use step::run_step;
pub use step::{CALLS_PER_SEC, SLICE_PREFIX, SLICES};

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::engine::{self, Engine, EngineKind, EngineOptions, EngineRef, OpenSpec};
use crate::names::Status;
use crate::probe::Probe;
use crate::results::{Results, RunRecord};
use crate::setup::oom::DeathNote;
use crate::setup::{self, StorageConfig};
use crate::workload::{Params, Step, Workload, WorkloadKind};

/// A validated run configuration: plain data, recorded with the run.
#[derive(Clone, Debug, Serialize)]
pub struct RunConfig {
    /// The seed post the plan reproduces (`[post]`), reported beside the
    /// run's figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub post: Option<crate::report::seed::SeedSpec>,
    /// `-p scale=X` of a seed plan: the factor its size parameters were
    /// multiplied by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub post_scale: Option<f64>,
    /// The workload.
    pub workload: WorkloadKind,
    /// Engines, in run order.
    pub engines: Vec<EngineKind>,
    /// Steps, in run order.
    pub steps: Vec<Step>,
    /// Workload parameters as given (`-p`).
    pub params: Vec<(String, String)>,
    /// Engine options (`--set`).
    pub sets: BTreeMap<EngineKind, EngineOptions>,
    /// `--allow-unsafe-settings`: engine settings that name files or load
    /// code pass (see `engine::guard`).
    #[serde(default)]
    pub allow_unsafe_settings: bool,
    /// Threads for multi-threaded steps.
    pub threads: usize,
    /// A concurrency sweep: every multi-threaded step runs at each level
    /// (empty: no sweep, `threads` only).
    #[serde(default)]
    pub thread_levels: Vec<usize>,
    /// Warm-up seconds per timed step.
    pub warmup: f64,
    /// Measured seconds per timed step.
    pub duration: f64,
    /// Seconds between probe samples.
    pub interval: f64,
    /// Report each step as consecutive slices of this many seconds
    /// (`--slice`), built from whole intervals.
    #[serde(default)]
    pub slice: Option<f64>,
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
    /// How clients reach server engines.
    #[serde(default)]
    pub transport: crate::engine::Transport,
    /// The C allocator preloaded under the engines (`--allocator`).
    pub allocator: crate::setup::allocator::Allocator,
    /// A replication log on the servers (`--replication-log`).
    pub replication_log: bool,
    /// Where the data lives: native, or a dedicated throttled device.
    pub storage: StorageConfig,
    /// The engine process's memory limit in bytes (page cache included):
    /// the IO-bound configuration. None: unlimited (cached).
    pub memory: Option<u64>,
    /// Which corner ran: `io` when a memory limit applied, else `cache`.
    pub bound: crate::cli::Bound,
    /// With `--bound io` and no `--memory`: the logical bytes the load
    /// writes, a quarter of which is the limit.
    #[serde(default)]
    pub memory_from_data: Option<u64>,
    /// True when the cache size was derived from `memory`, not given.
    pub cache_from_memory: bool,
    /// Drop the page cache before every step but the first.
    pub drop_caches: bool,
    /// Option sweeps (`--sweep`): each engine runs once per setting of
    /// its axes' cross product.
    #[serde(default)]
    pub sweep: Vec<sweep::SweepAxis>,
    /// Runs of every (engine, step) (`--repeat`), 1 for none.
    pub repeat: usize,
    /// Repeat on one database per engine (`--reuse`) instead of a fresh
    /// one per repetition.
    #[serde(default)]
    pub reuse: bool,
}

/// What a step's end means for the engine's remaining steps and the run.
enum After {
    /// Go on with the next step.
    Next,
    /// The step failed: this engine's other steps are skipped.
    Failed,
    /// Ctrl-C: the run ends.
    Interrupted,
}

/// A run in progress: its configuration, results file and outcome so far.
struct Run<'c> {
    cfg: &'c RunConfig,
    /// The run's storage (its device is undone when the run ends).
    storage: setup::Prepared,
    params: Params,
    /// The load step added before the selected steps, if one was.
    added: Option<Step>,
    steps: Vec<Step>,
    results: Results,
    id: i64,
    status: Status,
    ordinal: usize,
    /// The engine's cumulative column-family writes at its last step's end.
    cf_before: Vec<(String, f64)>,
    /// The engine run's label in the results: its name, with its sweep
    /// setting (`rocksdb[compaction_pri=kX]`).
    label: String,
    /// The repetition running (`--repeat`, 0-based).
    rep: usize,
}

/// Runs every engine through the steps; returns the run id. Per-step lines
/// go to `out`. `invocation` is the first run of the same `ampbench run`
/// when this is a later corner of it.
pub fn run(
    cfg: &RunConfig,
    command: &str,
    invocation: Option<i64>,
    out: &mut dyn Write,
) -> Result<i64> {
    let mut r = begin(cfg, command, invocation, out)?;
    match run_all(&mut r, out) {
        Ok(()) => {
            r.results.end_run(r.id, r.status)?;
            Ok(r.id)
        }
        Err(e) => {
            // The error ends the command; the results file says so too.
            let why = format!("{e:#}").replace('\n', " ");
            if let Err(w) = r.results.fail_run(r.id, &why) {
                return Err(e.context(format!("recording the failure also failed: {w:#}")));
            }
            Err(e)
        }
    }
}

/// The run's first lines: what runs where, its storage and memory.
fn announce(r: &Run<'_>, out: &mut dyn Write) -> Result<()> {
    let cfg = r.cfg;
    let names =
        |v: &[EngineKind], sep: &str| v.iter().map(|e| e.name()).collect::<Vec<_>>().join(sep);
    writeln!(
        out,
        "run {}: workload {} on {} · seed {} · results {}",
        r.id,
        cfg.workload.name(),
        names(&cfg.engines, ", "),
        cfg.seed,
        cfg.results.display()
    )?;
    let effective: Vec<String> = r
        .params
        .effective()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    writeln!(out, "parameters: {}", effective.join(" "))?;
    for l in &r.storage.lines {
        writeln!(out, "{l}")?;
    }
    writeln!(out, "{}", memory_line(cfg))?;
    if let Some(load) = r.added {
        let all: Vec<&str> = r.steps.iter().map(|s| s.name()).collect();
        writeln!(
            out,
            "steps: {} ('{load}' added first: the selected steps read the data it loads)",
            all.join(",")
        )?;
    }
    Ok(())
}

/// Every repetition of every engine and setting.
fn run_all(r: &mut Run<'_>, out: &mut dyn Write) -> Result<()> {
    announce(r, out)?;
    let cfg = r.cfg;
    // Repetitions on fresh databases interleave the engines, the order
    // reversed every other time (A B, B A, A B…), so drift on a shared
    // machine and order effects hit every engine alike. With --reuse each
    // engine runs once and repeats its steps (run_engine).
    let fresh = if cfg.reuse { 1 } else { cfg.repeat.max(1) };
    'reps: for rep in 0..fresh {
        r.rep = rep;
        let mut order: Vec<EngineKind> = cfg.engines.clone();
        if rep % 2 == 1 {
            order.reverse();
        }
        if fresh > 1 {
            writeln!(out, "repetition {} of {fresh}", rep + 1)?;
        }
        for kind in order {
            for setting in sweep::variants(&cfg.sweep, kind) {
                if let After::Interrupted = run_engine(r, kind, &setting, out)? {
                    break 'reps;
                }
            }
        }
    }
    Ok(())
}

/// Validates everything before anything runs, adds the load step a
/// selection needs, opens the results file and records the run.
fn begin<'c>(
    cfg: &'c RunConfig,
    command: &str,
    invocation: Option<i64>,
    out: &mut dyn Write,
) -> Result<Run<'c>> {
    let params = Params::new(cfg.workload.name(), cfg.workload.params(), &cfg.params)?;
    cfg.workload.build(&params)?;
    for e in &cfg.engines {
        engine::validate_options(*e, cfg.sets.get(e).unwrap_or(&EngineOptions::default()))?;
    }
    if let Some(s) = cfg.steps.iter().find(|s| s.workload() != cfg.workload) {
        return Err(crate::UsageError(format!(
            "step '{s}' is not a step of workload {}",
            cfg.workload.name()
        ))
        .into());
    }
    let mut steps = cfg.steps.clone();
    let added = cfg.workload.load_first(&steps);
    if let Some(load) = added {
        steps.insert(0, load);
    }
    // A server that runs as its own user must reach its data below --dir:
    // said now, not as initdb's "Permission denied".
    for e in &cfg.engines {
        if let Some(user) = e.def().run_as {
            setup::server::check_reachable(user, e.name(), &cfg.dir)?;
        }
    }
    std::fs::create_dir_all(&cfg.dir)
        .with_context(|| format!("cannot create data directory {}", cfg.dir.display()))?;
    // Before any device is made: a bad results path fails at once.
    let results = Results::open(&cfg.results)?;
    for l in setup::clean_leftovers(None) {
        writeln!(out, "leftover of a killed run: {l}")?;
    }
    let probe_secs = if cfg.storage.caps.none() { 0.5 } else { 1.0 };
    let mut storage = setup::prepare(&cfg.storage, &cfg.dir, probe_secs);
    if cfg.keep {
        if let Some(d) = storage.device.as_mut() {
            d.keep_image();
        }
    }
    if cfg.engines.iter().any(|e| e.def().server) {
        // Before any worker thread exists: the counter is inherited.
        if let Err(why) = crate::probe::syscalls::start() {
            writeln!(out, "client system calls not counted: {why}")?;
        }
    }
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
    config["storage_effective"] = storage.record.clone();
    let names =
        |v: &[EngineKind], sep: &str| v.iter().map(|e| e.name()).collect::<Vec<_>>().join(sep);
    let id = results.begin_run(&RunRecord {
        command: command.to_string(),
        workload: cfg.workload.name().into(),
        engines: names(&cfg.engines, ","),
        seed: cfg.seed,
        config,
        versions: serde_json::Value::Object(versions),
        machine: machine_facts(&storage.parent),
        invocation,
    })?;
    Ok(Run {
        cfg,
        storage,
        params,
        added,
        steps,
        results,
        id,
        status: Status::Done,
        ordinal: 0,
        cf_before: Vec::new(),
        label: String::new(),
        rep: 0,
    })
}

/// One engine: a fresh data directory, the engine opened (a server
/// started) with the workload's tables, every step, the engine closed and
/// its directory removed (or kept with `--keep`).
fn run_engine(
    r: &mut Run<'_>,
    kind: EngineKind,
    setting: &[(String, String)],
    out: &mut dyn Write,
) -> Result<After> {
    let cfg = r.cfg;
    r.cf_before.clear();
    r.label = sweep::label(kind, setting);
    let mut options = engine_options(cfg, kind);
    options.pairs.extend(setting.iter().cloned());
    if !setting.is_empty() {
        writeln!(out, "{}: sweep setting", r.label)?;
        // A value the engine refuses fails this run only.
        if let Err(e) = engine::validate_options(kind, &options) {
            writeln!(out, "{}: {e:#}", r.label)?;
            fail_open(r, &format!("{e:#}"))?;
            return Ok(After::Next);
        }
    }
    let parent = r.storage.parent.clone();
    let tmp = tempfile::Builder::new()
        .prefix(&format!("ampbench-{kind}-"))
        .tempdir_in(&parent)
        .with_context(|| format!("cannot create a data directory in {}", parent.display()))?;
    let mut workload = cfg.workload.build(&r.params)?;
    workload.configure(&r.steps, cfg.threads);
    let cg = match engine_cgroup(cfg, r.storage.io_max.as_deref(), kind) {
        Ok(cg) => cg,
        Err(e) => {
            writeln!(out, "{}: cannot limit its memory: {e:#}", r.label)?;
            fail_open(r, &format!("cannot limit its memory: {e:#}"))?;
            return Ok(After::Next);
        }
    };
    let spec = OpenSpec {
        dir: tmp.path().to_path_buf(),
        tables: workload.tables(),
        cache_bytes: cfg.cache_bytes,
        options,
        transactions: workload.transactions(),
        transport: cfg.transport,
        replication_log: cfg.replication_log,
        cgroup: cg
            .as_ref()
            .filter(|_| kind.is_server())
            .map(|c| c.procs_file()),
    };
    let mut mem = EngineMem { cg, watch: None };
    if let Some(c) = mem.cg.as_mut().filter(|_| !kind.is_server()) {
        // The engine runs in this process: ampbench joins the group for
        // the engine's lifetime, so its memory and page cache are charged.
        mem.watch = cfg.memory.and_then(|m| DeathNote::start(c, m, kind.name()));
        crate::setup::cgroup::return_free_memory();
        c.join_self()?;
    }
    let Some(eng) = open_engine(r, kind, &spec, &*workload, out)? else {
        return Ok(After::Next);
    };
    if cfg.memory.is_some() && !kind.def().direct_io {
        writeln!(
            out,
            "  {kind} has no direct IO: its reads and writes go through the page cache (charged to its memory limit)"
        )?;
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
        writeln!(out, "  settings: {}", engine::options::show(&settings))?;
    }
    if kind.def().server {
        writeln!(
            out,
            "  clients connect over {} (--transport)",
            cfg.transport
        )?;
    }
    if cfg.allocator != crate::setup::allocator::Allocator::Glibc {
        writeln!(out, "  {}", cfg.allocator.describe(eng.pid()))?;
    }
    if cfg.replication_log && !kind.def().server {
        writeln!(
            out,
            "  replication log: none ({kind} is embedded; --replication-log applies to servers)"
        )?;
    }
    let probe = Probe::with_paths(eng.dir(), eng.data_paths(), eng.pid());
    let mut after = After::Next;
    'steps: for (si, step) in r.steps.clone().into_iter().enumerate() {
        if cfg.drop_caches && si > 0 {
            if let Err(e) = setup::drop_caches() {
                writeln!(out, "  cannot drop caches: {e}")?;
            }
        }
        // A storage sweep runs repeatable steps at every class; the load
        // (and an index build) at the first.
        let classes: Vec<Option<usize>> = if step.repeatable() && !r.storage.sweep.is_empty() {
            (0..r.storage.sweep.len()).map(Some).collect()
        } else {
            vec![None]
        };
        let levels: Vec<Option<usize>> = if step.concurrent() && !cfg.thread_levels.is_empty() {
            cfg.thread_levels.iter().map(|&n| Some(n)).collect()
        } else {
            vec![None]
        };
        for class in classes {
            if !r.storage.sweep.is_empty() {
                throttle_to(r, &mem, class.unwrap_or(0))?;
            }
            for &level in &levels {
                let at = Level {
                    class: class.map(|i| r.storage.sweep[i].0),
                    threads: level,
                };
                // --reuse: a step that reads or rewrites the data runs
                // --repeat times in a row; a load runs once.
                let reps = if cfg.reuse && step.repeatable() {
                    cfg.repeat
                } else {
                    1
                };
                for rep in 0..reps {
                    if cfg.reuse {
                        r.rep = rep;
                    }
                    after = run_step(r, &*eng, &*workload, &probe, &mem, (si, step, at), out)?;
                    if !matches!(after, After::Next) {
                        break 'steps;
                    }
                }
            }
        }
    }
    if !r.storage.sweep.is_empty() {
        // The next engine loads at the first class.
        throttle_to(r, &mem, 0)?;
    }
    if let Err(e) = eng.close() {
        writeln!(out, "{kind}: close failed: {e:#}")?;
    }
    drop(mem.watch.take());
    if let Some(mut c) = mem.cg.take() {
        if let (Some(limit), Some(peak)) = (cfg.memory, c.life_peak()) {
            let hits = c.life_limit_hits().unwrap_or(0);
            writeln!(
                out,
                "  memory cgroup: limit {:.0} MB, peak {:.0} MB, {hits} charges refused at the limit (over its steps)",
                limit as f64 / 1e6,
                peak as f64 / 1e6,
            )?;
        }
        if let Err(e) = c.remove() {
            writeln!(out, "{kind}: {e:#}")?;
        }
    }
    if cfg.keep {
        let kept = tmp.keep();
        match &r.storage.device {
            // The device is unmounted when the run ends; its image stays.
            Some(d) => writeln!(
                out,
                "  kept {} on the dedicated device: its image {} stays after the run (mount -o loop {} DIR to read it)",
                kept.strip_prefix(&d.mount).unwrap_or(&kept).display(),
                d.kept_image().display(),
                d.kept_image().display()
            )?,
            None => writeln!(out, "  kept {}", kept.display())?,
        }
    }
    Ok(after)
}

/// Opens the engine and, on a server, creates the workload's schema. A
/// failure is recorded (an `open` step for the engine) and printed, and the
/// run goes on with the next engine.
fn open_engine(
    r: &mut Run<'_>,
    kind: EngineKind,
    spec: &OpenSpec,
    workload: &dyn Workload,
    out: &mut dyn Write,
) -> Result<Option<Box<dyn Engine>>> {
    let eng = match engine::open(kind, spec) {
        Ok(e) => e,
        Err(e) => {
            writeln!(out, "{}: cannot open: {e:#}", r.label)?;
            fail_open(r, &format!("cannot open: {e:#}"))?;
            return Ok(None);
        }
    };
    if let EngineRef::Sql(s) = eng.face() {
        let ddl = workload.sql_schema(s.dialect(), s.table_options());
        let created = s
            .connect()
            .and_then(|mut c| ddl.iter().try_for_each(|q| c.batch(q)));
        if let Err(e) = created {
            writeln!(out, "{}: cannot create the schema: {e:#}", r.label)?;
            r.status = Status::Failed;
            let _ = eng.close();
            return Ok(None);
        }
    }
    Ok(Some(eng))
}

/// Records a failed `open` step for an engine that could not start.
fn fail_open(r: &mut Run<'_>, why: &str) -> Result<()> {
    let id = r.results.begin_step(
        r.id,
        (r.ordinal, r.rep),
        &r.label,
        "open",
        &serde_json::json!({}),
    )?;
    r.ordinal += 1;
    r.results
        .end_step(id, Status::Failed, Some(why), 0.0, None)?;
    r.status = Status::Failed;
    Ok(())
}
