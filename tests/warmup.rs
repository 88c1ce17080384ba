//! `--warmup-steady`: a timed step warms up in unrecorded slices until
//! its throughput stops rising, prints and records those slices, and
//! then measures without more warm-up; a load is not warmed.

use crate::common;

use common::ok;

#[test]
fn a_timed_step_warms_up_until_steady_and_records_its_slices() {
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let out = ok(&[
        "run",
        "-w",
        "ycsb",
        "-e",
        "lmdb",
        "--steps",
        "load,c",
        "-p",
        "recordcount=20000",
        // Three slices at most (the least the rule needs): a step that
        // is not steady by then holds a core for the whole limit (30 s
        // took 25 CPU-s, and on a busy machine it rarely was steady).
        "--warmup-steady",
        "15",
        "--interval",
        "1",
        "--duration",
        "1",
        // One thread: a step at full speed on four would hold both cores
        // for its 15 s at least (--warmup-steady is judged by
        // throughput, so it cannot be paced by --rate).
        "--threads",
        "1",
        "--storage",
        "native",
        "--dir",
        d.path().to_str().unwrap(),
        "--results",
        res.to_str().unwrap(),
    ]);
    // Slices of 5 s (the least; --interval is 1 s), three at least.
    let line = out
        .lines()
        .find(|l| l.starts_with("  c: warmed up "))
        .unwrap_or_else(|| panic!("no warm-up line: {out}"));
    assert!(line.contains("(ops/s over 5 s slices: "), "{line}");
    assert!(
        !out.contains("load: warmed up"),
        "a load is not warmed: {out}"
    );
    let c = rusqlite::Connection::open(&res).unwrap();
    let spec = |step: &str| -> serde_json::Value {
        let s: String = c
            .query_row("SELECT spec FROM steps WHERE step = ?1", [step], |r| {
                r.get(0)
            })
            .unwrap();
        serde_json::from_str(&s).unwrap()
    };
    assert!(spec("load")["warmup_steady"].is_null());
    let c_spec = spec("c");
    let w = &c_spec["warmup_steady"];
    assert_eq!(c_spec["warmup_s"], 0.0, "no more warm-up: {c_spec}");
    assert_eq!(w["slice_s"], 5.0, "{w}");
    let rates: Vec<f64> = w["rates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_f64().unwrap())
        .collect();
    let secs = w["secs"].as_f64().unwrap();
    assert!(rates.len() >= 3 && rates.iter().all(|r| *r > 0.0), "{w}");
    // Whole slices of 5 s only, within the 15 s limit.
    let n = rates.len();
    assert!((secs - 5.0 * n as f64).abs() < 0.5 * n as f64, "{w}");
    assert!(secs <= 15.5, "{w}");
    if w["steady"] == true {
        // The rule, by hand: the last slice within 3% of the one two
        // before it, and not the slice before that.
        assert!(rates[n - 1] <= rates[n - 3] * 1.03, "{w}");
        assert!(n == 3 || rates[n - 2] > rates[n - 4] * 1.03, "{w}");
        assert!(
            line.contains("until the throughput stopped rising"),
            "{line}"
        );
    } else {
        assert!(secs >= 14.5, "stopped early without being steady: {w}");
        assert!(line.contains("NOT steady"), "{line}");
    }
    // The measured step ran and was recorded as usual.
    let ops: f64 = c
        .query_row(
            "SELECT f.value FROM figures f JOIN steps s ON s.id = f.step_id
             WHERE s.step = 'c' AND f.name = 'ops_per_sec' AND f.interval_idx = -1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(ops > 0.0);
}

/// Ctrl-C during a warm-up ends it, says so (not "NOT steady"), and the
/// step is recorded as interrupted, with the run's exit code 1.
#[test]
fn ctrl_c_during_a_warm_up_says_so() {
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let child = std::process::Command::new(common::BIN)
        .args([
            "run",
            "-w",
            "ycsb",
            "-e",
            "lmdb",
            "--steps",
            "load,c",
            "-p",
            "recordcount=20000",
            "--warmup-steady",
            "600",
            "--interval",
            "1",
            "--duration",
            "1",
            "--threads",
            "1",
            "--storage",
            "native",
            "--dir",
        ])
        .arg(d.path())
        .arg("--results")
        .arg(&res)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the load to end (the results file says so), then into the
    // warm-up's second slice.
    let t0 = std::time::Instant::now();
    let loaded = || -> bool {
        let Ok(c) = rusqlite::Connection::open(&res) else {
            return false;
        };
        c.query_row("SELECT status FROM steps WHERE step = 'load'", [], |r| {
            r.get::<_, String>(0)
        })
        .is_ok_and(|s| s == "done")
    };
    while !loaded() {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(120),
            "the load never ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    std::thread::sleep(std::time::Duration::from_secs(7));
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    // Ended within a minute, or killed so the test fails rather than hangs.
    let pid = child.id() as i32;
    let watchdog = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(60));
        // SAFETY: signals our own child (gone by then if all went well).
        unsafe { libc::kill(pid, libc::SIGKILL) };
    });
    let t_int = std::time::Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(
        t_int.elapsed() < std::time::Duration::from_secs(60),
        "Ctrl-C did not end the run"
    );
    drop(watchdog);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("  c: warmed up "))
        .unwrap_or_else(|| panic!("no warm-up line: {out}"));
    assert!(line.contains("interrupted (Ctrl-C)"), "{line}");
    assert!(!line.contains("NOT steady"), "{line}");
    let c = rusqlite::Connection::open(&res).unwrap();
    let status: String = c
        .query_row("SELECT status FROM steps WHERE step = 'c'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(status, "interrupted", "{out}");
}
