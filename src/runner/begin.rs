//! The run's start: its configuration checked against this machine
//! (engines' settings, the target, directories), the device prepared and
//! probed, the run recorded with its versions and machine facts (or
//! joined, with several clients), and its first lines printed.

use std::io::Write;

use anyhow::{Context, Result};

use super::{Run, RunConfig, machine_facts, memory_line};
use crate::engine::{self, EngineKind, EngineOptions};
use crate::names::Status;
use crate::results::{Results, RunRecord};
use crate::setup;
use crate::workload::{Params, Step};

/// The steps a run runs: those selected, after the load they read when
/// it was not selected (returned apart).
pub(super) fn steps_run(cfg: &RunConfig) -> (Vec<Step>, Option<Step>) {
    let mut steps = cfg.steps.clone();
    let added = cfg.workload.load_first(&steps);
    if let Some(load) = added {
        steps.insert(0, load);
    }
    (steps, added)
}

/// The run's first lines: what runs where, its storage and memory.
pub(super) fn announce(r: &Run<'_>, out: &mut dyn Write) -> Result<()> {
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
        cfg.results
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
    if let Some(seed) = cfg.post.as_ref().filter(|p| !p.regimes.is_empty()) {
        writeln!(
            out,
            "the post's regime (a verdict is judged only where this run reaches it; checked at the end):"
        )?;
        for g in &seed.regimes {
            let post = g.post.map_or(String::new(), |v| format!("post {v}, "));
            writeln!(out, "  {}: {post}judged at {}", g.text, g.bounds())?;
        }
    }
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

/// Validates everything before anything runs, adds the load step a
/// selection needs, opens the results file and records the run.
// Long: the run's start in order: the checks that need nothing made, the data
// directory, the results store (before any device), the storage set up and
// probed, the versions, then the run recorded or joined; each needs the ones
// before.
pub(super) fn begin<'c>(
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
    let (steps, added) = steps_run(cfg);
    // A target that refuses this client (a wrong password, a host that
    // does not answer): said now, before the run is recorded.
    if let Some(t) = &cfg.target {
        crate::engine::target::preflight(t)?;
    }
    // A server that runs as its own user must reach its data below --dir:
    // said now, not as initdb's "Permission denied".
    for e in &cfg.engines {
        if let Some(user) = e.def().run_as {
            engine::server::check_reachable(user, e.name(), &cfg.dir)?;
        }
    }
    // A device, or a server's directory, in a directory others could
    // rename things in: said now. Only root makes a device; anyone else
    // runs on native storage.
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let local_server = cfg.target.is_none() && cfg.engines.iter().any(|e| e.is_server());
    if root && (cfg.storage.class != setup::storage::StorageClass::Native || local_server) {
        setup::storage::check_parent(&cfg.dir)?;
    }
    std::fs::create_dir_all(&cfg.dir)
        .with_context(|| format!("cannot create data directory {}", cfg.dir.display()))?;
    // Before any device is made: a bad results path fails at once.
    let mut results = Results::open(&cfg.results)?;
    results.add_read_indexes();
    for l in setup::clean_leftovers(None) {
        writeln!(out, "leftover of a killed run: {l}")?;
    }
    // A class that limits the device (caps or a model) is probed longer.
    let probe_secs =
        cfg.storage
            .probe_secs
            .unwrap_or(if cfg.storage.caps.none() && !cfg.storage.modelled() {
                0.5
            } else {
                1.0
            });
    let mut storage = setup::prepare(&cfg.storage, &cfg.dir, probe_secs);
    if cfg.keep {
        if let Some(d) = storage.device.as_mut() {
            d.keep_image();
        }
    }
    if cfg.engines.iter().any(|e| e.is_server()) {
        // Before any worker thread exists: the counter is inherited.
        if let Err(why) = crate::probe::syscalls::start() {
            writeln!(out, "client system calls not counted: {why}")?;
        }
    }
    let mut versions = serde_json::Map::new();
    for e in &cfg.engines {
        let v = match (&cfg.target, &cfg.server_bin) {
            (Some(t), _) => format!(
                "external target {} (its version: the engine's, read at open)",
                t.target.shown()
            ),
            (None, Some(b)) if b.serves(*e) => b.version(),
            _ => e
                .library_version()
                .unwrap_or_else(|err| format!("unavailable: {err:#}")),
        };
        versions.insert(e.name().into(), v.into());
        if let Some(lib) = e.library() {
            versions.insert(format!("{}_library", e.name()), lib.into());
        }
    }
    let mut config = serde_json::to_value(cfg)?;
    config["params_effective"] = serde_json::to_value(params.effective())?;
    config["steps_run"] = serde_json::to_value(&steps)?;
    config["storage_effective"] = storage.record.clone();
    let names =
        |v: &[EngineKind], sep: &str| v.iter().map(|e| e.name()).collect::<Vec<_>>().join(sep);
    let record = RunRecord {
        command: command.to_string(),
        workload: cfg.workload.name().into(),
        engines: names(&cfg.engines, ","),
        seed: cfg.seed,
        config,
        versions: serde_json::Value::Object(versions),
        machine: machine_facts(&storage.parent),
        invocation,
    };
    let (id, meeting) = match &cfg.clients {
        Some(c) => {
            let m = crate::results::meet::Meeting::join(&mut results, c, &record)?;
            writeln!(
                out,
                "client {} of {}: run {} '{}' in {}; this clock is {:+.3} s from the store's",
                c.client, c.clients, m.run, c.run_name, cfg.results, -m.skew
            )?;
            (m.run, Some(m))
        }
        None => (results.begin_run(&record)?, None),
    };
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
        meeting,
        joined_db: None,
        departed: false,
    })
}
