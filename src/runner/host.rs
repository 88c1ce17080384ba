//! The engine host: an embedded engine that runs inside a cgroup (its
//! memory limit) runs in a child process of its own, this binary's
//! hidden `engine-host` command, with its workload, driver threads and
//! probes. The parent stays outside the limit and drives it one step at
//! a time; an engine killed at the limit kills only the host, so the
//! parent records the step `failed` with the reason and goes on with the
//! next engine. The engine's figures stay exact: its process is the host.
//!
//! The host parses the parent's own command line again (the same
//! binary, files and arguments give the same configuration) and opens
//! the engine in the directory the parent made; both write to the one
//! results file, never at once. Commands go to the host's standard
//! input, one JSON line each; replies come back on its descriptor 3; its
//! standard output is the parent's, so its lines appear where the
//! parent's would. The host is in a process group of its own: the
//! terminal's Ctrl-C reaches the parent, which passes it on once.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::Ordering;

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};

use super::env::{EngineMem, Level, engine_options};
use super::{After, EngineSide, Run, engine_lines, fail_open, open_engine, step::run_step};
use crate::engine::{EngineKind, OpenSpec};
use crate::names::Status;
use crate::setup::cgroup::MemCgroup;
use crate::setup::oom::oom_kills;
use crate::setup::storage::StorageClass;

/// The hidden command's arguments.
#[derive(clap::Args, Debug)]
pub struct HostArgs {
    /// Which configuration of the command line (a corner).
    #[arg(long)]
    pub corner: usize,
    /// The engine.
    #[arg(long)]
    engine: String,
    /// Its data directory (made by the parent).
    #[arg(long)]
    dir: PathBuf,
    /// The run's id in the results file.
    #[arg(long)]
    run: i64,
    /// The next step's ordinal.
    #[arg(long)]
    ordinal: usize,
    /// The repetition.
    #[arg(long)]
    rep: usize,
    /// The engine's label (with its sweep setting).
    #[arg(long)]
    label: String,
    /// The memory cgroup it runs in.
    #[arg(long)]
    cgroup: PathBuf,
    /// A sweep setting KEY=VALUE (repeatable).
    #[arg(long = "setting")]
    settings: Vec<String>,
    /// The configuration the parent checked (see [`fingerprint`]).
    #[arg(long)]
    fingerprint: String,
    /// The parent's command line after `run` (else [`ARGS_ENV`]'s).
    #[arg(last = true)]
    pub args: Vec<String>,
}

/// The environment variable that carries the parent's command line to
/// the engine host (JSON array).
pub const ARGS_ENV: &str = "AMPBENCH_HOST_ARGS";

impl HostArgs {
    /// The parent's command line after `run`: the arguments after `--`,
    /// or [`ARGS_ENV`]'s.
    pub fn args(&self) -> Result<Vec<String>> {
        if !self.args.is_empty() {
            return Ok(self.args.clone());
        }
        let v = std::env::var(ARGS_ENV).with_context(|| format!("engine host: no {ARGS_ENV}"))?;
        serde_json::from_str(&v).with_context(|| format!("engine host: {ARGS_ENV}"))
    }
}

/// A digest of a configuration as recorded (SHA-1 of its JSON): the host
/// parses the command line again, and a plan file changed since the
/// parent checked it (whose engine settings the parent's guard passed)
/// gives another digest and is refused.
fn fingerprint(cfg: &super::RunConfig) -> String {
    use sha1::Digest;
    let json = serde_json::to_string(cfg).unwrap_or_default();
    sha1::Sha1::digest(json.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// What the parent asks.
#[derive(Serialize, Deserialize)]
enum Ask {
    /// Run step number `si` at a storage class and thread level.
    Step {
        si: usize,
        class: Option<StorageClass>,
        threads: Option<usize>,
        pass: usize,
        rep: usize,
    },
    /// Close the engine and end.
    Close,
}

/// What the host answers (to the open, to a step, to the close).
#[derive(Serialize, Deserialize)]
struct Reply {
    /// The engine opened (the first reply).
    opened: bool,
    /// What the step's end means (`next`, `failed`, `interrupted`).
    after: String,
    /// The next step's ordinal.
    ordinal: usize,
    /// The run's status so far.
    status: String,
    /// The memory group's peak and refusals over the steps (the close).
    life: Option<(u64, u64)>,
}

fn after_name(a: &After) -> &'static str {
    match a {
        After::Next => "next",
        After::Failed => "failed",
        After::Interrupted => "interrupted",
    }
}

/// The parent's side: the host process and its pipes.
pub(super) struct Hosted {
    child: Child,
    asks: ChildStdin,
    replies: BufReader<std::fs::File>,
    kind: EngineKind,
    oom_before: u64,
    /// Ctrl-C was passed on to the host.
    passed_on: bool,
    /// Why the host was killed by us (the device model died under it).
    killed_for: Option<String>,
}

impl Hosted {
    /// Starts the host for `kind` in `dir`, joined to the engine's memory
    /// group; None when the engine did not open there (recorded).
    // Long: the engine host's start in order (reply pipe, command line, the
    // child joined to its memory group before exec, its first reply); the
    // steps share the pipe's ends and the child.
    pub(super) fn start(
        r: &mut Run<'_>,
        kind: EngineKind,
        setting: &[(String, String)],
        dir: &Path,
        mem: &EngineMem,
        out: &mut dyn Write,
    ) -> Result<Option<Hosted>> {
        let cfg = r.cfg;
        let (args, corner) = cfg.origin.clone().ok_or_else(|| {
            anyhow!("{kind} runs in a memory group, which needs ampbench's command line")
        })?;
        let cg = mem
            .cg
            .as_ref()
            .ok_or_else(|| anyhow!("{kind}: no memory group to run in"))?;
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills the two-int array it is given.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error()).context("a pipe for the engine host");
        }
        // SAFETY: both were just opened by pipe2 and are owned here only.
        let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let mut cmd = Command::new(std::env::current_exe().context("cannot find ampbench itself")?);
        cmd.arg("engine-host")
            .args(["--corner", &corner.to_string(), "--engine", kind.name()])
            .arg("--dir")
            .arg(dir)
            .args(["--run", &r.id.to_string()])
            .args(["--ordinal", &r.ordinal.to_string()])
            .args(["--rep", &r.rep.to_string(), "--label", &r.label])
            .arg("--cgroup")
            .arg(cg.dir())
            .args(["--fingerprint", &fingerprint(cfg)]);
        for (k, v) in setting {
            cmd.args(["--setting", &format!("{k}={v}")]);
        }
        // The command line goes in the environment, not the host's
        // arguments: it may hold URLs with passwords (--target,
        // --results), and /proc/PID/environ, unlike cmdline, is readable
        // by its owner only.
        cmd.env(ARGS_ENV, serde_json::to_string(&args)?);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .process_group(0);
        let wfd = wr.as_raw_fd();
        let procs = std::ffi::CString::new(cg.procs_file().as_os_str().as_encoded_bytes())
            .context("cgroup path")?;
        // SAFETY: only async-signal-safe calls between fork and exec: the
        // reply pipe becomes descriptor 3 (dup2 clears close-on-exec),
        // the host dies with ampbench, and joins the memory group (by
        // writing 0, itself, to its procs file) before the engine exists.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(wfd, 3) < 0 || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                crate::engine::server::enter_cgroup(&procs)
            });
        }
        let oom_before = oom_kills(cg).unwrap_or(0);
        out.flush()?;
        let mut child = cmd.spawn().context("cannot start the engine host")?;
        drop(wr);
        crate::engine::server::register(child.id());
        let asks = child
            .stdin
            .take()
            .ok_or_else(|| anyhow!("the engine host has no input pipe"))?;
        let mut h = Hosted {
            child,
            asks,
            replies: BufReader::new(std::fs::File::from(rd)),
            kind,
            oom_before,
            passed_on: false,
            killed_for: None,
        };
        match h.reply(r, mem)? {
            Some(rep) if rep.opened => Ok(Some(h)),
            Some(_) => {
                crate::engine::server::unregister(h.child.id());
                let _ = h.child.wait();
                Ok(None)
            }
            None => {
                h.died(r, mem, "open", out)?;
                Ok(None)
            }
        }
    }

    /// Waits for the host's next reply, passing Ctrl-C on; applies its
    /// ordinal and status. None: the host died first.
    fn reply(&mut self, r: &mut Run<'_>, _mem: &EngineMem) -> Result<Option<Reply>> {
        let fd = self.replies.get_ref().as_raw_fd();
        loop {
            if crate::signals::INTERRUPTED.load(Ordering::SeqCst) && !self.passed_on {
                // SAFETY: signals our own child.
                unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
                self.passed_on = true;
            }
            // The device model died under the engine: a cached step may
            // do no IO to fail on, so the host is stopped now.
            if self.killed_for.is_none() {
                if let Some(why) = r.storage.model_failure() {
                    // SAFETY: signals our own child.
                    unsafe { libc::kill(self.child.id() as i32, libc::SIGKILL) };
                    self.killed_for = Some(why);
                }
            }
            if self.replies.buffer().is_empty() {
                let mut p = libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: poll reads and writes the one pollfd it is given.
                let n = unsafe { libc::poll(&mut p, 1, 100) };
                if n <= 0 {
                    // Nothing yet (or a signal came): look at Ctrl-C again.
                    continue;
                }
            }
            let mut line = String::new();
            match self.replies.read_line(&mut line) {
                Ok(0) => return Ok(None),
                Ok(_) => {
                    let rep: Reply = serde_json::from_str(&line)
                        .with_context(|| format!("the engine host's reply '{}'", line.trim()))?;
                    r.ordinal = rep.ordinal;
                    // The host's status covers only its engine: it can
                    // make the run's worse, never better.
                    match Status::parse(&rep.status) {
                        Ok(Status::Done) => {}
                        Ok(s) => r.status = s,
                        Err(_) => r.status = Status::Failed,
                    }
                    return Ok(Some(rep));
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e).context("reading the engine host's reply"),
            }
        }
    }

    fn ask(&mut self, a: &Ask) -> bool {
        let line = serde_json::to_string(a).unwrap_or_default();
        writeln!(self.asks, "{line}")
            .and_then(|_| self.asks.flush())
            .is_ok()
    }

    /// The host died: why (the memory limit, a signal, an exit), recorded
    /// on the step it was running (or an `open` step), printed, and the
    /// engine's remaining steps skipped.
    fn died(
        &mut self,
        r: &mut Run<'_>,
        mem: &EngineMem,
        what: &str,
        out: &mut dyn Write,
    ) -> Result<After> {
        // Forgotten before it is reaped: its pid may be reused after.
        crate::engine::server::unregister(self.child.id());
        let st = self.child.wait().context("waiting for the engine host")?;
        let kind = self.kind;
        let oom = mem
            .cg
            .as_ref()
            .and_then(oom_kills)
            .is_some_and(|n| n > self.oom_before);
        let why = match (oom, r.cfg.memory, st.signal()) {
            _ if self.killed_for.is_some() => self.killed_for.take().unwrap_or_default(),
            (true, Some(limit), _) => format!(
                "killed at the memory limit: the kernel's out-of-memory killer ended {kind}'s process at the --memory limit of {}; give more --memory or a smaller --cache",
                crate::units::format_size(limit)
            ),
            (_, _, Some(sig)) => format!("{kind}'s process was ended by signal {sig}"),
            _ => format!("{kind}'s process ended ({st}) in the middle of its work"),
        };
        // Ctrl-C passed on while the host had no step to stop (it was
        // opening the engine, say): the run was interrupted, not failed.
        if self.passed_on && st.signal() == Some(libc::SIGINT) {
            r.results
                .end_running_steps(r.id, Status::Interrupted, "interrupted by Ctrl-C")?;
            r.ordinal = r.results.next_ordinal(r.id)?;
            r.status = Status::Interrupted;
            writeln!(out, "  {what}: interrupted")?;
            return Ok(After::Interrupted);
        }
        let failed = r.results.fail_running_steps(r.id, &why)?;
        if failed == 0 {
            fail_open(r, &why)?;
        }
        r.ordinal = r.results.next_ordinal(r.id)?;
        r.status = Status::Failed;
        writeln!(out, "  {what}: FAILED: {why}")?;
        Ok(After::Failed)
    }
}

impl EngineSide for Hosted {
    fn step(
        &mut self,
        r: &mut Run<'_>,
        mem: &EngineMem,
        (si, step, at): (usize, crate::workload::Step, Level),
        out: &mut dyn Write,
    ) -> Result<After> {
        let sent = self.ask(&Ask::Step {
            si,
            class: at.class,
            threads: at.threads,
            pass: at.pass,
            rep: r.rep,
        });
        match self.reply(r, mem)? {
            Some(rep) if sent => Ok(match rep.after.as_str() {
                "next" => After::Next,
                "interrupted" => After::Interrupted,
                _ => After::Failed,
            }),
            _ => self.died(r, mem, &at.label(step), out),
        }
    }

    /// An embedded engine in the host: nothing of it is shared (`keep`
    /// is for targets).
    fn close(
        mut self: Box<Self>,
        r: &mut Run<'_>,
        _out: &mut dyn Write,
        _keep: Option<&str>,
    ) -> Result<Option<(u64, u64)>> {
        let life = if self.ask(&Ask::Close) {
            self.reply(r, &EngineMem { cg: None })?
                .and_then(|rep| rep.life)
        } else {
            None
        };
        drop(self.asks);
        crate::engine::server::unregister(self.child.id());
        let _ = self.child.wait();
        Ok(life)
    }
}

/// The host: opens the engine as `cfg` (the parent's command line,
/// parsed again by the cli: [`HostArgs::args`]) configures it, then runs
/// the steps it is asked for, one reply each.
// Long: the engine host's life: checked against its parent's configuration,
// the engine opened, then one reply per step asked for; the run record and the
// reply pipe are shared throughout.
pub fn main(a: HostArgs, cfg: &super::RunConfig) -> Result<i32> {
    if fingerprint(cfg) != a.fingerprint {
        bail!(
            "the engine host read another configuration than ampbench checked (was the plan file changed during the run?)"
        );
    }
    crate::signals::catch_interrupts(Some(crate::runner::abort));
    crate::setup::cgroup::harness_memory();
    let kind = EngineKind::parse(&a.engine)?;
    let setting: Vec<(String, String)> = a
        .settings
        .iter()
        .filter_map(|s| {
            s.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect();
    let (steps, added) = super::begin::steps_run(cfg);
    let params =
        crate::workload::Params::new(cfg.workload.name(), cfg.workload.params(), &cfg.params)?;
    let mut r = Run {
        cfg,
        storage: crate::setup::Prepared::elsewhere(&a.dir),
        params,
        added,
        steps,
        results: crate::results::Results::open(&cfg.results)?,
        id: a.run,
        status: Status::Done,
        ordinal: a.ordinal,
        cf_before: Vec::new(),
        label: a.label.clone(),
        rep: a.rep,
        // An embedded engine's host: never one of several clients (they
        // share a --target).
        meeting: None,
        joined_db: None,
        departed: false,
    };
    // SAFETY: descriptor 3 is the reply pipe the parent set up (dup2 in
    // its pre_exec), owned by this process from here on.
    let mut replies = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(3) });
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mem = EngineMem {
        cg: Some(MemCgroup::attach(&a.cgroup)?),
    };
    let mut send = |r: &Run<'_>, opened: bool, after: &After, life| -> Result<()> {
        let rep = Reply {
            opened,
            after: after_name(after).into(),
            ordinal: r.ordinal,
            status: r.status.name().into(),
            life,
        };
        writeln!(replies, "{}", serde_json::to_string(&rep)?)?;
        Ok(())
    };
    let mut workload = cfg.workload.build(&r.params)?;
    workload.configure(
        &r.steps,
        cfg.threads,
        cfg.clients.as_ref().map(|c| c.share()).unwrap_or_default(),
    );
    let options = engine_options(cfg, kind, &setting);
    // The parent checked these; checked again where they are used.
    crate::engine::validate_options(kind, &options)?;
    let spec = OpenSpec {
        dir: a.dir.clone(),
        tables: workload.tables(),
        cache_bytes: cfg.cache_bytes,
        options,
        transactions: workload.transactions(),
        transport: cfg.transport_of(kind),
        replication_log: cfg.replication_log,
        cgroup: None,
        timeout: None,
        target: None,
        server_bin: None,
    };
    let Some(eng) = open_engine(&mut r, kind, &spec, &*workload, &mut out)? else {
        out.flush()?;
        send(&r, false, &After::Failed, None)?;
        return Ok(0);
    };
    engine_lines(cfg, &*eng, &a.dir, &mut out)?;
    let probe = super::probe_of(&*eng);
    out.flush()?;
    send(&r, true, &After::Next, None)?;
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let line = line?;
        match serde_json::from_str::<Ask>(&line).context("the engine host's command")? {
            Ask::Step {
                si,
                class,
                threads,
                pass,
                rep,
            } => {
                let step = *r
                    .steps
                    .get(si)
                    .ok_or_else(|| anyhow!("no step {si} in this run"))?;
                r.rep = rep;
                let after = run_step(
                    &mut r,
                    &*eng,
                    &*workload,
                    &probe,
                    &mem,
                    (
                        si,
                        step,
                        Level {
                            class,
                            threads,
                            pass,
                        },
                    ),
                    &mut out,
                )?;
                out.flush()?;
                send(&r, true, &after, None)?;
            }
            Ask::Close => break,
        }
    }
    drop(workload);
    if let Err(e) = eng.close() {
        writeln!(out, "{kind}: close failed: {e:#}")?;
    }
    out.flush()?;
    let life = mem
        .cg
        .as_ref()
        .and_then(|c| Some((c.life_peak()?, c.life_limit_hits().unwrap_or(0))));
    send(&r, true, &After::Next, life)?;
    Ok(0)
}
