//! Plan files: a run's settings as TOML (`ampbench run PLAN.toml`). Every
//! key is optional; a flag given on the command line overrides the plan's
//! value; unknown keys are an error naming them. `plans/template.toml`
//! lists every key with its default.

use std::collections::BTreeMap;

use crate::units::parse_secs;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::driver::Gaps;

/// How long a PostgreSQL results store may leave a reply owed, seconds,
/// unless `store_timeout` says.
pub const STORE_TIMEOUT: f64 = 60.0;

/// `threads = 4` or `threads = [1, 2, 4, 8]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Threads {
    /// One level.
    One(usize),
    /// A sweep.
    Many(Vec<usize>),
}

/// `bound = "io"` or `bound = ["cache", "io"]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Bounds {
    /// One corner.
    One(crate::bound::Bound),
    /// Several, one run each.
    Many(Vec<crate::bound::Bound>),
}

impl Bounds {
    /// The corners as a list.
    pub fn into_vec(self) -> Vec<crate::bound::Bound> {
        match self {
            Bounds::One(b) => vec![b],
            Bounds::Many(v) => v,
        }
    }
}

/// `storage = "slow-ssd"` or `storage = ["fast-ssd", "disk-array"]`, as
/// `--storage` takes them (checked there).
#[derive(Clone, Debug, Deserialize, Serialize)]
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

/// A run's settings, the one place their defaults live: a plan file
/// fills it (every key optional, a missing key takes its default here),
/// then the flags given on the command line override it
/// (`cli::run::RunArgs::merge`). `ampbench template` (plans/template.toml),
/// `run --help`'s defaults and docs/settings.md are made from it. A key
/// that is `None` by default has a default worked out from the others
/// (said in `cli::settings_doc`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Workload name.
    pub workload: String,
    /// Engine names.
    pub engines: Vec<String>,
    /// Steps (`None`: every step of the workload).
    pub steps: Option<Vec<String>>,
    /// Threads for multi-threaded steps: a number, or a list to sweep.
    pub threads: Threads,
    /// Warm-up: seconds, or a string with a unit (`"30s"`).
    #[serde(deserialize_with = "secs")]
    pub warmup: f64,
    /// Warm up each timed step until its throughput stops rising, for at
    /// most this long: seconds, or a string with a unit (`"10m"`).
    #[serde(deserialize_with = "opt_secs")]
    pub warmup_steady: Option<f64>,
    /// Measured time per timed step: seconds, or `"30m"`, `"6h"`.
    #[serde(deserialize_with = "secs")]
    pub duration: f64,
    /// Time between samples: seconds, or a string with a unit.
    #[serde(deserialize_with = "opt_secs")]
    pub interval: Option<f64>,
    /// Report steps in slices of this length: seconds or `"1h"`.
    #[serde(deserialize_with = "opt_secs")]
    pub slice: Option<f64>,
    /// Fixed total arrival rate, ops/s.
    pub rate: Option<f64>,
    /// `poisson` or `uniform`.
    pub arrival: Gaps,
    /// Run seed.
    pub seed: u64,
    /// Engine cache size.
    pub cache: Option<String>,
    /// Results file.
    pub results: String,
    /// Parent of data directories.
    pub dir: Option<String>,
    /// Keep data directories.
    pub keep: bool,
    /// Settle after loads.
    pub settle: bool,
    /// How clients reach server engines.
    pub transport: Option<crate::engine::Transport>,
    /// An external server's URL(s), instead of a server ampbench starts.
    pub target: Option<String>,
    /// A file whose first line is the target's password.
    pub target_password_file: Option<String>,
    /// Work in this database of the target rather than one of ampbench's.
    pub target_db: Option<String>,
    /// The named database's workload tables may be dropped.
    pub target_db_owned: bool,
    /// Another build's server tree or bin directory to start.
    pub server_bin: Option<String>,
    /// A node exporter on the server's host.
    pub host_metrics: Option<String>,
    /// The run's clients, each a process of its own.
    pub clients: usize,
    /// This client of them, 0-based.
    pub client: Option<usize>,
    /// The run's name, the same for every client.
    pub run_name: Option<String>,
    /// How long a client waits at a barrier for the others.
    #[serde(deserialize_with = "secs")]
    pub barrier_timeout: f64,
    /// How long a client may go unheard before the others give it up.
    #[serde(deserialize_with = "secs")]
    pub client_timeout: f64,
    /// How long a PostgreSQL results store may leave a reply owed.
    #[serde(deserialize_with = "secs")]
    pub store_timeout: f64,
    /// The C allocator under the engines.
    pub allocator: crate::setup::allocator::Allocator,
    /// A replication log on the servers.
    pub replication_log: bool,
    /// How long a server may take to answer.
    #[serde(deserialize_with = "secs")]
    pub server_timeout: f64,
    /// Storage class, or a list to sweep (`["fast-ssd", "slow-ssd"]`).
    pub storage: Option<Classes>,
    /// Filesystem on the dedicated device.
    pub fs: crate::setup::storage::Fs,
    /// Dedicated device size.
    pub device_size: Option<String>,
    /// Seconds of each phase of the class probe, 0.1 to 10 (0 skips it).
    #[serde(deserialize_with = "opt_secs")]
    pub storage_probe: Option<f64>,
    /// IOPS cap `R[,W]`.
    pub iops: Option<String>,
    /// MB/s cap `R[,W]`.
    pub mbps: Option<String>,
    /// Device model settings over a modelled class's (`["cache=off"]`).
    pub device_model: Vec<String>,
    /// `cores=N`: the storage budgets scaled by this machine's cores over N.
    pub io_scale: Option<String>,
    /// Memory limit for the engine's process.
    pub memory: Option<String>,
    /// A named set of engine settings over the IO-bound profile.
    pub preset: Option<String>,
    /// `cache`, `io`, or both as a list (one run each).
    pub bound: Option<Bounds>,
    /// Drop the page cache before every step but the first.
    pub drop_caches: bool,
    /// Option sweeps, `["ENGINE.KEY=v1,v2"]`.
    pub sweep: Vec<String>,
    /// Runs of every (engine, step), for intervals.
    pub repeat: usize,
    /// Repeat the steps on one database per engine.
    pub reuse: bool,
    /// The seed post this plan reproduces (`[post]`): its published
    /// figures and the comparisons it draws (`plans/seeds/`).
    #[serde(skip_serializing)]
    pub post: Option<crate::postspec::PostSpec>,
    /// Workload parameters.
    pub params: BTreeMap<String, toml::Value>,
    /// Engine options, per engine.
    pub set: BTreeMap<String, BTreeMap<String, toml::Value>>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            workload: "pattern".into(),
            engines: ["rocksdb", "wiredtiger", "lmdb"].map(String::from).to_vec(),
            steps: None,
            threads: Threads::One(4),
            warmup: 1.0,
            duration: 3.0,
            interval: None,
            slice: None,
            warmup_steady: None,
            rate: None,
            arrival: Gaps::Poisson,
            seed: crate::rng::DEFAULT_SEED,
            cache: None,
            results: "ampbench.db".into(),
            dir: None,
            keep: false,
            settle: false,
            transport: None,
            target: None,
            target_password_file: None,
            target_db: None,
            target_db_owned: false,
            server_bin: None,
            host_metrics: None,
            clients: 1,
            client: None,
            run_name: None,
            barrier_timeout: 120.0,
            client_timeout: 60.0,
            store_timeout: STORE_TIMEOUT,
            allocator: crate::setup::allocator::Allocator::Glibc,
            replication_log: false,
            server_timeout: crate::engine::SERVER_TIMEOUT.as_secs_f64(),
            storage: None,
            fs: crate::setup::storage::Fs::Ext4,
            device_size: None,
            storage_probe: None,
            iops: None,
            mbps: None,
            device_model: Vec::new(),
            io_scale: None,
            memory: None,
            preset: None,
            bound: None,
            drop_caches: false,
            sweep: Vec::new(),
            repeat: 1,
            reuse: false,
            post: None,
            params: BTreeMap::new(),
            set: BTreeMap::new(),
        }
    }
}

/// The keys of [`Settings`], in their order (serde's own list of the
/// struct's fields, asked of it by a deserializer that only records it).
pub fn keys() -> &'static [&'static str] {
    struct Fields(&'static [&'static str]);
    impl<'de> serde::Deserializer<'de> for &mut Fields {
        type Error = serde::de::value::Error;
        fn deserialize_any<V: serde::de::Visitor<'de>>(
            self,
            _: V,
        ) -> Result<V::Value, Self::Error> {
            Err(serde::de::Error::custom("only the field names are asked"))
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = fields;
            Err(serde::de::Error::custom("only the field names are asked"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }
    let mut f = Fields(&[]);
    let _ = Settings::deserialize(&mut f);
    f.0
}

fn scalar(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Settings {
    /// Reads and checks a plan file.
    pub fn load(path: &Path) -> Result<Settings> {
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
    pub fn default_run() -> Result<Settings> {
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

/// A plan's duration: a number of seconds or a string with a unit.
fn secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Secs {
        N(f64),
        S(String),
    }
    match Secs::deserialize(d)? {
        Secs::N(v) => Ok(v),
        Secs::S(s) => parse_secs(&s).map_err(serde::de::Error::custom),
    }
}

/// An optional duration, as [`secs`].
fn opt_secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    secs(d).map(Some)
}
