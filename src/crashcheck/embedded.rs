//! An embedded engine's rounds: the writers run in a child process (this
//! binary's hidden `crashcheck-child` command), which the parent kills
//! with SIGKILL; the parent then opens the engine on the same directory
//! (its recovery) and reads back what was kept.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

use super::ledger::{Event, Ledger, verify};
use super::{Check, Round, kv, write_loop};
use crate::engine::{self, Durability, EngineKind, EngineOptions, OpenSpec};

/// The hidden command's arguments: one round's writers on one engine.
#[derive(clap::Args, Debug)]
pub struct ChildArgs {
    /// The engine.
    #[arg(long)]
    engine: String,
    /// Its data directory.
    #[arg(long)]
    dir: PathBuf,
    /// The round (the writers' key prefix).
    #[arg(long)]
    round: u32,
    /// Writer threads.
    #[arg(long)]
    threads: usize,
    /// Commit without sync.
    #[arg(long)]
    nosync: bool,
    /// Engine cache bytes.
    #[arg(long)]
    cache: u64,
    /// Engine options, as `--set`.
    #[arg(long = "set")]
    sets: Vec<String>,
    /// Recover instead: open the engine, read every writer's rows and
    /// print them as JSON (an engine that aborts on what it finds takes
    /// this process, not the check, with it).
    #[arg(long)]
    recover: bool,
}

/// What the recovering child prints.
#[derive(serde::Serialize, serde::Deserialize)]
struct Recovered {
    version: String,
    open_ms: f64,
    found: Vec<super::ledger::Found>,
    total_links: u64,
}

/// The engine as the check and its writers open it.
fn spec(
    kind: EngineKind,
    dir: &Path,
    cache: u64,
    sets: &BTreeMap<EngineKind, EngineOptions>,
) -> OpenSpec {
    let mut s = OpenSpec::new(
        dir,
        kv::TABLES.iter().map(|t| t.to_string()).collect(),
        cache,
    );
    s.options = sets.get(&kind).cloned().unwrap_or_default();
    s
}

/// The child: opens the engine, says `ready`, and runs the writers,
/// printing each event as one line (one write, so lines never mix),
/// until it is killed. Gives up after two minutes.
pub fn child(a: ChildArgs) -> Result<i32> {
    let kind = EngineKind::parse(&a.engine)?;
    let sets = crate::engine::sets::parse_sets(&a.sets)?;
    let t0 = Instant::now();
    let e = engine::open(kind, &spec(kind, &a.dir, a.cache, &sets))?;
    if a.recover {
        let open_ms = t0.elapsed().as_secs_f64() * 1e3;
        let kve = e
            .face()
            .kv()
            .ok_or_else(|| anyhow!("{kind} is not an embedded engine"))?;
        let found = (0..a.threads)
            .map(|t| kv::read(kve, a.round, t))
            .collect::<Result<Vec<_>>>()?;
        let r = Recovered {
            version: e.version(),
            open_ms,
            found,
            total_links: kv::total_links(kve)?,
        };
        e.close()?;
        println!("{}", serde_json::to_string(&r)?);
        return Ok(0);
    }
    let kve = e
        .face()
        .kv()
        .ok_or_else(|| anyhow!("{kind} is not an embedded engine"))?;
    // The command's main holds the stdout lock: the writers write to the
    // descriptor itself, one write per line (so lines never mix).
    let fd = {
        use std::os::fd::AsFd;
        std::io::stdout().as_fd().try_clone_to_owned()?
    };
    let pipe = std::fs::File::from(fd);
    let emit = |ev: Event| {
        let _ = (&pipe).write_all(ev.line().as_bytes());
    };
    (&pipe).write_all(b"ready\n")?;
    let stop = AtomicBool::new(false);
    let d = Durability::from_sync(!a.nosync);
    std::thread::scope(|sc| {
        for t in 0..a.threads {
            let (stop, emit) = (&stop, &emit);
            sc.spawn(move || match kv::KvWriter::new(kve, a.round, t, d) {
                Ok(mut w) => write_loop(t, &mut w, stop, emit),
                Err(e) => emit(Event::Error(t, format!("{e:#}"))),
            });
        }
        std::thread::sleep(Duration::from_secs(120));
        stop.store(true, Ordering::SeqCst);
    });
    Ok(3)
}

/// This binary's hidden `crashcheck-child` for one round of `kind`, its
/// errors appended to `log`, in a process group of its own that dies
/// with us.
fn child_command(
    check: &Check,
    kind: EngineKind,
    dir: &Path,
    round: u32,
    log: &Path,
) -> Result<Command> {
    let err = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("cannot create {}", log.display()))?;
    let mut cmd = Command::new(std::env::current_exe().context("cannot find ampbench itself")?);
    cmd.arg("crashcheck-child")
        .args(["--engine", kind.name(), "--round", &round.to_string()])
        .args(["--threads", &check.threads.to_string()])
        .args(["--cache", &check.cache.to_string()])
        .arg("--dir")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(err)
        .process_group(0);
    if check.nosync {
        cmd.arg("--nosync");
    }
    for s in &check.set_args {
        cmd.args(["--set", s]);
    }
    // SAFETY: prctl is async-signal-safe; it only sets the child's
    // parent-death signal between fork and exec, so it never outlives us.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(cmd)
}

/// Recovery in a child process: the engine opened on `dir` and every
/// writer's rows read back. An engine that aborts on what it finds (a
/// failed assertion on a corrupt page) is an error naming the signal and
/// the engine's last words, not the end of the check.
fn recover(check: &Check, kind: EngineKind, dir: &Path, round: u32) -> Result<Recovered> {
    let log = dir.join("crashcheck-recover.log");
    let mut cmd = child_command(check, kind, dir, round, &log)?;
    cmd.arg("--recover");
    let out = cmd
        .output()
        .context("cannot start the recovering process")?;
    if !out.status.success() {
        use std::os::unix::process::ExitStatusExt;
        let how = match out.status.signal() {
            Some(sig) => format!("died by signal {sig}"),
            None => format!("failed ({})", out.status),
        };
        bail!(
            "reopening after the kill: the engine {how}: {}",
            crate::engine::server::tail(&log, 2).replace('\n', " ")
        );
    }
    serde_json::from_slice(&out.stdout).context("reading the recovering process's report")
}

/// Waits for lines until `until`, feeding events to the ledger; returns
/// false when the child's output ended first.
fn pump(
    rx: &mpsc::Receiver<String>,
    ledger: &mut Ledger,
    until: Instant,
    done: impl Fn(&Ledger) -> bool,
) -> bool {
    while !done(ledger) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || crate::signals::INTERRUPTED.load(Ordering::SeqCst) {
            return true;
        }
        match rx.recv_timeout(left.min(Duration::from_millis(100))) {
            Ok(l) => {
                if let Some(e) = Event::parse(&l) {
                    ledger.apply(e);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return false,
        }
    }
    true
}

/// One round: the child's writers, killed `delay` after their first
/// commit, then recovery and the check.
// Long: one crash round in order (child writers, the kill, recovery, the
// check); its steps share the round's files and counts.
pub fn round(
    check: &Check,
    kind: EngineKind,
    dir: &Path,
    round: u32,
    delay: Duration,
    links_before: u64,
    mut power: Option<&mut super::power::PowerDevice>,
) -> Result<(Round, String)> {
    let log = dir.join("crashcheck-child.log");
    let mut cmd = child_command(check, kind, dir, round, &log)?;
    let mut child = cmd.spawn().context("cannot start the writer process")?;
    // The log stays open in the child only (a power cut unmounts its
    // filesystem).
    drop(cmd);
    let out = child
        .stdout
        .take()
        .ok_or_else(|| anyhow!("the writer process has no output pipe"))?;
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let mut ledger = Ledger::new(check.threads);
    // Ready (the engine opened), then the first commit, then the delay.
    let t0 = Instant::now();
    let mut ready = false;
    while !ready && t0.elapsed() < Duration::from_secs(60) {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(l) => ready = l == "ready",
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if crate::signals::INTERRUPTED.load(Ordering::SeqCst) {
            break;
        }
    }
    let mut alive = ready
        && pump(
            &rx,
            &mut ledger,
            Instant::now() + Duration::from_secs(30),
            |l| l.acked() > 0 || !l.errors.is_empty(),
        );
    let first = Instant::now();
    alive = alive && pump(&rx, &mut ledger, first + delay, |_| false);
    let ran = first.elapsed();
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    // The power goes with it: the child, killed, acknowledges nothing
    // more, and its IOs still in flight fail.
    let dropped = power.as_deref_mut().map(|p| p.cut());
    let status = child.wait()?;
    let _ = reader.join();
    for l in rx.try_iter() {
        if let Some(e) = Event::parse(&l) {
            ledger.apply(e);
        }
    }
    if crate::signals::INTERRUPTED.load(Ordering::SeqCst) {
        bail!("interrupted");
    }
    if !ready || !alive {
        bail!(
            "the writer process ended before the kill ({status}): {}",
            crate::engine::server::tail(&log, 3)
        );
    }
    if let Some(e) = ledger.errors.first() {
        bail!("{e}");
    }
    if ledger.acked() == 0 {
        bail!("no transaction committed within 30 s");
    }
    let dropped = dropped.transpose()?.unwrap_or(0);
    // Recovery: the filesystem's (after a power cut), then the engine's
    // on the same directory, in a process of its own.
    let t1 = Instant::now();
    if let Some(p) = power {
        p.restore()?;
    }
    let mounted = t1.elapsed();
    let rec = recover(check, kind, dir, round)?;
    let recovery = mounted + Duration::from_secs_f64(rec.open_ms / 1e3);
    let mut r = Round::new(round, recovery, ran, &ledger);
    r.dropped = dropped;
    for (t, heard) in ledger.threads.iter().enumerate() {
        let found = rec
            .found
            .get(t)
            .ok_or_else(|| anyhow!("the recovering process read {} writers", rec.found.len()))?;
        r.add(verify(t, *heard, found));
    }
    r.check_total(links_before, rec.total_links);
    Ok((r, rec.version))
}
