//! Engines under several threads, and what they declare.

use ampbench::engine::{
    self, Durability, EngineKind, KeyRange, Order, Table, Transactions, is_conflict,
};

use super::{kv, spec};

/// The suite's engines (their registry entries' `conformance.cases`).
pub fn members() -> Vec<EngineKind> {
    EngineKind::all()
        .filter(|k| k.def().conformance.cases > 0)
        .collect()
}

/// What an engine of the suite declares of its transactions.
fn declared(kind: EngineKind) -> Transactions {
    let dir = tempfile::tempdir().unwrap();
    let e = engine::open(kind, &spec(kind, dir.path())).unwrap();
    let t = kv(&*e).transactions();
    e.close().unwrap();
    t
}

/// The engines with transactions say so (the known ones as expected
/// here); an engine that declares none refuses to begin one.
#[test]
fn transactions_are_declared() {
    let known = [
        ("rocksdb", Transactions::Optimistic),
        ("wiredtiger", Transactions::Snapshot),
        ("lmdb", Transactions::Serial),
        ("sqlite", Transactions::Serial),
        ("leveldb", Transactions::None),
        ("null", Transactions::None),
    ];
    for kind in members() {
        let name = kind.name();
        let dir = tempfile::tempdir().unwrap();
        let e = engine::open(kind, &spec(kind, dir.path())).unwrap();
        let t = kv(&*e).transactions();
        if let Some((_, want)) = known.iter().find(|(n, _)| *n == name) {
            assert_eq!(t, *want, "{name}");
        }
        let mut s = kv(&*e).session().unwrap();
        if t == Transactions::None {
            assert!(s.begin(Durability::NoSync).is_err(), "{name}");
        }
        drop(s);
        e.close().unwrap();
    }
    // RocksDB opens a plain database unless asked for transactions.
    let dir = tempfile::tempdir().unwrap();
    let rocksdb = EngineKind::parse("rocksdb").unwrap();
    let mut plain = spec(rocksdb, dir.path());
    plain.transactions = false;
    let e = engine::open(rocksdb, &plain).unwrap();
    assert_eq!(kv(&*e).transactions(), Transactions::None);
    e.close().unwrap();
}

/// Four threads increment one counter 200 times each, read-modify-write in
/// a transaction retried on conflict: the count is exact on every engine
/// with transactions, and engines that detect conflicts report some.
#[test]
fn transactions_keep_a_shared_counter_exact() {
    for kind in members()
        .into_iter()
        .filter(|k| declared(*k) != Transactions::None)
    {
        let name = kind.name();
        let dir = tempfile::tempdir().unwrap();
        let e = engine::open(kind, &spec(kind, dir.path())).unwrap();
        let conflicts = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|sc| {
            for _ in 0..4 {
                let (e, conflicts) = (kv(&*e), &conflicts);
                sc.spawn(move || {
                    let mut s = e.session().unwrap();
                    for _ in 0..200 {
                        loop {
                            let mut tx = s.begin(Durability::NoSync).unwrap();
                            let r = tx.get(Table(0), b"n").and_then(|v| {
                                let n = v.map_or(0, |b| u64::from_be_bytes(b.try_into().unwrap()));
                                tx.put(Table(0), b"n", &(n + 1).to_be_bytes())?;
                                tx.put(Table(1), &n.to_be_bytes(), b"seen")
                            });
                            match r.and_then(|()| tx.commit()) {
                                Ok(()) => break,
                                Err(err) if is_conflict(&err) => {
                                    conflicts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                }
                                Err(err) => panic!("{name}: {err:#}"),
                            }
                        }
                    }
                });
            }
        });
        let mut s = kv(&*e).session().unwrap();
        let n = s.get(Table(0), b"n").unwrap().unwrap();
        assert_eq!(u64::from_be_bytes(n.try_into().unwrap()), 800, "{name}");
        // Every increment saw a distinct value: 800 rows in the second table.
        let rows = s
            .scan(
                Table(1),
                KeyRange::all(),
                Order::Forward,
                usize::MAX,
                &mut |_, _| {},
            )
            .unwrap();
        assert_eq!(rows, 800, "{name}");
        eprintln!(
            "{name}: {} conflicts retried",
            conflicts.load(std::sync::atomic::Ordering::Relaxed)
        );
        drop(s);
        e.close().unwrap();
    }
}

/// Concurrent writers on disjoint keys and readers at once, one session
/// each: every write is visible afterwards, on every engine of the suite
/// that stores data.
#[test]
fn concurrent_sessions() {
    for kind in members()
        .into_iter()
        .filter(|k| k.structure() != ampbench::engine::Structure::None)
    {
        let name = kind.name();
        let dir = tempfile::tempdir().unwrap();
        let e = engine::open(kind, &spec(kind, dir.path())).unwrap();
        std::thread::scope(|sc| {
            for th in 0..4u32 {
                let e = kv(&*e);
                sc.spawn(move || {
                    let mut s = e.session().unwrap();
                    for i in 0..300u32 {
                        let k = [th.to_be_bytes(), i.to_be_bytes()].concat();
                        s.put(Table(0), &k, &k, Durability::NoSync).unwrap();
                        // Overwrites of one shared key race across threads.
                        s.put(Table(1), b"shared", &k, Durability::NoSync).unwrap();
                        assert_eq!(s.get(Table(0), &k).unwrap().as_deref(), Some(&k[..]));
                    }
                });
            }
        });
        let mut s = kv(&*e).session().unwrap();
        let n = s
            .scan(
                Table(0),
                KeyRange::all(),
                Order::Forward,
                usize::MAX,
                &mut |_, _| {},
            )
            .unwrap();
        assert_eq!(n, 1200, "{name}");
        assert!(s.get(Table(1), b"shared").unwrap().is_some(), "{name}");
        drop(s);
        e.close().unwrap();
    }
}

/// Versions are real, read from the library, and settle and stats work on
/// every embedded engine of the registry.
#[test]
fn versions_stats_and_settle() {
    for kind in EngineKind::all().filter(|k| !k.is_server()) {
        let v = kind.library_version().unwrap();
        assert!(!v.contains("unknown"), "{kind}: {v}");
        let dir = tempfile::tempdir().unwrap();
        let e = engine::open(kind, &spec(kind, dir.path())).unwrap();
        let mut s = kv(&*e).session().unwrap();
        for i in 0..1000u32 {
            s.put(Table(0), &i.to_be_bytes(), &[7u8; 100], Durability::NoSync)
                .unwrap();
        }
        drop(s);
        e.settle().unwrap();
        let st = e.stats().unwrap();
        if kind.structure() != ampbench::engine::Structure::None {
            assert!(!st.values.is_empty(), "{kind}: no stats");
        }
        e.close().unwrap();
    }
    let v = |n: &str| EngineKind::parse(n).unwrap().library_version().unwrap();
    assert!(v("rocksdb").starts_with("7.8"));
    assert!(v("wiredtiger").contains("3.2"));
}
