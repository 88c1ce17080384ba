//! Theory beside measurement through the real binary: predicted
//! write-amp and space-amp beside the measured ones for every step, and
//! `--sweep` with write-amp per column family.

use crate::common;
use common::{ok, run};

fn extras(res: &std::path::Path, like: &str) -> Vec<(String, String, String, f64)> {
    let c = rusqlite::Connection::open(res).unwrap();
    let mut q = c
        .prepare(
            "SELECT s.engine, s.step, e.name, e.value FROM extras e JOIN steps s ON s.id = e.step_id WHERE e.name LIKE ?1 ORDER BY s.id, e.name",
        )
        .unwrap();
    q.query_map([like], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// LinkBench on RocksDB (4 MB memtables, so the load flushes and
/// compacts) and LMDB: every step has a prediction; the report shows it
/// beside the measurement with an explain line; RocksDB's steps record
/// writes per column family whose sum matches the engine's LOG.
#[test]
fn predictions_and_column_family_writes() {
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let out = ok(&[
        "run",
        "-w",
        "linkbench",
        "-e",
        "rocksdb,lmdb",
        "-p",
        "maxid1=20001",
        "--set",
        "rocksdb.write_buffer_size=4194304",
        "--warmup",
        "0",
        "--duration",
        "2",
        "--threads",
        "2",
        "--results",
        res.to_str().unwrap(),
        "--dir",
        d.path().to_str().unwrap(),
    ]);
    assert!(
        out.contains("write-amp measured (the model's prediction"),
        "{out}"
    );
    // Each predicted step stores its two checks, typed; the short report
    // says in one line how many differ by over 2× (the full report lists
    // them), and -v is what prints the explanation under each step.
    assert!(!out.contains("  explain: "), "{out}");
    assert!(out.contains("\nthe model: "), "{out}");
    let c = rusqlite::Connection::open(&res).unwrap();
    let checks: Vec<(String, String, String, Option<f64>, f64, String)> = c
        .prepare(
            "SELECT s.engine, s.step, k.figure, k.measured, k.predicted, k.verdict
             FROM model_checks k JOIN steps s ON s.id = k.step_id ORDER BY s.id, k.figure",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(checks.len(), 12, "{checks:?}");
    for (e, st, fig, m, p, v) in &checks {
        // The verdict is the ratio's: by hand, from the stored figures.
        let want = match m {
            None => "not-measured",
            Some(m) if *m < 0.01 => "nothing-yet",
            Some(m) if *m > 2.0 * p => "above",
            Some(m) if *m < p / 2.0 => "below",
            Some(_) => "agree",
        };
        assert_eq!(v, want, "{e} {st} {fig}: {m:?} vs {p}");
    }
    let apart = checks
        .iter()
        .filter(|k| k.5 == "above" || k.5 == "below")
        .count();
    let agree = checks.iter().filter(|k| k.5 == "agree").count();
    assert!(
        out.contains(&format!(
            "the model: {agree} of 12 write-amp and space-amp figures agree with its prediction within 2×, {apart} differ by more"
        )),
        "{out}"
    );
    // The model's terms, and the table of what differs, are in the full
    // report (and -v's).
    let full = ok(&["report", "--results", res.to_str().unwrap()]);
    assert!(
        full.contains(&format!("differ by more than 2× ({apart} of 12 figures;")),
        "{full}"
    );
    assert!(
        full.contains("lsm-leveled: write-amp wal 1 + flush"),
        "{full}"
    );
    assert!(
        full.contains("cow-btree: write-amp log 1 + leaf written anew"),
        "{full}"
    );
    let pred = extras(&res, "pred_write_amp");
    assert_eq!(pred.len(), 6, "{pred:?}");
    assert!(pred.iter().all(|p| p.3 > 1.0), "{pred:?}");
    // Every column family the load wrote is listed, flushed or still in
    // its memtables; the link table's 4 MB memtables flushed.
    let flush = extras(&res, "cf.%.flush_mb");
    let mem = extras(&res, "cf.%.memtable_mb");
    let at_load = |v: &[(String, String, String, f64)], name: &str| {
        v.iter()
            .find(|e| e.0 == "rocksdb" && e.1 == "load" && e.2 == name)
            .map(|e| e.3)
    };
    assert!(
        at_load(&flush, "cf.link.flush_mb").unwrap() > 4.0,
        "{flush:?}"
    );
    for t in ["count", "node", "link"] {
        let f = at_load(&flush, &format!("cf.{t}.flush_mb")).unwrap();
        let m = at_load(&mem, &format!("cf.{t}.memtable_mb")).unwrap();
        assert!(f + m > 0.0, "{t}: {flush:?} {mem:?}");
    }
    // The first table is RocksDB's default family: reported by its name.
    assert!(
        !flush.iter().any(|e| e.2.starts_with("cf.default.")),
        "{flush:?}"
    );
    assert!(
        at_load(&flush, "cf.node.flush_mb").unwrap() > 0.0,
        "{flush:?}"
    );
    let wa = extras(&res, "cf.%.w_amp");
    assert!(!wa.is_empty() && wa.iter().all(|e| e.3 >= 1.0), "{wa:?}");
}

/// `--sweep` on RocksDB over a good and a refused compaction_pri: the
/// refused one fails its run only (recorded), the good one runs, and the
/// sweep table has a row per setting. Unknown keys and engines are
/// refused up front, naming them.
#[test]
fn sweep_runs_each_setting_and_survives_a_refused_value() {
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let o = run(&[
        "run",
        "-w",
        "ycsb",
        "-e",
        "rocksdb",
        "--steps",
        "load,a",
        "-p",
        "recordcount=3000",
        "--sweep",
        "rocksdb.compaction_pri=kOldestSmallestSeqFirst,kNoSuchPriority,kMinOverlappingRatio",
        "--warmup",
        "0",
        "--duration",
        "1",
        "--results",
        res.to_str().unwrap(),
        "--dir",
        d.path().to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    // One run failed, so the run's status is failed.
    assert!(!o.status.success(), "{out}");
    assert!(err.contains("sweep: 3 engine runs"), "{err}");
    assert!(
        out.contains("rocksdb[compaction_pri=kNoSuchPriority]: invalid option"),
        "{out}"
    );
    assert!(out.contains("\nsweep: a row per setting"), "{out}");
    let c = rusqlite::Connection::open(&res).unwrap();
    let steps: Vec<(String, String, String)> = c
        .prepare("SELECT engine, step, status FROM steps ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let of = |e: &str| steps.iter().filter(|s| s.0 == e).collect::<Vec<_>>();
    let good = of("rocksdb[compaction_pri=kOldestSmallestSeqFirst]");
    assert_eq!(good.len(), 2, "{steps:?}");
    assert!(good.iter().all(|s| s.2 == "done"), "{steps:?}");
    assert_eq!(of("rocksdb[compaction_pri=kMinOverlappingRatio]").len(), 2);
    let bad = of("rocksdb[compaction_pri=kNoSuchPriority]");
    assert_eq!(bad.len(), 1);
    assert_eq!((bad[0].1.as_str(), bad[0].2.as_str()), ("open", "failed"));
    // Bad input is refused before anything runs, in one line naming it.
    for (arg, names) in [
        ("rocksdb.no_such_option=1,2", "rocksdb.no_such_option"),
        ("lmdb.mapsize=1", "lmdb is not among"),
        ("rocksdb.compaction_pri", "ENGINE.KEY=v1,v2"),
    ] {
        let o = run(&["run", "-w", "ycsb", "-e", "rocksdb", "--sweep", arg]);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && e.contains(names), "{arg}: {e}");
        assert_eq!(e.trim().lines().count(), 1, "{e}");
    }
    // Past 20 runs, --yes is needed.
    let o = run(&[
        "run",
        "-w",
        "ycsb",
        "-e",
        "rocksdb",
        "--sweep",
        "rocksdb.max_background_jobs=1,2,3,4,5,6,7",
        "--sweep",
        "rocksdb.max_write_buffer_number=2,3,4",
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("21 engine runs") && e.contains("--yes"),
        "{e}"
    );
}

/// A MariaDB option the server does not have is refused before anything
/// starts, naming it; MyRocks column-family options are accepted by name.
#[test]
fn unknown_mariadb_options_are_refused_up_front() {
    let o = run(&[
        "run",
        "-w",
        "ycsb",
        "-e",
        "mariadb-myrocks",
        "--sweep",
        "mariadb-myrocks.no_such_setting=1,2",
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{e}");
    assert!(e.contains("mariadb-myrocks.no_such_setting"), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    let o = run(&[
        "run",
        "-w",
        "ycsb",
        "-e",
        "mariadb-innodb",
        "--set",
        "mariadb-innodb.innodb_no_such=1",
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("mariadb-innodb.innodb_no_such"),
        "{e}"
    );
    // The plan check accepts a column-family option by name.
    let d = tempfile::tempdir().unwrap();
    let plan = d.path().join("p.toml");
    std::fs::write(
        &plan,
        "workload = \"ycsb\"\nengines = [\"mariadb-myrocks\"]\nsweep = [\"mariadb-myrocks.compaction_pri=kOldestSmallestSeqFirst,kMinOverlappingRatio\"]\n[set.mariadb-myrocks]\nrocksdb_block_size = \"8192\"\n",
    )
    .unwrap();
    let cfgs = ampbench::cli::check_plan(&plan).unwrap();
    assert_eq!(cfgs[0].sweep.len(), 1);
    assert_eq!(cfgs[0].sweep[0].values.len(), 2);
}
