//! `--slice`: steps reported as consecutive slices of whole intervals,
//! stored per slice and printed with a last/first line.

use crate::common;
use common::{ok, run};

/// A 3-second step at 0.25 s intervals in 1-second slices: three slices,
/// whose operations add up to the step's and whose figures are stored.
#[test]
fn slices_add_up_to_the_step() {
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let out = ok(&[
        "run",
        "-w",
        "ycsb",
        "-e",
        "lmdb",
        "--steps",
        "c",
        "-p",
        "recordcount=2000",
        "--warmup",
        "0",
        "--duration",
        "3s",
        "--interval",
        "250ms",
        "--slice",
        "1s",
        "--threads",
        "1",
        "--storage",
        "native",
        "--results",
        res.to_str().unwrap(),
        "--dir",
        d.path().to_str().unwrap(),
    ]);
    assert!(out.contains("per slice of 1s (--slice)"), "{out}");
    assert!(out.contains("last/first"), "{out}");
    let c = rusqlite::Connection::open(&res).unwrap();
    let rows: Vec<(String, i64, f64, f64, i64, bool)> = c
        .prepare(
            "SELECT s.step, l.idx, l.t0, l.t1, l.ops, l.partial FROM slices l JOIN steps s ON s.id = l.step_id ORDER BY s.id, l.idx",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let c_rows: Vec<_> = rows.iter().filter(|r| r.0 == "c").collect();
    assert_eq!(c_rows.len(), 3, "{rows:?}");
    for (i, r) in c_rows.iter().enumerate() {
        assert_eq!(r.1, i as i64);
        assert!(
            (r.3 - r.2 - 1.0).abs() < 0.2,
            "slice {i} lasts {}",
            r.3 - r.2
        );
        assert!(r.4 > 0, "slice {i} did no work");
    }
    assert!(!c_rows[0].5 && !c_rows[1].5);
    let step_ops: f64 = c
        .query_row(
            "SELECT f.value FROM figures f JOIN steps s ON s.id = f.step_id WHERE s.step = 'c' AND f.interval_idx = -1 AND f.name = 'ops'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let sum: i64 = c_rows.iter().map(|r| r.4).sum();
    assert_eq!(sum as f64, step_ops);
    // Every slice has its own figures (-2 - idx), ops/s among them.
    let n: i64 = c
        .query_row(
            "SELECT count(*) FROM figures f JOIN steps s ON s.id = f.step_id WHERE s.step = 'c' AND f.interval_idx <= -2 AND f.name = 'ops_per_sec' AND f.value > 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 3);
    // The JSON report carries them.
    let js = ok(&[
        "report",
        "--results",
        res.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&js).unwrap();
    let step = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == "c")
        .unwrap();
    assert_eq!(step["slices"].as_array().unwrap().len(), 3);
}

/// A slice shorter than the interval is refused, naming both flags.
#[test]
fn a_slice_shorter_than_an_interval_is_refused() {
    let o = run(&[
        "run",
        "-w",
        "ycsb",
        "-e",
        "null",
        "--slice",
        "1s",
        "--interval",
        "2s",
    ]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("--slice") && e.contains("--interval"), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
}
