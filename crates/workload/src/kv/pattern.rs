//! The ForestDB-benchmark step pattern, as Mark Callaghan ran it to compare
//! RocksDB with ForestDB: a load, then overwrites with and without sync,
//! point and range queries with and without a rate-limited writer, each
//! with 1 thread (`.1`) and N threads (`.n`).
//!
//! | step | work |
//! |---|---|
//! | `load` | insert every document in batches of `batch` (4096), no sync; keys hashed from the document number, so not in key order |
//! | `ows.1`/`ows.n` | overwrite one document per commit, sync on commit |
//! | `pqw.1`/`pqw.n` | point reads, plus one background writer overwriting `writer_rate` docs/s |
//! | `rqw.1`/`rqw.n` | range reads of `range` documents, plus the same writer |
//! | `pq.1`/`pq.n`, `rq.1`/`rq.n` | point / range reads, no writer |
//! | `owa.1`/`owa.n` | overwrite without sync |
//!
//! As in the original, throughput counts documents: a load batch counts
//! `batch` operations and a range read counts the documents it returned;
//! response time is per call (a batch, a range read). Differences from the
//! original: values get fresh random bytes (the original reused one filler
//! buffer, overstating compression), and every thread has its own seed.

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Result, bail};

use super::data::{Live, ValueGen, doc_key};
use super::docs_store;
use super::store::DocStore;
use crate::dist::{Distribution, KeyChooser};
use crate::driver::{Background, Done, StepSpec, Worker};
use crate::engine::{Durability, EngineRef};
use crate::rng::{Rng, derive_seed};
use crate::{ParamDef, Params, Planned, StepCtx, StepKind, TypedWorkload};

/// Every operation kind's name, in [`PatternOp`] order (a worker's
/// `Done::kind` is the kind's index).
fn op_names() -> Vec<String> {
    PatternOp::names().into_iter().map(String::from).collect()
}

crate::named! {
    /// The pattern workload's steps, in run order (`.1`: one thread, `.n`:
    /// `--threads`).
    pub enum PatternStep: "pattern step" {
        /// Insert every document in batches, no sync.
        Load = "load",
        /// Overwrites, one document a commit, synced; one thread.
        Ows1 = "ows.1",
        /// Overwrites, one document a commit, synced; `--threads` threads.
        OwsN = "ows.n",
        /// Point reads beside a rate-limited writer; one thread.
        Pqw1 = "pqw.1",
        /// Point reads beside a rate-limited writer; `--threads` threads.
        PqwN = "pqw.n",
        /// Range reads beside a rate-limited writer; one thread.
        Rqw1 = "rqw.1",
        /// Range reads beside a rate-limited writer; `--threads` threads.
        RqwN = "rqw.n",
        /// Point reads; one thread.
        Pq1 = "pq.1",
        /// Point reads; `--threads` threads.
        PqN = "pq.n",
        /// Range reads; one thread.
        Rq1 = "rq.1",
        /// Range reads; `--threads` threads.
        RqN = "rq.n",
        /// Overwrites without sync; one thread.
        Owa1 = "owa.1",
        /// Overwrites without sync; `--threads` threads.
        OwaN = "owa.n",
    }
}

impl StepKind for PatternStep {
    fn loads(self) -> bool {
        self == PatternStep::Load
    }
    fn needs_data(self) -> bool {
        self != PatternStep::Load
    }
    fn concurrent(self) -> bool {
        self.name().ends_with(".n")
    }
    fn syncs(self) -> Option<bool> {
        use PatternStep::*;
        match self {
            Ows1 | OwsN => Some(true),
            Load | Owa1 | OwaN => Some(false),
            // The background writer's `writer_sync`; the rest only read.
            _ => None,
        }
    }
}

crate::named! {
    /// The pattern workload's operation kinds.
    pub enum PatternOp: "pattern operation" {
        /// A batch of `batch` inserts.
        InsertBatch = "insert_batch",
        /// One overwrite, synced on commit.
        OverwriteSync = "overwrite_sync",
        /// One overwrite without sync.
        Overwrite = "overwrite",
        /// One point read.
        PointRead = "point_read",
        /// One range read of `range` documents.
        RangeRead = "range_read",
    }
}

/// Parameters and defaults.
pub const PARAMS: &[ParamDef] = &[
    ParamDef {
        key: "docs",
        default: "200000",
        help: "documents loaded",
    },
    ParamDef {
        key: "key_len",
        default: "32",
        help: "key length in bytes (>= 16)",
    },
    ParamDef {
        key: "value_median",
        default: "512",
        help: "median value length in bytes",
    },
    ParamDef {
        key: "value_sd",
        default: "32",
        help: "standard deviation of the value length",
    },
    ParamDef {
        key: "compressibility",
        default: "50",
        help: "percent of each value that compresses away (the rest is random, fresh per value)",
    },
    ParamDef {
        key: "batch",
        default: "4096",
        help: "documents per load batch",
    },
    ParamDef {
        key: "load_threads",
        default: "1",
        help: "threads for the load",
    },
    ParamDef {
        key: "writer_rate",
        default: "1000",
        help: "background writer's documents/s in pqw and rqw",
    },
    ParamDef {
        key: "writer_sync",
        default: "false",
        help: "whether the background writer syncs each commit",
    },
    ParamDef {
        key: "range",
        default: "20",
        help: "documents per range read",
    },
    ParamDef {
        key: "distribution",
        default: "uniform",
        help: "key choice: uniform or zipfian",
    },
    ParamDef {
        key: "zipf_theta",
        default: "0.99",
        help: "zipfian exponent",
    },
];

/// The pattern workload's state for one engine.
pub struct Pattern {
    docs: u64,
    key_len: usize,
    values: ValueGen,
    batch: usize,
    load_threads: usize,
    writer_rate: f64,
    writer_sync: bool,
    range: usize,
    chooser: KeyChooser,
    live: Live,
    misses: AtomicU64,
    /// Retries after conflicts on a SQL engine, per operation.
    retries: super::sql::Retries,
}

impl Pattern {
    /// Reads parameters.
    pub fn new(p: &Params) -> Result<Pattern> {
        let docs = p.u64("docs")?;
        Live::check_room("docs", docs, 4)?;
        let key_len = p.u64("key_len")? as usize;
        if docs == 0 {
            bail!(crate::UsageError(
                "parameter 'docs' must be at least 1".into()
            ));
        }
        if key_len < 16 {
            bail!(crate::UsageError(
                "parameter 'key_len' must be at least 16 (keys are hashes)".into()
            ));
        }
        let c = p.f64("compressibility")?;
        if !(0.0..=100.0).contains(&c) {
            bail!(crate::UsageError(
                "parameter 'compressibility' is a percent, 0 to 100".into()
            ));
        }
        let dist = p.one_of(
            "distribution",
            &[Distribution::Uniform, Distribution::Zipfian],
            Distribution::name,
        )?;
        Ok(Pattern {
            retries: Default::default(),
            docs,
            key_len,
            values: ValueGen {
                median: p.f64("value_median")?,
                sd: p.f64("value_sd")?,
                compressibility: c,
            },
            batch: p.u64("batch")?.max(1) as usize,
            load_threads: p.u64("load_threads")?.max(1) as usize,
            writer_rate: p.f64("writer_rate")?,
            writer_sync: p.bool("writer_sync")?,
            range: p.u64("range")?.max(1) as usize,
            chooser: KeyChooser::new(dist, docs, p.f64("zipf_theta")?),
            live: Live::new(docs),
            misses: AtomicU64::new(0),
        })
    }
}

#[derive(Clone, Copy)]
enum Mode {
    Load { next: u64, end: u64 },
    Overwrite(Durability),
    Point,
    Range,
}

impl Mode {
    /// The operation kind a worker in this mode does.
    fn op(self) -> PatternOp {
        match self {
            Mode::Load { .. } => PatternOp::InsertBatch,
            Mode::Overwrite(Durability::Sync) => PatternOp::OverwriteSync,
            Mode::Overwrite(Durability::NoSync) => PatternOp::Overwrite,
            Mode::Point => PatternOp::PointRead,
            Mode::Range => PatternOp::RangeRead,
        }
    }
}

struct PatternWorker<'a> {
    wl: &'a Pattern,
    store: Box<dyn DocStore + 'a>,
    rng: Rng,
    mode: Mode,
    key: Vec<u8>,
    value: Vec<u8>,
    batch: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Worker for PatternWorker<'_> {
    fn op(&mut self) -> Result<Option<Done>> {
        let wl = self.wl;
        let kind = self.mode.op().index();
        match &mut self.mode {
            Mode::Load { next, end } => {
                if *next >= *end {
                    return Ok(None);
                }
                let n = (*end - *next).min(wl.batch as u64) as usize;
                self.batch.resize_with(n, Default::default);
                let mut written = 0;
                for (j, (k, v)) in self.batch.iter_mut().enumerate() {
                    let i = *next + j as u64;
                    doc_key(i, wl.key_len, k);
                    wl.values.fill(&mut self.rng, v);
                    written += (k.len() + v.len()) as u64;
                }
                self.store.insert_batch(&self.batch, Durability::NoSync)?;
                for (j, (k, v)) in self.batch.iter().enumerate() {
                    wl.live.set(*next + j as u64, (k.len() + v.len()) as u64);
                }
                *next += n as u64;
                Ok(Some(Done {
                    kind,
                    ops: n as u64,
                    written,
                }))
            }
            Mode::Overwrite(d) => {
                let i = wl.chooser.pick(&mut self.rng, wl.docs);
                doc_key(i, wl.key_len, &mut self.key);
                wl.values.fill(&mut self.rng, &mut self.value);
                self.store.write(&self.key, &self.value, *d)?;
                let b = (self.key.len() + self.value.len()) as u64;
                wl.live.set(i, b);
                Ok(Some(Done {
                    kind,
                    ops: 1,
                    written: b,
                }))
            }
            Mode::Point => {
                let i = wl.chooser.pick(&mut self.rng, wl.docs);
                doc_key(i, wl.key_len, &mut self.key);
                if self.store.read(&self.key)?.is_none() {
                    wl.misses.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Some(Done {
                    kind,
                    ops: 1,
                    written: 0,
                }))
            }
            Mode::Range => {
                let i = wl.chooser.pick(&mut self.rng, wl.docs);
                doc_key(i, wl.key_len, &mut self.key);
                let n = self.store.scan(&self.key, wl.range)?;
                Ok(Some(Done {
                    kind,
                    ops: n as u64,
                    written: 0,
                }))
            }
        }
    }
}

impl TypedWorkload for Pattern {
    type Step = PatternStep;

    fn tables(&self) -> Vec<String> {
        vec!["docs".into()]
    }

    fn plan<'a>(
        &'a self,
        step: PatternStep,
        engine: EngineRef<'a>,
        ctx: &StepCtx,
    ) -> Result<Planned<'a>> {
        use PatternStep as S;
        let threads = match step {
            S::Load => self.load_threads,
            S::Ows1 | S::Pqw1 | S::Rqw1 | S::Pq1 | S::Rq1 | S::Owa1 => 1,
            S::OwsN | S::PqwN | S::RqwN | S::PqN | S::RqN | S::OwaN => ctx.threads,
        };
        let mode = match step {
            S::Load => Mode::Load { next: 0, end: 0 },
            S::Ows1 | S::OwsN => Mode::Overwrite(Durability::Sync),
            S::Owa1 | S::OwaN => Mode::Overwrite(Durability::NoSync),
            S::Pqw1 | S::PqwN | S::Pq1 | S::PqN => Mode::Point,
            S::Rqw1 | S::RqwN | S::Rq1 | S::RqN => Mode::Range,
        };
        let writer = matches!(step, S::Pqw1 | S::PqwN | S::Rqw1 | S::RqwN);
        let spec = StepSpec {
            background: writer.then(|| Background {
                per_sec: self.writer_rate,
                catch_up: true,
                op_names: op_names(),
            }),
            ..ctx.spec(threads, op_names(), step.loads())
        };
        let seed = ctx.seed;
        let docs = self.docs;
        let share = ctx.share;
        let make = move |i: usize, mode: Mode, salt: u64| -> Result<PatternWorker<'a>> {
            let mode = match mode {
                Mode::Load { .. } => {
                    let (next, end) = share.part(docs, threads, i);
                    Mode::Load { next, end }
                }
                m => m,
            };
            Ok(PatternWorker {
                wl: self,
                store: docs_store(engine, "docs", &self.retries)?,
                rng: Rng::new(derive_seed(seed, &[salt, i as u64])),
                mode,
                key: Vec::new(),
                value: Vec::new(),
                batch: Vec::new(),
            })
        };
        let fg = Box::new(move |i: usize| -> Result<Box<dyn Worker + 'a>> {
            Ok(Box::new(make(i, mode, 0)?))
        });
        let wmode = Mode::Overwrite(Durability::from_sync(self.writer_sync));
        let bg: Option<Box<crate::driver::WorkerFactory<'a>>> = if writer {
            Some(Box::new(move |i: usize| -> Result<Box<dyn Worker + 'a>> {
                Ok(Box::new(make(i, wmode, 1)?))
            }))
        } else {
            None
        };
        Ok(Planned { spec, fg, bg })
    }

    fn live_bytes(&self) -> u64 {
        self.live.total()
    }

    fn live_rows(&self) -> Option<u64> {
        Some(self.live.count())
    }

    fn discard(&self, step: PatternStep) {
        // The retries too: `finish` takes them with the figures.
        let _ = self.retries.notes(self.figures(step));
    }

    fn finish(&self, step: PatternStep, _engine: EngineRef<'_>) -> Result<crate::StepNotes> {
        Ok(self.retries.notes(self.figures(step)))
    }

    fn figures(&self, _step: PatternStep) -> Vec<(String, f64)> {
        // A miss means a loaded document was not found: reported only when
        // it happens.
        let m = self.misses.swap(0, Ordering::Relaxed);
        if m == 0 {
            Vec::new()
        } else {
            vec![("misses".into(), m as f64)]
        }
    }
}
