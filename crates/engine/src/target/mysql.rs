//! A MariaDB or MySQL server reached by `--target mysql://…`: the
//! `mariadb-innodb` and `mariadb-myrocks` engines on a server ampbench did
//! not start. Every connection to it, workers', administration's and the
//! counters', goes through ampbench's own client (`mywire`), so TLS is
//! verified one way (`target::tls`, the CA file alone when given) and the
//! logins are the ones it speaks. The server's counters ([`Counters`],
//! also read on a local server beside /proc, there over the `mysql`
//! crate) give the efficiency figures.

use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use mysql::prelude::Queryable;

use crate::mywire::{self, Addr, TlsTo};
use crate::sql::Cell;

use super::{CONNECT_TIMEOUT, DATABASE_SETTING, Endpoint, Endpoints, Place, TargetSpec};
use crate::mysql_conn::MySqlConn;
use crate::probe::server::Reconnecting;
use crate::probe::{CounterSource, ServerCounters};
use crate::server::Server;
use crate::sql::{Dialect, SqlConn, SqlEngine};
use crate::{Engine, EngineInfo, EngineKind, EngineRef, EngineStats, OpenSpec};

/// A connection that answers text queries with rows of text cells: the
/// `mysql` crate's (a local server's counters) or mywire's (a target's).
pub trait TextQuery: Send + 'static {
    /// The rows of `sql`, each cell as text (None: NULL).
    fn rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>>;
}

impl TextQuery for mysql::Conn {
    fn rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>> {
        let rows: Vec<mysql::Row> = self.query(sql)?;
        Ok(rows
            .into_iter()
            .map(|r| {
                r.unwrap()
                    .into_iter()
                    .map(|v| match v {
                        mysql::Value::NULL => None,
                        mysql::Value::Bytes(b) => Some(String::from_utf8_lossy(&b).into_owned()),
                        v => Some(v.as_sql(true).trim_matches('\'').to_string()),
                    })
                    .collect()
            })
            .collect())
    }
}

impl TextQuery for mywire::Conn {
    fn rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>> {
        let mut out = Vec::new();
        self.query_text(sql, &mut |r: &mut Vec<Cell>| {
            out.push(
                r.iter()
                    .map(|c| match c {
                        Cell::Null => None,
                        Cell::Int(i) => Some(i.to_string()),
                        Cell::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
                        Cell::Text(t) => Some(t.clone()),
                    })
                    .collect(),
            )
        })?;
        Ok(out)
    }
}

/// The first cell of the first row of `sql`.
fn first(c: &mut impl TextQuery, sql: &str) -> Result<Option<String>> {
    Ok(c.rows(sql)?
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten()))
}

/// The rows of `sql` as (name, value) pairs (SHOW … STATUS/VARIABLES).
fn pairs(c: &mut impl TextQuery, sql: &str) -> Result<Vec<(String, String)>> {
    Ok(c.rows(sql)?
        .into_iter()
        .filter_map(|r| {
            let mut r = r.into_iter();
            Some((r.next()??, r.next().flatten().unwrap_or_default()))
        })
        .collect())
}

/// `SHOW GLOBAL STATUS`, the numeric values.
pub fn global_status(c: &mut impl TextQuery) -> Result<Vec<(String, f64)>> {
    Ok(pairs(c, "SHOW GLOBAL STATUS")?
        .into_iter()
        .filter_map(|(k, v)| Some((k, v.parse::<f64>().ok()?)))
        .collect())
}

/// A database name as a string literal: names reaching here are checked
/// (`target::check_db_name`: letters, digits, `_`; or ampbench's own).
fn lit(db: &str) -> String {
    debug_assert!(db.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    format!("'{}'", db.replace(['\'', '\\'], ""))
}

/// How a counters connection is made (again, after the server dropped it).
pub type Connector<C> = Box<dyn Fn() -> Result<C> + Send + Sync>;

/// A MariaDB/MySQL server's counters, read over a connection of their own.
pub struct Counters<C> {
    conn: Reconnecting<C>,
    db: String,
    myrocks: bool,
    /// The query that sizes the database on this server, found once.
    size_query: std::sync::OnceLock<String>,
}

impl<C: TextQuery> Counters<C> {
    /// Counters of database `db` (its size), read through `connect`.
    pub fn new(connect: Connector<C>, db: String, myrocks: bool) -> Counters<C> {
        Counters {
            conn: Reconnecting::new(connect),
            db,
            myrocks,
            size_query: std::sync::OnceLock::new(),
        }
    }

    fn read_with(&self, c: &mut C) -> Result<ServerCounters> {
        let names = if self.myrocks {
            "'rocksdb_block_cache_miss','rocksdb_flush_write_bytes','rocksdb_compact_write_bytes','rocksdb_wal_bytes'"
        } else {
            "'Innodb_data_reads','Innodb_data_read','Innodb_data_written','Innodb_os_log_written'"
        };
        let rows = pairs(
            c,
            &format!("SHOW GLOBAL STATUS WHERE Variable_name IN ({names})"),
        )?;
        let get = |n: &str| {
            rows.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(n))
                .and_then(|(_, v)| v.parse::<u64>().ok())
        };
        let db_bytes = self.db_bytes(c).ok().flatten();
        Ok(if self.myrocks {
            ServerCounters {
                reads: get("rocksdb_block_cache_miss"),
                // MyRocks counts the blocks it missed, not their bytes.
                read_bytes: None,
                data_written: match (
                    get("rocksdb_flush_write_bytes"),
                    get("rocksdb_compact_write_bytes"),
                ) {
                    (Some(f), Some(c)) => Some(f + c),
                    _ => None,
                },
                log_written: get("rocksdb_wal_bytes"),
                db_bytes,
            }
        } else {
            ServerCounters {
                reads: get("Innodb_data_reads"),
                read_bytes: get("Innodb_data_read"),
                data_written: get("Innodb_data_written"),
                log_written: get("Innodb_os_log_written"),
                db_bytes,
            }
        })
    }

    /// The database's size: InnoDB's tablespaces as allocated on disk
    /// (MariaDB's INNODB_SYS_TABLESPACES, MySQL 8's INNODB_TABLESPACES,
    /// whichever this server has, found at the first reading), else the
    /// tables' data and index lengths.
    fn db_bytes(&self, c: &mut C) -> Result<Option<u64>> {
        let db = lit(&self.db);
        let q = match self.size_query.get() {
            Some(q) => q,
            None => {
                let views = ["INNODB_SYS_TABLESPACES", "INNODB_TABLESPACES"];
                let q = views
                    .iter()
                    .filter(|_| !self.myrocks)
                    .map(|view| format!(
                        "SELECT CAST(SUM(ALLOCATED_SIZE) AS UNSIGNED) FROM information_schema.{view} WHERE LEFT(NAME, CHAR_LENGTH({db}) + 1) = CONCAT({db}, '/')"
                    ))
                    .find(|q| c.rows(q).is_ok())
                    .unwrap_or_else(|| {
                        format!("SELECT CAST(SUM(DATA_LENGTH + INDEX_LENGTH) AS UNSIGNED) FROM information_schema.TABLES WHERE TABLE_SCHEMA = {db}")
                    });
                self.size_query.get_or_init(|| q)
            }
        };
        Ok(first(c, q)?.and_then(|v| v.parse().ok()))
    }
}

impl<C: TextQuery> CounterSource for Counters<C> {
    fn read(&self) -> Option<ServerCounters> {
        self.conn.with(|c| self.read_with(c))
    }
    fn source(&self) -> &'static str {
        "SHOW GLOBAL STATUS"
    }
}

/// A connection to one endpoint as the target's user, in `db` (none:
/// no database), under TLS when the URL asks for it.
fn connect_to(
    spec: &TargetSpec,
    tls: Option<&std::sync::Arc<rustls::ClientConfig>>,
    (e, at): &(Endpoint, std::net::SocketAddr),
    db: Option<&str>,
    timeout: Option<Duration>,
) -> Result<mywire::Conn> {
    let tls = match tls {
        Some(config) => Some(TlsTo {
            config: config.clone(),
            name: super::tls::server_name(&e.host)?,
        }),
        None => None,
    };
    let mut c = mywire::Conn::connect(
        Addr::Tcp(*at),
        &spec.target.user,
        spec.target.password.as_deref().unwrap_or_default(),
        db.unwrap_or_default(),
        Some(timeout.unwrap_or(CONNECT_TIMEOUT)),
        tls.as_ref(),
        spec.target.public_key_request,
    )?;
    let d = mywire::Limits::default();
    c.set_limits(mywire::Limits {
        packet: spec.target.max_packet.map_or(d.packet, |n| n as usize),
        result: spec.target.max_result.unwrap_or(d.result),
    });
    Ok(c)
}

/// An external MariaDB or MySQL server with the benchmark's database.
pub struct External {
    info: EngineInfo,
    spec: TargetSpec,
    endpoints: Endpoints,
    place: Place,
    myrocks: bool,
    table_options: String,
    timeout: Option<Duration>,
    /// The workers' TLS configuration, when the URL asks for TLS.
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    /// With several endpoints (a cluster), one engine per endpoint for the
    /// checks; empty with one.
    views: Vec<EndpointView>,
}

/// One endpoint of a target as an engine of its own, for a consistency
/// check on each node of a cluster: its connections wait, on a Galera
/// node, until the node has applied what the cluster committed before
/// each read (`wsrep_sync_wait`).
struct EndpointView {
    info: EngineInfo,
    spec: TargetSpec,
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    at: (Endpoint, std::net::SocketAddr),
    db: String,
    timeout: Option<Duration>,
    table_options: String,
}

impl Engine for EndpointView {
    fn info(&self) -> &EngineInfo {
        &self.info
    }
    fn face(&self) -> EngineRef<'_> {
        EngineRef::Sql(self)
    }
    fn pid(&self) -> Option<u32> {
        None
    }
}

impl SqlEngine for EndpointView {
    fn dialect(&self) -> Dialect {
        Dialect::MySql
    }
    fn table_options(&self) -> &str {
        &self.table_options
    }
    fn server(&self) -> Option<&Server> {
        None
    }
    fn connect(&self) -> Result<Box<dyn SqlConn>> {
        let mut c = connect_to(
            &self.spec,
            self.tls.as_ref(),
            &self.at,
            Some(&self.db),
            self.timeout,
        )
        .map_err(|err| anyhow!("cannot connect to {}: {}", self.at.0, one_line(&err)))?;
        // Not a Galera node (1193, no such variable): nothing to wait for.
        if let Err(e) = c.query_drop("SET SESSION wsrep_sync_wait = 1") {
            if mywire::error_code(&e) != Some(1193) {
                return Err(e);
            }
        }
        Ok(Box::new(MySqlConn {
            c,
            durability_var: None,
            durability: None,
        }))
    }
}

/// The server's version string as `SELECT version()` gives it, named:
/// `MariaDB 10.11.6-MariaDB-0+deb12u1` or `MySQL 8.0.36`.
fn named_version(v: &str) -> String {
    if v.to_ascii_lowercase().contains("mariadb") {
        format!("MariaDB {v}")
    } else {
        format!("MySQL {v}")
    }
}

/// The tables of database `db`.
fn list_tables(c: &mut mywire::Conn, db: &str) -> Result<Vec<String>> {
    Ok(c.rows(&format!(
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = {}",
        lit(db)
    ))?
    .into_iter()
    .filter_map(|r| r.into_iter().next().flatten())
    .collect())
}

/// True when the server behind `c` has database `db`.
fn has_db(c: &mut mywire::Conn, db: &str) -> Result<bool> {
    Ok(first(
        c,
        &format!(
            "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = {}",
            lit(db)
        ),
    )?
    .is_some())
}

/// Logs in to every endpoint once, before the run records anything: a
/// wrong password, an unreachable host or a refused TLS handshake is one
/// line and nothing else.
pub fn preflight(spec: &TargetSpec) -> Result<()> {
    let tls = super::tls::client_config(&spec.target)?;
    let shown = spec.target.shown();
    for ep @ (e, _) in Endpoints::resolve(&spec.target)?.all() {
        // As long as the open may take (a loaded server logs in slowly).
        connect_to(spec, tls.as_ref(), ep, None, spec.target.timeout).map_err(|err| {
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
// nothing behind on failure (every endpoint, who it is, its engine, its
// variables) before a database is made.
pub fn open(kind: EngineKind, open: &OpenSpec, spec: &TargetSpec) -> Result<Box<dyn Engine>> {
    let tls = super::tls::client_config(&spec.target)?;
    let shown = spec.target.shown();
    let endpoints = Endpoints::resolve(&spec.target)?;
    let myrocks = crate::mariadb_options::is_myrocks(kind);
    let mut conns = Vec::new();
    for ep @ (e, _) in endpoints.all() {
        let c = connect_to(spec, tls.as_ref(), ep, None, open.timeout).map_err(|err| {
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
    let version = first(&mut c, "SELECT version()")?.unwrap_or_default();
    let host = first(&mut c, "SELECT @@hostname")?.unwrap_or_default();
    if myrocks {
        let engines = c.rows(
            "SELECT engine FROM information_schema.engines WHERE support IN ('YES','DEFAULT')",
        )?;
        if !engines
            .iter()
            .filter_map(|r| r.first().cloned().flatten())
            .any(|e| e.eq_ignore_ascii_case("rocksdb"))
        {
            bail!("{shown}: the server has no RocksDB storage engine (MyRocks) enabled");
        }
    }
    // Everything that can fail comes before a database is made, so
    // that an error leaves nothing behind.
    let vars = if myrocks {
        "'rocksdb_block_cache_size','rocksdb_flush_log_at_trx_commit','innodb_buffer_pool_size','sync_binlog','log_bin'"
    } else {
        "'innodb_buffer_pool_size','innodb_flush_log_at_trx_commit','innodb_flush_method','innodb_page_size','innodb_doublewrite','sync_binlog','log_bin'"
    };
    let mut settings = pairs(
        &mut c,
        &format!("SHOW GLOBAL VARIABLES WHERE Variable_name IN ({vars})"),
    )?;
    settings.sort();
    settings.insert(0, ("target".into(), shown.clone()));
    settings.insert(1, ("host".into(), host));
    let place = match &spec.db {
        Some(db) => {
            if !has_db(&mut c, db)? {
                bail!(
                    "--target-db {db}: no such database on {shown} (without --target-db ampbench creates one of its own)"
                );
            }
            let place = Place::new(db.clone(), false, open.tables.clone());
            let found = list_tables(&mut c, db)?;
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
                c.query_drop(&format!("DROP TABLE `{db}`.`{t}`"))?;
            }
            place
        }
        None => {
            let db = super::fresh_db_name(spec.run_tag.as_deref())?;
            c.query_drop(&format!("CREATE DATABASE `{db}`")).map_err(|e| {
                anyhow!("{shown}: cannot create database {db}: {} (grant CREATE on `ampbench\\_%`.* or give --target-db)", one_line(&e))
            })?;
            Place::new(db, true, open.tables.clone())
        }
    };
    settings.insert(2, (DATABASE_SETTING.into(), place.db.clone()));
    // Connections go to every endpoint in turn: each must serve the
    // database (one cluster, not independent servers).
    // A database just made reaches the other nodes of a cluster a moment
    // later (Galera applies it after certification): waited for, 10 s.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    for (o, (e, _)) in others.iter_mut().zip(endpoints.all().iter().skip(1)) {
        while place.created
            && !has_db(o, &place.db).unwrap_or(false)
            && std::time::Instant::now() < until
        {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        if !has_db(o, &place.db).unwrap_or(false) {
            if place.created {
                let _ = c.query_drop(&format!("DROP DATABASE `{}`", place.db));
            }
            bail!(
                "{shown}: endpoint {e} does not serve database {} that {} does: the endpoints of a target must be one database (a cluster)",
                place.db,
                endpoints.first().0
            );
        }
    }
    let table_options = if myrocks {
        "ENGINE=ROCKSDB".to_string()
    } else {
        "ENGINE=InnoDB".to_string()
    };
    let info = EngineInfo {
        kind,
        version: named_version(&version),
        settings,
        dir: open.dir.clone(),
    };
    let views = if endpoints.all().len() > 1 {
        endpoints
            .all()
            .iter()
            .map(|at| EndpointView {
                info: info.clone(),
                spec: spec.clone(),
                tls: tls.clone(),
                at: at.clone(),
                db: place.db.clone(),
                timeout: open.timeout,
                table_options: table_options.clone(),
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(Box::new(External {
        views,
        info,
        spec: spec.clone(),
        endpoints,
        place,
        myrocks,
        table_options,
        timeout: open.timeout,
        tls,
    }))
}

/// An error on one line: the server's message, or the client's cause
/// (the connection, TLS), without the context chain's first layers.
fn one_line(e: &anyhow::Error) -> String {
    let s = match e
        .chain()
        .find_map(|c| c.downcast_ref::<mywire::ServerError>())
    {
        Some(m) => m.to_string(),
        None => e.chain().last().map(|c| c.to_string()).unwrap_or_default(),
    };
    s.lines().next().unwrap_or_default().trim().to_string()
}

impl External {
    fn admin(&self) -> Result<mywire::Conn> {
        let ep @ (e, _) = self.endpoints.first();
        connect_to(
            &self.spec,
            self.tls.as_ref(),
            ep,
            Some(&self.place.db),
            self.timeout,
        )
        .map_err(|err| {
            anyhow!(
                "{}: cannot connect to {e}: {}",
                self.info.kind,
                one_line(&err)
            )
        })
    }
}

impl External {
    /// With several endpoints, one read on each through its view, whose
    /// connection waits on a Galera node until the node has applied what
    /// the cluster committed (`wsrep_sync_wait`): the schema, or the last
    /// step's index, is then on every node before workers use them.
    fn caught_up(&self) -> Result<()> {
        for v in &self.views {
            v.connect()?.query("SELECT 1", &[])?;
        }
        Ok(())
    }
}

impl SqlEngine for External {
    fn dialect(&self) -> Dialect {
        Dialect::MySql
    }
    fn schema_made(&self) -> Result<()> {
        let found = list_tables(&mut self.admin()?, &self.place.db)?;
        self.place.schema_made(found);
        self.caught_up()
    }
    fn before_step(&self) -> Result<()> {
        self.caught_up()
    }
    fn table_options(&self) -> &str {
        &self.table_options
    }
    fn server(&self) -> Option<&Server> {
        None
    }
    fn nodes(&self) -> Result<Vec<(String, &dyn SqlEngine)>> {
        Ok(self
            .views
            .iter()
            .map(|v| (v.at.0.to_string(), v as &dyn SqlEngine))
            .collect())
    }
    fn connect(&self) -> Result<Box<dyn SqlConn>> {
        let ep @ (e, _) = self.endpoints.next();
        let c = connect_to(
            &self.spec,
            self.tls.as_ref(),
            ep,
            Some(&self.place.db),
            self.timeout,
        )
        .map_err(|err| anyhow!("{}: cannot connect to {e}: {err:#}", self.info.kind))?;
        Ok(Box::new(MySqlConn {
            c,
            durability_var: None,
            durability: None,
        }))
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
        let (spec, tls, ep, db, t) = (
            self.spec.clone(),
            self.tls.clone(),
            self.endpoints.first().clone(),
            self.place.db.clone(),
            self.timeout,
        );
        Some(std::sync::Arc::new(Counters::new(
            Box::new(move || connect_to(&spec, tls.as_ref(), &ep, Some(&db), t)),
            self.place.db.clone(),
            self.myrocks,
        )))
    }
    fn stats(&self) -> Result<EngineStats> {
        Ok(EngineStats {
            values: global_status(&mut self.admin()?)?,
            ..EngineStats::default()
        })
    }
    fn settle(&self) -> Result<String> {
        Ok("not settled: an external target's background work is its own (ampbench changes nothing server-wide)".into())
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
        let mut c = self.admin()?;
        let db = &self.place.db;
        if self.place.created {
            // Never from under another session (a client of the run the
            // results store said was gone): only alone in it.
            super::wait_alone(db, &self.spec.target.shown(), || {
                Ok(first(
                    &mut c,
                    &format!(
                        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = {} AND ID <> CONNECTION_ID()",
                        lit(db)
                    ),
                )?
                .and_then(|n| n.parse().ok())
                .unwrap_or(0))
            })?;
            c.query_drop(&format!("DROP DATABASE `{db}`"))
                .with_context(|| format!("dropping database {db}"))?;
        } else {
            for t in self.place.to_drop(&list_tables(&mut c, db)?) {
                c.query_drop(&format!("DROP TABLE `{db}`.`{t}`"))?;
            }
        }
        Ok(())
    }
}
