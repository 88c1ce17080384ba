//! Storage engines behind one base trait, [`Engine`], and two faces opened
//! per worker thread: [`KvEngine::session`] (embedded key-value engines)
//! and [`SqlEngine::connect`] (servers ampbench starts).
//!
//! An engine owns its data directory (and, for a server, its server
//! process), knows its options, reports its data paths, the process whose
//! CPU, IO and memory are charged to it, its own counters, and waits for
//! its background work. Engines know nothing of workloads: workloads reach
//! them only through their Store mappings.
//!
//! Each engine is one file with one [`EngineDef`] entry (name, structure,
//! version, defaults, option validation, open), listed once in the
//! registry below. The C engines' handles are owned by the safe wrappers
//! in `ffi/`, where all of the layer's unsafe code lives; the C engines are
//! cargo features, on by default, linked against Debian's libraries.

#![warn(missing_docs)]

// The crates below, under the module names the code has always used:
// `crate::address` is the ampbench-address crate (Cargo.toml lists them).
use ampbench_address as address;
#[cfg(test)]
use ampbench_core::testing;
use ampbench_core::{UsageError, signals, structure, sys, units};
use ampbench_probe as probe;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

pub mod ffi;
pub mod guard;
pub mod kv;
mod mariadb_options;
mod mysql_conn;
pub use ampbench_mywire as mywire;
pub mod options;
mod pg_conn;
pub mod presets;
pub mod registry;
pub mod rocks_family;
pub mod scan;
pub mod server;
pub mod sets;
pub mod sql;
pub mod target;

/// The wire protocol a server engine speaks ([`EngineKind::speaks`]).
pub use crate::address::Protocol;
pub use kv::{
    Backoff, BatchOp, Conflict, Durability, KeyRange, KvEngine, KvSession, Order, Table,
    Transactions, Txn, WriteBatch, is_conflict,
};
pub use options::EngineOptions;
pub use registry::{Conformance, EngineDef, EngineKind, Structure};
pub use sql::{Dialect, SqlConn, SqlEngine};

/// Declares each engine's module and lists its [`EngineDef`]s (its
/// `ENGINES`) in the registry: one line per engine file.
macro_rules! engines {
    ($( $(#[$attr:meta])* $module:ident ),* $(,)?) => {
        $( $(#[$attr])* pub mod $module; )*
        /// Every engine file's definitions, in the order `list`, `doctor`
        /// and `--help` show them.
        pub(crate) const MODULES: &[&[EngineDef]] = &[ $( $(#[$attr])* $module::ENGINES, )* ];
    };
}

engines! {
    #[cfg(feature = "rocksdb")] rocksdb,
    #[cfg(feature = "wiredtiger")] wiredtiger,
    #[cfg(feature = "lmdb")] lmdb,
    #[cfg(feature = "leveldb")] leveldb,
    sqlite,
    null,
    mariadb,
    galera,
    postgres,
}

/// What an open engine says of itself, kept by every engine.
#[derive(Clone, Debug)]
pub struct EngineInfo {
    /// Which engine this is.
    pub kind: EngineKind,
    /// The engine library's real version, read at open time (e.g. `7.8.3`
    /// from RocksDB's LOG, `WiredTiger 3.2.1` from the library).
    pub version: String,
    /// The effective settings the engine was opened with, defaults and
    /// `--set` overrides merged, as (key, value) pairs to record and print.
    pub settings: Vec<(String, String)>,
    /// The data directory (its block device is probed).
    pub dir: PathBuf,
}

/// What every engine is, whatever its face.
pub trait Engine: Send + Sync {
    /// Which engine, its version, settings and data directory.
    fn info(&self) -> &EngineInfo;

    /// Which engine this is.
    fn kind(&self) -> EngineKind {
        self.info().kind
    }

    /// See [`EngineInfo::version`].
    fn version(&self) -> String {
        self.info().version.clone()
    }

    /// See [`EngineInfo::settings`].
    fn settings(&self) -> Vec<(String, String)> {
        self.info().settings.clone()
    }

    /// See [`EngineInfo::dir`].
    fn dir(&self) -> &Path {
        &self.info().dir
    }

    /// The files and directories that hold the data (what db.gb measures).
    fn data_paths(&self) -> Vec<PathBuf> {
        vec![self.dir().to_path_buf()]
    }

    /// The process whose CPU, IO and memory are charged to the engine
    /// (ourselves for embedded engines); None for an external target,
    /// whose processes are on another host.
    fn pid(&self) -> Option<u32> {
        Some(std::process::id())
    }

    /// Every process charged to the engine (a cluster's servers): the
    /// [`pid`](Engine::pid) alone but for engines of several servers.
    fn pids(&self) -> Vec<u32> {
        self.pid().into_iter().collect()
    }

    /// A server engine's own counters of its IO and size, read by the
    /// probe each interval (see `probe::server`); None for an embedded
    /// engine.
    fn counters(&self) -> Option<std::sync::Arc<dyn crate::probe::CounterSource>> {
        None
    }

    /// The engine's own counters.
    fn stats(&self) -> Result<EngineStats> {
        Ok(EngineStats::default())
    }

    /// Waits until background work (flushes, compactions, checkpoints) is
    /// done. Returns what was done, or why nothing was.
    fn settle(&self) -> Result<String> {
        Ok("nothing to settle: this engine has no background work".into())
    }

    /// The face workloads use.
    fn face(&self) -> EngineRef<'_>;

    /// Closes the engine (stops a server), flushing what it flushes on
    /// close. The default drops it: the C engines' wrappers close on drop.
    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }

    /// Closes the engine but leaves what other clients of the run may
    /// still be using (a target's database ampbench made); returns what
    /// it left, for one line. The default is [`Engine::close`]: nothing
    /// of an engine is shared but a target's database.
    fn close_keeping(self: Box<Self>) -> Result<Option<String>> {
        self.close().map(|_| None)
    }
}

/// A borrowed engine's face, as workloads receive it.
#[derive(Clone, Copy)]
pub enum EngineRef<'a> {
    /// An embedded key-value engine.
    Kv(&'a dyn KvEngine),
    /// A SQL server engine.
    Sql(&'a dyn SqlEngine),
}

impl<'a> EngineRef<'a> {
    /// The key-value face, if it is one.
    pub fn kv(self) -> Option<&'a dyn KvEngine> {
        match self {
            EngineRef::Kv(e) => Some(e),
            EngineRef::Sql(_) => None,
        }
    }
    /// The SQL face, if it is one.
    pub fn sql(self) -> Option<&'a dyn SqlEngine> {
        match self {
            EngineRef::Sql(e) => Some(e),
            EngineRef::Kv(_) => None,
        }
    }
}

pub use crate::structure::EngineStats;

/// Everything an engine needs to open.
#[derive(Clone, Debug)]
pub struct OpenSpec {
    /// The data directory; created if missing.
    pub dir: PathBuf,
    /// Table names (created if missing); [`Table`] indexes this list.
    pub tables: Vec<String>,
    /// The engine cache size in bytes (`--cache`), for engines that have one.
    pub cache_bytes: u64,
    /// `--set` options for this engine, validated at open.
    pub options: EngineOptions,
    /// Open with transactions: the caller makes multi-key read-modify-write
    /// changes. Engines whose transactions cost something when unused
    /// (RocksDB's OptimisticTransactionDB keeps memtable history) open
    /// them only then.
    pub transactions: bool,
    /// How clients reach a server engine (`--transport`).
    pub transport: Transport,
    /// A server keeps a replication log (`--replication-log`): MariaDB's
    /// binlog, PostgreSQL's archived WAL. Embedded engines have none.
    pub replication_log: bool,
    /// A cgroup's `cgroup.procs` a server joins before it runs (the
    /// run's memory limit); embedded engines run in ampbench, which the
    /// runner moves into the group itself.
    pub cgroup: Option<PathBuf>,
    /// How long a server may take to answer (`--server-timeout`): every
    /// read and write of its clients, and a new connection, give up
    /// after it; a server that stops answering is then killed (see
    /// `engine::server::Server::watch`). None: wait as long as it takes.
    pub timeout: Option<std::time::Duration>,
    /// `--target`: reach this server instead of starting one (server
    /// engines only).
    pub target: Option<target::TargetSpec>,
    /// `--server-bin`: start this build of the server rather than
    /// Debian's.
    pub server_bin: Option<server::ServerBin>,
}

/// `--server-timeout`'s default: generous, since one statement of a
/// benchmark (an index build) may take minutes.
pub const SERVER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// How a client reaches a server ampbench started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// TCP on 127.0.0.1, as the reference clients connect.
    #[default]
    Tcp,
    /// The server's unix socket.
    Socket,
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Transport::Tcp => "tcp",
            Transport::Socket => "socket",
        })
    }
}

impl OpenSpec {
    /// The effective settings: an engine's defaults for this cache size,
    /// then the `--set` options over them.
    pub fn settings(&self, defaults: fn(u64) -> Vec<(String, String)>) -> Vec<(String, String)> {
        self.options.merged_over(&defaults(self.cache_bytes))
    }

    /// A spec with default options and no transactions.
    pub fn new(dir: &Path, tables: Vec<String>, cache_bytes: u64) -> OpenSpec {
        OpenSpec {
            dir: dir.to_path_buf(),
            tables,
            cache_bytes,
            options: EngineOptions::default(),
            transactions: false,
            transport: Transport::Tcp,
            replication_log: false,
            cgroup: None,
            timeout: Some(SERVER_TIMEOUT),
            target: None,
            server_bin: None,
        }
    }
}

/// Opens (creating if needed) an engine: embedded ones in `spec.dir`,
/// servers started with their data directory under it.
pub fn open(kind: EngineKind, spec: &OpenSpec) -> Result<Box<dyn Engine>> {
    std::fs::create_dir_all(&spec.dir)
        .with_context(|| format!("cannot create data directory {}", spec.dir.display()))?;
    for t in &spec.tables {
        check_table_name(t)?;
    }
    (kind.def().open)(kind, spec)
}

/// Checks `--set` options for an engine before anything runs: the
/// settings ampbench keeps to itself or allows only when asked
/// ([`guard`]), then the engine's own check, so a bad key is reported
/// before anything runs.
pub fn validate_options(kind: EngineKind, options: &EngineOptions) -> Result<()> {
    guard::check(kind, options)?;
    (kind.def().validate)(kind, options)
}

/// Checks a table name: letters, digits and `_` only, so it is safe in file
/// names, URIs and SQL identifiers.
pub fn check_table_name(name: &str) -> Result<()> {
    if name.is_empty()
        || name.len() > 48
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        anyhow::bail!("table name '{name}' must be 1-48 ASCII letters, digits or '_'");
    }
    Ok(())
}

/// The reason given by adapters when the caller passes a table that was not
/// opened.
pub(crate) fn no_table(table: Table) -> anyhow::Error {
    anyhow::anyhow!("table #{} was not opened with this engine", table.0)
}

/// Looks up a table's handle in an adapter's list.
pub(crate) fn table_of<T>(list: &[T], table: Table) -> Result<&T> {
    list.get(table.0).ok_or_else(|| no_table(table))
}
