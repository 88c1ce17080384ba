//! `--repeat N`: each (engine, step) runs N times, engines interleaved;
//! reports show means with 95% intervals, ratio tables mark ratios whose
//! interval includes 1, and no ratio is printed over a base below its
//! noise floor (a read-only step writes nothing).

use crate::common;

use common::ok;

/// (engine, step, rep) of every step, in run order.
fn steps(results: &std::path::Path) -> Vec<(String, String, i64)> {
    let c = rusqlite::Connection::open(results).unwrap();
    let mut q = c
        .prepare("SELECT engine, step, rep FROM steps ORDER BY ordinal")
        .unwrap();
    q.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

#[test]
fn repeats_interleave_engines_and_print_intervals() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("r.db");
    let out = ok(&[
        "run",
        "-e",
        "rocksdb,lmdb",
        "--steps",
        "load,pq.1",
        "--duration",
        "1",
        "--warmup",
        "0",
        "-p",
        "docs=20000",
        "--repeat",
        "3",
        // The full report at the end (ratios per figure, intervals).
        "-v",
        "--results",
        results.to_str().unwrap(),
        "--dir",
        dir.path().to_str().unwrap(),
    ]);
    // Fresh databases, engines interleaved, the order reversed every other
    // repetition.
    let s = steps(&results);
    let engines: Vec<(&str, i64)> = s
        .iter()
        .filter(|(_, st, _)| st == "load")
        .map(|(e, _, r)| (e.as_str(), *r))
        .collect();
    assert_eq!(
        engines,
        [
            ("rocksdb", 0),
            ("lmdb", 0),
            ("lmdb", 1),
            ("rocksdb", 1),
            ("rocksdb", 2),
            ("lmdb", 2)
        ]
    );
    assert!(out.contains("over 3 repetitions"), "{out}");
    // Means with intervals: "mean±half".
    let row = out
        .lines()
        .find(|l| l.starts_with("lmdb") && l.contains(" pq.1 ") && l.contains('±'))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        row.split_whitespace().nth(2).unwrap().contains('±'),
        "{row}"
    );
    // The ratio table: pq.1 writes nothing, so its wKB/o ratio is -*.
    let ratio = out
        .lines()
        .skip_while(|l| !l.starts_with("ratios to rocksdb"))
        .find(|l| l.starts_with("lmdb") && l.contains(" pq.1 "))
        .unwrap_or_else(|| panic!("{out}"));
    let cells: Vec<&str> = ratio.split_whitespace().collect();
    assert_eq!(
        cells[6], "-*",
        "wKB/o over a base that writes nothing: {ratio}"
    );
    assert!(out.contains("95% intervals of those ratios"), "{out}");
    // A ratio is marked ~ exactly when its interval includes 1.
    let ivs = out
        .lines()
        .skip_while(|l| !l.starts_with("95% intervals of those ratios"))
        .find(|l| l.starts_with("lmdb") && l.contains(" pq.1 "))
        .unwrap();
    let ops_iv: Vec<f64> = ivs
        .split_whitespace()
        .nth(2)
        .unwrap()
        .split('-')
        .map(|v| v.parse().unwrap())
        .collect();
    let crosses = ops_iv[0] <= 1.0 && ops_iv[1] >= 1.0;
    assert_eq!(cells[2].ends_with('~'), crosses, "{ratio}\n{ivs}");
    // JSON keeps every repetition.
    let json = ok(&[
        "report",
        "--results",
        results.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["steps"].as_array().unwrap().len(), 12);
}

#[test]
fn reuse_repeats_steps_on_one_database_and_loads_once() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("r.db");
    ok(&[
        "run",
        "-e",
        "lmdb",
        "--steps",
        "load,pq.1",
        "--duration",
        "0.5",
        "--warmup",
        "0",
        "-p",
        "docs=5000",
        "--repeat",
        "2",
        "--reuse",
        "--results",
        results.to_str().unwrap(),
        "--dir",
        dir.path().to_str().unwrap(),
    ]);
    let s: Vec<(String, i64)> = steps(&results)
        .into_iter()
        .map(|(_, st, r)| (st, r))
        .collect();
    assert_eq!(
        s,
        [("load".into(), 0), ("pq.1".into(), 0), ("pq.1".into(), 1)]
    );
    let o = common::run(&[
        "run",
        "-e",
        "lmdb",
        "--reuse",
        "--results",
        results.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--reuse needs --repeat"));
}
