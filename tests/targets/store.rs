//! A PostgreSQL results store that holds many runs: a report reads only
//! the runs it shows (copied run by run into memory), so it gives the
//! same report, and takes about as long, on a store of thousands of runs
//! as on a store of one. `bench/report-store.sh` runs the ignored test
//! below with 10,000 runs and prints the times.

use std::process::Output;
use std::time::Instant;

use super::common;
use super::fixture::{self, Net, PASSWORD, Proc};

/// A PostgreSQL in the server namespace with an empty `results` database
/// owned by `bench`, and a scratch directory for the engine's files.
struct Store {
    // Stopped before its namespaces go.
    pg: Proc,
    net: Net,
    url: String,
    dir: tempfile::TempDir,
}

impl Store {
    fn new() -> Result<Store, String> {
        let net = Net::new()?;
        let pg = fixture::postgres(&net)?;
        fixture::postgres_as(
            &pg,
            "postgres",
            "postgres",
            "CREATE DATABASE results OWNER bench",
        )?;
        Ok(Store {
            url: format!("postgres://bench@{}:5432/results", net.server_ip),
            pg,
            net,
            dir: tempfile::tempdir().map_err(|e| e.to_string())?,
        })
    }

    /// `ampbench ARGS` in the client namespace: its output and seconds.
    fn amp(&self, args: &[&str]) -> (String, f64) {
        let t0 = Instant::now();
        let o: Output = self
            .net
            .in_client(common::BIN)
            .args(args)
            .env("AMPBENCH_RESULTS_PASSWORD", PASSWORD)
            .output()
            .expect("run ampbench");
        let secs = t0.elapsed().as_secs_f64();
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            o.status.success(),
            "ampbench {args:?}: {out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        (out, secs)
    }

    /// A small run (LMDB, YCSB load and c) recorded in the store: seconds.
    fn one_run(&self) -> f64 {
        let dir = self.dir.path().to_str().expect("path");
        self.amp(&[
            "run",
            "-w",
            "ycsb",
            "-e",
            "lmdb",
            "--steps",
            "load,c",
            "-p",
            "recordcount=2000",
            "--duration",
            "2",
            "--warmup",
            "0",
            "--interval",
            "1",
            "--storage",
            "native",
            "--dir",
            dir,
            "--results",
            &self.url,
        ])
        .1
    }

    /// `report --run RUN --format FORMAT`: the report and its seconds.
    fn report(&self, run: &str, format: &str) -> (String, f64) {
        self.amp(&[
            "report",
            "--results",
            &self.url,
            "--run",
            run,
            "--format",
            format,
        ])
    }

    fn sql(&self, q: &str) -> String {
        fixture::postgres_as(&self.pg, "bench", "results", q).expect("query the store")
    }

    fn int(&self, q: &str) -> i64 {
        let v = self.sql(q);
        v.trim().parse().unwrap_or_else(|_| panic!("{q}: {v}"))
    }

    /// Copies run `base` `n` times by SQL, in one transaction: the copies
    /// get the run ids after the last, and each copy's steps the base's
    /// ids shifted by the store's step id span (so every table's rows
    /// follow). Copies have no invocation and their name (a run of
    /// several clients) gets `#k`, which the store keeps unique.
    fn duplicate(&self, base: i64, n: usize) {
        let last = self.int("SELECT max(id) FROM runs");
        let span = self.int("SELECT max(id) + 1 FROM steps");
        let tables = self.sql(
            "SELECT table_name FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' \
             AND table_name <> 'schema_version'",
        );
        // Parents before children: the references are checked.
        let mut order: Vec<&str> = tables.lines().map(str::trim).collect();
        let rank = |t: &str| match t {
            "runs" => 0,
            "steps" | "run_clients" | "barriers" => 1,
            _ => 2,
        };
        order.sort_by_key(|t| rank(t));
        let mut sql = String::from("BEGIN;\n");
        for t in order {
            let cols = self.sql(&format!(
                "SELECT column_name FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = '{t}' \
                 ORDER BY ordinal_position"
            ));
            let cols: Vec<&str> = cols.lines().map(str::trim).collect();
            let exprs: Vec<String> = cols
                .iter()
                .map(|&c| match (t, c) {
                    ("runs", "id") | (_, "run_id") => format!("{last} + k"),
                    ("runs", "invocation") => "NULL".into(),
                    ("runs", "name") => "name || '#' || k".into(),
                    ("steps", "id") => format!("id + k * {span}"),
                    (_, "step_id") => format!("step_id + k * {span}"),
                    _ => format!("\"{c}\""),
                })
                .collect();
            let filter = match rank(t) {
                0 => format!("id = {base}"),
                1 => format!("run_id = {base}"),
                _ => format!("step_id IN (SELECT id FROM steps WHERE run_id = {base})"),
            };
            let names: Vec<String> = cols.iter().map(|c| format!("\"{c}\"")).collect();
            sql += &format!(
                "INSERT INTO {t} ({}) SELECT {} FROM {t}, generate_series(1, {n}) AS k WHERE {filter};\n",
                names.join(", "),
                exprs.join(", ")
            );
        }
        // New runs and steps continue after the copies.
        for t in ["runs", "steps"] {
            sql += &format!(
                "SELECT setval(pg_get_serial_sequence('{t}', 'id'), (SELECT max(id) FROM {t}));\n"
            );
        }
        sql += "COMMIT;";
        self.sql(&sql);
    }
}

fn store_or_skip() -> Option<Store> {
    match Store::new() {
        Ok(s) => Some(s),
        Err(why) => {
            ampbench::testing::skip(
                "targets",
                &format!("no namespaces or PostgreSQL here: {why}"),
            );
            None
        }
    }
}

/// A run's report is the same from a store of one run as from a store
/// of 51; `latest` is the newest copy, with the copied steps' figures;
/// and `copy` with no `--run` still takes every run.
#[test]
fn a_report_reads_the_runs_it_shows() {
    let Some(s) = store_or_skip() else {
        return;
    };
    s.one_run();
    // The run made the indexes a reader needs, valid.
    assert_eq!(
        s.int(
            "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
             WHERE i.indisvalid AND c.relname IN ('steps_by_run', 'samples_by_step', 'engine_stats_by_step')"
        ),
        3
    );
    let (alone, _) = s.report("1", "json");
    let (alone_text, _) = s.report("1", "text");
    s.duplicate(1, 50);
    assert_eq!(s.int("SELECT count(*) FROM runs"), 51);
    let (among, _) = s.report("1", "json");
    assert!(alone == among, "run 1's report changed with 50 more runs");
    assert!(s.report("1", "text").0 == alone_text);
    let j = |t: &str| -> serde_json::Value { serde_json::from_str(t).expect("JSON") };
    let (a, l) = (j(&alone), j(&s.report("latest", "json").0));
    assert_eq!(l["run"]["id"], 51, "{}", l["run"]);
    let ops = |v: &serde_json::Value| -> Vec<serde_json::Value> {
        v["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .map(|st| st["ops"].clone())
            .collect()
    };
    assert_eq!(ops(&a), ops(&l), "the copy's steps are the run's");
    assert_eq!(ops(&a).len(), 2, "{a}");
    // The whole store still copies whole.
    let file = s.dir.path().join("all.db");
    s.amp(&[
        "copy",
        "--from",
        &s.url,
        "--to",
        file.to_str().expect("path"),
    ]);
    let c = rusqlite::Connection::open(&file).expect("the copy");
    let runs: i64 = c
        .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        .expect("runs");
    assert_eq!(runs, 51);
}

/// The benchmark: `report --run 1` and `--run latest`, and a run's end
/// (a small run), on a store of one run and on one of
/// AMPBENCH_STORE_RUNS (10,000) runs, each timed ROUNDS (3) times; and,
/// for reference, what reading the whole store costs (`copy` of every
/// run into a file: what a report did before it read run by run).
#[test]
#[ignore = "a benchmark: bench/report-store.sh"]
fn report_over_a_large_store() {
    let Some(s) = store_or_skip() else {
        return;
    };
    let n: usize = std::env::var("AMPBENCH_STORE_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    // Off the line libtest has begun ("test … ").
    println!();
    let times = |f: &dyn Fn() -> f64| -> Vec<f64> { (0..rounds).map(|_| f()).collect() };
    let show = |what: &str, xs: &[f64]| {
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let (lo, hi) = xs
            .iter()
            .fold((f64::MAX, f64::MIN), |(l, h), x| (l.min(*x), h.max(*x)));
        println!(
            "{what}: mean {mean:.3} s (range {lo:.3}-{hi:.3}, {} runs)",
            xs.len()
        );
        mean
    };
    let run_end = show("a small run, store of 1+ runs", &times(&|| s.one_run()));
    let base = 1;
    let r1 = show(
        "report --run 1, store of 1+ runs",
        &times(&|| s.report("1", "text").1),
    );
    let t0 = Instant::now();
    s.duplicate(base, n);
    // A store that grew run by run has been analyzed by autovacuum; one
    // made in a single transaction is analyzed here, as it would be.
    s.sql("ANALYZE");
    let runs = s.int("SELECT count(*) FROM runs");
    let rows = s.int(
        "SELECT (SELECT count(*) FROM figures) + (SELECT count(*) FROM samples) \
         + (SELECT count(*) FROM engine_stats) + (SELECT count(*) FROM intervals)",
    );
    println!(
        "made a store of {runs} runs ({rows} figure, sample, statistics and interval rows) in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let rn = show(
        &format!("report --run 1, store of {runs} runs"),
        &times(&|| s.report("1", "text").1),
    );
    let latest = show(
        &format!("report --run latest, store of {runs} runs"),
        &times(&|| s.report("latest", "text").1),
    );
    let end_n = show(
        &format!("a small run, store of {runs} runs"),
        &times(&|| s.one_run()),
    );
    let file = s.dir.path().join("all.db");
    let (_, whole) = s.amp(&[
        "copy",
        "--from",
        &s.url,
        "--to",
        file.to_str().expect("path"),
    ]);
    println!("reading the whole store (copy of every run into a file): {whole:.1} s");
    println!(
        "ratios, store of {runs} runs over store of 1+: report --run 1 {:.2}, --run latest {:.2}, a run {:.2}",
        rn / r1,
        latest / r1,
        end_n / run_end
    );
}
