//! Galera as the distributed target: a cluster of three nodes that
//! ampbench starts itself (`-e mariadb-galera`), and one the test starts
//! (three namespaces) that two clients reach through its endpoints. In
//! both, LinkBench's requesters meet certification conflicts that are
//! retried and counted per operation, and the consistency check runs on
//! every node.

use std::process::Command;

use super::clients::{Serve, World, client_rows, latest_run, step, text};
use super::common;
use super::fixture::PASSWORD;

/// The step's notes.
fn notes(s: &serde_json::Value) -> Vec<String> {
    s["notes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|n| n.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The sum of the step's `retries.*` figures, and whether it has any.
fn retries(s: &serde_json::Value) -> Option<f64> {
    let e = s["extras"].as_object()?;
    let r: Vec<f64> = e
        .iter()
        .filter(|(k, _)| k.starts_with("retries."))
        .filter_map(|(_, v)| v.as_f64())
        .collect();
    (!r.is_empty()).then(|| r.iter().sum())
}

/// The text report's Galera row of `step`: (write sets per op, KB
/// replicated per op, KB received per op, certification failures,
/// brute-force aborts).
fn replication(report: &str, step: &str) -> (f64, f64, f64, f64, f64) {
    let row = report
        .lines()
        .skip_while(|l| !l.starts_with("Galera replication per step"))
        .find(|l| l.trim_end().ends_with(&format!(" {step}")))
        .unwrap_or_else(|| panic!("no replication row for {step}:\n{report}"));
    let f: Vec<f64> = row
        .split_whitespace()
        .take(6)
        .map(|v| v.parse().expect(row))
        .collect();
    eprintln!("galera, {step}: {row}");
    (f[1], f[2], f[3], f[4], f[5])
}

/// Each node's check in the notes says 0 mismatches.
fn every_node_checked(notes: &[String], nodes: &[&str], what: &str) {
    let line = notes
        .iter()
        .find(|n| n.contains(what) && n.contains("every node"))
        .unwrap_or_else(|| panic!("no check on every node: {notes:?}"));
    for n in nodes {
        assert!(line.contains(&format!("{n}: 0")), "{n} in {line}");
    }
}

#[test]
fn a_galera_cluster_ampbench_starts() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        ampbench::testing::skip(
            "a_galera_cluster_ampbench_starts",
            "not root: the cluster's private network needs it",
        );
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let results = d.path().join("r.db");
    let r = results.to_str().unwrap();
    let dir = d.path().to_str().unwrap();
    // LinkBench: four requesters for 6 s over the three nodes (what is
    // checked is counted, not timed: consistency, replication, retries).
    let t0 = std::time::Instant::now();
    let degrees = common::small_degrees(d.path());
    let o = common::run(&[
        "run",
        "-e",
        "mariadb-galera",
        "-w",
        "linkbench",
        "-p",
        "maxid1=2001",
        "-p",
        &degrees,
        "--threads",
        "4",
        "--warmup",
        "0",
        "--duration",
        "6",
        "--results",
        r,
        "--dir",
        dir,
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    eprintln!("galera linkbench: {:.1} s", t0.elapsed().as_secs_f64());
    let pids = t
        .lines()
        .find_map(|l| l.split("(pid ").nth(1))
        .expect("the engine line");
    assert_eq!(pids.split(", ").count(), 3, "three servers: {pids}");
    let j = common::report_json(r, "latest");
    let req = step(&j, "request");
    assert_eq!(req["status"], "done", "{req}");
    assert_eq!(
        req["extras"]["consistency_mismatches"].as_f64(),
        Some(0.0),
        "{req}"
    );
    every_node_checked(
        &notes(req),
        &["node1", "node2", "node3"],
        "consistency check",
    );
    let retried = retries(req).expect("retries counted per operation");
    // The cluster's replication, summed over the nodes: every write set
    // one node replicates, the two others receive.
    let report = common::ok(&["report", "--results", r]);
    let (ws, repl, recv, cert, bf) = replication(&report, "request");
    assert!(ws > 0.0, "no write set replicated");
    assert!(
        (recv / repl - 2.0).abs() < 0.2,
        "received {recv} KB/op against replicated {repl} KB/op"
    );
    eprintln!(
        "galera request: {retried} retries; {cert} certification failures, {bf} brute-force aborts"
    );
    // A conflict a node's client saw is one the workload retried.
    assert!(
        cert == 0.0 || retried > 0.0,
        "{cert} cert failures, no retry"
    );

    // Nothing of the cluster is left running.
    let left: Vec<u32> = common::working_in(d.path());
    assert!(left.is_empty(), "left running: {left:?}");
    let o = Command::new("pgrep")
        .args(["-f", &format!("defaults-file={dir}")])
        .output()
        .unwrap();
    assert!(o.stdout.is_empty(), "servers left: {}", text(&o));
}

#[test]
fn two_clients_on_three_galera_nodes() {
    let w = match World::serving(2, Serve::Galera) {
        Ok(w) => w,
        Err(why) => {
            ampbench::testing::skip(
                "two_clients_on_three_galera_nodes",
                &format!("no namespaces or servers here: {why}"),
            );
            return;
        }
    };
    let d = tempfile::tempdir().unwrap();
    let degrees = common::small_degrees(d.path());
    let before: Vec<u64> = w.db.iter().map(super::cluster::connections).collect();
    let t0 = std::time::Instant::now();
    // LinkBench, four requesters per client, over the three endpoints.
    let args = |k: usize| -> Vec<String> {
        format!(
            "run -w linkbench -p maxid1=2001 -p {degrees} --threads 4 --warmup 0 --duration 4 --interval 2 \
             --target {} --results {} --clients 2 --client {k} --run-name galera",
            w.target, w.results
        )
        .split_whitespace()
        .map(String::from)
        .collect()
    };
    for (k, o) in w.together(&[0, 1], args, |_| Vec::new()).iter().enumerate() {
        let t = text(o);
        assert!(o.status.success(), "client {k}:\n{t}");
        assert!(!t.contains(PASSWORD), "a password was printed:\n{t}");
    }
    eprintln!("galera, 2 clients: {:.1} s", t0.elapsed().as_secs_f64());
    let run = latest_run(&w);
    let j: serde_json::Value = serde_json::from_str(&w.report(run, "json")).expect("JSON");
    assert_eq!(j["run"]["status"], "done", "{}", j["run"]);
    let nodes: Vec<String> = w.net.ips[2..5]
        .iter()
        .map(|ip| format!("{ip}:3306"))
        .collect();
    let names: Vec<&str> = nodes.iter().map(String::as_str).collect();
    let rows = client_rows(&j, "request");
    assert_eq!(rows.len(), 2);
    let merged = step(&j, "request");
    assert_eq!(
        merged["extras"]["consistency_mismatches"].as_f64(),
        Some(0.0),
        "{merged}"
    );
    // Each client checked every node.
    let all_notes = notes(merged);
    let checks: Vec<&String> = all_notes
        .iter()
        .filter(|n| n.contains("consistency check on every node"))
        .collect();
    assert_eq!(checks.len(), 2, "{all_notes:?}");
    for c in checks {
        for n in &names {
            assert!(c.contains(&format!("{n}: 0 in")), "{n} in {c}");
        }
    }
    assert!(retries(merged).is_some(), "retries counted: {merged}");
    let txt = w.report(run, "text");
    let (ws, ..) = replication(&txt, "request");
    assert!(ws > 0.0, "no write set replicated");
    // The insert benchmark over the endpoints, each client its own
    // tables, its check on every node.
    let ins = |k: usize| -> Vec<String> {
        format!(
            "run -w insert --target {} --results {} --clients 2 --client {k} --run-name ins \
             -p load_rows=3000 -p i1_rows=300 -p i2_rows=100 --duration 2 --warmup 0 \
             --steps l.i0,l.x,l.i1",
            w.target, w.results
        )
        .split_whitespace()
        .map(String::from)
        .collect()
    };
    for (k, o) in w.together(&[0, 1], ins, |_| Vec::new()).iter().enumerate() {
        assert!(o.status.success(), "insert client {k}:\n{}", text(o));
    }
    let j: serde_json::Value =
        serde_json::from_str(&w.report(latest_run(&w), "json")).expect("JSON");
    let checked = step(&j, "l.i1");
    assert_eq!(
        checked["extras"]["index_mismatches"].as_f64(),
        Some(0.0),
        "{checked}"
    );
    let n = notes(checked);
    let lines: Vec<&String> = n.iter().filter(|l| l.contains("check:")).collect();
    assert_eq!(lines.len(), 2, "{n:?}");
    for l in lines {
        for node in &names {
            assert!(l.contains(&format!("{node}: 0")), "{node} in {l}");
        }
    }
    // Workers' connections went to every node in turn.
    let after: Vec<u64> = w.db.iter().map(super::cluster::connections).collect();
    for (i, (a, b)) in before.iter().zip(&after).enumerate() {
        eprintln!("node {}: {} connections in the run", i + 1, b - a);
        assert!(b - a >= 4, "node {} received {} connections", i + 1, b - a);
    }
    for p in &w.db {
        let left = super::cluster::node_root(p, "SHOW DATABASES LIKE 'ampbench%'").unwrap();
        assert_eq!(left.trim(), "", "ampbench left a database");
    }
}
