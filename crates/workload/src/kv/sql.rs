//! The SQL mapping of the document store: a `(k, v)` table with `k` the
//! primary key, one connection per worker, upserts for writes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Result;

use super::store::DocStore;
use crate::engine::Durability;
use crate::engine::sql::{Dialect, SqlConn, Val};

/// The table's DDL in a dialect.
pub fn schema(table: &str, dialect: Dialect, table_options: &str) -> Vec<String> {
    match dialect {
        Dialect::MySql => vec![format!(
            "CREATE TABLE {table} (k VARBINARY(255) NOT NULL PRIMARY KEY, v LONGBLOB NOT NULL) {table_options}"
        )],
        Dialect::Postgres => vec![format!(
            "CREATE TABLE {table} (k BYTEA PRIMARY KEY, v BYTEA NOT NULL) {table_options}"
        )],
    }
}

/// The mapping's operations, as its retries are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocOp {
    /// A load's or a workload's inserts (one statement or transaction).
    Insert,
    /// A point read.
    Read,
    /// A write: an upsert of one row (a load's record, an update).
    Update,
    /// A range scan.
    Scan,
}

impl DocOp {
    const ALL: [DocOp; 4] = [DocOp::Insert, DocOp::Read, DocOp::Update, DocOp::Scan];

    fn name(self) -> &'static str {
        match self {
            DocOp::Insert => "insert",
            DocOp::Read => "read",
            DocOp::Update => "write",
            DocOp::Scan => "scan",
        }
    }
}

/// Per operation of the SQL mapping, over every worker of a step: the
/// operations, those retried after a conflict (a deadlock, a lock-wait
/// timeout, a serialization failure, a cluster's certification
/// conflict), and the retries. Workers add theirs when they end.
#[derive(Debug, Default)]
pub struct Retries {
    /// (ops, retried ops, retries) by [`DocOp`].
    counts: [[AtomicU64; 3]; 4],
}

impl Retries {
    fn add(&self, local: &[[u64; 3]; 4]) {
        for (shared, mine) in self.counts.iter().zip(local) {
            for (s, m) in shared.iter().zip(mine) {
                if *m > 0 {
                    s.fetch_add(*m, Ordering::Relaxed);
                }
            }
        }
    }

    /// A step's notes: `figures`, then what [`take`](Retries::take) adds.
    pub fn notes(&self, figures: Vec<(String, f64)>) -> crate::StepNotes {
        let mut notes = crate::StepNotes {
            figures,
            lines: Vec::new(),
        };
        self.take(&mut notes);
        notes
    }

    /// The step's figures (`retries.OP`, `retried_ops.OP`) and, when any
    /// operation was retried, a line; then zero. Nothing when no operation
    /// went through SQL.
    pub fn take(&self, notes: &mut crate::StepNotes) {
        let mut said = Vec::new();
        let mut any = false;
        for (op, c) in DocOp::ALL.iter().zip(&self.counts) {
            let [ops, retried, retries] = [0, 1, 2].map(|i| c[i].swap(0, Ordering::Relaxed));
            if ops == 0 {
                continue;
            }
            let name = op.name();
            notes.figures.extend([
                (format!("retries.{name}"), retries as f64),
                (format!("retried_ops.{name}"), retried as f64),
            ]);
            said.push(format!("{name} {retries} in {ops} ops"));
            any |= retries > 0;
        }
        if any {
            notes.lines.push(format!(
                "retries after conflicts (deadlocks, lock-wait timeouts, serialization failures, certification conflicts): {}",
                said.join(", ")
            ));
        }
    }
}

/// Documents as rows of a SQL table, over one connection.
pub struct SqlDocs<'a> {
    /// The step's shared counts, and this worker's until it ends.
    retries: &'a Retries,
    mine: [[u64; 3]; 4],
    conn: Box<dyn SqlConn>,
    dialect: Dialect,
    table: String,
    upserts: HashMap<usize, String>,
    read: String,
    scan: String,
}

impl Drop for SqlDocs<'_> {
    fn drop(&mut self) {
        self.retries.add(&self.mine);
    }
}

impl<'a> SqlDocs<'a> {
    /// The mapping over `conn` for `table`, counting into `retries`.
    pub fn new(
        conn: Box<dyn SqlConn>,
        dialect: Dialect,
        table: &str,
        retries: &'a Retries,
    ) -> SqlDocs<'a> {
        let p = |n| dialect.ph(n);
        SqlDocs {
            retries,
            mine: Default::default(),
            read: format!("SELECT v FROM {table} WHERE k = {}", p(1)),
            scan: format!(
                "SELECT k, v FROM {table} WHERE k >= {} ORDER BY k LIMIT {}",
                p(1),
                p(2)
            ),
            conn,
            dialect,
            table: table.to_string(),
            upserts: HashMap::new(),
        }
    }

    /// Runs `f` (one statement, or one transaction it begins and ends)
    /// again after a deadlock, lock-wait timeout, serialization failure
    /// or a cluster's certification conflict, at most
    /// [`MAX_RETRIES`](crate::linkbench::sql::MAX_RETRIES)
    /// times in a row; then the error says how many.
    fn retrying<R>(&mut self, op: DocOp, mut f: impl FnMut(&mut Self) -> Result<R>) -> Result<R> {
        use crate::linkbench::sql::MAX_RETRIES;
        let mut n = 0;
        let r = loop {
            match f(self) {
                Err(e) if self.conn.is_retryable(&e) && n < MAX_RETRIES => {
                    let _ = self.conn.rollback();
                    n += 1;
                }
                Err(e) if n > 0 => {
                    break Err(e.context(format!("after {n} retries on conflicts")));
                }
                r => break r,
            }
        };
        let c = &mut self.mine[op as usize];
        c[0] += 1;
        c[1] += u64::from(n > 0);
        c[2] += u64::from(n);
        r
    }

    fn upsert(&mut self, rows: usize) -> String {
        let (dialect, table) = (self.dialect, self.table.clone());
        self.upserts
            .entry(rows)
            .or_insert_with(|| {
                let values: Vec<String> =
                    (0..rows).map(|i| format!("({}, {})", dialect.ph(2 * i + 1), dialect.ph(2 * i + 2))).collect();
                match dialect {
                    Dialect::MySql => format!(
                        "INSERT INTO {table} (k, v) VALUES {} ON DUPLICATE KEY UPDATE v = VALUES(v)",
                        values.join(", ")
                    ),
                    Dialect::Postgres => format!(
                        "INSERT INTO {table} (k, v) VALUES {} ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
                        values.join(", ")
                    ),
                }
            })
            .clone()
    }
}

impl DocStore for SqlDocs<'_> {
    fn insert_batch(&mut self, docs: &[(Vec<u8>, Vec<u8>)], d: Durability) -> Result<()> {
        self.conn.set_durability(d)?;
        // At most 1000 rows a statement (PostgreSQL takes 65535 parameters).
        for chunk in docs.chunks(1000) {
            let sql = self.upsert(chunk.len());
            let params: Vec<Val<'_>> = chunk
                .iter()
                .flat_map(|(k, v)| [Val::Bytes(k), Val::Bytes(v)])
                .collect();
            let many = docs.len() > 1000;
            self.retrying(DocOp::Insert, |s| {
                if many {
                    s.conn.begin()?;
                }
                s.conn.execute(&sql, &params)?;
                if many {
                    s.conn.commit()?;
                }
                Ok(())
            })?;
        }
        Ok(())
    }
    fn read(&mut self, key: &[u8]) -> Result<Option<usize>> {
        let rows = self.retrying(DocOp::Read, |s| s.conn.query(&s.read, &[Val::Bytes(key)]))?;
        Ok(rows
            .first()
            .and_then(|r| r.first())
            .and_then(|c| c.bytes())
            .map(|b| b.len()))
    }
    fn read_value(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let rows = self.retrying(DocOp::Read, |s| s.conn.query(&s.read, &[Val::Bytes(key)]))?;
        Ok(rows
            .first()
            .and_then(|r| r.first())
            .and_then(|c| c.bytes())
            .map(|b| b.to_vec()))
    }
    fn write(&mut self, key: &[u8], value: &[u8], d: Durability) -> Result<()> {
        self.conn.set_durability(d)?;
        let sql = self.upsert(1);
        self.retrying(DocOp::Update, |s| {
            s.conn.execute(&sql, &[Val::Bytes(key), Val::Bytes(value)])
        })?;
        Ok(())
    }
    fn scan(&mut self, start: &[u8], n: usize) -> Result<usize> {
        let rows = self.retrying(DocOp::Scan, |s| {
            s.conn
                .query(&s.scan, &[Val::Bytes(start), Val::Int(n as i64)])
        })?;
        Ok(rows.len())
    }
}
