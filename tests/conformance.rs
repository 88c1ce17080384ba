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

use std::collections::BTreeMap;
use std::ops::Bound;

use ampbench::engine::{
    self, Durability, Engine, EngineKind, KeyRange, KvEngine, KvSession, OpenSpec, Order, Table,
    Transactions, WriteBatch, is_conflict,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestError, TestRng, TestRunner};

const TABLES: usize = 2;
type Key = Vec<u8>;
type Model = [BTreeMap<Key, Vec<u8>>; TABLES];

/// One step of a sequence.
#[derive(Clone, Debug)]
enum Op {
    Put(usize, Key, Vec<u8>, bool),
    Delete(usize, Key),
    Batch(Vec<(usize, Key, Option<Vec<u8>>)>),
    Get(usize, Key),
    Scan {
        t: usize,
        lo: Bound<Key>,
        hi: Bound<Key>,
        reverse: bool,
        limit: usize,
    },
    Reopen,
    /// One transaction, then commit (true) or rollback.
    Txn(Vec<TxnOp>, bool),
    /// Two transactions on two sessions, their operations interleaved, then
    /// committed in the order given (the first flag: A first).
    Race(Vec<TxnOp>, Vec<TxnOp>, bool),
}

#[derive(Clone, Debug)]
enum TxnOp {
    Get(usize, Key),
    Put(usize, Key, Vec<u8>),
    Delete(usize, Key),
}

/// Keys of 1–4 bytes over an alphabet with the edge bytes 0x00 and 0xff,
/// so prefixes and byte order matter.
fn key() -> impl Strategy<Value = Key> {
    prop::collection::vec(
        prop::sample::select(vec![0x00u8, 0x01, b'a', b'b', 0xfe, 0xff]),
        1..=4,
    )
}

/// Keys from a small set, so two transactions often touch the same one.
fn hot_key() -> impl Strategy<Value = Key> {
    prop::collection::vec(prop::sample::select(vec![b'a', b'b', 0xff]), 1..=2)
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..40)
}

fn bound() -> impl Strategy<Value = Bound<Key>> {
    prop_oneof![
        key().prop_map(Bound::Included),
        key().prop_map(Bound::Excluded),
        Just(Bound::Unbounded),
    ]
}

fn txn_op(k: BoxedStrategy<Key>) -> impl Strategy<Value = TxnOp> {
    let t = 0..TABLES;
    prop_oneof![
        (t.clone(), k.clone()).prop_map(|(t, k)| TxnOp::Get(t, k)),
        (t.clone(), k.clone(), value()).prop_map(|(t, k, v)| TxnOp::Put(t, k, v)),
        (t, k).prop_map(|(t, k)| TxnOp::Delete(t, k)),
    ]
}

/// Operations an engine with `txn` transactions can run.
fn op(txn: Transactions) -> BoxedStrategy<Op> {
    let t = 0..TABLES;
    let plain = prop_oneof![
        6 => (t.clone(), key(), value(), prop::bool::weighted(0.1))
            .prop_map(|(t, k, v, s)| Op::Put(t, k, v, s)),
        2 => (t.clone(), key()).prop_map(|(t, k)| Op::Delete(t, k)),
        2 => prop::collection::vec((0..TABLES, key(), prop::option::weighted(0.7, value())), 1..8)
            .prop_map(Op::Batch),
        4 => (t.clone(), key()).prop_map(|(t, k)| Op::Get(t, k)),
        6 => (t, bound(), bound(), any::<bool>(), prop_oneof![0..12usize, Just(usize::MAX)])
            .prop_map(|(t, lo, hi, reverse, limit)| Op::Scan { t, lo, hi, reverse, limit }),
        1 => Just(Op::Reopen),
    ];
    let single = (
        prop::collection::vec(txn_op(key().boxed()), 1..8),
        prop::bool::weighted(0.7),
    )
        .prop_map(|(ops, commit)| Op::Txn(ops, commit));
    let race = (
        prop::collection::vec(txn_op(hot_key().boxed()), 1..6),
        prop::collection::vec(txn_op(hot_key().boxed()), 1..6),
        any::<bool>(),
    )
        .prop_map(|(a, b, a_first)| Op::Race(a, b, a_first));
    match txn {
        Transactions::None => plain.boxed(),
        // One writer at a time: two open transactions in one thread would
        // wait for each other forever; the threaded test covers them.
        Transactions::Serial => prop_oneof![8 => plain, 2 => single].boxed(),
        Transactions::Optimistic | Transactions::Snapshot => {
            prop_oneof![8 => plain, 2 => single, 2 => race].boxed()
        }
    }
}

/// The model's scan: `BTreeMap::range`, with an empty or inverted range
/// (which `range` refuses) giving nothing.
fn model_scan(
    m: &BTreeMap<Key, Vec<u8>>,
    lo: &Bound<Key>,
    hi: &Bound<Key>,
    reverse: bool,
    limit: usize,
) -> Vec<(Key, Vec<u8>)> {
    let key_of = |b: &Bound<Key>| match b {
        Bound::Included(k) | Bound::Excluded(k) => Some(k.clone()),
        Bound::Unbounded => None,
    };
    if let (Some(a), Some(b)) = (key_of(lo), key_of(hi)) {
        let both_included = matches!(lo, Bound::Included(_)) && matches!(hi, Bound::Included(_));
        if a > b || (a == b && !both_included) {
            return Vec::new();
        }
    }
    let r = m.range::<[u8], _>((as_slice(lo), as_slice(hi)));
    let rows: Box<dyn Iterator<Item = (&Key, &Vec<u8>)>> = if reverse {
        Box::new(r.rev())
    } else {
        Box::new(r)
    };
    rows.take(limit)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn as_slice(b: &Bound<Key>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn engine_scan(
    s: &mut dyn KvSession,
    t: usize,
    lo: &Bound<Key>,
    hi: &Bound<Key>,
    reverse: bool,
    limit: usize,
) -> Result<Vec<(Key, Vec<u8>)>, TestCaseError> {
    let mut out = Vec::new();
    let range = KeyRange {
        start: as_slice(lo),
        end: as_slice(hi),
    };
    let order = if reverse {
        Order::Reverse
    } else {
        Order::Forward
    };
    let n = s
        .scan(Table(t), range, order, limit, &mut |k, v| {
            out.push((k.to_vec(), v.to_vec()))
        })
        .map_err(fail)?;
    prop_assert_eq!(n, out.len(), "scan's count differs from what it visited");
    Ok(out)
}

fn fail(e: anyhow::Error) -> TestCaseError {
    TestCaseError::fail(format!("{e:#}"))
}

fn spec(dir: &std::path::Path) -> OpenSpec {
    let mut s = OpenSpec::new(dir, vec!["alpha".into(), "beta".into()], 8 << 20);
    s.transactions = true;
    s
}

fn kv(e: &dyn Engine) -> &dyn KvEngine {
    e.face().kv().expect("a key-value engine")
}

/// Every table, scanned both ways, equals the model.
fn check_all(e: &dyn Engine, model: &Model, ctx: &str) -> Result<(), TestCaseError> {
    let mut s = kv(e).session().map_err(fail)?;
    for (t, m) in model.iter().enumerate() {
        let all = (Bound::Unbounded, Bound::Unbounded);
        for reverse in [false, true] {
            prop_assert_eq!(
                engine_scan(&mut *s, t, &all.0, &all.1, reverse, usize::MAX)?,
                model_scan(m, &all.0, &all.1, reverse, usize::MAX),
                "{}: full scan of table {} (reverse {})",
                ctx,
                t,
                reverse
            );
        }
    }
    Ok(())
}

/// A transaction's state: the model as it began, its own writes on top.
struct TxnModel {
    base: Model,
    writes: Vec<(usize, Key, Option<Vec<u8>>)>,
}

impl TxnModel {
    fn read(&self, t: usize, k: &Key) -> Option<Vec<u8>> {
        match self.writes.iter().rev().find(|w| w.0 == t && &w.1 == k) {
            Some(w) => w.2.clone(),
            None => self.base[t].get(k).cloned(),
        }
    }
    fn apply(&self, m: &mut Model) {
        for (t, k, v) in &self.writes {
            match v {
                Some(v) => m[*t].insert(k.clone(), v.clone()),
                None => m[*t].remove(k),
            };
        }
    }
    /// The last write of a key: `Some(None)` a delete, `None` no write.
    fn last_write(&self, t: usize, k: &Key) -> Option<Option<Vec<u8>>> {
        self.writes
            .iter()
            .rev()
            .find(|w| w.0 == t && &w.1 == k)
            .map(|w| w.2.clone())
    }
}

/// Runs one transaction op on a session's open transaction and checks reads
/// against the model. `Ok(false)`: the transaction lost a conflict.
fn txn_step(s: &mut dyn KvSession, m: &mut TxnModel, op: &TxnOp) -> Result<bool, TestCaseError> {
    let r = match op {
        TxnOp::Get(t, k) => s
            .txn_get(Table(*t), k)
            .map(|got| Some((got, m.read(*t, k)))),
        TxnOp::Put(t, k, v) => s.txn_put(Table(*t), k, v).map(|()| {
            m.writes.push((*t, k.clone(), Some(v.clone())));
            None
        }),
        TxnOp::Delete(t, k) => s.txn_delete(Table(*t), k).map(|()| {
            // Deleting a key this transaction does not see changes nothing
            // (WiredTiger writes nothing for it, so it cannot conflict).
            if m.read(*t, k).is_some() {
                m.writes.push((*t, k.clone(), None));
            }
            None
        }),
    };
    match r {
        Ok(Some((got, want))) => {
            prop_assert_eq!(got, want, "read in a transaction: {:?}", op);
            Ok(true)
        }
        Ok(None) => Ok(true),
        Err(e) if is_conflict(&e) => Ok(false),
        Err(e) => Err(fail(e)),
    }
}

/// Commits (or rolls back); `Ok(false)` when the commit lost a conflict.
fn finish(s: &mut dyn KvSession, commit: bool) -> Result<bool, TestCaseError> {
    if !commit {
        s.txn_rollback().map_err(fail)?;
        return Ok(false);
    }
    match s.txn_commit() {
        Ok(()) => Ok(true),
        Err(e) if is_conflict(&e) => {
            s.txn_rollback().map_err(fail)?;
            Ok(false)
        }
        Err(e) => Err(fail(e)),
    }
}

/// Two interleaved transactions: reads never see the other's uncommitted
/// writes, two transactions that wrote a key differently never both commit,
/// and the committed ones' writes land in commit order.
fn race(
    e: &dyn KvEngine,
    model: &mut Model,
    a: &[TxnOp],
    b: &[TxnOp],
    a_first: bool,
) -> Result<(), TestCaseError> {
    let mut sa = e.session().map_err(fail)?;
    let mut sb = e.session().map_err(fail)?;
    sa.txn_begin(Durability::NoSync).map_err(fail)?;
    sb.txn_begin(Durability::NoSync).map_err(fail)?;
    let mut ma = TxnModel {
        base: model.clone(),
        writes: Vec::new(),
    };
    let mut mb = TxnModel {
        base: model.clone(),
        writes: Vec::new(),
    };
    let (mut alive_a, mut alive_b) = (true, true);
    for i in 0..a.len().max(b.len()) {
        if let (true, Some(op)) = (alive_a, a.get(i)) {
            alive_a = txn_step(&mut *sa, &mut ma, op)?;
        }
        if let (true, Some(op)) = (alive_b, b.get(i)) {
            alive_b = txn_step(&mut *sb, &mut mb, op)?;
        }
    }
    // A transaction that lost a conflict mid-way is rolled back.
    let mut order = [(&mut sa, &ma, alive_a), (&mut sb, &mb, alive_b)];
    if !a_first {
        order.swap(0, 1);
    }
    let mut committed = Vec::new();
    for (s, m, alive) in order.iter_mut() {
        let done = if *alive {
            finish(&mut ***s, true)?
        } else {
            s.txn_rollback().map_err(fail)?;
            false
        };
        if done {
            m.apply(model);
            committed.push(&**m);
        }
    }
    // Both committed: no key may end differently in the two serial orders
    // (a lost update).
    if let [x, y] = committed.as_slice() {
        for (t, k, _) in &x.writes {
            prop_assert_eq!(
                x.last_write(*t, k),
                y.last_write(*t, k).or_else(|| x.last_write(*t, k)),
                "both transactions committed different writes of {:?}",
                k
            );
        }
    }
    Ok(())
}

/// Runs a sequence on a fresh engine, checking every result on the way.
fn run(kind: EngineKind, ops: &[Op]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let spec = spec(dir.path());
    let stores = kind.name() != "null";
    let mut e = engine::open(kind, &spec).map_err(fail)?;
    let mut model: Model = Default::default();
    for (i, op) in ops.iter().enumerate() {
        let ctx = format!("{kind} op {i} {op:?}");
        let mut s = kv(&*e).session().map_err(fail)?;
        match op {
            Op::Put(t, k, v, sync) => {
                s.put(Table(*t), k, v, Durability::from_sync(*sync))
                    .map_err(fail)?;
                if stores {
                    model[*t].insert(k.clone(), v.clone());
                }
            }
            Op::Delete(t, k) => {
                s.delete(Table(*t), k, Durability::NoSync).map_err(fail)?;
                model[*t].remove(k);
            }
            Op::Batch(changes) => {
                let mut b = WriteBatch::new();
                for (t, k, v) in changes {
                    match v {
                        Some(v) => b.put(Table(*t), k, v),
                        None => b.delete(Table(*t), k),
                    }
                }
                s.write(&b, Durability::NoSync).map_err(fail)?;
                if stores {
                    TxnModel {
                        base: model.clone(),
                        writes: changes.clone(),
                    }
                    .apply(&mut model);
                }
            }
            Op::Get(t, k) => {
                let want = model[*t].get(k).cloned();
                prop_assert_eq!(s.get(Table(*t), k).map_err(fail)?, want.clone(), "{}", ctx);
                prop_assert_eq!(
                    s.get_len(Table(*t), k).map_err(fail)?,
                    want.map(|v| v.len()),
                    "{}: get_len",
                    ctx
                );
            }
            Op::Scan {
                t,
                lo,
                hi,
                reverse,
                limit,
            } => {
                prop_assert_eq!(
                    engine_scan(&mut *s, *t, lo, hi, *reverse, *limit)?,
                    model_scan(&model[*t], lo, hi, *reverse, *limit),
                    "{}",
                    ctx
                );
            }
            Op::Reopen => {
                drop(s);
                e.close().map_err(fail)?;
                e = engine::open(kind, &spec).map_err(fail)?;
                check_all(&*e, &model, &ctx)?;
                continue;
            }
            Op::Txn(tops, commit) => {
                let mut m = TxnModel {
                    base: model.clone(),
                    writes: Vec::new(),
                };
                s.txn_begin(Durability::from_sync(i % 3 == 0))
                    .map_err(fail)?;
                for top in tops {
                    prop_assert!(
                        txn_step(&mut *s, &mut m, top)?,
                        "{}: a lone transaction met a conflict",
                        ctx
                    );
                }
                if finish(&mut *s, *commit)? {
                    m.apply(&mut model);
                }
            }
            Op::Race(a, b, a_first) => {
                drop(s);
                race(kv(&*e), &mut model, a, b, *a_first)?;
            }
        }
    }
    check_all(&*e, &model, &format!("{kind}: end"))?;
    e.close().map_err(fail)?;
    let e = engine::open(kind, &spec).map_err(fail)?;
    check_all(&*e, &model, &format!("{kind}: final reopen"))?;
    e.close().map_err(fail)
}

/// Runs `cases` random sequences (fixed seed) on `name`; on a failure,
/// proptest shrinks the sequence and the test prints the minimal one.
fn suite(name: &str, cases: u32) {
    let kind = EngineKind::parse(name).unwrap();
    let txn = {
        let dir = tempfile::tempdir().unwrap();
        let e = engine::open(kind, &spec(dir.path())).unwrap();
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
    let strategy = prop::collection::vec(op(txn), 1..120);
    match runner.run(&strategy, |ops| run(kind, &ops)) {
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

#[test]
fn rocksdb_conforms() {
    suite("rocksdb", 40);
}

#[test]
fn wiredtiger_conforms() {
    suite("wiredtiger", 40);
}

#[test]
fn lmdb_conforms() {
    suite("lmdb", 40);
}

#[test]
fn leveldb_conforms() {
    suite("leveldb", 40);
}

#[test]
fn sqlite_conforms() {
    suite("sqlite", 40);
}

#[test]
fn null_conforms() {
    suite("null", 20);
}

/// The engines with transactions say so; the others say they have none.
#[test]
fn transactions_are_declared() {
    for (name, want) in [
        ("rocksdb", Transactions::Optimistic),
        ("wiredtiger", Transactions::Snapshot),
        ("lmdb", Transactions::Serial),
        ("sqlite", Transactions::Serial),
        ("leveldb", Transactions::None),
        ("null", Transactions::None),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let e = engine::open(EngineKind::parse(name).unwrap(), &spec(dir.path())).unwrap();
        assert_eq!(kv(&*e).transactions(), want, "{name}");
        let mut s = kv(&*e).session().unwrap();
        if want == Transactions::None {
            assert!(s.begin(Durability::NoSync).is_err(), "{name}");
        }
        drop(s);
        e.close().unwrap();
    }
    // RocksDB opens a plain database unless asked for transactions.
    let dir = tempfile::tempdir().unwrap();
    let mut plain = spec(dir.path());
    plain.transactions = false;
    let e = engine::open(EngineKind::parse("rocksdb").unwrap(), &plain).unwrap();
    assert_eq!(kv(&*e).transactions(), Transactions::None);
    e.close().unwrap();
}

/// Four threads increment one counter 200 times each, read-modify-write in
/// a transaction retried on conflict: the count is exact on every engine
/// with transactions, and engines that detect conflicts report some.
#[test]
fn transactions_keep_a_shared_counter_exact() {
    for name in ["rocksdb", "wiredtiger", "lmdb", "sqlite"] {
        let dir = tempfile::tempdir().unwrap();
        let e = engine::open(EngineKind::parse(name).unwrap(), &spec(dir.path())).unwrap();
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
/// each: every write is visible afterwards, on every engine that stores
/// data.
#[test]
fn concurrent_sessions() {
    for name in ["rocksdb", "wiredtiger", "lmdb", "leveldb", "sqlite"] {
        let dir = tempfile::tempdir().unwrap();
        let e = engine::open(EngineKind::parse(name).unwrap(), &spec(dir.path())).unwrap();
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
        let e = engine::open(kind, &spec(dir.path())).unwrap();
        let mut s = kv(&*e).session().unwrap();
        for i in 0..1000u32 {
            s.put(Table(0), &i.to_be_bytes(), &[7u8; 100], Durability::NoSync)
                .unwrap();
        }
        drop(s);
        e.settle().unwrap();
        let st = e.stats().unwrap();
        if kind.name() != "null" {
            assert!(!st.values.is_empty(), "{kind}: no stats");
        }
        e.close().unwrap();
    }
    let v = |n: &str| EngineKind::parse(n).unwrap().library_version().unwrap();
    assert!(v("rocksdb").starts_with("7.8"));
    assert!(v("wiredtiger").contains("3.2"));
}
