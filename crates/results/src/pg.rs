//! Opening a PostgreSQL results store: the connection, then the schema
//! (the SQLite one in PostgreSQL's types, [`pg_schema`]) made
//! or brought up to date under an advisory lock, so clients arriving
//! together make it once.

use anyhow::{Context, Result};

use super::{INDEXES, SCHEMA, SCHEMA_VERSION};
use crate::address::Target;

/// Columns added since a store's tables were first made (the schema's
/// `IF NOT EXISTS` makes only missing tables): schema 6's heartbeat.
const MIGRATIONS: &str = "ALTER TABLE run_clients ADD COLUMN IF NOT EXISTS beat DOUBLE PRECISION;";

/// The advisory lock key under which the schema is made ("ampbench").
const SCHEMA_LOCK: i64 = 0x616d_7062_656e_6368;

/// A connection to the store's database (watched: a reply owed for the
/// store's timeout with nothing moving ends it, see
/// `crate::address::pgstream`).
pub fn connect(t: &Target) -> Result<postgres::Client> {
    let db = t.db.clone().ok_or_else(|| {
        crate::UsageError(format!(
            "--results {}: name the database (postgres://user@host/DATABASE)",
            t.shown()
        ))
    })?;
    Ok(
        crate::address::pg::connect_url(t, &db, std::time::Duration::from_secs(10))
            .map_err(|e| crate::UsageError(format!("--results: {e:#}")))?,
    )
}

/// Connects to the store and makes its schema; a database that holds
/// other tables but no `runs`, or a newer schema, is a one-line error.
pub fn open(t: &Target) -> Result<postgres::Client> {
    let mut c = connect(t)?;
    let shown = t.shown();
    let mut tx = c.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])?;
    let tables: Vec<String> = tx
        .query(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()",
            &[],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if !tables.is_empty() && !tables.iter().any(|t| t == "runs") {
        return Err(crate::UsageError(format!(
            "--results {shown}: the database holds tables but is not an ampbench results store (no runs table): pass another database"
        ))
        .into());
    }
    let v: Option<i64> = if tables.iter().any(|t| t == "schema_version") {
        tx.query_opt("SELECT max(version) FROM schema_version", &[])?
            .and_then(|r| r.get(0))
    } else {
        None
    };
    if let Some(v) = v.filter(|v| *v > SCHEMA_VERSION) {
        return Err(crate::UsageError(format!(
            "--results {shown} was written by a newer ampbench (results schema {v}; this one reads up to {SCHEMA_VERSION})"
        ))
        .into());
    }
    if v == Some(SCHEMA_VERSION) {
        // Up to date: no DDL. Even `IF NOT EXISTS` statements lock their
        // tables (ALTER TABLE takes an exclusive lock, CREATE INDEX a
        // share lock), which deadlocks against a client of the same run
        // already writing rows in its own transaction.
        tx.commit()?;
        return Ok(c);
    }
    tx.batch_execute("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)")?;
    tx.batch_execute(&pg_schema(SCHEMA))
        .and_then(|_| tx.batch_execute(MIGRATIONS))
        .and_then(|_| tx.batch_execute(INDEXES))
        .and_then(|_| tx.batch_execute(&super::read_indexes_sql()))
        .with_context(|| format!("--results {shown}: cannot make the results schema"))?;
    tx.execute("DELETE FROM schema_version", &[])?;
    tx.execute(
        "INSERT INTO schema_version (version) VALUES ($1)",
        &[&SCHEMA_VERSION],
    )?;
    tx.commit()?;
    Ok(c)
}

/// Makes the [`super::READ_INDEXES`] a store made before them lacks (a
/// new store gets them with its schema), one `CREATE INDEX CONCURRENTLY`
/// at a time on a connection of its own; errors are dropped (see
/// `Results::add_read_indexes`). Two clients arriving together: the
/// second waits for the first's build, then finds it. A build that
/// failed leaves an invalid index, which is not dropped here (another
/// client may be building it); `DROP INDEX` it by hand.
pub fn add_read_indexes(t: &Target) {
    let Ok(mut c) = connect(t) else {
        return;
    };
    let valid: Vec<String> = c
        .query(
            "SELECT c.relname::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = current_schema() AND i.indisvalid",
            &[],
        )
        .map(|rows| rows.iter().map(|r| r.get(0)).collect())
        .unwrap_or_default();
    for (name, table, column) in super::READ_INDEXES {
        if valid.iter().any(|v| v == name) {
            continue;
        }
        // Each its own statement: CONCURRENTLY refuses a transaction.
        let _ = c.batch_execute(&format!(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} ({column})"
        ));
    }
}

/// The SQLite schema in PostgreSQL's types: a generated `id` key, 64-bit
/// integers, doubles and bytea.
pub fn pg_schema(sqlite: &str) -> String {
    sqlite
        .replace(
            "id INTEGER PRIMARY KEY,",
            "id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,",
        )
        .replace(" INTEGER", " BIGINT")
        .replace(" REAL", " DOUBLE PRECISION")
        .replace(" BLOB", " BYTEA")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_translates_for_postgres() {
        let s = pg_schema(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER NOT NULL, b REAL, c BLOB);",
        );
        assert_eq!(
            s,
            "CREATE TABLE t (id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, a BIGINT NOT NULL, b DOUBLE PRECISION, c BYTEA);"
        );
    }
}
