//! The results file: one SQLite database holding runs (config, seed,
//! versions, machine facts), steps, intervals, figures, latency summaries
//! with their HDR histograms, probe samples and engine statistics.
//!
//! Written as the run goes: every interval is its own transaction, so a
//! crash or a kill loses at most the interval in progress. Reports read
//! only this file.

#![warn(missing_docs)]

// The crates below, under the module names the code has always used:
// `crate::address` is the ampbench-address crate (Cargo.toml lists them).
use ampbench_address as address;
use ampbench_core::{
    UsageError, bound, check, identity, names, postspec, record, share, structure,
};
use ampbench_metrics as metrics;
use ampbench_probe as probe;

pub mod db;
mod location;
pub mod meet;
pub mod merge;
mod pg;
pub mod read;
pub mod recorded;

use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::{Connection, params};

use crate::metrics::{Figure, Latency, Metric};
use crate::names::Status;
use crate::probe::Sample;
use crate::structure::EngineStats;
use db::{Db, Exec, Val, vals};
pub use location::Location;

pub use read::{RunView, StepView};
pub use recorded::RecordedConfig;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY, started TEXT NOT NULL, ended TEXT, status TEXT NOT NULL,
  command TEXT NOT NULL, workload TEXT NOT NULL, engines TEXT NOT NULL, seed INTEGER NOT NULL,
  config TEXT NOT NULL, versions TEXT NOT NULL, machine TEXT NOT NULL, invocation INTEGER,
  name TEXT, clients INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS run_clients (
  run_id INTEGER NOT NULL REFERENCES runs(id), client INTEGER NOT NULL, host TEXT NOT NULL,
  joined TEXT NOT NULL, skew REAL NOT NULL, status TEXT NOT NULL, error TEXT, beat REAL,
  PRIMARY KEY (run_id, client));
CREATE TABLE IF NOT EXISTS barriers (
  run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL, client INTEGER NOT NULL,
  at REAL NOT NULL, note TEXT, PRIMARY KEY (run_id, name, client));
CREATE TABLE IF NOT EXISTS steps (
  id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), ordinal INTEGER NOT NULL,
  engine TEXT NOT NULL, step TEXT NOT NULL, started TEXT NOT NULL, ended TEXT,
  status TEXT NOT NULL, error TEXT, secs REAL, spec TEXT NOT NULL, settle TEXT,
  rep INTEGER NOT NULL DEFAULT 0, client INTEGER NOT NULL DEFAULT 0, t0_store REAL);
CREATE TABLE IF NOT EXISTS intervals (
  step_id INTEGER NOT NULL REFERENCES steps(id), idx INTEGER NOT NULL, t0 REAL NOT NULL, t1 REAL NOT NULL,
  ops INTEGER NOT NULL, bg_ops INTEGER NOT NULL, written INTEGER NOT NULL, PRIMARY KEY (step_id, idx));
CREATE TABLE IF NOT EXISTS slices (
  step_id INTEGER NOT NULL REFERENCES steps(id), idx INTEGER NOT NULL, t0 REAL NOT NULL, t1 REAL NOT NULL,
  ops INTEGER NOT NULL, bg_ops INTEGER NOT NULL, written INTEGER NOT NULL, partial INTEGER NOT NULL,
  PRIMARY KEY (step_id, idx));
CREATE TABLE IF NOT EXISTS rates (
  step_id INTEGER NOT NULL REFERENCES steps(id), idx INTEGER NOT NULL, t0 REAL NOT NULL, t1 REAL NOT NULL,
  per_sec REAL NOT NULL, PRIMARY KEY (step_id, idx));
CREATE TABLE IF NOT EXISTS figures (
  step_id INTEGER NOT NULL REFERENCES steps(id), interval_idx INTEGER NOT NULL, name TEXT NOT NULL,
  value REAL, note TEXT, PRIMARY KEY (step_id, interval_idx, name));
CREATE TABLE IF NOT EXISTS latencies (
  step_id INTEGER NOT NULL REFERENCES steps(id), interval_idx INTEGER NOT NULL, op TEXT NOT NULL,
  count INTEGER NOT NULL, mean REAL NOT NULL, p50 INTEGER NOT NULL, p95 INTEGER NOT NULL,
  p99 INTEGER NOT NULL, p999 INTEGER NOT NULL, max INTEGER NOT NULL, hist BLOB NOT NULL,
  PRIMARY KEY (step_id, interval_idx, op));
CREATE TABLE IF NOT EXISTS samples (
  step_id INTEGER NOT NULL REFERENCES steps(id), interval_idx INTEGER NOT NULL, at TEXT NOT NULL,
  sample TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS engine_stats (
  step_id INTEGER NOT NULL REFERENCES steps(id), name TEXT NOT NULL, value REAL, text TEXT,
  at TEXT NOT NULL DEFAULT 'end');
CREATE TABLE IF NOT EXISTS extras (
  step_id INTEGER NOT NULL REFERENCES steps(id), name TEXT NOT NULL, value REAL NOT NULL,
  PRIMARY KEY (step_id, name));
CREATE TABLE IF NOT EXISTS model_checks (
  step_id INTEGER NOT NULL REFERENCES steps(id), figure TEXT NOT NULL, measured REAL,
  predicted REAL NOT NULL, dominant TEXT, verdict TEXT NOT NULL, reason TEXT NOT NULL,
  PRIMARY KEY (step_id, figure));
CREATE TABLE IF NOT EXISTS step_notes (
  step_id INTEGER NOT NULL REFERENCES steps(id), idx INTEGER NOT NULL, line TEXT NOT NULL,
  PRIMARY KEY (step_id, idx));
";

/// What the schema adds after its migrations (they add the columns these
/// index). The tables whose primary key starts with `step_id` need none.
const INDEXES: &str = "CREATE UNIQUE INDEX IF NOT EXISTS runs_by_name ON runs (name);";

/// The indexes that find one run's steps and a step's samples and engine
/// statistics (name, table, column), so a report copies one run of a
/// large store without scanning the others' rows (the tables whose key
/// starts with `step_id` need none). Not part of [`SCHEMA_VERSION`]: a
/// SQLite file gets them when opened; a PostgreSQL store with its schema,
/// or, made before them, from a run or a copy into it
/// ([`Results::add_read_indexes`]), never from a report.
pub(crate) const READ_INDEXES: [(&str, &str, &str); 3] = [
    ("steps_by_run", "steps", "run_id"),
    ("samples_by_step", "samples", "step_id"),
    ("engine_stats_by_step", "engine_stats", "step_id"),
];

/// [`READ_INDEXES`] as SQLite statements.
pub(crate) fn read_indexes_sql() -> String {
    READ_INDEXES
        .iter()
        .map(|(n, t, c)| format!("CREATE INDEX IF NOT EXISTS {n} ON {t} ({c});"))
        .collect()
}

/// One closed slice, ready to record.
#[derive(Clone, Debug)]
pub struct Slice {
    /// 0-based index.
    pub idx: usize,
    /// Start and end, seconds into the measured phase.
    pub t: (f64, f64),
    /// Foreground operations, background operations, user bytes written.
    pub counts: (u64, u64, u64),
    /// True for a last slice shorter than nine tenths of the duration.
    pub partial: bool,
    /// Its figures.
    pub figures: Vec<(Metric, Figure)>,
}

/// `interval_idx` used for whole-step rows.
pub const WHOLE_STEP: i64 = -1;

/// The `interval_idx` of slice `k`'s figures (`--slice`): -2, -3, …, so
/// intervals (≥ 0), the whole step (-1) and slices share one table.
pub fn slice_idx(k: i64) -> i64 {
    -2 - k
}

/// Everything recorded about a run when it starts.
#[derive(Clone, Debug)]
pub struct RunRecord {
    /// The command line as given.
    pub command: String,
    /// Workload name.
    pub workload: String,
    /// Engine names, comma-separated.
    pub engines: String,
    /// The run seed.
    pub seed: u64,
    /// The whole validated configuration (JSON).
    pub config: serde_json::Value,
    /// Engine and library versions (JSON).
    pub versions: serde_json::Value,
    /// Machine facts (JSON).
    pub machine: serde_json::Value,
    /// The first run of the same `ampbench run` when it made several (one
    /// per corner), so `report` with `--run latest` shows them together;
    /// None for the first or only one.
    pub invocation: Option<i64>,
}

/// The open results store: a SQLite file or a PostgreSQL database.
pub struct Results {
    db: Db,
    /// For PostgreSQL: the runs a reader asked for, copied into memory
    /// ([`Results::read_runs`]); the store itself is never read whole.
    snapshot: std::cell::OnceCell<Connection>,
    /// The runs copied into `snapshot` so far.
    copied: std::collections::BTreeSet<i64>,
    at: Location,
    /// The client of the run this process is (`--client`, 0 alone): the
    /// steps it records and ends are its own.
    client: usize,
}

pub(crate) fn now() -> String {
    // SAFETY: time() with a null pointer only returns the time.
    let t = unsafe { libc::time(std::ptr::null_mut()) };
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: gmtime_r writes into `tm`.
    unsafe { libc::gmtime_r(&t, &mut tm) };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

/// The results file's schema version, kept in SQLite's `user_version`:
/// 1 was the schema before versions were recorded (no `steps.rep`), 2 adds
/// `steps.rep` and the `rates` table, 3 adds `runs.invocation`, 4 adds
/// `engine_stats.at` (`start` or `end` of the step: a step's own counters
/// are its end's less its start's, with nothing between two steps, such
/// as a consistency check, counted in), 5 the clients of one run
/// (`runs.name`, `runs.clients`, `steps.client`, `steps.t0_store`, the
/// `run_clients` and `barriers` tables), 6 each client's heartbeat
/// (`run_clients.beat`, on the store's clock). The indexes a reader
/// needs ([`READ_INDEXES`]) are not a version: an older ampbench reads a
/// store that has them.
pub const SCHEMA_VERSION: i64 = 6;

/// Checks a file before anything is written to it: an empty file (new),
/// or one of ours at this schema version or an older one. A SQLite
/// database that is not ours, or one from a newer ampbench, is an error
/// that says which; nothing is changed in it.
fn check_ours(c: &Connection, path: &Path) -> Result<()> {
    let tables: Vec<String> = c
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if !tables.is_empty() && !tables.iter().any(|t| t == "runs") {
        return Err(crate::UsageError(format!(
            "{} is a SQLite database but not an ampbench results file (no runs table; its tables: {}): pass another --results",
            path.display(),
            tables.join(", ")
        ))
        .into());
    }
    let v: i64 = c.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if v > SCHEMA_VERSION {
        return Err(crate::UsageError(format!(
            "{} was written by a newer ampbench (results schema {v}; this one reads up to {SCHEMA_VERSION}): upgrade ampbench or pass another --results",
            path.display()
        ))
        .into());
    }
    Ok(())
}

/// Brings a results file written by an older ampbench up to this schema,
/// in one transaction: columns added since (`steps.rep`, the repetition
/// of `--repeat`; `runs.invocation`, the first run of the same `ampbench
/// run`), then the version. Tables added since are made by the schema's
/// `IF NOT EXISTS`.
fn migrate(c: &mut Connection) -> rusqlite::Result<()> {
    let tx = c.transaction()?;
    for (table, column, ddl) in [
        (
            "steps",
            "rep",
            "ALTER TABLE steps ADD COLUMN rep INTEGER NOT NULL DEFAULT 0",
        ),
        (
            "runs",
            "invocation",
            "ALTER TABLE runs ADD COLUMN invocation INTEGER",
        ),
        (
            "engine_stats",
            "at",
            "ALTER TABLE engine_stats ADD COLUMN at TEXT NOT NULL DEFAULT 'end'",
        ),
        ("runs", "name", "ALTER TABLE runs ADD COLUMN name TEXT"),
        (
            "runs",
            "clients",
            "ALTER TABLE runs ADD COLUMN clients INTEGER NOT NULL DEFAULT 1",
        ),
        (
            "steps",
            "client",
            "ALTER TABLE steps ADD COLUMN client INTEGER NOT NULL DEFAULT 0",
        ),
        (
            "steps",
            "t0_store",
            "ALTER TABLE steps ADD COLUMN t0_store REAL",
        ),
        (
            "run_clients",
            "beat",
            "ALTER TABLE run_clients ADD COLUMN beat REAL",
        ),
    ] {
        let has: bool = tx
            .prepare("SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2")?
            .exists(params![table, column])?;
        if !has {
            tx.execute_batch(ddl)?;
        }
    }
    tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))?;
    tx.commit()
}

impl Results {
    /// Opens (creating if needed) the results store at `at`.
    pub fn open(at: &Location) -> Result<Results> {
        let db = match at {
            Location::File(path) => Db::Sqlite(open_file(path)?),
            Location::Postgres(t) => Db::postgres(pg::open(t)?, t.clone()),
        };
        Ok(Results {
            db,
            snapshot: std::cell::OnceCell::new(),
            copied: std::collections::BTreeSet::new(),
            at: at.clone(),
            client: 0,
        })
    }

    /// For a PostgreSQL store: makes the [`READ_INDEXES`] it lacks, each
    /// built concurrently (writers go on) on a connection of its own, so
    /// a long build on a large store cannot stop this one. A failure
    /// (another client building the same index) is left: reads are the
    /// same without them, only slower.
    pub fn add_read_indexes(&self) {
        if let Location::Postgres(t) = &self.at {
            pg::add_read_indexes(t);
        }
    }

    /// Opens an existing results store for reading.
    pub fn open_existing(at: &Location) -> Result<Results> {
        if let Location::File(path) = at {
            if !path.exists() {
                return Err(crate::UsageError(format!(
                    "results file {} does not exist (run `ampbench run` first, or pass --results)",
                    path.display()
                ))
                .into());
            }
        }
        Results::open(at)
    }

    /// Makes this process client `k` of its run: the steps it records and
    /// ends are client `k`'s.
    pub fn set_client(&mut self, k: usize) {
        self.client = k;
    }

    /// Where the store is.
    pub fn location(&self) -> &Location {
        &self.at
    }

    /// The store's back end, for the clients' meeting and copies.
    pub fn db(&mut self) -> &mut Db {
        &mut self.db
    }

    /// Records a run's start; returns its id.
    pub fn begin_run(&mut self, r: &RunRecord) -> Result<i64> {
        self.db.tx(|t| insert_run(t, r, None))
    }

    /// Records a run's end with its status.
    pub fn end_run(&mut self, run: i64, status: Status) -> Result<()> {
        self.db.tx(|t| {
            t.exec(
                "UPDATE runs SET ended = ?1, status = ?2 WHERE id = ?3",
                vals![now(), status.name(), run],
            )
        })?;
        Ok(())
    }

    /// Ends a run that an error stopped: the run and every step of it still
    /// `running` become `failed`, the steps with `why`, so nothing of a
    /// finished process stays `running`.
    pub fn fail_run(&mut self, run: i64, why: &str) -> Result<()> {
        self.fail_running_steps(run, why)?;
        self.end_run(run, Status::Failed)
    }

    /// Marks every step of `run` still `running` as `failed` with `why`
    /// (its process died); returns how many there were.
    pub fn fail_running_steps(&mut self, run: i64, why: &str) -> Result<usize> {
        self.end_running_steps(run, Status::Failed, why)
    }

    /// Ends every step of `run` still running with `status` and `why`;
    /// how many.
    pub fn end_running_steps(&mut self, run: i64, status: Status, why: &str) -> Result<usize> {
        let client = self.client;
        Ok(self.db.tx(|t| {
            t.exec(
                "UPDATE steps SET ended = ?1, status = ?2, error = ?3 WHERE run_id = ?4 AND status = ?5 AND client = ?6",
                vals![now(), status.name(), why, run, Status::Running.name(), client],
            )
        })? as usize)
    }

    /// Ends a run stopped at once (a second Ctrl-C): the run and its
    /// running steps become `interrupted`.
    pub fn interrupt_run(&mut self, run: i64) -> Result<()> {
        self.end_running_steps(run, Status::Interrupted, "stopped by a second interrupt")?;
        self.end_run(run, Status::Interrupted)
    }

    /// The ordinal the next step of `run` takes.
    pub fn next_ordinal(&mut self, run: i64) -> Result<usize> {
        let client = self.client;
        let rows = self.db.tx(|t| {
            t.query(
                "SELECT COALESCE(MAX(ordinal) + 1, 0) FROM steps WHERE run_id = ?1 AND client = ?2",
                vals![run, client],
            )
        })?;
        Ok(rows
            .first()
            .and_then(|r| r.first())
            .and_then(Val::int)
            .unwrap_or(0) as usize)
    }

    /// Records a step's start; `spec` describes how it runs (JSON); `rep`
    /// is its repetition (`--repeat`, 0-based).
    pub fn begin_step(
        &mut self,
        run: i64,
        (ordinal, rep): (usize, usize),
        engine: &str,
        step: &str,
        spec: &serde_json::Value,
    ) -> Result<i64> {
        let client = self.client;
        self.db.tx(|t| {
            t.insert_id(
                "INSERT INTO steps (run_id, ordinal, engine, step, started, status, spec, rep, client) VALUES (?1, ?2, ?3, ?4, ?5, 'running', ?6, ?7, ?8)",
                vals![run, ordinal, engine, step, now(), spec.to_string(), rep, client],
            )
        })
    }

    /// Records where a step's measured phase began on the store's clock
    /// (seconds since the epoch): how the intervals of the clients of one
    /// run line up.
    pub fn set_step_start(&mut self, step: i64, t0_store: f64) -> Result<()> {
        self.db.tx(|t| {
            t.exec(
                "UPDATE steps SET t0_store = ?1 WHERE id = ?2",
                vals![t0_store, step],
            )
        })?;
        Ok(())
    }

    /// Records a step's throughput over time (see ampbench-driver's `rates`):
    /// `(t0, t1, ops/s)` per bin.
    pub fn add_rates(&mut self, step: i64, rates: &[(f64, f64, f64)]) -> Result<()> {
        self.db.tx(|t| {
            for (i, (t0, t1, v)) in rates.iter().enumerate() {
                t.exec(
                    "INSERT OR REPLACE INTO rates (step_id, idx, t0, t1, per_sec) VALUES (?1, ?2, ?3, ?4, ?5)",
                    vals![step, i, *t0, *t1, *v],
                )?;
            }
            Ok(())
        })
    }

    /// Records one closed interval with its figures and samples, in one transaction.
    pub fn add_interval(
        &mut self,
        step: i64,
        idx: usize,
        t: (f64, f64),
        counts: (u64, u64, u64),
        figures: &[(Metric, Figure)],
        samples: (&Sample, &Sample),
    ) -> Result<()> {
        let samples = [
            ("start", serde_json::to_string(samples.0)?),
            ("end", serde_json::to_string(samples.1)?),
        ];
        self.db.tx(|tx| {
            tx.exec(
                "INSERT OR REPLACE INTO intervals (step_id, idx, t0, t1, ops, bg_ops, written) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                vals![step, idx, t.0, t.1, counts.0 as i64, counts.1 as i64, counts.2 as i64],
            )?;
            write_figures(tx, step, idx as i64, figures)?;
            for (at, s) in &samples {
                tx.exec(
                    "INSERT INTO samples (step_id, interval_idx, at, sample) VALUES (?1, ?2, ?3, ?4)",
                    vals![step, idx, *at, s],
                )?;
            }
            Ok(())
        })
    }

    /// Records one `--slice` slice with its figures, in one transaction.
    pub fn add_slice(&mut self, step: i64, s: &Slice) -> Result<()> {
        let (ops, bg, written) = s.counts;
        self.db.tx(|tx| {
            tx.exec(
                "INSERT OR REPLACE INTO slices (step_id, idx, t0, t1, ops, bg_ops, written, partial) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                vals![step, s.idx, s.t.0, s.t.1, ops as i64, bg as i64, written as i64, s.partial],
            )?;
            write_figures(tx, step, slice_idx(s.idx as i64), &s.figures)
        })
    }

    /// Records response times for an interval (or [`WHOLE_STEP`]).
    pub fn add_latencies(
        &mut self,
        step: i64,
        idx: i64,
        latencies: &[(String, Latency)],
    ) -> Result<()> {
        let mut rows = Vec::with_capacity(latencies.len());
        for (op, l) in latencies {
            rows.push((op, l.summary(), l.to_bytes()?));
        }
        self.db.tx(|tx| {
            for (op, s, hist) in rows {
                tx.exec(
                    "INSERT OR REPLACE INTO latencies (step_id, interval_idx, op, count, mean, p50, p95, p99, p999, max, hist)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                    vals![
                        step,
                        idx,
                        op,
                        s.count as i64,
                        s.mean,
                        s.p50 as i64,
                        s.p95 as i64,
                        s.p99 as i64,
                        s.p999 as i64,
                        s.max as i64,
                        hist
                    ],
                )?;
            }
            Ok(())
        })
    }

    /// Records the whole step's figures, the rest of its record (the
    /// harness's, the model's and the workload's figures), its notes (what
    /// the workload and the model say of the step: a consistency check,
    /// how concurrent changes were serialised, the prediction), and the
    /// end samples.
    pub fn add_step_figures(
        &mut self,
        step: i64,
        figures: &[(Metric, Figure)],
        record: &crate::record::StepExtras,
        notes: &[crate::record::Note],
        samples: (&Sample, &Sample),
    ) -> Result<()> {
        let samples = [
            ("start", serde_json::to_string(samples.0)?),
            ("end", serde_json::to_string(samples.1)?),
        ];
        self.db.tx(|tx| {
            write_figures(tx, step, WHOLE_STEP, figures)?;
            for (n, v) in record.rows() {
                tx.exec(
                    "INSERT OR REPLACE INTO extras (step_id, name, value) VALUES (?1, ?2, ?3)",
                    vals![step, n, v],
                )?;
            }
            for (i, note) in notes.iter().enumerate() {
                tx.exec(
                    "INSERT OR REPLACE INTO step_notes (step_id, idx, line) VALUES (?1, ?2, ?3)",
                    vals![step, i, note.stored()],
                )?;
            }
            for (at, s) in &samples {
                tx.exec(
                    "INSERT INTO samples (step_id, interval_idx, at, sample) VALUES (?1, ?2, ?3, ?4)",
                    vals![step, WHOLE_STEP, *at, s],
                )?;
            }
            Ok(())
        })
    }

    /// Records a step's figures beside the model's predictions.
    pub fn add_model_checks(
        &mut self,
        step: i64,
        checks: &[crate::check::ModelCheck],
    ) -> Result<()> {
        self.db.tx(|tx| {
            for k in checks {
                tx.exec(
                    "INSERT OR REPLACE INTO model_checks (step_id, figure, measured, predicted, dominant, verdict, reason)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    vals![
                        step,
                        k.figure.name(),
                        k.measured,
                        k.predicted,
                        k.dominant.as_deref(),
                        k.verdict.name(),
                        &k.reason
                    ],
                )?;
            }
            Ok(())
        })
    }

    /// Records a snapshot of the engine's own statistics.
    pub fn add_engine_stats(&mut self, step: i64, stats: &EngineStats, at: &str) -> Result<()> {
        self.db.tx(|tx| {
            for (n, v) in &stats.values {
                tx.exec(
                    "INSERT INTO engine_stats (step_id, name, value, at) VALUES (?1, ?2, ?3, ?4)",
                    vals![step, n, *v, at],
                )?;
            }
            for (n, text) in &stats.texts {
                tx.exec(
                    "INSERT INTO engine_stats (step_id, name, text, at) VALUES (?1, ?2, ?3, ?4)",
                    vals![step, n, text, at],
                )?;
            }
            Ok(())
        })
    }

    /// Records a step's end.
    pub fn end_step(
        &mut self,
        step: i64,
        status: Status,
        error: Option<&str>,
        secs: f64,
        settle: Option<&str>,
    ) -> Result<()> {
        self.db.tx(|t| {
            t.exec(
                "UPDATE steps SET ended = ?1, status = ?2, error = ?3, secs = ?4, settle = ?5 WHERE id = ?6",
                vals![now(), status.name(), error, secs, settle, step],
            )
        })?;
        Ok(())
    }

    /// The connection reports read: the file's, or for PostgreSQL the
    /// runs [`read_runs`](Results::read_runs) copied into memory.
    pub fn conn(&self) -> &Connection {
        match &self.db {
            Db::Sqlite(c) => c,
            Db::Postgres(_) => self.snapshot.get_or_init(|| {
                // An in-memory database is always available, and the
                // schema's statements are this file's own.
                let c = Connection::open_in_memory().expect("an in-memory SQLite database");
                let _ = c
                    .execute_batch(SCHEMA)
                    .and_then(|_| c.execute_batch(INDEXES))
                    .and_then(|_| c.execute_batch(&read_indexes_sql()));
                c
            }),
        }
    }

    /// Runs a read-only query on the store itself (not the reader's
    /// copy): which runs there are, before any is read.
    pub(crate) fn query(&mut self, sql: &str, args: &[Val]) -> Result<Vec<Vec<Val>>> {
        self.db.tx(|t| t.query(sql, args))
    }

    /// For PostgreSQL: copies the runs `ids` (those not copied before)
    /// into memory for the reader, each with its clients, steps and
    /// everything under them. Nothing else of the store is read, so a
    /// report's time and memory go with the runs it shows, not with the
    /// store's size. A SQLite file is read in place.
    pub fn read_runs(&mut self, ids: &[i64]) -> Result<()> {
        if !matches!(self.db, Db::Postgres(_)) {
            return Ok(());
        }
        let want: Vec<i64> = ids
            .iter()
            .copied()
            .filter(|i| !self.copied.contains(i))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if want.is_empty() {
            return Ok(());
        }
        self.conn();
        let Some(c) = self.snapshot.take() else {
            anyhow::bail!("the reader's copy of the results store was not made");
        };
        let mut mem = Db::Sqlite(c);
        let copied =
            db::copy(&mut self.db, &mut mem, &want).context("reading the PostgreSQL results store");
        if let Db::Sqlite(c) = mem {
            let _ = self.snapshot.set(c);
        }
        copied?;
        self.copied.extend(want);
        Ok(())
    }
}

/// Inserts a run's row (`running`); with `clients`, the name and client
/// count of a run of several clients (`--clients`). Its id.
pub(crate) fn insert_run(
    t: &mut dyn Exec,
    r: &RunRecord,
    clients: Option<(&str, usize)>,
) -> Result<i64> {
    t.insert_id(
        "INSERT INTO runs (started, status, command, workload, engines, seed, config, versions, machine, invocation, name, clients)
         VALUES (?1, 'running', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        vals![
            now(),
            &r.command,
            &r.workload,
            &r.engines,
            r.seed as i64,
            r.config.to_string(),
            r.versions.to_string(),
            r.machine.to_string(),
            r.invocation,
            clients.map(|c| c.0),
            clients.map_or(1, |c| c.1)
        ],
    )
}

/// Opens (creating, or bringing up to this schema) a SQLite results file.
fn open_file(path: &Path) -> Result<Connection> {
    let mut c = Connection::open(path)
        .with_context(|| format!("cannot open results file {}", path.display()))?;
    let unusable = || format!("{} is not a usable ampbench results file", path.display());
    c.execute_batch("PRAGMA busy_timeout=5000;")
        .with_context(unusable)?;
    check_ours(&c, path).map_err(|e| {
        // Not SQLite at all, or a truncated or damaged file: bad input.
        let bad_file = e.downcast_ref::<rusqlite::Error>().is_some_and(|s| {
            matches!(
                s.sqlite_error_code(),
                Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt)
            )
        });
        match e.downcast::<crate::UsageError>() {
            Ok(u) => u.into(),
            Err(e) if bad_file => crate::UsageError(format!(
                "{} is not an ampbench results file (not a SQLite database, or truncated or damaged: {e})",
                path.display()
            ))
            .into(),
            Err(e) => e.context(unusable()),
        }
    })?;
    c.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
        .and_then(|_| c.execute_batch(SCHEMA))
        .and_then(|_| migrate(&mut c))
        .and_then(|_| c.execute_batch(INDEXES))
        .and_then(|_| c.execute_batch(&read_indexes_sql()))
        .with_context(unusable)?;
    Ok(c)
}

fn write_figures(
    tx: &mut dyn Exec,
    step: i64,
    idx: i64,
    figures: &[(Metric, Figure)],
) -> Result<()> {
    for (name, f) in figures {
        let (v, note) = match f {
            Figure::Value(v) if v.is_finite() => (Some(*v), None),
            Figure::Value(v) => (None, Some(format!("not finite: {v}"))),
            Figure::NotMeasured(why) => (None, Some(why.clone())),
        };
        tx.exec(
            "INSERT OR REPLACE INTO figures (step_id, interval_idx, name, value, note) VALUES (?1, ?2, ?3, ?4, ?5)",
            vals![step, idx, name.name(), v, note],
        )?;
    }
    Ok(())
}

/// Reads a run with all its steps; the steps of a run of several clients
/// are merged into one view (`merge`), each client's kept beside it.
pub fn load(r: &mut Results, sel: read::RunSel) -> Result<read::RunView> {
    let mut run = read::load_steps(r, sel)?;
    let (name, clients): (Option<String>, i64) = r.conn().query_row(
        "SELECT name, clients FROM runs WHERE id = ?1",
        rusqlite::params![run.id],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    if clients > 1 {
        merge::merge_clients(r, &mut run, name.unwrap_or_default(), clients as usize)?;
    }
    Ok(run)
}
