//! Where ampbench's output goes: a reader that went away ends the command
//! quietly; any other failure to write is an error line.

use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};

use crate::common;
use common::BIN;

/// A pipe whose reading end is already closed: every write to it fails
/// with EPIPE.
fn closed_pipe() -> OwnedFd {
    let mut fds = [0; 2];
    // SAFETY: pipe fills the two-int array it is given.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both fds were just opened by pipe and are owned here only.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(r);
    w
}

/// `ampbench list | head -0`: exit 0, nothing on standard error.
#[test]
fn a_reader_that_went_away_ends_the_command_quietly() {
    let o = Command::new(BIN)
        .arg("list")
        .stdout(Stdio::from(closed_pipe()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{:?}: {err}", o.status);
    assert!(err.is_empty(), "{err}");
}

/// A full device is not a reader going away: exit 1 and one line.
#[test]
fn a_full_output_is_still_an_error() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = Command::new(BIN)
        .arg("list")
        .stdout(Stdio::from(full))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("No space left on device"), "{err}");
}

/// Issue 31: a run that ends in an error (here: its output cannot be
/// written) is `failed` in the results file, not `running` forever.
#[test]
fn a_run_ended_by_an_error_is_failed_in_the_results() {
    let d = tempfile::tempdir().unwrap();
    let results = d.path().join("r.db");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = Command::new(BIN)
        .args(["run", "-e", "null", "-p", "docs=100", "--storage", "native"])
        .arg("--results")
        .arg(&results)
        .arg("--dir")
        .arg(d.path())
        .stdout(Stdio::from(full))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let c = rusqlite::Connection::open(&results).unwrap();
    let runs: Vec<String> = c
        .prepare("SELECT status FROM runs")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(runs, ["failed"], "{err}");
    let running: i64 = c
        .query_row(
            "SELECT count(*) FROM steps WHERE status = 'running'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(running, 0);
}

/// Issue 33: a step prints its line, and the model's explanation under
/// it, only with `-v` (which also gives the full closing report). Issue
/// 47: the short report says what differs from the model in one line,
/// the full one has the table; both have the legend of the steps.
#[test]
fn the_models_explanation_is_behind_verbose() {
    let d = tempfile::tempdir().unwrap();
    let run = |verbose: bool| {
        let res = d.path().join(format!("r{verbose}.db"));
        let mut args = vec![
            "run",
            "-w",
            "micro",
            "-e",
            "lmdb",
            "--steps",
            "fillrandom,readrandom",
            "-p",
            "num=2000",
            "--warmup",
            "0",
            "--duration",
            "1",
            "--storage",
            "native",
            "--results",
            res.to_str().unwrap(),
            "--dir",
            d.path().to_str().unwrap(),
        ];
        if verbose {
            args.push("-v");
        }
        common::ok(&args)
    };
    let quiet = run(false);
    let loud = run(true);
    let explains = |o: &str| o.lines().filter(|l| l.starts_with("  explain: ")).count();
    assert_eq!(explains(&quiet), 0, "{quiet}");
    assert_eq!(explains(&loud), 2, "{loud}");
    // Without -v one line for the engine's steps, none per step; the
    // short report, not the full one.
    let step_lines = |o: &str| {
        o.lines()
            .filter(|l| l.starts_with("  fillrandom ") || l.starts_with("  readrandom "))
            .count()
    };
    assert_eq!(step_lines(&quiet), 0, "{quiet}");
    assert!(quiet.contains("\n  2 steps in "), "{quiet}");
    assert!(!quiet.contains("efficiency per operation"), "{quiet}");
    assert_eq!(step_lines(&loud), 2, "{loud}");
    assert!(loud.contains("efficiency per operation"), "{loud}");
    assert!(
        loud.contains("where measured and predicted differ by more than 2× ("),
        "{loud}"
    );
    assert!(
        !quiet.contains("where measured and predicted differ"),
        "{quiet}"
    );
    let model_lines: Vec<&str> = quiet
        .lines()
        .filter(|l| l.starts_with("the model: "))
        .collect();
    assert_eq!(model_lines.len(), 1, "{quiet}");
    assert!(
        model_lines[0].contains("write-amp and space-amp figures agree"),
        "{quiet}"
    );
    for o in [&quiet, &loud] {
        let legend = o.split("\nsteps\n").nth(1).expect("a legend of the steps");
        let rows: Vec<&str> = legend
            .lines()
            .skip(1)
            .take_while(|l| !l.is_empty())
            .collect();
        assert_eq!(rows.len(), 2, "{o}");
        assert!(
            rows[0].starts_with("fillrandom") && rows[0].contains("drawn with replacement"),
            "{o}"
        );
        assert!(
            rows[1].starts_with("readrandom") && rows[1].contains("Gets of random keys"),
            "{o}"
        );
    }
}

/// Issue 47: large figures have their digits grouped in the text report
/// only.
#[test]
fn large_figures_are_grouped_in_text() {
    let d = tempfile::tempdir().unwrap();
    let res = d.path().join("r.db");
    let o = common::ok(&[
        "run",
        "-w",
        "micro",
        "-e",
        "lmdb,rocksdb",
        "--steps",
        "fillseq,readrandom",
        "-p",
        "num=300000",
        "--warmup",
        "0",
        "--duration",
        "1",
        "--storage",
        "native",
        "--results",
        res.to_str().unwrap(),
        "--dir",
        d.path().to_str().unwrap(),
    ]);
    let ops = o
        .split("\noperations/second\n")
        .nth(1)
        .expect("the ops table");
    // readrandom does hundreds of thousands a second: grouped.
    let row = ops
        .lines()
        .find(|l| l.starts_with("readrandom"))
        .expect("readrandom");
    assert!(row.contains(','), "{row}");
    // The same figure in CSV is a plain number.
    let csv = common::ok(&[
        "report",
        "--results",
        res.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    assert!(
        !csv.lines()
            .any(|l| l.contains("readrandom") && l.contains("\"")),
        "{csv}"
    );
}
