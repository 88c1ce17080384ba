//! `ampbench crashcheck`: are acknowledged commits still there after the
//! engine's process is killed?
//!
//! Writers commit small multi-row transactions (a value, a link and the
//! link's count, as LinkBench's link insert does) with sync on commit and
//! tell the parent of each transaction before and after its commit. At a
//! random moment the parent kills the engine's process with SIGKILL (an
//! embedded engine's writers run in a child process for this; a server's
//! whole process group is killed), opens or restarts the engine on the
//! same data, and checks each writer's rows: every acknowledged
//! transaction is there (lost: must be 0), nothing never begun is there,
//! no transaction is half applied (each count matches its links), no value
//! is torn, and earlier rounds are unchanged.
//!
//! This checks a process crash, not a power cut: the data written before
//! the kill is in the kernel's page cache, and this VM's disk caches
//! writes on the host, so a sync that lies to the kernel goes unnoticed.
//! With `--nosync`, losing the unsynced tail is expected and reported as
//! such, not as a failure.

mod embedded;
mod kv;
pub mod ledger;
mod power;
mod server;
mod sql;

pub use embedded::{ChildArgs, child};

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};

use crate::UsageError;
use crate::engine::{self, EngineKind, EngineOptions, OpenSpec};
use ledger::{Event, Ledger, Verdict};

/// One writer's transactions on its engine.
pub(crate) trait Writer {
    /// Runs and commits transaction `n`.
    fn txn(&mut self, n: u64) -> Result<()>;
}

/// Runs transactions 1, 2, 3… until `stop` or an error, telling `emit`
/// before each commit and after each acknowledgement.
pub(crate) fn write_loop(t: usize, w: &mut dyn Writer, stop: &AtomicBool, emit: &dyn Fn(Event)) {
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        emit(Event::Begin(t, n));
        match w.txn(n) {
            Ok(()) => emit(Event::Ack(t, n)),
            Err(e) => {
                emit(Event::Error(t, format!("{e:#}")));
                return;
            }
        }
    }
}

/// The bytes written beside version `n` of writer `t` in `round`, so a
/// value read back can be told from a torn one.
pub(crate) fn pad(round: u32, t: usize, n: u64) -> [u8; 92] {
    let mut s = crate::rng::derive_seed(n, &[round as u64, t as u64]);
    let mut b = [0u8; 92];
    for c in b.chunks_mut(8) {
        let x = crate::rng::splitmix64(&mut s).to_le_bytes();
        c.copy_from_slice(&x[..c.len()]);
    }
    b
}

/// `ampbench crashcheck`'s flags.
#[derive(clap::Args, Debug)]
pub struct CrashArgs {
    /// Engines, comma-separated (embedded engines and servers).
    #[arg(
        short,
        long = "engine",
        default_value = "rocksdb,wiredtiger,lmdb,leveldb,sqlite"
    )]
    engines: String,
    /// Kills per engine.
    #[arg(long, default_value_t = 10)]
    rounds: u32,
    /// Writer threads, each with its own rows.
    #[arg(long, default_value_t = 4)]
    threads: usize,
    /// Commit without sync (`owa`): losing the unsynced tail is expected
    /// and reported, not a failure.
    #[arg(long)]
    nosync: bool,
    /// The kill comes at a random moment up to this long after the
    /// round's first commit: seconds, or with a unit.
    #[arg(long, default_value = "500ms")]
    window: String,
    /// Engine option ENGINE.KEY=VALUE (repeatable).
    #[arg(long = "set")]
    sets: Vec<String>,
    /// Engine cache size, e.g. 64MB.
    #[arg(long, default_value = "64MB")]
    cache: String,
    /// Parent of the engines' data directories [default: the system temp dir].
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Seed of the kill moments (printed).
    #[arg(long)]
    seed: Option<u64>,
    /// Keep the data directories.
    #[arg(long)]
    keep: bool,
    /// Print every round.
    #[arg(short, long)]
    verbose: bool,
    /// Cut the power, not only kill the process: each engine runs on a
    /// device model with a volatile write cache (slow-ssd's, 64 MB), and
    /// at the kill the writes the cache held are dropped and the kernel's
    /// unwritten pages lost; the filesystem recovers from what reached
    /// the medium, then the engine. Needs root.
    #[arg(long)]
    power_cut: bool,
    /// With --power-cut: a device model setting over the device's (e.g.
    /// `cache=battery`, `destage_iops=500`); see `run --device-model`.
    #[arg(long = "device-model", value_name = "KEY=VALUE", value_delimiter = ',')]
    device_model: Vec<String>,
    /// With --power-cut: extra mount options for the ext4 filesystem
    /// (`nobarrier`: the filesystem sends no cache flushes, a broken
    /// setting the check should catch).
    #[arg(long, value_name = "OPTS")]
    mount_options: Option<String>,
}

/// A validated crash check.
pub struct Check {
    engines: Vec<EngineKind>,
    rounds: u32,
    threads: usize,
    nosync: bool,
    window: Duration,
    sets: BTreeMap<EngineKind, EngineOptions>,
    set_args: Vec<String>,
    cache: u64,
    dir: PathBuf,
    seed: u64,
    keep: bool,
    verbose: bool,
    /// The power-cut device's model (None: a process crash only).
    power: Option<power::Setup>,
}

impl CrashArgs {
    fn check(self) -> Result<Check> {
        let mut engines = Vec::new();
        for name in self.engines.split(',').map(str::trim) {
            let k = EngineKind::parse(name)?;
            if k.structure() == crate::engine::Structure::None {
                return Err(UsageError(format!(
                    "--engine {name}: it keeps nothing, so there is nothing to check"
                ))
                .into());
            }
            engines.push(k);
        }
        if self.rounds == 0 || self.threads == 0 || self.threads > 64 {
            return Err(UsageError(format!(
                "--rounds {} --threads {}: at least one round, 1 to 64 threads",
                self.rounds, self.threads
            ))
            .into());
        }
        let window = crate::units::parse_secs(&self.window)
            .map_err(|e| UsageError(format!("--window: {e}")))?;
        let max = crate::units::MAX_SECS;
        if !(0.0..=max).contains(&window) {
            return Err(UsageError(format!(
                "--window {}: must be 0 to {max} seconds (366 days)",
                self.window
            ))
            .into());
        }
        let sets = engine::sets::parse_sets(&self.sets)?;
        for (k, o) in &sets {
            engine::validate_options(*k, o)?;
        }
        let cache = crate::units::parse_size(&self.cache)
            .map_err(|e| UsageError(format!("--cache: {e}")))?;
        let power = power::Setup::from_args(
            self.power_cut,
            &self.device_model,
            self.mount_options.as_deref(),
        )?;
        Ok(Check {
            engines,
            rounds: self.rounds,
            threads: self.threads,
            nosync: self.nosync,
            window: Duration::from_secs_f64(window),
            sets,
            set_args: self.sets,
            cache,
            dir: self.dir.unwrap_or_else(std::env::temp_dir),
            seed: self.seed.unwrap_or(crate::rng::DEFAULT_SEED),
            keep: self.keep,
            verbose: self.verbose,
            power,
        })
    }
}

/// What one round found.
#[derive(Clone, Debug, Default)]
pub struct Round {
    /// The round.
    pub round: u32,
    /// Opening (embedded) or restarting (server) after the kill.
    pub recovery: Duration,
    /// How long the writers ran after their first commit.
    pub ran: Duration,
    /// Transactions acknowledged before the kill.
    pub acked: u64,
    /// Acknowledged transactions missing after recovery.
    pub lost: u64,
    /// Transactions begun but not acknowledged that were kept.
    pub unacked_kept: u64,
    /// Links of every round found after recovery.
    pub links: u64,
    /// What else is wrong.
    pub problems: Vec<String>,
    /// Blocks the power cut dropped from the device's volatile cache.
    pub dropped: u64,
    durable: u64,
}

impl Round {
    fn new(round: u32, recovery: Duration, ran: Duration, ledger: &Ledger) -> Round {
        Round {
            round,
            recovery,
            ran,
            acked: ledger.acked(),
            ..Round::default()
        }
    }

    fn add(&mut self, v: Verdict) {
        self.lost += v.lost;
        self.unacked_kept += v.unacked_found as u64;
        self.durable += v.durable;
        self.problems.extend(v.problems);
    }

    /// Every earlier round's links are still there, and no more.
    fn check_total(&mut self, before: u64, found: u64) {
        self.links = found;
        if found != before + self.durable {
            self.problems.push(format!(
                "{found} links in all, where earlier rounds left {before} and this one {}",
                self.durable
            ));
        }
    }
}

/// One engine's rounds, or the error that stopped them.
struct Outcome {
    kind: EngineKind,
    version: String,
    rounds: Vec<Round>,
    error: Option<String>,
}

/// Checks a crash check's arguments without running it (see
/// `cli::check_args`).
pub fn check_args(args: CrashArgs) -> Result<()> {
    args.check().map(|_| ())
}

/// Runs the check; returns the exit code (0: nothing lost or wrong).
// Long: the crash check's sequence (engines, devices, rounds, the summary),
// one table of results built as it goes.
pub fn run(args: CrashArgs, out: &mut dyn Write) -> Result<i32> {
    let check = args.check()?;
    // As `run --dir` does: a directory not there yet is made.
    std::fs::create_dir_all(&check.dir)
        .with_context(|| format!("--dir {}: cannot create it", check.dir.display()))?;
    crate::signals::catch_interrupts(None);
    writeln!(
        out,
        "crashcheck: {} rounds per engine, {} writer threads, commits {}, kill within {:.2} s of the first commit, seed {}",
        check.rounds,
        check.threads,
        if check.nosync {
            "not synced (--nosync: a lost tail is expected)"
        } else {
            "synced"
        },
        check.window.as_secs_f64(),
        check.seed
    )?;
    match &check.power {
        Some(p) => writeln!(out, "{}", p.describe())?,
        None => writeln!(
            out,
            "checks a process crash (SIGKILL), not a power cut: this machine's disk may cache writes, so a sync is not tested against power loss (--power-cut tests it)"
        )?,
    }
    // A killed check's power-cut devices (mounts, loop devices, models).
    if check.power.is_some() {
        for l in crate::setup::clean_leftovers(None) {
            writeln!(out, "leftover of a killed run: {l}")?;
        }
    }
    let mut rng = crate::rng::Rng::new(check.seed);
    let mut outcomes = Vec::new();
    for &kind in &check.engines {
        if crate::signals::INTERRUPTED.load(Ordering::SeqCst) {
            break;
        }
        // A fresh directory with a random name (0700): --dir may be a
        // shared one like /tmp, where a predictable name could be taken
        // first, or be a link planted to send root's writes elsewhere.
        let made = tempfile::Builder::new()
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .prefix(&format!(
                "ampbench-crashcheck-{}-{}-",
                std::process::id(),
                kind.name()
            ))
            .tempdir_in(&check.dir)
            .with_context(|| format!("cannot create a directory in {}", check.dir.display()))?;
        let mut o = Outcome {
            kind,
            version: String::new(),
            rounds: Vec::new(),
            error: None,
        };
        let done = match &check.power {
            // The engine's data on a device of its own, under the model,
            // mounted in --dir itself (a server's user must reach it; the
            // device's names are random and root's, as a run's).
            Some(p) => p.device(&check.dir, kind).and_then(|mut dev| {
                let r = engine_rounds(
                    &check,
                    kind,
                    &dev.data.clone(),
                    Some(&mut dev),
                    &mut rng,
                    &mut o,
                    out,
                );
                r.and(dev.close(check.keep))
            }),
            None => engine_rounds(&check, kind, made.path(), None, &mut rng, &mut o, out),
        };
        if let Err(e) = done {
            // A round cut by Ctrl-C is not a finding; the summary says so.
            if !crate::signals::INTERRUPTED.load(Ordering::SeqCst) {
                o.error = Some(format!("{e:#}").replace('\n', " "));
            }
        }
        if check.keep {
            let _ = made.keep();
        }
        line(out, &o, &check)?;
        outcomes.push(o);
    }
    let interrupted = crate::signals::INTERRUPTED.load(Ordering::SeqCst);
    let lost = |o: &Outcome| o.rounds.iter().map(|r| r.lost).sum::<u64>();
    let failed = outcomes
        .iter()
        .filter(|o| {
            o.error.is_some()
                || o.rounds.iter().any(|r| !r.problems.is_empty())
                || (!check.nosync && lost(o) > 0)
        })
        .count();
    let tails = outcomes.iter().filter(|o| lost(o) > 0).count();
    let n = outcomes.len();
    let verdict = if interrupted {
        "interrupted: the engines above are all that ran".to_string()
    } else if failed > 0 {
        format!("{failed} of {n} engines failed the check")
    } else if tails > 0 {
        format!(
            "{tails} of {n} engines lost an unsynced tail (expected without sync); none lost or broke anything else"
        )
    } else {
        format!("every engine kept every acknowledged transaction ({n} engines)")
    };
    writeln!(out, "{verdict}")?;
    Ok(if failed == 0 && !interrupted { 0 } else { 1 })
}

// Long: one engine's rounds in order (the server opened and its tables made,
// the device settled, each round at a random delay in the window and settled
// after, said with -v); the rounds share the engine and the device.
fn engine_rounds(
    check: &Check,
    kind: EngineKind,
    dir: &std::path::Path,
    mut dev: Option<&mut power::PowerDevice>,
    rng: &mut crate::rng::Rng,
    o: &mut Outcome,
    out: &mut dyn Write,
) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut links = 0;
    let server = if kind.is_server() {
        let mut spec = OpenSpec::new(dir, vec![], check.cache);
        spec.options = check.sets.get(&kind).cloned().unwrap_or_default();
        let e = engine::open(kind, &spec)?;
        o.version = e.version();
        Some(e)
    } else {
        None
    };
    let sql = match &server {
        Some(e) => {
            let s = e
                .face()
                .sql()
                .ok_or_else(|| anyhow!("{kind}: not a SQL engine"))?;
            server::setup(s)?;
            Some(s)
        }
        None => None,
    };
    // What the check starts from is on the medium before the first cut.
    if let Some(d) = dev.as_deref_mut() {
        d.settle()?;
    }
    for round in 1..=check.rounds {
        if crate::signals::INTERRUPTED.load(Ordering::SeqCst) {
            break;
        }
        let delay = check.window.mul_f64(rng.f64());
        let r = match sql {
            Some(s) => server::round(check, s, round, delay, links, dev.as_deref_mut())?,
            None => {
                let (r, version) =
                    embedded::round(check, kind, dir, round, delay, links, dev.as_deref_mut())?;
                o.version = version;
                r
            }
        };
        // The round's outcome is on the medium before the next cut, so
        // each round loses only its own.
        if let Some(d) = dev.as_deref_mut() {
            d.settle()?;
        }
        links = r.links;
        if check.verbose {
            writeln!(
                out,
                "  {} round {}: {} acked in {:.2} s, lost {}, unacknowledged kept {}, {}recovery {:.0} ms{}",
                kind.name(),
                r.round,
                r.acked,
                r.ran.as_secs_f64(),
                r.lost,
                r.unacked_kept,
                if check.power.is_some() {
                    format!("{} cached blocks dropped, ", r.dropped)
                } else {
                    String::new()
                },
                r.recovery.as_secs_f64() * 1e3,
                r.problems
                    .first()
                    .map(|p| format!(", {p}"))
                    .unwrap_or_default()
            )?;
        }
        o.rounds.push(r);
    }
    if let Some(e) = server {
        e.close()?;
    }
    Ok(())
}

/// One engine's summary line.
fn line(out: &mut dyn Write, o: &Outcome, check: &Check) -> Result<()> {
    let sum = |f: fn(&Round) -> u64| o.rounds.iter().map(f).sum::<u64>();
    let mut rec: Vec<f64> = o
        .rounds
        .iter()
        .map(|r| r.recovery.as_secs_f64() * 1e3)
        .collect();
    rec.sort_by(f64::total_cmp);
    let (lost, problems) = (
        sum(|r| r.lost),
        o.rounds.iter().map(|r| r.problems.len()).sum::<usize>(),
    );
    let verdict = match (&o.error, problems, lost) {
        (Some(e), ..) => format!("FAILED: {e}"),
        (None, p, _) if p > 0 => format!(
            "FAILED: {}",
            o.rounds
                .iter()
                .flat_map(|r| &r.problems)
                .next()
                .map(String::as_str)
                .unwrap_or("")
        ),
        (None, _, l) if l > 0 && !check.nosync => "FAILED: acknowledged commits lost".into(),
        _ if o.rounds.len() < check.rounds as usize => "interrupted".into(),
        (None, _, l) if l > 0 => "ok (unsynced tail lost, as expected)".into(),
        _ => "ok".into(),
    };
    writeln!(
        out,
        "{:<16} rounds {:>2}  acked {:>7}  lost {:>4}  unacked kept {:>3}  problems {}{}  recovery ms median {:.0} max {:.0}  {}  ({})",
        o.kind.name(),
        o.rounds.len(),
        sum(|r| r.acked),
        lost,
        sum(|r| r.unacked_kept),
        problems,
        if check.power.is_some() {
            format!("  dropped blocks {:>5}", sum(|r| r.dropped))
        } else {
            String::new()
        },
        rec.get(rec.len() / 2).copied().unwrap_or(f64::NAN),
        rec.last().copied().unwrap_or(f64::NAN),
        verdict,
        o.version
    )?;
    Ok(())
}
