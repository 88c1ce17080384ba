//! The conformance suite: every key-value engine against a `BTreeMap` model
//! on random operation sequences (proptest, which shrinks a failing
//! sequence to a minimal one): puts, overwrites, deletes, batches across
//! tables, point reads, bounded scans forward and reverse with limits,
//! reopen after close, and transactions (read-your-writes, commit,
//! rollback, and two interleaved transactions whose conflicts must keep
//! their effects serial). The model is written with the standard library
//! only: no code of the engine layer decides what is expected.
//!
//! proptest rather than cargo-fuzz: it runs inside `cargo test` (so in CI,
//! on stable Rust), shrinks to a minimal sequence on its own, and a fixed
//! seed makes every run explore the same cases.

mod model;
mod sequence;
mod threads;

use ampbench::engine::{self, Engine, EngineKind, KvEngine, OpenSpec};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestError, TestRng, TestRunner};

/// An engine error as a test failure.
fn fail(e: anyhow::Error) -> TestCaseError {
    TestCaseError::fail(format!("{e:#}"))
}

/// Two tables, with transactions, and the settings the engine's registry
/// entry gives the suite.
fn spec(kind: EngineKind, dir: &std::path::Path) -> OpenSpec {
    let mut s = OpenSpec::new(dir, vec!["alpha".into(), "beta".into()], 8 << 20);
    s.transactions = true;
    s.options.pairs = (kind.def().conformance.settings.iter())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    s
}

/// The key-value face of an engine.
fn kv(e: &dyn Engine) -> &dyn KvEngine {
    e.face().kv().expect("a key-value engine")
}

/// Runs `cases` random sequences (fixed seed) on `name`; on a failure,
/// proptest shrinks the sequence and the test prints the minimal one.
fn suite(name: &str, cases: u32) {
    let kind = EngineKind::parse(name).unwrap();
    let txn = {
        let dir = tempfile::tempdir().unwrap();
        let e = engine::open(kind, &spec(kind, dir.path())).unwrap();
        let t = kv(&*e).transactions();
        e.close().unwrap();
        t
    };
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let strategy = prop::collection::vec(model::op(txn), 1..120);
    match runner.run(&strategy, |ops| sequence::run(kind, &ops)) {
        Ok(()) => {}
        Err(TestError::Fail(why, ops)) => {
            panic!(
                "{name}: {why}\nminimal failing sequence ({} ops):\n{ops:#?}",
                ops.len()
            )
        }
        Err(e) => panic!("{name}: {e}"),
    }
}

/// Every engine whose registry entry asks for the suite
/// (`conformance`), each on a thread of its own; a new engine is in
/// the suite by its registry entry alone. Fails naming every engine that
/// did not conform.
#[test]
fn every_registered_engine_conforms() {
    let members = threads::members();
    assert!(
        members.iter().any(|k| k.name() == "null"),
        "the null engine is always compiled in and in the suite"
    );
    let failed: Vec<String> = std::thread::scope(|s| {
        let runs: Vec<_> = members
            .iter()
            .map(|k| {
                let k = *k;
                (
                    k,
                    s.spawn(move || suite(k.name(), k.def().conformance.cases)),
                )
            })
            .collect();
        runs.into_iter()
            .filter_map(|(k, h)| {
                h.join().err().map(|e| {
                    let why = e
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    format!("{}: {why}", k.name())
                })
            })
            .collect()
    });
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}
