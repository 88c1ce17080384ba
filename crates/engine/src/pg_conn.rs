//! A client connection to PostgreSQL (a local server's or a target's)
//! for the measured path, over ampbench's own protocol client
//! ([`ampbench_pgwire`]), and the server's own counters (over the
//! `postgres` crate's administration connection).

use anyhow::Result;
use postgres::Client;
use postgres::types::Type;

use super::sql::{Cell, SqlConn, Val};
use super::{Durability, EngineStats};

/// One client connection, over ampbench's own protocol client: one
/// write and one read per statement, where the `postgres` crate's
/// blocking face over tokio took 7 system calls per LinkBench request
/// and twice MariaDB's client CPU.
pub(super) struct PgConn {
    c: ampbench_pgwire::Conn,
    durability: Option<Durability>,
    /// [`SqlConn::autocommit_off`] was called: a statement after a
    /// COMMIT or ROLLBACK opens a transaction, as MariaDB's
    /// `autocommit=0` does.
    implicit: bool,
    /// A transaction is open (or its BEGIN queued).
    open: bool,
}

impl PgConn {
    /// A connection with no statement prepared yet.
    pub(super) fn new(c: ampbench_pgwire::Conn) -> PgConn {
        PgConn {
            c,
            durability: None,
            implicit: false,
            open: false,
        }
    }

    /// Before a statement: under [`SqlConn::autocommit_off`], a BEGIN
    /// queued to go in the statement's own write when no transaction is
    /// open.
    fn opened(&mut self) -> Result<()> {
        if self.implicit && !self.open {
            self.c.queue_begin()?;
            self.open = true;
        }
        Ok(())
    }
}

/// SQLSTATEs of a transaction rolled back that may be retried: deadlock,
/// serialization failure, lock not available.
const RETRYABLE: [&str; 3] = ["40P01", "40001", "55P03"];

impl SqlConn for PgConn {
    fn execute(&mut self, sql: &str, params: &[Val<'_>]) -> Result<u64> {
        self.opened()?;
        self.c.exec_each(sql, params, None)?;
        Ok(self.c.affected_rows())
    }
    fn query(&mut self, sql: &str, params: &[Val<'_>]) -> Result<Vec<Vec<Cell>>> {
        self.opened()?;
        let mut out = Vec::new();
        self.c
            .exec_each(sql, params, Some(&mut |r| out.push(std::mem::take(r))))?;
        Ok(out)
    }
    /// Rows decoded where they lie in the connection's read buffer into
    /// one reused row: a 10,000-row list is never held whole twice, so a
    /// thread's memory does not follow the longest list it has read.
    fn query_each(
        &mut self,
        sql: &str,
        params: &[Val<'_>],
        f: &mut dyn FnMut(&mut Vec<Cell>),
    ) -> Result<()> {
        self.opened()?;
        self.c.exec_each(sql, params, Some(f))
    }
    fn batch(&mut self, sql: &str) -> Result<()> {
        self.c.batch(sql)
    }
    fn text(&mut self, sql: &str) -> Result<(u64, u64)> {
        self.opened()?;
        let rows = self.c.simple(sql, None)?;
        Ok((rows, self.c.affected_rows()))
    }
    fn is_retryable(&self, e: &anyhow::Error) -> bool {
        ampbench_pgwire::error_code(e).is_some_and(|c| RETRYABLE.contains(&c))
    }
    fn is_duplicate_key(&self, e: &anyhow::Error) -> bool {
        ampbench_pgwire::error_code(e) == Some("23505")
    }
    /// PostgreSQL has no such mode: it is kept here (see
    /// [`PgConn::opened`]), so a transaction costs no round trip for its
    /// BEGIN, as on MariaDB.
    fn autocommit_off(&mut self) -> Result<bool> {
        self.implicit = true;
        Ok(true)
    }
    /// BEGIN goes out with the transaction's first statement, in its
    /// write.
    fn begin(&mut self) -> Result<()> {
        if !self.open {
            self.c.queue_begin()?;
            self.open = true;
        }
        Ok(())
    }
    fn commit(&mut self) -> Result<()> {
        // Ended either way: a failed COMMIT rolls back.
        self.open = false;
        self.c.batch("COMMIT")
    }
    fn rollback(&mut self) -> Result<()> {
        if std::mem::take(&mut self.open) {
            // A SET made inside the transaction is undone with it.
            self.durability = None;
        }
        self.c.batch("ROLLBACK")
    }
    fn set_durability(&mut self, d: Durability) -> Result<()> {
        if self.durability != Some(d) {
            let v = if d == Durability::Sync { "on" } else { "off" };
            self.c.batch(&format!("SET synchronous_commit = {v}"))?;
            self.durability = Some(d);
        }
        Ok(())
    }
}

/// A column of an administration query's row as a cell (integers as
/// integers, the rest as text where it reads as text).
fn cell(row: &postgres::Row, i: usize) -> Cell {
    let c = match *row.columns()[i].type_() {
        Type::INT8 => row.try_get::<_, Option<i64>>(i).map(|v| v.map(Cell::Int)),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(i)
            .map(|v| v.map(|x| Cell::Int(x as i64))),
        Type::INT2 => row
            .try_get::<_, Option<i16>>(i)
            .map(|v| v.map(|x| Cell::Int(x as i64))),
        Type::OID => row
            .try_get::<_, Option<u32>>(i)
            .map(|v| v.map(|x| Cell::Int(x as i64))),
        Type::BOOL => row
            .try_get::<_, Option<bool>>(i)
            .map(|v| v.map(|x| Cell::Int(x as i64))),
        Type::FLOAT8 => row
            .try_get::<_, Option<f64>>(i)
            .map(|v| v.map(|x| Cell::Text(x.to_string()))),
        _ => row
            .try_get::<_, Option<String>>(i)
            .map(|v| v.map(Cell::Text)),
    };
    c.ok().flatten().unwrap_or(Cell::Null)
}

/// The connected database's pg_stat_database row and pg_stat_bgwriter,
/// as `view.column` counters (a local server's or a target's).
pub(super) fn pg_stats(c: &mut Client) -> Result<EngineStats> {
    let mut st = EngineStats::default();
    for (prefix, sql) in [
        (
            "pg_stat_database",
            "SELECT * FROM pg_stat_database WHERE datname = current_database()",
        ),
        ("pg_stat_bgwriter", "SELECT * FROM pg_stat_bgwriter"),
    ] {
        for row in c.query(sql, &[])? {
            for (i, col) in row.columns().iter().enumerate() {
                if let Some(v) = cell(&row, i).int() {
                    st.values
                        .push((format!("{prefix}.{}", col.name()), v as f64));
                }
            }
        }
    }
    Ok(st)
}
