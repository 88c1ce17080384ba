//! The SQL face of an engine: a server reached by client connections, one
//! per worker thread, with prepared statements (cached by the drivers) and
//! transactions. Workloads write their SQL once per dialect.

use anyhow::Result;

use super::{Durability, Engine};

/// The SQL dialect differences workloads care about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// MariaDB/MySQL: `?` placeholders, `ON DUPLICATE KEY UPDATE`, `FORCE INDEX`.
    MySql,
    /// PostgreSQL: `$n` placeholders, `ON CONFLICT … DO UPDATE`.
    Postgres,
}

impl Dialect {
    /// The placeholder for parameter `n` (1-based).
    pub fn ph(self, n: usize) -> String {
        match self {
            Dialect::MySql => "?".into(),
            Dialect::Postgres => format!("${n}"),
        }
    }
}

pub use ampbench_core::sqlval::{Cell, Val};

/// One client connection; used by one thread.
pub trait SqlConn: Send {
    /// Runs a statement; returns the affected rows (changed rows, not found
    /// rows: an upsert that changes nothing affects 0 on MariaDB).
    fn execute(&mut self, sql: &str, params: &[Val<'_>]) -> Result<u64>;
    /// Runs a query; returns its rows.
    fn query(&mut self, sql: &str, params: &[Val<'_>]) -> Result<Vec<Vec<Cell>>>;
    /// Runs a query and hands its rows to `f` one at a time; `f` may take
    /// the cells it keeps (`std::mem::take`). A driver that can decode
    /// into one reused row does (no vector per row); by default the rows
    /// of [`query`](SqlConn::query) are handed over.
    fn query_each(
        &mut self,
        sql: &str,
        params: &[Val<'_>],
        f: &mut dyn FnMut(&mut Vec<Cell>),
    ) -> Result<()> {
        for mut r in self.query(sql, params)? {
            f(&mut r);
        }
        Ok(())
    }
    /// Runs statements without parameters (DDL, SET, BEGIN).
    fn batch(&mut self, sql: &str) -> Result<()>;
    /// Runs one statement sent as text, its values written in it (no
    /// server-side prepare, as clients that build SQL text do): returns
    /// (rows it returned, rows it affected).
    fn text(&mut self, sql: &str) -> Result<(u64, u64)>;
    /// Makes following commits durable on return (or not), as far as the
    /// server allows per session; see each engine's doc.
    fn set_durability(&mut self, d: Durability) -> Result<()>;
    /// True when `e` is a deadlock or lock-wait timeout: the transaction was
    /// rolled back and may be retried.
    fn is_retryable(&self, _e: &anyhow::Error) -> bool {
        false
    }
    /// True when `e` is a duplicate-key error on insert (MariaDB 1062,
    /// PostgreSQL 23505); the transaction must be rolled back.
    fn is_duplicate_key(&self, _e: &anyhow::Error) -> bool {
        false
    }
    /// Turns autocommit off: a statement then opens a transaction that
    /// COMMIT or ROLLBACK ends, so no BEGIN costs a round trip (MariaDB's
    /// `autocommit=0`; on PostgreSQL the connection sends BEGIN in the
    /// write of the transaction's first statement). Returns false,
    /// changing nothing, where a connection cannot (the caller then sends
    /// BEGIN).
    fn autocommit_off(&mut self) -> Result<bool> {
        Ok(false)
    }
    /// Starts a transaction.
    fn begin(&mut self) -> Result<()> {
        self.batch("BEGIN")
    }
    /// Commits.
    fn commit(&mut self) -> Result<()> {
        self.batch("COMMIT")
    }
    /// Rolls back.
    fn rollback(&mut self) -> Result<()> {
        self.batch("ROLLBACK")
    }
}

/// A SQL engine: a server ampbench started or an external target, with a
/// benchmark database.
/// What every engine has (version, settings, data paths, pid, stats,
/// settle, close) is its [`Engine`] side.
pub trait SqlEngine: Engine {
    /// The SQL dialect.
    fn dialect(&self) -> Dialect;
    /// The table options clause for CREATE TABLE (e.g. `ENGINE=ROCKSDB`).
    fn table_options(&self) -> &str;
    /// A new connection to the benchmark database, for one thread.
    fn connect(&self) -> Result<Box<dyn SqlConn>>;
    /// Called once the workload's schema is made: an external target
    /// takes note of the tables that are this run's (the only ones it
    /// drops from a database it did not create).
    fn schema_made(&self) -> Result<()> {
        Ok(())
    }
    /// Called before each step: a cluster waits until every node has
    /// applied what the others committed (the previous step's DDL, such
    /// as the index LinkBench's requests force).
    fn before_step(&self) -> Result<()> {
        Ok(())
    }
    /// The server's process, which `crashcheck` kills and starts again;
    /// None for an external target (`--target`), which ampbench did not
    /// start.
    fn server(&self) -> Option<&crate::server::Server>;
    /// Why a server of the engine was killed as hung, if one was.
    fn hung(&self) -> Option<String> {
        self.server()?.hung()
    }
    /// A cluster's nodes, each an engine whose connections go to it alone,
    /// named, once every node has applied what the others committed (so a
    /// consistency check can run on each); empty for a single server.
    fn nodes(&self) -> Result<Vec<(String, &dyn SqlEngine)>> {
        Ok(Vec::new())
    }
}
