//! The results store's two back ends behind one interface: the SQLite
//! file (default) and a PostgreSQL database (`--results postgres://…`),
//! where the clients of one run meet (see [`super::meet`]).
//!
//! Both hold the same tables (the PostgreSQL schema is the SQLite one with
//! PostgreSQL's type names) and take the same statements: written once in
//! SQLite's dialect, with `?N` parameters, and translated for PostgreSQL
//! by [`pg_sql`] (parameters, `INSERT OR REPLACE`, generated ids). Every
//! write is a transaction ([`Db::tx`]). Reports read a SQLite connection:
//! the file itself, or for PostgreSQL a copy of the store in memory
//! ([`snapshot`]), so one reader serves both.

use std::collections::HashMap;

use anyhow::{Context, Result, bail};

/// A value written to or read from the store.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    /// SQL NULL.
    Null,
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Real(f64),
    /// Text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

impl From<i64> for Val {
    fn from(v: i64) -> Val {
        Val::Int(v)
    }
}
impl From<usize> for Val {
    fn from(v: usize) -> Val {
        Val::Int(v as i64)
    }
}
impl From<bool> for Val {
    fn from(v: bool) -> Val {
        Val::Int(v as i64)
    }
}
impl From<f64> for Val {
    fn from(v: f64) -> Val {
        Val::Real(v)
    }
}
impl From<&str> for Val {
    fn from(v: &str) -> Val {
        Val::Text(v.to_string())
    }
}
impl From<String> for Val {
    fn from(v: String) -> Val {
        Val::Text(v)
    }
}
impl From<&String> for Val {
    fn from(v: &String) -> Val {
        Val::Text(v.clone())
    }
}
impl From<Vec<u8>> for Val {
    fn from(v: Vec<u8>) -> Val {
        Val::Blob(v)
    }
}
impl<T: Into<Val>> From<Option<T>> for Val {
    fn from(v: Option<T>) -> Val {
        v.map_or(Val::Null, Into::into)
    }
}

impl Val {
    /// The integer, if it is one.
    pub fn int(&self) -> Option<i64> {
        match self {
            Val::Int(i) => Some(*i),
            _ => None,
        }
    }
    /// The number, integer or not.
    pub fn real(&self) -> Option<f64> {
        match self {
            Val::Int(i) => Some(*i as f64),
            Val::Real(f) => Some(*f),
            _ => None,
        }
    }
    /// The text, if it is text.
    pub fn text(&self) -> Option<&str> {
        match self {
            Val::Text(s) => Some(s),
            _ => None,
        }
    }
}

/// `vals![a, b, …]`: a statement's parameters.
macro_rules! vals {
    ($($e:expr),* $(,)?) => { &[$($crate::db::Val::from($e)),*] };
}
pub(crate) use vals;

impl rusqlite::ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Val::Null => ValueRef::Null,
            Val::Int(i) => ValueRef::Integer(*i),
            Val::Real(f) => ValueRef::Real(*f),
            Val::Text(s) => ValueRef::Text(s.as_bytes()),
            Val::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

impl postgres::types::ToSql for Val {
    fn to_sql(
        &self,
        ty: &postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        use postgres::types::{IsNull, Type};
        match self {
            Val::Null => Ok(IsNull::Yes),
            Val::Int(i) if *ty == Type::FLOAT8 => (*i as f64).to_sql(ty, out),
            Val::Int(i) if *ty == Type::BOOL => (*i != 0).to_sql(ty, out),
            Val::Int(i) if *ty == Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
            Val::Int(i) => i.to_sql(ty, out),
            Val::Real(f) => f.to_sql(ty, out),
            Val::Text(s) => s.to_sql(ty, out),
            Val::Blob(b) => b.to_sql(ty, out),
        }
    }
    fn accepts(ty: &postgres::types::Type) -> bool {
        use postgres::types::Type;
        [
            Type::INT8,
            Type::INT4,
            Type::FLOAT8,
            Type::TEXT,
            Type::BYTEA,
            Type::BOOL,
            Type::VARCHAR,
            Type::NAME,
        ]
        .contains(ty)
    }
    postgres::types::to_sql_checked!();
}

/// A PostgreSQL column's value as a [`Val`].
fn pg_val(row: &postgres::Row, i: usize) -> Result<Val> {
    use postgres::types::Type;
    let ty = row.columns()[i].type_().clone();
    Ok(if ty == Type::INT8 {
        row.try_get::<_, Option<i64>>(i)?
            .map_or(Val::Null, Val::Int)
    } else if ty == Type::INT4 {
        row.try_get::<_, Option<i32>>(i)?
            .map_or(Val::Null, |v| Val::Int(v.into()))
    } else if ty == Type::FLOAT8 {
        row.try_get::<_, Option<f64>>(i)?
            .map_or(Val::Null, Val::Real)
    } else if ty == Type::BOOL {
        row.try_get::<_, Option<bool>>(i)?
            .map_or(Val::Null, |b| Val::Int(b as i64))
    } else if ty == Type::BYTEA {
        row.try_get::<_, Option<Vec<u8>>>(i)?
            .map_or(Val::Null, Val::Blob)
    } else if ty == Type::TEXT || ty == Type::VARCHAR || ty == Type::NAME {
        row.try_get::<_, Option<String>>(i)?
            .map_or(Val::Null, Val::Text)
    } else {
        bail!(
            "results store: column {} has type {ty}, which the store never writes",
            row.columns()[i].name()
        )
    })
}

/// Statements on one transaction of either back end.
pub trait Exec {
    /// Runs a statement; how many rows it changed.
    fn exec(&mut self, sql: &str, p: &[Val]) -> Result<u64>;
    /// Runs a query; its rows.
    fn query(&mut self, sql: &str, p: &[Val]) -> Result<Vec<Vec<Val>>>;
    /// Runs an INSERT into a table whose key is `id`; the id it got.
    fn insert_id(&mut self, sql: &str, p: &[Val]) -> Result<i64>;
    /// True for PostgreSQL.
    fn is_postgres(&self) -> bool;
}

struct Lite<'a>(&'a rusqlite::Connection);

impl Exec for Lite<'_> {
    fn exec(&mut self, sql: &str, p: &[Val]) -> Result<u64> {
        Ok(self
            .0
            .prepare_cached(sql)?
            .execute(rusqlite::params_from_iter(p))? as u64)
    }
    fn query(&mut self, sql: &str, p: &[Val]) -> Result<Vec<Vec<Val>>> {
        let mut st = self.0.prepare_cached(sql)?;
        let n = st.column_count();
        let mut rows = st.query(rusqlite::params_from_iter(p))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            let mut row = Vec::with_capacity(n);
            for i in 0..n {
                row.push(lite_val(r.get_ref(i)?));
            }
            out.push(row);
        }
        Ok(out)
    }
    fn insert_id(&mut self, sql: &str, p: &[Val]) -> Result<i64> {
        self.exec(sql, p)?;
        Ok(self.0.last_insert_rowid())
    }
    fn is_postgres(&self) -> bool {
        false
    }
}

fn lite_val(v: rusqlite::types::ValueRef<'_>) -> Val {
    use rusqlite::types::ValueRef;
    match v {
        ValueRef::Null => Val::Null,
        ValueRef::Integer(i) => Val::Int(i),
        ValueRef::Real(f) => Val::Real(f),
        ValueRef::Text(t) => Val::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Val::Blob(b.to_vec()),
    }
}

/// The PostgreSQL back end: a connection and its prepared statements,
/// made again when the last one ended (a store restarted, a timeout),
/// with the session's own state (locks, LISTEN) set again.
pub struct Pg {
    /// The connection.
    pub client: postgres::Client,
    cache: HashMap<String, postgres::Statement>,
    /// Where the store is, to connect again.
    at: crate::address::Target,
    /// Statements that set up a session (run again on a new one).
    setup: Vec<String>,
    /// The last failed attempt to connect again, and why: until the
    /// store's timeout has passed, operations fail at once with it
    /// instead of waiting on the store again each.
    down: Option<(std::time::Instant, String)>,
}

impl Pg {
    /// The connection, made again first if the last one has ended: an
    /// operation that failed with it failed, the next one gets a new
    /// session (with [`Pg::setup`]'s statements run again).
    pub fn live(&mut self) -> Result<&mut postgres::Client> {
        if self.client.is_closed() {
            let wait = self.at.timeout.unwrap_or(crate::address::pg::REPLY_TIMEOUT);
            if let Some((at, why)) = &self.down {
                if at.elapsed() < wait {
                    bail!(
                        "the results store is not answering (connecting again failed {:.0} s ago: {why})",
                        at.elapsed().as_secs_f64()
                    );
                }
            }
            let mut c = match super::pg::connect(&self.at) {
                Ok(c) => c,
                Err(e) => {
                    let why = format!("{e:#}");
                    self.down = Some((std::time::Instant::now(), why.clone()));
                    bail!(
                        "the results store's connection ended, and connecting again failed: {why}"
                    );
                }
            };
            self.down = None;
            for s in &self.setup {
                c.batch_execute(s)
                    .with_context(|| format!("results store, new session: {s}"))?;
            }
            self.client = c;
            self.cache.clear();
        }
        Ok(&mut self.client)
    }

    /// Forgets the session's set-up statements (a lock released).
    pub fn forget_setup(&mut self) {
        self.setup.clear();
    }

    /// Runs `sql` now and again on every new session (a session lock, a
    /// LISTEN).
    pub fn setup(&mut self, sql: &str) -> Result<()> {
        self.live()?.batch_execute(sql)?;
        self.setup.push(sql.to_string());
        Ok(())
    }
}

struct PgTx<'a, 'b> {
    t: &'a mut postgres::Transaction<'b>,
    cache: &'a mut HashMap<String, postgres::Statement>,
}

impl PgTx<'_, '_> {
    fn statement(&mut self, sql: &str, returning: bool) -> Result<postgres::Statement> {
        let key = if returning {
            format!("{sql}\u{0}id")
        } else {
            sql.to_string()
        };
        if let Some(s) = self.cache.get(&key) {
            return Ok(s.clone());
        }
        let mut text = pg_sql(sql)?;
        if returning {
            text.push_str(" RETURNING id");
        }
        let s = self
            .t
            .prepare(&text)
            .with_context(|| format!("results store: preparing {text}"))?;
        self.cache.insert(key, s.clone());
        Ok(s)
    }
}

fn pg_params(p: &[Val]) -> Vec<&(dyn postgres::types::ToSql + Sync)> {
    p.iter()
        .map(|v| v as &(dyn postgres::types::ToSql + Sync))
        .collect()
}

impl Exec for PgTx<'_, '_> {
    fn exec(&mut self, sql: &str, p: &[Val]) -> Result<u64> {
        let s = self.statement(sql, false)?;
        Ok(self.t.execute(&s, &pg_params(p))?)
    }
    fn query(&mut self, sql: &str, p: &[Val]) -> Result<Vec<Vec<Val>>> {
        let s = self.statement(sql, false)?;
        let rows = self.t.query(&s, &pg_params(p))?;
        rows.iter()
            .map(|r| (0..r.len()).map(|i| pg_val(r, i)).collect())
            .collect()
    }
    fn insert_id(&mut self, sql: &str, p: &[Val]) -> Result<i64> {
        let s = self.statement(sql, true)?;
        let row = self.t.query_one(&s, &pg_params(p))?;
        Ok(row.try_get(0)?)
    }
    fn is_postgres(&self) -> bool {
        true
    }
}

/// The store: a SQLite file or a PostgreSQL database.
pub enum Db {
    /// The SQLite file.
    Sqlite(rusqlite::Connection),
    /// PostgreSQL.
    Postgres(Box<Pg>),
}

impl Db {
    /// A PostgreSQL store on this connection, to the store at `at`.
    pub fn postgres(client: postgres::Client, at: crate::address::Target) -> Db {
        Db::Postgres(Box::new(Pg {
            client,
            cache: HashMap::new(),
            at,
            setup: Vec::new(),
            down: None,
        }))
    }

    /// Runs `f` in one transaction, committed if it returns Ok.
    pub fn tx<R>(&mut self, f: impl FnOnce(&mut dyn Exec) -> Result<R>) -> Result<R> {
        match self {
            Db::Sqlite(c) => {
                let t = c.transaction()?;
                let r = f(&mut Lite(&t))?;
                t.commit()?;
                Ok(r)
            }
            Db::Postgres(pg) => {
                pg.live()?;
                let Pg { client, cache, .. } = &mut **pg;
                let mut t = client.transaction()?;
                let r = f(&mut PgTx { t: &mut t, cache })?;
                t.commit()?;
                Ok(r)
            }
        }
    }
}

/// The primary key of the tables written with `INSERT OR REPLACE`, for
/// PostgreSQL's `ON CONFLICT`.
fn primary_key(table: &str) -> Option<&'static str> {
    Some(match table {
        "intervals" | "slices" | "rates" | "step_notes" => "step_id, idx",
        "figures" => "step_id, interval_idx, name",
        "latencies" => "step_id, interval_idx, op",
        "extras" => "step_id, name",
        "model_checks" => "step_id, figure",
        "run_clients" => "run_id, client",
        _ => return None,
    })
}

/// A statement in SQLite's dialect, for PostgreSQL: `?N` parameters
/// become `$N`, and `INSERT OR REPLACE INTO t (cols) …` an INSERT that
/// updates the other columns on a conflict of `t`'s primary key.
pub fn pg_sql(sql: &str) -> Result<String> {
    let mut out = String::with_capacity(sql.len() + 64);
    let mut chars = sql.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        if c == '\'' {
            quoted = !quoted;
        }
        if c == '?' && !quoted && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    const REPLACE: &str = "INSERT OR REPLACE INTO ";
    let Some(rest) = out.strip_prefix(REPLACE) else {
        return Ok(out);
    };
    let (table, rest) = rest
        .split_once(' ')
        .with_context(|| format!("results store: no table in {sql}"))?;
    let pk = primary_key(table)
        .with_context(|| format!("results store: no primary key known for {table}"))?;
    let cols = rest
        .trim_start()
        .strip_prefix('(')
        .and_then(|r| r.split_once(')'))
        .map(|(c, _)| c)
        .with_context(|| format!("results store: no column list in {sql}"))?;
    let keys: Vec<&str> = pk.split(", ").collect();
    let set: Vec<String> = cols
        .split(',')
        .map(str::trim)
        .filter(|c| !keys.contains(c))
        .map(|c| format!("{c} = EXCLUDED.{c}"))
        .collect();
    let action = if set.is_empty() {
        "DO NOTHING".to_string()
    } else {
        format!("DO UPDATE SET {}", set.join(", "))
    };
    Ok(format!(
        "INSERT INTO {table} {rest} ON CONFLICT ({pk}) {action}"
    ))
}

/// Every table of the store, parents first (the order a copy writes).
pub const TABLES: &[&str] = &[
    "runs",
    "run_clients",
    "steps",
    "intervals",
    "slices",
    "rates",
    "figures",
    "latencies",
    "samples",
    "engine_stats",
    "extras",
    "model_checks",
    "step_notes",
    "barriers",
];

/// A table's columns, in the order of the schema.
pub fn columns(db: &mut Db, table: &str) -> Result<Vec<String>> {
    db.tx(|t| {
        let rows = if t.is_postgres() {
            t.query(
                "SELECT column_name::text FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = ?1 ORDER BY ordinal_position",
                &[Val::from(table)],
            )?
        } else {
            t.query(
                "SELECT name FROM pragma_table_info(?1) ORDER BY cid",
                &[Val::from(table)],
            )?
        };
        Ok(rows
            .into_iter()
            .filter_map(|r| r.into_iter().next().and_then(|v| v.text().map(String::from)))
            .collect())
    })
}

/// Copies every row of the runs `runs` (all when empty) and what belongs
/// to them from `from` to `to`, keeping their ids; a run whose id `to`
/// already holds is an error naming it. The columns copied are those both
/// stores have.
// Long: a store's copy table by table in one order (runs before the rows that
// name them), the columns both stores have.
pub fn copy(from: &mut Db, to: &mut Db, runs: &[i64]) -> Result<usize> {
    let ids: Vec<i64> = if runs.is_empty() {
        from.tx(|t| t.query("SELECT id FROM runs ORDER BY id", &[]))?
            .into_iter()
            .filter_map(|r| r.first().and_then(Val::int))
            .collect()
    } else {
        runs.to_vec()
    };
    let taken: Vec<i64> = to
        .tx(|t| t.query("SELECT id FROM runs", &[]))?
        .into_iter()
        .filter_map(|r| r.first().and_then(Val::int))
        .filter(|i| ids.contains(i))
        .collect();
    if let Some(i) = taken.first() {
        bail!("the destination already holds a run {i}: copy into another store");
    }
    let list = ids
        .iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    if list.is_empty() {
        return Ok(0);
    }
    // Everything is read first, then written in one transaction: a copy
    // that fails (a step id the destination holds) leaves nothing.
    let mut batches = Vec::new();
    for table in TABLES {
        let src = columns(from, table)?;
        let dst = columns(to, table)?;
        let cols: Vec<&String> = src.iter().filter(|c| dst.contains(c)).collect();
        if cols.is_empty() {
            continue;
        }
        let names = cols
            .iter()
            .map(|c| format!("\"{}\"", c.replace('"', "")))
            .collect::<Vec<_>>()
            .join(", ");
        // The ids are integers read above: no text of the user's reaches
        // the statement.
        let filter = match *table {
            "runs" => format!("id IN ({list})"),
            "run_clients" | "steps" | "barriers" => format!("run_id IN ({list})"),
            _ => format!("step_id IN (SELECT id FROM steps WHERE run_id IN ({list}))"),
        };
        let rows =
            from.tx(|t| t.query(&format!("SELECT {names} FROM {table} WHERE {filter}"), &[]))?;
        let marks = (1..=cols.len())
            .map(|i| format!("?{i}"))
            .collect::<Vec<_>>()
            .join(", ");
        batches.push((
            format!("INSERT INTO {table} ({names}) VALUES ({marks})"),
            rows,
        ));
    }
    to.tx(|t| {
        for (insert, rows) in &batches {
            for r in rows {
                t.exec(insert, r)?;
            }
        }
        Ok(())
    })?;
    // PostgreSQL's generated ids continue after the copied ones.
    to.tx(|t| {
        if t.is_postgres() {
            for table in ["runs", "steps"] {
                t.query(
                    &format!(
                        "SELECT setval(pg_get_serial_sequence('{table}', 'id'), \
                         GREATEST((SELECT COALESCE(MAX(id), 0) FROM {table}), 1))"
                    ),
                    &[],
                )?;
            }
        }
        Ok(())
    })?;
    Ok(ids.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_translate_for_postgres() {
        assert_eq!(
            pg_sql("UPDATE runs SET status = ?1 WHERE id = ?2 AND x = '?3'").unwrap(),
            "UPDATE runs SET status = $1 WHERE id = $2 AND x = '?3'"
        );
        assert_eq!(
            pg_sql("INSERT OR REPLACE INTO extras (step_id, name, value) VALUES (?1, ?2, ?3)")
                .unwrap(),
            "INSERT INTO extras (step_id, name, value) VALUES ($1, $2, $3) \
             ON CONFLICT (step_id, name) DO UPDATE SET value = EXCLUDED.value"
        );
        assert!(pg_sql("INSERT OR REPLACE INTO nope (a) VALUES (?1)").is_err());
    }

    #[test]
    fn sqlite_values_round_trip() {
        let mut db = Db::Sqlite(rusqlite::Connection::open_in_memory().unwrap());
        db.tx(|t| {
            t.exec(
                "CREATE TABLE v (a INTEGER, b REAL, c TEXT, d BLOB, e TEXT)",
                &[],
            )?;
            t.exec(
                "INSERT INTO v VALUES (?1, ?2, ?3, ?4, ?5)",
                vals![7i64, 1.5, "x", vec![1u8, 2], None::<String>],
            )
        })
        .unwrap();
        let rows = db.tx(|t| t.query("SELECT * FROM v", &[])).unwrap();
        assert_eq!(
            rows,
            vec![vec![
                Val::Int(7),
                Val::Real(1.5),
                Val::Text("x".into()),
                Val::Blob(vec![1, 2]),
                Val::Null
            ]]
        );
    }
}
