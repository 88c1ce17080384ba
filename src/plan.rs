//! Plan files: a run's settings as TOML (`ampbench run PLAN.toml`). Every
//! key is optional; a flag given on the command line overrides the plan's
//! value; unknown keys are an error naming them. `plans/template.toml`
//! lists every key with its default.

use std::collections::BTreeMap;

use crate::units::parse_secs;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;

/// `threads = 4` or `threads = [1, 2, 4, 8]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Threads {
    /// One level.
    One(usize),
    /// A sweep.
    Many(Vec<usize>),
}

/// `bound = "io"` or `bound = ["cache", "io"]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Bounds {
    /// One corner.
    One(crate::names::Bound),
    /// Several, one run each.
    Many(Vec<crate::names::Bound>),
}

impl Bounds {
    /// The corners as a list.
    pub fn into_vec(self) -> Vec<crate::names::Bound> {
        match self {
            Bounds::One(b) => vec![b],
            Bounds::Many(v) => v,
        }
    }
}

/// `storage = "slow-ssd"` or `storage = ["fast-ssd", "disk-array"]`, as
/// `--storage` takes them (checked there).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Classes {
    /// One class.
    One(String),
    /// A sweep.
    Many(Vec<String>),
}

impl Classes {
    /// The classes as a list.
    pub fn into_vec(self) -> Vec<String> {
        match self {
            Classes::One(c) => vec![c],
            Classes::Many(v) => v,
        }
    }
}

/// The default benchmark's plan (`ampbench run` with no plan file,
/// workload or engine), shipped as `plans/default.toml`.
pub const DEFAULT_RUN: &str = include_str!("../plans/default.toml");

/// The seed plans shipped in `plans/seeds/` (file name, contents): each
/// reproduces a seed post and carries its published figures (`[post]`).
pub const SEED_PLANS: &[(&str, &str)] = &[
    (
        "000-btree-vs-lsm.toml",
        include_str!("../plans/seeds/000-btree-vs-lsm.toml"),
    ),
    (
        "001-forestdb-pattern.toml",
        include_str!("../plans/seeds/001-forestdb-pattern.toml"),
    ),
    (
        "001-insert-larger-than-memory.toml",
        include_str!("../plans/seeds/001-insert-larger-than-memory.toml"),
    ),
    (
        "002-linkbench-rocksdb-wiredtiger.toml",
        include_str!("../plans/seeds/002-linkbench-rocksdb-wiredtiger.toml"),
    ),
    (
        "003-myrocks-vs-innodb-storage.toml",
        include_str!("../plans/seeds/003-myrocks-vs-innodb-storage.toml"),
    ),
    (
        "004-compaction-pri.toml",
        include_str!("../plans/seeds/004-compaction-pri.toml"),
    ),
];

/// A plan file's contents.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Workload name.
    pub workload: Option<String>,
    /// Engine names.
    pub engines: Option<Vec<String>>,
    /// Steps.
    pub steps: Option<Vec<String>>,
    /// Threads for multi-threaded steps: a number, or a list to sweep.
    pub threads: Option<Threads>,
    /// Warm-up: seconds, or a string with a unit (`"30s"`).
    #[serde(default, deserialize_with = "secs")]
    pub warmup: Option<f64>,
    /// Measured time per timed step: seconds, or `"30m"`, `"6h"`.
    #[serde(default, deserialize_with = "secs")]
    pub duration: Option<f64>,
    /// Time between samples: seconds, or a string with a unit.
    #[serde(default, deserialize_with = "secs")]
    pub interval: Option<f64>,
    /// Report steps in slices of this length: seconds or `"1h"`.
    #[serde(default, deserialize_with = "secs")]
    pub slice: Option<f64>,
    /// Fixed total arrival rate, ops/s.
    pub rate: Option<f64>,
    /// `poisson` or `uniform`.
    pub arrival: Option<String>,
    /// Run seed.
    pub seed: Option<u64>,
    /// Engine cache size.
    pub cache: Option<String>,
    /// Results file.
    pub results: Option<String>,
    /// Parent of data directories.
    pub dir: Option<String>,
    /// Keep data directories.
    pub keep: Option<bool>,
    /// Settle after loads.
    pub settle: Option<bool>,
    /// How clients reach server engines.
    pub transport: Option<crate::engine::Transport>,
    /// The C allocator under the engines.
    pub allocator: Option<crate::setup::allocator::Allocator>,
    /// A replication log on the servers.
    pub replication_log: Option<bool>,
    /// How long a server may take to answer.
    #[serde(default, deserialize_with = "secs")]
    pub server_timeout: Option<f64>,
    /// Storage class, or a list to sweep (`["fast-ssd", "slow-ssd"]`).
    pub storage: Option<Classes>,
    /// Filesystem on the dedicated device.
    pub fs: Option<crate::setup::storage::Fs>,
    /// Dedicated device size.
    pub device_size: Option<String>,
    /// IOPS cap `R[,W]`.
    pub iops: Option<String>,
    /// MB/s cap `R[,W]`.
    pub mbps: Option<String>,
    /// Device model settings over a modelled class's (`["cache=off"]`).
    pub device_model: Option<Vec<String>>,
    /// `cores=N`: the storage budgets scaled by this machine's cores over N.
    pub io_scale: Option<String>,
    /// Memory limit for the engine's process.
    pub memory: Option<String>,
    /// `cache`, `io`, or both as a list (one run each).
    pub bound: Option<Bounds>,
    /// Drop the page cache before every step but the first.
    pub drop_caches: Option<bool>,
    /// Option sweeps, `["ENGINE.KEY=v1,v2"]`.
    pub sweep: Option<Vec<String>>,
    /// Runs of every (engine, step), for intervals.
    pub repeat: Option<usize>,
    /// Repeat the steps on one database per engine.
    pub reuse: Option<bool>,
    /// The seed post this plan reproduces (`[post]`): its published
    /// figures and the comparisons it draws (`plans/seeds/`).
    pub post: Option<crate::seedspec::SeedSpec>,
    /// Workload parameters.
    #[serde(default)]
    pub params: BTreeMap<String, toml::Value>,
    /// Engine options, per engine.
    #[serde(default)]
    pub set: BTreeMap<String, BTreeMap<String, toml::Value>>,
}

fn scalar(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Plan {
    /// Reads and checks a plan file.
    pub fn load(path: &Path) -> Result<Plan> {
        use std::io::Read as _;
        /// A plan is a page of settings: more is not a plan (and a device
        /// like /dev/zero never ends).
        const MAX: u64 = 1 << 20;
        let bad = |why: &str| crate::UsageError(format!("plan file {}: {why}", path.display()));
        let meta = std::fs::metadata(path)
            .with_context(|| format!("cannot read plan file {}", path.display()))?;
        if !meta.is_file() {
            return Err(bad("not a regular file").into());
        }
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX + 1).read_to_string(&mut text))
            .with_context(|| format!("cannot read plan file {}", path.display()))?;
        if text.len() as u64 > MAX {
            return Err(bad("larger than 1 MB").into());
        }
        toml::from_str(&text).map_err(|e| {
            crate::UsageError(format!(
                "plan file {}: {}",
                path.display(),
                e.to_string().replace('\n', " ").trim()
            ))
            .into()
        })
    }

    /// The default benchmark's plan ([`DEFAULT_RUN`]).
    pub fn default_run() -> Result<Plan> {
        toml::from_str(DEFAULT_RUN).map_err(|e| {
            crate::UsageError(format!(
                "plans/default.toml: {}",
                e.to_string().replace('\n', " ").trim()
            ))
            .into()
        })
    }

    /// `params` as `KEY=VALUE` pairs.
    pub fn param_pairs(&self) -> Vec<(String, String)> {
        self.params
            .iter()
            .map(|(k, v)| (k.clone(), scalar(v)))
            .collect()
    }

    /// `set` as `ENGINE.KEY=VALUE` strings.
    pub fn set_strings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (engine, kv) in &self.set {
            for (k, v) in kv {
                out.push(format!("{engine}.{k}={}", scalar(v)));
            }
        }
        out
    }
}

/// A TOML key, quoted unless it is a bare key.
fn toml_key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        format!("{k:?}")
    }
}

/// The commented plan template (`ampbench template`, shipped as
/// `plans/template.toml`): every key with its default, every workload and
/// its parameters, every engine of the registry with its default settings.
pub fn template() -> String {
    use crate::engine::EngineKind;
    use crate::workload::WorkloadKind;
    use std::fmt::Write as _;
    let workloads: Vec<&str> = WorkloadKind::ALL.iter().map(|w| w.name()).collect();
    let engines: Vec<&str> = EngineKind::all().map(|e| e.name()).collect();
    let mut o = String::new();
    let line = |o: &mut String, setting: &str, comment: &str| {
        let _ = writeln!(o, "{setting:<47} # {comment}");
    };
    o.push_str(
        "# ampbench plan file: `ampbench run plans/template.toml`.\n\
         # Every key is optional; the values below are the defaults. A flag given on\n\
         # the command line overrides the plan. Unknown keys are an error.\n\
         # Made by `ampbench template` from the engine registry and the workloads.\n\n",
    );
    line(&mut o, "workload = \"pattern\"", &workloads.join(" | "));
    line(
        &mut o,
        "engines = [\"rocksdb\", \"wiredtiger\", \"lmdb\"]",
        &engines.join(" "),
    );
    for (setting, comment) in [
        (
            "# steps = [\"load\", \"ows.1\", \"pq.n\"]",
            "default: every step of the workload, in order",
        ),
        (
            "threads = 4",
            "threads for multi-threaded steps; [1, 2, 4, 8] sweeps them",
        ),
        (
            "warmup = 1.0",
            "seconds, not recorded, before each timed step",
        ),
        (
            "duration = 3.0",
            "measured seconds of each timed step (or a string with a unit: \"30m\", \"6h\")",
        ),
        (
            "interval = 10.0",
            "seconds between probe samples (or \"1m\")",
        ),
        (
            "# slice = \"1h\"",
            "report each step in slices of this length, each with every figure",
        ),
        (
            "# sweep = [\"rocksdb.compaction_pri=kByCompensatedSize,kMinOverlappingRatio\"]",
            "run each engine once per value (fresh database each); axes of one engine multiply",
        ),
        (
            "# rate = 20000.0",
            "fixed total arrival rate (ops/s); default closed loop",
        ),
        ("arrival = \"poisson\"", "poisson | uniform (with rate)"),
        (
            "# seed = 45783957839",
            "default: a fixed seed, recorded with the run",
        ),
        ("cache = \"256MB\"", "every engine's cache"),
        ("results = \"ampbench.db\"", "SQLite results file"),
        (
            "# dir = \"/data\"",
            "parent of the engines' data directories (default: temp dir)",
        ),
        ("keep = false", "keep data directories"),
        (
            "settle = false",
            "wait for compaction/checkpoint after load steps",
        ),
        (
            "# transport = \"tcp\"",
            "how clients reach a server engine: tcp (127.0.0.1) or socket; default: as the workload's reference client (insert: MariaDB's socket)",
        ),
        (
            "allocator = \"glibc\"",
            "the C allocator under the engines: glibc | jemalloc | tcmalloc (preloaded)",
        ),
        (
            "replication_log = false",
            "servers: MariaDB binlog with sync_binlog=1, PostgreSQL WAL archived by copying",
        ),
        (
            "server_timeout = \"600s\"",
            "how long a server may take to answer; one that stops answering is killed and its step failed",
        ),
        (
            "storage = \"dedicated\"",
            "native | dedicated | fast-ssd | slow-ssd | disk-array (modelled devices) | fast-ssd-cap | slow-ssd-cap | disk-array-cap (rate caps only) | custom; a list sweeps one device (loads at the first)",
        ),
        ("fs = \"ext4\"", "ext4 | xfs, on the dedicated device"),
        (
            "# device_size = \"8GB\"",
            "default: half the free space under dir, 1-64 GB",
        ),
        (
            "# iops = \"1000,500\"",
            "IOPS cap read[,write] (custom, or replaces the class's)",
        ),
        ("# mbps = \"200\"", "MB/s cap read[,write]"),
        (
            "# device_model = [\"cache=off\"]",
            "device model settings over disk-array's or slow-ssd's (see --device-model)",
        ),
        (
            "# io_scale = \"cores=24\"",
            "storage budgets x this machine's cores / 24 (see --io-scale)",
        ),
        (
            "# memory = \"256MB\"",
            "engine process memory limit (IO-bound); default unlimited",
        ),
        (
            "# bound = \"io\"",
            "io: memory = a quarter of the loaded data (or memory); cache: unlimited; [\"cache\", \"io\"]: both, one run each",
        ),
        (
            "drop_caches = false",
            "drop the page cache before every step but the first",
        ),
        (
            "repeat = 1",
            "runs of every (engine, step), engines interleaved; 2 or more gives 95% intervals",
        ),
        (
            "reuse = false",
            "with repeat: one database per engine, each step but the loads repeated on it",
        ),
    ] {
        line(&mut o, setting, comment);
    }
    o.push_str(
        "\n# Workload parameters (-p KEY=VALUE), each workload's with its default;\n\
         # only the chosen workload's keys are allowed.\n[params]\n",
    );
    for w in WorkloadKind::ALL {
        let _ = writeln!(o, "# {}:", w.name());
        for p in w.params() {
            line(
                &mut o,
                &format!("#   {} = {:?}", toml_key(p.key), p.default),
                p.help,
            );
        }
    }
    o.push_str(
        "\n# Engine options (--set ENGINE.KEY=VALUE), passed through to the engine;\n\
         # the commented values are the defaults with cache = \"256MB\".\n",
    );
    for e in EngineKind::all() {
        let _ = writeln!(o, "\n[set.{}]", toml_key(e.name()));
        let defaults = e.default_settings(256 << 20);
        if defaults.is_empty() {
            o.push_str("# (takes no options)\n");
        }
        for (k, v) in defaults {
            let _ = writeln!(o, "# {} = {v:?}", toml_key(&k));
        }
    }
    o.push_str(
        "\n# A seed plan's post (plans/seeds/ has one per seed post): the post's\n\
         # published figures, where each of ours comes from, and the comparisons\n\
         # the post draws; the report prints them side by side with a verdict.\n\
         # `-p scale=X` multiplies the parameters named in scale_params.\n\
         # [post]\n\
         # file = \"003_00017efa7efe7952.txt\"\n\
         # title = \"MyRocks: use less IO on writes to have more IO for reads\"\n\
         # setup = \"what the post ran, and what runs here\"\n\
         # scale_params = [\"maxid1\"]\n\
         # [[post.figure]]\n\
         # id = \"disk.ratio\"\n\
         # table = \"Transactions per second\"\n\
         # row = \"Disk array\"\n\
         # column = \"MyRocks/InnoDB\"\n\
         # value = 5.3                                 # absent: the post shows it only in a graph\n\
         # ours = { engine = \"mariadb-myrocks\", step = \"request@disk-array\", figure = \"ops_per_sec\", over = { engine = \"mariadb-innodb\", step = \"request@disk-array\", figure = \"ops_per_sec\" } }\n\
         # (ours also takes slice = N: the step's Nth --slice; step = \"all\": the engine's\n\
         #  whole run added up, for cf_total_mb, cf_ingest_mb, cf_write_amp, cf.NAME.write_amp)\n\
         # [[post.claim]]\n\
         # text = \"MyRocks/InnoDB rises as storage slows\"\n\
         # kind = \"rises\"                             # rises | falls | less | more (factor x the second) | least | most (the first against every other) | below | above (factor)\n\
         # figures = [\"fast.ratio\", \"slow.ratio\", \"disk.ratio\"]\n",
    );
    o
}

/// A plan's duration: a number of seconds or a string with a unit.
fn secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Secs {
        N(f64),
        S(String),
    }
    Ok(match Option::<Secs>::deserialize(d)? {
        None => None,
        Some(Secs::N(v)) => Some(v),
        Some(Secs::S(s)) => Some(parse_secs(&s).map_err(serde::de::Error::custom)?),
    })
}
