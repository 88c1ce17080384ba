//! Issue 31: an engine that cannot open is an error, never a crash. Every
//! embedded engine is opened where its library refuses (options that do
//! not go together, a map too small, a database another handle has
//! locked) and gives a one-line error; the command line refuses such
//! options before anything runs, with exit code 2 and one line.

use crate::common;

use ampbench::engine::{self, EngineKind, EngineOptions, OpenSpec};

fn spec(dir: &std::path::Path, pairs: &[(&str, &str)]) -> OpenSpec {
    let mut s = OpenSpec::new(dir, vec!["t".into()], 8 << 20);
    s.options = EngineOptions {
        pairs: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Default::default()
    };
    s
}

fn one_line_error(name: &str, r: anyhow::Result<Box<dyn engine::Engine>>, needle: &str) {
    let e = match r {
        Ok(_) => panic!("{name}: opened"),
        Err(e) => format!("{e:#}"),
    };
    assert!(!e.contains('\n'), "{name}: {e}");
    assert!(e.contains(needle), "{name}: {e}");
}

#[test]
fn failed_opens_are_errors_not_crashes() {
    let d = tempfile::tempdir().unwrap();
    let kind = |n: &str| EngineKind::parse(n).unwrap();
    // RocksDB refuses the pair only at open; its wrapper used to close
    // the null handle a failed open leaves (SIGSEGV).
    one_line_error(
        "rocksdb",
        engine::open(
            kind("rocksdb"),
            &spec(
                &d.path().join("r"),
                &[("allow_mmap_reads", "true"), ("use_direct_reads", "true")],
            ),
        ),
        "allow_mmap_reads",
    );
    one_line_error(
        "lmdb",
        engine::open(
            kind("lmdb"),
            &spec(&d.path().join("l"), &[("map_size", "1")]),
        ),
        "MDB_MAP_FULL",
    );
    one_line_error(
        "wiredtiger",
        engine::open(
            kind("wiredtiger"),
            &spec(&d.path().join("w"), &[("cache_size", "abc")]),
        ),
        "cache_size",
    );
    // A database another handle holds: LevelDB's and RocksDB's LOCK.
    for name in ["leveldb", "rocksdb"] {
        let dir = d.path().join(format!("locked-{name}"));
        let first = engine::open(kind(name), &spec(&dir, &[])).unwrap();
        one_line_error(name, engine::open(kind(name), &spec(&dir, &[])), "lock");
        first.close().unwrap();
    }
    one_line_error(
        "sqlite",
        engine::open(
            kind("sqlite"),
            &spec(&d.path().join("s"), &[("nosuch_pragma", "1")]),
        ),
        "nosuch_pragma",
    );
}

#[test]
fn invalid_options_are_one_line_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let results = d.path().join("r.db");
    for (engine, sets, needle) in [
        (
            "rocksdb",
            &[
                "rocksdb.allow_mmap_reads=true",
                "rocksdb.use_direct_reads=true",
            ][..],
            "allow_mmap_reads",
        ),
        ("lmdb", &["lmdb.map_size=1"][..], "lmdb"),
        (
            "wiredtiger",
            &["wiredtiger.cache_size=abc"][..],
            "cache_size",
        ),
        (
            "leveldb",
            &["leveldb.block_size=abc"][..],
            "leveldb.block_size",
        ),
        (
            "sqlite",
            &["sqlite.nosuch_pragma=1"][..],
            "sqlite.nosuch_pragma",
        ),
    ] {
        let mut args = vec!["run", "-e", engine, "-p", "docs=100", "--results"];
        let r = results.to_str().unwrap();
        args.push(r);
        for s in sets {
            args.extend(["--set", s]);
        }
        let o = common::run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{engine}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{engine}: {err}");
        assert!(err.contains(needle), "{engine}: {err}");
        assert!(!results.exists(), "{engine}: nothing starts");
    }
}
