//! The concurrency sweep (`--threads 1,2,4`) through the real binary.

mod common;
use common::ok;

/// `--threads 1,2,4` runs each multi-threaded step at every level (named
/// `pq.n@N`), leaves single-threaded steps alone, and the report fits the
/// Universal Scalability Law to the levels.
#[test]
fn thread_sweep_runs_every_level_and_fits_usl() {
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let out = ok(&[
        "run",
        "-e",
        "lmdb",
        "--steps",
        "load,pq.1,pq.n",
        "-p",
        "docs=2000",
        "--threads",
        "1,2,4",
        "--warmup",
        "0",
        "--duration",
        "0.3",
        "--storage",
        "native",
        "--results",
        res.to_str().unwrap(),
        "--dir",
        d.path().to_str().unwrap(),
    ]);
    for s in ["pq.n@1", "pq.n@2", "pq.n@4"] {
        assert!(out.contains(&format!("  {s} ")), "{s} missing: {out}");
    }
    assert!(!out.contains("pq.1@"), "{out}");
    let c = rusqlite::Connection::open(&res).unwrap();
    let mut q = c
        .prepare("SELECT spec FROM steps WHERE step LIKE 'pq.n@%' ORDER BY id")
        .unwrap();
    let threads: Vec<i64> = q
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|s| {
            serde_json::from_str::<serde_json::Value>(&s.unwrap()).unwrap()["threads"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(threads, vec![1, 2, 4]);
    assert!(out.contains("lmdb pq.n\n"), "{out}");
    assert!(out.contains("USL: λ = "), "{out}");
}
