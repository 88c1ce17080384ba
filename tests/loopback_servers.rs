//! Server engines started on loopback by the test, at tiny scale, and
//! always stopped.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ampbench::engine::sql::{Cell, Val};
use ampbench::engine::{self, Durability, EngineKind, OpenSpec};
use ampbench::workload::kv::sql::{SqlDocs, schema};
use ampbench::workload::kv::store::DocStore;

use crate::common;
use common::{BIN, open, sql, working_in};

fn gone(pid: u32) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            return true;
        }
        // A zombie is gone for our purpose once it is not running.
        if let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            if s.rsplit_once(')')
                .map(|x| x.1.trim_start().starts_with('Z'))
                .unwrap_or(false)
            {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// `--transport` is what the server sees: TCP from 127.0.0.1 (the MariaDB
/// driver would otherwise move a loopback connection onto the socket), or
/// the Unix socket.
#[test]
fn connections_use_the_transport_asked_for() {
    let who = [
        (
            "mariadb-innodb",
            "SELECT host FROM information_schema.processlist WHERE id = CONNECTION_ID()",
        ),
        (
            "postgres",
            "SELECT coalesce(host(inet_client_addr()), 'localhost')",
        ),
    ];
    for (name, q) in who {
        for (transport, seen) in [
            (engine::Transport::Tcp, "127.0.0.1"),
            (engine::Transport::Socket, "localhost"),
        ] {
            let d = tempfile::tempdir().unwrap();
            let mut spec = OpenSpec::new(d.path(), vec![], 64 << 20);
            spec.transport = transport;
            let s = engine::open(EngineKind::parse(name).unwrap(), &spec).unwrap();
            let rows = sql(&*s).connect().unwrap().query(q, &[]).unwrap();
            let host = match &rows[0][0] {
                Cell::Text(t) => t.clone(),
                Cell::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
                c => panic!("{name}: {c:?}"),
            };
            assert!(
                host.starts_with(seen),
                "{name} over {transport}: the server sees {host}"
            );
        }
    }
}

/// Data written is read back, stats are parsed, and closing leaves no process.
#[test]
fn servers_roundtrip_stats_and_cleanup() {
    for kind in [
        EngineKind::parse("mariadb-innodb").unwrap(),
        EngineKind::parse("mariadb-myrocks").unwrap(),
        EngineKind::parse("postgres").unwrap(),
    ] {
        let d = tempfile::tempdir().unwrap();
        let t0 = Instant::now();
        let s = open(kind, d.path());
        let started = t0.elapsed();
        assert!(
            started < Duration::from_secs(30),
            "{kind} took {started:?} to start"
        );
        let pid = s.pid().expect("a local server");
        let mut c = sql(&*s).connect().unwrap();
        for q in schema("docs", sql(&*s).dialect(), sql(&*s).table_options()) {
            c.batch(&q).unwrap();
        }
        let retries = ampbench::workload::kv::sql::Retries::default();
        let mut docs = SqlDocs::new(
            sql(&*s).connect().unwrap(),
            sql(&*s).dialect(),
            "docs",
            &retries,
        );
        let rows: Vec<(Vec<u8>, Vec<u8>)> = (0..2500u32)
            .map(|i| {
                (
                    format!("k{i:06}").into_bytes(),
                    vec![(i % 251) as u8; 100 + (i % 7) as usize],
                )
            })
            .collect();
        docs.insert_batch(&rows, Durability::NoSync).unwrap();
        docs.write(b"k000007", b"changed", Durability::Sync)
            .unwrap();
        assert_eq!(
            docs.read_value(b"k000007").unwrap().as_deref(),
            Some(&b"changed"[..]),
            "{kind}"
        );
        assert_eq!(
            docs.read(b"k002499").unwrap(),
            Some(100), // 2499 % 7 == 0
            "{kind}"
        );
        assert_eq!(docs.read(b"nope").unwrap(), None, "{kind}");
        assert_eq!(docs.scan(b"k000100", 20).unwrap(), 20, "{kind}");
        assert_eq!(docs.scan(b"k002495", 20).unwrap(), 5, "{kind}");
        let n = c.query("SELECT count(*) FROM docs", &[]).unwrap();
        assert_eq!(n[0][0].int(), Some(2500), "{kind}");
        s.settle().unwrap();
        let st = s.stats().unwrap();
        assert!(!st.values.is_empty(), "{kind}: no stats");
        if kind.name() == "mariadb-myrocks" {
            assert!(
                st.values
                    .iter()
                    .any(|(k, _)| k.starts_with("compaction.w_amp.") && k.contains(".default")),
                "MyRocks W-Amp missing: {:?}",
                st.values
                    .iter()
                    .filter(|(k, _)| k.starts_with("compaction"))
                    .collect::<Vec<_>>()
            );
        }
        if kind.name() == "postgres" {
            assert!(
                st.values
                    .iter()
                    .any(|(k, _)| k == "pg_stat_database.xact_commit")
            );
        }
        assert!(!s.data_paths().is_empty());
        drop((c, docs));
        s.close().unwrap();
        assert!(gone(pid), "{kind}: server {pid} still running after close");
    }
}

/// INSERT … ON DUPLICATE KEY UPDATE reports affected rows: 1 new, 2
/// changed, 0 unchanged (LinkBench's ADD_LINK depends on it).
#[test]
fn mariadb_affected_rows() {
    for kind in [
        EngineKind::parse("mariadb-innodb").unwrap(),
        EngineKind::parse("mariadb-myrocks").unwrap(),
    ] {
        let d = tempfile::tempdir().unwrap();
        let s = open(kind, d.path());
        let mut c = sql(&*s).connect().unwrap();
        c.batch(&format!(
            "CREATE TABLE t (id BIGINT PRIMARY KEY, v INT NOT NULL) {}",
            sql(&*s).table_options()
        ))
        .unwrap();
        let up = "INSERT INTO t (id, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)";
        assert_eq!(
            c.execute(up, &[Val::Int(1), Val::Int(10)]).unwrap(),
            1,
            "{kind}: new row"
        );
        assert_eq!(
            c.execute(up, &[Val::Int(1), Val::Int(11)]).unwrap(),
            2,
            "{kind}: changed row"
        );
        assert_eq!(
            c.execute(up, &[Val::Int(1), Val::Int(11)]).unwrap(),
            0,
            "{kind}: unchanged row"
        );
        c.begin().unwrap();
        c.execute("UPDATE t SET v = v + 1 WHERE id = ?", &[Val::Int(1)])
            .unwrap();
        c.rollback().unwrap();
        assert_eq!(
            c.query("SELECT v FROM t WHERE id = ?", &[Val::Int(1)])
                .unwrap(),
            vec![vec![Cell::Int(11)]]
        );
        drop(c);
        s.close().unwrap();
    }
}

fn spawn_run(args: &[&str]) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    (child, rx)
}

fn wait_for_pid(rx: &std::sync::mpsc::Receiver<String>, engine: &str) -> u32 {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(60) {
        if let Ok(l) = rx.recv_timeout(Duration::from_secs(1)) {
            if l.starts_with(engine) {
                if let Some(p) = l
                    .split("(pid ")
                    .nth(1)
                    .and_then(|r| r.trim_end_matches(')').parse().ok())
                {
                    return p;
                }
            }
        }
    }
    panic!("{engine} never started");
}

/// kill -9 of the server mid-step: the step is marked failed with the
/// error, the results keep what was measured, the next engine still runs,
/// and no server of ours is left.
///
/// The three servers are tested at once, each run in a directory of its
/// own: one after another they took 30 to 50 s of a lane, mostly waiting
/// (the steps are paced).
#[test]
fn server_killed_mid_step() {
    std::thread::scope(|s| {
        for engine in ["mariadb-innodb", "mariadb-myrocks", "postgres"] {
            s.spawn(move || server_killed_mid_step_of(engine));
        }
    });
}

/// A run of `engines` (load, then owa.1 for `secs`) in `d`, started and
/// waited for until owa.1 has run 2 s; returns the child, its output
/// lines and the first engine's server pid.
fn run_into_owa(
    d: &std::path::Path,
    engines: &str,
    secs: &str,
) -> (std::process::Child, std::sync::mpsc::Receiver<String>, u32) {
    let (child, rx) = spawn_run(&[
        "run",
        // Each step's line as it ends: the test waits for the load's.
        "-v",
        "-e",
        engines,
        "--steps",
        "load,owa.1",
        "-p",
        "docs=2000",
        "--warmup",
        "0",
        "--duration",
        secs,
        "--interval",
        "0.5",
        // Paced: the next engine's step then costs no core.
        "--rate",
        "1000",
        "--results",
        d.join("r.db").to_str().unwrap(),
        "--dir",
        d.to_str().unwrap(),
    ]);
    let first = engines.split(',').next().unwrap();
    let pid = wait_for_pid(&rx, first);
    // Wait until owa.1 runs (load printed), then a little more.
    wait_for_load(&rx);
    std::thread::sleep(Duration::from_secs(2));
    (child, rx, pid)
}

/// Waits until the run printed its load step's line (`-v`: each step's
/// line as it ends), at most 60 s.
fn wait_for_load(rx: &std::sync::mpsc::Receiver<String>) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(60) {
        if rx
            .recv_timeout(Duration::from_secs(1))
            .is_ok_and(|l| l.trim_start().starts_with("load"))
        {
            break;
        }
    }
}

/// The JSON report of the latest run in `d`'s results file.
fn report(d: &std::path::Path) -> serde_json::Value {
    let out = Command::new(BIN)
        .args(["report", "--results"])
        .arg(d.join("r.db"))
        .args(["--format", "json"])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The server `pid`, its children and the data directories under `d` are
/// all gone.
fn assert_nothing_left(d: &std::path::Path, pid: u32, engine: &str) {
    assert!(gone(pid), "{engine}: server {pid} left");
    // Nor any of its children (PostgreSQL's backends).
    let t0 = Instant::now();
    while !working_in(d).is_empty() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(working_in(d), Vec::<u32>::new(), "{engine}: processes left");
    let left: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .collect();
    assert!(left.is_empty(), "{engine}: data directories left: {left:?}");
}

fn server_killed_mid_step_of(engine: &str) {
    let d = tempfile::tempdir().unwrap();
    let (mut child, _rx, pid) = run_into_owa(d.path(), &format!("{engine},lmdb"), "5");
    // SAFETY: signals the server the child ampbench started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let st = child.wait().unwrap();
    assert!(!st.success(), "a failed step makes the run fail");
    let j = report(d.path());
    let steps = j["steps"].as_array().unwrap();
    let owa = steps
        .iter()
        .find(|s| s["engine"] == engine && s["step"] == "owa.1")
        .unwrap();
    assert_eq!(owa["status"], "failed", "{engine}");
    assert!(!owa["error"].as_str().unwrap_or("").is_empty(), "{engine}");
    assert!(
        owa["ops"].as_f64().unwrap() > 0.0,
        "what was measured before the kill is kept"
    );
    for s in steps.iter().filter(|s| s["engine"] == "lmdb") {
        assert_eq!(s["status"], "done", "the next engine still runs");
    }
    assert_nothing_left(d.path(), pid, engine);
}

/// Ctrl-C twice on a server run (real SIGINTs, the second while the
/// first's cleanup runs): the step and the run are recorded interrupted,
/// the partial report is printed, and the server, its backends and its
/// data directory are gone.
#[test]
fn ctrl_c_twice_on_a_server() {
    // Issue 31: the second Ctrl-C does not wait for the first one's
    // orderly end: it kills the server, marks the run, removes what the
    // run made and exits (130) at once.
    let d = tempfile::tempdir().unwrap();
    let (mut child, _rx, pid) = run_into_owa(d.path(), "postgres", "60");
    for _ in 0..2 {
        // SAFETY: signals our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        std::thread::sleep(Duration::from_millis(100));
    }
    let t0 = Instant::now();
    let st = child.wait().unwrap();
    // The orderly end would wait out the 60 s step; the second Ctrl-C
    // does not (under a loaded machine its cleanup took up to 15 s).
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    assert_eq!(st.code(), Some(130));
    let j = report(d.path());
    assert_eq!(j["run"]["status"], "interrupted");
    let owa = j["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == "owa.1")
        .unwrap();
    assert_eq!(owa["status"], "interrupted");
    assert_nothing_left(d.path(), pid, "postgres");
}

/// Issue 31: a server that stops answering (SIGSTOP) in the middle of a
/// step fails that step within --server-timeout (its clients give up, and
/// the watch kills a server that no longer answers a new connection);
/// the next engine still runs, and nothing is left. Without the timeouts
/// the run waited forever and Ctrl-C could not end it.
///
/// The two servers are tested at once: each run mostly waits (its
/// steps are paced, the timeout is waited out).
#[test]
fn a_stopped_server_fails_its_step_within_the_timeout() {
    std::thread::scope(|s| {
        for engine in ["mariadb-innodb", "postgres"] {
            s.spawn(move || a_stopped_server_fails_its_step(engine));
        }
    });
}

fn a_stopped_server_fails_its_step(engine: &str) {
    let d = tempfile::tempdir().unwrap();
    let (mut child, rx) = spawn_run(&[
        "run",
        // Each step's line as it ends: the test waits for the load's.
        "-v",
        "-e",
        &format!("{engine},null"),
        "--steps",
        "load,owa.1",
        "-p",
        "docs=2000",
        "--warmup",
        "0",
        "--duration",
        "15",
        "--interval",
        "0.5",
        "--server-timeout",
        "2s",
        // Paced: the next engine's 15 s step costs no core (the
        // server's clients still wait on it when it stops).
        "--rate",
        "500",
        "--results",
        d.path().join("r.db").to_str().unwrap(),
        "--dir",
        d.path().to_str().unwrap(),
    ]);
    let pid = wait_for_pid(&rx, engine);
    wait_for_load(&rx);
    std::thread::sleep(Duration::from_secs(1));
    // Every process of the server stops (PostgreSQL's backends too).
    let mut family = vec![pid];
    family.extend(children(pid));
    for p in &family {
        // SAFETY: signals the server the child ampbench started.
        unsafe { libc::kill(*p as i32, libc::SIGSTOP) };
    }
    // The step's line says FAILED well before its 15 s end.
    let t0 = Instant::now();
    let mut failed = String::new();
    while failed.is_empty() && t0.elapsed() < Duration::from_secs(60) {
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(200)) {
            if l.contains("owa.1") && l.contains("FAILED") {
                failed = l;
            }
        }
    }
    let took = t0.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "{engine}: {took:?} {failed}"
    );
    let st = child.wait().unwrap();
    assert!(!st.success(), "{engine}: a failed step fails the run");
    let j = report(d.path());
    let steps = j["steps"].as_array().unwrap();
    let owa = steps
        .iter()
        .find(|s| s["engine"] == engine && s["step"] == "owa.1")
        .unwrap();
    assert_eq!(owa["status"], "failed", "{engine}: {j}");
    let err = owa["error"].as_str().unwrap_or_default();
    assert!(
        err.contains("--server-timeout") || err.contains("did not answer"),
        "{engine}: {err}"
    );
    assert!(
        steps
            .iter()
            .any(|s| s["engine"] == "null" && s["status"] == "done"),
        "{engine}: the next engine ran: {j}"
    );
    assert_nothing_left(d.path(), pid, engine);
}

/// The direct children of `pid`.
fn children(pid: u32) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(s) = std::fs::read_to_string(format!("/proc/{p}/stat")) {
            if s.rsplit_once(')')
                .and_then(|x| x.1.split_whitespace().nth(1))
                == Some(&pid.to_string())
            {
                v.push(p);
            }
        }
    }
    v
}

/// If ampbench itself is killed, its server gets SIGTERM from the kernel
/// and stops: no orphan.
#[test]
fn no_orphan_when_ampbench_is_killed() {
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let (mut child, rx) = spawn_run(&[
        "run",
        "-e",
        "postgres",
        "--steps",
        "load,owa.1",
        "-p",
        "docs=2000",
        "--warmup",
        "0",
        "--duration",
        "30",
        "--results",
        res.to_str().unwrap(),
        "--dir",
        d.path().to_str().unwrap(),
    ]);
    let pid = wait_for_pid(&rx, "postgres");
    std::thread::sleep(Duration::from_secs(2));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(gone(pid), "postgres {pid} outlived ampbench");
}

/// The KV workloads run on the servers through the (k, v) mapping, and the
/// figures charge the server's CPU and the client's apart.
///
/// The two workloads run at once, each in a directory of its own (their
/// steps are paced: the runs mostly wait on their servers' starts).
#[test]
fn kv_workloads_on_servers() {
    std::thread::scope(|s| {
        for (w, p) in [("pattern", "docs=3000"), ("ycsb", "recordcount=2000")] {
            s.spawn(move || kv_workload_on_servers(w, p));
        }
    });
}

fn kv_workload_on_servers(w: &str, p: &str) {
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let o = Command::new(BIN)
        .args([
            "run",
            "-w",
            w,
            "-e",
            "mariadb-innodb,mariadb-myrocks,postgres",
            "-p",
            p,
            "--warmup",
            "0",
            "--duration",
            "0.3",
            "--threads",
            "2",
            // Paced: every step is checked for work done, not speed.
            "--rate",
            "2000",
        ])
        .args([
            "--results",
            res.to_str().unwrap(),
            "--dir",
            d.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{w}: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let j = report(d.path());
    for s in j["steps"].as_array().unwrap() {
        assert_eq!(s["status"], "done", "{w} {} {}", s["engine"], s["step"]);
        assert!(
            s["ops"].as_f64().unwrap() > 0.0,
            "{w} {} {}",
            s["engine"],
            s["step"]
        );
        assert!(
            s["cpu_us_per_op"].is_number() && s["client_cpu_us_per_op"].is_number(),
            "{w} {} {}",
            s["engine"],
            s["step"]
        );
        let misses = s["extras"]["misses"].as_f64().unwrap_or(0.0);
        assert_eq!(
            misses, 0.0,
            "{w} {} {}: reads missed loaded documents",
            s["engine"], s["step"]
        );
    }
    let left: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .collect();
    assert!(left.is_empty(), "data directories left: {left:?}");
}
