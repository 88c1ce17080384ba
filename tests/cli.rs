//! The real binary on tiny data sets against real engines.

use std::path::Path;
use std::process::Command;

use crate::common;
use common::{BIN, ok, run, run_config};

const ENGINES: &str = "rocksdb,wiredtiger,lmdb,leveldb,sqlite,null";

fn report_json(results: &Path) -> serde_json::Value {
    let out = ok(&[
        "report",
        "--results",
        results.to_str().unwrap(),
        "--format",
        "json",
    ]);
    serde_json::from_str(&out).expect("report json")
}

fn tiny(w: &str, results: &Path, dir: &Path, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "run",
        "-w",
        w,
        "-e",
        ENGINES,
        "--results",
        results.to_str().unwrap(),
        "--dir",
        dir.to_str().unwrap(),
        "--warmup",
        "0",
        "--duration",
        "0.2",
        "--threads",
        "2",
        // Paced: what is checked is that every step ran and did work;
        // at full speed the 25 timed steps of each engine hold both
        // cores.
        "--rate",
        "5000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// Each workload runs end to end on every KV engine; every step is done
/// and did work (the null engine stores nothing, so its reads find nothing
/// but still count).
#[test]
fn every_workload_on_every_engine() {
    // The workloads at once, each in a directory of its own: their steps
    // are paced, so each run mostly waits.
    std::thread::scope(|s| {
        for (w, p) in [
            ("pattern", vec!["-p", "docs=3000", "-p", "batch=500"]),
            ("ycsb", vec!["-p", "recordcount=2000"]),
            ("micro", vec!["-p", "num=3000"]),
        ] {
            s.spawn(move || every_engine_runs(w, &p));
        }
    });
}

/// Workload `w` (with parameters `p`) on every engine: every step done,
/// with work.
fn every_engine_runs(w: &str, p: &[&str]) {
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let args = tiny(w, &res, d.path(), p);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&args);
    let j = report_json(&res);
    let steps = j["steps"].as_array().unwrap();
    let per_engine = steps.len() / 6;
    assert!(per_engine >= 6, "{w}: {} steps", steps.len());
    for s in steps {
        assert_eq!(
            s["status"], "done",
            "{w} {} {}: {}",
            s["engine"], s["step"], s["error"]
        );
        let ops = s["ops"].as_f64().unwrap();
        let null_read =
            s["engine"] == "null" && w == "pattern" && s["step"].as_str().unwrap().starts_with("r");
        assert!(
            ops > 0.0 || null_read,
            "{w} {} {}: no ops",
            s["engine"],
            s["step"]
        );
    }
}

/// Two steps on RocksDB, then `report --format json` has both with
/// non-null wKB/o, space-amp, write-amp and latencies.
#[test]
fn json_report_has_figures() {
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let out = ok(&[
        "run",
        "-e",
        "rocksdb",
        "--steps",
        "load,owa.1",
        "-p",
        "docs=5000",
        "--duration",
        "0.5",
        "--warmup",
        "0",
        "--results",
        res.to_str().unwrap(),
        "--dir",
        d.path().to_str().unwrap(),
    ]);
    assert!(out.contains("\noperations/second\nstep"), "{out}");
    let j = report_json(&res);
    assert_eq!(j["run"]["versions"]["rocksdb"], "7.8.3");
    assert_eq!(
        j["run"]["seed"].as_i64().unwrap() as u64,
        ampbench::rng::DEFAULT_SEED
    );
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    for s in steps {
        for f in [
            "wkb_per_op",
            "space_amp",
            "write_amp",
            "cpu_us_per_op",
            "ops_per_sec",
            "db_bytes",
            "logical_bytes",
        ] {
            assert!(
                s[f].is_number(),
                "{} {f} = {} ({})",
                s["step"],
                s[f],
                s["not_measured"]
            );
        }
        let lat = s["latency"].as_object().unwrap();
        assert!(!lat.is_empty());
        for (_, l) in lat {
            assert!(l["p99"].as_u64().unwrap() >= l["p50"].as_u64().unwrap());
        }
    }
    assert_eq!(steps[0]["ops"], 5000.0, "load counts documents");
    let logical = steps[0]["logical_bytes"].as_f64().unwrap();
    // 5000 × (32-byte key + ~512-byte value)
    assert!((2_500_000.0..3_000_000.0).contains(&logical), "{logical}");
    let csv = ok(&[
        "report",
        "--results",
        res.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    assert_eq!(csv.lines().count(), 3);
}

/// SIGKILL in the middle of a step: the results file still reads, with the
/// completed intervals and figures recomputed from them.
#[test]
fn sigkill_mid_step_keeps_completed_intervals() {
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let mut child = Command::new(BIN)
        .args([
            "run",
            "-e",
            "rocksdb",
            "--steps",
            "load,owa.1",
            "-p",
            "docs=2000",
            "--warmup",
            "0",
            "--duration",
            "60",
            "--interval",
            "0.3",
            "--storage",
            "native",
        ])
        .args([
            "--results",
            res.to_str().unwrap(),
            "--dir",
            d.path().to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(3));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let j = report_json(&res);
    assert_eq!(j["run"]["status"], "running");
    let steps = j["steps"].as_array().unwrap();
    let owa = steps
        .iter()
        .find(|s| s["step"] == "owa.1")
        .expect("owa.1 recorded");
    assert_eq!(owa["status"], "running");
    let n = owa["intervals"].as_array().unwrap().len();
    assert!(n >= 3, "{n} intervals");
    assert!(owa["ops"].as_f64().unwrap() > 0.0);
    assert!(owa["wkb_per_op"].is_number());
    let text = ok(&["report", "--results", res.to_str().unwrap()]);
    assert!(text.contains("owa.1"));
}

/// Honesty: N synced writes of known size. The step's reported device KB
/// written is within 20% of what /proc/diskstats moved around the whole
/// process, read independently here, on a device only the run writes to.
#[test]
fn device_kb_written_matches_diskstats() {
    let own = match common::OwnDevice::new() {
        Ok(o) => o,
        Err(why) => {
            ampbench::testing::skip(
                "device_kb_written_matches_diskstats",
                &format!("no loop device of its own here: {why}"),
            );
            return;
        }
    };
    let d = tempfile::tempdir().unwrap();
    let dev = ampbench::probe::device::device_for(own.mount.path()).unwrap();
    assert_eq!(format!("/dev/{}", dev.name), own.dev);
    let res = d.path().join("r.db");
    let before = ampbench::probe::diskstats::read(&dev.name).unwrap();
    ok(&[
        "run",
        "-w",
        "micro",
        "-e",
        "rocksdb",
        "--steps",
        "fillseq",
        // Half the syncs of 6,000 × 4 KB (each one waits on the loop
        // device: 19 s), the same bytes.
        "-p",
        "num=3000",
        "-p",
        "value_size=8000",
        "-p",
        "sync=true",
        "--storage",
        "native",
        "--results",
        res.to_str().unwrap(),
        "--dir",
        own.mount.path().to_str().unwrap(),
    ]);
    let after = ampbench::probe::diskstats::read(&dev.name).unwrap();
    let independent_kb = (after.sectors_written - before.sectors_written) as f64 * 512.0 / 1024.0;
    let j = report_json(&res);
    let s = &j["steps"][0];
    let reported_kb = s["wkb_per_op"].as_f64().unwrap() * s["ops"].as_f64().unwrap();
    // 3000 × 8 KB values, synced: at least ~24 MB must have been written.
    assert!(reported_kb > 20_000.0, "reported {reported_kb} KB");
    let ratio = reported_kb / independent_kb;
    assert!(
        (0.8..=1.2).contains(&ratio),
        "reported {reported_kb:.0} KB vs diskstats {independent_kb:.0} KB"
    );
}

/// Bad input: one line naming the thing to fix, exit code 2.
#[test]
fn bad_input_is_one_line_exit_2() {
    for (args, needle) in [
        (vec!["run", "-e", "nosuch"], "nosuch"),
        (
            vec!["run", "--set", "rocksdb.no_such_option=1"],
            "rocksdb.no_such_option",
        ),
        (
            vec!["run", "--set", "wiredtiger.bogus=1"],
            "wiredtiger.bogus",
        ),
        (vec!["run", "--set", "lmdb.bogus=1"], "lmdb.bogus"),
        (vec!["run", "-p", "nokey=1"], "nokey"),
        (vec!["run", "--steps", "nostep"], "nostep"),
        (vec!["run", "--cache", "12XB"], "--cache"),
        (
            vec!["report", "--results", "/nonexistent/r.db"],
            "/nonexistent/r.db",
        ),
        (vec!["run", "--threads", "0"], "--threads"),
        // Issue 31: numbers that passed the checks and panicked later.
        (vec!["run", "--duration", "1e20"], "--duration 1e20"),
        (vec!["run", "--warmup", "1e20"], "--warmup 1e20"),
        (vec!["run", "--warmup-steady", "0"], "--warmup-steady 0"),
        (
            vec!["run", "--warmup-steady", "60", "--rate", "100"],
            "not with --rate",
        ),
        (
            vec!["run", "--warmup", "10", "--warmup-steady", "5"],
            "--warmup-steady 5",
        ),
        (
            vec!["run", "--interval", "20", "--warmup-steady", "40"],
            "must hold three",
        ),
        (
            vec![
                "run",
                "--interval",
                "20",
                "--warmup",
                "65",
                "--warmup-steady",
                "70",
            ],
            "80 s at least",
        ),
        (vec!["run", "--interval", "1e20"], "--interval 1e20"),
        (vec!["run", "--interval", "1e-300"], "--interval"),
        (vec!["run", "--rate", "1e-300"], "--rate"),
        (vec!["run", "--storage-probe", "1e300"], "--storage-probe"),
        (vec!["run", "--storage-probe=-1"], "--storage-probe"),
        (vec!["run", "--threads", "100000000"], "--threads"),
        (
            vec![
                "run",
                "--storage",
                "disk-array",
                "--mbps",
                "18446744073709551615",
            ],
            "--mbps",
        ),
        (
            vec!["crashcheck", "-e", "lmdb", "--window", "1e308h"],
            "--window",
        ),
        (
            vec!["crashcheck", "-e", "lmdb", "--window", "1e300"],
            "--window",
        ),
        (vec!["run", "/dev/zero"], "not a regular file"),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// AMPBENCH_STORAGE_PROBE gives the probe's phase only where neither the
/// flag nor the plan does: a bad value is one line naming the variable;
/// under the flag it is not read; taken, the storage lines say so and
/// the record keeps it.
#[test]
fn the_probe_phase_from_the_environment_is_below_the_flag() {
    let env = |v: &str, args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .env("AMPBENCH_STORAGE_PROBE", v)
            .output()
            .expect("run ampbench")
    };
    for (v, needle) in [
        ("x", "AMPBENCH_STORAGE_PROBE=x"),
        ("50", "AMPBENCH_STORAGE_PROBE 50"),
    ] {
        let o = env(v, &["run", "-e", "null"]);
        assert_eq!(o.status.code(), Some(2), "{v}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{v}: {err}");
        assert!(err.contains(needle), "{v}: {err}");
    }
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let run = |v: &str, flag: &[&str]| {
        let mut a = vec![
            "run",
            "-e",
            "null",
            "-p",
            "docs=100",
            "--steps",
            "load",
            "--warmup",
            "0",
            "--results",
        ];
        a.push(res.to_str().unwrap());
        a.extend(["--dir", d.path().to_str().unwrap()]);
        a.extend(flag);
        let o = env(v, &a);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            o.status.success(),
            "{out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        out
    };
    // The flag wins: the variable's bad value is never read.
    let out = run("50", &["--storage-probe", "0"]);
    assert!(out.contains("skipped the class probe"), "{out}");
    assert!(!out.contains("AMPBENCH_STORAGE_PROBE"), "{out}");
    let out = run("0", &[]);
    assert!(
        out.contains("  probe: its phase from AMPBENCH_STORAGE_PROBE=0\n"),
        "{out}"
    );
    let cfg = run_config(&res, 2);
    assert_eq!(
        cfg["storage"]["probe_from"], "AMPBENCH_STORAGE_PROBE=0",
        "{cfg}"
    );
}

#[test]
fn list_and_help() {
    let l = ok(&["list"]);
    for w in [
        "pattern",
        "ycsb",
        "micro",
        "docs",
        "recordcount",
        "num",
        "compaction",
        "cache_size",
    ] {
        assert!(l.contains(w), "list lacks {w}");
    }
    for sub in ["run", "report", "list", "doctor", "template"] {
        let h = ok(&[sub, "--help"]);
        assert!(h.contains("Usage"), "{sub}");
    }
}

/// The doctor opens every engine of the registry (servers started and
/// stopped) and finds each usable; every registry entry also appears in
/// `list`, `run --help` and the shipped plan template, and the template is
/// what `ampbench template` prints from the registry now.
#[test]
fn every_engine_of_the_registry_is_everywhere() {
    let doctor = ok(&["doctor"]);
    assert!(doctor.contains("7.8.3"), "{doctor}");
    assert!(doctor.contains("WiredTiger 3.2.1"), "{doctor}");
    let list = ok(&["list"]);
    let help = ok(&["run", "--help"]);
    let template_file =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/template.toml"))
            .unwrap();
    let template = ok(&["template"]);
    assert_eq!(
        template_file, template,
        "plans/template.toml is stale: run `ampbench template > plans/template.toml`"
    );
    let mut seen = Vec::new();
    for kind in ampbench::engine::EngineKind::all() {
        let e = kind.name();
        let line = |text: &str| {
            text.lines()
                .find(|l| l.split_whitespace().next() == Some(e))
                .map(str::to_string)
        };
        let d = line(&doctor).unwrap_or_else(|| panic!("doctor lacks {e}: {doctor}"));
        assert!(d.contains("usable") && !d.contains("NOT"), "{e}: {d}");
        assert!(line(&list).is_some(), "list lacks {e}: {list}");
        assert!(line(&help).is_some(), "run --help lacks {e}: {help}");
        assert!(
            template.contains(&format!("[set.{e}]")),
            "template lacks {e}"
        );
        seen.push(e);
    }
    // The engines this build must have (a new one needs no edit here).
    for e in [
        "rocksdb",
        "wiredtiger",
        "lmdb",
        "leveldb",
        "sqlite",
        "null",
        "mariadb-innodb",
        "mariadb-myrocks",
        "postgres",
    ] {
        assert!(seen.contains(&e), "the registry lacks {e}: {seen:?}");
    }
    for w in ampbench::workload::WorkloadKind::ALL {
        assert!(
            list.contains(&format!("workload {}:", w.name())),
            "list lacks {}",
            w.name()
        );
        assert!(
            template.contains(&format!("# {}:", w.name())),
            "template lacks {}",
            w.name()
        );
    }
}

/// Every shipped plan file loads and validates; a plan with an unknown key
/// is a one-line error naming it; a flag overrides the plan.
#[test]
fn shipped_plans_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("plans");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) == Some("toml") {
            ampbench::cli::check_plan(&p).unwrap_or_else(|e| panic!("{}: {e:#}", p.display()));
            n += 1;
        }
    }
    assert!(n >= 3);
    let cfgs = ampbench::cli::check_plan(&dir.join("ycsb-embedded.toml")).unwrap();
    assert_eq!(cfgs.len(), 1);
    let cfg = &cfgs[0];
    assert_eq!(cfg.workload, ampbench::workload::WorkloadKind::Ycsb);
    assert_eq!(cfg.engines.len(), 5);
    assert_eq!(cfg.duration, 10.0);
    let d = tempfile::tempdir().unwrap();
    let bad = d.path().join("bad.toml");
    std::fs::write(&bad, "workload = \"pattern\"\ntheads = 3\n").unwrap();
    let o = run(&["run", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("theads") && err.trim().lines().count() == 1,
        "{err}"
    );
    // The plan runs, and --steps/-p override it.
    let plan = d.path().join("p.toml");
    std::fs::write(&plan, format!("workload = \"micro\"\nengines = [\"lmdb\"]\nduration = 0.2\nwarmup = 0.0\nresults = \"{}\"\ndir = \"{}\"\n[params]\nnum = 100000\n", d.path().join("r.db").display(), d.path().display())).unwrap();
    ok(&[
        "run",
        plan.to_str().unwrap(),
        "--steps",
        "fillseq,readrandom",
        "-p",
        "num=1000",
    ]);
    let j = report_json(&d.path().join("r.db"));
    assert_eq!(j["steps"].as_array().unwrap().len(), 2);
    assert_eq!(j["steps"][0]["ops"], 1000.0);
}

/// Two runs merged into one report: engines labelled by run, and the ratio
/// table's ops column equals the two runs' ops/s divided by hand.
#[test]
fn merged_runs_report_ratios() {
    let t = tempfile::tempdir().unwrap();
    let results = t.path().join("r.db");
    let r = results.to_str().unwrap();
    let d = t.path().to_str().unwrap();
    for extra in [&[][..], &["--set", "rocksdb.perf_level=2"][..]] {
        let mut a = vec![
            "run",
            "-w",
            "micro",
            "-e",
            "rocksdb",
            "--steps",
            "fillseq,readrandom",
            "-p",
            "num=3000",
            "--warmup",
            "0",
            "--duration",
            "0.3",
            "--results",
            r,
            "--dir",
            d,
        ];
        a.extend_from_slice(extra);
        ok(&a);
    }
    let ops = |run: &str, step: &str| -> f64 {
        let j = common::report_json(r, run);
        j["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["step"] == step)
            .unwrap()["ops_per_sec"]
            .as_f64()
            .unwrap()
    };
    let text = ok(&["report", "--results", r, "--run", "1,2"]);
    assert!(text.starts_with("runs 1,2 merged"), "{text}");
    assert!(
        text.contains("1:rocksdb") && text.contains("2:rocksdb"),
        "{text}"
    );
    for step in ["fillseq", "readrandom"] {
        let row = text
            .lines()
            .find(|l| l.starts_with("2:rocksdb") && l.split_whitespace().nth(1) == Some(step))
            .unwrap_or_else(|| panic!("no ratio row for {step}: {text}"));
        let printed: f64 = row.split_whitespace().nth(2).unwrap().parse().unwrap();
        let want = ops("2", step) / ops("1", step);
        assert!(
            (printed - want).abs() < 0.006,
            "{step}: {printed} vs {want}\n{text}"
        );
    }
    let html = ok(&["report", "--results", r, "--run", "1,2", "--format", "html"]);
    assert!(html.starts_with("<!doctype html>") && html.contains("Ratios to 1:rocksdb"));
    assert!(!html.contains("<script"), "self-contained, no scripts");
    // Throughput over time: a chart per step, a line per run's engine
    // (each named in the chart's legend).
    let over: Vec<&str> = html
        .split("<figure class=chart>")
        .filter(|c| c.contains("operations/s over time"))
        .collect();
    assert_eq!(over.len(), 2, "{html}");
    for c in over {
        assert!(
            c.contains("\n1:rocksdb\n") && c.contains("\n2:rocksdb\n"),
            "{c}"
        );
        assert!(c.matches("<polyline").count() >= 4, "{c}");
    }
    let o = run(&[
        "report",
        "--results",
        r,
        "--run",
        "1,2",
        "--base",
        "rocksdb",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--base 'rocksdb'") && err.contains("1:rocksdb"),
        "{err}"
    );
}

/// Steps that read data the selection does not load get the load step
/// first: ycsb `--steps c` reads loaded records, micro `--steps readrandom`
/// finds every key (fillseq added), and the added step is said and stored.
#[test]
fn selection_without_load_gets_it_first() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().to_str().unwrap();
    for (w, steps, p, load) in [
        ("ycsb", "c", "recordcount=2000", "load"),
        ("micro", "readrandom", "num=2000", "fillseq"),
    ] {
        let results = t.path().join(format!("{w}.db"));
        let r = results.to_str().unwrap();
        let out = ok(&[
            "run",
            "-w",
            w,
            "-e",
            "rocksdb",
            "--steps",
            steps,
            "-p",
            p,
            "--warmup",
            "0",
            "--duration",
            "0.3",
            "--results",
            r,
            "--dir",
            d,
        ]);
        assert!(
            out.contains(&format!("steps: {load},{steps} ('{load}' added first")),
            "{out}"
        );
        let j = report_json(&results);
        let s = j["steps"].as_array().unwrap();
        let names: Vec<&str> = s.iter().map(|s| s["step"].as_str().unwrap()).collect();
        assert_eq!(names, [load, steps], "{w}");
        assert_eq!(
            s[0]["ops"].as_f64(),
            Some(2000.0),
            "{w}: the load wrote every record"
        );
        assert!(s[1]["ops"].as_f64().unwrap() > 0.0, "{w}");
        assert_eq!(
            j["run"]["config"]["steps_run"][0], load,
            "{w}: stored with the run"
        );
    }
    let j = report_json(&t.path().join("micro.db"));
    assert_eq!(j["steps"][1]["extras"]["found_pct"].as_f64(), Some(100.0));
}

/// micro `-p reads=N` (db_bench's `--reads`): each read step does exactly N
/// operations per thread, then ends.
#[test]
fn micro_counted_reads_and_live_bytes() {
    let t = tempfile::tempdir().unwrap();
    let res = t.path().join("r.db");
    ok(&[
        "run",
        "-w",
        "micro",
        "-e",
        "lmdb",
        "--steps",
        "fillseq,readrandom,seekrandom",
        "-p",
        "num=2000",
        "-p",
        "reads=1500",
        "--threads",
        "2",
        "--duration",
        "30",
        "--results",
        res.to_str().unwrap(),
        "--dir",
        t.path().to_str().unwrap(),
    ]);
    let j = report_json(&res);
    let s = j["steps"].as_array().unwrap();
    assert_eq!(s[0]["ops"].as_f64(), Some(2000.0));
    for step in &s[1..] {
        assert_eq!(step["ops"].as_f64(), Some(3000.0), "{}", step["step"]);
        // Counted, not timed: far less than the 30 s duration.
        assert!(step["secs"].as_f64().unwrap() < 20.0, "{}", step["step"]);
    }
    assert_eq!(s[1]["extras"]["found_pct"].as_f64(), Some(100.0));
}
