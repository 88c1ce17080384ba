//! SQLite through rusqlite, linked against the system library (Debian's
//! libsqlite3), in WAL mode.
//!
//! Tables are `WITHOUT ROWID` tables `(k BLOB PRIMARY KEY, v BLOB)`: a
//! clustered B-Tree, like the other engines' tables. Each session is its
//! own connection (SQLite's unit of concurrency). A sync write runs with
//! `PRAGMA synchronous=FULL` (the WAL is synced at commit), a no-sync write
//! with `NORMAL` (synced only at checkpoints). Transactions are `BEGIN
//! IMMEDIATE`: the writer lock is taken at begin, so writers run one at a
//! time and never conflict (a writer that waits past `busy_timeout` gets a
//! conflict and retries).
//!
//! Options (`--set sqlite.KEY=VALUE`) are PRAGMAs, checked against SQLite's
//! own `pragma_list`: defaults `journal_mode=WAL`, `page_size=4096`,
//! `cache_size=-<cache KiB>` (per connection), `busy_timeout=10000`.

use std::ops::Bound;
use std::path::PathBuf;

use anyhow::{Context, Result, anyhow};
use rusqlite::{Connection, OptionalExtension, params};

use super::{
    BatchOp, Conflict, Conformance, Durability, Engine, EngineDef, EngineInfo, EngineKind,
    EngineOptions, EngineRef, EngineStats, KeyRange, KvEngine, KvSession, OpenSpec, Order,
    Structure, Table, Transactions, WriteBatch, table_of,
};
use crate::UsageError;
use crate::structure::ModelKnobs;

/// The registry entry.
pub const ENGINES: &[EngineDef] = &[EngineDef {
    name: "sqlite",
    about: "SQLite (the system library, a B-Tree, WAL mode)",
    structure: Structure::UpdateInPlaceBTree,
    model: ModelKnobs {
        page_key: "page_size",
        page_default: 4096.0,
        row_meta: 0.0,
        compresses_pages: false,
    },
    conformance: Conformance::cases(40),
    server: None,
    run_as: None,
    library: || None,
    library_version: || Ok(library_version()),
    default_settings,
    io_bound: |_| Vec::new(),
    direct_io: false,
    presets: &[],
    validate,
    guard,
    open: |kind, spec| Ok(Box::new(Sqlite::open(kind, spec)?)),
}];

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

/// Judges one PRAGMA: those naming a directory for the engine's files are
/// unsafe (see `engine::guard`).
pub fn guard(key: &str, _value: &str) -> Option<super::guard::Refusal> {
    let k = super::guard::norm(key, '_');
    ["temp_store_directory", "data_store_directory"]
        .contains(&k.as_str())
        .then_some(super::guard::Refusal::Unsafe(k))
}

/// Checks `--set sqlite.*` options: PRAGMAs SQLite knows, with a word or
/// number for a value.
pub fn validate(_kind: EngineKind, options: &EngineOptions) -> Result<()> {
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

/// A SQLite database file.
pub struct Sqlite {
    info: EngineInfo,
    path: PathBuf,
    tables: Vec<String>,
}

impl Sqlite {
    /// Opens (creating if needed) `DIR/db.sqlite` and its tables.
    pub fn open(kind: EngineKind, spec: &OpenSpec) -> Result<Sqlite> {
        validate(kind, &spec.options)?;
        let settings = spec.settings(default_settings);
        let s = Sqlite {
            info: EngineInfo {
                kind,
                version: library_version(),
                settings,
                dir: spec.dir.clone(),
            },
            path: spec.dir.join("db.sqlite"),
            tables: spec.tables.iter().map(|t| format!("t_{t}")).collect(),
        };
        let c = s.connect()?;
        for t in &s.tables {
            c.execute_batch(&format!(
                "CREATE TABLE IF NOT EXISTS {t} (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID"
            ))
            .with_context(|| format!("sqlite: creating table {t}"))?;
        }
        Ok(s)
    }

    fn connect(&self) -> Result<Connection> {
        let c = Connection::open(&self.path)
            .with_context(|| format!("sqlite: opening {}", self.path.display()))?;
        for (k, v) in &self.info.settings {
            // PRAGMA values cannot be bound as parameters; validate() allows
            // only words and numbers.
            c.query_row(&format!("PRAGMA {k}={v}"), [], |_| Ok(()))
                .optional()
                .with_context(|| format!("sqlite: PRAGMA {k}={v}"))?;
        }
        Ok(c)
    }
}

impl Engine for Sqlite {
    fn info(&self) -> &EngineInfo {
        &self.info
    }
    fn face(&self) -> EngineRef<'_> {
        EngineRef::Kv(self)
    }
    fn stats(&self) -> Result<EngineStats> {
        let c = self.connect()?;
        let mut st = EngineStats::default();
        for p in ["page_count", "freelist_count", "page_size"] {
            let v: i64 = c.query_row(&format!("PRAGMA {p}"), [], |r| r.get(0))?;
            st.values.push((p.into(), v as f64));
        }
        Ok(st)
    }
    fn settle(&self) -> Result<String> {
        let c = self.connect()?;
        let (busy, log, done): (i64, i64, i64) =
            c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?;
        Ok(format!(
            "wal_checkpoint(PASSIVE): busy={busy}, {done} of {log} WAL frames checkpointed"
        ))
    }
}

impl KvEngine for Sqlite {
    fn session(&self) -> Result<Box<dyn KvSession + '_>> {
        Ok(Box::new(Session {
            e: self,
            c: self.connect()?,
            sync: None,
            in_txn: false,
        }))
    }
    fn transactions(&self) -> Transactions {
        Transactions::Serial
    }
}

/// A thread's connection, with the synchronous mode it is in.
struct Session<'e> {
    e: &'e Sqlite,
    c: Connection,
    sync: Option<Durability>,
    in_txn: bool,
}

/// SQLITE_BUSY past the busy timeout is a conflict (retry); other errors
/// pass through.
fn busy_is_conflict(e: rusqlite::Error) -> anyhow::Error {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy) => Conflict(format!("sqlite: {e}")).into(),
        _ => e.into(),
    }
}

impl Session<'_> {
    fn table(&self, t: Table) -> Result<&str> {
        table_of(&self.e.tables, t).map(|s| s.as_str())
    }

    fn set_sync(&mut self, d: Durability) -> Result<()> {
        if self.sync != Some(d) {
            let mode = match d {
                Durability::Sync => "FULL",
                Durability::NoSync => "NORMAL",
            };
            self.c
                .execute_batch(&format!("PRAGMA synchronous={mode}"))?;
            self.sync = Some(d);
        }
        Ok(())
    }

    fn upsert(&self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        let t = self.table(table)?;
        let mut st = self.c.prepare_cached(&format!(
            "INSERT OR REPLACE INTO {t} (k, v) VALUES (?1, ?2)"
        ))?;
        st.execute(params![key, value]).map_err(busy_is_conflict)?;
        Ok(())
    }

    fn remove(&self, table: Table, key: &[u8]) -> Result<()> {
        let t = self.table(table)?;
        let mut st = self
            .c
            .prepare_cached(&format!("DELETE FROM {t} WHERE k = ?1"))?;
        st.execute(params![key]).map_err(busy_is_conflict)?;
        Ok(())
    }
}

impl KvSession for Session<'_> {
    fn get(&mut self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let t = self.table(table)?;
        let mut st = self
            .c
            .prepare_cached(&format!("SELECT v FROM {t} WHERE k = ?1"))?;
        Ok(st
            .query_row(params![key], |r| r.get::<_, Vec<u8>>(0))
            .optional()?)
    }

    fn put(&mut self, table: Table, key: &[u8], value: &[u8], d: Durability) -> Result<()> {
        self.set_sync(d)?;
        self.upsert(table, key, value)
    }

    fn write(&mut self, batch: &WriteBatch, d: Durability) -> Result<()> {
        self.set_sync(d)?;
        self.c
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(busy_is_conflict)?;
        let r = batch
            .iter()
            .try_for_each(|op| match op {
                BatchOp::Put { table, key, value } => self.upsert(table, key, value),
                BatchOp::Delete { table, key } => self.remove(table, key),
            })
            .and_then(|()| self.c.execute_batch("COMMIT").map_err(busy_is_conflict));
        if r.is_err() && !self.c.is_autocommit() {
            let _ = self.c.execute_batch("ROLLBACK");
        }
        r
    }

    fn scan(
        &mut self,
        table: Table,
        range: KeyRange<'_>,
        order: Order,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let t = self.table(table)?;
        let mut conds = Vec::new();
        let mut args: Vec<&[u8]> = Vec::new();
        for (b, incl, excl) in [(range.start, ">=", ">"), (range.end, "<=", "<")] {
            match b {
                Bound::Included(k) => {
                    args.push(k);
                    conds.push(format!("k {incl} ?{}", args.len()));
                }
                Bound::Excluded(k) => {
                    args.push(k);
                    conds.push(format!("k {excl} ?{}", args.len()));
                }
                Bound::Unbounded => {}
            }
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
        let mut st = self.c.prepare_cached(&sql)?;
        let mut rows = st.query(rusqlite::params_from_iter(args.iter()))?;
        let mut n = 0;
        while let Some(r) = rows.next()? {
            visit(r.get_ref(0)?.as_blob()?, r.get_ref(1)?.as_blob()?);
            n += 1;
        }
        Ok(n)
    }

    fn txn_begin(&mut self, d: Durability) -> Result<()> {
        self.set_sync(d)?;
        self.c
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(busy_is_conflict)?;
        self.in_txn = true;
        Ok(())
    }
    fn txn_get(&mut self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get(table, key)
    }
    fn txn_put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        self.upsert(table, key, value)
    }
    fn txn_delete(&mut self, table: Table, key: &[u8]) -> Result<()> {
        self.remove(table, key)
    }
    fn txn_commit(&mut self) -> Result<()> {
        if !self.in_txn {
            return Err(anyhow!("sqlite: no transaction is open"));
        }
        // On failure the transaction stays open for the rollback that follows.
        self.c.execute_batch("COMMIT").map_err(busy_is_conflict)?;
        self.in_txn = false;
        Ok(())
    }
    fn txn_rollback(&mut self) -> Result<()> {
        // After a failed COMMIT SQLite may have rolled back already.
        if std::mem::take(&mut self.in_txn) && !self.c.is_autocommit() {
            self.c.execute_batch("ROLLBACK")?;
        }
        Ok(())
    }
}
