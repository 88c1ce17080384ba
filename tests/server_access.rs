//! Nobody else gets into a server ampbench starts: every listening socket
//! of the server is bound to 127.0.0.1 (or is a unix socket in a directory
//! only the server's user can enter), and the benchmark user needs this
//! run's password: a connection without it is refused.

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use ampbench::engine::{self, EngineKind, OpenSpec};

/// Socket inodes of a process's open files (none once it has exited: a
/// PostgreSQL backend listed among the server's children may end before
/// its files are read).
fn socket_inodes(pid: u32) -> Vec<u64> {
    let mut v = Vec::new();
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return v;
    };
    for e in fds.flatten() {
        if let Ok(t) = std::fs::read_link(e.path()) {
            let t = t.to_string_lossy().to_string();
            if let Some(n) = t.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')) {
                v.push(n.parse().unwrap());
            }
        }
    }
    v
}

/// Listening TCP sockets (IPv4 and IPv6) owned by `pid` and its children:
/// (local address as in /proc/net, port).
fn listening(pids: &[u32]) -> Vec<(String, u16)> {
    let inodes: Vec<u64> = pids.iter().flat_map(|p| socket_inodes(*p)).collect();
    let mut out = Vec::new();
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(f).unwrap();
        for l in text.lines().skip(1) {
            let c: Vec<&str> = l.split_whitespace().collect();
            // st 0A = LISTEN; c[9] = inode.
            if c[3] != "0A" || !inodes.contains(&c[9].parse().unwrap()) {
                continue;
            }
            let (addr, port) = c[1].split_once(':').unwrap();
            out.push((addr.to_string(), u16::from_str_radix(port, 16).unwrap()));
        }
    }
    out
}

/// The process and its children (PostgreSQL's postmaster forks its own).
fn family(pid: u32) -> Vec<u32> {
    let mut v = vec![pid];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(s) = std::fs::read_to_string(format!("/proc/{p}/stat")) {
            let ppid = s
                .rsplit_once(')')
                .and_then(|x| x.1.split_whitespace().nth(1));
            if ppid == Some(&pid.to_string()) {
                v.push(p);
            }
        }
    }
    v
}

#[test]
fn servers_listen_on_loopback_and_need_the_runs_password() {
    for name in ["mariadb-innodb", "postgres"] {
        let kind = EngineKind::parse(name).unwrap();
        let d = tempfile::tempdir().unwrap();
        let e = engine::open(kind, &OpenSpec::new(d.path(), vec![], 64 << 20)).unwrap();
        // The engine's directory (socket, config, data) is its user's only.
        let mode = std::fs::metadata(d.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            mode & 0o077,
            0,
            "{name}: {} is {mode:o}",
            d.path().display()
        );
        let ls = listening(&family(e.pid().expect("a local server")));
        assert!(!ls.is_empty(), "{name}: no listening socket found");
        // 0100007F is 127.0.0.1 in /proc/net/tcp's byte order.
        for (addr, port) in &ls {
            assert_eq!(addr, "0100007F", "{name} listens on {addr}:{port}");
        }
        let port = ls[0].1;
        // The engine itself connects (with the password) …
        let mut c = e.face().sql().unwrap().connect().unwrap();
        c.batch("SELECT 1").unwrap();
        // … and one without it, or with another, is refused by the server
        // (PostgreSQL's client refuses at once when the server asks for a
        // password it was not given: that also says one is required).
        for pw in [None, Some("not-the-password")] {
            let refused = match name {
                "postgres" => {
                    let mut cfg = postgres::Config::new();
                    cfg.host("127.0.0.1")
                        .port(port)
                        .user("bench")
                        .dbname("ampbench");
                    if let Some(p) = pw {
                        cfg.password(p);
                    }
                    cfg.connect(postgres::NoTls).err().map(|e| format!("{e:?}"))
                }
                _ => mysql::Conn::new(
                    mysql::OptsBuilder::new()
                        .ip_or_hostname(Some("127.0.0.1"))
                        .tcp_port(port)
                        .user(Some("bench"))
                        .pass(pw)
                        .db_name(Some("ampbench")),
                )
                .err()
                .map(|e| e.to_string()),
            };
            let why =
                refused.unwrap_or_else(|| panic!("{name}: bench got in with password {pw:?}"));
            let expected = match (name, pw) {
                ("postgres", None) => "password missing",
                ("postgres", Some(_)) => "password authentication failed",
                _ => "Access denied",
            };
            assert!(why.contains(expected), "{name} {pw:?}: {why}");
        }
        // Nor does another user name get in (PostgreSQL's superuser).
        if name == "postgres" {
            assert!(
                postgres::Client::connect(
                    &format!(
                        "host=127.0.0.1 port={port} user=postgres dbname=postgres connect_timeout=5"
                    ),
                    postgres::NoTls,
                )
                .is_err()
            );
        }
        // The owner of the data is the server's user, and the server does
        // not run as root (both have a system user of their own here).
        let owner = std::fs::metadata(d.path()).unwrap().uid();
        assert_ne!(owner, 0, "{name}'s directory belongs to its user");
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", e.pid().expect("a local server")))
                .unwrap();
        let uid = status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().next())
            .unwrap();
        assert_ne!(uid, "0", "{name} runs as root");
        if name != "postgres" {
            mariadb_keeps_root_and_files_to_itself(port, &mut *c);
        }
        drop(c);
        e.close().unwrap();
    }
}

/// Issue 31: MariaDB's root takes no password over TCP (not with an
/// empty one, not at all), and the benchmark user cannot read or write
/// the machine's files through the server (`LOAD_FILE`, `INTO OUTFILE`).
fn mariadb_keeps_root_and_files_to_itself(port: u16, c: &mut dyn ampbench::engine::sql::SqlConn) {
    for pw in [None, Some("")] {
        let e = mysql::Conn::new(
            mysql::OptsBuilder::new()
                .ip_or_hostname(Some("127.0.0.1"))
                .tcp_port(port)
                .user(Some("root"))
                .pass(pw),
        )
        .err()
        .unwrap_or_else(|| panic!("root got in over TCP with password {pw:?}"));
        let e = e.to_string();
        assert!(
            e.contains("Access denied") || e.contains("not allowed to connect"),
            "{e}"
        );
    }
    let rows = c
        .query("SELECT LOAD_FILE('/etc/shadow') IS NULL", &[])
        .unwrap();
    assert_eq!(rows[0][0].int(), Some(1), "bench read /etc/shadow");
    let out = format!("/tmp/ampbench-outfile-{}", std::process::id());
    assert!(
        c.batch(&format!("SELECT 1 INTO OUTFILE '{out}'")).is_err(),
        "bench wrote {out}"
    );
    assert!(!std::path::Path::new(&out).exists());
    // Nor can it grant itself what it lacks.
    assert!(
        c.batch("UPDATE mysql.global_priv SET priv = priv").is_err(),
        "bench wrote the mysql schema"
    );
}

/// `--set` cannot reopen a server to others or inject configuration: each
/// attempt is a one-line error naming the key, before anything starts.
#[test]
fn set_cannot_open_or_inject() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("r.db");
    for (engine, set, says) in [
        (
            "mariadb-innodb",
            "mariadb-innodb.bind-address=0.0.0.0",
            "set by ampbench",
        ),
        (
            "mariadb-myrocks",
            "mariadb-myrocks.skip_grant_tables=1",
            "set by ampbench",
        ),
        (
            "mariadb-innodb",
            "mariadb-innodb.innodb_buffer_pool_size=1G\n[client]\nuser=root",
            "newline",
        ),
        (
            "mariadb-innodb",
            "mariadb-innodb.max_connections=[mysqld]",
            "section header",
        ),
        ("postgres", "postgres.listen_addresses=*", "set by ampbench"),
        ("postgres", "postgres.hba_file=/tmp/x", "set by ampbench"),
        ("postgres", "postgres.work_mem=4MB\r", "newline"),
        // Issue 31: MariaDB's option prefixes and abbreviations.
        (
            "mariadb-innodb",
            "mariadb-innodb.enable-skip-grant-tables=1",
            "reads as 'skip-grant-tables'",
        ),
        (
            "mariadb-innodb",
            "mariadb-innodb.loose-bind-addr=1.2.3.4",
            "reads as 'bind-address'",
        ),
        (
            "mariadb-innodb",
            "mariadb-innodb.Loose_Skip_Grant_Tables=1",
            "set by ampbench",
        ),
        // Paths and code loading, without --allow-unsafe-settings.
        (
            "mariadb-innodb",
            "mariadb-innodb.init_file=/tmp/x.sql",
            "--allow-unsafe-settings",
        ),
        (
            "mariadb-innodb",
            "mariadb-innodb.loose-init-f=/tmp/x.sql",
            "--allow-unsafe-settings",
        ),
        (
            "mariadb-innodb",
            "mariadb-innodb.general_log_file=/etc/x",
            "--allow-unsafe-settings",
        ),
        (
            "mariadb-innodb",
            "mariadb-innodb.log_error=/etc/x",
            "--allow-unsafe-settings",
        ),
        (
            "mariadb-innodb",
            "mariadb-innodb.secure_file_priv=",
            "--allow-unsafe-settings",
        ),
        (
            "mariadb-myrocks",
            "mariadb-myrocks.plugin_load_add=x.so",
            "--allow-unsafe-settings",
        ),
        (
            "postgres",
            "postgres.archive_command=sh -c x",
            "--allow-unsafe-settings",
        ),
        (
            "postgres",
            "postgres.shared_preload_libraries=x",
            "--allow-unsafe-settings",
        ),
        (
            "wiredtiger",
            "wiredtiger.extensions=[/tmp/x.so]",
            "--allow-unsafe-settings",
        ),
        (
            "wiredtiger",
            "wiredtiger.log=(enabled=true,path=/etc)",
            "--allow-unsafe-settings",
        ),
        ("rocksdb", "rocksdb.wal_dir=/etc", "--allow-unsafe-settings"),
        // The review's bypasses: WiredTiger's `:` and a key with a blank,
        // RocksDB's blanks around a key in an options string, Galera,
        // directories named `*tmpdir`.
        (
            "wiredtiger",
            "wiredtiger.eviction_target=80,extensions:[/tmp/x.so]",
            "--allow-unsafe-settings",
        ),
        (
            "wiredtiger",
            "wiredtiger.extensions =[/tmp/x.so]",
            "a key is letters",
        ),
        (
            "rocksdb",
            "rocksdb.max_open_files=1;wal_dir =/x",
            "--allow-unsafe-settings",
        ),
        (
            "mariadb-innodb",
            "mariadb-innodb.wsrep_provider=/tmp/x.so",
            "set by ampbench",
        ),
        (
            "mariadb-innodb",
            "mariadb-innodb.innodb_tmpdir=/tmp",
            "--allow-unsafe-settings",
        ),
    ] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_ampbench"))
            .args(["run", "-e", engine, "--set", set, "--results"])
            .arg(&results)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{set}: {err}");
        let key = set.split('=').next().unwrap();
        assert!(err.contains(key) && err.contains(says), "{set}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(!results.exists(), "nothing starts");
    }
    // A plan's unsafe setting is refused even with the flag: the flag
    // covers the command line's only.
    let plan = dir.path().join("p.toml");
    std::fs::write(
        &plan,
        "workload = \"pattern\"\nengines = [\"rocksdb\"]\n[set.rocksdb]\nwal_dir = \"/etc\"\n",
    )
    .unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ampbench"))
        .arg("run")
        .arg(&plan)
        .args(["--allow-unsafe-settings", "--results", "/nonexistent/r.db"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("plan file") && err.contains("wal_dir"),
        "{err}"
    );
    // With the flag, an unsafe setting passes the check (the run then
    // stops at the results file, which cannot be made).
    for (engine, set) in [
        ("rocksdb", "rocksdb.wal_dir=/tmp"),
        ("mariadb-innodb", "mariadb-innodb.general_log_file=/tmp/x"),
    ] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_ampbench"))
            .args(["run", "-e", engine, "--set", set, "--allow-unsafe-settings"])
            .args(["--results", "/nonexistent/r.db"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("/nonexistent/r.db"), "{set}: {err}");
    }
}

/// A --dir the server's user cannot reach (below a 0700 directory of
/// root's) is a one-line error naming the directory and what to do,
/// before anything starts (no results file, no directory made).
#[test]
fn a_dir_postgres_cannot_reach_is_said_before_anything_starts() {
    let d = tempfile::tempdir().unwrap();
    let locked = d.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o700)).unwrap();
    let dir = locked.join("data");
    let results = d.path().join("r.db");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ampbench"))
        .args(["run", "-e", "rocksdb,postgres", "-p", "docs=1000", "--dir"])
        .arg(&dir)
        .arg("--results")
        .arg(&results)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("cannot enter {}", locked.display())) && err.contains("chmod o+x"),
        "{err}"
    );
    assert!(!results.exists() && !dir.exists(), "nothing started");
}

/// Root never writes through a link planted in a server's directory
/// (issue 47): a `pwfile` or `initdb.log` already in PostgreSQL's
/// directory, pointing elsewhere, stops the open with one line naming
/// it, and what it points at is neither made nor given to `postgres`.
#[test]
fn a_planted_link_in_the_servers_directory_is_refused() {
    use std::os::unix::fs::MetadataExt;
    for name in ["pwfile", "initdb.log"] {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        let dir = d.path().join("pg");
        std::fs::create_dir(&dir).unwrap();
        std::os::unix::fs::symlink(&victim, dir.join(name)).unwrap();
        let kind = EngineKind::parse("postgres").unwrap();
        let e = match engine::open(kind, &OpenSpec::new(&dir, vec![], 64 << 20)) {
            Ok(e) => {
                let _ = e.close();
                panic!("{name}: a link planted as {name} was written through");
            }
            Err(e) => format!("{e:#}"),
        };
        assert!(e.contains(name), "{name}: {e}");
        assert!(!victim.exists(), "{name}: root wrote {}", victim.display());
        // An existing file behind the link keeps its owner and content.
        std::fs::write(&victim, b"root's").unwrap();
        let again = engine::open(kind, &OpenSpec::new(&dir, vec![], 64 << 20));
        assert!(again.is_err(), "{name}: opened over a planted link");
        assert_eq!(std::fs::read(&victim).unwrap(), b"root's");
        assert_eq!(std::fs::metadata(&victim).unwrap().uid(), 0);
    }
}
