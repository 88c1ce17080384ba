//! A client connection to PostgreSQL (a local server's or a target's)
//! with its prepared statements, and the server's own counters.

use anyhow::{Context, Result};
use postgres::Client;
use postgres::types::{ToSql, Type};

use super::sql::{Cell, SqlConn, Val};
use super::{Durability, EngineStats};

/// One client connection with its prepared statements.
pub(super) struct PgConn {
    c: Client,
    /// Prepared statements: the text's address (the fast lookup: the
    /// workloads' statement texts live as long as the connection), the
    /// text, and the statement.
    stmts: Vec<(usize, String, postgres::Statement)>,
    durability: Option<Durability>,
}

impl PgConn {
    /// A connection with no statement prepared yet.
    pub(super) fn new(c: Client) -> PgConn {
        PgConn {
            c,
            stmts: Vec::new(),
            durability: None,
        }
    }

    /// The prepared statement of `sql`, prepared on first use: found by
    /// the text's address, then by the text, never by hashing it.
    fn stmt(&mut self, sql: &str) -> Result<postgres::Statement> {
        let at = sql.as_ptr() as usize;
        if let Some(i) = self
            .stmts
            .iter()
            .position(|(a, t, _)| *a == at && t == sql)
            .or_else(|| self.stmts.iter().position(|(_, t, _)| t == sql))
        {
            self.stmts[i].0 = at;
            return Ok(self.stmts[i].2.clone());
        }
        let s = self
            .c
            .prepare(sql)
            .with_context(|| format!("preparing: {sql}"))?;
        self.stmts.push((at, sql.to_string(), s.clone()));
        Ok(s)
    }
}

/// A statement parameter as the server expects it, borrowed from the
/// caller's values: no box and no copy per value.
#[derive(Debug)]
enum PgParam<'a> {
    I16(i16),
    I32(i32),
    I64(i64),
    Bytes(&'a [u8]),
    Text(&'a str),
    Null,
}

impl ToSql for PgParam<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            PgParam::I16(v) => v.to_sql(ty, out),
            PgParam::I32(v) => v.to_sql(ty, out),
            PgParam::I64(v) => v.to_sql(ty, out),
            PgParam::Bytes(v) => v.to_sql(ty, out),
            PgParam::Text(v) => v.to_sql(ty, out),
            PgParam::Null => Ok(postgres::types::IsNull::Yes),
        }
    }
    /// Typed by [`pg_params`] from the statement's own parameter types.
    fn accepts(_: &Type) -> bool {
        true
    }
    postgres::types::to_sql_checked!();
}

/// Parameters typed as the statement expects them.
fn pg_params<'a>(stmt: &postgres::Statement, params: &[Val<'a>]) -> Vec<PgParam<'a>> {
    params
        .iter()
        .zip(stmt.params())
        .map(|(p, ty)| match *p {
            Val::Int(i) => match *ty {
                Type::INT2 => PgParam::I16(i as i16),
                Type::INT4 => PgParam::I32(i as i32),
                _ => PgParam::I64(i),
            },
            Val::Bytes(b) => PgParam::Bytes(b),
            Val::Text(t) => PgParam::Text(t),
            Val::Null => PgParam::Null,
        })
        .collect()
}

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
        Type::BYTEA => row
            .try_get::<_, Option<Vec<u8>>>(i)
            .map(|v| v.map(Cell::Bytes)),
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

impl SqlConn for PgConn {
    fn execute(&mut self, sql: &str, params: &[Val<'_>]) -> Result<u64> {
        use postgres::fallible_iterator::FallibleIterator;
        let s = self.stmt(sql)?;
        let mut rows = self.c.query_raw(&s, pg_params(&s, params))?;
        while rows.next()?.is_some() {}
        Ok(rows.rows_affected().unwrap_or(0))
    }
    fn query(&mut self, sql: &str, params: &[Val<'_>]) -> Result<Vec<Vec<Cell>>> {
        let mut out = Vec::new();
        self.query_each(sql, params, &mut |r| out.push(std::mem::take(r)))?;
        Ok(out)
    }
    /// Rows as the server sends them (`query_raw`), decoded into one
    /// reused row: a 10,000-row list is never held whole twice (the
    /// driver's rows and ours), so a thread's memory does not follow
    /// the longest list it has read.
    fn query_each(
        &mut self,
        sql: &str,
        params: &[Val<'_>],
        f: &mut dyn FnMut(&mut Vec<Cell>),
    ) -> Result<()> {
        use postgres::fallible_iterator::FallibleIterator;
        let s = self.stmt(sql)?;
        let mut rows = self.c.query_raw(&s, pg_params(&s, params))?;
        let mut row = Vec::new();
        while let Some(r) = rows.next()? {
            row.clear();
            row.extend((0..r.len()).map(|i| cell(&r, i)));
            f(&mut row);
        }
        Ok(())
    }
    fn batch(&mut self, sql: &str) -> Result<()> {
        Ok(self.c.batch_execute(sql)?)
    }
    fn text(&mut self, sql: &str) -> Result<(u64, u64)> {
        use postgres::SimpleQueryMessage as M;
        let (mut rows, mut affected) = (0, 0);
        for m in self.c.simple_query(sql)? {
            match m {
                M::Row(_) => rows += 1,
                M::CommandComplete(n) => affected = n,
                _ => {}
            }
        }
        Ok((rows, affected))
    }
    fn is_retryable(&self, e: &anyhow::Error) -> bool {
        use postgres::error::SqlState;
        e.chain().any(|c| {
            c.downcast_ref::<postgres::Error>()
                .and_then(|p| p.code())
                .is_some_and(|s| {
                    *s == SqlState::T_R_DEADLOCK_DETECTED
                        || *s == SqlState::T_R_SERIALIZATION_FAILURE
                        || *s == SqlState::LOCK_NOT_AVAILABLE
                })
        })
    }
    fn is_duplicate_key(&self, e: &anyhow::Error) -> bool {
        e.chain().any(|c| {
            c.downcast_ref::<postgres::Error>()
                .and_then(|p| p.code())
                .is_some_and(|s| *s == postgres::error::SqlState::UNIQUE_VIOLATION)
        })
    }
    fn set_durability(&mut self, d: Durability) -> Result<()> {
        if self.durability != Some(d) {
            let v = if d == Durability::Sync { "on" } else { "off" };
            self.c
                .batch_execute(&format!("SET synchronous_commit = {v}"))?;
            self.durability = Some(d);
        }
        Ok(())
    }
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
