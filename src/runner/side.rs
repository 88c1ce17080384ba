//! Where an engine runs (in this process, or in the engine host), how it
//! is opened with its schema, and what the run says of it once open.

use super::*;

/// Where an engine runs: in this process, or in the engine host.
pub(super) trait EngineSide {
    /// Runs one step (see `step::run_step`).
    fn step(
        &mut self,
        r: &mut Run<'_>,
        mem: &EngineMem,
        at: (usize, Step, Level),
        out: &mut dyn Write,
    ) -> Result<After>;
    /// Closes the engine; the memory group's peak and refusals over its
    /// steps, when the side kept them. With `keep` (why), what other
    /// clients of the run may still use (a target's database) is left,
    /// and a line says so.
    fn close(
        self: Box<Self>,
        r: &mut Run<'_>,
        out: &mut dyn Write,
        keep: Option<&str>,
    ) -> Result<Option<(u64, u64)>>;
}

/// The run's tag for the target databases its clients share (see
/// `engine::target::run_tag`), with `--clients`.
fn run_tag(r: &Run<'_>) -> Option<String> {
    r.meeting
        .as_ref()
        .map(|m| crate::engine::target::run_tag(m.run, &m.me.run_name))
}

/// An engine opened in this process, with its workload and probe.
pub(super) struct InProcess {
    eng: Box<dyn Engine>,
    workload: Box<dyn Workload>,
    probe: Probe,
}

impl InProcess {
    /// Builds the workload and opens the engine in `dir`; None when it
    /// could not open (recorded and printed).
    // Long: the engine opened in this process around the clients' open
    // barrier: a follower joins client 0's database, the leader passes its own
    // on and drops it when no client came; each path records why it could not
    // open.
    pub(super) fn open(
        r: &mut Run<'_>,
        kind: EngineKind,
        options: EngineOptions,
        dir: &std::path::Path,
        mem: &EngineMem,
        out: &mut dyn Write,
    ) -> Result<Option<InProcess>> {
        let cfg = r.cfg;
        let mut workload = cfg.workload.build(&r.params)?;
        workload.configure(
            &r.steps,
            cfg.threads,
            cfg.clients.as_ref().map(|c| c.share()).unwrap_or_default(),
        );
        // Several clients: client 0 makes the target's database and
        // schema; the others wait for it and join that database.
        let barrier = format!("open {} rep {}", r.label, r.rep);
        let leader = r.meeting.as_ref().map(|m| m.me.leader());
        if leader == Some(false) {
            let release = r.barrier(&barrier, None)?;
            let db = release.and_then(|rel| {
                rel.notes
                    .into_iter()
                    .find(|(c, _)| *c == 0)
                    .and_then(|(_, n)| n)
            });
            match db {
                Some(db) => {
                    let named = cfg.target.as_ref().and_then(|t| t.db.as_deref());
                    let tag = run_tag(r);
                    if let Err(e) = crate::engine::target::check_joined_db(
                        &db,
                        named,
                        tag.as_deref().unwrap_or(""),
                    ) {
                        writeln!(out, "{}: {e}", r.label)?;
                        fail_open(r, &e.0)?;
                        r.leave(&e.0)?;
                        return Ok(None);
                    }
                    r.joined_db = Some(db)
                }
                None => {
                    let why = "client 0 made no database on the target (it failed to open)";
                    writeln!(out, "{}: {why}", r.label)?;
                    fail_open(r, why)?;
                    r.leave(why)?;
                    return Ok(None);
                }
            }
        }
        let mut target = cfg.target.clone();
        if let Some(t) = target.as_mut() {
            t.run_tag = run_tag(r);
        }
        if let (Some(t), Some(db)) = (target.as_mut(), &r.joined_db) {
            t.db = Some(db.clone());
            t.joined = true;
        }
        let spec = OpenSpec {
            dir: dir.to_path_buf(),
            tables: workload.tables(),
            cache_bytes: cfg.cache_bytes,
            options,
            transactions: workload.transactions(),
            transport: cfg.transport_of(kind),
            replication_log: cfg.replication_log,
            cgroup: mem.cg.as_ref().map(|c| c.procs_file()),
            timeout: Some(std::time::Duration::from_secs_f64(cfg.server_timeout)),
            target,
            server_bin: cfg.server_bin.clone(),
        };
        let Some(eng) = open_engine(r, kind, &spec, &*workload, out)? else {
            r.leave("the engine did not open")?;
            return Ok(None);
        };
        if leader == Some(true) {
            let db = eng
                .settings()
                .iter()
                .find(|(k, _)| k == crate::engine::target::DATABASE_SETTING)
                .map(|(_, v)| v.clone());
            if let Err(e) = r.barrier(&barrier, db.as_deref()) {
                // Its database is dropped when the barrier let no client
                // through (one never came); kept when it may have, or the
                // store cannot say.
                drop(workload);
                let passed = r
                    .meeting
                    .as_mut()
                    .map(|m| m.released(&mut r.results, &barrier));
                match passed {
                    Some(Ok(false)) => {
                        let _ = eng.close();
                    }
                    _ => {
                        if let Ok(Some(left)) = eng.close_keeping() {
                            writeln!(out, "{}: {left}: other clients may be using it", r.label)?;
                        }
                    }
                }
                return Err(e);
            }
        }
        engine_lines(cfg, &*eng, dir, out)?;
        let probe = probe_of(&*eng).with_host(
            cfg.host_metrics
                .as_deref()
                .and_then(|u| crate::probe::NodeExporter::parse(u).ok())
                .map(std::sync::Arc::new),
        );
        Ok(Some(InProcess {
            eng,
            workload,
            probe,
        }))
    }
}

impl EngineSide for InProcess {
    fn step(
        &mut self,
        r: &mut Run<'_>,
        mem: &EngineMem,
        at: (usize, Step, Level),
        out: &mut dyn Write,
    ) -> Result<After> {
        run_step(r, &*self.eng, &*self.workload, &self.probe, mem, at, out)
    }

    fn close(
        self: Box<Self>,
        _r: &mut Run<'_>,
        out: &mut dyn Write,
        keep: Option<&str>,
    ) -> Result<Option<(u64, u64)>> {
        let InProcess { eng, probe, .. } = *self;
        // The probe's connection to a server goes first: a target's
        // database is dropped at close.
        drop(probe);
        let kind = eng.kind();
        match keep {
            None => {
                if let Err(e) = eng.close() {
                    writeln!(out, "{kind}: at close: {e:#}")?;
                }
            }
            Some(why) => match eng.close_keeping() {
                Ok(Some(left)) => writeln!(out, "{kind}: {left}: {why}")?,
                Ok(None) => {}
                Err(e) => writeln!(out, "{kind}: at close: {e:#}")?,
            },
        }
        Ok(None)
    }
}

/// The lines after an engine opened: its version, directory and process,
/// its settings, and how it is reached.
pub(super) fn engine_lines(
    cfg: &RunConfig,
    eng: &dyn Engine,
    dir: &std::path::Path,
    out: &mut dyn Write,
) -> Result<()> {
    let kind = eng.kind();
    if cfg.memory.is_some() && !kind.def().direct_io {
        writeln!(
            out,
            "  {kind} has no direct IO: its reads and writes go through the page cache (charged to its memory limit)"
        )?;
    }
    match (eng.pid(), &cfg.target) {
        (Some(_), _) => writeln!(
            out,
            "{kind} {} in {} (pid {})",
            eng.version(),
            dir.display(),
            eng.pids()
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )?,
        (None, target) => writeln!(
            out,
            "{kind} {} at {}",
            eng.version(),
            target
                .as_ref()
                .map_or_else(String::new, |t| t.target.shown()),
        )?,
    }
    if let Some(lib) = kind.library() {
        writeln!(out, "  library: {lib}")?;
    }
    let settings = eng.settings();
    if !settings.is_empty() {
        writeln!(out, "  settings: {}", engine::options::show(&settings))?;
    }
    if let Some(u) = &cfg.host_metrics {
        let devices = crate::probe::NodeExporter::parse(u)
            .and_then(|n| n.devices())
            .map(|d| d.join(", "))
            .unwrap_or_else(|e| format!("none read: {e:#}"));
        writeln!(
            out,
            "  the server host's devices and CPU by its node exporter {u} (devices: {devices})"
        )?;
    }
    if cfg.target.is_some() {
        writeln!(
            out,
            "  an external target: efficiency per op from the server's own counters (SHOW GLOBAL STATUS, pg_stat_*); its durability settings are its own"
        )?;
    } else if kind.is_server() {
        writeln!(
            out,
            "  clients connect over {} (--transport)",
            cfg.transport_of(kind)
        )?;
    }
    if let (Some(pid), true) = (
        eng.pid(),
        cfg.allocator != crate::setup::allocator::Allocator::Glibc,
    ) {
        writeln!(out, "  {}", cfg.allocator.describe(pid))?;
    }
    if cfg.replication_log && !kind.is_server() {
        writeln!(
            out,
            "  replication log: none ({kind} is embedded; --replication-log applies to servers)"
        )?;
    }
    Ok(())
}

/// The probe of an open engine: its device, data paths and process, and a
/// server's own counters; for an external target only the counters.
pub(crate) fn probe_of(eng: &dyn Engine) -> Probe {
    match (eng.pid(), eng.counters()) {
        (Some(pid), c) => Probe::with_paths(eng.dir(), eng.data_paths(), pid)
            .with_pids(eng.pids())
            .with_server(c),
        (None, Some(c)) => Probe::remote(
            c,
            "external target: its device is on another host (srv_* figures are the server's counters)",
        ),
        (None, None) => Probe::with_paths(eng.dir(), Vec::new(), std::process::id()),
    }
}

/// Opens the engine and, on a server, creates the workload's schema. A
/// failure is recorded (an `open` step for the engine) and printed, and the
/// run goes on with the next engine.
pub(super) fn open_engine(
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
    // A client joining another's database finds its schema made.
    if let (EngineRef::Sql(s), None) = (eng.face(), &r.joined_db) {
        let ddl = workload.sql_schema(s.dialect(), s.table_options());
        let created = s
            .connect()
            .and_then(|mut c| ddl.iter().try_for_each(|q| c.batch(q)))
            .and_then(|()| s.schema_made());
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
pub(super) fn fail_open(r: &mut Run<'_>, why: &str) -> Result<()> {
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
