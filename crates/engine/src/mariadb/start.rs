//! Starting a MariaDB server: its data directory, my.cnf, the process
//! and the benchmark user, alone or as a member of a Galera cluster.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use mysql::prelude::Queryable;

use super::{MariaDb, SERVER_USER, is_myrocks, root_conn, validate};
use crate::server::{
    Server, ServerProcess, errors_or_tail, errors_or_tail_from, free_port, join_cgroup, managed,
    tail, user_ids,
};
use crate::{EngineInfo, EngineKind, OpenSpec};

/// What a Galera node adds to a MariaDB server (see `engine::galera`).
pub(crate) struct Member {
    /// The wsrep settings, after the user's.
    pub settings: Vec<(String, String)>,
    /// Arguments after the defaults file (`--wsrep-new-cluster`).
    pub args: Vec<String>,
    /// The cluster's private network, where the node listens.
    pub net: std::sync::Arc<crate::server::PrivateNet>,
    /// The node's client port in that network.
    pub port: u16,
    /// The first node's benchmark password; None on the first node,
    /// which makes the user and database (the others receive them with
    /// the state transfer).
    pub password: Option<String>,
}

/// True once the server is a synced member of its cluster (a joiner takes
/// connections before its state transfer has ended).
fn synced(c: &mut mysql::Conn) -> bool {
    c.query_first::<(String, String), _>("SHOW STATUS LIKE 'wsrep_local_state_comment'")
        .ok()
        .flatten()
        .is_some_and(|(_, v)| v == "Synced")
}
impl MariaDb {
    /// Creates a data directory, starts the server and creates the
    /// benchmark user and database.
    pub fn open(kind: EngineKind, spec: &OpenSpec) -> Result<MariaDb> {
        MariaDb::start(kind, spec, None)
    }

    /// [`MariaDb::open`], as a member of a Galera cluster when `member`
    /// says so.
    // Long: the server's start as root in the order its safety needs (install,
    // my.cnf, the directory handed to the server's user, the process, the
    // benchmark user); its parts are install, server_settings, write_cnf and
    // bench_user.
    pub(crate) fn start(
        kind: EngineKind,
        spec: &OpenSpec,
        member: Option<&Member>,
    ) -> Result<MariaDb> {
        validate(kind, &spec.options)?;
        let Installed {
            root,
            datadir,
            tmpdir,
            files,
            owner,
            user,
            base,
            mariadbd,
        } = install(spec)?;
        let settings = server_settings(kind, spec, member, &root);
        let port = match member {
            Some(m) => m.port,
            None => free_port()?,
        };
        let socket = root.join("mysqld.sock");
        let cnf_path = write_cnf(
            &Cnf {
                user,
                datadir: &datadir,
                tmpdir: &tmpdir,
                files: &files,
                root: &root,
                socket: &socket,
                port,
                base: base.as_deref(),
            },
            &settings,
        )?;
        // The directory and all below are the server's user's, and only
        // its (0700): socket, configuration and data. The server reads
        // my.cnf as its user, and writes its logs beside.
        crate::server::private_dir(&root)?;
        if let Some((uid, gid)) = owner {
            crate::server::chown_tree(&root, uid, gid)?;
            if let Some(procs) = &spec.cgroup {
                // It joins the memory group itself, as its user.
                std::os::unix::fs::chown(procs, Some(uid), Some(gid))
                    .with_context(|| format!("cannot give {} to {user}", procs.display()))?;
            }
        }
        let (sock, cgroup, at) = (socket.clone(), spec.cgroup.clone(), root.clone());
        let (args, net) = match member {
            Some(m) => (m.args.clone(), Some(m.net.clone())),
            None => (Vec::new(), None),
        };
        let in_cluster = net.clone();
        let server = Server::start(Box::new(move || {
            let mut cmd = Command::new(&mariadbd);
            cmd.arg(format!("--defaults-file={}", cnf_path.display()));
            cmd.args(&args);
            // Started as its user rather than switching to it itself: a
            // change of user would clear the parent-death signal.
            match &in_cluster {
                // Into the cluster's network first, as root.
                Some(n) => n.enter_on_exec(&mut cmd, owner)?,
                None => {
                    if let Some((uid, gid)) = owner {
                        cmd.uid(uid).gid(gid);
                    }
                }
            }
            let slog = at.join("mariadbd.out");
            let elog = at.join("error.log");
            let from = std::fs::symlink_metadata(&elog)
                .map(|m| m.len())
                .unwrap_or(0);
            managed(&mut cmd, &slog)?;
            join_cgroup(&mut cmd, cgroup.as_deref())?;
            ServerProcess::start(
                &format!("mariadbd ({kind})"),
                cmd,
                &slog,
                libc::SIGTERM,
                Duration::from_secs(60),
                || {
                    sock.exists()
                        && root_conn(&sock, Some(Duration::from_secs(10)))
                            .is_ok_and(|mut c| in_cluster.is_none() || synced(&mut c))
                },
            )
            .map_err(|e| anyhow!("{e:#} | error log: {}", errors_or_tail_from(&elog, from, 4)))
        }))?;
        // A server that stops answering is killed (the handshake is the
        // server's to send: nothing to say first).
        if let Some(t) = spec.timeout {
            let at = match member {
                Some(_) => crate::server::Knock::Unix(socket.clone()),
                None => crate::server::Knock::Tcp(port),
            };
            server.watch(&format!("mariadbd ({kind})"), at, b"", t);
        }
        let mut c =
            root_conn(&socket, spec.timeout).context("connecting as root over the socket")?;
        let password = bench_user(&mut c, member)?;
        let version: String = c.query_first("SELECT version()")?.unwrap_or_default();
        let myrocks = is_myrocks(kind);
        if myrocks {
            let engines: Vec<String> = c.query(
                "SELECT engine FROM information_schema.engines WHERE support IN ('YES','DEFAULT')",
            )?;
            if !engines.iter().any(|e| e.eq_ignore_ascii_case("rocksdb")) {
                bail!(
                    "MyRocks did not load (is mariadb-plugin-rocksdb installed?): {}",
                    tail(&root.join("error.log"), 4)
                );
            }
        }
        Ok(MariaDb {
            info: EngineInfo {
                kind,
                version: format!("MariaDB {version}"),
                settings,
                dir: datadir,
            },
            myrocks,
            server,
            root,
            socket,
            port,
            password,
            transport: spec.transport,
            timeout: spec.timeout,
            net,
            table_options: if myrocks {
                "ENGINE=ROCKSDB".into()
            } else {
                "ENGINE=InnoDB".into()
            },
        })
    }

    pub(crate) fn admin(&self) -> Result<mysql::Conn> {
        root_conn(&self.socket, self.timeout)
            .map_err(|e| anyhow!("{}: cannot connect as root: {e}", self.info.kind))
    }

    pub(super) fn status(&self, c: &mut mysql::Conn, name: &str) -> Result<f64> {
        // SHOW cannot be prepared; `name` is one of our constants.
        let v: Option<(String, String)> =
            c.query_first(format!("SHOW GLOBAL STATUS LIKE '{name}'"))?;
        v.and_then(|(_, v)| v.parse().ok())
            .ok_or_else(|| anyhow!("no status variable {name}"))
    }
}

/// A data directory install-db made, and what the server starts with.
struct Installed {
    /// The engine's directory: socket, my.cnf, logs, and the data below.
    root: PathBuf,
    datadir: PathBuf,
    tmpdir: PathBuf,
    /// The only directory the server may read or write files in
    /// (secure_file_priv).
    files: PathBuf,
    /// The server's system user's ids, where that user exists.
    owner: Option<(u32, u32)>,
    /// That user's name, or root.
    user: &'static str,
    /// Another build's tree (`--server-bin`), or None for Debian's.
    base: Option<PathBuf>,
    /// The server binary.
    mariadbd: PathBuf,
}

/// Makes the data, temporary and file directories in `spec.dir` and runs
/// install-db in them as the server's user.
// Long: the directories made by root with their modes and given to the
// server's user, then install-db run as that user: the order their safety
// needs.
fn install(spec: &OpenSpec) -> Result<Installed> {
    let root = spec.dir.clone();
    let datadir = root.join("data");
    let log = root.join("install.log");
    // The server runs as `mysql` where that user exists, never as
    // root: what a client could make it read or write (LOAD_FILE,
    // INTO OUTFILE, a plugin) is then the mysql user's, and within
    // `files` (secure_file_priv) besides.
    let owner = user_ids(SERVER_USER).ok();
    let user = if owner.is_some() { SERVER_USER } else { "root" };
    // A temporary directory of its own: bootstraps run side by side
    // in the shared /tmp remove each other's temporary tables
    // ("Unknown table 'mysql.tmp_user_sys'"; 3 of 12 concurrent
    // installs failed here, none with their own directory).
    let tmpdir = root.join("tmp");
    let files = root.join("files");
    // The directory stays root's, and others may only pass through
    // it (0711), until install-db has run; the data, temporary and
    // file directories are made new and given to the server's user.
    // install-db runs as that user, never as root: run as root it
    // changes the owner of files in directories that user owns
    // (`chown 0 …/auth_pam_tool`, then setuid) and writes into its
    // data directory, each a way for that user to become root.
    std::fs::set_permissions(&root, std::os::unix::fs::PermissionsExt::from_mode(0o711))
        .with_context(|| format!("cannot set the mode of {}", root.display()))?;
    for d in [&datadir, &tmpdir, &files] {
        crate::server::create_dir_new(d, 0o700, owner)?;
    }
    // Debian's binaries, or another build's (`--server-bin`).
    let tree = match &spec.server_bin {
        Some(crate::server::ServerBin::MariaDb {
            base,
            mariadbd,
            install_db,
            ..
        }) => Some((base.clone(), mariadbd.clone(), install_db.clone())),
        _ => None,
    };
    let mariadbd = tree
        .as_ref()
        .map_or_else(|| PathBuf::from("mariadbd"), |t| t.1.clone());
    let mut install = Command::new(
        tree.as_ref()
            .map_or_else(|| PathBuf::from("mariadb-install-db"), |t| t.2.clone()),
    );
    if let Some((base, _, _)) = &tree {
        install.arg(format!("--basedir={}", base.display()));
    }
    install
        .args([
            "--no-defaults",
            // root@localhost is authenticated by the socket's peer
            // (unix_socket): only the system's root gets in, and only
            // through the socket in a directory no one else enters.
            // No account takes a password over TCP but `bench`'s.
            "--auth-root-authentication-method=socket",
            "--skip-test-db",
        ])
        // The root socket account's system user, which the script
        // would take from $USER (dropped below).
        .arg(format!("--auth-root-socket-user={user}"))
        .arg(format!("--datadir={}", datadir.display()))
        .arg(format!("--tmpdir={}", tmpdir.display()));
    if let Some((uid, gid)) = owner {
        install
            .uid(uid)
            .gid(gid)
            .env("USER", user)
            .env("HOME", &tmpdir);
    }
    managed(&mut install, &log)?;
    let st = install
        .status()
        .context("cannot run mariadb-install-db (make deps installs mariadb-server)")?;
    if !st.success() {
        bail!(
            "mariadb-install-db failed ({st}): {}",
            errors_or_tail(&log, 5)
        );
    }
    Ok(Installed {
        root,
        datadir,
        tmpdir,
        files,
        owner,
        user,
        base: tree.map(|t| t.0),
        mariadbd,
    })
}

/// The server's settings: the engine's defaults for the cache under the
/// user's, MyRocks' column-family options routed, the binlog a replica
/// would need (`--replication-log`), a cluster member's wsrep settings.
fn server_settings(
    kind: EngineKind,
    spec: &OpenSpec,
    member: Option<&Member>,
    root: &std::path::Path,
) -> Vec<(String, String)> {
    let mut settings = spec
        .options
        .merged_over(&(kind.def().default_settings)(spec.cache_bytes));
    for (k, _) in settings.iter_mut() {
        if k == "default_cf_options" {
            *k = "rocksdb_default_cf_options".into();
        }
    }
    if is_myrocks(kind) {
        crate::rocks_family::myrocks_cf::route(&mut settings);
    }
    if spec.replication_log {
        // The binlog, synced at every commit, in row format: what a
        // primary with replicas writes (the seed's oplog analogue).
        settings.retain(|(k, _)| k != "skip-log-bin");
        for (k, v) in [
            ("log-bin", root.join("binlog").display().to_string()),
            ("server_id", "1".into()),
            ("binlog_format", "ROW".into()),
            ("sync_binlog", "1".into()),
        ] {
            if !settings.iter().any(|(s, _)| s == k) {
                settings.push((k.into(), v));
            }
        }
    }
    if let Some(m) = member {
        settings.extend(m.settings.iter().cloned());
    }
    settings
}

/// What my.cnf names besides the settings.
struct Cnf<'a> {
    user: &'a str,
    datadir: &'a std::path::Path,
    tmpdir: &'a std::path::Path,
    files: &'a std::path::Path,
    root: &'a std::path::Path,
    socket: &'a std::path::Path,
    port: u16,
    base: Option<&'a std::path::Path>,
}

/// Writes `root/my.cnf`, new and never through a link; its path.
fn write_cnf(c: &Cnf, settings: &[(String, String)]) -> Result<PathBuf> {
    let mut cnf = format!(
        "[mysqld]\nuser={}\ndatadir={}\ntmpdir={}\nsocket={}\npid-file={}\nport={}\nbind-address=127.0.0.1\nskip-name-resolve\nsecure_file_priv={}\nlog-error={}\n",
        c.user,
        c.datadir.display(),
        c.tmpdir.display(),
        c.socket.display(),
        c.root.join("mysqld.pid").display(),
        c.port,
        c.files.display(),
        c.root.join("error.log").display()
    );
    if let Some(base) = c.base {
        // The tree's own messages and plugins, not Debian's.
        cnf.push_str(&format!("basedir={}\n", base.display()));
        for (key, sub) in [
            ("lc-messages-dir", "share/mysql"),
            ("plugin-dir", "lib/mysql/plugin"),
        ] {
            if base.join(sub).is_dir() {
                cnf.push_str(&format!("{key}={}\n", base.join(sub).display()));
            }
        }
    }
    for (k, v) in settings {
        if v.is_empty() {
            cnf.push_str(&format!("{k}\n"));
        } else {
            cnf.push_str(&format!("{k}={v}\n"));
        }
    }
    let cnf_path = c.root.join("my.cnf");
    // Made new and never through a link: the directory is the server
    // user's by now, and root writes it.
    {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&cnf_path)
            .and_then(|mut f| f.write_all(cnf.as_bytes()))
            .with_context(|| format!("cannot write {}", cnf_path.display()))?;
    }
    Ok(cnf_path)
}

/// The benchmark user and database, made on the first node (a joining
/// one received them with its state); returns the user's password, new
/// for this run (hex: nothing to quote). root@localhost reaches only the
/// socket, as the system's root. `bench` has all of its own database
/// and, server-wide, only SUPER (workers set global durability) and
/// PROCESS (the insert benchmark reads InnoDB's metrics): no FILE, and
/// no write to the `mysql` schema through which it could grant itself
/// more. The socket account install-db makes for the server's system
/// user goes.
fn bench_user(c: &mut mysql::Conn, member: Option<&Member>) -> Result<String> {
    Ok(match member.and_then(|m| m.password.clone()) {
        // A joining node received the user and database from the
        // first with its state.
        Some(p) => p,
        None => {
            let password = crate::server::random_password()?;
            let mut sql =
                String::from("CREATE DATABASE ampbench; DROP USER IF EXISTS 'mysql'@'localhost'");
            for host in ["127.0.0.1", "localhost"] {
                sql.push_str(&format!(
                    "; CREATE USER 'bench'@'{host}' IDENTIFIED BY '{password}'; \
                     GRANT ALL ON ampbench.* TO 'bench'@'{host}'; \
                     GRANT SUPER, PROCESS ON *.* TO 'bench'@'{host}'"
                ));
            }
            c.query_drop(sql)
                .context("creating the benchmark user and database")?;
            password
        }
    })
}
