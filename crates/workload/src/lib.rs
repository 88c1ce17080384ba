//! Workloads: each defines its logical operations (a Store trait), its data
//! and distributions, its steps, and its mappings onto engines. The runner
//! asks a workload to plan each step: a driver spec plus the workers that
//! do the step's operations on an engine.
//!
//! - `kv/` — `pattern` (the ForestDB-benchmark step pattern), `ycsb`
//!   (YCSB A–F) and `micro` (db_bench-style steps), all over [`kv::store::DocStore`].
//! - `linkbench/` — the social graph, with its own KV and SQL mappings.
//! - `insert/` — the insert benchmark (iibench), with its own KV and SQL
//!   mappings.

#![warn(missing_docs)]

// The crates below, under the module names the code has always used:
// `crate::driver` is the ampbench-driver crate (Cargo.toml lists them).
use ampbench_core::{UsageError, named, record, rng, share, signals};
use ampbench_driver as driver;
use ampbench_engine as engine;
use ampbench_probe as probe;

pub mod dist;
pub mod insert;
pub mod kv;
pub mod linkbench;
pub mod params;
pub mod step;

use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::driver::{Arrival, StepSpec, Stop, WorkerFactory};
use crate::engine::{Dialect, EngineRef};
pub use params::{ParamDef, Params};
pub use step::Step;

/// Driver settings from the command line that a workload applies to a step.
#[derive(Clone, Copy, Debug)]
pub struct StepCtx {
    /// `--threads`: threads for multi-threaded steps.
    pub threads: usize,
    /// `--warmup`.
    pub warmup: Duration,
    /// `--duration`.
    pub duration: Duration,
    /// `--interval`.
    pub interval: Duration,
    /// `--rate` as an arrival process (closed loop without it).
    pub arrival: Arrival,
    /// The step's seed (derived from the run seed and the step's position,
    /// the same for every engine; and from the client, with several).
    pub seed: u64,
    /// This client's share of the work (`--clients N --client K`).
    pub share: Share,
}

pub use crate::share::Share;

impl StepCtx {
    /// The driver spec of a step with no background writer. A `fill` step
    /// (a load) runs closed loop, without warm-up, until its workers run out
    /// of work; any other step uses the command line's warm-up, duration and
    /// arrival process.
    pub fn spec(&self, threads: usize, op_names: Vec<String>, fill: bool) -> StepSpec {
        StepSpec {
            threads,
            op_names,
            warmup: if fill { Duration::ZERO } else { self.warmup },
            stop: if fill {
                Stop::Exhausted
            } else {
                Stop::Duration(self.duration)
            },
            arrival: if fill { Arrival::Closed } else { self.arrival },
            interval: self.interval,
            background: None,
            seed: self.seed,
        }
    }
}

/// A planned step: how to drive it and who does its operations.
pub struct Planned<'a> {
    /// Driver settings.
    pub spec: StepSpec,
    /// Foreground workers.
    pub fg: Box<WorkerFactory<'a>>,
    /// Background writer, when the spec has one.
    pub bg: Option<Box<WorkerFactory<'a>>>,
}

/// What a workload's step enum says about each step.
pub trait StepKind: Copy {
    /// It loads the workload's data set: `--settle` waits for the engine's
    /// background work after it.
    fn loads(self) -> bool;
    /// It reads or changes data it does not load itself: a selection of
    /// such steps only gets the workload's load step first.
    fn needs_data(self) -> bool;
    /// It runs `--threads` threads: a `--threads 1,2,4` sweep runs it at
    /// every level.
    fn concurrent(self) -> bool;
    /// It can run again on the data the earlier steps left (reads, writes,
    /// request mixes; not a load or an index build): a `--storage
    /// fast-ssd,slow-ssd` sweep runs it at every class.
    fn repeatable(self) -> bool {
        !self.loads()
    }
    /// Whether its writes commit with a sync: Some when the step decides
    /// it, None when an engine's or server's own setting (or a
    /// parameter) does. The model's explanation weighs it.
    fn syncs(self) -> Option<bool> {
        None
    }
}

/// A workload instance, as the runner holds it: its data state lives
/// across the steps of one engine. Every workload implements it through
/// [`TypedWorkload`], against its own step enum.
pub trait Workload: Send + Sync {
    /// Tables the engine must open.
    fn tables(&self) -> Vec<String>;
    /// DDL creating the workload's tables on a SQL engine.
    fn sql_schema(&self, dialect: Dialect, table_options: &str) -> Vec<String>;
    /// Plans `step` on `engine`; a step of another workload is an error.
    fn plan<'a>(&'a self, step: Step, engine: EngineRef<'a>, ctx: &StepCtx) -> Result<Planned<'a>>;
    /// Live logical bytes (user keys + values) now.
    fn live_bytes(&self) -> u64;
    /// Live rows (documents, records) now, when the workload counts them:
    /// with [`live_bytes`](Workload::live_bytes), the average row the
    /// model's predictions use.
    fn live_rows(&self) -> Option<u64>;
    /// Workload-specific figures after a step (e.g. misses), reset by it;
    /// none for a step of another workload.
    fn figures(&self, step: Step) -> Vec<(String, f64)>;
    /// True when the workload makes multi-key read-modify-write changes,
    /// so engines open with transactions (see `OpenSpec::transactions`).
    fn transactions(&self) -> bool;
    /// Tells the workload which steps will run, with how many threads
    /// (`--threads`; the insert benchmark's clients) and as which of the
    /// run's clients (`--clients`), before any does.
    fn configure(&mut self, steps: &[Step], threads: usize, share: Share);
    /// Drops what driving `step` has gathered so far (after a warm-up,
    /// whose operations are not the step's), without the checks
    /// [`finish`](Workload::finish) runs; nothing for a step of another
    /// workload.
    fn discard(&self, step: Step);
    /// After a step: its workload figures and lines to print (e.g. a
    /// consistency check).
    fn finish(&self, step: Step, engine: EngineRef<'_>) -> Result<StepNotes>;
}

/// A workload as each is written: against its own step enum, so no
/// workload names [`Step`], the union of them all: only `step.rs` names
/// every workload's steps (and makes each a `Step`). Each method is
/// [`Workload`]'s, for its own steps; the impl below hands it only those.
pub trait TypedWorkload: Send + Sync {
    /// The workload's own steps (step.rs makes each one a [`Step`]).
    type Step: StepKind;
    /// See [`Workload::tables`].
    fn tables(&self) -> Vec<String>;
    /// See [`Workload::sql_schema`]; defaults to each table's key-value
    /// schema.
    fn sql_schema(&self, dialect: Dialect, table_options: &str) -> Vec<String> {
        self.tables()
            .iter()
            .flat_map(|t| kv::sql::schema(t, dialect, table_options))
            .collect()
    }
    /// See [`Workload::plan`].
    fn plan<'a>(
        &'a self,
        step: Self::Step,
        engine: EngineRef<'a>,
        ctx: &StepCtx,
    ) -> Result<Planned<'a>>;
    /// See [`Workload::live_bytes`].
    fn live_bytes(&self) -> u64;
    /// See [`Workload::live_rows`]; defaults to not counted.
    fn live_rows(&self) -> Option<u64> {
        None
    }
    /// See [`Workload::figures`]; defaults to none.
    fn figures(&self, _step: Self::Step) -> Vec<(String, f64)> {
        Vec::new()
    }
    /// See [`Workload::transactions`]; defaults to false.
    fn transactions(&self) -> bool {
        false
    }
    /// See [`Workload::configure`]: `steps` are the run's steps.
    fn configure(&mut self, _steps: &[Self::Step], _threads: usize, _share: Share) {}
    /// See [`Workload::discard`]; defaults to taking
    /// [`figures`](TypedWorkload::figures), which resets them.
    fn discard(&self, step: Self::Step) {
        let _ = self.figures(step);
    }
    /// See [`Workload::finish`]; defaults to
    /// [`figures`](TypedWorkload::figures).
    fn finish(&self, step: Self::Step, _engine: EngineRef<'_>) -> Result<StepNotes> {
        Ok(StepNotes {
            figures: self.figures(step),
            lines: Vec::new(),
        })
    }
}

impl<W> Workload for W
where
    W: TypedWorkload,
    W::Step: Into<Step> + TryFrom<Step, Error = anyhow::Error>,
{
    fn tables(&self) -> Vec<String> {
        TypedWorkload::tables(self)
    }
    fn sql_schema(&self, dialect: Dialect, table_options: &str) -> Vec<String> {
        TypedWorkload::sql_schema(self, dialect, table_options)
    }
    fn plan<'a>(&'a self, step: Step, engine: EngineRef<'a>, ctx: &StepCtx) -> Result<Planned<'a>> {
        TypedWorkload::plan(self, step.try_into()?, engine, ctx)
    }
    fn live_bytes(&self) -> u64 {
        TypedWorkload::live_bytes(self)
    }
    fn live_rows(&self) -> Option<u64> {
        TypedWorkload::live_rows(self)
    }
    fn figures(&self, step: Step) -> Vec<(String, f64)> {
        W::Step::try_from(step).map_or_else(|_| Vec::new(), |s| TypedWorkload::figures(self, s))
    }
    fn transactions(&self) -> bool {
        TypedWorkload::transactions(self)
    }
    fn configure(&mut self, steps: &[Step], threads: usize, share: Share) {
        let own: Vec<W::Step> = steps.iter().filter_map(|s| (*s).try_into().ok()).collect();
        TypedWorkload::configure(self, &own, threads, share)
    }
    fn discard(&self, step: Step) {
        if let Ok(s) = W::Step::try_from(step) {
            TypedWorkload::discard(self, s)
        }
    }
    fn finish(&self, step: Step, engine: EngineRef<'_>) -> Result<StepNotes> {
        TypedWorkload::finish(self, step.try_into()?, engine)
    }
}

pub use crate::record::StepNotes;

/// The workloads, by command-line name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// The ForestDB-benchmark step pattern (13 steps).
    Pattern,
    /// YCSB core workloads A–F after a load.
    Ycsb,
    /// db_bench-style steps.
    Micro,
    /// LinkBench: the social graph (load, index, request).
    Linkbench,
    /// The insert benchmark: index maintenance, then queries with a writer.
    Insert,
}

impl WorkloadKind {
    /// Every workload.
    pub const ALL: &'static [WorkloadKind] = &[
        WorkloadKind::Pattern,
        WorkloadKind::Ycsb,
        WorkloadKind::Micro,
        WorkloadKind::Linkbench,
        WorkloadKind::Insert,
    ];

    /// Command-line name.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::Pattern => "pattern",
            WorkloadKind::Ycsb => "ycsb",
            WorkloadKind::Micro => "micro",
            WorkloadKind::Linkbench => "linkbench",
            WorkloadKind::Insert => "insert",
        }
    }

    /// One line on what it is.
    pub fn about(self) -> &'static str {
        match self {
            WorkloadKind::Pattern => {
                "ForestDB-benchmark step pattern: load, sync/async overwrites, point/range reads with and without a writer, 1 vs N threads"
            }
            WorkloadKind::Ycsb => {
                "YCSB core workloads A-F (10 x 100-byte fields, zipfian) after a load"
            }
            WorkloadKind::Micro => {
                "db_bench-style steps with db_bench's defaults (16-byte keys, 100-byte values, compression ratio 0.5)"
            }
            WorkloadKind::Linkbench => {
                "LinkBench social graph: load nodes/links/counts, build id1_type, request mix (2011 or 2017), consistency check"
            }
            WorkloadKind::Insert => {
                "insert benchmark (iibench): PK-order load, build 3 secondary indexes, inserts with deletes, debt reduction, range/point queries with a writer"
            }
        }
    }

    /// Parameters with defaults.
    pub fn params(self) -> &'static [ParamDef] {
        match self {
            WorkloadKind::Pattern => kv::pattern::PARAMS,
            WorkloadKind::Ycsb => kv::ycsb::PARAMS,
            WorkloadKind::Micro => kv::micro::PARAMS,
            WorkloadKind::Linkbench => linkbench::PARAMS,
            WorkloadKind::Insert => insert::PARAMS,
        }
    }

    /// The logical bytes (user keys + values) its load writes, from the
    /// parameters, where that is a product of them (not for LinkBench,
    /// whose sizes come from its distributions).
    pub fn expected_bytes(self, p: &Params) -> Result<Option<u64>, crate::UsageError> {
        Ok(match self {
            WorkloadKind::Pattern => {
                Some(p.u64("docs")? * (p.u64("key_len")? + p.f64("value_median")?.max(0.0) as u64))
            }
            // Keys are `user` and a number: about 23 bytes.
            WorkloadKind::Ycsb => {
                Some(p.u64("recordcount")? * (23 + p.u64("fieldcount")? * p.u64("fieldlength")?))
            }
            WorkloadKind::Micro => {
                Some(p.u64("num")? * (p.u64("key_size")? + p.u64("value_size")?))
            }
            // Its tables are per client: the size depends on --threads.
            WorkloadKind::Linkbench | WorkloadKind::Insert => None,
        })
    }

    /// Builds a fresh instance (one per engine).
    pub fn build(self, p: &Params) -> Result<Box<dyn Workload>> {
        Ok(match self {
            WorkloadKind::Pattern => Box::new(kv::pattern::Pattern::new(p)?),
            WorkloadKind::Ycsb => Box::new(kv::ycsb::Ycsb::new(p)?),
            WorkloadKind::Micro => Box::new(kv::micro::Micro::new(p)?),
            WorkloadKind::Linkbench => Box::new(linkbench::Linkbench::new(p)?),
            WorkloadKind::Insert => Box::new(insert::Insert::new(p)?),
        })
    }
}
