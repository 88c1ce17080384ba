//! What the runner sets up around an engine: its memory cgroup and
//! watcher, its options for an IO-bound run, and the facts and lines
//! recorded and printed about the machine and memory, the driver
//! settings of a step and the progress spinner.

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{Run, RunConfig};
use crate::engine::{EngineKind, EngineOptions, presets};
use crate::rng::derive_seed;
use crate::setup::cgroup::MemCgroup;
use crate::workload::{Step, StepCtx};

/// The machine's memory (`MemTotal`), bytes; 0 when /proc/meminfo
/// cannot be read.
pub fn mem_total_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines().find_map(|l| {
                l.strip_prefix("MemTotal:")
                    .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            })
        })
        .map_or(0, |kb| kb * 1024)
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
    let mem_kb = mem_total_bytes() / 1024;
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
        "harness": format!(
            "transparent huge pages off; glibc malloc arenas {}",
            crate::setup::cgroup::arenas()
        ),
    })
}

/// An engine's memory cgroup.
pub(super) struct EngineMem {
    /// The group, when there is one.
    pub(super) cg: Option<MemCgroup>,
}

/// The engine's cgroup: with `--memory`, or on cgroup v2 when the device
/// is throttled (v2 throttles per cgroup).
pub(super) fn engine_cgroup(
    cfg: &RunConfig,
    io_max: Option<&str>,
    kind: EngineKind,
) -> Result<Option<MemCgroup>> {
    if cfg.memory.is_none() && io_max.is_none() {
        return Ok(None);
    }
    let cg = MemCgroup::create(kind.name(), cfg.memory)?;
    if let Some(line) = io_max {
        cg.set_io_max(line)?;
    }
    Ok(Some(cg))
}

/// `--set` options over the `--preset`'s settings over the engine's
/// IO-bound profile (with `--memory`), then a sweep's `setting`.
pub(super) fn engine_options(
    cfg: &RunConfig,
    kind: EngineKind,
    setting: &[(String, String)],
) -> EngineOptions {
    let mut o = cfg.sets.get(&kind).cloned().unwrap_or_default();
    o.allow_unsafe = cfg.allow_unsafe_settings;
    // The name was checked when the configuration was made.
    if let Some(p) = cfg.preset.as_deref().and_then(|n| presets::find(n).ok()) {
        o.pairs = o.merged_over(&p.settings(kind, cfg.memory));
    }
    if let Some(memory) = cfg.memory {
        o.pairs = o.merged_over(&(kind.def().io_bound)(memory));
    }
    o.pairs.extend(setting.iter().cloned());
    o
}

/// The memory configuration as printed at start.
pub(super) fn memory_line(cfg: &RunConfig) -> String {
    let size = crate::units::format_size;
    match cfg.memory {
        None => format!(
            "memory: unlimited (cached configuration); engine cache {}{}",
            size(cfg.cache_bytes),
            if cfg.drop_caches {
                "; page cache dropped before each step"
            } else {
                ""
            }
        ),
        Some(m) => format!(
            "memory: {}{} for the engine's process, page cache included (IO-bound configuration); engine cache {}{}{}{}",
            size(m),
            cfg.memory_from_data.map_or(String::new(), |d| format!(
                " (--bound io: a quarter of the {:.0} MB the load writes)",
                d as f64 / 1e6
            )),
            size(cfg.cache_bytes),
            if cfg.cache_from_memory {
                " (a quarter of the limit; --cache to choose)"
            } else {
                ""
            },
            if cfg.drop_caches {
                "; page cache dropped before each step"
            } else {
                ""
            },
            if m < 256 << 20 {
                "\n  note: below 256MB an engine's own memory (RocksDB: its cache, up to twice its memtable budget while flushes lag, and with transactions, as LinkBench runs it, 50MB of conflict-check locks; the harness: about 25MB) may not fit; an engine that does not is killed at the limit"
            } else {
                ""
            }
        ),
    }
}

/// A time setting as a `Duration`; the error names the setting (the
/// command line's checks keep them in range, a plan built otherwise may
/// not).
fn secs(name: &str, v: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(v).map_err(|_| {
        crate::UsageError(format!("--{name} {v}: not a time ampbench can wait")).into()
    })
}

/// The driver settings of step number `si`. `pass` counts the times this
/// step has already run on the same database (a storage class or thread
/// level of a sweep, a `--reuse` repetition): each pass draws a stream of
/// its own, so a repeated step does not replay the writes its first pass
/// made (LinkBench's ADD_LINK would find every link it adds already
/// there). The first pass keeps the step's seed of a run without sweeps.
pub fn step_ctx(
    cfg: &RunConfig,
    si: usize,
    threads: Option<usize>,
    pass: usize,
) -> Result<StepCtx> {
    let seed = if pass == 0 {
        derive_seed(cfg.seed, &[si as u64])
    } else {
        derive_seed(cfg.seed, &[si as u64, pass as u64])
    };
    // Several clients draw their own streams (a lone client's seeds are
    // those of a run without --clients).
    let share = cfg.clients.as_ref().map(|c| c.share()).unwrap_or_default();
    let seed = if share.clients > 1 {
        derive_seed(seed, &[CLIENT_STREAM, share.client as u64])
    } else {
        seed
    };
    Ok(StepCtx {
        threads: threads.unwrap_or(cfg.threads).max(1),
        warmup: secs("warmup", cfg.warmup)?,
        duration: secs("duration", cfg.duration)?,
        interval: secs("interval", cfg.interval)?,
        arrival: cfg.arrival,
        seed,
        share,
    })
}

/// The tag under which a client's streams are derived from a step's seed.
const CLIENT_STREAM: u64 = 0xc1;

/// A progress spinner on a terminal; hidden otherwise (CI, pipes).
pub(super) fn progress_bar() -> ProgressBar {
    if !(std::io::stdout().is_terminal() && std::io::stderr().is_terminal()) {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    b.set_style(
        ProgressStyle::with_template("{spinner} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    b
}

/// Where a step runs in a sweep: its storage class and thread count
/// (None: the run's own).
#[derive(Clone, Copy)]
pub(super) struct Level {
    pub(super) class: Option<crate::setup::storage::StorageClass>,
    pub(super) threads: Option<usize>,
    /// Runs of this step on this database before this one (see
    /// [`step_ctx`]).
    pub(super) pass: usize,
}

impl Level {
    /// The step's place in the run, typed (recorded with the step).
    pub(super) fn identity(self, step: Step) -> crate::identity::StepIdentity {
        crate::identity::StepIdentity {
            step: step.name().to_string(),
            class: self.class.map(|c| c.name().to_string()),
            level: self.threads,
        }
    }

    /// The step's label: `pq.n`, `request@disk-array`, `pq.n@slow-ssd@8`.
    pub(super) fn label(self, step: Step) -> String {
        self.identity(step).label()
    }
}

/// Throttles the run's device to class `i` of its sweep (on cgroup v2,
/// in the engine's cgroup).
pub(super) fn throttle_to(r: &mut Run<'_>, mem: &EngineMem, i: usize) -> Result<()> {
    if let Some(line) = r.storage.switch(i)? {
        if let Some(cg) = mem.cg.as_ref() {
            cg.set_io_max(&line)?;
        }
    }
    Ok(())
}
