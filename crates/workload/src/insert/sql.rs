//! The insert benchmark on a SQL engine: the reference's DDL and
//! statements. Rows go in as one multi-row INSERT per commit (ids from
//! AUTO_INCREMENT or bigserial), the oldest leave by primary-key range,
//! range queries are covering `>=` scans of one secondary index (`FORCE
//! INDEX` on MariaDB, as the reference), point queries are `transactionid
//! IN (…)`.

use std::collections::HashMap;
use std::fmt::Write;

use anyhow::{Context, Result};

use super::row::{INDEXES, Index, Row};
use super::store::{InsertStore, TableCheck};
use crate::engine::Durability;
use crate::engine::sql::{Dialect, SqlConn, Val};

/// The table name of benchmark table `t` (0-based).
pub fn table(t: usize) -> String {
    format!("pi{}", t + 1)
}

/// An index's name in the database: MariaDB's are per table, PostgreSQL's
/// per schema (so prefixed with the table).
fn index_name(d: Dialect, t: usize, ix: Index) -> String {
    match d {
        Dialect::MySql => ix.name().to_string(),
        Dialect::Postgres => format!("{}_{}", table(t), ix.name()),
    }
}

/// The DDL of one index.
pub fn index_ddl(d: Dialect, t: usize, ix: Index) -> String {
    format!(
        "CREATE INDEX {} ON {} ({})",
        index_name(d, t, ix),
        table(t),
        ix.columns().join(", ")
    )
}

/// CREATE TABLE for `tables` tables, with the first `indexes` secondary
/// indexes unless they are built later (`l.x`).
pub fn schema(
    d: Dialect,
    table_options: &str,
    tables: usize,
    indexes: usize,
    with_indexes: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    for t in 0..tables {
        let (id, time) = match d {
            Dialect::MySql => ("transactionid BIGINT NOT NULL AUTO_INCREMENT", "DATETIME"),
            Dialect::Postgres => ("transactionid BIGSERIAL", "TIMESTAMP"),
        };
        out.push(format!("DROP TABLE IF EXISTS {}", table(t)));
        // dateandtime and data may be NULL, as the reference's DDL has
        // them.
        out.push(format!(
            "CREATE TABLE {} ({id}, dateandtime {time}, cashregisterid INT NOT NULL, \
             customerid INT NOT NULL, productid INT NOT NULL, price INT NOT NULL, \
             data VARCHAR(4000), PRIMARY KEY (transactionid)) {table_options}",
            table(t)
        ));
        if with_indexes {
            for ix in &INDEXES[..indexes] {
                out.push(index_ddl(d, t, *ix));
            }
        }
    }
    out
}

/// How statements reach the server (`-p statements`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Statements {
    /// As the reference client sends them: text with the values written
    /// in (MySQLdb has no server-side prepare), except PostgreSQL's
    /// queries, which it prepares (`--use_prepared_query`).
    Reference,
    /// Text, values written in, for every statement.
    Text,
    /// Server-side prepared statements with parameters for every one.
    Prepared,
}

impl Statements {
    /// Parses `-p statements`.
    pub fn parse(s: &str) -> Result<Statements, crate::UsageError> {
        match s {
            "reference" => Ok(Statements::Reference),
            "text" => Ok(Statements::Text),
            "prepared" => Ok(Statements::Prepared),
            other => Err(crate::UsageError(format!(
                "parameter 'statements={other}': expected reference, text or prepared"
            ))),
        }
    }

    /// True when a statement (a query when `query`) goes as text.
    fn text(self, d: Dialect, query: bool) -> bool {
        match self {
            Statements::Text => true,
            Statements::Prepared => false,
            Statements::Reference => !(query && d == Dialect::Postgres),
        }
    }
}

/// A string literal: single-quoted, quotes doubled (and MariaDB's
/// backslash escaped).
fn literal(d: Dialect, s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\'' => out.push_str("''"),
            '\\' if d == Dialect::MySql => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// One worker's connection.
pub struct SqlInsert {
    c: Box<dyn SqlConn>,
    d: Dialect,
    innodb: bool,
    statements: Statements,
    /// Statement texts, built once each (the measured path only looks
    /// them up).
    texts: HashMap<Stmt, String>,
}

/// A statement of the mapping, with what its text depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Stmt {
    /// A multi-row INSERT into a table of that many rows.
    Insert(usize, usize),
    /// The DELETE of an id range from a table.
    Delete(usize),
    /// A range query on a table's index (the primary key's for None),
    /// with its LIMIT.
    Range(usize, Option<Index>, usize),
    /// A point query on a table for that many ids.
    Point(usize, usize),
}

/// The text of `stmt`, built on first use.
fn text(texts: &mut HashMap<Stmt, String>, d: Dialect, stmt: Stmt) -> &str {
    texts.entry(stmt).or_insert_with(|| build(d, stmt))
}

/// `FORCE INDEX (x)` on MariaDB; nothing on PostgreSQL.
fn force(d: Dialect, ix: &str) -> String {
    match d {
        Dialect::MySql => format!(" FORCE INDEX ({ix})"),
        Dialect::Postgres => String::new(),
    }
}

/// Builds the text of `stmt` in dialect `d`.
fn build(d: Dialect, stmt: Stmt) -> String {
    let list = |n: usize| -> String { (1..=n).map(|i| d.ph(i)).collect::<Vec<_>>().join(", ") };
    match stmt {
        Stmt::Insert(t, n) => {
            let mut s = format!(
                "INSERT INTO {} (dateandtime, cashregisterid, customerid, productid, price, data) VALUES ",
                table(t)
            );
            for i in 0..n {
                let p = |k: usize| d.ph(i * 6 + k);
                let time = match d {
                    Dialect::MySql => format!("FROM_UNIXTIME({})", p(1)),
                    Dialect::Postgres => format!("to_timestamp({}::bigint)", p(1)),
                };
                let _ = write!(
                    s,
                    "{}({time}, {}, {}, {}, {}, {})",
                    if i > 0 { ", " } else { "" },
                    p(2),
                    p(3),
                    p(4),
                    p(5),
                    p(6)
                );
            }
            s
        }
        // The reference's delete of the oldest rows: from the lowest live
        // id, in id order, as many as an insert added.
        Stmt::Delete(t) => match d {
            Dialect::MySql => format!(
                "DELETE FROM {} WHERE transactionid >= {} ORDER BY transactionid ASC LIMIT {}",
                table(t),
                d.ph(1),
                d.ph(2)
            ),
            Dialect::Postgres => format!(
                "DELETE FROM {t} WHERE transactionid IN (SELECT transactionid FROM {t} WHERE transactionid >= {} ORDER BY transactionid ASC LIMIT {})",
                d.ph(1),
                d.ph(2),
                t = table(t),
            ),
        },
        Stmt::Range(t, ix, limit) => {
            let (cols, force, order) = match ix {
                Some(ix) => (
                    ix.columns(),
                    force(d, &index_name(d, t, ix)),
                    ix.columns().join(", "),
                ),
                None => (
                    ["transactionid", "price", "customerid"],
                    String::new(),
                    "transactionid".to_string(),
                ),
            };
            format!(
                "SELECT {} FROM {}{force} WHERE {} {} {} ORDER BY {order} LIMIT {limit}",
                cols.join(", "),
                table(t),
                cols[0],
                if ix.is_some_and(Index::strict) {
                    ">"
                } else {
                    ">="
                },
                d.ph(1)
            )
        }
        Stmt::Point(t, n) => format!(
            "SELECT transactionid, productid, data FROM {} WHERE transactionid IN ({})",
            table(t),
            list(n)
        ),
    }
}

impl SqlInsert {
    /// A store over `c`; commits have durability `durability`; `innodb`:
    /// the tables are InnoDB's (debt reduction waits for its purge).
    pub fn new(
        mut c: Box<dyn SqlConn>,
        d: Dialect,
        durability: Durability,
        innodb: bool,
        statements: Statements,
    ) -> Result<SqlInsert> {
        c.set_durability(durability)?;
        Ok(SqlInsert {
            c,
            d,
            innodb,
            statements,
            texts: HashMap::new(),
        })
    }

    fn ints(&mut self, sql: &str) -> Result<Vec<i64>> {
        let rows = self.c.query(sql, &[]).with_context(|| sql.to_string())?;
        Ok(rows
            .first()
            .map(|r| r.iter().map(|c| c.int().unwrap_or(0)).collect())
            .unwrap_or_default())
    }
}

impl InsertStore for SqlInsert {
    fn insert(&mut self, t: usize, rows: &[Row], _first: u64, _indexed: bool) -> Result<()> {
        if self.statements.text(self.d, false) {
            let mut sql = format!(
                "INSERT INTO {} (dateandtime, cashregisterid, customerid, productid, price, data) VALUES ",
                table(t)
            );
            for (i, r) in rows.iter().enumerate() {
                let time = match self.d {
                    Dialect::MySql => format!("FROM_UNIXTIME({})", r.dateandtime),
                    Dialect::Postgres => format!("to_timestamp({})", r.dateandtime),
                };
                let _ = write!(
                    sql,
                    "{}({time}, {}, {}, {}, {}, {})",
                    if i > 0 { ",\n" } else { "" },
                    r.cashregisterid,
                    r.customerid,
                    r.productid,
                    r.price,
                    literal(self.d, std::str::from_utf8(&r.data).unwrap_or(""))
                );
            }
            self.c.text(&sql)?;
            return Ok(());
        }
        let mut params: Vec<Val<'_>> = Vec::with_capacity(rows.len() * 6);
        for r in rows {
            params.push(Val::Int(r.dateandtime as i64));
            params.push(Val::Int(r.cashregisterid as i64));
            params.push(Val::Int(r.customerid as i64));
            params.push(Val::Int(r.productid as i64));
            params.push(Val::Int(r.price as i64));
            // Rows are ASCII, so the bytes are valid text.
            params.push(Val::Text(std::str::from_utf8(&r.data).unwrap_or("")));
        }
        let sql = text(&mut self.texts, self.d, Stmt::Insert(t, rows.len()));
        self.c.execute(sql, &params)?;
        Ok(())
    }

    fn delete(&mut self, t: usize, lo: u64, n: u64, _indexed: bool) -> Result<u64> {
        if self.statements.text(self.d, false) {
            let sql = build(self.d, Stmt::Delete(t))
                .replacen(&self.d.ph(1), &lo.to_string(), 1)
                .replacen(&self.d.ph(2), &n.to_string(), 1);
            return Ok(self.c.text(&sql)?.1);
        }
        let sql = text(&mut self.texts, self.d, Stmt::Delete(t));
        self.c
            .execute(sql, &[Val::Int(lo as i64), Val::Int(n as i64)])
    }

    fn create_index(&mut self, t: usize, ix: Index) -> Result<()> {
        let ddl = index_ddl(self.d, t, ix);
        self.c.batch(&ddl).with_context(|| ddl.clone())
    }

    fn create_indexes(&mut self, t: usize, ixs: &[Index]) -> Result<usize> {
        if !(self.d == Dialect::MySql && self.innodb) || ixs.is_empty() {
            for ix in ixs.iter().take(1) {
                self.create_index(t, *ix)?;
            }
            return Ok(ixs.len().min(1));
        }
        // InnoDB: one ALTER TABLE adds them all, as the reference does (it
        // builds MyRocks' one by one, and PostgreSQL's).
        let adds: Vec<String> = ixs
            .iter()
            .map(|ix| format!("ADD INDEX {} ({})", ix.name(), ix.columns().join(", ")))
            .collect();
        let ddl = format!("ALTER TABLE {} {}", table(t), adds.join(", "));
        self.c.batch(&ddl).with_context(|| ddl.clone())?;
        Ok(ixs.len())
    }

    fn range(&mut self, t: usize, ix: Option<Index>, from: u64, limit: usize) -> Result<usize> {
        if self.statements.text(self.d, true) {
            let sql = text(&mut self.texts, self.d, Stmt::Range(t, ix, limit)).replacen(
                &self.d.ph(1),
                &from.to_string(),
                1,
            );
            return Ok(self.c.text(&sql)?.0 as usize);
        }
        let sql = text(&mut self.texts, self.d, Stmt::Range(t, ix, limit));
        Ok(self.c.query(sql, &[Val::Int(from as i64)])?.len())
    }

    fn point(&mut self, t: usize, ids: &[u64]) -> Result<usize> {
        if self.statements.text(self.d, true) {
            let list: Vec<String> = ids.iter().map(u64::to_string).collect();
            let sql = format!(
                "SELECT transactionid, productid, data FROM {} WHERE transactionid IN ({})",
                table(t),
                list.join(", ")
            );
            return Ok(self.c.text(&sql)?.0 as usize);
        }
        let sql = text(&mut self.texts, self.d, Stmt::Point(t, ids.len()));
        let params: Vec<Val<'_>> = ids.iter().map(|i| Val::Int(*i as i64)).collect();
        Ok(self.c.query(sql, &params)?.len())
    }

    fn check(&mut self, t: usize, indexes: &[Index]) -> Result<TableCheck> {
        if self.d == Dialect::Postgres {
            // Make the planner read each index, not the heap.
            self.c
                .batch("SET enable_seqscan = off; SET enable_bitmapscan = off")?;
        }
        let d = self.d;
        let sums = |cols: &[&str]| -> String {
            cols.iter()
                .map(|c| match d {
                    Dialect::MySql => format!("SUM({c})"),
                    Dialect::Postgres => format!("SUM({c})::bigint"),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let all = ["cashregisterid", "customerid", "productid", "price"];
        let pk_force = match self.d {
            Dialect::MySql => force(self.d, "PRIMARY"),
            Dialect::Postgres => String::new(),
        };
        let base = self.ints(&format!(
            "SELECT COUNT(*), {} FROM {}{pk_force} WHERE transactionid >= 0",
            sums(&all),
            table(t)
        ))?;
        let rows = base.first().copied().unwrap_or(0) as u64;
        let sum_of = |col: &str| -> i64 {
            all.iter()
                .position(|c| *c == col)
                .and_then(|i| base.get(i + 1).copied())
                .unwrap_or(0)
        };
        let mut out = TableCheck {
            rows,
            indexes: Vec::new(),
        };
        for ix in indexes {
            let cols: Vec<&str> = ix
                .columns()
                .into_iter()
                .filter(|c| *c != "dateandtime")
                .collect();
            let got = self.ints(&format!(
                "SELECT COUNT(*), {} FROM {}{} WHERE {} >= 0",
                sums(&cols),
                table(t),
                force(self.d, &index_name(self.d, t, *ix)),
                ix.columns()[0]
            ))?;
            let n = got.first().copied().unwrap_or(0) as u64;
            let same = cols
                .iter()
                .enumerate()
                .all(|(i, c)| got.get(i + 1).copied().unwrap_or(0) == sum_of(c));
            out.indexes.push((ix.name(), n, same && n == rows));
        }
        if self.d == Dialect::Postgres {
            self.c
                .batch("SET enable_seqscan = on; SET enable_bitmapscan = on")?;
        }
        Ok(out)
    }

    fn reduce_debt(&mut self, tables: usize) -> Result<Option<String>> {
        let t0 = std::time::Instant::now();
        match self.d {
            Dialect::Postgres => {
                for t in 0..tables {
                    self.c
                        .batch(&format!("VACUUM (ANALYZE, INDEX_CLEANUP ON) {}", table(t)))?;
                }
                Ok(Some(format!(
                    "VACUUM (ANALYZE, INDEX_CLEANUP ON) of {tables} tables: {:.1}s",
                    t0.elapsed().as_secs_f64()
                )))
            }
            Dialect::MySql if !self.innodb => Ok(None),
            Dialect::MySql => {
                // InnoDB's purge of the deleted rows: wait (up to 10
                // minutes) for its history list to drain.
                let q = "SELECT count FROM information_schema.INNODB_METRICS WHERE name = 'trx_rseg_history_len'";
                let len = |c: &mut Box<dyn SqlConn>| -> Result<Option<i64>> {
                    Ok(c.query(q, &[])?.first().and_then(|r| r.first()?.int()))
                };
                let start = match len(&mut self.c) {
                    Ok(Some(v)) => v,
                    Ok(None) => return Ok(None),
                    // A target's user without the PROCESS privilege may
                    // not read InnoDB's metrics: said, not a failure.
                    Err(e) if crate::engine::mywire::error_code(&e) == Some(1227) => {
                        return Ok(Some(
                            "InnoDB purge not waited for: reading its history list (INNODB_METRICS) needs the PROCESS privilege".into(),
                        ));
                    }
                    Err(e) => return Err(e),
                };
                let mut now = start;
                while now > 0 && t0.elapsed() < std::time::Duration::from_secs(600) {
                    std::thread::sleep(std::time::Duration::from_millis(200));
                    now = len(&mut self.c)?.unwrap_or(0);
                }
                Ok(Some(format!(
                    "InnoDB purge: history list {start} → {now} in {:.1}s",
                    t0.elapsed().as_secs_f64()
                )))
            }
        }
    }
}
