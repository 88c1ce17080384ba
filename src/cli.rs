//! The command line: parsed first into validated plain data, then handed to
//! the runner, the report or the doctor.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::UsageError;
use crate::engine::{EngineKind, options};
use crate::report::Format;
use crate::results::{Results, read};
use crate::runner::{self, RunConfig};
use crate::workload::WorkloadKind;

/// ampbench: benchmark storage engines for performance and efficiency
/// (read, write and space amplification per operation).
#[derive(Parser, Debug)]
#[command(name = "ampbench", version, about, long_about = None, arg_required_else_help = true)]
pub struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a workload on one or more engines and print the tables.
    Run(RunArgs),
    /// Print the tables of a recorded run from the results file.
    Report(ReportArgs),
    /// List workloads, their steps and parameters, and engines with their defaults.
    List,
    /// Check which engines are usable and what this machine can do.
    Doctor(DoctorArgs),
}

/// Arrival process under --rate.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum ArrivalKind {
    /// Exponential gaps.
    Poisson,
    /// Equal gaps.
    Uniform,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// Workload to run.
    #[arg(short, long, value_enum, default_value = "pattern")]
    workload: WorkloadKind,
    /// Engines, comma-separated (rocksdb, wiredtiger, lmdb, leveldb, sqlite, null).
    #[arg(
        short,
        long,
        value_delimiter = ',',
        default_value = "rocksdb,wiredtiger,lmdb"
    )]
    engine: Vec<String>,
    /// Steps to run, comma-separated, in the workload's order (default: all).
    #[arg(long, value_delimiter = ',')]
    steps: Vec<String>,
    /// Workload parameter KEY=VALUE (repeatable); `ampbench list` shows them.
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    param: Vec<String>,
    /// Engine option ENGINE.KEY=VALUE (repeatable), passed to the engine.
    #[arg(long = "set", value_name = "ENGINE.KEY=VALUE")]
    set: Vec<String>,
    /// Threads for multi-threaded steps (the `.n` steps, YCSB, micro reads).
    #[arg(long, default_value_t = 4)]
    threads: usize,
    /// Seconds of unrecorded warm-up before each timed step.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Measured seconds of each timed step.
    #[arg(long, default_value_t = 3.0)]
    duration: f64,
    /// Seconds between probe samples (figures per interval).
    #[arg(long, default_value_t = 10.0)]
    interval: f64,
    /// Fixed total arrival rate, ops/s; latency from the intended start (default: closed loop).
    #[arg(long)]
    rate: Option<f64>,
    /// Arrival process under --rate.
    #[arg(long, value_enum, default_value = "poisson")]
    arrival: ArrivalKind,
    /// Run seed (recorded; the default is fixed).
    #[arg(long)]
    seed: Option<u64>,
    /// Engine cache size given to every engine that has one (e.g. 256MB, 1GB).
    #[arg(long, default_value = "256MB")]
    cache: String,
    /// Results file (SQLite).
    #[arg(long, default_value = "ampbench.db")]
    results: PathBuf,
    /// Directory under which each engine gets a fresh data directory (default: the system temp dir).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Keep the data directories afterwards.
    #[arg(long)]
    keep: bool,
    /// Wait for the engine's background work (compaction, checkpoint) after load steps.
    #[arg(long)]
    settle: bool,
}

#[derive(Args, Debug)]
struct ReportArgs {
    /// Results file (SQLite).
    #[arg(long, default_value = "ampbench.db")]
    results: PathBuf,
    /// Run id, or `latest`.
    #[arg(long, default_value = "latest")]
    run: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

#[derive(Args, Debug)]
struct DoctorArgs {
    /// Data directory to check (default: the system temp dir).
    #[arg(long)]
    dir: Option<PathBuf>,
}

fn positive(name: &str, v: f64) -> Result<f64, UsageError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(UsageError(format!(
            "--{name} {v}: must be a positive number of seconds"
        )))
    }
}

impl RunArgs {
    fn into_config(self) -> Result<RunConfig, UsageError> {
        let mut engines = Vec::new();
        for e in &self.engine {
            let k = EngineKind::parse(e.trim())?;
            if !engines.contains(&k) {
                engines.push(k);
            }
        }
        let steps: Vec<String> = if self.steps.is_empty() {
            self.workload
                .steps()
                .iter()
                .map(|s| s.to_string())
                .collect()
        } else {
            self.steps.iter().map(|s| s.trim().to_string()).collect()
        };
        if let Some(r) = self.rate {
            if !(r.is_finite() && r > 0.0) {
                return Err(UsageError(format!(
                    "--rate {r}: must be a positive number of ops/s"
                )));
            }
        }
        if self.threads == 0 {
            return Err(UsageError("--threads 0: must be at least 1".into()));
        }
        if !(self.warmup.is_finite() && self.warmup >= 0.0) {
            return Err(UsageError(format!(
                "--warmup {}: must be zero or more seconds",
                self.warmup
            )));
        }
        Ok(RunConfig {
            workload: self.workload,
            engines,
            steps,
            params: crate::workload::params::parse_pairs(&self.param)?,
            sets: options::parse_sets(&self.set)?,
            threads: self.threads,
            warmup: self.warmup,
            duration: positive("duration", self.duration)?,
            interval: positive("interval", self.interval)?,
            rate: self.rate,
            poisson: matches!(self.arrival, ArrivalKind::Poisson),
            seed: self.seed.unwrap_or(crate::rng::DEFAULT_SEED),
            cache_bytes: options::parse_size(&self.cache)
                .map_err(|e| UsageError(format!("--cache: {e}")))?,
            results: self.results,
            dir: self.dir.unwrap_or_else(std::env::temp_dir),
            keep: self.keep,
            settle: self.settle,
        })
    }
}

/// Runs the command line; returns the process exit code.
pub fn main() -> Result<i32> {
    let cli = Cli::parse();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match cli.cmd {
        Cmd::Run(a) => {
            let command = std::env::args().collect::<Vec<_>>().join(" ");
            let cfg = a.into_config()?;
            let _ = ctrlc::set_handler(|| {
                crate::driver::INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst)
            });
            let id = runner::run(&cfg, &command, &mut out)?;
            let results = Results::open_existing(&cfg.results)?;
            let view = read::load(&results, read::RunSel::Id(id))?;
            writeln!(out)?;
            write!(out, "{}", crate::report::render(&view, Format::Text))?;
            writeln!(
                out,
                "\nresults: {} (run {id}) · other reports: ampbench report --results {} --run {id} --format json|csv",
                cfg.results.display(),
                cfg.results.display()
            )?;
            Ok(if view.status == "done" { 0 } else { 1 })
        }
        Cmd::Report(a) => {
            let sel = read::RunSel::parse(&a.run)?;
            let results = Results::open_existing(&a.results)?;
            let view = read::load(&results, sel)?;
            write!(out, "{}", crate::report::render(&view, a.format))?;
            Ok(0)
        }
        Cmd::List => {
            write!(out, "{}", list())?;
            Ok(0)
        }
        Cmd::Doctor(a) => {
            let dir = a.dir.unwrap_or_else(std::env::temp_dir);
            let (text, any) = crate::setup::doctor::report(&dir);
            write!(out, "{text}")?;
            Ok(if any { 0 } else { 1 })
        }
    }
}

/// `ampbench list`: workloads, steps, parameters with defaults; engines with
/// their default settings.
pub fn list() -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    for w in WorkloadKind::ALL {
        let _ = writeln!(o, "workload {}: {}", w.name(), w.about());
        let _ = writeln!(o, "  steps: {}", w.steps().join(", "));
        let _ = writeln!(o, "  parameters (-p KEY=VALUE):");
        for p in w.params() {
            let _ = writeln!(o, "    {:<22} {:<10} {}", p.key, p.default, p.help);
        }
        let _ = writeln!(o);
    }
    let _ = writeln!(
        o,
        "engines (--set ENGINE.KEY=VALUE; defaults shown for --cache 256MB):"
    );
    for e in EngineKind::ALL {
        let s = crate::engine::default_settings(e, 256 << 20);
        let s: Vec<String> = s.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(
            o,
            "  {:<11} {} — {}",
            e.name(),
            e.structure(),
            if s.is_empty() {
                "no options".into()
            } else {
                s.join(" ")
            }
        );
    }
    o
}
