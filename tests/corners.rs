//! Both corners in one command (`--bound cache,io`): one run per corner,
//! reported side by side as `cache:ENGINE` and `io:ENGINE`, with each
//! engine's IO-bound figures divided by its cached ones; `ampbench run`
//! with no plan, workload or engine runs the default plan's two corners.

use std::path::Path;

use crate::common;
use common::{ok, run, run_config};

/// Why this machine cannot limit memory, if it cannot.
fn no_memory_cgroup() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    ampbench::setup::cgroup::version()
        .is_none()
        .then(|| "no memory cgroup controller".into())
}

#[test]
fn both_corners_in_one_command() {
    if let Some(why) = no_memory_cgroup() {
        ampbench::testing::skip("corners", &why);
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let out = ok(&[
        "run",
        "-e",
        "lmdb,rocksdb",
        "-p",
        "docs=20000",
        "--bound",
        "cache,io",
        "--memory",
        "128MB",
        "--storage",
        "native",
        "--steps",
        "load,pq.1",
        "--warmup",
        "0",
        "--duration",
        "0.3",
        "--results",
        res.to_str().unwrap(),
        "--dir",
        d.path().to_str().unwrap(),
    ]);
    for want in [
        "== 1 of 2: cached (no memory limit) ==",
        "== 2 of 2: IO-bound (memory limit) ==",
        "memory: unlimited (cached configuration); engine cache 256MB",
        "memory: 128MB for the engine's process",
        "  cached: run 1, memory unlimited (engine cache 256MB), storage native",
        "  IO-bound: run 2, memory 128MB (engine cache 32MB), storage native",
        "ops/s: ratios to cached lmdb among engines of the same memory, and per engine of IO-bound to cached",
        "results: ",
        "(run 1,2)",
    ] {
        assert!(out.contains(want), "missing '{want}' in:\n{out}");
    }
    // The short report's table: a row per step, a column per engine of
    // the cached corner but the base and per engine of the IO-bound
    // corner, each a ratio.
    let table: Vec<&str> = out
        .split("ops/s: ratios to cached lmdb")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    // Issue 47: the corners in words, not `cache:` and `io:`.
    let head: Vec<&str> = table[0]
        .split("  ")
        .filter(|c| !c.is_empty())
        .map(str::trim)
        .collect();
    assert_eq!(
        head,
        [
            "step",
            "cached rocksdb",
            "IO-bound lmdb",
            "IO-bound rocksdb"
        ],
        "{out}"
    );
    for (row, step) in table[1..].iter().zip(["load", "pq.1"]) {
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[0], step, "{out}");
        for c in &cells[1..] {
            assert!(c.parse::<f64>().is_ok_and(|r| r > 0.0), "{row}");
        }
    }
    assert_eq!(table.len(), 3, "{out}");
    let (cache, io) = (run_config(&res, 1), run_config(&res, 2));
    assert_eq!(cache["bound"], "cache");
    assert!(cache["memory"].is_null());
    assert_eq!(io["bound"], "io");
    assert_eq!(io["memory"], 128 << 20);
    assert_eq!(io["cache_bytes"], 32 << 20);
    assert!(
        io["machine"].is_null() && cache["harness"].is_null(),
        "machine facts are stored apart from the config"
    );
    // The IO-bound corner got the engines' IO profile; the cached did not.
    let c = rusqlite::Connection::open(&res).unwrap();
    let spec = |run: i64, engine: &str| -> String {
        c.query_row(
            "SELECT spec FROM steps WHERE run_id = ?1 AND engine = ?2 AND step = 'load'",
            rusqlite::params![run, engine],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert!(spec(2, "lmdb").contains("nordahead"), "{}", spec(2, "lmdb"));
    assert!(spec(2, "rocksdb").contains("\"use_direct_reads\",\"true\""));
    assert!(spec(2, "rocksdb").contains("db_write_buffer_size"));
    assert!(!spec(1, "rocksdb").contains("use_direct_reads"));
    let machine: String = c
        .query_row("SELECT machine FROM runs WHERE id = 1", [], |r| r.get(0))
        .unwrap();
    assert!(
        machine.contains("glibc malloc arenas"),
        "the harness's memory settings are recorded: {machine}"
    );
    // The merged report reads the same labels back, named by ids or as
    // the latest `ampbench run` (both its corners); a later run alone is
    // the latest after it.
    let engines = |run: &str| -> Vec<String> {
        let j = common::report_json(res.to_str().unwrap(), run);
        j["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["engine"].as_str().unwrap().to_string())
            .collect()
    };
    let merged = engines("1,2");
    assert!(merged.contains(&"cache:lmdb".into()) && merged.contains(&"io:rocksdb".into()));
    assert_eq!(engines("latest"), merged);
    let invocation: Option<i64> = c
        .query_row("SELECT invocation FROM runs WHERE id = 2", [], |r| r.get(0))
        .unwrap();
    assert_eq!(invocation, Some(1));
    ok(&[
        "run",
        "-e",
        "lmdb",
        "-p",
        "docs=2000",
        "--steps",
        "load",
        "--storage",
        "native",
        "--results",
        res.to_str().unwrap(),
        "--dir",
        d.path().to_str().unwrap(),
    ]);
    assert_eq!(engines("latest"), ["lmdb"]);
}

/// The default run's plan, as shipped and as compiled in: both corners,
/// the io one limited to 256MB with a quarter of it as cache.
#[test]
fn default_plan_has_both_corners() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("plans");
    let cfgs = ampbench::cli::check_plan(&dir.join("default.toml")).unwrap();
    let corners: Vec<_> = cfgs.iter().map(|c| (c.bound, c.memory)).collect();
    use ampbench::cli::Bound;
    assert_eq!(
        corners,
        [(Bound::Cache, None), (Bound::Io, Some(256 << 20))]
    );
    assert_eq!(cfgs[1].cache_bytes, 64 << 20);
    assert_eq!(
        ampbench::plan::DEFAULT_RUN,
        std::fs::read_to_string(dir.join("default.toml")).unwrap()
    );
}

/// With no plan file, workload or engine, `ampbench run` takes
/// plans/default.toml: both corners. A results path that cannot be
/// written stops it before anything is made, naming the path.
#[test]
fn no_arguments_run_the_default_plan() {
    let o = run(&[
        "run",
        "--storage",
        "native",
        "--results",
        "/proc/no-such-dir/r.db",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(out.contains("== 1 of 2: cached"), "{out}");
    assert!(err.contains("/proc/no-such-dir/r.db"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // Naming an engine leaves the default plan: one corner, no header.
    let o = run(&[
        "run",
        "-e",
        "null",
        "--storage",
        "native",
        "--results",
        "/proc/no-such-dir/r.db",
    ]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("corner"));
    assert!(Path::new("plans/default.toml").exists());
}
