//! A PostgreSQL server reached by `--target postgres://…`: the `postgres`
//! engine on a server ampbench did not start. Workers and administration
//! use the `postgres` crate, as on a local server; the server's counters
//! ([`Counters`], also read on a local server beside /proc) give the
//! efficiency figures.

use anyhow::{Result, anyhow, bail};
use std::sync::Arc;

use postgres::Client;
use rustls::ClientConfig;

use super::{CONNECT_TIMEOUT, DATABASE_SETTING, Endpoint, Endpoints, Place, TargetSpec};
use crate::pg_conn::PgConn;
use crate::probe::server::Reconnecting;
use crate::probe::{CounterSource, ServerCounters};
use crate::server::Server;
use crate::sql::{Dialect, SqlConn, SqlEngine};
use crate::{Engine, EngineInfo, EngineKind, EngineRef, EngineStats, OpenSpec};

/// How a counters connection is made (again, after the server dropped it).
pub type Connector = Box<dyn Fn() -> Result<Client, postgres::Error> + Send + Sync>;

/// A PostgreSQL server's counters, read over a connection of their own.
pub struct Counters {
    conn: Reconnecting<Client>,
    /// The query for this server's version, chosen at the first reading.
    query: std::sync::OnceLock<&'static str>,
}

/// The counters' query: reads and writes of the whole cluster (as /proc
/// sees the whole server), the WAL generated, and the database's size.
/// PostgreSQL 16's pg_stat_io counts reads and writes of every process
/// kind; before it, backends' reads are `blks_read` and writes are the
/// checkpointer's, background writer's and backends' buffers.
const COUNTERS_15: &str = "SELECT \
    (SELECT sum(blks_read) FROM pg_stat_database)::bigint, \
    (SELECT sum(blks_read) FROM pg_stat_database)::bigint * current_setting('block_size')::bigint, \
    (SELECT buffers_checkpoint + buffers_clean + buffers_backend FROM pg_stat_bgwriter)::bigint * current_setting('block_size')::bigint, \
    (SELECT wal_bytes FROM pg_stat_wal)::bigint, \
    pg_database_size(current_database())::bigint";
const COUNTERS_16: &str = "SELECT \
    (SELECT sum(reads) FROM pg_stat_io)::bigint, \
    (SELECT sum(reads * op_bytes) FROM pg_stat_io)::bigint, \
    (SELECT sum(writes * op_bytes) FROM pg_stat_io)::bigint, \
    (SELECT wal_bytes FROM pg_stat_wal)::bigint, \
    pg_database_size(current_database())::bigint";

impl Counters {
    /// Counters read through `connect` (whose database is the one sized).
    pub fn new(connect: Connector) -> Counters {
        Counters {
            conn: Reconnecting::new(Box::new(move || Ok(connect()?))),
            query: std::sync::OnceLock::new(),
        }
    }

    fn read_with(&self, c: &mut Client) -> Result<ServerCounters> {
        let q = match self.query.get() {
            Some(q) => *q,
            None => {
                let num: i32 = c
                    .query_one("SELECT current_setting('server_version_num')::int", &[])?
                    .get(0);
                *self.query.get_or_init(|| {
                    if num >= 160_000 {
                        COUNTERS_16
                    } else {
                        COUNTERS_15
                    }
                })
            }
        };
        let r = c.query_one(q, &[])?;
        let g = |i: usize| {
            r.try_get::<_, Option<i64>>(i)
                .ok()
                .flatten()
                .map(|v| v.max(0) as u64)
        };
        Ok(ServerCounters {
            reads: g(0),
            read_bytes: g(1),
            data_written: g(2),
            log_written: g(3),
            db_bytes: g(4),
        })
    }
}

impl CounterSource for Counters {
    fn read(&self) -> Option<ServerCounters> {
        self.conn.with(|c| self.read_with(c))
    }
    fn source(&self) -> &'static str {
        "pg_stat_*"
    }
}

/// A connection to one endpoint of the target, in `db` (see
/// [`crate::address::pg::connect`]).
fn connect_to(
    spec: &TargetSpec,
    tls: Option<&Arc<rustls::ClientConfig>>,
    ep: &(Endpoint, std::net::SocketAddr),
    db: &str,
) -> Result<Client, postgres::Error> {
    crate::address::pg::connect(&spec.target, tls, ep, db, CONNECT_TIMEOUT)
}

use crate::address::pg::one_line;

/// An external PostgreSQL server with the benchmark's database.
pub struct External {
    info: EngineInfo,
    spec: TargetSpec,
    endpoints: Endpoints,
    /// The database logged in to for administration (the URL's, or
    /// `postgres`).
    login_db: String,
    place: Place,
    /// The TLS configuration, when the URL asks for TLS.
    tls: Option<Arc<ClientConfig>>,
}

/// The tables of the connected database, those of other schemas than the
/// current one qualified (`schema.table`: never a workload table).
fn list_tables(c: &mut Client) -> Result<Vec<String>> {
    Ok(c.query(
        "SELECT CASE WHEN schemaname = current_schema() THEN tablename ELSE schemaname || '.' || tablename END \
         FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')",
        &[],
    )?
    .iter()
    .map(|r| r.get(0))
    .collect())
}

/// True when the server behind `c` has database `db`.
fn has_db(c: &mut Client, db: &str) -> Result<bool> {
    Ok(
        c.query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&db])?
            .is_some(),
    )
}

/// Logs in to every endpoint once, before the run records anything: a
/// wrong password, an unreachable host or a refused TLS handshake is one
/// line and nothing else.
pub fn preflight(spec: &TargetSpec) -> Result<()> {
    let tls = super::tls::client_config(&spec.target)?;
    let shown = spec.target.shown();
    let login_db = spec.target.db.clone().unwrap_or_else(|| "postgres".into());
    for ep @ (e, _) in Endpoints::resolve(&spec.target)?.all() {
        connect_to(spec, tls.as_ref(), ep, &login_db).map_err(|err| {
            anyhow!(
                "{shown}: cannot log in to {e} as {}: {}",
                spec.target.user,
                one_line(&err)
            )
        })?;
    }
    Ok(())
}

/// Opens the target: checks who it is, makes or checks the database.
// Long: the checks of a server reached by URL, in the order that leaves
// nothing behind on failure (who it is, its settings, its database) before a
// database is made.
pub fn open(kind: EngineKind, open: &OpenSpec, spec: &TargetSpec) -> Result<Box<dyn Engine>> {
    let tls = super::tls::client_config(&spec.target)?;
    let shown = spec.target.shown();
    let endpoints = Endpoints::resolve(&spec.target)?;
    let login_db = spec.target.db.clone().unwrap_or_else(|| "postgres".into());
    let mut conns = Vec::new();
    for ep @ (e, _) in endpoints.all() {
        let c = connect_to(spec, tls.as_ref(), ep, &login_db).map_err(|err| {
            anyhow!(
                "{shown}: cannot log in to {e} as {}: {}",
                spec.target.user,
                one_line(&err)
            )
        })?;
        conns.push(c);
    }
    let mut others = conns.split_off(1);
    let Some(mut c) = conns.pop() else {
        bail!("{shown}: no endpoint");
    };
    let version: String = c.query_one("SHOW server_version", &[])?.get(0);
    let num: i32 = c
        .query_one("SELECT current_setting('server_version_num')::int", &[])?
        .get(0);
    if num < 140_000 {
        bail!("{shown}: PostgreSQL {version} is too old: ampbench needs 14 or newer (pg_stat_wal)");
    }
    let host: Option<String> = c.query_one("SELECT host(inet_server_addr())", &[])?.get(0);
    // Everything that can fail comes before a database is made, so
    // that an error leaves nothing behind.
    let names: Vec<String> = [
        "shared_buffers",
        "synchronous_commit",
        "fsync",
        "full_page_writes",
        "wal_level",
        "max_wal_size",
        "checkpoint_timeout",
    ]
    .map(String::from)
    .to_vec();
    let mut settings: Vec<(String, String)> = c
        .query(
            "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY($1) ORDER BY name",
            &[&names],
        )?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    settings.insert(0, ("target".into(), shown.clone()));
    settings.insert(
        1,
        ("host".into(), host.unwrap_or_else(|| "(not said)".into())),
    );
    let place = match &spec.db {
        Some(db) => {
            if !has_db(&mut c, db)? {
                bail!(
                    "--target-db {db}: no such database on {shown} (without --target-db ampbench creates one of its own)"
                );
            }
            let mut w = connect_to(spec, tls.as_ref(), endpoints.first(), db).map_err(|e| {
                anyhow!("{shown}: cannot connect to database {db}: {}", one_line(&e))
            })?;
            let place = Place::new(db.clone(), false, open.tables.clone());
            let found = list_tables(&mut w)?;
            // A joining client uses client 0's tables as they are, but
            // only in a database that holds nothing but ampbench's.
            let drop = if spec.joined {
                place.judge_joined(&found)?;
                Vec::new()
            } else {
                place.judge(&found, spec.db_owned)?
            };
            for t in drop {
                // Names checked by judge: letters, digits and '_'.
                w.batch_execute(&format!("DROP TABLE IF EXISTS {t}"))
                    .map_err(|e| anyhow!("--target-db {db}: cannot drop {t}: {}", one_line(&e)))?;
            }
            place
        }
        None => {
            let db = super::fresh_db_name(spec.run_tag.as_deref())?;
            c.batch_execute(&format!("CREATE DATABASE {db}")).map_err(|e| {
                anyhow!(
                    "{shown}: cannot create database {db}: {} (grant CREATEDB or give --target-db)",
                    one_line(&e)
                )
            })?;
            Place::new(db, true, open.tables.clone())
        }
    };
    settings.insert(2, (DATABASE_SETTING.into(), place.db.clone()));
    // Connections go to every endpoint in turn: each must serve the
    // database (one cluster, not independent servers).
    for (o, (e, _)) in others.iter_mut().zip(endpoints.all().iter().skip(1)) {
        if !has_db(o, &place.db).unwrap_or(false) {
            if place.created {
                let _ = c.batch_execute(&format!(
                    "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                    place.db
                ));
            }
            bail!(
                "{shown}: endpoint {e} does not serve database {} that {} does: the endpoints of a target must be one database (a cluster)",
                place.db,
                endpoints.first().0
            );
        }
    }
    Ok(Box::new(External {
        info: EngineInfo {
            kind,
            version: format!("PostgreSQL {version}"),
            settings,
            dir: open.dir.clone(),
        },
        spec: spec.clone(),
        endpoints,
        login_db,
        place,
        tls,
    }))
}

impl External {
    fn admin(&self, db: &str) -> Result<Client> {
        let ep @ (e, _) = self.endpoints.first();
        connect_to(&self.spec, self.tls.as_ref(), ep, db).map_err(|err| {
            anyhow!(
                "{}: cannot connect to {e}: {}",
                self.info.kind,
                one_line(&err)
            )
        })
    }
}

impl SqlEngine for External {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }
    fn schema_made(&self) -> Result<()> {
        let found = list_tables(&mut self.admin(&self.place.db)?)?;
        self.place.schema_made(found);
        Ok(())
    }
    fn table_options(&self) -> &str {
        ""
    }
    fn server(&self) -> Option<&Server> {
        None
    }
    fn connect(&self) -> Result<Box<dyn SqlConn>> {
        let ep @ (e, _) = self.endpoints.next();
        let c = crate::address::pg::connect_wire(
            &self.spec.target,
            self.tls.as_ref(),
            ep,
            &self.place.db,
            CONNECT_TIMEOUT,
        )
        .map_err(|err| {
            anyhow!(
                "postgres: cannot connect to {e}: {}",
                ampbench_pgwire::one_line(&err)
            )
        })?;
        Ok(Box::new(PgConn::new(c)))
    }
}

impl Engine for External {
    fn info(&self) -> &EngineInfo {
        &self.info
    }
    fn face(&self) -> EngineRef<'_> {
        EngineRef::Sql(self)
    }
    fn data_paths(&self) -> Vec<std::path::PathBuf> {
        Vec::new()
    }
    fn pid(&self) -> Option<u32> {
        None
    }
    fn counters(&self) -> Option<std::sync::Arc<dyn CounterSource>> {
        let (spec, tls, ep, db) = (
            self.spec.clone(),
            self.tls.clone(),
            self.endpoints.first().clone(),
            self.place.db.clone(),
        );
        Some(std::sync::Arc::new(Counters::new(Box::new(move || {
            connect_to(&spec, tls.as_ref(), &ep, &db)
        }))))
    }
    fn stats(&self) -> Result<EngineStats> {
        crate::pg_conn::pg_stats(&mut self.admin(&self.place.db)?)
    }
    fn settle(&self) -> Result<String> {
        Ok("not settled: an external target's checkpoints are its own (CHECKPOINT needs rights ampbench does not ask for)".into())
    }
    fn close_keeping(self: Box<Self>) -> Result<Option<String>> {
        Ok(Some(
            self.place.left(&self.spec.target.shown(), "DROP DATABASE"),
        ))
    }
    fn close(self: Box<Self>) -> Result<()> {
        if self.spec.keep {
            return Ok(());
        }
        let db = &self.place.db;
        if self.place.created {
            let mut c = self.admin(&self.login_db)?;
            // Never from under another session (a client of the run the
            // results store said was gone): no FORCE, and only alone.
            super::wait_alone(db, &self.spec.target.shown(), || {
                let n: i64 = c
                    .query_one(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
                        &[&db],
                    )?
                    .get(0);
                Ok(n as u64)
            })?;
            c.batch_execute(&format!("DROP DATABASE IF EXISTS {db}"))
                .map_err(|e| anyhow!("dropping database {db}: {}", one_line(&e)))?;
        } else {
            let mut c = self.admin(db)?;
            for t in self.place.to_drop(&list_tables(&mut c)?) {
                c.batch_execute(&format!("DROP TABLE IF EXISTS {t}"))?;
            }
        }
        Ok(())
    }
}
