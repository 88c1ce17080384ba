//! `--allocator` and `--replication-log`, as a user runs them: the
//! preloaded library is mapped in every engine's process (an embedded
//! engine's run happens in a child ampbench), SIGTERM to ampbench still
//! stops the run, and the servers keep the replication log they were
//! asked for.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ampbench");

fn run(d: &tempfile::TempDir, args: &[&str]) -> (bool, String, String) {
    let o = Command::new(BIN)
        .arg("run")
        .args(args)
        .args(["--results", d.path().join("r.db").to_str().unwrap()])
        .args(["--dir", d.path().to_str().unwrap(), "--storage", "native"])
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

const TINY: &[&str] = &[
    "-w",
    "insert",
    "--threads",
    "1",
    "-p",
    "load_rows=2000",
    "-p",
    "i1_rows=500",
    "-p",
    "i2_rows=100",
    "--steps",
    "l.i0,l.i1,l.i2",
];

#[test]
fn the_allocator_is_mapped_in_every_engine() {
    for a in ["jemalloc", "tcmalloc"] {
        let d = tempfile::tempdir().unwrap();
        let mut args = TINY.to_vec();
        args.extend(["-e", "rocksdb,postgres", "--allocator", a]);
        let (ok, out, err) = run(&d, &args);
        assert!(ok, "{out}{err}");
        let lines: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("  allocator: "))
            .collect();
        assert_eq!(lines.len(), 2, "{out}");
        for l in lines {
            assert!(
                l.starts_with(&format!("  allocator: {a} (/")) && l.contains(" mapped in pid "),
                "{l}"
            );
        }
        // Recorded with the run.
        assert!(
            ampbench_config(&d)["allocator"] == a,
            "{}",
            ampbench_config(&d)
        );
    }
}

fn ampbench_config(d: &tempfile::TempDir) -> serde_json::Value {
    let o = Command::new(BIN)
        .args(["report", "--format", "json", "--results"])
        .arg(d.path().join("r.db"))
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["run"]["config"].clone()
}

#[test]
fn a_missing_or_unknown_allocator_is_one_line() {
    let d = tempfile::tempdir().unwrap();
    let (ok, _, err) = run(&d, &["-e", "null", "--allocator", "hoard"]);
    assert!(!ok);
    assert!(err.contains("unknown allocator 'hoard'"), "{err}");
}

/// SIGTERM to ampbench, whose run goes on in a preloaded child: the
/// child's step stops, the run ends interrupted (exit 1) long before its
/// 60 s step would, and nothing is left running.
#[test]
fn sigterm_reaches_the_preloaded_child() {
    let d = tempfile::tempdir().unwrap();
    let child = Command::new(BIN)
        .args(["run", "-w", "pattern", "-e", "lmdb", "--steps", "load,pq.1"])
        .args([
            "-p",
            "docs=2000",
            "--allocator",
            "jemalloc",
            "--storage",
            "native",
        ])
        .args(["--warmup", "0", "--duration", "60", "--results"])
        .arg(d.path().join("r.db"))
        .arg("--dir")
        .arg(d.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs(4));
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("interrupted"), "{out}");
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    let ps = Command::new("pgrep")
        .args(["-f", d.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(ps.stdout.is_empty(), "left running: {:?}", ps.stdout);
}

#[test]
fn servers_keep_the_replication_log_asked_for() {
    let d = tempfile::tempdir().unwrap();
    let mut args = TINY.to_vec();
    args.extend([
        "-e",
        "mariadb-innodb,postgres,lmdb",
        "--replication-log",
        "on",
        "--keep",
    ]);
    let (ok, out, err) = run(&d, &args);
    assert!(ok, "{out}{err}");
    assert!(out.contains("sync_binlog=1"), "{out}");
    assert!(out.contains("archive_mode=on"), "{out}");
    assert!(
        out.contains("replication log: none (lmdb is embedded"),
        "{out}"
    );
    // The kept MariaDB directory holds its binlog.
    let dir = out
        .lines()
        .find(|l| l.starts_with("mariadb-innodb MariaDB"))
        .and_then(|l| l.split(" in ").nth(1))
        .and_then(|r| r.split(" (pid").next())
        .unwrap_or_else(|| panic!("{out}"));
    let binlogs = std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("binlog.0"))
        })
        .count();
    assert!(binlogs >= 1, "no binlog in {dir}");
    // Off (the default): neither.
    let d = tempfile::tempdir().unwrap();
    let mut args = TINY.to_vec();
    args.extend(["-e", "mariadb-innodb"]);
    let (ok, out, err) = run(&d, &args);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("skip-log-bin") && !out.contains("sync_binlog"),
        "{out}"
    );
}
