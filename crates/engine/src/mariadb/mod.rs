//! MariaDB with InnoDB or MyRocks, a private server ampbench starts.
//!
//! The server gets a fresh data directory (`mariadb-install-db`), a
//! my.cnf in the engine's directory, a free port on 127.0.0.1 and a unix
//! socket, and runs as a managed child (see `engine::server`). MyRocks is
//! loaded at start-up (`plugin-load-add=ha_rocksdb.so`); loading it at run
//! time aborts this server build. Workers connect over TCP as `bench`.
//!
//! Defaults (fair across engines): the engine cache is `--cache`
//! (`innodb_buffer_pool_size`, or `rocksdb_block_cache_size` for MyRocks,
//! whose InnoDB pool then only holds system tables: 64MB); binary logging
//! off (`skip-log-bin`, as in the seeds' configs); MyRocks detects deadlocks
//! (`rocksdb_deadlock_detect=ON`, as InnoDB does by default); everything
//! else is the server's default. `--set mariadb-innodb.KEY=VALUE` adds `KEY=VALUE` to
//! my.cnf (a mistyped key stops the server at start-up, and the error
//! names it); `mariadb-myrocks.default_cf_options=…` is
//! `rocksdb_default_cf_options`, and RocksDB column-family options given
//! by their own name (`mariadb-myrocks.compaction_pri=…`, see
//! `rocks_family::myrocks_cf`) are added to it.
//!
//! Durability: MariaDB sets commit durability per server, not per session,
//! so a connection asking for sync (or not) sets
//! `innodb_flush_log_at_trx_commit` (or `rocksdb_flush_log_at_trx_commit`)
//! globally to 1 (sync at commit) or 2 (written at commit, synced once a
//! second). Every writer of a step asks for the same, so this is exact.

mod start;

pub(super) use start::Member;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use mysql::prelude::Queryable;

pub(super) use super::mariadb_options::is_myrocks;
use super::mariadb_options::validate;
use super::mysql_conn::MySqlConn;
use super::sql::{Dialect, SqlConn, SqlEngine};
use super::target::mysql::{Counters, global_status};
use super::{
    Conformance, Engine, EngineDef, EngineInfo, EngineKind, EngineRef, EngineStats, Structure,
};
use crate::server::Server;
use crate::structure::ModelKnobs;

/// The registry entries: one server, two storage engines.
pub const ENGINES: &[EngineDef] = &[
    EngineDef {
        name: "mariadb-innodb",
        about: "MariaDB with InnoDB (a server ampbench starts; an update-in-place B-Tree)",
        structure: Structure::UpdateInPlaceBTree,
        model: INNODB_MODEL,
        conformance: Conformance::NONE,
        server: Some(crate::address::Protocol::MySql),
        run_as: Some(SERVER_USER),
        library: || None,
        library_version,
        default_settings: |cache| default_settings(false, cache),
        io_bound: innodb_io_bound,
        direct_io: true,
        presets: &[(crate::presets::ERA_2015, |m| {
            vec![(
                "innodb_buffer_pool_size".into(),
                crate::presets::innodb_pool(m, 1),
            )]
        })],
        validate,
        guard: super::mariadb_options::guard,
        open,
    },
    EngineDef {
        name: "mariadb-myrocks",
        about: "MariaDB with MyRocks (a server ampbench starts; a leveled LSM)",
        structure: Structure::LeveledLsm,
        model: ModelKnobs {
            page_key: "rocksdb_block_size",
            ..ModelKnobs::PLAIN
        },
        conformance: Conformance::NONE,
        server: Some(crate::address::Protocol::MySql),
        run_as: Some(SERVER_USER),
        library: || None,
        library_version,
        default_settings: |cache| default_settings(true, cache),
        io_bound: |memory| {
            vec![
                ("rocksdb_use_direct_reads".into(), "ON".into()),
                ("rocksdb_use_direct_io_for_flush_and_compaction".into(), "ON".into()),
                // As for RocksDB: all memtables within an eighth of the limit.
                (
                    "rocksdb_db_write_buffer_size".into(),
                    super::options::memtables(memory).to_string(),
                ),
                // InnoDB holds only the system tables here: at its 64MB
                // default the server was killed at a 256MB limit.
                ("innodb_buffer_pool_size".into(), "16MB".into()),
                // Building a secondary index sorts in memory: 64MB buffers
                // combined up to 1GB by default, which killed the server
                // at 384MB during LinkBench's index step; at half and all
                // of the memtable budget two concurrent builds (the insert
                // benchmark's l.x, 2 clients) were still killed at 384MB
                // and 512MB, at an eighth each they passed at 512MB.
                (
                    "rocksdb_merge_buf_size".into(),
                    (super::options::memtables(memory) / 8).to_string(),
                ),
                (
                    "rocksdb_merge_combine_read_size".into(),
                    (super::options::memtables(memory) / 8).to_string(),
                ),
                // Partitioned index and filter blocks: with the block cache
                // at a quarter of the limit, each point read re-read its
                // file's whole filter and index block (about 200 KB by
                // direct IO); LinkBench at maxid1=200001 under 200MB read
                // 380 KB and spent 834 µs of server CPU per request, and
                // 4.0 KB and 245 µs with partitions (1,420 → 4,083
                // requests/s). Turning readahead off changed nothing.
                (
                    "rocksdb_default_cf_options".into(),
                    "block_based_table_factory={partition_filters=true;index_type=kTwoLevelIndexSearch;metadata_block_size=4096}".into(),
                ),
            ]
        },
        direct_io: true,
        // Read through the page cache (MyRocks' direct reads came later).
        presets: &[(crate::presets::ERA_2015, |_| {
            vec![("rocksdb_use_direct_reads".into(), "OFF".into())]
        })],
        validate,
        guard: super::mariadb_options::guard,
        open,
    },
];

/// InnoDB's model knobs: its page setting, and a row's transaction id,
/// roll pointer and record header (the seed's ~20 bytes).
pub(super) const INNODB_MODEL: ModelKnobs = ModelKnobs {
    page_key: "innodb_page_size",
    page_default: 16384.0,
    row_meta: 20.0,
    compresses_pages: false,
};

/// InnoDB's IO-bound settings: direct IO.
pub(super) fn innodb_io_bound(_memory: u64) -> Vec<(String, String)> {
    vec![("innodb_flush_method".into(), "O_DIRECT".into())]
}

/// Opens a server ampbench starts, or the `--target` given.
fn open(kind: EngineKind, spec: &super::OpenSpec) -> Result<Box<dyn Engine>> {
    match &spec.target {
        Some(t) => super::target::mysql::open(kind, spec, t),
        None => Ok(Box::new(MariaDb::open(kind, spec)?)),
    }
}

/// The system user the server runs as where it exists (Debian's
/// mariadb-server package makes it); root otherwise.
const SERVER_USER: &str = "mysql";

/// The default my.cnf settings of a profile.
pub fn default_settings(myrocks: bool, cache_bytes: u64) -> Vec<(String, String)> {
    let cache = crate::units::format_size(cache_bytes);
    let mut v: Vec<(String, String)> = vec![
        ("skip-log-bin".into(), String::new()),
        ("max_connections".into(), "500".into()),
    ];
    if myrocks {
        v.push(("plugin-load-add".into(), "ha_rocksdb.so".into()));
        v.push(("rocksdb_block_cache_size".into(), cache));
        v.push(("innodb_buffer_pool_size".into(), "64MB".into()));
        v.push(("default-storage-engine".into(), "rocksdb".into()));
        // Detect deadlocks as InnoDB does, instead of waiting out
        // rocksdb_lock_wait_timeout; the workload retries either way.
        v.push(("rocksdb_deadlock_detect".into(), "ON".into()));
        // Flushes and compactions logged with their column family and
        // bytes (the LOG's event lines): write-amp per column family.
        v.push(("rocksdb_info_log_level".into(), "info_level".into()));
    } else {
        v.push(("innodb_buffer_pool_size".into(), cache));
    }
    v
}

/// The server binary's version.
pub fn library_version() -> Result<String> {
    server_version().map(|v| format!("MariaDB {v}"))
}

fn server_version() -> Result<String> {
    let o = Command::new("mariadbd")
        .arg("--version")
        .output()
        .context("mariadbd not found (make deps installs mariadb-server)")?;
    let s = String::from_utf8_lossy(&o.stdout);
    Ok(s.split_whitespace()
        .skip_while(|w| *w != "Ver")
        .nth(1)
        .unwrap_or("unknown")
        .to_string())
}

/// A MariaDB server with the benchmark database `ampbench`.
pub struct MariaDb {
    pub(super) info: EngineInfo,
    myrocks: bool,
    pub(super) server: Server,
    root: PathBuf,
    pub(super) socket: PathBuf,
    port: u16,
    /// The benchmark user's password, made for this server.
    pub(super) password: String,
    table_options: String,
    transport: super::Transport,
    /// `--server-timeout`.
    pub(super) timeout: Option<Duration>,
    /// A Galera node's private network (its TCP port is there).
    net: Option<std::sync::Arc<crate::server::PrivateNet>>,
}

/// The admin connection: root over the socket, giving up on a read or
/// write after `timeout`.
pub(super) fn root_conn(socket: &Path, timeout: Option<Duration>) -> mysql::Result<mysql::Conn> {
    mysql::Conn::new(
        mysql::OptsBuilder::new()
            .socket(Some(socket.to_string_lossy()))
            .user(Some("root"))
            .read_timeout(timeout)
            .write_timeout(timeout),
    )
}

impl SqlEngine for MariaDb {
    fn dialect(&self) -> Dialect {
        Dialect::MySql
    }
    fn table_options(&self) -> &str {
        &self.table_options
    }
    fn server(&self) -> Option<&Server> {
        Some(&self.server)
    }
    fn connect(&self) -> Result<Box<dyn SqlConn>> {
        use super::mywire::{Addr, Conn};
        // TCP is TCP to 127.0.0.1, as the reference client's is (the
        // `mysql` crate, which served here before, moved such connections
        // onto the Unix socket unless told not to).
        let (addr, at) = match self.transport {
            super::Transport::Tcp => (
                Addr::Tcp(std::net::SocketAddr::from(([127, 0, 0, 1], self.port))),
                format!("127.0.0.1:{}", self.port),
            ),
            super::Transport::Socket => (
                Addr::Socket(&self.socket),
                self.socket.display().to_string(),
            ),
        };
        let connect = || {
            Conn::connect(
                addr,
                "bench",
                &self.password,
                "ampbench",
                self.timeout,
                None,
                false,
            )
        };
        let c = match (&self.net, self.transport) {
            // A Galera node listens in the cluster's private network.
            (Some(net), super::Transport::Tcp) => net.within(connect)?,
            _ => connect(),
        }
        .map_err(|e| anyhow!("{}: cannot connect to {at}: {e:#}", self.info.kind))?;
        Ok(Box::new(MySqlConn {
            c,
            durability_var: Some(if self.myrocks {
                "rocksdb_flush_log_at_trx_commit"
            } else {
                "innodb_flush_log_at_trx_commit"
            }),
            durability: None,
        }))
    }
}

impl Engine for MariaDb {
    fn info(&self) -> &EngineInfo {
        &self.info
    }
    fn face(&self) -> EngineRef<'_> {
        EngineRef::Sql(self)
    }
    fn data_paths(&self) -> Vec<PathBuf> {
        let names: &[&str] = if self.myrocks {
            &["#rocksdb", "ampbench"]
        } else {
            &[
                "ampbench",
                "ibdata1",
                "ib_logfile0",
                "undo001",
                "undo002",
                "undo003",
            ]
        };
        names
            .iter()
            .map(|n| self.info.dir.join(n))
            .filter(|p| p.exists())
            .collect()
    }
    fn pid(&self) -> Option<u32> {
        Some(self.server.pid())
    }
    fn counters(&self) -> Option<std::sync::Arc<dyn crate::probe::CounterSource>> {
        let (socket, timeout) = (self.socket.clone(), self.timeout);
        Some(std::sync::Arc::new(Counters::new(
            Box::new(move || Ok(root_conn(&socket, timeout)?)),
            "ampbench".into(),
            self.myrocks,
        )))
    }
    fn stats(&self) -> Result<EngineStats> {
        let mut c = self.admin()?;
        let mut st = EngineStats {
            values: global_status(&mut c)?,
            ..EngineStats::default()
        };
        if self.myrocks {
            let rows: Vec<(String, String, String)> = c.query("SHOW ENGINE ROCKSDB STATUS")?;
            for (typ, name, status) in rows {
                if typ == "CF_COMPACTION" {
                    for (level, col, v) in super::rocks_family::compaction_stats::parse(&status) {
                        st.values
                            .push((format!("compaction.{col}.{level}.{name}"), v));
                    }
                }
                st.texts.push((format!("rocksdb.{typ}.{name}"), status));
            }
            let mem: Vec<(String, u64)> = c.query(
                "SELECT CF_NAME, VALUE FROM information_schema.ROCKSDB_CFSTATS WHERE STAT_TYPE = 'CUR_SIZE_ALL_MEM_TABLES'",
            )?;
            for (cf, v) in mem {
                st.values.push((
                    format!("{}{cf}", super::rocks_family::log::MEMTABLE_STAT),
                    v as f64,
                ));
            }
            let log = super::rocks_family::log::read(&self.info.dir.join("#rocksdb"));
            st.values.extend(super::rocks_family::log::stats(&log));
        } else {
            let rows: Vec<(String, String, String)> = c.query("SHOW ENGINE INNODB STATUS")?;
            for (_, _, status) in rows {
                st.texts.push(("innodb.status".into(), status));
            }
        }
        Ok(st)
    }
    fn settle(&self) -> Result<String> {
        let mut c = self.admin()?;
        let t = Instant::now();
        if self.myrocks {
            c.query_drop("SET GLOBAL rocksdb_force_flush_memtable_now=1")?;
            return Ok(format!(
                "flushed MyRocks memtables: {:.1}s",
                t.elapsed().as_secs_f64()
            ));
        }
        let old: Option<String> = c.query_first("SELECT @@GLOBAL.innodb_max_dirty_pages_pct")?;
        c.query_drop("SET GLOBAL innodb_max_dirty_pages_pct=0")?;
        let mut dirty = self.status(&mut c, "Innodb_buffer_pool_pages_dirty")?;
        while dirty > 0.0
            && t.elapsed() < Duration::from_secs(600)
            && !crate::signals::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)
        {
            std::thread::sleep(Duration::from_millis(200));
            dirty = self.status(&mut c, "Innodb_buffer_pool_pages_dirty")?;
        }
        c.query_drop(format!(
            "SET GLOBAL innodb_max_dirty_pages_pct={}",
            old.unwrap_or_else(|| "90".into())
        ))?;
        Ok(format!(
            "flushed InnoDB dirty pages ({dirty} left): {:.1}s",
            t.elapsed().as_secs_f64()
        ))
    }
    fn close(self: Box<Self>) -> Result<()> {
        let _ = &self.root;
        self.server.stop()
    }
}
