//! The conformance suite: every KvEngine against a BTreeMap model, on the
//! same seeded random operation sequences — puts, overwrites, deletes,
//! batches across tables, point reads, bounded scans forward and reverse
//! with limits, and reopen after close.

use std::collections::BTreeMap;
use std::ops::Bound;

use ampbench::engine::{
    self, Durability, EngineKind, EngineOptions, KeyRange, KvEngine, OpenSpec, Order, Table,
    WriteBatch,
};
use ampbench::rng::Rng;

const TABLES: [&str; 2] = ["alpha", "beta"];
type Model = [BTreeMap<Vec<u8>, Vec<u8>>; 2];

fn spec(dir: &std::path::Path) -> OpenSpec {
    OpenSpec {
        dir: dir.to_path_buf(),
        tables: TABLES.iter().map(|s| s.to_string()).collect(),
        cache_bytes: 8 << 20,
        options: EngineOptions::default(),
    }
}

/// Keys of 1–4 bytes over an alphabet with the edge bytes 0x00 and 0xff, so
/// prefixes and byte order matter.
fn key(r: &mut Rng) -> Vec<u8> {
    const A: [u8; 6] = [0x00, 0x01, b'a', b'b', 0xfe, 0xff];
    let len = r.range_inclusive(1, 4) as usize;
    (0..len).map(|_| A[r.below(6) as usize]).collect()
}

fn value(r: &mut Rng) -> Vec<u8> {
    let mut v = vec![0u8; r.below(40) as usize];
    r.fill(&mut v);
    v
}

fn bound<'a>(r: &mut Rng, k: &'a [u8]) -> Bound<&'a [u8]> {
    match r.below(3) {
        0 => Bound::Included(k),
        1 => Bound::Excluded(k),
        _ => Bound::Unbounded,
    }
}

fn model_scan(
    m: &BTreeMap<Vec<u8>, Vec<u8>>,
    range: KeyRange<'_>,
    order: Order,
    limit: usize,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let in_range = |k: &Vec<u8>| range.above_start(k) && range.below_end(k);
    let it: Box<dyn Iterator<Item = (&Vec<u8>, &Vec<u8>)>> = match order {
        Order::Forward => Box::new(m.iter()),
        Order::Reverse => Box::new(m.iter().rev()),
    };
    it.filter(|(k, _)| in_range(k))
        .take(limit)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn engine_scan(
    e: &dyn KvEngine,
    t: usize,
    range: KeyRange<'_>,
    order: Order,
    limit: usize,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    let n = e
        .scan(Table(t), range, order, limit, &mut |k, v| {
            out.push((k.to_vec(), v.to_vec()))
        })
        .expect("scan");
    assert_eq!(n, out.len(), "scan's count differs from what it visited");
    out
}

fn check_all(e: &dyn KvEngine, model: &Model, stores: bool, ctx: &str) {
    for (t, m) in model.iter().enumerate() {
        let want: Vec<_> = if stores {
            m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        } else {
            vec![]
        };
        assert_eq!(
            engine_scan(e, t, KeyRange::all(), Order::Forward, usize::MAX),
            want,
            "{ctx}: full forward scan of table {t}"
        );
        let mut rev = want.clone();
        rev.reverse();
        assert_eq!(
            engine_scan(e, t, KeyRange::all(), Order::Reverse, usize::MAX),
            rev,
            "{ctx}: full reverse scan of table {t}"
        );
    }
}

/// Runs `ops` random operations with `seed` on `kind`, checking each result
/// against the model. The null engine stores nothing: its model stays empty.
fn run(kind: EngineKind, seed: u64, ops: usize) {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path());
    let stores = kind != EngineKind::Null;
    let mut e = engine::open(kind, &spec).unwrap();
    let mut model: Model = Default::default();
    let mut r = Rng::new(seed);
    for i in 0..ops {
        let t = r.below(2) as usize;
        let d = Durability::from_sync(r.chance(0.1));
        let ctx = format!("{kind} seed {seed} op {i}");
        match r.below(100) {
            0..=29 => {
                let (k, v) = (key(&mut r), value(&mut r));
                e.put(Table(t), &k, &v, d).unwrap();
                if stores {
                    model[t].insert(k, v);
                }
            }
            30..=39 => {
                let k = key(&mut r);
                e.delete(Table(t), &k, d).unwrap();
                model[t].remove(&k);
            }
            40..=49 => {
                let mut b = WriteBatch::new();
                let mut staged = model.clone();
                for _ in 0..r.range_inclusive(1, 8) {
                    let bt = r.below(2) as usize;
                    let k = key(&mut r);
                    if r.chance(0.7) {
                        let v = value(&mut r);
                        b.put(Table(bt), &k, &v);
                        staged[bt].insert(k, v);
                    } else {
                        b.delete(Table(bt), &k);
                        staged[bt].remove(&k);
                    }
                }
                e.write(&b, d).unwrap();
                if stores {
                    model = staged;
                }
            }
            50..=69 => {
                let k = key(&mut r);
                assert_eq!(
                    e.get(Table(t), &k).unwrap(),
                    model[t].get(&k).cloned(),
                    "{ctx}: get {k:?}"
                );
            }
            70..=98 => {
                let (a, b) = (key(&mut r), key(&mut r));
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                let range = KeyRange {
                    start: bound(&mut r, &lo),
                    end: bound(&mut r, &hi),
                };
                let order = if r.chance(0.5) {
                    Order::Forward
                } else {
                    Order::Reverse
                };
                let limit = if r.chance(0.3) {
                    usize::MAX
                } else {
                    r.below(12) as usize
                };
                assert_eq!(
                    engine_scan(&*e, t, range, order, limit),
                    model_scan(&model[t], range, order, limit),
                    "{ctx}: scan {range:?} {order:?} limit {limit}"
                );
            }
            _ => {
                e.close().unwrap();
                e = engine::open(kind, &spec).unwrap();
                check_all(&*e, &model, stores, &format!("{ctx}: after reopen"));
            }
        }
    }
    check_all(&*e, &model, stores, &format!("{kind} seed {seed}: end"));
    e.close().unwrap();
    let e = engine::open(kind, &spec).unwrap();
    check_all(
        &*e,
        &model,
        stores,
        &format!("{kind} seed {seed}: final reopen"),
    );
    e.close().unwrap();
}

fn suite(kind: EngineKind) {
    for seed in [1, 2, 3] {
        run(kind, seed, 1500);
    }
}

#[test]
fn rocksdb_conforms() {
    suite(EngineKind::Rocksdb);
}

#[test]
fn wiredtiger_conforms() {
    suite(EngineKind::Wiredtiger);
}

#[test]
fn lmdb_conforms() {
    suite(EngineKind::Lmdb);
}

#[test]
fn leveldb_conforms() {
    suite(EngineKind::Leveldb);
}

#[test]
fn sqlite_conforms() {
    suite(EngineKind::Sqlite);
}

#[test]
fn null_conforms() {
    suite(EngineKind::Null);
}

/// Concurrent writers on disjoint keys and readers at once: every write is
/// visible afterwards, on every engine that stores data.
#[test]
fn concurrent_writers_and_readers() {
    for kind in [
        EngineKind::Rocksdb,
        EngineKind::Wiredtiger,
        EngineKind::Lmdb,
        EngineKind::Leveldb,
        EngineKind::Sqlite,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let e = engine::open(kind, &spec(dir.path())).unwrap();
        std::thread::scope(|s| {
            for th in 0..4u32 {
                let e = &*e;
                s.spawn(move || {
                    for i in 0..300u32 {
                        let k = [th.to_be_bytes(), i.to_be_bytes()].concat();
                        e.put(Table(0), &k, &k, Durability::NoSync).unwrap();
                        // Overwrites of one shared key race across threads.
                        e.put(Table(1), b"shared", &k, Durability::NoSync).unwrap();
                        assert_eq!(e.get(Table(0), &k).unwrap().as_deref(), Some(&k[..]));
                    }
                });
            }
        });
        let n = e
            .scan(
                Table(0),
                KeyRange::all(),
                Order::Forward,
                usize::MAX,
                &mut |_, _| {},
            )
            .unwrap();
        assert_eq!(n, 1200, "{kind}");
        assert!(e.get(Table(1), b"shared").unwrap().is_some(), "{kind}");
        e.close().unwrap();
    }
}

/// Versions are real, read from the library, and settle works everywhere.
#[test]
fn versions_stats_and_settle() {
    for kind in EngineKind::ALL.into_iter().filter(|k| !k.is_server()) {
        let v = engine::library_version(kind).unwrap();
        assert!(!v.contains("unknown"), "{kind}: {v}");
        let dir = tempfile::tempdir().unwrap();
        let e = engine::open(kind, &spec(dir.path())).unwrap();
        for i in 0..1000u32 {
            e.put(Table(0), &i.to_be_bytes(), &[7u8; 100], Durability::NoSync)
                .unwrap();
        }
        e.settle().unwrap();
        let st = e.stats().unwrap();
        if kind != EngineKind::Null {
            assert!(!st.values.is_empty(), "{kind}: no stats");
        }
        e.close().unwrap();
    }
    assert!(
        engine::library_version(EngineKind::Rocksdb)
            .unwrap()
            .starts_with("7.8")
    );
    assert!(
        engine::library_version(EngineKind::Wiredtiger)
            .unwrap()
            .contains("3.2")
    );
}
