//! Reports from a fixed results file (tests/data/fixed.db: a real run of
//! rocksdb and lmdb, load, pq.1, owa.1, rq.1, two repetitions; its engine
//! statistics removed to keep it small): snapshots of the text, Markdown
//! and CSV reports, so a format change is reviewed (`INSTA_UPDATE=always
//! cargo test --release --test quick exports::` rewrites them), and the interval log read
//! back by the hdrhistogram crate's log reader.

use crate::common;

use base64::Engine as _;
use common::ok;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use std::collections::BTreeMap;

/// A copy of the fixed results file (opening one may write to it).
fn fixed() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("fixed.db");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fixed.db"),
        &p,
    )
    .unwrap();
    let s = p.to_str().unwrap().to_string();
    (dir, s)
}

fn report(format: &str) -> String {
    let (_d, r) = fixed();
    ok(&["report", "--results", &r, "--format", format])
}

#[test]
fn text_report_snapshot() {
    insta::assert_snapshot!(report("text"));
}

/// The short report `run` prints: each table one figure per step and
/// engine, the same figures as the text report's.
#[test]
fn summary_report_snapshot() {
    insta::assert_snapshot!(report("summary"));
}

#[test]
fn markdown_report_snapshot() {
    insta::assert_snapshot!(report("markdown"));
}

#[test]
fn csv_report_snapshot() {
    insta::assert_snapshot!(report("csv"));
}

#[test]
fn hlog_reads_back_with_every_operation_counted() {
    let log = report("hlog");
    let json: serde_json::Value = serde_json::from_str(&report("json")).unwrap();
    // Counts per tag from the log.
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut de = Deserializer::new();
    let mut last_start = BTreeMap::new();
    for e in IntervalLogIterator::new(log.as_bytes()) {
        let LogEntry::Interval(h) = e.unwrap() else {
            continue;
        };
        let tag = h.tag().unwrap().as_str().to_string();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(h.encoded_histogram())
            .unwrap();
        let hist: hdrhistogram::Histogram<u64> =
            de.deserialize(&mut std::io::Cursor::new(bytes)).unwrap();
        // Intervals of one tag follow each other in time.
        let start = h.start_timestamp();
        if let Some(prev) = last_start.insert(tag.clone(), start) {
            assert!(start >= prev, "{tag}");
        }
        assert!((hist.max() as f64 / 1000.0 - h.max()).abs() < 0.01 * h.max().max(1.0));
        *counts.entry(tag).or_default() += hist.len();
    }
    // Every step's every op, each repetition tagged apart.
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for s in json["steps"].as_array().unwrap() {
        let rep = s["rep"].as_i64().unwrap();
        let suffix = if rep > 0 {
            format!("#{}", rep + 1)
        } else {
            String::new()
        };
        for (op, l) in s["latency"].as_object().unwrap() {
            let tag = format!(
                "{}/{}/{op}{suffix}",
                s["engine"].as_str().unwrap(),
                s["step"].as_str().unwrap()
            );
            want.insert(tag, l["count"].as_u64().unwrap());
        }
    }
    assert_eq!(
        want.len(),
        16,
        "2 engines × 4 steps × 2 repetitions: {want:?}"
    );
    assert_eq!(counts, want);
}
