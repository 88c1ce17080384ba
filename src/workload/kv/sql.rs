//! The SQL mapping of the document store: a `(k, v)` table with `k` the
//! primary key, one connection per worker, upserts for writes.

use std::collections::HashMap;

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

/// Documents as rows of a SQL table, over one connection.
pub struct SqlDocs {
    conn: Box<dyn SqlConn>,
    dialect: Dialect,
    table: String,
    upserts: HashMap<usize, String>,
    read: String,
    scan: String,
}

impl SqlDocs {
    /// The mapping over `conn` for `table`.
    pub fn new(conn: Box<dyn SqlConn>, dialect: Dialect, table: &str) -> SqlDocs {
        let p = |n| dialect.ph(n);
        SqlDocs {
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
    /// [`MAX_RETRIES`](crate::workload::linkbench::sql::MAX_RETRIES)
    /// times in a row; then the error says how many.
    fn retrying<R>(&mut self, mut f: impl FnMut(&mut Self) -> Result<R>) -> Result<R> {
        use crate::workload::linkbench::sql::MAX_RETRIES;
        let mut n = 0;
        loop {
            match f(self) {
                Err(e) if self.conn.is_retryable(&e) && n < MAX_RETRIES => {
                    let _ = self.conn.rollback();
                    n += 1;
                }
                Err(e) if n > 0 => {
                    return Err(e.context(format!("after {n} retries on conflicts")));
                }
                r => return r,
            }
        }
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

impl DocStore for SqlDocs {
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
            self.retrying(|s| {
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
        let rows = self.retrying(|s| s.conn.query(&s.read, &[Val::Bytes(key)]))?;
        Ok(rows
            .first()
            .and_then(|r| r.first())
            .and_then(|c| c.bytes())
            .map(|b| b.len()))
    }
    fn read_value(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let rows = self.retrying(|s| s.conn.query(&s.read, &[Val::Bytes(key)]))?;
        Ok(rows
            .first()
            .and_then(|r| r.first())
            .and_then(|c| c.bytes())
            .map(|b| b.to_vec()))
    }
    fn write(&mut self, key: &[u8], value: &[u8], d: Durability) -> Result<()> {
        self.conn.set_durability(d)?;
        let sql = self.upsert(1);
        self.retrying(|s| s.conn.execute(&sql, &[Val::Bytes(key), Val::Bytes(value)]))?;
        Ok(())
    }
    fn scan(&mut self, start: &[u8], n: usize) -> Result<usize> {
        let rows = self.retrying(|s| {
            s.conn
                .query(&s.scan, &[Val::Bytes(start), Val::Int(n as i64)])
        })?;
        Ok(rows.len())
    }
}
