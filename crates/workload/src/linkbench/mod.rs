//! LinkBench: the social-graph workload behind most of the seeds' results.
//! What defines the data and the operation mix follows the reference client
//! (see `docs/linkbench.md`); its measurement bugs are not copied: history
//! queries are timed like every other operation, and under `--rate`
//! latency counts from the intended start.
//!
//! Steps: `load` (one node loader and `loaders` link loaders over chunks of
//! 2048 ids taken in reverse order; out-degree from the 2011 `nlinks`
//! distribution with the reference's per-type split; links, then counts,
//! in batches of 1024), `index` (create id1_type, timed, when the tables
//! were loaded with the primary key only, as Mark Callaghan runs it), and
//! `request` (the 2011 or 2017 mix; a consistency check follows).
//! "ops" of the load is node inserts, as in the seeds.

mod conns;
mod ddl;
pub mod dist;
pub mod kv;
mod load;
mod notes;
pub mod outdegree;
mod payload;
#[cfg(test)]
mod pin_tests;
mod request;
pub mod sql;
pub mod store;

pub use payload::Motif;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Result, bail};

use crate::driver::{StepSpec, Worker};
use crate::engine::{Dialect, Durability, EngineRef, Transactions};
use crate::rng::{Rng, derive_seed};
use crate::{ParamDef, Params, Planned, StepCtx, StepKind, StepNotes, TypedWorkload};
pub use dist::Variant;
use dist::{Access, Cdf, Degrees};
use notes::{Costs, OpTotals, Window};
use store::LinkStore;

crate::named! {
    /// LinkBench's steps, in run order.
    pub enum LinkbenchStep: "linkbench step" {
        /// Load nodes, links and counts.
        Load = "load",
        /// Build the id1_type index on tables loaded with the primary key only.
        Index = "index",
        /// The request mix; a consistency check follows.
        Request = "request",
    }
}

impl StepKind for LinkbenchStep {
    fn loads(self) -> bool {
        self == LinkbenchStep::Load
    }
    fn needs_data(self) -> bool {
        self != LinkbenchStep::Load
    }
    fn concurrent(self) -> bool {
        self == LinkbenchStep::Request
    }
    fn repeatable(self) -> bool {
        self == LinkbenchStep::Request
    }
}

/// Parameters and defaults (LinkBench's names where it has one).
pub const PARAMS: &[ParamDef] = &[
    ParamDef {
        key: "maxid1",
        default: "20001",
        help: "ids 1..maxid1 (exclusive) are loaded (reference: 10000001)",
    },
    ParamDef {
        key: "link_type_count",
        default: "2",
        help: "link types, 1 to 1000 (the loader visits every type of every id)",
    },
    ParamDef {
        key: "loaders",
        default: "1",
        help: "link loader threads (plus one node loader)",
    },
    ParamDef {
        key: "variant",
        default: "fork",
        help: "fork (the maintained fork: >= 1 link per type, new id2s over the whole range, its SQL) or original (facebookarchive/linkbench); docs/linkbench.md lists the differences",
    },
    ParamDef {
        key: "mix",
        default: "2011",
        help: "operation mix: 2011 (FBWorkload.properties) or 2017 (newer production numbers)",
    },
    ParamDef {
        key: "distribution_file",
        default: "",
        help: "a LinkBench Distribution.dat whose nlinks section replaces the built-in 2011 fit",
    },
    ParamDef {
        key: "link_datasize",
        default: "",
        help: "median link payload bytes (default: 8 for mix 2011, 23 for 2017)",
    },
    ParamDef {
        key: "node_datasize",
        default: "",
        help: "median node payload bytes (default: 128 for mix 2011, 168 for 2017)",
    },
    ParamDef {
        key: "getlinklist_history",
        default: "0.3",
        help: "percent of GET_LINKS_LIST that are history queries",
    },
    ParamDef {
        key: "sync",
        default: "true",
        help: "request-phase writes durable at commit",
    },
    ParamDef {
        key: "check",
        default: "true",
        help: "check every count against its links after each request step (false: skip; on MyRocks larger than memory it took over 12 minutes)",
    },
];

crate::named! {
    /// LinkBench's operation kinds: the request mix's ten in the mix's
    /// order, the history query, then the load and index steps' own.
    pub enum LinkOp: "linkbench operation" {
        /// Add (or update, or revive) a link and its count.
        AddLink = "ADD_LINK",
        /// Hide a visible link and decrement its count.
        DeleteLink = "DELETE_LINK",
        /// Update a link, inserting it when missing (the original client
        /// runs it as ADD_LINK).
        UpdateLink = "UPDATE_LINK",
        /// Read a count.
        CountLink = "COUNT_LINK",
        /// Read some links by id2.
        MultigetLink = "MULTIGET_LINK",
        /// The newest visible links of (id1, type).
        GetLinksList = "GET_LINKS_LIST",
        /// Insert a node.
        AddNode = "ADD_NODE",
        /// Update a node.
        UpdateNode = "UPDATE_NODE",
        /// Delete a node.
        DeleteNode = "DELETE_NODE",
        /// Read a node.
        GetNode = "GET_NODE",
        /// A GET_LINKS_LIST paging back through a long list.
        GetLinksListHistory = "GET_LINKS_LIST_HISTORY",
        /// A batch of node inserts (load).
        LoadNodesBulk = "LOAD_NODES_BULK",
        /// A chunk of link and count inserts (load).
        LoadLinksBulk = "LOAD_LINKS_BULK",
        /// Building id1_type (index).
        CreateIndex = "CREATE_INDEX",
    }
}

/// Every operation kind's name, in [`LinkOp`] order.
fn op_names() -> Vec<String> {
    LinkOp::names().into_iter().map(String::from).collect()
}

crate::named! {
    /// The request mixes.
    pub enum Mix: "linkbench mix" {
        /// FBWorkload.properties of the reference (2011).
        M2011 = "2011",
        /// Newer production numbers (2017).
        M2017 = "2017",
    }
}

/// A mix's percentages, for the first ten [`LinkOp`]s in order.
pub fn mix(m: Mix) -> [f64; 10] {
    match m {
        Mix::M2011 => [
            8.9886601, 2.9907664, 8.0122125, 4.8863567, 0.5261142, 50.7119145, 2.5732789, 7.366437,
            1.0115914, 12.9326683,
        ],
        Mix::M2017 => [
            5.35038, 0.98401, 4.75589, 4.27898, 12.14725, 22.57039, 2.61198, 3.06256, 0.25166,
            43.9869,
        ],
    }
}

/// Draws an operation from a mix by cumulative thresholds on U[0, 100).
pub fn choose(m: &[f64; 10], r: &mut Rng) -> LinkOp {
    let u = r.f64() * 100.0;
    let mut acc = 0.0;
    for (op, p) in LinkOp::ALL.iter().zip(m) {
        acc += p;
        if u < acc {
            return *op;
        }
    }
    LinkOp::GetNode
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Access distributions of the request phase, built on first use (ζ(n) is
/// O(n) to compute).
pub(crate) struct Accesses {
    pub(crate) uncorr: Access,
    pub(crate) read_corr: Access,
    pub(crate) write_corr: Access,
    pub(crate) node_read: Access,
    pub(crate) node_update: Access,
    pub(crate) node_delete: Access,
}

impl Accesses {
    /// A link read's id1: 99.5% the uncorrelated Zipf(0.8), 0.5% by
    /// out-degree rank (`read_uncorr_blend`).
    pub(crate) fn link_read(&self, r: &mut Rng) -> u64 {
        if r.chance(0.995) {
            self.uncorr.pick(r)
        } else {
            self.read_corr.pick(r)
        }
    }
    /// A link write's id1: the uncorrelated read distribution 99.5% of the
    /// time (the reference's config key typo, `read_uncorr_` for
    /// `write_uncorr_`), Zipf(0.741) by out-degree rank otherwise.
    pub(crate) fn link_write(&self, r: &mut Rng) -> u64 {
        if r.chance(0.995) {
            self.uncorr.pick(r)
        } else {
            self.write_corr.pick(r)
        }
    }
}

/// The LinkBench workload's state for one engine.
pub struct Linkbench {
    start: u64,
    n: u64,
    variant: Variant,
    types: u64,
    loaders: usize,
    mix: [f64; 10],
    link_median: f64,
    node_median: f64,
    history_pct: f64,
    durability: Durability,
    degrees: Degrees,
    index_step: bool,
    /// Run the consistency check after each request step (`-p check`).
    check: bool,
    with_index: AtomicBool,
    stripes: store::Stripes,
    next_chunk: AtomicU64,
    next_node: AtomicU64,
    /// The run's clients: new node ids are interleaved between them.
    clients: Mutex<crate::Share>,
    nodes_loaded: AtomicU64,
    links_loaded: AtomicU64,
    logical: AtomicU64,
    accesses: OnceLock<Accesses>,
    rows: Mutex<Vec<notes::RowCounts>>,
    multiget: Mutex<(u64, u64)>,
    costs: Mutex<Costs>,
    counts_loaded: AtomicU64,
    window: Mutex<Option<Window>>,
}

/// Ids per loader chunk.
const CHUNK: u64 = 2048;

impl Linkbench {
    /// Reads parameters.
    pub fn new(p: &Params) -> Result<Linkbench> {
        let maxid1 = p.u64("maxid1")?;
        if maxid1 < 2 {
            bail!(crate::UsageError(
                "parameter 'maxid1' must be at least 2".into()
            ));
        }
        let mix_name = p.one_of("mix", Mix::ALL, Mix::name)?;
        let m = mix(mix_name);
        let cdf = match p.str("distribution_file") {
            "" => Cdf::builtin_2011(),
            f => Cdf::from_file(Path::new(f))
                .map_err(|e| crate::UsageError(format!("parameter 'distribution_file': {e:#}")))?,
        };
        let median = |key: &str, d2011: f64, d2017: f64| -> Result<f64> {
            Ok(match p.str(key) {
                "" if mix_name == Mix::M2017 => d2017,
                "" => d2011,
                _ => p.f64(key)?,
            })
        };
        let n = maxid1 - 1;
        // The loader visits every (id1, type): a count in the billions
        // makes one load operation run for hours, deaf to Ctrl-C.
        let types = p.u64("link_type_count")?;
        if !(1..=1000).contains(&types) {
            bail!(crate::UsageError(format!(
                "parameter 'link_type_count={types}': expected 1 to 1000"
            )));
        }
        let variant = p.one_of("variant", Variant::ALL, Variant::name)?;
        Ok(Linkbench {
            start: 1,
            n,
            variant,
            types,
            loaders: p.u64("loaders")?.max(1) as usize,
            mix: m,
            link_median: median("link_datasize", 8.0, 23.0)?,
            node_median: median("node_datasize", 128.0, 168.0)?,
            history_pct: p.f64("getlinklist_history")?,
            durability: Durability::from_sync(p.bool("sync")?),
            check: p.bool("check")?,
            degrees: Degrees::new(cdf, 1, n, variant),
            index_step: false,
            with_index: AtomicBool::new(true),
            stripes: store::Stripes::default(),
            next_chunk: AtomicU64::new(n.div_ceil(CHUNK)),
            next_node: AtomicU64::new(maxid1),
            clients: Mutex::new(Default::default()),
            nodes_loaded: AtomicU64::new(0),
            links_loaded: AtomicU64::new(0),
            logical: AtomicU64::new(0),
            accesses: OnceLock::new(),
            rows: Mutex::new(Vec::new()),
            multiget: Mutex::new((0, 0)),
            costs: Mutex::new([OpTotals::default(); LinkOp::ALL.len()]),
            counts_loaded: AtomicU64::new(0),
            window: Mutex::new(None),
        })
    }

    /// A store for one worker.
    pub fn store<'a>(&'a self, engine: EngineRef<'a>) -> Result<Box<dyn LinkStore + 'a>> {
        Ok(match engine {
            EngineRef::Kv(e) => Box::new(kv::KvLinks::new(
                e,
                &self.stripes,
                self.with_index.load(Ordering::SeqCst),
                self.durability,
            )?),
            EngineRef::Sql(e) => Box::new(sql::SqlLinks::new(
                e.connect()?,
                e.connect()?,
                e.dialect(),
                self.variant,
                self.durability,
            )?),
        })
    }

    /// The id of a node added by a request: the next of this client's,
    /// interleaved with the other clients' above `maxid1`.
    pub(super) fn new_node_id(&self) -> u64 {
        let j = self.next_node.fetch_add(1, Ordering::Relaxed);
        let s = *self.clients.lock().unwrap_or_else(|p| p.into_inner());
        let base = self.start + self.n;
        base + (j - base) * s.clients.max(1) as u64 + s.client as u64
    }

    fn accesses(&self) -> &Accesses {
        self.accesses.get_or_init(|| Accesses {
            uncorr: Access::zipf(0.8, dist::UNCORR_SEED, self.start, self.n),
            read_corr: Access::correlated(0.8, &self.degrees),
            write_corr: Access::correlated(0.741, &self.degrees),
            node_read: Access::zipf(0.625, dist::NODE_SEED, self.start, self.n),
            node_update: Access::zipf(0.606, dist::NODE_SEED, self.start, self.n),
            node_delete: Access::uniform(self.start, self.n),
        })
    }
}

impl TypedWorkload for Linkbench {
    type Step = LinkbenchStep;

    fn tables(&self) -> Vec<String> {
        kv::TABLES.iter().map(|s| s.to_string()).collect()
    }

    fn transactions(&self) -> bool {
        true
    }

    fn configure(&mut self, steps: &[LinkbenchStep], _threads: usize, _share: crate::Share) {
        self.index_step = steps.contains(&LinkbenchStep::Index);
        self.with_index.store(!self.index_step, Ordering::SeqCst);
    }

    fn sql_schema(&self, dialect: Dialect, table_options: &str) -> Vec<String> {
        sql::schema(dialect, table_options, !self.index_step)
    }

    fn plan<'a>(
        &'a self,
        step: LinkbenchStep,
        engine: EngineRef<'a>,
        ctx: &StepCtx,
    ) -> Result<Planned<'a>> {
        let seed = ctx.seed;
        let share = ctx.share;
        let (spec, fg): (StepSpec, Box<crate::driver::WorkerFactory<'a>>) = match step {
            LinkbenchStep::Load => {
                let threads = self.loaders + 1;
                // Each client loads whole chunks of the id range, its nodes
                // and their links (`--clients`).
                let (c_lo, c_hi) = ctx.share.mine(self.n.div_ceil(CHUNK));
                self.next_chunk.store(c_hi, Ordering::SeqCst);
                let span = (c_lo, (self.start + c_hi * CHUNK).min(self.start + self.n));
                let first_node = self.start + c_lo * CHUNK;
                (
                    ctx.spec(threads, op_names(), true),
                    Box::new(move |i: usize| -> Result<Box<dyn Worker + 'a>> {
                        let mut rng = Rng::new(derive_seed(seed, &[0, i as u64]));
                        let motif = if i == 0 {
                            Motif::new(&mut rng, 50, 220, 0.63)
                        } else {
                            Motif::new(&mut rng, 32, 100, 0.225)
                        };
                        Ok(Box::new(load::Loader {
                            wl: self,
                            store: self.store(engine)?,
                            rng,
                            nodes: (i == 0).then_some(first_node),
                            span,
                            motif,
                            links: Vec::new(),
                            used: 0,
                            node_buf: Vec::new(),
                            counts: Vec::new(),
                        }))
                    }),
                )
            }
            LinkbenchStep::Index => (
                ctx.spec(1, op_names(), true),
                Box::new(move |_i: usize| -> Result<Box<dyn Worker + 'a>> {
                    if !self.index_step {
                        bail!(
                            "linkbench: the index step needs the tables loaded without id1_type (include 'index' in --steps)"
                        );
                    }
                    // One index for every client's rows: client 0 builds
                    // it, the others wait for it at the step's end.
                    let w = load::Indexer {
                        store: self.store(engine)?,
                        done: share.client != 0,
                    };
                    self.with_index.store(true, Ordering::SeqCst);
                    Ok(Box::new(w))
                }),
            ),
            LinkbenchStep::Request => {
                if let EngineRef::Sql(e) = engine {
                    let server = notes::server_traffic(&mut *e.connect()?, e.dialect())?;
                    let client = crate::probe::process::read(std::process::id());
                    *self.window.lock().unwrap_or_else(|p| p.into_inner()) =
                        client.map(|client| Window { client, server });
                }
                let acc = self.accesses();
                *self.clients.lock().unwrap_or_else(|p| p.into_inner()) = ctx.share;
                let start = std::time::Instant::now() + ctx.warmup;
                let measured = (start, start + ctx.duration, ctx.interval);
                (
                    ctx.spec(ctx.threads, op_names(), false),
                    Box::new(move |i: usize| -> Result<Box<dyn Worker + 'a>> {
                        let mut rng = Rng::new(derive_seed(seed, &[1, i as u64]));
                        let link_motif = Motif::new(&mut rng, 32, 100, 0.225);
                        let node_motif = Motif::new(&mut rng, 50, 220, 0.63);
                        Ok(Box::new(request::Requester {
                            wl: self,
                            acc,
                            store: self.store(engine)?,
                            rng,
                            link_motif,
                            node_motif,
                            history: Default::default(),
                            rows: None,
                            measured,
                            found: (0, 0),
                            costs: [OpTotals::default(); LinkOp::ALL.len()],
                            id2s: Vec::new(),
                            link: store::Link::default(),
                            node: store::Node::default(),
                        }))
                    }),
                )
            }
        };
        Ok(Planned { spec, fg, bg: None })
    }

    fn live_bytes(&self) -> u64 {
        self.logical.load(Ordering::Relaxed)
    }

    fn live_rows(&self) -> Option<u64> {
        // The load's rows; requests add and delete about as many links.
        Some(
            self.nodes_loaded.load(Ordering::Relaxed)
                + self.links_loaded.load(Ordering::Relaxed)
                + self.counts_loaded.load(Ordering::Relaxed),
        )
    }

    fn discard(&self, _step: LinkbenchStep) {
        // What a request step's workers hand over as they end, and the
        // client's window: the measured phase's plan opens a new one.
        self.rows.lock().unwrap_or_else(|p| p.into_inner()).clear();
        *self.costs.lock().unwrap_or_else(|p| p.into_inner()) = Costs::default();
        *self.multiget.lock().unwrap_or_else(|p| p.into_inner()) = (0, 0);
        *self.window.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    fn finish(&self, step: LinkbenchStep, engine: EngineRef<'_>) -> Result<StepNotes> {
        let mut notes = StepNotes::default();
        match step {
            LinkbenchStep::Load => {
                let nodes = self.nodes_loaded.load(Ordering::Relaxed);
                let links = self.links_loaded.load(Ordering::Relaxed);
                let counts = self.counts_loaded.load(Ordering::Relaxed);
                let per = |x: u64| {
                    if nodes > 0 {
                        x as f64 / nodes as f64
                    } else {
                        0.0
                    }
                };
                notes.figures = vec![
                    ("nodes_loaded".into(), nodes as f64),
                    ("links_loaded".into(), links as f64),
                    ("counts_loaded".into(), counts as f64),
                    ("links_per_node".into(), per(links)),
                    ("counts_per_node".into(), per(counts)),
                ];
                notes.lines.push(format!(
                    "loaded {nodes} nodes, {links} links, {counts} counts: {:.2} links and {:.2} counts per node ({} variant)",
                    per(links),
                    per(counts),
                    self.variant
                ));
                if self.index_step {
                    notes.lines.push(
                        "loaded without id1_type, built by the index step (as Mark Callaghan runs it); the reference client loads with it, so this load time is not comparable with its".into(),
                    );
                }
            }
            LinkbenchStep::Request => self.request_notes(engine, &mut notes)?,
            LinkbenchStep::Index => {}
        }
        Ok(notes)
    }
}

/// How a link and its count are changed together on `engine`.
pub fn concurrency(engine: EngineRef<'_>) -> String {
    match engine {
        EngineRef::Sql(e) => format!(
            "{} transactions (deadlocks, lock-wait timeouts, serialization failures and cluster certification conflicts retried)",
            e.kind()
        ),
        EngineRef::Kv(e) => match e.transactions() {
            Transactions::None => format!(
                "harness lock stripes per (id1, link_type): {} has no transactions",
                e.kind()
            ),
            t => format!("{} transactions, {}", e.kind(), t.describe()),
        },
    }
}

/// Operation mix draws, for tests: percent per operation kind.
pub fn mix_shares(m: Mix, draws: usize, seed: u64) -> HashMap<LinkOp, f64> {
    let p = mix(m);
    let mut r = Rng::new(seed);
    let mut c: HashMap<LinkOp, u64> = HashMap::new();
    for _ in 0..draws {
        *c.entry(choose(&p, &mut r)).or_default() += 1;
    }
    c.into_iter()
        .map(|(k, v)| (k, 100.0 * v as f64 / draws as f64))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_types_are_bounded() {
        let with = |v: &str| {
            let p =
                Params::new("linkbench", PARAMS, &[("link_type_count".into(), v.into())]).unwrap();
            Linkbench::new(&p)
                .map(|w| w.types)
                .map_err(|e| e.to_string())
        };
        assert_eq!(with("1"), Ok(1));
        assert_eq!(with("1000"), Ok(1000));
        for bad in ["0", "1001", "99999999999"] {
            let e = with(bad).unwrap_err();
            assert!(
                e.contains("'link_type_count=") && e.contains("1 to 1000"),
                "{e}"
            );
        }
    }

    #[test]
    fn mixes_sum_to_100_and_draws_match_within_half_a_point() {
        for name in Mix::ALL {
            let m = mix(*name);
            assert!((m.iter().sum::<f64>() - 100.0).abs() < 1e-4, "{name}");
            let shares = mix_shares(*name, 100_000, 9);
            for (op, p) in LinkOp::ALL.iter().zip(m) {
                let got = shares.get(op).copied().unwrap_or(0.0);
                assert!((got - p).abs() < 0.5, "{name} {op}: {got:.2} vs {p}");
            }
        }
    }

    #[test]
    fn motif_payloads_compress_like_the_reference() {
        let mut r = Rng::new(1);
        let m = Motif::new(&mut r, 32, 100, 0.225);
        let data: Vec<u8> = (0..200).flat_map(|_| m.fill(&mut r, 1000)).collect();
        assert!(data.iter().all(|b| (32..=100).contains(b)));
        let z = lz4_flex::compress(&data);
        // Mostly copies of one 512-byte motif: a compressor saves much.
        assert!(z.len() < data.len() / 2, "{} of {}", z.len(), data.len());
    }
}
