//! SQLite through rusqlite, linked against the system library (Debian's
//! libsqlite3), in WAL mode.
//!
//! Tables are `WITHOUT ROWID` tables `(k BLOB PRIMARY KEY, v BLOB)`: a
//! clustered B-Tree, like the other engines' tables. A connection serves one
//! thread at a time, so the adapter keeps a pool. A sync write runs with
//! `PRAGMA synchronous=FULL` (the WAL is synced at commit), a no-sync write
//! with `NORMAL` (synced only at checkpoints).
//!
//! Options (`--set sqlite.KEY=VALUE`) are PRAGMAs, checked against SQLite's
//! own `pragma_list`: defaults `journal_mode=WAL`, `page_size=4096`,
//! `cache_size=-<cache KiB>` (per connection), `busy_timeout=10000`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result, anyhow};
use rusqlite::{Connection, OptionalExtension, params};

use super::{
    BatchOp, Durability, EngineKind, EngineOptions, EngineStats, KeyRange, KvEngine, OpenSpec,
    Order, Table, WriteBatch,
};
use crate::UsageError;
use std::ops::Bound;

/// The default settings for a cache size (see the module doc).
pub fn default_settings(cache_bytes: u64) -> Vec<(String, String)> {
    vec![
        ("journal_mode".into(), "WAL".into()),
        ("page_size".into(), "4096".into()),
        (
            "cache_size".into(),
            format!("-{}", (cache_bytes / 1024).max(1)),
        ),
        ("busy_timeout".into(), "10000".into()),
    ]
}

/// Checks `--set sqlite.*` keys against SQLite's list of PRAGMAs.
pub fn validate(options: &EngineOptions) -> Result<()> {
    if options.pairs.is_empty() {
        return Ok(());
    }
    let c = Connection::open_in_memory().context("sqlite: in-memory connection")?;
    let mut stmt = c.prepare("SELECT name FROM pragma_pragma_list")?;
    let names: Vec<String> = stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for (k, v) in &options.pairs {
        if k == "synchronous" {
            return Err(UsageError(format!(
                "option 'sqlite.{k}={v}': durability is set per write by the workload (sync or not)"
            ))
            .into());
        }
        if !names.iter().any(|n| n == k) {
            return Err(
                UsageError(format!("unknown option 'sqlite.{k}': not a SQLite PRAGMA")).into(),
            );
        }
        if !v
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(UsageError(format!(
                "option 'sqlite.{k}={v}': value must be a word or number"
            ))
            .into());
        }
    }
    Ok(())
}

/// The linked SQLite library version.
pub fn library_version() -> String {
    format!("SQLite {}", rusqlite::version())
}

/// One pooled connection, with the synchronous mode it is in.
struct Conn {
    c: Connection,
    sync: Option<Durability>,
}

/// A SQLite database file with a pool of connections.
pub struct Sqlite {
    path: PathBuf,
    dir: PathBuf,
    tables: Vec<String>,
    pool: Mutex<Vec<Conn>>,
    settings: Vec<(String, String)>,
}

impl Sqlite {
    /// Opens (creating if needed) `DIR/db.sqlite` and its tables.
    pub fn open(spec: &OpenSpec) -> Result<Sqlite> {
        validate(&spec.options)?;
        let settings = spec
            .options
            .merged_over(&default_settings(spec.cache_bytes));
        let mut tables = Vec::new();
        for t in &spec.tables {
            super::check_table_name(t)?;
            tables.push(format!("t_{t}"));
        }
        let s = Sqlite {
            path: spec.dir.join("db.sqlite"),
            dir: spec.dir.clone(),
            tables,
            pool: Mutex::new(Vec::new()),
            settings,
        };
        let c = s.connect()?;
        for t in &s.tables {
            c.c.execute_batch(&format!(
                "CREATE TABLE IF NOT EXISTS {t} (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID"
            ))
            .with_context(|| format!("sqlite: creating table {t}"))?;
        }
        s.give(c);
        Ok(s)
    }

    fn connect(&self) -> Result<Conn> {
        let c = Connection::open(&self.path)
            .with_context(|| format!("sqlite: opening {}", self.path.display()))?;
        for (k, v) in &self.settings {
            // PRAGMA values cannot be bound as parameters; validate() allows
            // only words and numbers.
            c.query_row(&format!("PRAGMA {k}={v}"), [], |_| Ok(()))
                .optional()
                .with_context(|| format!("sqlite: PRAGMA {k}={v}"))?;
        }
        Ok(Conn { c, sync: None })
    }

    fn take(&self) -> Result<Conn> {
        if let Some(c) = self
            .pool
            .lock()
            .map_err(|_| anyhow!("pool poisoned"))?
            .pop()
        {
            return Ok(c);
        }
        self.connect()
    }

    fn give(&self, c: Conn) {
        if let Ok(mut p) = self.pool.lock() {
            p.push(c);
        }
    }

    fn with<R>(&self, f: impl FnOnce(&Self, &mut Conn) -> Result<R>) -> Result<R> {
        let mut c = self.take()?;
        let r = f(self, &mut c);
        self.give(c);
        r
    }

    fn table(&self, t: Table) -> Result<&str> {
        self.tables
            .get(t.0)
            .map(|s| s.as_str())
            .ok_or_else(|| super::no_table(t))
    }
}

fn set_sync(c: &mut Conn, d: Durability) -> Result<()> {
    if c.sync != Some(d) {
        let mode = match d {
            Durability::Sync => "FULL",
            Durability::NoSync => "NORMAL",
        };
        c.c.execute_batch(&format!("PRAGMA synchronous={mode}"))?;
        c.sync = Some(d);
    }
    Ok(())
}

impl KvEngine for Sqlite {
    fn kind(&self) -> EngineKind {
        EngineKind::Sqlite
    }
    fn version(&self) -> String {
        library_version()
    }
    fn settings(&self) -> Vec<(String, String)> {
        self.settings.clone()
    }
    fn dir(&self) -> &Path {
        &self.dir
    }

    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.with(|me, c| {
            let t = me.table(table)?;
            let mut st =
                c.c.prepare_cached(&format!("SELECT v FROM {t} WHERE k = ?1"))?;
            Ok(st
                .query_row(params![key], |r| r.get::<_, Vec<u8>>(0))
                .optional()?)
        })
    }

    fn put(&self, table: Table, key: &[u8], value: &[u8], d: Durability) -> Result<()> {
        self.with(|me, c| {
            let t = me.table(table)?;
            set_sync(c, d)?;
            let mut st = c.c.prepare_cached(&format!(
                "INSERT OR REPLACE INTO {t} (k, v) VALUES (?1, ?2)"
            ))?;
            st.execute(params![key, value])?;
            Ok(())
        })
    }

    fn write(&self, batch: &WriteBatch, d: Durability) -> Result<()> {
        self.with(|me, c| {
            set_sync(c, d)?;
            let tx =
                c.c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            for op in &batch.ops {
                match op {
                    BatchOp::Put { table, key, value } => {
                        let t = me.table(*table)?;
                        let mut st = tx.prepare_cached(&format!(
                            "INSERT OR REPLACE INTO {t} (k, v) VALUES (?1, ?2)"
                        ))?;
                        st.execute(params![key, value])?;
                    }
                    BatchOp::Delete { table, key } => {
                        let t = me.table(*table)?;
                        let mut st = tx.prepare_cached(&format!("DELETE FROM {t} WHERE k = ?1"))?;
                        st.execute(params![key])?;
                    }
                }
            }
            tx.commit()?;
            Ok(())
        })
    }

    fn scan(
        &self,
        table: Table,
        range: KeyRange<'_>,
        order: Order,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        self.with(|me, c| {
            let t = me.table(table)?;
            let mut conds = Vec::new();
            let mut args: Vec<&[u8]> = Vec::new();
            match range.start {
                Bound::Included(s) => {
                    args.push(s);
                    conds.push(format!("k >= ?{}", args.len()));
                }
                Bound::Excluded(s) => {
                    args.push(s);
                    conds.push(format!("k > ?{}", args.len()));
                }
                Bound::Unbounded => {}
            }
            match range.end {
                Bound::Included(e) => {
                    args.push(e);
                    conds.push(format!("k <= ?{}", args.len()));
                }
                Bound::Excluded(e) => {
                    args.push(e);
                    conds.push(format!("k < ?{}", args.len()));
                }
                Bound::Unbounded => {}
            }
            let where_ = if conds.is_empty() {
                String::new()
            } else {
                format!("WHERE {}", conds.join(" AND "))
            };
            let dir = match order {
                Order::Forward => "ASC",
                Order::Reverse => "DESC",
            };
            let lim = i64::try_from(limit).unwrap_or(i64::MAX);
            let sql = format!("SELECT k, v FROM {t} {where_} ORDER BY k {dir} LIMIT {lim}");
            let mut st = c.c.prepare_cached(&sql)?;
            let mut rows = st.query(rusqlite::params_from_iter(args.iter()))?;
            let mut n = 0;
            while let Some(r) = rows.next()? {
                let k = r.get_ref(0)?.as_blob()?;
                let v = r.get_ref(1)?.as_blob()?;
                visit(k, v);
                n += 1;
            }
            Ok(n)
        })
    }

    fn stats(&self) -> Result<EngineStats> {
        self.with(|_, c| {
            let mut st = EngineStats::default();
            for p in ["page_count", "freelist_count", "page_size"] {
                let v: i64 = c.c.query_row(&format!("PRAGMA {p}"), [], |r| r.get(0))?;
                st.values.push((p.into(), v as f64));
            }
            Ok(st)
        })
    }

    fn settle(&self) -> Result<String> {
        self.with(|_, c| {
            let (busy, log, done): (i64, i64, i64) =
                c.c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?;
            Ok(format!(
                "wal_checkpoint(PASSIVE): busy={busy}, {done} of {log} WAL frames checkpointed"
            ))
        })
    }

    fn close(self: Box<Self>) -> Result<()> {
        let conns = std::mem::take(&mut *self.pool.lock().map_err(|_| anyhow!("pool poisoned"))?);
        for c in conns {
            c.c.close().map_err(|(_, e)| anyhow!("sqlite close: {e}"))?;
        }
        Ok(())
    }
}
