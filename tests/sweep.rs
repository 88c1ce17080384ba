//! The concurrency sweep (`--threads 1,2,4`) and the storage sweep
//! (`--storage dedicated,custom`) through the real binary.

use crate::common;
use common::{interval_iops, ok, run_config};

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
        // Each step's line as it ends (the test counts them).
        "-v",
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

/// `--storage dedicated,custom --iops 300`: one device, the load once at
/// the first class, every later step at each class (`ows.1@custom`); the
/// device did at most 330 writes/s in the capped step's intervals and
/// more than that unthrottled; each class was probed and recorded; no
/// throttle rule is left.
#[test]
fn storage_sweep_runs_later_steps_at_every_class() {
    // One device test at a time, in every test binary.
    let _device = common::device_lock();
    if let Err(why) = ampbench::setup::storage::check_abilities(ampbench::setup::storage::Fs::Ext4)
    {
        ampbench::testing::skip("sweep", &format!("no dedicated device here: {why}"));
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let out = ok(&[
        "run",
        "-e",
        "rocksdb,lmdb",
        "--steps",
        "load,ows.1",
        "-p",
        "docs=20000",
        "--storage",
        "dedicated,custom",
        "--iops",
        "300",
        "--mbps",
        "40",
        "--device-size",
        "2GB",
        // Its probe's figures are checked: the phase a run takes
        // whatever AMPBENCH_STORAGE_PROBE says.
        "--storage-probe",
        "1",
        "--warmup",
        "0",
        "--duration",
        "3",
        "--interval",
        "1",
        // Each step's line as it ends (the test counts them).
        "-v",
        "--results",
        res.to_str().unwrap(),
        "--dir",
        d.path().to_str().unwrap(),
    ]);
    assert!(out.contains("loads run at dedicated"), "{out}");
    for want in ["ows.1@dedicated", "ows.1@custom"] {
        let lines = out
            .lines()
            .filter(|l| l.starts_with(&format!("  {want} ")))
            .count();
        assert_eq!(lines, 2, "{want}: {out}");
    }
    assert!(!out.contains("load@"), "{out}");
    let rows = interval_iops(&res);
    for engine in ["rocksdb", "lmdb"] {
        let of = |step: &str| {
            rows.iter()
                .filter(|r| r.0 == engine && r.1 == step && r.4 >= 0.5)
                .map(|r| r.3)
                .collect::<Vec<f64>>()
        };
        let (free, capped) = (of("ows.1@dedicated"), of("ows.1@custom"));
        assert!(!capped.is_empty() && !free.is_empty(), "{rows:?}");
        assert!(
            capped.iter().all(|w| *w <= 330.0),
            "{engine}: capped writes/s {capped:?}"
        );
        assert!(
            free.iter().any(|w| *w > 400.0),
            "{engine}: unthrottled writes/s {free:?}"
        );
    }
    let cfg = run_config(&res, 1);
    let m = &cfg["storage_effective"]["measured"];
    let rate = |c: &str, qd: &str| m[c][qd]["ops_per_sec"].as_f64().unwrap_or(0.0);
    assert!(
        rate("custom", "read_qd1") > 100.0 && rate("custom", "read_qd1") < 330.0,
        "{m}"
    );
    assert!(rate("custom", "read_qd32") < 330.0, "{m}");
    // Unthrottled: well over the 300 IOPS cap at depth. Not at QD1: with
    // other test binaries writing the same host disk, a lone direct read
    // through the loop device took 3.8 ms in CI (266/s), uncapped.
    assert!(rate("dedicated", "read_qd32") > 1000.0, "{m}");
    let left = common::stray_throttle_rules(common::storage_pid(&out));
    assert!(left.is_empty(), "throttle left: {left:?}");
}
