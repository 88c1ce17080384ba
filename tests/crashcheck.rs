//! `ampbench crashcheck` on every engine: engines killed mid-commit keep
//! every acknowledged transaction, an engine that loses its unsynced tail
//! is seen losing it, and nothing of the check is left behind.

use crate::common;
use common::{BIN, figure_after as figure, run, summary_line as line, working_in};

use std::process::Command;

fn check(engines: &[&str], extra: &[&str]) -> (Option<i32>, String, tempfile::TempDir) {
    let d = tempfile::tempdir().unwrap();
    let o = Command::new(BIN)
        .args(["crashcheck", "-e", &engines.join(","), "--rounds", "3"])
        .args(["--window", "300ms", "--dir"])
        .arg(d.path())
        .args(extra)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr);
    (o.status.code(), format!("{out}{err}"), d)
}

fn assert_kept_everything(engines: &[&str]) {
    let (code, out, d) = check(engines, &[]);
    assert_eq!(code, Some(0), "{out}");
    for e in engines {
        let l = line(&out, e);
        assert_eq!(figure(l, "rounds"), 3, "{l}");
        assert!(figure(l, "acked") > 0, "{l}");
        assert_eq!(figure(l, "lost"), 0, "{l}");
        assert_eq!(figure(l, "problems"), 0, "{l}");
        assert!(l.contains("  ok  ("), "{l}");
    }
    assert!(out.contains("every engine kept every acknowledged transaction"));
    assert!(
        out.contains("not a power cut"),
        "says what it checks: {out}"
    );
    // Nothing left: no data directory, no writer process, no server.
    let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert_eq!(working_in(d.path()), Vec::<u32>::new(), "processes left");
    assert_eq!(naming(d.path()), Vec::<u32>::new(), "writer processes left");
}

/// Processes whose command line names `dir` (the writer processes).
fn naming(dir: &std::path::Path) -> Vec<u32> {
    let needle = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
        })
        .collect()
}

#[test]
fn embedded_engines_keep_every_acknowledged_commit() {
    assert_kept_everything(&["rocksdb", "wiredtiger", "lmdb", "leveldb", "sqlite"]);
}

#[test]
fn servers_keep_every_acknowledged_commit() {
    assert_kept_everything(&["mariadb-innodb", "mariadb-myrocks", "postgres"]);
}

/// WiredTiger without sync keeps its log in memory: a kill loses the
/// tail, and the check sees it (hundreds of transactions a round here),
/// reported as expected, not as a failure. The check can fail.
#[test]
fn an_unsynced_tail_is_seen_lost() {
    let (code, out, _d) = check(&["wiredtiger"], &["--nosync"]);
    assert_eq!(code, Some(0), "{out}");
    let l = line(&out, "wiredtiger");
    assert!(figure(l, "lost") > 0, "{l}");
    assert_eq!(figure(l, "problems"), 0, "{l}");
    assert!(l.contains("unsynced tail lost, as expected"), "{l}");
    assert!(
        out.contains("1 of 1 engines lost an unsynced tail"),
        "{out}"
    );
}

#[test]
fn bad_input_is_one_line() {
    for (args, key) in [
        (vec!["-e", "null"], "--engine null"),
        (vec!["-e", "nosuch"], "unknown engine 'nosuch'"),
        (vec!["--rounds", "0"], "--rounds 0"),
        (vec!["--window", "soon"], "--window"),
        (vec!["--set", "rocksdb.nosuch=1"], "nosuch"),
    ] {
        let o = run(&[&["crashcheck"], &args[..]].concat());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(key), "{args:?}: {err}");
    }
}

/// Ctrl-C twice (a real SIGINT, the second while the first is being
/// handled): the check ends interrupted, says so, and leaves no writer
/// process, server or data directory.
#[test]
fn ctrl_c_twice_leaves_nothing() {
    for engine in ["rocksdb", "postgres"] {
        let d = tempfile::tempdir().unwrap();
        let child = Command::new(BIN)
            .args(["crashcheck", "-e", engine, "--rounds", "500", "--dir"])
            .arg(d.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Into the rounds: the data directory exists and writers run.
        let t0 = std::time::Instant::now();
        while std::fs::read_dir(d.path()).unwrap().count() == 0 {
            assert!(t0.elapsed().as_secs() < 60, "{engine}: never started");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_secs(3));
        for _ in 0..2 {
            // SAFETY: signals our own child.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let o = child.wait_with_output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{engine}: {out}");
        assert!(line(&out, engine).contains("interrupted"), "{out}");
        assert!(out.contains("interrupted: the engines above"), "{out}");
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().collect();
        assert!(left.is_empty(), "{engine}: left behind: {left:?}");
        assert_eq!(working_in(d.path()), Vec::<u32>::new(), "{engine}");
        assert_eq!(naming(d.path()), Vec::<u32>::new(), "{engine}");
    }
}

/// Issue 31: the check's directory in a shared --dir is made new with a
/// random name and is root's only (0700): a name known in advance could
/// be taken first, or be a link planted to send root's writes elsewhere.
#[test]
fn check_directories_are_new_private_and_unpredictable() {
    use std::os::unix::fs::PermissionsExt;
    let (code, out, d) = check(&["lmdb"], &["--keep"]);
    assert_eq!(code, Some(0), "{out}");
    let kept: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let name = kept[0].file_name().to_string_lossy().into_owned();
    let rest = name
        .strip_prefix("ampbench-crashcheck-")
        .and_then(|r| r.split_once("-lmdb-"))
        .unwrap_or_else(|| panic!("{name}"));
    assert!(rest.1.len() >= 6, "a random part: {name}");
    let mode = kept[0].metadata().unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{name}");
}
