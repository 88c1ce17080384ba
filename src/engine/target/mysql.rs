//! A MariaDB or MySQL server reached by `--target mysql://…`: the
//! `mariadb-innodb` and `mariadb-myrocks` engines on a server ampbench did
//! not start. Workers connect through ampbench's own client (`mywire`), as
//! to a local server; administration and counters go through the `mysql`
//! crate. The server's counters ([`Counters`], also read on a local
//! server beside /proc) give the efficiency figures.

use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use mysql::prelude::Queryable;

use super::{CONNECT_TIMEOUT, Endpoint, Endpoints, Place, TargetSpec};
use crate::engine::mariadb::MySqlConn;
use crate::engine::server::Server;
use crate::engine::sql::{Dialect, SqlConn, SqlEngine};
use crate::engine::{Engine, EngineInfo, EngineKind, EngineRef, EngineStats, OpenSpec};
use crate::probe::server::Reconnecting;
use crate::probe::{CounterSource, ServerCounters};

/// How a counters connection is made (again, after the server dropped it).
pub type Connector = Box<dyn Fn() -> mysql::Result<mysql::Conn> + Send + Sync>;

/// A MariaDB/MySQL server's counters, read over a connection of their own.
pub struct Counters {
    conn: Reconnecting<mysql::Conn>,
    db: String,
    myrocks: bool,
    /// The query that sizes the database on this server, found once.
    size_query: std::sync::OnceLock<String>,
}

impl Counters {
    /// Counters of database `db` (its size), read through `connect`.
    pub fn new(connect: Connector, db: String, myrocks: bool) -> Counters {
        Counters {
            conn: Reconnecting::new(Box::new(move || Ok(connect()?))),
            db,
            myrocks,
            size_query: std::sync::OnceLock::new(),
        }
    }

    fn read_with(&self, c: &mut mysql::Conn) -> Result<ServerCounters> {
        let names = if self.myrocks {
            "'rocksdb_block_cache_miss','rocksdb_flush_write_bytes','rocksdb_compact_write_bytes','rocksdb_wal_bytes'"
        } else {
            "'Innodb_data_reads','Innodb_data_read','Innodb_data_written','Innodb_os_log_written'"
        };
        let rows: Vec<(String, String)> = c.query(format!(
            "SHOW GLOBAL STATUS WHERE Variable_name IN ({names})"
        ))?;
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
    fn db_bytes(&self, c: &mut mysql::Conn) -> Result<Option<u64>> {
        let q = match self.size_query.get() {
            Some(q) => q,
            None => {
                let views = ["INNODB_SYS_TABLESPACES", "INNODB_TABLESPACES"];
                let q = views
                    .iter()
                    .filter(|_| !self.myrocks)
                    .map(|view| format!(
                        "SELECT CAST(SUM(ALLOCATED_SIZE) AS UNSIGNED) FROM information_schema.{view} WHERE LEFT(NAME, CHAR_LENGTH(?) + 1) = CONCAT(?, '/')"
                    ))
                    .find(|q| c.exec_first::<Option<u64>, _, _>(q, (&self.db, &self.db)).is_ok())
                    .unwrap_or_else(|| {
                        // Two parameters, as the queries above take.
                        "SELECT CAST(SUM(DATA_LENGTH + INDEX_LENGTH) AS UNSIGNED) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND ? IS NOT NULL".into()
                    });
                self.size_query.get_or_init(|| q)
            }
        };
        let v: Option<Option<u64>> = c.exec_first(q, (&self.db, &self.db))?;
        Ok(v.flatten())
    }
}

impl CounterSource for Counters {
    fn read(&self) -> Option<ServerCounters> {
        self.conn.with(|c| self.read_with(c))
    }
    fn source(&self) -> &'static str {
        "SHOW GLOBAL STATUS"
    }
}

/// The connection options to one endpoint as `user`, in `db` if given.
/// Under TLS the host is given by name (the name the certificate must
/// carry); otherwise by the address resolved at open.
fn opts(
    spec: &TargetSpec,
    (e, at): &(Endpoint, std::net::SocketAddr),
    db: Option<&str>,
    timeout: Option<Duration>,
) -> mysql::OptsBuilder {
    let ssl = super::tls::mysql_opts(&spec.target);
    let host = match ssl {
        Some(_) => e.host.clone(),
        None => at.ip().to_string(),
    };
    mysql::OptsBuilder::new()
        .ip_or_hostname(Some(host))
        .ssl_opts(ssl)
        .tcp_port(at.port())
        .prefer_socket(false)
        .user(Some(spec.target.user.clone()))
        .pass(spec.target.password.clone())
        .db_name(db.map(String::from))
        .tcp_connect_timeout(Some(CONNECT_TIMEOUT))
        .read_timeout(timeout)
        .write_timeout(timeout)
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
fn list_tables(c: &mut mysql::Conn, db: &str) -> Result<Vec<String>> {
    Ok(c.exec(
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?",
        (db,),
    )?)
}

/// True when the server behind `c` has database `db`.
fn has_db(c: &mut mysql::Conn, db: &str) -> Result<bool> {
    let seen: Option<String> = c.exec_first(
        "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?",
        (db,),
    )?;
    Ok(seen.is_some())
}

/// Opens the target: checks who it is, makes or checks the database.
pub fn open(kind: EngineKind, open: &OpenSpec, spec: &TargetSpec) -> Result<Box<dyn Engine>> {
    let tls = super::tls::client_config(&spec.target)?;
    let shown = spec.target.shown();
    let endpoints = Endpoints::resolve(&spec.target)?;
    let myrocks = crate::engine::mariadb::is_myrocks(kind);
    let mut conns = Vec::new();
    for ep @ (e, _) in endpoints.all() {
        let c = mysql::Conn::new(opts(spec, ep, None, open.timeout)).map_err(|err| {
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
    let version: String = c.query_first("SELECT version()")?.unwrap_or_default();
    let host: String = c.query_first("SELECT @@hostname")?.unwrap_or_default();
    if myrocks {
        let engines: Vec<String> = c.query(
            "SELECT engine FROM information_schema.engines WHERE support IN ('YES','DEFAULT')",
        )?;
        if !engines.iter().any(|e| e.eq_ignore_ascii_case("rocksdb")) {
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
    let mut settings: Vec<(String, String)> = c.query(format!(
        "SHOW GLOBAL VARIABLES WHERE Variable_name IN ({vars})"
    ))?;
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
            for t in place.judge(&list_tables(&mut c, db)?, spec.db_owned)? {
                // Names checked by judge: letters, digits and '_'.
                c.query_drop(format!("DROP TABLE `{db}`.`{t}`"))?;
            }
            place
        }
        None => {
            let db = super::fresh_db_name()?;
            c.query_drop(format!("CREATE DATABASE `{db}`")).map_err(|e| {
                anyhow!("{shown}: cannot create database {db}: {} (grant CREATE on `ampbench\\_%`.* or give --target-db)", one_line(&e))
            })?;
            Place::new(db, true, open.tables.clone())
        }
    };
    // Connections go to every endpoint in turn: each must serve the
    // database (one cluster, not independent servers).
    for (o, (e, _)) in others.iter_mut().zip(endpoints.all().iter().skip(1)) {
        if !has_db(o, &place.db).unwrap_or(false) {
            if place.created {
                let _ = c.query_drop(format!("DROP DATABASE `{}`", place.db));
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
            version: named_version(&version),
            settings,
            dir: open.dir.clone(),
        },
        spec: spec.clone(),
        endpoints,
        place,
        myrocks,
        table_options: if myrocks {
            "ENGINE=ROCKSDB".into()
        } else {
            "ENGINE=InnoDB".into()
        },
        timeout: open.timeout,
        tls,
    }))
}

/// A driver error on one line (the server's message, without the
/// driver's decoration).
fn one_line(e: &mysql::Error) -> String {
    let s = match e {
        mysql::Error::MySqlError(m) => format!("ERROR {} ({}): {}", m.code, m.state, m.message),
        mysql::Error::DriverError(mysql::DriverError::TlsNotSupported) => {
            "TLS was asked for (tls=…) but the server does not offer it".into()
        }
        mysql::Error::TlsError(e) => format!("TLS: {e}"),
        e => e.to_string(),
    };
    s.lines().next().unwrap_or_default().trim().to_string()
}

impl External {
    fn admin(&self) -> Result<mysql::Conn> {
        let ep @ (e, _) = self.endpoints.first();
        mysql::Conn::new(opts(&self.spec, ep, Some(&self.place.db), self.timeout)).map_err(|err| {
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
        Dialect::MySql
    }
    fn schema_made(&self) -> Result<()> {
        let found = list_tables(&mut self.admin()?, &self.place.db)?;
        self.place.schema_made(found);
        Ok(())
    }
    fn table_options(&self) -> &str {
        &self.table_options
    }
    fn server(&self) -> Option<&Server> {
        None
    }
    fn connect(&self) -> Result<Box<dyn SqlConn>> {
        use crate::engine::mywire::{Addr, Conn, TlsTo};
        let (e, at) = self.endpoints.next();
        let pw = self.spec.target.password.as_deref().unwrap_or_default();
        let tls = match &self.tls {
            Some(config) => Some(TlsTo {
                config: config.clone(),
                name: super::tls::server_name(&e.host)?,
            }),
            None => None,
        };
        let c = Conn::connect(
            Addr::Tcp(*at),
            &self.spec.target.user,
            pw,
            &self.place.db,
            self.timeout,
            tls.as_ref(),
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
        let (spec, ep, db, t) = (
            self.spec.clone(),
            self.endpoints.first().clone(),
            self.place.db.clone(),
            self.timeout,
        );
        Some(std::sync::Arc::new(Counters::new(
            Box::new(move || mysql::Conn::new(opts(&spec, &ep, Some(&db), t))),
            self.place.db.clone(),
            self.myrocks,
        )))
    }
    fn stats(&self) -> Result<EngineStats> {
        Ok(EngineStats {
            values: crate::engine::mariadb::global_status(&mut self.admin()?)?,
            ..EngineStats::default()
        })
    }
    fn settle(&self) -> Result<String> {
        Ok("not settled: an external target's background work is its own (ampbench changes nothing server-wide)".into())
    }
    fn close(self: Box<Self>) -> Result<()> {
        if self.spec.keep {
            return Ok(());
        }
        let mut c = self.admin()?;
        let db = &self.place.db;
        if self.place.created {
            c.query_drop(format!("DROP DATABASE `{db}`"))
                .with_context(|| format!("dropping database {db}"))?;
        } else {
            for t in self.place.to_drop(&list_tables(&mut c, db)?) {
                c.query_drop(format!("DROP TABLE `{db}`.`{t}`"))?;
            }
        }
        Ok(())
    }
}
