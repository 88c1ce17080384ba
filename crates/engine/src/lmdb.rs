//! LMDB through its C API (Debian's liblmdb 0.9.24, via the safe wrapper in
//! `ffi/lmdb.rs`).
//!
//! Tables are named databases in one environment. Each session keeps one
//! read-only transaction that it renews for every read and resets after
//! (LMDB's recommended pattern: no allocation, no lock per read); every
//! write is a write transaction (LMDB runs one writer at a time, so its
//! transactions are serial: they never conflict). The environment is
//! opened with `MDB_NOSYNC`: a no-sync commit leaves the pages to the OS.
//! A sync commit turns `MDB_NOSYNC` off for itself, so LMDB syncs the
//! data pages before it writes the meta page (synced too). Syncing after a
//! no-sync commit instead (`mdb_env_sync` once the commit returned), as
//! this engine once did, is durable on return but not power-safe: the
//! kernel may write the meta page before the pages it points to, and a
//! power cut between them leaves a half-written transaction
//! (`crashcheck --power-cut` found it: counts that did not match their
//! links).
//!
//! Options (`--set lmdb.KEY=VALUE`): `map_size` (default 64GB, address
//! space only: the file grows as pages are used), `max_readers` (256),
//! `writemap` and `nordahead` (`true`/`false`, default false). LMDB has no
//! cache of its own: it reads through the OS page cache, so `--cache` does
//! not apply.

use anyhow::{Context, Result, anyhow, bail};

use super::ffi::lmdb::{self as ffi, Dbi, Env, EnvConfig, HeldTxn, RoTxn, RwTxn};
use super::scan::bounded_scan;
use super::{
    BatchOp, Conformance, Durability, Engine, EngineDef, EngineInfo, EngineKind, EngineOptions,
    EngineRef, EngineStats, KeyRange, KvEngine, KvSession, OpenSpec, Order, Structure, Table,
    Transactions, WriteBatch, table_of,
};
use crate::UsageError;
use crate::structure::ModelKnobs;

/// The registry entry.
pub const ENGINES: &[EngineDef] = &[EngineDef {
    name: "lmdb",
    about: "LMDB (Debian's liblmdb, a copy-on-write B-Tree)",
    structure: Structure::CopyOnWriteBTree,
    model: ModelKnobs::PLAIN,
    conformance: Conformance::cases(40),
    server: None,
    run_as: None,
    library: || ffi::library_file(),
    library_version: || Ok(ffi::version()),
    default_settings,
    // No readahead: a page fault on the map otherwise reads ahead whole
    // extents, which a memory limit evicts unread (at slow-ssd, 4 GB read
    // per 10,000 faults, the 400 MB/s cap, instead of 40 MB).
    io_bound: |_| vec![("nordahead".into(), "true".into())],
    direct_io: false,
    presets: &[],
    validate: validate_by_opening,
    guard: super::guard::none,
    open: |kind, spec| Ok(Box::new(Lmdb::open(kind, spec)?)),
}];

const KNOWN: &[&str] = &["map_size", "max_readers", "writemap", "nordahead"];

/// The default settings (LMDB has no cache: the OS page cache serves it).
pub fn default_settings(_cache_bytes: u64) -> Vec<(String, String)> {
    vec![
        ("map_size".into(), "64GB".into()),
        ("max_readers".into(), "256".into()),
        ("writemap".into(), "false".into()),
        ("nordahead".into(), "false".into()),
    ]
}

/// The settings parsed into an environment configuration.
fn parse(settings: &[(String, String)], tables: usize) -> Result<EnvConfig> {
    let get = |key: &str| {
        settings
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map_or("", |(_, v)| v.as_str())
    };
    let flag = |key: &str| match get(key) {
        "" | "false" | "0" | "off" => Ok(false),
        "true" | "1" | "on" => Ok(true),
        v => Err(UsageError(format!(
            "option 'lmdb.{key}={v}': expected true or false"
        ))),
    };
    Ok(EnvConfig {
        map_size: crate::units::parse_size(get("map_size"))
            .map_err(|e| UsageError(format!("option 'lmdb.map_size': {e}")))?,
        max_readers: get("max_readers")
            .parse()
            .map_err(|_| UsageError("option 'lmdb.max_readers': expected a whole number".into()))?,
        max_dbs: tables as u32 + 1,
        writemap: flag("writemap")?,
        nordahead: flag("nordahead")?,
    })
}

/// Checks `--set lmdb.*` options.
pub fn validate(kind: EngineKind, options: &EngineOptions) -> Result<()> {
    options.check_known(kind, KNOWN)?;
    parse(&options.merged_over(&default_settings(0)), 0).map(|_| ())
}

/// Checks `--set lmdb.*` options, then opens an environment with them in
/// a fresh temporary directory (random name, 0700, removed after): a
/// setting LMDB refuses only at open (a map too small for its first
/// pages) is bad input, said before anything runs.
fn validate_by_opening(kind: EngineKind, options: &EngineOptions) -> Result<()> {
    validate(kind, options)?;
    let cfg = parse(&options.merged_over(&default_settings(0)), 1)?;
    let dir = tempfile::Builder::new()
        .prefix("ampbench-lmdb-check-")
        .tempdir()
        .context("a temporary directory to check the lmdb options in")?;
    Env::open(dir.path(), cfg)
        .and_then(|env| env.open_dbs(&["check".to_string()]).map(|_| ()))
        .map_err(|e| UsageError(format!("--set lmdb: LMDB refused these options: {e:#}")).into())
}

/// An LMDB environment with one named database per table.
pub struct Lmdb {
    info: EngineInfo,
    env: Env,
    /// Held by every commit (see `Session::commit`).
    commit_lock: std::sync::Mutex<()>,
    dbis: Vec<Dbi>,
    names: Vec<String>,
}

impl Lmdb {
    /// Opens (creating if needed) an environment and its named databases.
    pub fn open(kind: EngineKind, spec: &OpenSpec) -> Result<Lmdb> {
        validate(kind, &spec.options)?;
        let settings = spec.settings(default_settings);
        let env = Env::open(&spec.dir, parse(&settings, spec.tables.len())?)?;
        let dbis = env.open_dbs(&spec.tables)?;
        Ok(Lmdb {
            info: EngineInfo {
                kind,
                version: ffi::version(),
                settings,
                dir: spec.dir.clone(),
            },
            env,
            commit_lock: std::sync::Mutex::new(()),
            dbis,
            names: spec.tables.clone(),
        })
    }

    fn dbi(&self, t: Table) -> Result<Dbi> {
        table_of(&self.dbis, t).copied()
    }
}

impl Engine for Lmdb {
    fn info(&self) -> &EngineInfo {
        &self.info
    }
    fn face(&self) -> EngineRef<'_> {
        EngineRef::Kv(self)
    }
    fn stats(&self) -> Result<EngineStats> {
        let mut st = EngineStats::default();
        let i = self.env.info()?;
        for (k, v) in [
            ("env.map_size", i.map_size as f64),
            ("env.last_pgno", i.last_pgno as f64),
            ("env.last_txnid", i.last_txnid as f64),
            ("env.num_readers", i.num_readers as f64),
            ("env.page_size", i.page_size as f64),
        ] {
            st.values.push((k.into(), v));
        }
        let txn = self.env.read_txn()?;
        for (dbi, name) in self.dbis.iter().zip(&self.names) {
            if let Ok(s) = txn.stat(*dbi) {
                for (k, v) in [
                    ("depth", s.depth as f64),
                    ("branch_pages", s.branch_pages as f64),
                    ("leaf_pages", s.leaf_pages as f64),
                    ("overflow_pages", s.overflow_pages as f64),
                    ("entries", s.entries as f64),
                ] {
                    st.values.push((format!("{name}.{k}"), v));
                }
            }
        }
        Ok(st)
    }
    fn settle(&self) -> Result<String> {
        self.env.sync()?;
        Ok("mdb_env_sync: dirty pages written and synced (LMDB has no background work)".into())
    }
}

impl KvEngine for Lmdb {
    fn session(&self) -> Result<Box<dyn KvSession + '_>> {
        Ok(Box::new(Session {
            e: self,
            ro: None,
            txn: None,
        }))
    }
    fn transactions(&self) -> Transactions {
        Transactions::Serial
    }
}

/// A thread's session: a reusable read transaction, and the open write
/// transaction with its commit's durability.
struct Session<'e> {
    e: &'e Lmdb,
    ro: Option<RoTxn<'e>>,
    txn: Option<(HeldTxn<'e>, Durability)>,
}

impl<'e> Session<'e> {
    /// Runs `f` on a fresh snapshot: the kept read transaction, renewed,
    /// and reset afterwards.
    fn read<R>(&mut self, f: impl FnOnce(&RoTxn<'e>) -> Result<R>) -> Result<R> {
        let mut t = match self.ro.take() {
            Some(mut t) => {
                t.renew()?;
                t
            }
            None => self.e.env.read_txn()?,
        };
        let r = f(&t);
        t.reset();
        self.ro = Some(t);
        r
    }

    /// Commits a write transaction, syncing when asked: with `MDB_NOSYNC`
    /// off for this commit, so the data pages are synced before the meta
    /// page is written. The flag changes only under `commit_lock`, and
    /// every commit holds it, so no commit sees another's setting.
    fn commit(&self, t: RwTxn<'_>, d: Durability) -> Result<()> {
        // A poisoned lock guards no data: the flag is set anew each time.
        let _held = self.e.commit_lock.lock().unwrap_or_else(|e| e.into_inner());
        if d != Durability::Sync {
            return t.commit();
        }
        self.e.env.set_nosync(false)?;
        let r = t.commit();
        let back = self.e.env.set_nosync(true);
        r.and(back)
    }

    /// A write transaction for one write outside `begin`/`commit`.
    fn writer(&self) -> Result<RwTxn<'e>> {
        if self.txn.is_some() {
            bail!("lmdb: a write outside the open transaction would wait for it forever");
        }
        self.e.env.write_txn()
    }

    fn open_txn(&mut self) -> Result<&mut RwTxn<'e>> {
        self.txn
            .as_mut()
            .ok_or_else(|| anyhow!("lmdb: no transaction is open"))?
            .0
            .get()
    }
}

impl KvSession for Session<'_> {
    fn get(&mut self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let dbi = self.e.dbi(table)?;
        self.read(|t| Ok(t.get(dbi, key)?.map(|v| v.to_vec())))
    }
    fn get_len(&mut self, table: Table, key: &[u8]) -> Result<Option<usize>> {
        let dbi = self.e.dbi(table)?;
        self.read(|t| Ok(t.get(dbi, key)?.map(|v| v.len())))
    }
    fn write(&mut self, batch: &WriteBatch, d: Durability) -> Result<()> {
        let mut t = self.writer()?;
        for op in batch.iter() {
            match op {
                BatchOp::Put { table, key, value } => t.put(self.e.dbi(table)?, key, value)?,
                BatchOp::Delete { table, key } => t.delete(self.e.dbi(table)?, key)?,
            }
        }
        self.commit(t, d)
    }
    fn put(&mut self, table: Table, key: &[u8], value: &[u8], d: Durability) -> Result<()> {
        let mut t = self.writer()?;
        t.put(self.e.dbi(table)?, key, value)?;
        self.commit(t, d)
    }
    fn scan(
        &mut self,
        table: Table,
        range: KeyRange<'_>,
        order: Order,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let dbi = self.e.dbi(table)?;
        self.read(|t| bounded_scan(&mut t.cursor(dbi)?, range, order, limit, visit))
    }

    fn txn_begin(&mut self, d: Durability) -> Result<()> {
        if self.txn.is_some() {
            bail!("lmdb: a transaction is already open in this session");
        }
        let t = self.e.env.write_txn().context("lmdb: begin")?;
        self.txn = Some((HeldTxn::hold(t), d));
        Ok(())
    }
    fn txn_get(&mut self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let dbi = self.e.dbi(table)?;
        Ok(self.open_txn()?.get(dbi, key)?.map(|v| v.to_vec()))
    }
    fn txn_put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        let dbi = self.e.dbi(table)?;
        self.open_txn()?.put(dbi, key, value)
    }
    fn txn_delete(&mut self, table: Table, key: &[u8]) -> Result<()> {
        let dbi = self.e.dbi(table)?;
        self.open_txn()?.delete(dbi, key)
    }
    fn txn_commit(&mut self) -> Result<()> {
        let (t, d) = self
            .txn
            .take()
            .ok_or_else(|| anyhow!("lmdb: no transaction is open"))?;
        self.commit(t.into_inner()?, d)
    }
    fn txn_rollback(&mut self) -> Result<()> {
        self.txn = None;
        Ok(())
    }
}
