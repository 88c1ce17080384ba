//! `ampbench crashcheck --power-cut`: with the device's volatile cache
//! dropped at every kill, synced engines keep every acknowledged commit,
//! a filesystem that sends no flushes (`nobarrier`) is seen losing them,
//! and nothing of the device (loop device, mounts, model) is left.

use crate::common;
use common::{
    BIN, figure_after as figure, no_device_model as cannot, run, summary_line as line, working_in,
};

use std::process::Command;

/// Runs the check in a fresh directory; asserts that nothing is left in
/// it: no file, no mount under it, no process working in it.
fn power_cut(engines: &[&str], extra: &[&str]) -> (Option<i32>, String) {
    let d = tempfile::tempdir().unwrap();
    let o = Command::new(BIN)
        .args(["crashcheck", "--power-cut", "-e", &engines.join(",")])
        .args(["--rounds", "3", "--window", "300ms", "--dir"])
        .arg(d.path())
        .args(extra)
        .output()
        .unwrap();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "left behind: {left:?}\n{out}");
    let dir = d
        .path()
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(&dir), "a mount left under {dir}\n{out}");
    assert_eq!(working_in(d.path()), Vec::<u32>::new(), "processes left");
    (o.status.code(), out)
}

#[test]
fn synced_commits_survive_power_cuts_on_every_engine() {
    if let Some(why) = cannot() {
        ampbench::testing::skip("powercut", &why);
        return;
    }
    let engines = [
        "rocksdb",
        "wiredtiger",
        "lmdb",
        "leveldb",
        "sqlite",
        "mariadb-innodb",
        "postgres",
    ];
    let (code, out) = power_cut(&engines, &[]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("checks a power cut"), "{out}");
    for e in engines {
        let l = line(&out, e);
        assert_eq!(figure(l, "rounds"), 3, "{l}");
        assert!(figure(l, "acked") > 0, "{l}");
        assert_eq!(figure(l, "lost"), 0, "{l}");
        assert_eq!(figure(l, "problems"), 0, "{l}");
    }
}

/// ext4 without barriers sends the device no flush: what a commit
/// acknowledged sits in the volatile cache (100 ms before it destages)
/// and the cut drops it. The check must see it.
#[test]
fn a_filesystem_without_barriers_is_seen_losing_commits() {
    if let Some(why) = cannot() {
        ampbench::testing::skip("powercut", &why);
        return;
    }
    let (code, out) = power_cut(&["rocksdb"], &["--mount-options", "nobarrier"]);
    assert_eq!(code, Some(1), "{out}");
    let l = line(&out, "rocksdb");
    assert!(figure(l, "lost") > 0, "{l}");
    assert!(figure(l, "dropped blocks") > 0, "{l}");
    // Either the acknowledged commits are gone, or the cut also tore the
    // engine's own files (RocksDB's CURRENT written without a flush
    // reaching the medium: "does not end with newline"), and it cannot
    // reopen: both are the losses the check is there to find.
    assert!(
        l.contains("FAILED: acknowledged commits lost")
            || l.contains("FAILED: reopening after the kill"),
        "{l}"
    );
    // The same with a battery-backed cache: nothing is lost.
    let (code, out) = power_cut(
        &["rocksdb"],
        &[
            "--mount-options",
            "nobarrier",
            "--device-model",
            "cache=battery",
        ],
    );
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(figure(line(&out, "rocksdb"), "lost"), 0, "{out}");
}

/// Without sync the kernel's page cache holds the commits, and a power
/// cut takes it: nearly everything acknowledged is lost (expected).
#[test]
fn unsynced_commits_are_lost_with_the_page_cache() {
    if let Some(why) = cannot() {
        ampbench::testing::skip("powercut", &why);
        return;
    }
    let (code, out) = power_cut(&["leveldb"], &["--nosync"]);
    assert_eq!(code, Some(0), "{out}");
    let l = line(&out, "leveldb");
    assert!(figure(l, "lost") > 0, "{l}");
    assert!(l.contains("unsynced tail lost, as expected"), "{l}");
}

#[test]
fn power_cut_settings_are_checked() {
    for (args, key) in [
        (
            vec!["--device-model", "cache=off"],
            "--device-model cache=off: needs --power-cut",
        ),
        (
            vec!["--mount-options", "nobarrier"],
            "--mount-options nobarrier: needs --power-cut",
        ),
        (
            vec!["--power-cut", "--mount-options", "ro;x"],
            "--mount-options ro;x",
        ),
        (
            vec!["--power-cut", "--device-model", "cache=flaky"],
            "cache=flaky",
        ),
    ] {
        let o = run(&[&["crashcheck"], &args[..]].concat());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(key), "{args:?}: {err}");
    }
}
