//! The insert benchmark (`iibench`): secondary-index maintenance as a
//! table outgrows memory, then queries while a writer keeps inserting.
//! Steps, schema and statements follow the reference client (see
//! `docs/insert.md`); its flaws are not copied: the client is native and
//! never the bottleneck, every thread has its own random stream, and the
//! query steps' writer keeps its rate on a schedule whose misses are
//! reported rather than hidden.
//!
//! Steps: `l.i0` (primary-key-order load, `load_batch` rows per commit),
//! `l.x` (build the secondary indexes, timed), `l.i1` and `l.i2` (inserts
//! at full speed, 50 and 5 rows per commit, each followed by the delete of
//! as many of the oldest rows), `debt` (debt reduction), then `qr100` …
//! `qp1000` (one query thread per client at full speed while a writer
//! inserts and deletes N rows/s per client). Clients are `--threads`, one
//! table each (`-p tables=shared`: one for all). A consistency check
//! follows every step. "ops" are rows inserted in the load and write
//! steps and queries in the query steps, so the per-op figures are per
//! insert (r/i, wKB/i …) and per query (r/q …) as the seeds print them.

mod kv;
pub mod row;
mod sql;
pub mod store;
mod work;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Result, bail};

use crate::driver::{Background, Worker, WorkerFactory};
use crate::engine::{Dialect, Durability, EngineRef};
use crate::rng::derive_seed;
use crate::{ParamDef, Params, Planned, StepCtx, StepKind, StepNotes, TypedWorkload};
use row::{Gen, INDEXES};
use store::InsertStore;

pub use kv::table_names;

crate::named! {
    /// The insert benchmark's steps, in run order.
    pub enum InsertStep: "insert step" {
        /// Load in primary-key order, primary key only.
        LoadI0 = "l.i0",
        /// Create the secondary indexes.
        CreateIndexes = "l.x",
        /// Inserts and deletes at full speed, 50 rows per commit.
        WriteI1 = "l.i1",
        /// Inserts and deletes at full speed, 5 rows per commit.
        WriteI2 = "l.i2",
        /// Debt reduction: flush, compact, purge, vacuum, checkpoint.
        Debt = "debt",
        /// Range queries, writer at 100 rows/s per client.
        Qr100 = "qr100",
        /// Point queries, writer at 100 rows/s per client.
        Qp100 = "qp100",
        /// Range queries, writer at 500 rows/s per client.
        Qr500 = "qr500",
        /// Point queries, writer at 500 rows/s per client.
        Qp500 = "qp500",
        /// Range queries, writer at 1000 rows/s per client.
        Qr1000 = "qr1000",
        /// Point queries, writer at 1000 rows/s per client.
        Qp1000 = "qp1000",
    }
}

impl InsertStep {
    /// For a query step: (point queries, the writer's rows/s per client).
    pub fn query(self) -> Option<(bool, u64)> {
        use InsertStep::*;
        Some(match self {
            Qr100 => (false, 100),
            Qp100 => (true, 100),
            Qr500 => (false, 500),
            Qp500 => (true, 500),
            Qr1000 => (false, 1000),
            Qp1000 => (true, 1000),
            _ => return None,
        })
    }
}

impl StepKind for InsertStep {
    fn loads(self) -> bool {
        self == InsertStep::LoadI0
    }
    fn needs_data(self) -> bool {
        self != InsertStep::LoadI0
    }
    /// Clients own a table each, fixed for the run: no step is swept.
    fn concurrent(self) -> bool {
        false
    }
    fn repeatable(self) -> bool {
        matches!(self, InsertStep::WriteI1 | InsertStep::WriteI2) || self.query().is_some()
    }
}

/// Parameters and defaults; the reference's names and values in the help.
pub const PARAMS: &[ParamDef] = &[
    ParamDef {
        key: "load_rows",
        default: "100000",
        help: "rows per table loaded by l.i0 (reference scripts: 10M-20M per table)",
    },
    ParamDef {
        key: "i1_rows",
        default: "40000",
        help: "rows per table inserted (and deleted) by l.i1 (reference: 4/5 of its nr2, e.g. 16M)",
    },
    ParamDef {
        key: "i2_rows",
        default: "10000",
        help: "rows per table inserted (and deleted) by l.i2 (reference: 1/5 of nr2, e.g. 4M)",
    },
    ParamDef {
        key: "load_batch",
        default: "100",
        help: "rows per commit in l.i0",
    },
    ParamDef {
        key: "lx_rows",
        default: "100",
        help: "rows l.x inserts into each table before it builds the indexes, as the reference's (0: none)",
    },
    ParamDef {
        key: "i1_batch",
        default: "50",
        help: "rows per commit in l.i1",
    },
    ParamDef {
        key: "i2_batch",
        default: "5",
        help: "rows per commit in l.i2",
    },
    ParamDef {
        key: "writer_batch",
        default: "50",
        help: "rows per commit of the query steps' writer",
    },
    ParamDef {
        key: "secondary_indexes",
        default: "3",
        help: "0-3: marketsegment, registersegment, pdc, in that order",
    },
    ParamDef {
        key: "tables",
        default: "per-client",
        help: "per-client (pi1..piN) or shared (pi1 for every client; needs delete=false, as the reference)",
    },
    ParamDef {
        key: "delete",
        default: "true",
        help: "delete as many of the oldest rows as each commit inserts (l.i1, l.i2 and the writer)",
    },
    ParamDef {
        key: "deletes",
        default: "concurrent",
        help: "concurrent: each client's deletes run on a connection of their own beside its inserts, at most 8 behind (the reference's deleter process); inline: after each commit on the inserter's connection",
    },
    ParamDef {
        key: "writer_catchup",
        default: "false",
        help: "the query steps' writer makes up the commits a stall missed (true) or, as the reference's, goes on at its rate from where it is (false)",
    },
    ParamDef {
        key: "statements",
        default: "reference",
        help: "SQL engines: reference (as iibench.py: text with the values written in, but PostgreSQL's queries prepared), text, or prepared (server-side prepared statements)",
    },
    ParamDef {
        key: "data_min",
        default: "10",
        help: "shortest data column (bytes)",
    },
    ParamDef {
        key: "data_max",
        default: "20",
        help: "longest data column (bytes; the seed's padding went to 1024)",
    },
    ParamDef {
        key: "rows_per_query",
        default: "10",
        help: "LIMIT of a range query and ids of a point query",
    },
    ParamDef {
        key: "sync",
        default: "false",
        help: "make each commit durable on return",
    },
    ParamDef {
        key: "check",
        default: "true",
        help: "check after every step that each index has one entry per live row",
    },
    ParamDef {
        key: "debt_sleep",
        default: "0",
        help: "seconds to sleep at the end of the debt step (reference: 60 + 1 per 1M rows, at most 1200)",
    },
];

/// Per benchmark table: the next id to assign and the oldest live one.
#[derive(Debug)]
pub struct TableIds {
    /// The next id an insert takes (ids start at 1, as AUTO_INCREMENT).
    pub next: AtomicU64,
    /// The oldest id not yet deleted.
    pub lo: AtomicU64,
}

/// The insert benchmark's state for one engine.
pub struct Insert {
    load_rows: u64,
    i1_rows: u64,
    i2_rows: u64,
    load_batch: usize,
    lx_rows: u64,
    i1_batch: usize,
    i2_batch: usize,
    writer_batch: usize,
    /// Secondary indexes per table.
    pub indexes: usize,
    shared: bool,
    delete: bool,
    data: (usize, usize),
    /// LIMIT of a range query and ids per point query.
    pub rows_per_query: usize,
    durability: Durability,
    check: bool,
    debt_sleep: f64,
    clients: usize,
    /// This client's first table (`--clients`: the tables of the clients
    /// before it come first).
    first_table: usize,
    /// Every client's tables.
    all_tables: usize,
    /// Per benchmark table.
    pub tables: Vec<TableIds>,
    /// Per benchmark table, its deleter's queue (made anew each step).
    queues: Vec<work::DeleteQueue>,
    /// Deletes on a connection of their own (`-p deletes=concurrent`).
    concurrent_deletes: bool,
    /// How SQL statements are sent (`-p statements`).
    statements: sql::Statements,
    /// The query steps' writer makes up for a stall (`-p writer_catchup`).
    writer_catchup: bool,
    build_step: bool,
    with_index: AtomicBool,
    counts: Counts,
    debt_said: Mutex<Vec<String>>,
    window: Mutex<(Instant, Instant)>,
}

/// Running counts, some reset by each step.
#[derive(Debug, Default)]
struct Counts {
    live: AtomicU64,
    inserted: AtomicU64,
    inserted_bytes: AtomicU64,
    step_inserted: AtomicU64,
    step_deleted: AtomicU64,
    writer_rows: AtomicU64,
    writer_deleted: AtomicU64,
    asked: AtomicU64,
    found: AtomicU64,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Insert {
    /// Reads parameters.
    // Long: one read of the insert benchmark's parameters, each checked where
    // it is read (its range; tables against delete, data_min against
    // data_max), the error naming it.
    pub fn new(p: &Params) -> Result<Insert> {
        let usage = |m: String| crate::UsageError(m);
        let indexes = p.u64("secondary_indexes")?;
        if indexes > 3 {
            bail!(usage(format!(
                "parameter 'secondary_indexes={indexes}': expected 0 to 3"
            )));
        }
        let shared = match p.str("tables") {
            "per-client" => false,
            "shared" => true,
            other => bail!(usage(format!(
                "parameter 'tables={other}': expected per-client or shared"
            ))),
        };
        let delete = p.bool("delete")?;
        if shared && delete {
            bail!(usage(
                "parameter 'tables=shared' needs -p delete=false: clients deleting the oldest rows of one table would race (the reference refuses both too)".into()
            ));
        }
        let (data_min, data_max) = (p.u64("data_min")?, p.u64("data_max")?);
        if data_max < data_min || data_max > 4000 {
            bail!(usage(format!(
                "parameters 'data_min={data_min}', 'data_max={data_max}': expected data_min <= data_max <= 4000 (the column is VARCHAR(4000))"
            )));
        }
        let batch = |key: &str| -> Result<usize> {
            match p.u64(key)? {
                0 => bail!(usage(format!("parameter '{key}=0': expected at least 1"))),
                n if n > 10_000 => bail!(usage(format!(
                    "parameter '{key}={n}': expected at most 10000 rows per commit"
                ))),
                n => Ok(n as usize),
            }
        };
        let rows_per_query = p.u64("rows_per_query")?;
        if !(1..=1000).contains(&rows_per_query) {
            bail!(usage(format!(
                "parameter 'rows_per_query={rows_per_query}': expected 1 to 1000"
            )));
        }
        let debt_sleep = p.f64("debt_sleep")?;
        if !(0.0..=3600.0).contains(&debt_sleep) {
            bail!(usage(format!(
                "parameter 'debt_sleep={debt_sleep}': expected 0 to 3600 seconds"
            )));
        }
        let now = Instant::now();
        Ok(Insert {
            load_rows: p.u64("load_rows")?,
            i1_rows: p.u64("i1_rows")?,
            i2_rows: p.u64("i2_rows")?,
            load_batch: batch("load_batch")?,
            lx_rows: match p.u64("lx_rows")? {
                n if n > 10_000 => bail!(usage(format!(
                    "parameter 'lx_rows={n}': expected at most 10000 rows"
                ))),
                n => n,
            },
            i1_batch: batch("i1_batch")?,
            i2_batch: batch("i2_batch")?,
            writer_batch: batch("writer_batch")?,
            indexes: indexes as usize,
            shared,
            delete,
            data: (data_min as usize, data_max as usize),
            rows_per_query: rows_per_query as usize,
            durability: Durability::from_sync(p.bool("sync")?),
            check: p.bool("check")?,
            debt_sleep,
            clients: 1,
            first_table: 0,
            all_tables: 1,
            tables: Vec::new(),
            queues: Vec::new(),
            concurrent_deletes: match p.str("deletes") {
                "concurrent" => true,
                "inline" => false,
                other => bail!(usage(format!(
                    "parameter 'deletes={other}': expected concurrent or inline"
                ))),
            },
            statements: sql::Statements::parse(p.str("statements"))?,
            writer_catchup: p.bool("writer_catchup")?,
            build_step: false,
            with_index: AtomicBool::new(true),
            counts: Counts::default(),
            debt_said: Mutex::new(Vec::new()),
            window: Mutex::new((now, now)),
        })
    }

    /// True when inserts write index entries (the indexes exist).
    pub fn indexed(&self) -> bool {
        self.with_index.load(Ordering::SeqCst)
    }

    fn added(&self, rows: u64, bytes: u64) {
        let c = &self.counts;
        c.live.fetch_add(rows, Ordering::Relaxed);
        c.inserted.fetch_add(rows, Ordering::Relaxed);
        c.inserted_bytes.fetch_add(bytes, Ordering::Relaxed);
        c.step_inserted.fetch_add(rows, Ordering::Relaxed);
    }

    fn removed(&self, rows: u64) {
        let c = &self.counts;
        c.live
            .fetch_sub(rows.min(c.live.load(Ordering::Relaxed)), Ordering::Relaxed);
        c.step_deleted.fetch_add(rows, Ordering::Relaxed);
    }

    fn writer_did(&self, rows: u64, deleted: u64) {
        self.counts.writer_rows.fetch_add(rows, Ordering::Relaxed);
        self.counts
            .writer_deleted
            .fetch_add(deleted, Ordering::Relaxed);
    }

    fn point_found(&self, asked: u64, found: u64) {
        self.counts.asked.fetch_add(asked, Ordering::Relaxed);
        self.counts.found.fetch_add(found, Ordering::Relaxed);
    }

    /// A store for one worker.
    pub fn store<'a>(&'a self, engine: EngineRef<'a>) -> Result<Box<dyn InsertStore + 'a>> {
        let s = self.own_store(engine)?;
        Ok(if self.first_table == 0 {
            s
        } else {
            Box::new(store::Shifted {
                inner: s,
                by: self.first_table,
            })
        })
    }

    fn own_store<'a>(&'a self, engine: EngineRef<'a>) -> Result<Box<dyn InsertStore + 'a>> {
        Ok(match engine {
            EngineRef::Kv(e) => Box::new(kv::KvInsert::new(
                e.session()?,
                self.indexes,
                self.durability,
            )),
            EngineRef::Sql(e) => Box::new(sql::SqlInsert::new(
                e.connect()?,
                e.dialect(),
                self.durability,
                e.dialect() == Dialect::MySql
                    && !e.table_options().to_uppercase().contains("ROCKSDB"),
                self.statements,
            )?),
        })
    }

    /// Table `t`'s deleter queue.
    fn queue(&self, t: usize) -> &work::DeleteQueue {
        &self.queues[t]
    }

    /// The table client `i` writes and queries.
    fn table_of(&self, i: usize) -> usize {
        if self.shared { 0 } else { i }
    }

    /// An inserter for client `i` (`bg`: of the writer) on step `s`.
    fn inserter<'a>(
        &'a self,
        engine: EngineRef<'a>,
        seed: u64,
        i: usize,
        (left, batch): (u64, usize),
    ) -> Result<work::Inserter<'a>> {
        Ok(work::Inserter {
            wl: self,
            store: self.store(engine)?,
            rows_gen: Gen::new(derive_seed(seed, &[i as u64]), self.data.0, self.data.1),
            t: self.table_of(i),
            left,
            batch,
            delete: self.delete,
            queue: None,
            rows: Vec::new(),
        })
    }
}

impl TypedWorkload for Insert {
    type Step = InsertStep;

    fn tables(&self) -> Vec<String> {
        kv::table_names(self.all_tables.max(1), self.indexes)
    }

    fn configure(&mut self, steps: &[InsertStep], threads: usize, share: crate::Share) {
        self.clients = threads.max(1);
        let n = if self.shared { 1 } else { self.clients };
        // Several ampbench clients: each has its own tables, after the
        // clients' before it (client 0 makes them all).
        if !self.shared {
            self.first_table = share.client * n;
            self.all_tables = share.clients.max(1) * n;
        } else {
            self.first_table = 0;
            self.all_tables = 1;
        }
        self.tables = (0..n)
            .map(|_| TableIds {
                next: AtomicU64::new(1),
                lo: AtomicU64::new(1),
            })
            .collect();
        self.queues = (0..n).map(|_| work::DeleteQueue::default()).collect();
        self.build_step = steps.contains(&InsertStep::CreateIndexes);
        self.with_index.store(!self.build_step, Ordering::SeqCst);
    }

    fn sql_schema(&self, dialect: Dialect, table_options: &str) -> Vec<String> {
        sql::schema(
            dialect,
            table_options,
            self.all_tables.max(1),
            self.indexes,
            !self.build_step,
        )
    }

    // Long: one match arm per step of the insert benchmark (load, index, the
    // write steps, the query steps), each its threads' plan beside the
    // reference's shape.
    fn plan<'a>(
        &'a self,
        step: InsertStep,
        engine: EngineRef<'a>,
        ctx: &StepCtx,
    ) -> Result<Planned<'a>> {
        let s = step;
        let seed = ctx.seed;
        self.counts.step_inserted.store(0, Ordering::SeqCst);
        self.counts.step_deleted.store(0, Ordering::SeqCst);
        let clients = self.clients;
        let names = |n: &str| vec![n.to_string()];
        // The reference's shape: each client's deletes on a connection of
        // their own, beside its inserts (threads clients..2·clients).
        let apart = self.delete && self.concurrent_deletes;
        for q in &self.queues {
            q.reset();
        }
        let fill = |load: (u64, usize), delete: bool, name: &str| -> Planned<'a> {
            let apart = apart && delete;
            let f: Box<WorkerFactory<'a>> =
                Box::new(move |i: usize| -> Result<Box<dyn Worker + 'a>> {
                    if i >= clients {
                        let t = self.table_of(i - clients);
                        return Ok(Box::new(work::Deleter {
                            wl: self,
                            store: self.store(engine)?,
                            t,
                            queue: self.queue(t),
                        }));
                    }
                    let mut w = self.inserter(engine, seed, i, load)?;
                    w.delete = delete && self.delete;
                    if apart {
                        w.queue = Some(self.queue(w.t));
                    }
                    Ok(Box::new(w))
                });
            let (threads, ops) = if apart {
                (2 * clients, vec![name.to_string(), "delete".into()])
            } else {
                (clients, names(name))
            };
            Planned {
                spec: ctx.spec(threads, ops, true),
                fg: f,
                bg: None,
            }
        };
        let delete_name = if self.delete && !apart {
            "insert+delete"
        } else {
            "insert"
        };
        Ok(match s {
            InsertStep::LoadI0 => fill((self.load_rows, self.load_batch), false, "insert"),
            InsertStep::WriteI1 => fill((self.i1_rows, self.i1_batch), true, delete_name),
            InsertStep::WriteI2 => fill((self.i2_rows, self.i2_batch), true, delete_name),
            InsertStep::CreateIndexes => {
                if !self.build_step {
                    bail!("insert: l.x builds the indexes of tables loaded without them");
                }
                let tables = self.tables.len();
                self.with_index.store(true, Ordering::SeqCst);
                Planned {
                    spec: ctx.spec(tables, vec!["create_index".into(), "insert".into()], true),
                    fg: Box::new(move |i: usize| -> Result<Box<dyn Worker + 'a>> {
                        Ok(Box::new(work::IndexBuilder {
                            wl: self,
                            store: self.store(engine)?,
                            t: i,
                            left: INDEXES[..self.indexes].to_vec(),
                            pre: self.lx_rows,
                            rows_gen: Gen::new(
                                derive_seed(seed, &[3, i as u64]),
                                self.data.0,
                                self.data.1,
                            ),
                        }))
                    }),
                    bg: None,
                }
            }
            InsertStep::Debt => Planned {
                spec: ctx.spec(1, names("reduce_debt"), true),
                fg: Box::new(move |_| -> Result<Box<dyn Worker + 'a>> {
                    Ok(Box::new(work::Debt {
                        wl: self,
                        store: self.store(engine)?,
                        engine,
                        done: false,
                    }))
                }),
                bg: None,
            },
            q => {
                // The query steps' writer deletes after each of its own
                // commits, on its connection (one writer for all tables).
                let delete_name = if self.delete {
                    "insert+delete"
                } else {
                    "insert"
                };
                let (point, rate) = q.query().unwrap_or((false, 100));
                self.counts.writer_rows.store(0, Ordering::SeqCst);
                self.counts.writer_deleted.store(0, Ordering::SeqCst);
                self.counts.asked.store(0, Ordering::SeqCst);
                self.counts.found.store(0, Ordering::SeqCst);
                let start = Instant::now() + ctx.warmup;
                let window = (start, start + ctx.duration);
                *self.window.lock().unwrap_or_else(|p| p.into_inner()) = window;
                let mut spec = ctx.spec(
                    clients,
                    names(if point { "point_query" } else { "range_query" }),
                    false,
                );
                let per_sec = (clients as u64 * rate) as f64 / self.writer_batch as f64;
                spec.background = Some(Background {
                    per_sec,
                    catch_up: self.writer_catchup,
                    op_names: names(delete_name),
                });
                let batch = self.writer_batch;
                Planned {
                    spec,
                    fg: Box::new(move |i: usize| -> Result<Box<dyn Worker + 'a>> {
                        Ok(Box::new(work::Querier {
                            wl: self,
                            store: self.store(engine)?,
                            rng: crate::rng::Rng::new(derive_seed(seed, &[1, i as u64])),
                            t: self.table_of(i),
                            point,
                            ids: Vec::new(),
                        }))
                    }),
                    bg: Some(Box::new(move |_| -> Result<Box<dyn Worker + 'a>> {
                        let ins = (0..self.tables.len())
                            .map(|t| {
                                self.inserter(engine, derive_seed(seed, &[2]), t, (u64::MAX, batch))
                            })
                            .collect::<Result<Vec<_>>>()?;
                        Ok(Box::new(work::Writer {
                            ins,
                            turn: 0,
                            window,
                        }))
                    })),
                }
            }
        })
    }

    fn live_bytes(&self) -> u64 {
        let c = &self.counts;
        let n = c.inserted.load(Ordering::Relaxed);
        if n == 0 {
            return 0;
        }
        let per = c.inserted_bytes.load(Ordering::Relaxed) as f64 / n as f64;
        (c.live.load(Ordering::Relaxed) as f64 * per) as u64
    }

    fn live_rows(&self) -> Option<u64> {
        Some(self.counts.live.load(Ordering::Relaxed))
    }

    fn finish(&self, step: InsertStep, engine: EngineRef<'_>) -> Result<StepNotes> {
        notes::finish(self, step, engine)
    }
}

mod notes;
