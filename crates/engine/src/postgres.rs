//! PostgreSQL, a private server ampbench starts.
//!
//! `initdb` refuses root, so the data directory belongs to the `postgres`
//! user (from Debian's package), and initdb and the server run as that user
//! (set on the child, no `runuser`). The server listens on a free port on
//! 127.0.0.1 and a unix socket in the engine's directory. Work is done by
//! one backend process per connection: CPU, IO and RSS are charged to the
//! whole process tree of the postmaster.
//!
//! Defaults: `shared_buffers` = `--cache`, `max_connections=200`; the rest
//! is the server's default. `--set postgres.KEY=VALUE` passes `-c KEY=VALUE`
//! (a mistyped key stops the server at start-up, and the error names it).
//! Durability is per session: `synchronous_commit` on or off.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use postgres::Client;

use super::pg_conn::{PgConn, pg_stats};
use super::sql::{Dialect, SqlConn, SqlEngine};
use super::{
    Conformance, Engine, EngineDef, EngineInfo, EngineKind, EngineOptions, EngineRef, EngineStats,
    OpenSpec, Structure,
};
use crate::server::{Server, ServerProcess, free_port, join_cgroup, managed, tail, user_ids};
use crate::structure::ModelKnobs;

/// The newest installed PostgreSQL's bin directory.
pub fn bin_dir() -> Result<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path().join("bin"))
                .filter(|p| p.join("postgres").exists())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v.pop()
        .ok_or_else(|| anyhow!("PostgreSQL is not installed (make deps installs postgresql)"))
}

/// The server binary's version.
pub fn library_version() -> Result<String> {
    let o = Command::new(bin_dir()?.join("postgres"))
        .arg("--version")
        .output()?;
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// The default server settings for a cache size.
pub fn default_settings(cache_bytes: u64) -> Vec<(String, String)> {
    vec![
        (
            "shared_buffers".into(),
            crate::units::format_size(cache_bytes),
        ),
        ("max_connections".into(), "200".into()),
    ]
}

/// Checks option keys are configuration words (the server checks the rest).
pub fn validate(_kind: EngineKind, options: &EngineOptions) -> Result<()> {
    for (k, v) in &options.pairs {
        crate::server::check_setting("postgres", k, v, &SETTINGS)?;
    }
    Ok(())
}

/// The registry entry.
pub const ENGINES: &[EngineDef] = &[EngineDef {
    name: "postgres",
    about: "PostgreSQL (a server ampbench starts; an update-in-place B-Tree heap)",
    structure: Structure::UpdateInPlaceBTree,
    // PostgreSQL: a 23-byte tuple header and a 4-byte line pointer.
    model: ModelKnobs {
        page_key: "block_size",
        page_default: 8192.0,
        row_meta: 27.0,
        compresses_pages: false,
    },
    conformance: Conformance::NONE,
    server: Some(crate::address::Protocol::Postgres),
    run_as: Some("postgres"),
    library: || None,
    library_version,
    default_settings,
    io_bound: |_| Vec::new(),
    direct_io: false,
    presets: &[],
    validate,
    guard,
    open: |kind, spec| match &spec.target {
        Some(t) => super::target::postgres::open(kind, spec, t),
        None => Ok(Box::new(Postgres::open(kind, spec)?)),
    },
}];

/// A PostgreSQL server with the benchmark database `ampbench`.
pub struct Postgres {
    info: EngineInfo,
    server: Server,
    port: u16,
    db_oid: u32,
    /// The password of `postgres` and `bench`, made for this server.
    password: String,
    /// The unix socket's directory, for `--transport socket`.
    socket_dir: std::path::PathBuf,
    transport: super::Transport,
    /// How long a reply may be owed (`--server-timeout`).
    timeout: Duration,
}

impl Postgres {
    /// Where connections go: the port, and `--server-timeout`.
    fn at(&self) -> (u16, Duration) {
        (self.port, self.timeout)
    }
}

/// A connection to the server over TCP, watched (never the password in
/// clear text; a reply due for the server's timeout with nothing moving
/// ends it: `crate::address::pg::connect_local`). `timeout` is
/// `--server-timeout`.
fn connect(
    (port, timeout): (u16, Duration),
    user: &str,
    db: &str,
    password: &str,
) -> Result<Client, postgres::Error> {
    crate::address::pg::connect_local(port, user, db, password, timeout)
}

impl Postgres {
    /// Creates a cluster, starts the server and creates the benchmark role
    /// and database.
    // Long: the start of a server as root, in the order its safety needs
    // (files written before the directory is handed to postgres, initdb as
    // postgres, the server in its group, the role and database).
    pub fn open(kind: EngineKind, spec: &OpenSpec) -> Result<Postgres> {
        validate(kind, &spec.options)?;
        let (uid, gid) = user_ids("postgres")
            .context("make deps installs postgresql, which creates the 'postgres' user")?;
        let bin = match &spec.server_bin {
            Some(crate::server::ServerBin::Postgres { bin, .. }) => bin.clone(),
            _ => bin_dir()?,
        };
        let root = spec.dir.clone();
        let datadir = root.join("data");
        let log = root.join("initdb.log");
        // Passwords made for this server, SCRAM on TCP and on the socket:
        // no local user gets in without one (`--auth=trust` would admit
        // every user of the machine over 127.0.0.1).
        let password = crate::server::random_password()?;
        let pwfile = root.join("pwfile");
        // Everything root writes here is written before the directory is
        // handed to postgres: afterwards a file of that user's could be a
        // link to anywhere (`pwfile -> /etc/ld.so.preload`). Still, each
        // is made new and never through a link.
        crate::server::private_dir(&root)?;
        crate::server::create_new(
            &pwfile,
            format!("{password}\n").as_bytes(),
            0o600,
            Some((uid, gid)),
        )?;
        if spec.replication_log {
            crate::server::create_dir_new(&root.join("archive"), 0o700, Some((uid, gid)))?;
        }
        let mut init = Command::new(bin.join("initdb"));
        init.arg("-D")
            .arg(&datadir)
            .args([
                "-U",
                "postgres",
                "--auth=scram-sha-256",
                "-E",
                "UTF8",
                "--no-sync",
            ])
            .arg(format!("--pwfile={}", pwfile.display()))
            .uid(uid)
            .gid(gid);
        managed(&mut init, &log)?;
        crate::server::chown_tree(&root, uid, gid)?;
        let st = init.status().context("cannot run initdb");
        let _ = std::fs::remove_file(&pwfile);
        let st = st?;
        if !st.success() {
            bail!("initdb failed ({st}): {}", tail(&log, 5));
        }
        let mut settings = spec.settings(default_settings);
        if spec.replication_log {
            // WAL for replicas (PostgreSQL's default level) and every
            // segment copied out as it fills, as an archiving primary does.
            let archive = root.join("archive");
            for (k, v) in [
                ("wal_level", "replica".to_string()),
                ("archive_mode", "on".into()),
                (
                    "archive_command",
                    format!(
                        "cp %p {}/%f",
                        crate::server::shell_quote(&archive.display().to_string())
                    ),
                ),
            ] {
                if !settings.iter().any(|(s, _)| s == k) {
                    settings.push((k.into(), v));
                }
            }
        }
        let port = free_port()?;
        let wait = spec.timeout.unwrap_or(super::SERVER_TIMEOUT);
        if let Some(procs) = &spec.cgroup {
            // The server runs as postgres and joins the group itself.
            std::os::unix::fs::chown(procs, Some(uid), Some(gid))
                .with_context(|| format!("cannot give {} to postgres", procs.display()))?;
        }
        let (data, cgroup, at, pw, args) = (
            datadir.clone(),
            spec.cgroup.clone(),
            root.clone(),
            password.clone(),
            settings.clone(),
        );
        let server = Server::start(Box::new(move || {
            let mut cmd = Command::new(bin.join("postgres"));
            cmd.arg("-D")
                .arg(&data)
                .arg("-p")
                .arg(port.to_string())
                .arg("-k")
                .arg(&at);
            cmd.args(["-c", "listen_addresses=127.0.0.1"]);
            for (k, v) in &args {
                cmd.arg("-c").arg(format!("{k}={v}"));
            }
            cmd.uid(uid).gid(gid);
            let slog = at.join("postgres.log");
            managed(&mut cmd, &slog)?;
            join_cgroup(&mut cmd, cgroup.as_deref())?;
            ServerProcess::start(
                "postgres",
                cmd,
                &slog,
                libc::SIGINT,
                Duration::from_secs(60),
                || connect((port, wait), "postgres", "postgres", &pw).is_ok(),
            )
        }))?;
        // A server that stops answering is killed: an SSLRequest makes it
        // answer at once ('N'), with nothing logged.
        if let Some(t) = spec.timeout {
            server.watch("postgres", crate::server::Knock::Tcp(port), &SSL_REQUEST, t);
        }
        let mut c = connect((port, wait), "postgres", "postgres", &password)?;
        // The password is hex: nothing to quote.
        c.batch_execute(&format!(
            "CREATE ROLE bench LOGIN SUPERUSER PASSWORD '{password}'"
        ))
        .and_then(|_| c.batch_execute("CREATE DATABASE ampbench OWNER bench"))
        .context("creating the benchmark role and database")?;
        let version: String = c.query_one("SHOW server_version", &[])?.get(0);
        let oid: u32 = c
            .query_one(
                "SELECT oid FROM pg_database WHERE datname = 'ampbench'",
                &[],
            )?
            .get(0);
        Ok(Postgres {
            info: EngineInfo {
                kind,
                version: format!("PostgreSQL {version}"),
                settings,
                dir: datadir,
            },
            server,
            port,
            db_oid: oid,
            password,
            socket_dir: root,
            transport: spec.transport,
            timeout: wait,
        })
    }
}

impl SqlEngine for Postgres {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }
    fn table_options(&self) -> &str {
        ""
    }
    fn server(&self) -> Option<&Server> {
        Some(&self.server)
    }
    fn connect(&self) -> Result<Box<dyn SqlConn>> {
        // The socket is in a directory only the server's user and root
        // enter: no other server can answer there.
        let socket = match self.transport {
            super::Transport::Tcp => None,
            super::Transport::Socket => Some(self.socket_dir.as_path()),
        };
        let c = crate::address::pg::connect_local_wire(
            (self.port, socket),
            "bench",
            "ampbench",
            &self.password,
            self.timeout,
        )
        .map_err(|e| {
            anyhow!(
                "postgres: cannot connect to {} port {}: {}",
                match socket {
                    None => "127.0.0.1".to_string(),
                    Some(d) => d.display().to_string(),
                },
                self.port,
                ampbench_pgwire::one_line(&e)
            )
        })?;
        Ok(Box::new(PgConn::new(c)))
    }
}

impl Engine for Postgres {
    fn info(&self) -> &EngineInfo {
        &self.info
    }
    fn face(&self) -> EngineRef<'_> {
        EngineRef::Sql(self)
    }
    fn data_paths(&self) -> Vec<PathBuf> {
        vec![
            self.info.dir.join("base").join(self.db_oid.to_string()),
            self.info.dir.join("pg_wal"),
        ]
    }
    fn pid(&self) -> Option<u32> {
        Some(self.server.pid())
    }
    fn counters(&self) -> Option<std::sync::Arc<dyn crate::probe::CounterSource>> {
        let (at, pw) = (self.at(), self.password.clone());
        Some(std::sync::Arc::new(super::target::postgres::Counters::new(
            Box::new(move || connect(at, "postgres", "ampbench", &pw)),
        )))
    }
    fn stats(&self) -> Result<EngineStats> {
        pg_stats(&mut connect(
            self.at(),
            "postgres",
            "ampbench",
            &self.password,
        )?)
    }
    fn settle(&self) -> Result<String> {
        let t = Instant::now();
        let mut c = connect(self.at(), "postgres", "ampbench", &self.password)?;
        c.batch_execute("CHECKPOINT")?;
        Ok(format!("CHECKPOINT: {:.1}s", t.elapsed().as_secs_f64()))
    }
    fn close(self: Box<Self>) -> Result<()> {
        self.server.stop()
    }
}

/// A startup packet asking for TLS: length 8, code 80877103.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];

/// Server setting keys (`auto_explain.log_min_duration` has a dot).
const SETTINGS: crate::server::Settings = crate::server::Settings {
    extra: '.',
    noun: "a server setting",
};

/// Where and to whom the server listens and how clients authenticate:
/// ampbench's.
const RESERVED: &[&str] = &[
    "listen_addresses",
    "port",
    "unix_socket_directories",
    "unix_socket_permissions",
    "unix_socket_group",
    "hba_file",
    "ident_file",
    "data_directory",
    "config_file",
];

/// Settings that run commands, load libraries or name files.
const UNSAFE: &[&str] = &[
    "archive_command",
    "archive_library",
    "restore_command",
    "archive_cleanup_command",
    "recovery_end_command",
    "ssl_passphrase_command",
    "shared_preload_libraries",
    "local_preload_libraries",
    "session_preload_libraries",
    "dynamic_library_path",
    "jit_provider",
    "log_directory",
    "log_filename",
    "external_pid_file",
    "stats_temp_directory",
    "krb_server_keyfile",
];

/// Name endings of settings that run a command, load code or name a file.
const UNSAFE_ENDINGS: &[&str] = &[
    "_command",
    "_library",
    "_libraries",
    "_file",
    "_dir",
    "_directory",
    "_path",
];

/// Judges one server setting as PostgreSQL reads it (any case; `-` is
/// `_` in a `-c` name).
pub fn guard(key: &str, _value: &str) -> Option<super::guard::Refusal> {
    use super::guard::{Refusal, matches, norm};
    let k = norm(key, '_');
    if RESERVED.contains(&k.as_str()) {
        return Some(Refusal::Reserved(k));
    }
    matches(&k, UNSAFE, UNSAFE_ENDINGS).then_some(Refusal::Unsafe(k))
}
