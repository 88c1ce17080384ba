//! A PostgreSQL server reached by `--target postgres://…`: the `postgres`
//! engine on a server ampbench did not start. Workers and administration
//! use the `postgres` crate, as on a local server; the server's counters
//! ([`Counters`], also read on a local server beside /proc) give the
//! efficiency figures.

use std::sync::Mutex;

use anyhow::{Result, anyhow, bail};
use postgres::{Client, NoTls};

use super::{CONNECT_TIMEOUT, Endpoints, TargetSpec};
use crate::engine::postgres::PgConn;
use crate::engine::server::Server;
use crate::engine::sql::{Dialect, SqlConn, SqlEngine};
use crate::engine::{Engine, EngineInfo, EngineKind, EngineRef, EngineStats, OpenSpec};
use crate::probe::{CounterSource, ServerCounters};

/// How a counters connection is made (again, after the server dropped it).
pub type Connector = Box<dyn Fn() -> Result<Client, postgres::Error> + Send + Sync>;

/// A PostgreSQL server's counters, read over a connection of their own.
pub struct Counters {
    connect: Connector,
    conn: Mutex<Option<Client>>,
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
            connect,
            conn: Mutex::new(None),
        }
    }

    fn read_with(c: &mut Client) -> Result<ServerCounters> {
        let num: i32 = c
            .query_one("SELECT current_setting('server_version_num')::int", &[])?
            .get(0);
        let q = if num >= 160_000 {
            COUNTERS_16
        } else {
            COUNTERS_15
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
        let mut g = self.conn.lock().ok()?;
        if g.is_none() {
            *g = (self.connect)().ok();
        }
        let c = g.as_mut()?;
        match Counters::read_with(c) {
            Ok(v) => Some(v),
            Err(_) => {
                *g = None;
                None
            }
        }
    }
    fn source(&self) -> &'static str {
        "pg_stat_*"
    }
}

/// A connection to one endpoint of the target, in `db`.
fn connect_to(
    spec: &TargetSpec,
    at: &std::net::SocketAddr,
    db: &str,
) -> Result<Client, postgres::Error> {
    let mut c = postgres::Config::new();
    c.host(&at.ip().to_string())
        .port(at.port())
        .user(&spec.target.user)
        .dbname(db)
        .connect_timeout(CONNECT_TIMEOUT);
    if let Some(p) = &spec.target.password {
        c.password(p);
    }
    c.connect(NoTls)
}

/// The server's error on one line: its SQLSTATE message when it sent one.
fn one_line(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => d.message().to_string(),
        None => e.to_string().lines().next().unwrap_or_default().to_string(),
    }
}

/// An external PostgreSQL server with the benchmark's database.
pub struct External {
    info: EngineInfo,
    spec: TargetSpec,
    endpoints: Endpoints,
    /// The database logged in to for administration (the URL's, or
    /// `postgres`).
    login_db: String,
    db: String,
    created: bool,
    tables: Vec<String>,
}

/// Opens the target: checks who it is, makes or checks the database.
pub fn open(kind: EngineKind, open: &OpenSpec, spec: &TargetSpec) -> Result<Box<dyn Engine>> {
    super::check_tls(&spec.target)?;
    let shown = spec.target.shown();
    let endpoints = Endpoints::resolve(&spec.target)?;
    let login_db = spec.target.db.clone().unwrap_or_else(|| "postgres".into());
    let mut conns = Vec::new();
    for (e, at) in endpoints.all() {
        let c = connect_to(spec, at, &login_db).map_err(|err| {
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
    let (db, created) = match &spec.db {
        Some(db) => {
            let exists = c.query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[db])?;
            if exists.is_none() {
                bail!(
                    "--target-db {db}: no such database on {shown} (without --target-db ampbench creates one of its own)"
                );
            }
            let mut w = connect_to(spec, &endpoints.first().1, db).map_err(|e| {
                anyhow!("{shown}: cannot connect to database {db}: {}", one_line(&e))
            })?;
            let found: Vec<String> = w
                .query(
                    "SELECT CASE WHEN schemaname = current_schema() THEN tablename ELSE schemaname || '.' || tablename END \
                     FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')",
                    &[],
                )?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let drop = super::judge_tables(db, &found, spec.db_owned, &open.tables)?;
            for t in drop {
                // Names checked by judge_tables: letters, digits and '_'.
                w.batch_execute(&format!("DROP TABLE IF EXISTS {t}"))
                    .map_err(|e| anyhow!("--target-db {db}: cannot drop {t}: {}", one_line(&e)))?;
            }
            (db.clone(), false)
        }
        None => {
            let db = super::fresh_db_name()?;
            c.batch_execute(&format!("CREATE DATABASE {db}")).map_err(|e| {
                anyhow!(
                    "{shown}: cannot create database {db}: {} (grant CREATEDB or give --target-db)",
                    one_line(&e)
                )
            })?;
            (db, true)
        }
    };
    // Connections go to every endpoint in turn: each must serve the
    // database (one cluster, not independent servers).
    for (o, (e, _)) in others.iter_mut().zip(endpoints.all().iter().skip(1)) {
        if o.query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&db])?
            .is_none()
        {
            if created {
                let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"));
            }
            bail!(
                "{shown}: endpoint {e} does not serve database {db} that {} does: the endpoints of a target must be one database (a cluster)",
                endpoints.first().0
            );
        }
    }
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
        db,
        created,
        tables: open.tables.clone(),
    }))
}

impl External {
    fn admin(&self, db: &str) -> Result<Client> {
        let (e, at) = self.endpoints.first();
        connect_to(&self.spec, at, db).map_err(|err| {
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
    fn table_options(&self) -> &str {
        ""
    }
    fn server(&self) -> Option<&Server> {
        None
    }
    fn connect(&self) -> Result<Box<dyn SqlConn>> {
        let (e, at) = self.endpoints.next();
        let c = connect_to(&self.spec, at, &self.db)
            .map_err(|err| anyhow!("postgres: cannot connect to {e}: {}", one_line(&err)))?;
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
        let (spec, at, db) = (self.spec.clone(), self.endpoints.first().1, self.db.clone());
        Some(std::sync::Arc::new(Counters::new(Box::new(move || {
            connect_to(&spec, &at, &db)
        }))))
    }
    fn stats(&self) -> Result<EngineStats> {
        let mut c = self.admin(&self.db)?;
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
                    if let Some(v) = crate::engine::postgres::cell(&row, i).int() {
                        st.values
                            .push((format!("{prefix}.{}", col.name()), v as f64));
                    }
                }
            }
        }
        Ok(st)
    }
    fn settle(&self) -> Result<String> {
        Ok("not settled: an external target's checkpoints are its own (CHECKPOINT needs rights ampbench does not ask for)".into())
    }
    fn close(self: Box<Self>) -> Result<()> {
        if self.spec.keep {
            return Ok(());
        }
        if self.created {
            let mut c = self.admin(&self.login_db)?;
            c.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.db))
                .map_err(|e| anyhow!("dropping database {}: {}", self.db, one_line(&e)))?;
        } else {
            let mut c = self.admin(&self.db)?;
            let found: Vec<String> = c
                .query(
                    "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()",
                    &[],
                )?
                .iter()
                .map(|r| r.get(0))
                .collect();
            for t in found
                .iter()
                .filter(|t| super::is_workload_table(t, &self.tables))
            {
                c.batch_execute(&format!("DROP TABLE IF EXISTS {t}"))?;
            }
        }
        Ok(())
    }
}
