//! The command line: parsed first into validated plain data, then handed to
//! the runner, the report or the doctor.

mod commands;
pub mod doctor;
mod model;
mod run;
pub mod settings_doc;

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

use crate::engine::{EngineKind, options};
use crate::report::Format;
use crate::results::Results;
use crate::workload::WorkloadKind;

pub use crate::units::MAX_SECS;
use run::RunArgs;
pub use run::{Bound, MAX_THREADS, check_args, check_plan};

/// ampbench: benchmark storage engines for performance and efficiency
/// (read, write and space amplification per operation).
#[derive(Parser, Debug)]
#[command(name = "ampbench", version, about, long_about = None, arg_required_else_help = true)]
pub struct Cli {
    #[command(subcommand)]
    pub(crate) cmd: Cmd,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Cmd {
    /// Run a workload on one or more engines and print the tables.
    Run(Box<RunArgs>),
    /// Print the tables of a recorded run from the results file.
    Report(ReportArgs),
    /// Copy runs from one results store to another (a file and a
    /// PostgreSQL database, either way), keeping their ids.
    Copy(CopyArgs),
    /// List workloads, their steps and parameters, and engines with their defaults.
    List,
    /// Check which engines are usable and what this machine can do.
    Doctor(DoctorArgs),
    /// Print the commented plan template (every key, workload and engine).
    Template {
        /// Print the settings as docs/settings.md's table instead.
        #[arg(long)]
        markdown: bool,
    },
    /// Predicted write-, space- and read-amp of a storage structure, every
    /// term shown (lsm-leveled, lsm-tiered, btree, cow-btree, log-structured).
    Model(model::ModelArgs),
    /// Kill engines mid-commit and check that every acknowledged
    /// transaction survived (a process crash, not a power cut).
    Crashcheck(crate::crashcheck::CrashArgs),
    /// One crash check round's writers (run by `crashcheck`).
    #[command(hide = true)]
    CrashcheckChild(crate::crashcheck::ChildArgs),
    /// An embedded engine in its memory group (run by `run`).
    #[command(hide = true)]
    EngineHost(crate::runner::host::HostArgs),
    /// A storage class's device model, serving the run's loop device (run by `run`).
    #[command(hide = true)]
    DeviceModel(crate::setup::devmodel::server::ServeArgs),
    /// Measure one TCP round trip on 127.0.0.1 (the floor under a SQL
    /// client's cost per statement), both ends on one CPU and on two, and
    /// print it as JSON.
    Loopback {
        /// Round trips to measure.
        #[arg(long, default_value_t = 20_000)]
        rounds: u64,
    },
}

#[derive(Args, Debug)]
pub(crate) struct CopyArgs {
    /// The store to copy from: a SQLite file or a postgres:// URL.
    #[arg(long)]
    from: String,
    /// The store to copy to (made if new); it must not hold runs of the
    /// same ids.
    #[arg(long)]
    to: String,
    /// Run ids, separated by commas (default: every run).
    #[arg(long, value_delimiter = ',')]
    run: Vec<i64>,
}

#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// Results store: a SQLite file, or a PostgreSQL database by URL.
    #[arg(long, default_value = "ampbench.db")]
    results: String,
    /// Run id, or `latest`; several ids separated by commas (`3,5`) merge
    /// those runs into one report, engines labelled `RUN:ENGINE`.
    #[arg(long, default_value = "latest")]
    run: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// The engine the ratio table divides by (default: the first engine;
    /// `RUN:ENGINE` when runs are merged).
    #[arg(long)]
    base: Option<String>,
    /// Judge the run against this seed plan's `[post]` (its figures,
    /// claims and regime) instead of the one the run recorded: a plan
    /// revised after the run.
    #[arg(long)]
    post: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub(crate) struct DoctorArgs {
    /// Data directory to check (default: the system temp dir).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Remove what killed runs left (loop devices, mounts, throttles,
    /// cgroups) and exit.
    #[arg(long)]
    cleanup: bool,
    /// With --cleanup: also what this PID left, taken as dead (the watcher
    /// of a run killed at its memory limit runs this as the run exits,
    /// while the run may still be a zombie its parent has not reaped).
    #[arg(long, requires = "cleanup", hide = true)]
    dead: Option<u32>,
}

/// The engine host's configuration: the parent's command line
/// (`HostArgs::args`), parsed as the parent parsed it, at its corner.
fn host_config(a: &crate::runner::host::HostArgs) -> Result<crate::runner::RunConfig> {
    let args = a.args()?;
    let argv = ["ampbench".to_string(), "run".into()]
        .into_iter()
        .chain(args)
        .chain(["--host".to_string()]);
    let cli = Cli::try_parse_from(argv).map_err(|e| anyhow::anyhow!("{e}"))?;
    let Cmd::Run(args) = cli.cmd else {
        anyhow::bail!("the engine host runs a run");
    };
    let mut cfgs = (*args).into_configs()?;
    if a.corner >= cfgs.len() {
        anyhow::bail!("no corner {} in the command line", a.corner);
    }
    Ok(cfgs.swap_remove(a.corner))
}

/// The command line as it is recorded: the password of a `--target` or
/// `--results` URL (`--target URL` or `--target=URL`) replaced by `***`.
pub fn redact_args(args: impl Iterator<Item = String>) -> String {
    let mut out = Vec::new();
    let mut next_is_url = false;
    for a in args {
        let url_flag = ["--target", "--results"].iter().find_map(|f| {
            a.strip_prefix(f)
                .and_then(|r| r.strip_prefix('='))
                .map(|v| (f, v))
        });
        let shown = if next_is_url {
            crate::engine::target::Target::redact_list(&a)
        } else if let Some((f, v)) = url_flag {
            format!("{f}={}", crate::engine::target::Target::redact_list(v))
        } else {
            a.clone()
        };
        next_is_url = a == "--target" || a == "--results";
        out.push(shown);
    }
    out.join(" ")
}

/// Runs the command line; returns the process exit code.
pub fn main() -> Result<i32> {
    use clap::{CommandFactory, FromArgMatches};
    // `run --help` shows each setting's default, from Settings::default.
    let cmd = Cli::command().mut_subcommand("run", settings_doc::annotate);
    let cli = Cli::from_arg_matches(&cmd.get_matches()).unwrap_or_else(|e| e.exit());
    let stdout = std::io::stdout();
    // Server text (errors, notes, stored results) reaches the terminal
    // without its control characters.
    let mut out = crate::sys::Printable::new(stdout.lock());
    match cli.cmd {
        Cmd::Run(a) => commands::run(*a, &mut out),
        Cmd::Report(a) => commands::report(a, &mut out),
        Cmd::Crashcheck(a) => crate::crashcheck::run(a, &mut out),
        Cmd::CrashcheckChild(a) => crate::crashcheck::child(a),
        Cmd::EngineHost(a) => {
            let cfg = host_config(&a)?;
            crate::runner::host::main(a, &cfg)
        }
        Cmd::DeviceModel(a) => crate::setup::devmodel::server::main(a),
        Cmd::Copy(a) => {
            let mut from = Results::open_existing(&crate::results::Location::parse(&a.from)?)?;
            let mut to = Results::open(&crate::results::Location::parse(&a.to)?)?;
            to.add_read_indexes();
            let n = crate::results::db::copy(from.db(), to.db(), &a.run)?;
            writeln!(
                out,
                "copied {n} run(s) from {} to {}",
                from.location(),
                to.location()
            )?;
            Ok(0)
        }
        Cmd::List => {
            write!(out, "{}", list())?;
            Ok(0)
        }
        Cmd::Template { markdown } => {
            if markdown {
                write!(out, "{}", settings_doc::markdown())?;
            } else {
                write!(out, "{}", settings_doc::template())?;
            }
            Ok(0)
        }
        Cmd::Model(a) => {
            a.run(&mut out)?;
            Ok(0)
        }
        Cmd::Loopback { rounds } => {
            let f = crate::probe::loopback::measure_both(rounds)?;
            writeln!(out, "{}", serde_json::to_string(&f)?)?;
            Ok(0)
        }
        Cmd::Doctor(a) if a.cleanup => {
            let done = crate::setup::clean_leftovers(a.dead);
            if done.is_empty() {
                writeln!(out, "nothing left by killed runs")?;
            }
            for l in &done {
                writeln!(out, "{l}")?;
            }
            Ok(0)
        }
        Cmd::Doctor(a) => {
            let dir = a.dir.unwrap_or_else(std::env::temp_dir);
            let (text, any) = doctor::report(&dir);
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
        let steps: Vec<&str> = w.steps().iter().map(|s| s.name()).collect();
        let _ = writeln!(o, "  steps: {}", steps.join(", "));
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
    for e in EngineKind::all() {
        let s = e.default_settings(256 << 20);
        let _ = writeln!(
            o,
            "  {:<16} {} — {}",
            e.name(),
            e.structure().name(),
            if s.is_empty() {
                "no options".into()
            } else {
                options::show(&s)
            }
        );
    }
    let _ = writeln!(
        o,
        "\nseed plans (ampbench run plans/seeds/FILE [-p scale=X]): each post's experiment at this machine's scale, its table beside ours"
    );
    for (file, text) in crate::plan::SEED_PLANS {
        // A shipped plan that does not parse is caught by tests/seeds.rs.
        let title = toml::from_str::<crate::plan::Settings>(text)
            .ok()
            .and_then(|p| p.post)
            .map_or_else(|| "(unreadable)".to_string(), |p| p.title);
        let _ = writeln!(o, "  {file:<40} {title}");
    }
    o
}
