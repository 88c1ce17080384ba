//! WiredTiger through its C API (Debian's libwiredtiger 3.2.1, via the safe
//! wrapper in `ffi/wiredtiger.rs`).
//!
//! Tables are `table:NAME` with raw byte keys and values (`u`/`u`). A
//! WT_SESSION is single-threaded, so each worker thread opens its own
//! session (with its own cursors): nothing is shared or locked on the
//! measured path. A non-transactional write that conflicts with a
//! concurrent one (`WT_ROLLBACK`) is retried.
//!
//! Defaults (like MongoDB's): `cache_size=<cache>`, `log=(enabled=true)`,
//! `checkpoint=(wait=60)`, `statistics=(fast)`, snappy block compression
//! when Debian's snappy extension is present. `--set wiredtiger.KEY=VALUE`
//! adds to the `wiredtiger_open` config; `table.KEY` keys go to the
//! table's create config. WiredTiger itself validates both.
//! A sync write commits with `sync=on`; a no-sync one leaves the log in
//! WiredTiger's buffer (`transaction_sync` is off).
//!
//! Transactions run at snapshot isolation: the first updater of a key wins
//! and a later concurrent update fails at once with a conflict.

use std::ffi::{CStr, CString};
use std::path::Path;

use anyhow::{Context, Result};

use super::ffi::wiredtiger::{self as ffi, Connection};
use super::scan::bounded_scan;
use super::{
    Backoff, BatchOp, Conformance, Durability, Engine, EngineDef, EngineInfo, EngineKind,
    EngineOptions, EngineRef, EngineStats, KeyRange, KvEngine, KvSession, OpenSpec, Order,
    Structure, Table, Transactions, WriteBatch, is_conflict,
};
use crate::UsageError;
use crate::structure::ModelKnobs;

/// The registry entry.
pub const ENGINES: &[EngineDef] = &[EngineDef {
    name: "wiredtiger",
    about: "WiredTiger (Debian's libwiredtiger, a B-Tree)",
    structure: Structure::UpdateInPlaceBTree,
    model: ModelKnobs {
        page_key: "table.leaf_page_max",
        page_default: 32768.0,
        row_meta: 0.0,
        compresses_pages: true,
    },
    // Opening reads the log to its end: a 100 MB file by default, read
    // again at each of the suite's reopens (most of its CPU time).
    conformance: Conformance {
        cases: 40,
        settings: &[("log", "(enabled=true,file_max=1MB)")],
    },
    server: None,
    run_as: None,
    library: || ffi::library_file(),
    library_version: || Ok(ffi::version()),
    default_settings,
    io_bound: |_| vec![("direct_io".into(), "[data]".into())],
    direct_io: true,
    // MongoDB's WiredTiger never used direct IO: the page cache held its
    // compressed blocks beside its own cache.
    presets: &[(crate::presets::ERA_2015, |_| {
        vec![("direct_io".into(), "[]".into())]
    })],
    validate,
    guard,
    open: |kind, spec| Ok(Box::new(WiredTiger::open(kind, spec)?)),
}];

/// Where Debian puts the snappy compressor extension, if installed.
fn snappy_extension() -> Option<&'static str> {
    [
        "/usr/lib/x86_64-linux-gnu/libwiredtiger_snappy.so",
        "/usr/lib/aarch64-linux-gnu/libwiredtiger_snappy.so",
        "/usr/lib/libwiredtiger_snappy.so",
    ]
    .into_iter()
    .find(|p| Path::new(p).exists())
}

/// The default settings for a cache size (see the module doc).
pub fn default_settings(cache_bytes: u64) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = vec![
        (
            "cache_size".into(),
            crate::units::format_size(cache_bytes.max(1 << 20)),
        ),
        ("log".into(), "(enabled=true)".into()),
        ("checkpoint".into(), "(wait=60)".into()),
        ("statistics".into(), "(fast)".into()),
        ("session_max".into(), "256".into()),
    ];
    if let Some(p) = snappy_extension() {
        v.push(("extensions".into(), format!("[{p}]")));
        v.push(("table.block_compressor".into(), "snappy".into()));
    }
    v
}

fn split_configs(settings: &[(String, String)]) -> (String, String) {
    let mut open = vec!["create".to_string()];
    let mut table = vec!["key_format=u".to_string(), "value_format=u".to_string()];
    for (k, v) in settings {
        match k.strip_prefix("table.") {
            Some(t) => table.push(format!("{t}={v}")),
            None => open.push(format!("{k}={v}")),
        }
    }
    (open.join(","), table.join(","))
}

/// Judges one option: loading extensions (shared libraries), a path for
/// the engine's files (`log=(path=…)`) or a table's data source elsewhere
/// are unsafe (see `engine::guard`).
pub fn guard(key: &str, value: &str) -> Option<super::guard::Refusal> {
    use super::guard::{Refusal, names_in_value, norm};
    let (table, k) = match key.strip_prefix("table.") {
        Some(t) => (true, norm(t, '_')),
        None => (false, norm(key, '_')),
    };
    if table && ["source", "type"].contains(&k.as_str()) {
        return Some(Refusal::Unsafe(key.to_string()));
    }
    // The key and every name in the value, as WiredTiger's parser reads
    // them (`=` or `:`, quoted or not).
    std::iter::once(k.clone())
        .chain(names_in_value(value, '_'))
        .find(|n| ["extensions", "builtin_extension_config", "path"].contains(&n.as_str()))
        .map(|n| {
            Refusal::Unsafe(if n == k {
                key.to_string()
            } else {
                format!("{key}=(…{n}…)")
            })
        })
}

/// Checks `--set wiredtiger.*` options with WiredTiger's own validator.
pub fn validate(_kind: EngineKind, options: &EngineOptions) -> Result<()> {
    for (k, v) in &options.pairs {
        let (method, cfg) = match k.strip_prefix("table.") {
            Some(t) => ("WT_SESSION.create", format!("{t}={v}")),
            None => ("wiredtiger_open", format!("{k}={v}")),
        };
        if let Err(e) = ffi::validate(method, &cfg) {
            return Err(UsageError(format!("invalid option 'wiredtiger.{k}={v}': {e}")).into());
        }
    }
    Ok(())
}

/// Changes per transaction in an unsynced load batch (see `write_load`):
/// one per 64 KiB of cache (a random change dirties a page of up to
/// 32 KiB), between 64 and 4096 — a 256MB cache keeps whole 4096-row
/// batches, a 64MB one commits every 1024 changes.
fn load_chunk(settings: &[(String, String)]) -> usize {
    let cache = settings
        .iter()
        .rev()
        .find(|(k, _)| k == "cache_size")
        .and_then(|(_, v)| crate::units::parse_size(v).ok())
        .unwrap_or(256 << 20);
    ((cache >> 16) as usize).clamp(64, 4096)
}

/// A WiredTiger connection and its tables.
pub struct WiredTiger {
    info: EngineInfo,
    // Declared before `conn`: nothing here borrows it, but sessions do, and
    // they are gone before the engine is.
    uris: Vec<CString>,
    conn: Connection,
    load_chunk: usize,
}

impl WiredTiger {
    /// Opens (creating if needed) a connection and its tables.
    pub fn open(kind: EngineKind, spec: &OpenSpec) -> Result<WiredTiger> {
        validate(kind, &spec.options)?;
        let settings = spec.settings(default_settings);
        let (open_cfg, table_cfg) = split_configs(&settings);
        let conn = Connection::open(&spec.dir, &open_cfg)?;
        let uris = spec
            .tables
            .iter()
            .map(|t| CString::new(format!("table:{t}")).context("uri"))
            .collect::<Result<Vec<_>>>()?;
        {
            let mut s = conn.session(&uris)?;
            for uri in &uris {
                s.create(uri, &table_cfg)?;
            }
        }
        Ok(WiredTiger {
            load_chunk: load_chunk(&settings),
            info: EngineInfo {
                kind,
                version: ffi::version(),
                settings,
                dir: spec.dir.clone(),
            },
            uris,
            conn,
        })
    }
}

impl Engine for WiredTiger {
    fn info(&self) -> &EngineInfo {
        &self.info
    }
    fn face(&self) -> EngineRef<'_> {
        EngineRef::Kv(self)
    }
    fn stats(&self) -> Result<EngineStats> {
        let values = self.conn.session(&self.uris)?.statistics()?;
        Ok(EngineStats {
            values: values.into_iter().map(|(d, v)| (d, v as f64)).collect(),
            texts: Vec::new(),
        })
    }
    fn settle(&self) -> Result<String> {
        let t = std::time::Instant::now();
        self.conn.session(&self.uris)?.checkpoint()?;
        Ok(format!("checkpoint: {:.1}s", t.elapsed().as_secs_f64()))
    }
    fn close(self: Box<Self>) -> Result<()> {
        self.conn.close()
    }
}

impl KvEngine for WiredTiger {
    fn session(&self) -> Result<Box<dyn KvSession + '_>> {
        Ok(Box::new(Session {
            s: self.conn.session(&self.uris)?,
            commit: None,
            load_chunk: self.load_chunk,
        }))
    }
    fn transactions(&self) -> Transactions {
        Transactions::Snapshot
    }
}

/// The commit configuration for a durability.
fn commit_config(d: Durability) -> &'static CStr {
    match d {
        Durability::Sync => c"sync=on",
        Durability::NoSync => c"",
    }
}

/// A thread's WiredTiger session.
struct Session<'e> {
    s: ffi::Session<'e>,
    /// The open transaction's commit configuration.
    commit: Option<&'static CStr>,
    /// Changes per transaction in an unsynced load batch.
    load_chunk: usize,
}

impl Session<'_> {
    /// Runs `f` as one transaction committed with `d`, retrying conflicts.
    fn transact(
        &mut self,
        d: Durability,
        f: impl Fn(&mut ffi::Session<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut backoff = Backoff::new(std::time::Duration::from_secs(60));
        loop {
            self.s.begin(c"")?;
            let e = match f(&mut self.s) {
                // A failed commit has rolled back already.
                Ok(()) => match self.s.commit(commit_config(d)) {
                    Ok(()) => return Ok(()),
                    Err(e) => e,
                },
                Err(e) => {
                    self.s.rollback()?;
                    e
                }
            };
            if !is_conflict(&e) {
                return Err(e);
            }
            backoff.wait(&"wiredtiger write")?;
        }
    }
}

impl KvSession for Session<'_> {
    fn get(&mut self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.s.search(table.0, key, |v| v.to_vec())
    }
    fn get_len(&mut self, table: Table, key: &[u8]) -> Result<Option<usize>> {
        self.s.search(table.0, key, |v| v.len())
    }
    fn put(&mut self, table: Table, key: &[u8], value: &[u8], d: Durability) -> Result<()> {
        self.transact(d, |s| s.insert(table.0, key, value))
    }
    fn delete(&mut self, table: Table, key: &[u8], d: Durability) -> Result<()> {
        self.transact(d, |s| s.remove(table.0, key))
    }
    fn write(&mut self, batch: &WriteBatch, d: Durability) -> Result<()> {
        self.transact(d, |s| {
            batch.iter().try_for_each(|op| match op {
                BatchOp::Put { table, key, value } => s.insert(table.0, key, value),
                BatchOp::Delete { table, key } => s.remove(table.0, key),
            })
        })
    }
    fn write_load(&mut self, batch: &WriteBatch, d: Durability) -> Result<()> {
        if d != Durability::NoSync {
            return self.write(batch, d);
        }
        // A 4096-row batch of random keys in one transaction pins its
        // pages: a cache smaller than them rolls the batch back forever.
        // Smaller transactions pin a share of the cache (`load_chunk`).
        let ops: Vec<_> = batch.iter().collect();
        let n = self.load_chunk;
        ops.chunks(n).try_for_each(|chunk| {
            self.transact(d, |s| {
                chunk.iter().try_for_each(|op| match op {
                    BatchOp::Put { table, key, value } => s.insert(table.0, key, value),
                    BatchOp::Delete { table, key } => s.remove(table.0, key),
                })
            })
        })
    }
    fn scan(
        &mut self,
        table: Table,
        range: KeyRange<'_>,
        order: Order,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        bounded_scan(
            &mut self.s.scan_cursor(table.0)?,
            range,
            order,
            limit,
            visit,
        )
    }

    fn txn_begin(&mut self, d: Durability) -> Result<()> {
        self.s.begin(c"isolation=snapshot")?;
        self.commit = Some(commit_config(d));
        Ok(())
    }
    fn txn_get(&mut self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get(table, key)
    }
    fn txn_put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        self.s.insert(table.0, key, value)
    }
    fn txn_delete(&mut self, table: Table, key: &[u8]) -> Result<()> {
        self.s.remove(table.0, key)
    }
    fn txn_commit(&mut self) -> Result<()> {
        let cfg = self
            .commit
            .take()
            .ok_or_else(|| anyhow::anyhow!("wiredtiger: no transaction is open"))?;
        self.s.commit(cfg)
    }
    fn txn_rollback(&mut self) -> Result<()> {
        match self.commit.take() {
            Some(_) => self.s.rollback(),
            None => Ok(()),
        }
    }
}
