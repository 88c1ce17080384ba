//! The Runner: for each engine, open it in a fresh data directory, build the
//! workload, and run the selected steps through the driver, writing every
//! interval and every step to the results file as it goes.
//!
//! A failed step is recorded with its error and ends that engine's steps
//! (its data may be half-written); the next engine still runs. Ctrl-C ends
//! the step in progress, records it as interrupted, and ends the run.

mod begin;
mod env;
pub mod host;
mod predict;
mod side;
mod sink;
mod slicer;
pub(crate) use side::probe_of;
use side::{EngineSide, InProcess, fail_open};
use side::{engine_lines, open_engine};
mod meeting;
mod step;
mod steps;
mod warm;
use steps::run_steps;
pub(crate) use warm::shortest as shortest_warmup_steady;
pub mod sweep;

pub use env::mem_total_bytes;
use env::{
    EngineMem, Level, engine_cgroup, engine_options, memory_line, progress_bar, throttle_to,
};
pub use env::{machine_facts, step_ctx};
pub use slicer::{Slice, Slicer};
use step::run_step;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::engine::{self, Engine, EngineKind, EngineOptions, EngineRef, OpenSpec};
use crate::names::Status;
use crate::probe::Probe;
use crate::results::Results;
use crate::setup::{self, StorageConfig};
use crate::workload::{Params, Step, Workload, WorkloadKind};

/// A validated run configuration: plain data, recorded with the run.
#[derive(Clone, Debug, Serialize)]
pub struct RunConfig {
    /// The seed post the plan reproduces (`[post]`), reported beside the
    /// run's figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub post: Option<crate::postspec::PostSpec>,
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
    /// `--warmup-steady`: warm each timed step up until its throughput
    /// stops rising, for at most this many seconds (`warmup` the least).
    #[serde(default)]
    pub warmup_steady: Option<f64>,
    /// Measured seconds per timed step.
    pub duration: f64,
    /// Seconds between probe samples.
    pub interval: f64,
    /// Report each step as consecutive slices of this many seconds
    /// (`--slice`), built from whole intervals.
    #[serde(default)]
    pub slice: Option<f64>,
    /// Closed loop, or a fixed total rate with its gaps (`--rate`,
    /// `--arrival`).
    pub arrival: crate::driver::Arrival,
    /// The run seed.
    pub seed: u64,
    /// Engine cache bytes.
    pub cache_bytes: u64,
    /// The results store.
    pub results: crate::results::Location,
    /// One of several clients of a run (`--clients N --client K`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clients: Option<crate::results::meet::Clients>,
    /// Parent of the engines' data directories.
    pub dir: PathBuf,
    /// Keep data directories afterwards.
    pub keep: bool,
    /// Wait for engine background work after each load step.
    pub settle: bool,
    /// `-v`: print the model's explanation under each step.
    #[serde(default)]
    pub verbose: bool,
    /// How clients reach server engines (`--transport`); None: as the
    /// workload's reference client does ([`RunConfig::transport_of`]).
    #[serde(default)]
    pub transport: Option<crate::engine::Transport>,
    /// An external server to reach instead of starting one (`--target`),
    /// recorded without its password.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<crate::engine::target::TargetSpec>,
    /// Another build of the server to start (`--server-bin`), with its
    /// version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_bin: Option<crate::engine::server::ServerBin>,
    /// The server host's node exporter (`--host-metrics`), checked at
    /// start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_metrics: Option<String>,
    /// The C allocator preloaded under the engines (`--allocator`).
    pub allocator: crate::setup::allocator::Allocator,
    /// A replication log on the servers (`--replication-log`).
    pub replication_log: bool,
    /// Seconds a server may take to answer (`--server-timeout`).
    pub server_timeout: f64,
    /// Where the data lives: native, or a dedicated throttled device.
    pub storage: StorageConfig,
    /// The engine process's memory limit in bytes (page cache included):
    /// the IO-bound configuration. None: unlimited (cached).
    pub memory: Option<u64>,
    /// The named engine settings over the IO-bound profile (`--preset`,
    /// a name [`crate::engine::presets::find`] knows).
    pub preset: Option<String>,
    /// Which corner ran: `io` when a memory limit applied, else `cache`.
    pub bound: crate::bound::Bound,
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
    /// The command line after `run`, and which of its corners this is:
    /// what the engine host ([`host`]) parses again to run the same
    /// configuration in a child. None outside the command line.
    #[serde(skip)]
    pub origin: Option<(Vec<String>, usize)>,
}

impl RunConfig {
    /// How clients reach engine `kind`: `--transport`, or as the
    /// workload's reference client does: the insert benchmark's
    /// (iibench.py) over MariaDB's unix socket and PostgreSQL's TCP,
    /// LinkBench's and YCSB's over TCP.
    pub fn transport_of(&self, kind: EngineKind) -> crate::engine::Transport {
        use crate::engine::Transport;
        self.transport.unwrap_or(
            if self.workload == WorkloadKind::Insert
                && kind.speaks() == Some(crate::engine::Protocol::MySql)
            {
                Transport::Socket
            } else {
                Transport::Tcp
            },
        )
    }

    /// The settings engine `kind` is given over its defaults: the
    /// IO-bound profile, the `--preset`'s, then `--set`'s (a sweep's
    /// setting goes after them).
    #[cfg(test)]
    pub(crate) fn engine_settings(&self, kind: EngineKind) -> Vec<(String, String)> {
        env::engine_options(self, kind, &[]).pairs
    }
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
    /// With `--clients`: this client's membership of the run (None once
    /// it has left it, after a failure).
    meeting: Option<crate::results::meet::Meeting>,
    /// A follower client: the target's database the leader made.
    joined_db: Option<String>,
    /// With `--clients`: this client has failed out of the run (its run
    /// stops after the engine in progress is closed).
    departed: bool,
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
    let mut r = begin::begin(cfg, command, invocation, out)?;
    if let Ok(mut c) = CURRENT.lock() {
        *c = Some(Current {
            results: cfg.results.clone(),
            client: cfg.clients.as_ref().map(|c| c.client),
            id: r.id,
            dirs: Vec::new(),
            keep: cfg.keep,
        });
    }
    let done = run_all(&mut r, out);
    if let Ok(mut c) = CURRENT.lock() {
        *c = None;
    }
    match done {
        Ok(()) => {
            match r.meeting.take() {
                Some(mut m) => m.finish(&mut r.results, r.status, None)?,
                // A client that left: the run is the others' to end.
                None if r.departed => {}
                None => r.results.end_run(r.id, r.status)?,
            }
            Ok(r.id)
        }
        Err(e) => {
            // The error ends the command; the results file says so too.
            let why = format!("{e:#}").replace('\n', " ");
            if r.meeting.is_some() || r.departed {
                let failed = r.results.fail_running_steps(r.id, &why);
                if let Err(w) = failed.and_then(|_| r.leave(&why)) {
                    return Err(also_failed(e, &w));
                }
                return Err(e);
            }
            if let Err(w) = r.results.fail_run(r.id, &why) {
                return Err(also_failed(e, &w));
            }
            Err(e)
        }
    }
}

/// The run's error `e`, and that recording it failed too (`w`), said
/// once when both are the same store's trouble.
fn also_failed(e: anyhow::Error, w: &anyhow::Error) -> anyhow::Error {
    let (es, ws) = (format!("{e:#}"), format!("{w:#}"));
    if es.contains("results store") && ws.contains("results store") {
        return e.context("the results store failed; what was recorded before stays");
    }
    e.context(format!("recording the failure also failed: {ws}"))
}

/// The run in progress, as [`abort`] needs it.
struct Current {
    results: crate::results::Location,
    /// With `--clients`: this client (only its steps are ended).
    client: Option<usize>,
    id: i64,
    /// The data directory of the engine running (removed unless `keep`).
    dirs: Vec<PathBuf>,
    keep: bool,
}

/// The run in progress (see [`abort`]).
static CURRENT: std::sync::Mutex<Option<Current>> = std::sync::Mutex::new(None);

/// Notes (`Some`) or forgets (`None`) the data directory of the engine
/// running, for [`abort`].
fn note_dir(dir: Option<&std::path::Path>) {
    if let Ok(mut c) = CURRENT.lock() {
        if let Some(c) = c.as_mut() {
            c.dirs.clear();
            c.dirs.extend(dir.map(std::path::Path::to_path_buf));
        }
    }
}

/// What a second Ctrl-C does: kills the servers and engine hosts the run
/// started, marks the run and its running step `interrupted` in the
/// results file, removes the run's device, mount and cgroups, and exits
/// with 130. For when the first Ctrl-C's orderly end is not wanted (a
/// server that stopped answering, before its --server-timeout).
pub fn abort() {
    eprintln!("ampbench: second interrupt: stopping what this run started, cleaning up, exiting");
    crate::engine::server::kill_registered();
    let current = CURRENT.lock().ok().and_then(|mut c| c.take());
    if let Some(c) = current {
        let ended = Results::open(&c.results).and_then(|mut r| match c.client {
            // One of several clients: its own steps; the run is the
            // others' to end (this client's lock goes with its session).
            Some(k) => {
                r.set_client(k);
                r.end_running_steps(
                    c.id,
                    crate::names::Status::Interrupted,
                    "stopped by a second interrupt",
                )
                .map(|_| ())
            }
            None => r.interrupt_run(c.id),
        });
        if let Err(e) = ended {
            eprintln!("ampbench: cannot mark run {} interrupted: {e:#}", c.id);
        }
        if !c.keep {
            for d in &c.dirs {
                let _ = std::fs::remove_dir_all(d);
            }
        }
    }
    for l in crate::setup::clean_leftovers(Some(std::process::id())) {
        eprintln!("ampbench: {l}");
    }
    std::process::exit(130);
}

/// Every repetition of every engine and setting.
fn run_all(r: &mut Run<'_>, out: &mut dyn Write) -> Result<()> {
    begin::announce(r, out)?;
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
                // A client that failed out of a run of several stops: the
                // others' barriers no longer count it.
                if r.departed {
                    break 'reps;
                }
                // After a step, or an open that failed on the device: a
                // model that died or erred makes every later figure wrong.
                if let Some(why) = r.storage.model_failure() {
                    writeln!(
                        out,
                        "storage: FAILED: {why}; the run stops here (every later figure would be wrong)"
                    )?;
                    r.status = crate::names::Status::Failed;
                    break 'reps;
                }
            }
        }
    }
    Ok(())
}

/// One engine: a fresh data directory, the engine opened (a server
/// started) with the workload's tables, every step, the engine closed and
/// its directory removed (or kept with `--keep`).
///
/// An embedded engine that must run inside a cgroup (a memory limit, or
/// v2's IO throttle) runs in a child process, the engine host
/// ([`host`]): ampbench stays outside the limit, so an engine killed
/// there fails its step and the run goes on with the next engine.
fn run_engine(
    r: &mut Run<'_>,
    kind: EngineKind,
    setting: &[(String, String)],
    out: &mut dyn Write,
) -> Result<After> {
    let cfg = r.cfg;
    r.cf_before.clear();
    r.label = sweep::label(kind, setting);
    let options = engine_options(cfg, kind, setting);
    if !setting.is_empty() && refused_setting(r, kind, &options, out)? {
        return Ok(After::Next);
    }
    let parent = r.storage.parent.clone();
    let tmp = tempfile::Builder::new()
        .prefix(&format!("ampbench-{kind}-"))
        .tempdir_in(&parent)
        .with_context(|| format!("cannot create a data directory in {}", parent.display()))?;
    note_dir(Some(tmp.path()));
    let cg = match engine_cgroup(cfg, r.storage.io_max.as_deref(), kind) {
        Ok(cg) => cg,
        Err(e) => {
            writeln!(out, "{}: cannot limit its memory: {e:#}", r.label)?;
            fail_open(r, &format!("cannot limit its memory: {e:#}"))?;
            return Ok(After::Next);
        }
    };
    let mem = EngineMem { cg };
    let Some(mut side) = open_side(r, kind, (setting, options), tmp.path(), &mem, out)? else {
        return Ok(After::Next);
    };
    let mut after = After::Next;
    // Without -v the steps print no line of their own (a terminal shows
    // each as it runs; the closing tables have their figures): one line
    // says how many ran.
    let (t0, mut ran) = (std::time::Instant::now(), 0usize);
    // An error (a results write, a barrier the other clients never
    // reached) still closes the engine: a target's database is dropped.
    let stepped = run_steps(r, &mut *side, &mem, (&mut after, &mut ran), out);
    // Several clients: one whose steps ended early (a failure, Ctrl-C, a
    // storage model that died) fails out of the run before the close
    // barriers, so the others do not wait for it.
    if stepped.is_err() || !matches!(after, After::Next) {
        let why = match &stepped {
            Err(e) => format!("{e:#}"),
            Ok(()) => format!("its steps of {} ended early ({})", r.label, r.status.name()),
        };
        r.leave(&why)?;
    }
    if let Err(e) = stepped {
        // Client 0 still waits for the others before it drops what they
        // share; a store that cannot say keeps it.
        let _ = close_side(r, side, out);
        if let Some(mut c) = mem.cg {
            let _ = c.remove();
        }
        note_dir(None);
        return Err(e);
    }
    if !cfg.verbose {
        writeln!(
            out,
            "  {ran} step{} in {:.1} s",
            if ran == 1 { "" } else { "s" },
            t0.elapsed().as_secs_f64()
        )?;
    }
    if !r.storage.sweep.is_empty() {
        // The next engine loads at the first class.
        throttle_to(r, &mem, 0)?;
    }
    // The engine is closed even when a barrier fails (its error follows).
    let (life, waited) = close_side(r, side, out)?;
    waited?;
    r.joined_db = None;
    end_engine(r.cfg, kind, mem, life, &r.storage, tmp, out)?;
    Ok(after)
}

/// Says a sweep's setting; true when the engine refuses it, which fails
/// this engine's run only (recorded and printed).
fn refused_setting(
    r: &mut Run<'_>,
    kind: EngineKind,
    options: &engine::EngineOptions,
    out: &mut dyn Write,
) -> Result<bool> {
    writeln!(out, "{}: sweep setting", r.label)?;
    if let Err(e) = engine::validate_options(kind, options) {
        writeln!(out, "{}: {e:#}", r.label)?;
        fail_open(r, &format!("{e:#}"))?;
        return Ok(true);
    }
    Ok(false)
}

/// The engine opened in a host of its own (an embedded engine under a
/// memory group) or in this process; None when it did not open
/// (recorded and printed).
fn open_side(
    r: &mut Run<'_>,
    kind: EngineKind,
    (setting, options): (&[(String, String)], engine::EngineOptions),
    dir: &std::path::Path,
    mem: &EngineMem,
    out: &mut dyn Write,
) -> Result<Option<Box<dyn EngineSide>>> {
    let hosted = mem.cg.is_some() && !kind.is_server();
    Ok(if hosted {
        host::Hosted::start(r, kind, setting, dir, mem, out)?
            .map(|h| Box::new(h) as Box<dyn EngineSide>)
    } else {
        InProcess::open(r, kind, options, dir, mem, out)?
            .map(|e| Box::new(e) as Box<dyn EngineSide>)
    })
}

/// After an engine closed: its memory group's peak said and the group
/// removed, its data directory removed or kept (`--keep`).
fn end_engine(
    cfg: &RunConfig,
    kind: EngineKind,
    mem: EngineMem,
    life: Option<MemLife>,
    storage: &crate::setup::Prepared,
    tmp: tempfile::TempDir,
    out: &mut dyn Write,
) -> Result<()> {
    if let Some(mut c) = mem.cg {
        let life = life.or_else(|| Some((c.life_peak()?, c.life_limit_hits().unwrap_or(0))));
        if let (Some(limit), Some((peak, hits))) = (cfg.memory, life) {
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
    note_dir(None);
    if cfg.keep {
        let kept = tmp.keep();
        match &storage.device {
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
    Ok(())
}

/// The memory group's peak and the charges it refused, over an engine's
/// steps.
type MemLife = (u64, u64);

/// Closes an engine after its steps. Alone, at once. With other clients
/// (`--clients`), each closes once all have finished the engine's steps
/// (the `close` barrier), and client 0 last (the `closed` barrier),
/// dropping the target's database they shared only when no other client
/// may still use it: one given up for silence whose store session still
/// lives, or a store that cannot say, keeps it (a line says so). Returns
/// the side's memory figures and how the waits went.
fn close_side(
    r: &mut Run<'_>,
    side: Box<dyn EngineSide>,
    out: &mut dyn Write,
) -> Result<(Option<MemLife>, Result<()>)> {
    let leader = r.meeting.as_ref().map(|m| m.me.leader());
    let closing = format!("close {} rep {}", r.label, r.rep);
    let closed = format!("{closing}: closed");
    match leader {
        Some(true) => {
            let waited = r
                .barrier(&closing, None)
                .and_then(|_| r.barrier(&closed, None));
            let keep = match &waited {
                Ok(release) => {
                    let gone = release.as_ref().map(|x| x.dead.clone()).unwrap_or_default();
                    let using = match r.meeting.as_mut() {
                        Some(m) => m.still_using(&mut r.results, &gone),
                        None => Ok(Vec::new()),
                    };
                    match using {
                        Ok(v) if v.is_empty() => None,
                        Ok(v) => Some(format!(
                            "client(s) {} were given up but their store sessions live: they may still use it",
                            v.iter()
                                .map(|c| c.to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )),
                        Err(e) => Some(format!(
                            "the results store cannot say whether the other clients are done ({e:#})"
                        )),
                    }
                }
                Err(e) => Some(format!(
                    "the other clients may still use it (waiting for them failed: {e:#})"
                )),
            };
            let life = side.close(r, out, keep.as_deref())?;
            Ok((life, waited.map(|_| ())))
        }
        Some(false) => {
            let waited = r.barrier(&closing, None);
            let life = side.close(r, out, None)?;
            let waited = waited.and_then(|_| r.barrier(&closed, None));
            Ok((life, waited.map(|_| ())))
        }
        None => Ok((side.close(r, out, None)?, Ok(()))),
    }
}
