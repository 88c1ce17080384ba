//! Helpers shared by the tests that run the real binary.

#![allow(dead_code)]

use std::process::{Command, Output};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_ampbench");

/// Runs ampbench with `args`.
pub fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run ampbench")
}

/// Runs ampbench with `args`, asserts success, returns its stdout.
pub fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(
        o.status.success(),
        "ampbench {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The recorded configuration (JSON) of run `id` in a results file.
pub fn run_config(results: &std::path::Path, id: i64) -> serde_json::Value {
    let c = rusqlite::Connection::open(results).expect("results file");
    let cfg: String = c
        .query_row("SELECT config FROM runs WHERE id = ?1", [id], |r| r.get(0))
        .expect("the run's config");
    serde_json::from_str(&cfg).expect("config JSON")
}
