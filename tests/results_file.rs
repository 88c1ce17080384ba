//! The results file as input: one of another program, a truncated one,
//! or one from a newer ampbench is a one-line error (exit 2) and is left
//! as it was; a file of the schema before versions were recorded is
//! migrated and reads; a report reads a file while a run writes it.

use crate::common;

use common::{BIN, ok};
use std::process::Command;

fn fixed_copy(dir: &std::path::Path) -> std::path::PathBuf {
    let p = dir.join("fixed.db");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fixed.db"),
        &p,
    )
    .unwrap();
    p
}

#[test]
fn files_that_are_not_ours_are_refused_and_left_alone() {
    let d = tempfile::tempdir().unwrap();
    let text = d.path().join("text.db");
    std::fs::write(&text, "root:x:0:0:root:/root:/bin/bash\n".repeat(200)).unwrap();
    let trunc = d.path().join("trunc.db");
    let full = std::fs::read(fixed_copy(d.path())).unwrap();
    std::fs::write(&trunc, &full[..3000]).unwrap();
    let other = d.path().join("other.db");
    let c = rusqlite::Connection::open(&other).unwrap();
    c.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        .unwrap();
    drop(c);
    let newer = d.path().join("newer.db");
    let c = rusqlite::Connection::open(&newer).unwrap();
    c.execute_batch("CREATE TABLE runs(x); PRAGMA user_version = 99;")
        .unwrap();
    drop(c);
    for (f, says) in [
        (&text, "not a SQLite database"),
        (&trunc, "truncated or damaged"),
        (&other, "not an ampbench results file (no runs table"),
        (&newer, "written by a newer ampbench"),
    ] {
        let before = std::fs::read(f).unwrap();
        for args in [
            vec!["report", "--results", f.to_str().unwrap()],
            vec![
                "run",
                "-e",
                "lmdb",
                "-p",
                "docs=100",
                "--results",
                f.to_str().unwrap(),
            ],
        ] {
            let o = Command::new(BIN).args(&args).output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
            assert!(
                err.contains(f.to_str().unwrap()) && err.contains(says),
                "{err}"
            );
            assert!(!err.contains("panicked"), "{err}");
        }
        assert_eq!(std::fs::read(f).unwrap(), before, "{} changed", f.display());
    }
}

#[test]
fn a_file_of_the_schema_before_versions_is_migrated() {
    let d = tempfile::tempdir().unwrap();
    let f = fixed_copy(d.path());
    // Schema 1: no steps.rep, no rates table, no version (and, as in
    // schema 2 the fixture was written with, no runs.invocation).
    let c = rusqlite::Connection::open(&f).unwrap();
    c.execute_batch(
        "ALTER TABLE steps DROP COLUMN rep; DROP TABLE rates; PRAGMA user_version = 0;",
    )
    .unwrap();
    drop(c);
    let json = ok(&[
        "report",
        "--results",
        f.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 16);
    assert!(
        steps
            .iter()
            .all(|s| s["rep"] == 0 && s["rates"] == serde_json::json!([]))
    );
    let c = rusqlite::Connection::open(&f).unwrap();
    let version: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, ampbench::results::SCHEMA_VERSION);
    assert!(
        c.prepare("SELECT rep FROM steps").is_ok(),
        "steps.rep added"
    );
    assert!(
        c.prepare("SELECT invocation FROM runs").is_ok(),
        "runs.invocation added"
    );
}

#[test]
fn report_reads_while_a_run_writes() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("r.db");
    let mut child = Command::new(BIN)
        .args([
            "run",
            "-e",
            "lmdb",
            "--steps",
            "load,pq.1",
            "--duration",
            "4",
            "--interval",
            "1",
        ])
        .args(["-p", "docs=20000", "--results"])
        .arg(&r)
        .arg("--dir")
        .arg(d.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the measured step has written intervals, then read.
    let t0 = std::time::Instant::now();
    let mut seen = None;
    while t0.elapsed() < std::time::Duration::from_secs(30) && seen.is_none() {
        std::thread::sleep(std::time::Duration::from_millis(300));
        let o = Command::new(BIN)
            .args(["report", "--format", "json", "--results"])
            .arg(&r)
            .output()
            .unwrap();
        if !o.status.success() {
            continue; // the file may not exist yet
        }
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let running = v["run"]["status"] == "running";
        let pq = v["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["step"] == "pq.1" && s["status"] == "running")
            .cloned();
        if let (true, Some(pq)) = (running, pq) {
            if !pq["intervals"].as_array().unwrap().is_empty() {
                seen = Some(pq);
            }
        }
    }
    let st = child.wait().unwrap();
    assert!(st.success());
    let pq = seen.expect("a report during the run saw pq.1 running with intervals");
    assert!(pq["ops_per_sec"].as_f64().unwrap() > 0.0, "{pq}");
}
