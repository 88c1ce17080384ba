//! Storage engines behind one small trait, [`KvEngine`].
//!
//! An engine owns its data directory, knows its options, opens and closes,
//! and reports its size on disk, its version, its own counters
//! ([`KvEngine::stats`]) and the process whose CPU, IO and memory are
//! charged to it ([`KvEngine::pid`]). Engines know nothing of workloads:
//! workloads reach them only through their Store mappings.
//!
//! One file per engine. The C engines (RocksDB, WiredTiger, LMDB, LevelDB)
//! are cargo features, on by default, linked against Debian's libraries.

use std::ops::Bound;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

pub mod compaction_stats;
pub mod mariadb;
pub mod null;
pub mod options;
pub mod postgres;
pub mod sql;
pub mod sqlite;

#[cfg(feature = "leveldb")]
pub mod leveldb;
#[cfg(feature = "lmdb")]
pub mod lmdb;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;
#[cfg(feature = "wiredtiger")]
pub mod wiredtiger;

pub use options::EngineOptions;
pub use sql::{Dialect, SqlConn, SqlEngine};

/// The engines ampbench knows, by the name used on the command line.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum EngineKind {
    /// RocksDB (Debian's librocksdb, a leveled LSM).
    Rocksdb,
    /// WiredTiger (Debian's libwiredtiger, a B-Tree).
    Wiredtiger,
    /// LMDB (Debian's liblmdb, a copy-on-write B-Tree).
    Lmdb,
    /// LevelDB (Debian's libleveldb, a leveled LSM).
    Leveldb,
    /// SQLite (the system library, a B-Tree, WAL mode).
    Sqlite,
    /// Does nothing: measures the harness itself.
    Null,
    /// MariaDB with InnoDB (a server ampbench starts).
    MariadbInnodb,
    /// MariaDB with MyRocks (a server ampbench starts).
    MariadbMyrocks,
    /// PostgreSQL (a server ampbench starts).
    Postgres,
}

impl EngineKind {
    /// Every engine, in the order `doctor` and `list` show them.
    pub const ALL: [EngineKind; 9] = [
        EngineKind::Rocksdb,
        EngineKind::Wiredtiger,
        EngineKind::Lmdb,
        EngineKind::Leveldb,
        EngineKind::Sqlite,
        EngineKind::Null,
        EngineKind::MariadbInnodb,
        EngineKind::MariadbMyrocks,
        EngineKind::Postgres,
    ];

    /// True for the engines reached through SQL on a server ampbench starts.
    pub fn is_server(self) -> bool {
        matches!(
            self,
            EngineKind::MariadbInnodb | EngineKind::MariadbMyrocks | EngineKind::Postgres
        )
    }

    /// The command-line name (`rocksdb`, `wiredtiger`, …).
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Rocksdb => "rocksdb",
            EngineKind::Wiredtiger => "wiredtiger",
            EngineKind::Lmdb => "lmdb",
            EngineKind::Leveldb => "leveldb",
            EngineKind::Sqlite => "sqlite",
            EngineKind::Null => "null",
            EngineKind::MariadbInnodb => "mariadb-innodb",
            EngineKind::MariadbMyrocks => "mariadb-myrocks",
            EngineKind::Postgres => "postgres",
        }
    }

    /// Parses a command-line name; the error lists the valid names.
    pub fn parse(name: &str) -> Result<EngineKind, crate::UsageError> {
        EngineKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = EngineKind::ALL.iter().map(|k| k.name()).collect();
                crate::UsageError(format!(
                    "unknown engine '{name}' (known: {})",
                    names.join(", ")
                ))
            })
    }

    /// The storage structure, used by the model and in reports.
    pub fn structure(self) -> &'static str {
        match self {
            EngineKind::Rocksdb | EngineKind::Leveldb => "leveled LSM",
            EngineKind::Wiredtiger
            | EngineKind::Sqlite
            | EngineKind::MariadbInnodb
            | EngineKind::Postgres => "update-in-place B-Tree",
            EngineKind::MariadbMyrocks => "leveled LSM",
            EngineKind::Lmdb => "copy-on-write B-Tree",
            EngineKind::Null => "none",
        }
    }
}

impl std::fmt::Display for EngineKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a write must be durable when the call returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Durability {
    /// Durable on return: the engine syncs its log (or data) before returning.
    Sync,
    /// The engine may return before the write reaches storage.
    NoSync,
}

impl Durability {
    /// `Sync` when `sync` is true.
    pub fn from_sync(sync: bool) -> Durability {
        if sync {
            Durability::Sync
        } else {
            Durability::NoSync
        }
    }
}

/// A table opened with the engine: an index into [`OpenSpec::tables`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Table(pub usize);

/// Direction of a range scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Ascending keys, starting at the range's start.
    Forward,
    /// Descending keys, starting at the range's end.
    Reverse,
}

/// A key range for scans; `start` is the low end, `end` the high end,
/// whatever the scan's direction.
#[derive(Clone, Copy, Debug)]
pub struct KeyRange<'a> {
    /// The low end.
    pub start: Bound<&'a [u8]>,
    /// The high end.
    pub end: Bound<&'a [u8]>,
}

impl<'a> KeyRange<'a> {
    /// Every key of the table.
    pub fn all() -> KeyRange<'static> {
        KeyRange {
            start: Bound::Unbounded,
            end: Bound::Unbounded,
        }
    }

    /// Keys from `start` (inclusive) upwards.
    pub fn from(start: &'a [u8]) -> KeyRange<'a> {
        KeyRange {
            start: Bound::Included(start),
            end: Bound::Unbounded,
        }
    }

    /// True when `key` is above the start bound.
    pub fn above_start(&self, key: &[u8]) -> bool {
        match self.start {
            Bound::Included(s) => key >= s,
            Bound::Excluded(s) => key > s,
            Bound::Unbounded => true,
        }
    }

    /// True when `key` is below the end bound.
    pub fn below_end(&self, key: &[u8]) -> bool {
        match self.end {
            Bound::Included(e) => key <= e,
            Bound::Excluded(e) => key < e,
            Bound::Unbounded => true,
        }
    }
}

/// One change in a [`WriteBatch`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchOp {
    /// Insert or overwrite.
    Put {
        /// Target table.
        table: Table,
        /// Key bytes.
        key: Vec<u8>,
        /// Value bytes.
        value: Vec<u8>,
    },
    /// Remove (a missing key is not an error).
    Delete {
        /// Target table.
        table: Table,
        /// Key bytes.
        key: Vec<u8>,
    },
}

/// Changes applied atomically, across tables, by [`KvEngine::write`].
#[derive(Clone, Debug, Default)]
pub struct WriteBatch {
    /// The changes, applied in order.
    pub ops: Vec<BatchOp>,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }
    /// Adds a put.
    pub fn put(&mut self, table: Table, key: &[u8], value: &[u8]) {
        self.ops.push(BatchOp::Put {
            table,
            key: key.to_vec(),
            value: value.to_vec(),
        });
    }
    /// Adds a delete.
    pub fn delete(&mut self, table: Table, key: &[u8]) {
        self.ops.push(BatchOp::Delete {
            table,
            key: key.to_vec(),
        });
    }
    /// Number of changes.
    pub fn len(&self) -> usize {
        self.ops.len()
    }
    /// True when there are no changes.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
    /// Removes every change, keeping the allocation.
    pub fn clear(&mut self) {
        self.ops.clear();
    }
}

/// An engine's own counters, as it reports them.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct EngineStats {
    /// Numeric counters, by the engine's own names (e.g. RocksDB tickers,
    /// WiredTiger statistics descriptions) or ours where parsed from text
    /// (`compaction.w_amp.L1.default`).
    pub values: Vec<(String, f64)>,
    /// Text reports (e.g. RocksDB `rocksdb.stats`).
    pub texts: Vec<(String, String)>,
}

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
}

/// A storage engine with named tables, point and range reads, and atomic
/// batches. Every method may be called from many threads at once.
///
/// Required: [`get`](KvEngine::get), [`scan`](KvEngine::scan),
/// [`write`](KvEngine::write), [`close`](KvEngine::close) and the
/// descriptive methods. `put` and `delete` default to one-change batches;
/// engines override them where a single write is cheaper.
pub trait KvEngine: Send + Sync {
    /// Which engine this is.
    fn kind(&self) -> EngineKind;

    /// The engine library's real version, read at open time (e.g.
    /// `7.8.3` from RocksDB's LOG, `WiredTiger 3.2.1` from the library).
    fn version(&self) -> String;

    /// The effective settings the engine was opened with, defaults and
    /// `--set` overrides merged, as (key, value) pairs to record and print.
    fn settings(&self) -> Vec<(String, String)>;

    /// The data directory.
    fn dir(&self) -> &Path;

    /// Reads one key.
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Reads one key and returns only its value's length: an engine that can
    /// look at the value in place (RocksDB pins it in the block cache) skips
    /// the copy, as db_bench's readrandom does.
    fn get_len(&self, table: Table, key: &[u8]) -> Result<Option<usize>> {
        Ok(self.get(table, key)?.map(|v| v.len()))
    }

    /// Visits up to `limit` entries of `range` in `order`, calling `visit`
    /// with each key and value; returns how many were visited.
    fn scan(
        &self,
        table: Table,
        range: KeyRange<'_>,
        order: Order,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize>;

    /// Applies every change of `batch` atomically.
    fn write(&self, batch: &WriteBatch, durability: Durability) -> Result<()>;

    /// Inserts or overwrites one key.
    fn put(&self, table: Table, key: &[u8], value: &[u8], durability: Durability) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(table, key, value);
        self.write(&b, durability)
    }

    /// Removes one key; a missing key is not an error.
    fn delete(&self, table: Table, key: &[u8], durability: Durability) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(table, key);
        self.write(&b, durability)
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

    /// The process whose CPU, IO and memory are charged to the engine
    /// (ourselves for embedded engines).
    fn pid(&self) -> u32 {
        std::process::id()
    }

    /// Closes the engine, flushing what the engine flushes on close.
    fn close(self: Box<Self>) -> Result<()>;
}

/// Whether an engine is compiled into this binary, with its library version.
pub fn library_version(kind: EngineKind) -> Result<String> {
    match kind {
        #[cfg(feature = "rocksdb")]
        EngineKind::Rocksdb => rocksdb::library_version(),
        #[cfg(feature = "wiredtiger")]
        EngineKind::Wiredtiger => Ok(wiredtiger::library_version()),
        #[cfg(feature = "lmdb")]
        EngineKind::Lmdb => Ok(lmdb::library_version()),
        #[cfg(feature = "leveldb")]
        EngineKind::Leveldb => Ok(leveldb::library_version()),
        EngineKind::Sqlite => Ok(sqlite::library_version()),
        EngineKind::Null => Ok(null::VERSION.into()),
        EngineKind::MariadbInnodb | EngineKind::MariadbMyrocks => {
            mariadb::library_version().map(|v| format!("MariaDB {v}"))
        }
        EngineKind::Postgres => postgres::library_version(),
        #[allow(unreachable_patterns)]
        other => Err(not_built(other)),
    }
}

/// The default settings of an engine for a cache size, as printed by
/// `ampbench list` and at the start of a run.
pub fn default_settings(kind: EngineKind, cache_bytes: u64) -> Vec<(String, String)> {
    match kind {
        #[cfg(feature = "rocksdb")]
        EngineKind::Rocksdb => rocksdb::default_settings(cache_bytes),
        #[cfg(feature = "wiredtiger")]
        EngineKind::Wiredtiger => wiredtiger::default_settings(cache_bytes),
        #[cfg(feature = "lmdb")]
        EngineKind::Lmdb => lmdb::default_settings(cache_bytes),
        #[cfg(feature = "leveldb")]
        EngineKind::Leveldb => leveldb::default_settings(cache_bytes),
        EngineKind::Sqlite => sqlite::default_settings(cache_bytes),
        EngineKind::Null => Vec::new(),
        EngineKind::MariadbInnodb | EngineKind::MariadbMyrocks => {
            mariadb::default_settings(kind, cache_bytes)
        }
        EngineKind::Postgres => postgres::default_settings(cache_bytes),
        #[allow(unreachable_patterns)]
        _ => Vec::new(),
    }
}

/// Opens (creating if needed) an engine.
pub fn open(kind: EngineKind, spec: &OpenSpec) -> Result<Box<dyn KvEngine>> {
    std::fs::create_dir_all(&spec.dir)
        .map_err(|e| anyhow::anyhow!("cannot create data directory {}: {e}", spec.dir.display()))?;
    let engine: Box<dyn KvEngine> = match kind {
        #[cfg(feature = "rocksdb")]
        EngineKind::Rocksdb => Box::new(rocksdb::RocksDb::open(spec)?),
        #[cfg(feature = "wiredtiger")]
        EngineKind::Wiredtiger => Box::new(wiredtiger::WiredTiger::open(spec)?),
        #[cfg(feature = "lmdb")]
        EngineKind::Lmdb => Box::new(lmdb::Lmdb::open(spec)?),
        #[cfg(feature = "leveldb")]
        EngineKind::Leveldb => Box::new(leveldb::LevelDb::open(spec)?),
        EngineKind::Sqlite => Box::new(sqlite::Sqlite::open(spec)?),
        EngineKind::Null => Box::new(null::Null::open(spec)?),
        EngineKind::MariadbInnodb | EngineKind::MariadbMyrocks | EngineKind::Postgres => {
            anyhow::bail!("engine '{kind}' is a SQL server engine: open it with open_any")
        }
        #[allow(unreachable_patterns)]
        other => return Err(not_built(other)),
    };
    Ok(engine)
}

/// An open engine of either face.
pub enum Opened {
    /// An embedded key-value engine.
    Kv(Box<dyn KvEngine>),
    /// A SQL server engine.
    Sql(Box<dyn SqlEngine>),
}

/// A borrowed engine of either face, as workloads receive it.
#[derive(Clone, Copy)]
pub enum EngineRef<'a> {
    /// An embedded key-value engine.
    Kv(&'a dyn KvEngine),
    /// A SQL server engine.
    Sql(&'a dyn SqlEngine),
}

/// Opens any engine: embedded ones in `spec.dir`, servers started with
/// their data directory under `spec.dir`.
pub fn open_any(kind: EngineKind, spec: &OpenSpec) -> Result<Opened> {
    std::fs::create_dir_all(&spec.dir)
        .map_err(|e| anyhow::anyhow!("cannot create data directory {}: {e}", spec.dir.display()))?;
    Ok(match kind {
        EngineKind::MariadbInnodb | EngineKind::MariadbMyrocks => {
            Opened::Sql(Box::new(mariadb::MariaDb::open(kind, spec)?))
        }
        EngineKind::Postgres => Opened::Sql(Box::new(postgres::Postgres::open(spec)?)),
        _ => Opened::Kv(open(kind, spec)?),
    })
}

impl Opened {
    /// The borrowed face.
    pub fn as_ref(&self) -> EngineRef<'_> {
        match self {
            Opened::Kv(e) => EngineRef::Kv(&**e),
            Opened::Sql(e) => EngineRef::Sql(&**e),
        }
    }
    /// The engine's version.
    pub fn version(&self) -> String {
        match self {
            Opened::Kv(e) => e.version(),
            Opened::Sql(e) => e.version(),
        }
    }
    /// Effective settings.
    pub fn settings(&self) -> Vec<(String, String)> {
        match self {
            Opened::Kv(e) => e.settings(),
            Opened::Sql(e) => e.settings(),
        }
    }
    /// The data directory (its block device is probed).
    pub fn dir(&self) -> PathBuf {
        match self {
            Opened::Kv(e) => e.dir().to_path_buf(),
            Opened::Sql(e) => e.dir(),
        }
    }
    /// What db.gb measures.
    pub fn data_paths(&self) -> Vec<PathBuf> {
        match self {
            Opened::Kv(e) => vec![e.dir().to_path_buf()],
            Opened::Sql(e) => e.data_paths(),
        }
    }
    /// The process charged with the engine's work.
    pub fn pid(&self) -> u32 {
        match self {
            Opened::Kv(e) => e.pid(),
            Opened::Sql(e) => e.pid(),
        }
    }
    /// The engine's counters.
    pub fn stats(&self) -> Result<EngineStats> {
        match self {
            Opened::Kv(e) => e.stats(),
            Opened::Sql(e) => e.stats(),
        }
    }
    /// Waits for background work.
    pub fn settle(&self) -> Result<String> {
        match self {
            Opened::Kv(e) => e.settle(),
            Opened::Sql(e) => e.settle(),
        }
    }
    /// Closes (stops a server).
    pub fn close(self) -> Result<()> {
        match self {
            Opened::Kv(e) => e.close(),
            Opened::Sql(e) => e.close(),
        }
    }
}

/// Checks `--set` options for an engine without opening it, so a bad key is
/// reported before anything runs.
pub fn validate_options(kind: EngineKind, options: &EngineOptions) -> Result<()> {
    match kind {
        #[cfg(feature = "rocksdb")]
        EngineKind::Rocksdb => rocksdb::validate(options),
        #[cfg(feature = "wiredtiger")]
        EngineKind::Wiredtiger => wiredtiger::validate(options),
        #[cfg(feature = "lmdb")]
        EngineKind::Lmdb => lmdb::validate(options),
        #[cfg(feature = "leveldb")]
        EngineKind::Leveldb => leveldb::validate(options),
        EngineKind::Sqlite => sqlite::validate(options),
        EngineKind::Null => options.reject_all(kind),
        EngineKind::MariadbInnodb | EngineKind::MariadbMyrocks => mariadb::validate(kind, options),
        EngineKind::Postgres => postgres::validate(options),
        #[allow(unreachable_patterns)]
        other => Err(not_built(other)),
    }
}

#[allow(dead_code)]
fn not_built(kind: EngineKind) -> anyhow::Error {
    anyhow::anyhow!(
        "engine '{kind}' is not compiled into this binary (build with --features {kind})"
    )
}

/// Turns a table name into the name used inside an engine: letters, digits
/// and `_` only, so it is safe in file names, URIs and SQL identifiers.
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
