//! RocksDB through its C API (Debian's librocksdb 7.8.3, via the safe
//! wrapper in `ffi/rocksdb.rs`).
//!
//! Tables are column families; the first table is RocksDB's default column
//! family (as in db_bench, whose writes it is compared with: a write to the
//! default family skips the family lookup, and a one-table workload then
//! has no second, empty family beside it). Options are one RocksDB options
//! string built from our defaults and `--set rocksdb.KEY=VALUE` overrides
//! and handed to `rocksdb_get_options_from_string`, so any RocksDB option
//! works; keys starting with `table.` go into `block_based_table_factory={…}`.
//! The same options object (and so one block cache) serves every column
//! family.
//!
//! Defaults (fair against the other engines: a bloom filter, a block cache
//! of `--cache` bytes, snappy like WiredTiger and LevelDB):
//! `write_buffer_size=64MB`, `max_background_jobs=2`,
//! `level_compaction_dynamic_level_bytes=true`, `compression=kSnappyCompression`,
//! `table.filter_policy=bloomfilter:10:false`, `table.block_cache=<cache>`.
//! `statistics=true|false` (ours) turns RocksDB's tickers on (default) or off.
//! `perf_level=N` (ours) is RocksDB's per-thread perf-context level, set in
//! the thread that opens a session: 1 (counting off, the default, as in
//! db_bench) up to 5. RocksDB's own default, 2, counts into the thread's
//! perf context on every operation, a thread-local lookup each time, which
//! cost ampbench 10% of a fill against db_bench until it was set to 1; we
//! never read the perf context.
//!
//! Transactions: when the caller asks for them (`OpenSpec::transactions`),
//! the database opens as an OptimisticTransactionDB: keys read for update
//! and written are checked at commit, and a commit that lost fails with a
//! conflict (retried by the caller). RocksDB then keeps recent memtables in
//! memory for that check (`max_write_buffer_size_to_maintain`); a plain
//! database is opened otherwise, so db_bench-style runs pay nothing.
//! MyRocks uses RocksDB's pessimistic TransactionDB (locks at read), whose
//! C API has no per-column-family properties (this adapter's compaction
//! stats per table), so it is not used here.

mod options;

use std::os::raw::c_int;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::ffi::rocksdb::{self as ffi, Cf, Db, ReadOptions, Transaction, WriteOptions};
use super::scan::bounded_scan;
use super::{
    BatchOp, Conformance, Durability, Engine, EngineDef, EngineInfo, EngineKind, EngineRef,
    EngineStats, KeyRange, KvEngine, KvSession, OpenSpec, Order, Structure, Table, Transactions,
    WriteBatch,
};
use crate::structure::ModelKnobs;
use options::options_string;
pub use options::{default_settings, validate};

/// The registry entry.
pub const ENGINES: &[EngineDef] = &[EngineDef {
    name: "rocksdb",
    about: "RocksDB (Debian's librocksdb, a leveled LSM)",
    structure: Structure::LeveledLsm,
    model: ModelKnobs {
        page_key: "block_size",
        page_default: 4096.0,
        row_meta: 0.0,
        compresses_pages: false,
    },
    conformance: Conformance::cases(40),
    server: None,
    run_as: None,
    library,
    library_version,
    default_settings,
    io_bound: |memory| {
        vec![
            ("use_direct_reads".into(), "true".into()),
            (
                "use_direct_io_for_flush_and_compaction".into(),
                "true".into(),
            ),
            // All memtables together (a write buffer manager) at an eighth
            // of the limit, at most RocksDB's 64MB memtable: two default
            // memtables alone filled a 128MB limit.
            (
                "db_write_buffer_size".into(),
                super::options::memtables(memory).to_string(),
            ),
            // No one memtable larger than all of them together.
            (
                "write_buffer_size".into(),
                super::options::memtables(memory).to_string(),
            ),
            // Compaction reads ahead 2MB per input file under direct IO
            // unless told (27MB at a time in a LinkBench load).
            ("compaction_readahead_size".into(), "262144".into()),
            // An optimistic transaction database keeps flushed memtables
            // for its conflict checks, by default two full memtables per
            // column family (LinkBench's four families: 512MB, killed at
            // a 160MB limit while loading). An eighth of the memtable
            // budget per family; a transaction older than that history
            // fails its check with "try again" and is retried.
            (
                "max_write_buffer_size_to_maintain".into(),
                (super::options::memtables(memory) / 8).to_string(),
            ),
            // Index and filter blocks in the block cache, so the cache
            // bounds them (outside it, a LinkBench request phase held
            // 16MB of them and a compaction's whole-file filter builder
            // 20MB), partitioned so a point read fetches one 4KB
            // partition, not a file's whole filter (as MyRocks' profile).
            ("table.cache_index_and_filter_blocks".into(), "true".into()),
            ("table.pin_top_level_index_and_filter".into(), "true".into()),
            ("table.partition_filters".into(), "true".into()),
            ("table.index_type".into(), "kTwoLevelIndexSearch".into()),
            ("table.metadata_block_size".into(), "4096".into()),
        ]
    },
    direct_io: true,
    // Read through the page cache; flushes and compactions keep direct
    // IO, so written files do not crowd the blocks read.
    presets: &[(crate::presets::ERA_2015, |_| {
        vec![("use_direct_reads".into(), "false".into())]
    })],
    validate,
    guard: options::guard,
    open: |kind, spec| Ok(Box::new(RocksDb::open(kind, spec)?)),
}];

/// The library file loaded, how the build chose it, and how point reads
/// are made.
fn library() -> Option<String> {
    ffi::library_file()
}

/// The library version, read from the LOG of a scratch database.
pub fn library_version() -> Result<String> {
    let dir = tempfile::tempdir().context("cannot create a scratch directory")?;
    let kind = EngineKind::parse("rocksdb")?;
    let db = RocksDb::open(kind, &OpenSpec::new(dir.path(), vec![], 8 << 20))?;
    Ok(db.info.version)
}

/// A RocksDB database opened with one column family per table.
pub struct RocksDb {
    info: EngineInfo,
    db: Db,
    table_names: Vec<String>,
    read: ReadOptions,
    write_sync: WriteOptions,
    write_nosync: WriteOptions,
    statistics: bool,
    perf_level: c_int,
}

impl RocksDb {
    /// Opens (creating if needed) a database with a column family per table.
    pub fn open(kind: EngineKind, spec: &OpenSpec) -> Result<RocksDb> {
        let mut settings = spec.settings(default_settings);
        let (s, ours) = options_string(&settings)?;
        let mut options = ffi::Options::from_string(&s)
            .with_context(|| format!("rocksdb options '{s}' for {}", spec.dir.display()))?;
        if spec.tables.iter().skip(1).any(|t| t == "default") {
            bail!(
                "rocksdb: only the first table can be named 'default' (it is the default column family)"
            );
        }
        options.create_missing();
        if ours.statistics {
            options.enable_statistics();
        }
        // Table i is family i: the first table is the default family. With
        // no tables the default family is still open (for `rocksdb.stats`).
        let mut names = vec!["default"];
        names.extend(spec.tables.iter().skip(1).map(|t| t.as_str()));
        let db = Db::open(options, &spec.dir, &names, spec.transactions)
            .with_context(|| format!("opening rocksdb in {}", spec.dir.display()))?;
        if spec.transactions {
            settings.push(("transactions".into(), "optimistic".into()));
        }
        Ok(RocksDb {
            info: EngineInfo {
                kind,
                version: ffi::log_version(&spec.dir),
                settings,
                dir: spec.dir.clone(),
            },
            db,
            table_names: spec.tables.clone(),
            read: ReadOptions::new(),
            write_sync: WriteOptions::new(true),
            write_nosync: WriteOptions::new(false),
            statistics: ours.statistics,
            perf_level: ours.perf_level,
        })
    }

    fn cf(&self, t: Table) -> Result<&Cf> {
        match self.db.cf(t.0) {
            Some(cf) if t.0 < self.table_names.len() => Ok(cf),
            _ => Err(super::no_table(t)),
        }
    }

    fn wopts(&self, d: Durability) -> &WriteOptions {
        match d {
            Durability::Sync => &self.write_sync,
            Durability::NoSync => &self.write_nosync,
        }
    }

    fn tables(&self) -> impl Iterator<Item = (&str, &Cf)> {
        self.table_names
            .iter()
            .enumerate()
            .filter_map(|(i, n)| Some((n.as_str(), self.db.cf(i)?)))
    }
}

impl Engine for RocksDb {
    fn info(&self) -> &EngineInfo {
        &self.info
    }
    fn face(&self) -> EngineRef<'_> {
        EngineRef::Kv(self)
    }

    fn stats(&self) -> Result<EngineStats> {
        let mut st = EngineStats::default();
        if let Some(s) = self
            .db
            .cf(0)
            .and_then(|cf| self.db.property(cf, "rocksdb.stats"))
        {
            st.texts.push(("rocksdb.stats".into(), s));
        }
        for (name, cf) in self.tables() {
            if let Some(s) = self.db.property(cf, "rocksdb.cfstats") {
                for (level, col, v) in crate::rocks_family::compaction_stats::parse(&s) {
                    st.values
                        .push((format!("compaction.{col}.{level}.{name}"), v));
                }
                st.texts.push((format!("rocksdb.cfstats.{name}"), s));
            }
            for p in [
                "rocksdb.estimate-live-data-size",
                "rocksdb.total-sst-files-size",
                "rocksdb.estimate-pending-compaction-bytes",
                "rocksdb.estimate-num-keys",
                "rocksdb.num-running-compactions",
            ] {
                if let Some(v) = self.db.property_int(cf, p) {
                    st.values.push((format!("{p}.{name}"), v as f64));
                }
            }
            // What the column family holds that no flush has written yet.
            if let Some(v) = self.db.property_int(cf, "rocksdb.cur-size-all-mem-tables") {
                st.values.push((
                    format!("{}{name}", crate::rocks_family::log::MEMTABLE_STAT),
                    v as f64,
                ));
            }
        }
        let mut log = crate::rocks_family::log::read(&self.info.dir);
        // The first table is the default family: the LOG names it `default`.
        if let (Some(first), Some(w)) = (self.table_names.first(), log.remove("default")) {
            log.insert(first.clone(), w);
        }
        st.values.extend(crate::rocks_family::log::stats(&log));
        if self.statistics {
            let text = self.db.options().statistics();
            for line in text.lines() {
                if let Some((name, rest)) = line.split_once(" COUNT : ") {
                    if let Ok(v) = rest.trim().parse::<f64>() {
                        st.values.push((name.trim().to_string(), v));
                    }
                }
            }
            st.texts.push(("rocksdb.statistics".into(), text));
        }
        Ok(st)
    }

    fn settle(&self) -> Result<String> {
        let start = Instant::now();
        for (_, cf) in self.tables() {
            self.db.flush(cf)?;
        }
        let limit = Duration::from_secs(1800);
        let busy = |cf: &Cf, p: &str| self.db.property_int(cf, p).unwrap_or(0) > 0;
        while self.tables().any(|(_, cf)| {
            busy(cf, "rocksdb.compaction-pending")
                || busy(cf, "rocksdb.num-running-compactions")
                || busy(cf, "rocksdb.num-running-flushes")
        }) {
            if start.elapsed() > limit {
                bail!(
                    "rocksdb: compactions still pending after {}s",
                    limit.as_secs()
                );
            }
            if crate::signals::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
                bail!("rocksdb: settling interrupted");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(format!(
            "flushed memtables and waited for compactions: {:.1}s",
            start.elapsed().as_secs_f64()
        ))
    }
}

impl KvEngine for RocksDb {
    fn session(&self) -> Result<Box<dyn KvSession + '_>> {
        // The perf level is per thread: set it in the thread that opens the
        // session, which is the thread that uses it.
        ffi::set_perf_level(self.perf_level);
        Ok(Box::new(Session {
            e: self,
            batch: ffi::WriteBatch::new(),
            reader: ffi::Reader::new(&self.db),
            txn: None,
            spare: None,
        }))
    }

    fn transactions(&self) -> Transactions {
        if self.db.optimistic() {
            Transactions::Optimistic
        } else {
            Transactions::None
        }
    }
}

/// A thread's session: a write batch reused for every write and a reader
/// whose pinned slice is reused for every point read (as db_bench's threads
/// reuse theirs, so neither costs an allocation), and the transaction
/// object, reused from one transaction to the next.
struct Session<'e> {
    e: &'e RocksDb,
    batch: ffi::WriteBatch,
    reader: ffi::Reader<'e>,
    txn: Option<Transaction<'e>>,
    spare: Option<Transaction<'e>>,
}

impl<'e> Session<'e> {
    fn txn(&mut self) -> Result<&mut Transaction<'e>> {
        self.txn
            .as_mut()
            .ok_or_else(|| anyhow::anyhow!("rocksdb: no transaction is open"))
    }
}

impl KvSession for Session<'_> {
    fn get(&mut self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let cf = self.e.cf(table)?;
        self.reader.get(&self.e.read, cf, key, <[u8]>::to_vec)
    }

    fn get_len(&mut self, table: Table, key: &[u8]) -> Result<Option<usize>> {
        let cf = self.e.cf(table)?;
        self.reader.get(&self.e.read, cf, key, <[u8]>::len)
    }

    fn put(&mut self, table: Table, key: &[u8], value: &[u8], d: Durability) -> Result<()> {
        let cf = self.e.cf(table)?;
        self.batch.clear();
        self.batch.put((table.0 != 0).then_some(cf), key, value);
        self.e.db.write(self.e.wopts(d), &self.batch)
    }

    fn delete(&mut self, table: Table, key: &[u8], d: Durability) -> Result<()> {
        self.e.db.delete(self.e.wopts(d), self.e.cf(table)?, key)
    }

    fn write(&mut self, batch: &WriteBatch, d: Durability) -> Result<()> {
        self.batch.clear();
        for op in batch.iter() {
            match op {
                BatchOp::Put { table, key, value } => {
                    let cf = self.e.cf(table)?;
                    self.batch.put((table.0 != 0).then_some(cf), key, value)
                }
                BatchOp::Delete { table, key } => self.batch.delete(self.e.cf(table)?, key),
            }
        }
        self.e.db.write(self.e.wopts(d), &self.batch)
    }

    fn scan(
        &mut self,
        table: Table,
        range: KeyRange<'_>,
        order: Order,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let mut it = self.e.db.iter(&self.e.read, self.e.cf(table)?);
        bounded_scan(&mut it, range, order, limit, visit)
    }

    fn txn_begin(&mut self, d: Durability) -> Result<()> {
        if self.txn.is_some() {
            bail!("rocksdb: a transaction is already open in this session");
        }
        let reuse = self.spare.take();
        self.txn = Some(self.e.db.begin(self.e.wopts(d), reuse)?);
        Ok(())
    }
    fn txn_get(&mut self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let (e, cf) = (self.e, self.e.cf(table)?);
        self.txn()?.get_for_update(&e.read, cf, key)
    }
    fn txn_put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        let cf = self.e.cf(table)?;
        self.txn()?.put(cf, key, value)
    }
    fn txn_delete(&mut self, table: Table, key: &[u8]) -> Result<()> {
        let cf = self.e.cf(table)?;
        self.txn()?.delete(cf, key)
    }
    fn txn_commit(&mut self) -> Result<()> {
        let mut t = self
            .txn
            .take()
            .ok_or_else(|| anyhow::anyhow!("rocksdb: no transaction is open"))?;
        let r = t.commit();
        self.spare = Some(t);
        r
    }
    fn txn_rollback(&mut self) -> Result<()> {
        match self.txn.take() {
            Some(mut t) => {
                let r = t.rollback();
                self.spare = Some(t);
                r
            }
            None => Ok(()),
        }
    }
}
