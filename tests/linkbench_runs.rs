//! LinkBench as a user runs it: `ampbench run -w linkbench` end to end on
//! embedded engines and servers, over TCP and unix sockets, with what the
//! run prints and stores checked.

use crate::common;

/// Runs `ampbench run ARGS` with its results file and data under `d`;
/// asserts it succeeded and returns what it printed.
fn run_ok(d: &tempfile::TempDir, args: &[&str]) -> String {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ampbench"))
        .arg("run")
        .args(args)
        .args(["--results", d.path().join("r.db").to_str().unwrap()])
        .args(["--dir", d.path().to_str().unwrap()])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// End to end with the index step, on a KV and a SQL engine: links per
/// node printed, 0 mismatches.
#[test]
fn linkbench_end_to_end() {
    let d = tempfile::tempdir().unwrap();
    let degrees = common::small_degrees(d.path());
    let res = d.path().join("r.db");
    let out = run_ok(
        &d,
        &[
            "-w",
            "linkbench",
            "-e",
            "rocksdb,leveldb,postgres",
            "-p",
            "maxid1=3001",
            "-p",
            &degrees,
            "--threads",
            "2",
            "--warmup",
            "0",
            "--duration",
            "1",
        ],
    );
    assert!(
        out.contains(" links and 2.00 counts per node (fork variant)"),
        "{out}"
    );
    // Statements are counted on the server engine only (said at run time
    // and in the report's notes).
    assert_eq!(out.matches("statements per request: ").count(), 2, "{out}");
    // Said as each request step ends, and again in the report's notes.
    let said = |prefix: &str| out.lines().filter(|l| l.starts_with(prefix)).count();
    assert_eq!(said("  consistency check: 0 mismatches"), 3, "{out}");
    assert_eq!(
        out.lines()
            .filter(|l| l.contains(" request ") && l.contains("consistency check: 0 mismatches"))
            .count(),
        3,
        "{out}"
    );
    // How each engine kept counts exact is said, and stored for the report.
    for said in [
        "concurrency: rocksdb transactions, optimistic (conflicts found at commit)",
        "concurrency: harness lock stripes per (id1, link_type): leveldb has no transactions",
        "concurrency: postgres transactions (deadlocks, lock-wait timeouts, serialization failures and cluster certification conflicts retried)",
    ] {
        assert!(out.contains(said), "{said}: {out}");
    }
    let j = std::process::Command::new(env!("CARGO_BIN_EXE_ampbench"))
        .args([
            "report",
            "--results",
            res.to_str().unwrap(),
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let j: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    let requests: Vec<&serde_json::Value> = j["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["step"] == "request")
        .collect();
    assert_eq!(requests.len(), 3);
    for s in requests {
        for op in ["ADD_LINK", "DELETE_LINK", "UPDATE_LINK"] {
            assert!(s["extras"][format!("retries.{op}")].is_number(), "{s}");
            assert!(s["extras"][format!("retried_ops.{op}")].is_number(), "{s}");
        }
        let notes = s["notes"].as_array().unwrap();
        assert!(
            notes
                .iter()
                .any(|n| n.as_str().unwrap().starts_with("concurrency: "))
        );
    }
}

/// `--transport socket` on both servers: requests run, counts stay exact,
/// and the client's cost per request and its floor are printed.
#[test]
fn linkbench_over_unix_sockets() {
    let d = tempfile::tempdir().unwrap();
    let degrees = common::small_degrees(d.path());
    let out = run_ok(
        &d,
        &[
            "-w",
            "linkbench",
            "-e",
            "mariadb-innodb,postgres",
            "-p",
            "maxid1=1001",
            "-p",
            &degrees,
            "--threads",
            "2",
            "--warmup",
            "0",
            "--duration",
            "1",
            "--transport",
            "socket",
            // The request step's line (its count of requests).
            "-v",
        ],
    );
    assert_eq!(
        out.matches("  clients connect over socket").count(),
        2,
        "{out}"
    );
    assert_eq!(
        out.matches("\n  consistency check: 0 mismatches").count(),
        2,
        "{out}"
    );
    // At run time: the client's cost and its floor, for each server.
    assert_eq!(out.matches("\n  client per request: ").count(), 2, "{out}");
    assert_eq!(out.matches("\n  client floor: ").count(), 2, "{out}");
    // MariaDB counts statements itself: the same as the client counted.
    let line = out
        .lines()
        .find(|l| l.starts_with("  client per request: ") && l.contains("Questions"))
        .unwrap();
    let server: f64 = line
        .split("the server counted ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let ours: f64 = out
        .lines()
        .find(|l| l.starts_with("  statements per request: "))
        .unwrap()
        .split(' ')
        .nth(5)
        .unwrap()
        .parse()
        .unwrap();
    // The server also counts each statement's PREPARE (once per connection)
    // and the status queries around the step: a few dozen statements in
    // all, whatever the number of requests (few on a busy machine).
    let ops: f64 = out
        .lines()
        .find(|l| l.starts_with("  request "))
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let extra = (server - ours) * ops;
    // Both figures are printed to 3 decimals.
    let rounding = 0.001 * ops;
    assert!(
        (-rounding..=80.0 + rounding).contains(&extra),
        "server {server}, client {ours}, {ops} requests: {extra} statements apart: {out}"
    );
}

/// Issue 32: a step that runs again on the same database (here a thread
/// sweep's second level) draws a stream of its own. When it replayed the
/// first level's stream, ADD_LINK found the links it adds already there
/// and every call rolled back to the update path (5.00 statements per
/// ADD_LINK at the later levels against 3.10 at the first, seed 003's
/// storage sweep). Each level's ADD_LINK now costs the same within noise,
/// and the two levels record different seeds.
#[test]
fn a_sweeps_later_levels_do_not_replay_the_first() {
    let d = tempfile::tempdir().unwrap();
    let degrees = common::small_degrees(d.path());
    let out = run_ok(
        &d,
        &[
            "-w",
            "linkbench",
            "-e",
            "postgres",
            "-p",
            "maxid1=3001",
            "-p",
            &degrees,
            "--threads",
            "1,2",
            "--warmup",
            "0",
            "--duration",
            "2",
        ],
    );
    let add_link = common::add_link_statements(&out);
    assert_eq!(add_link.len(), 2, "{out}");
    assert!(
        (add_link[0] - add_link[1]).abs() < 0.4,
        "statements per ADD_LINK by level: {add_link:?}\n{out}"
    );
    let c = rusqlite::Connection::open(d.path().join("r.db")).unwrap();
    let seeds: Vec<String> = c
        .prepare("SELECT spec FROM steps WHERE step LIKE 'request%' ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|r| {
            serde_json::from_str::<serde_json::Value>(&r.unwrap()).unwrap()["seed"].to_string()
        })
        .collect();
    assert_eq!(seeds.len(), 2);
    assert_ne!(seeds[0], seeds[1]);
}
