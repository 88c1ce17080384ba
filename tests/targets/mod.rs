//! `--target`: ampbench against a MariaDB and a PostgreSQL it did not
//! start, each in a network namespace of its own reached over a veth
//! address (not 127.0.0.1) with password authentication. The workloads
//! run by URL; efficiency comes from the servers' counters; bad input
//! gives one line naming what was wrong; nothing of ampbench's stays on
//! the servers.

mod clients;
mod cluster;
use crate::common;
mod fixture;
mod galera;
mod store;
mod template;
mod trust;

use std::process::Output;
use std::time::{Duration, Instant};

use fixture::{Net, PASSWORD};

macro_rules! need_net {
    ($net:ident) => {
        let $net = match Net::new() {
            Ok(n) => n,
            Err(why) => {
                ampbench::testing::skip("targets", &format!("no network namespaces here: {why}"));
                return;
            }
        };
    };
}

/// `ampbench run ARGS` in the client namespace, with `env` set; `args`
/// are split at spaces (no value here has one).
fn run_in(net: &Net, args: &str, env: &[(&str, &str)]) -> Output {
    let mut c = net.in_client(common::BIN);
    c.arg("run").args(args.split_whitespace());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run ampbench in the client namespace")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A run that must succeed; returns its output.
fn passes(net: &Net, args: &str, env: &[(&str, &str)]) -> String {
    let o = run_in(net, args, env);
    let t = text(&o);
    assert!(o.status.success(), "ampbench run {args} failed:\n{t}");
    assert!(!t.contains(PASSWORD), "the password was printed:\n{t}");
    t
}

/// A run that must fail with a line naming `says`.
fn refused(net: &Net, args: &str, says: &str) -> String {
    refused_with(net, args, &[], says)
}

/// [`refused`], and in at most three lines of output all told (issue 47:
/// a wrong password printed a page of empty tables).
fn refused_briefly(net: &Net, args: &str, says: &str) -> String {
    let o = run_in(net, args, &[]);
    let t = text(&o);
    assert!(t.trim_end().lines().count() <= 3, "more than 3 lines:\n{t}");
    refused(net, args, says)
}

/// [`refused`] with `env` set.
fn refused_with(net: &Net, args: &str, env: &[(&str, &str)], says: &str) -> String {
    let o = run_in(net, args, env);
    let t = text(&o);
    assert!(!o.status.success(), "ampbench run {args} passed:\n{t}");
    let line = t
        .lines()
        .find(|l| l.contains(says))
        .unwrap_or_else(|| panic!("no line says '{says}':\n{t}"));
    assert!(!t.contains(PASSWORD), "the password was printed:\n{t}");
    line.to_string()
}

/// Every step of the latest run in `results`, as the JSON report has it.
fn steps(results: &std::path::Path) -> Vec<serde_json::Value> {
    common::report_json(results.to_str().unwrap(), "latest")["steps"]
        .as_array()
        .expect("steps")
        .clone()
}

/// Checks the figures of a run against a target: the server's counters
/// measured, this host's device, process and files said not to be.
fn external_figures(results: &std::path::Path, engine: &str) {
    let steps = steps(results);
    assert!(!steps.is_empty());
    let mut wrote = 0.0;
    for s in &steps {
        assert_eq!(s["engine"], engine);
        assert_eq!(s["status"], "done", "{}", s["error"]);
        for k in ["r_per_op", "cpu_us_per_op", "db_bytes", "rss_bytes"] {
            assert!(s[k].is_null(), "{k} measured on a remote server: {}", s[k]);
            let why = s["not_measured"][k].as_str().unwrap_or_default();
            assert!(why.contains("external target"), "{k}: {why}");
        }
        assert!(
            s["srv_db_bytes"].as_f64().is_some_and(|v| v > 0.0),
            "{}",
            s["step"]
        );
        assert!(s["client_cpu_us_per_op"].as_f64().is_some_and(|v| v > 0.0));
        wrote += s["srv_wkb_per_op"].as_f64().unwrap_or(0.0);
    }
    assert!(wrote > 0.0, "no step wrote by the server's counters");
}

#[test]
fn mariadb_by_url() {
    need_net!(net);
    let server = fixture::mariadb(&net).expect("the fixture's MariaDB");
    let d = tempfile::tempdir().unwrap();
    let results = d.path().join("r.db");
    let ip = net.server_ip.clone();
    let ca = server.dir.path().join("ca.pem");
    let at = format!(
        "--results {} --dir {}",
        results.display(),
        d.path().display()
    );
    // LinkBench by URL under TLS, the certificate verified against the
    // fixture's CA, as a user the server lets in over TLS only; the
    // password in the URL.
    let url = format!(
        "mysql://secure:{PASSWORD}@{ip}/?tls=true&tlsca={}",
        ca.display()
    );
    let out = passes(
        &net,
        &format!(
            "-w linkbench -p maxid1=2001 -p {} --warmup 0 --duration 3 --rate 2000 --target {url} {at}",
            common::small_degrees(d.path())
        ),
        &[],
    );
    assert!(out.contains("consistency check: 0 mismatches"), "{out}");
    let shown = format!("mysql://secure@{ip}:3306?tls=true");
    assert!(out.contains(&format!("at {shown}")), "{out}");
    external_figures(&results, "mariadb-innodb");
    let cfg = common::run_config(&results, 1);
    assert_eq!(cfg["target"]["url"], shown);
    // A certificate that does not verify: another CA.
    let other = server.dir.path().join("other-ca.pem");
    let l = refused(
        &net,
        &format!(
            "-w ycsb --target mysql://secure:{PASSWORD}@{ip}/?tls=true&tlsca={} {at}",
            other.display()
        ),
        "cannot log in",
    );
    assert!(l.contains("certificate"), "{l}");
    // Without TLS, the server refuses that user: TLS was in use above.
    refused(
        &net,
        &format!("-w ycsb --target mysql://secure:{PASSWORD}@{ip}/ {at}"),
        "Access denied",
    );
    // Its database is gone.
    let left = fixture::mariadb_root(&server, "SHOW DATABASES LIKE 'ampbench%'").unwrap();
    assert_eq!(left.trim(), "", "ampbench left a database");
    // YCSB, the password from the environment, in a named database: the
    // tables it made are dropped, the database stays.
    let url = format!("mysql://bench@{ip}:3306");
    let env = [("AMPBENCH_TARGET_PASSWORD", PASSWORD)];
    passes(
        &net,
        &format!(
            "-w ycsb -p recordcount=2000 --steps load,a --warmup 0 --duration 2 --rate 2000 --target {url} --target-db scratch {at}"
        ),
        &env,
    );
    external_figures(&results, "mariadb-innodb");
    let tables = fixture::mariadb_root(&server, "SHOW TABLES FROM scratch").unwrap();
    assert_eq!(tables.trim(), "", "tables left in scratch");
    // The insert benchmark by URL, in a database of ampbench's own.
    let out = passes(
        &net,
        &format!(
            "-w insert -p load_rows=3000 -p i1_rows=600 -p i2_rows=200 --warmup 0 --duration 2 --rate 2000 --target {url} {at}"
        ),
        &env,
    );
    assert!(
        !out.contains("mismatch") || out.contains("0 mismatches"),
        "{out}"
    );
    external_figures(&results, "mariadb-innodb");
    // Bad input, one line each.
    let bad = format!("mysql://bench:wrong@{ip}/");
    let l = refused_briefly(
        &net,
        &format!("-w ycsb --target {bad} {at}"),
        "cannot log in",
    );
    assert!(l.contains("Access denied"), "{l}");
    assert!(!l.contains("wrong"), "the wrong password was printed: {l}");
    let t0 = Instant::now();
    let dead = format!("mysql://bench:{PASSWORD}@{}/", net.dead_ip);
    let l = refused(
        &net,
        &format!("-w ycsb --target {dead} {at}"),
        "cannot log in",
    );
    assert!(l.contains(&net.dead_ip), "{l}");
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    // Runs given the password in the URL recorded their command lines:
    // without it.
    for f in std::fs::read_dir(d.path()).unwrap().flatten() {
        let name = f.file_name().to_string_lossy().into_owned();
        if name.starts_with("r.db") {
            let bytes = std::fs::read(f.path()).unwrap();
            let found = bytes
                .windows(PASSWORD.len())
                .any(|w| w == PASSWORD.as_bytes());
            assert!(!found, "{name} holds the password");
        }
    }
    let l = refused_with(
        &net,
        &format!("-w ycsb --target {url} --target-db shop --target-db-owned {at}"),
        &env,
        "does not know",
    );
    assert!(l.contains("orders"), "{l}");
    let n: String = fixture::mariadb_root(
        &server,
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'shop'",
    )
    .unwrap();
    assert_eq!(n.trim(), "1", "the foreign table was touched");
    refused(
        &net,
        &format!("-w ycsb --target mysq://bench@{ip}/"),
        "scheme 'mysq'",
    );
    refused(
        &net,
        &format!("-w ycsb --target {url} --memory 256MB"),
        "--memory with --target",
    );
    refused(
        &net,
        &format!("-w ycsb --target {url} -e postgres"),
        "--engine postgres",
    );
}

#[test]
fn postgres_by_url() {
    need_net!(net);
    let server = fixture::postgres(&net).expect("the fixture's PostgreSQL");
    let d = tempfile::tempdir().unwrap();
    let results = d.path().join("r.db");
    let at = format!(
        "--results {} --dir {}",
        results.display(),
        d.path().display()
    );
    let ip = net.server_ip.clone();
    let pw = d.path().join("pw");
    std::fs::write(&pw, format!("{PASSWORD}\n")).unwrap();
    let mode = |m: u32| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&pw, std::fs::Permissions::from_mode(m)).unwrap();
    };
    mode(0o600);
    // The insert benchmark by URL under TLS (verify-full against the
    // fixture's CA), as a role the server lets in over TLS only, the
    // password from a file.
    let ca = server.dir.path().join("ca.pem");
    let url = format!(
        "postgres://secure@{ip}/postgres?sslmode=verify-full&sslrootcert={}",
        ca.display()
    );
    let with_pw = format!("--target {url} --target-password-file {}", pw.display());
    let _exporter = fixture::node_exporter(&net).expect("the fixture's node exporter");
    let hm = format!("--host-metrics http://{ip}:9100/metrics");
    let out = passes(
        &net,
        &format!(
            "-w insert -p load_rows=3000 -p i1_rows=600 -p i2_rows=200 --warmup 0 --duration 2 --rate 2000 {with_pw} {hm} {at}"
        ),
        &[],
    );
    assert!(out.contains("by its node exporter"), "{out}");
    // The host's figures: CPU busy in every step, bytes written in some.
    let steps_now = steps(&results);
    for s in &steps_now {
        assert!(
            s["host_cpu_us_per_op"].as_f64().is_some_and(|v| v > 0.0),
            "{}: {}",
            s["step"],
            s["not_measured"]["host_cpu_us_per_op"]
        );
    }
    assert!(
        steps_now
            .iter()
            .any(|s| s["host_wkb_per_op"].as_f64().is_some_and(|v| v > 0.0)),
        "no step wrote by the node exporter"
    );
    let report = common::ok(&["report", "--results", results.to_str().unwrap()]);
    assert!(report.contains("server host's node exporter"), "{report}");
    refused(
        &net,
        &format!(
            "-w ycsb {with_pw} --host-metrics http://{}:9100/metrics {at}",
            net.dead_ip
        ),
        "--host-metrics",
    );
    assert!(
        !out.contains("mismatch") || out.contains("0 mismatches"),
        "{out}"
    );
    external_figures(&results, "postgres");
    let cfg = common::run_config(&results, 1);
    assert_eq!(
        cfg["target"]["url"],
        format!("postgres://secure@{ip}:5432/postgres?sslmode=verify-full")
    );
    let other = server.dir.path().join("other-ca.pem");
    let l = refused(
        &net,
        &format!(
            "-w ycsb --target postgres://secure@{ip}/postgres?sslmode=verify-ca&sslrootcert={} --target-password-file {} {at}",
            other.display(),
            pw.display()
        ),
        "cannot log in",
    );
    assert!(l.contains("certificate"), "{l}");
    let l = refused(
        &net,
        &format!(
            "-w ycsb --target postgres://secure@{ip}/postgres?sslmode=disable --target-password-file {} {at}",
            pw.display()
        ),
        "cannot log in",
    );
    assert!(
        l.contains("no pg_hba.conf entry") || l.contains("rejects"),
        "{l}"
    );
    let url = format!("postgres://bench@{ip}/postgres?sslmode=disable");
    let with_pw = format!("--target {url} --target-password-file {}", pw.display());
    let left = fixture::postgres_as(
        &server,
        "postgres",
        "postgres",
        "SELECT count(*) FROM pg_database WHERE datname LIKE 'ampbench%'",
    )
    .unwrap();
    assert_eq!(left.trim(), "0", "ampbench left a database");
    // YCSB in a named database.
    passes(
        &net,
        &format!(
            "-w ycsb -p recordcount=2000 --steps load,a --warmup 0 --duration 2 --rate 2000 {with_pw} --target-db scratch {at}"
        ),
        &[],
    );
    external_figures(&results, "postgres");
    // At SERIALIZABLE, LinkBench's conflicting requests fail with 40001:
    // retried, counted per operation, and the counts stay consistent.
    fixture::postgres_as(
        &server,
        "postgres",
        "postgres",
        "ALTER DATABASE scratch SET default_transaction_isolation TO 'serializable'",
    )
    .unwrap();
    let out = passes(
        &net,
        &format!(
            "-w linkbench -p maxid1=2001 -p {} --warmup 0 --duration 4 --threads 16 {with_pw} --target-db scratch {at}",
            common::small_degrees(d.path())
        ),
        &[],
    );
    assert!(out.contains("consistency check: 0 mismatches"), "{out}");
    let line = out
        .lines()
        .find(|l| l.contains("retries after conflicts:"))
        .unwrap_or_else(|| panic!("no retry counts:\n{out}"));
    let retries: u64 = line
        .split("retries after conflicts:")
        .nth(1)
        .unwrap()
        .split(',')
        .filter_map(|p| p.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum();
    eprintln!("{line}");
    assert!(retries > 0, "no serialization failure was retried: {line}");
    assert!(line.contains("serialization failures"), "{line}");
    // Bad input.
    let bad = format!("postgres://bench:wrong@{ip}/postgres");
    let l = refused_briefly(
        &net,
        &format!("-w ycsb --target {bad} {at}"),
        "cannot log in",
    );
    assert!(l.contains("password authentication failed"), "{l}");
    let l = refused(
        &net,
        &format!("-w ycsb {with_pw} --target-db shop {at}"),
        "does not know",
    );
    assert!(l.contains("orders"), "{l}");
    refused(
        &net,
        &format!("-w ycsb --target postgres://bench@{ip}/postgres?sslmode=prefer"),
        "sslmode=prefer",
    );
    mode(0o644);
    refused(&net, &format!("-w ycsb {with_pw}"), "readable by others");
}

/// A server on 127.0.0.1 that sends `first` (after reading `read`
/// bytes), then reads until the client hangs up; returns its port and
/// what the client sent after `first`.
fn scripted(read: usize, first: Vec<u8>) -> (u16, std::thread::JoinHandle<Vec<u8>>) {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let h = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut b = vec![0; read];
        s.read_exact(&mut b).unwrap();
        s.write_all(&first).unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        rest
    });
    (port, h)
}

/// `ampbench run ARGS` on this host (not in a namespace).
fn run_here(args: &str) -> String {
    let d = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(common::BIN)
        .arg("run")
        .args(args.split_whitespace())
        .arg("--results")
        .arg(d.path().join("r.db"))
        .arg("--dir")
        .arg(d.path())
        .output()
        .unwrap();
    assert!(!o.status.success(), "ampbench run {args} passed");
    text(&o)
}

#[test]
fn tls_refused_by_the_server_is_one_line_and_nothing_in_clear() {
    // A PostgreSQL with ssl=off answers the SSL request with 'N'.
    let (port, h) = scripted(8, b"N".to_vec());
    let t = run_here(&format!(
        "-w ycsb --target postgres://u:p@127.0.0.1:{port}/db?sslmode=require"
    ));
    assert!(
        t.contains("cannot log in") && t.contains("does not support TLS"),
        "{t}"
    );
    assert!(h.join().unwrap().is_empty(), "the client went on in clear");
    // A MariaDB without TLS: its handshake lacks the SSL capability.
    let mut p = vec![10];
    p.extend_from_slice(b"5.5.5-10.11.6-MariaDB\0");
    p.extend_from_slice(&[7, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0]);
    let caps: u32 = 0x000f_f7ff; // everything but SSL (0x800)
    p.extend_from_slice(&(caps as u16).to_le_bytes());
    p.extend_from_slice(&[45, 2, 0]);
    p.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
    p.push(21);
    p.extend_from_slice(&[0; 10]);
    p.extend_from_slice(&[9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 0]);
    p.extend_from_slice(b"mysql_native_password\0");
    let mut pkt = (p.len() as u32).to_le_bytes().to_vec();
    pkt[3] = 0;
    pkt.extend_from_slice(&p);
    let (port, h) = scripted(0, pkt);
    let t = run_here(&format!(
        "-w ycsb --target mysql://u:p@127.0.0.1:{port}/db?tls=true"
    ));
    let line = t
        .lines()
        .find(|l| l.contains("cannot log in"))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(line.contains("TLS"), "{line}");
    // At most a COM_QUIT (the mysql crate's goodbye): no login packet.
    let sent = h.join().unwrap();
    assert!(
        sent.is_empty() || sent == [1, 0, 0, 0, 1],
        "the client went on in clear: {sent:?}"
    );
}
