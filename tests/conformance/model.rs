//! The model: operations, their proptest strategies, and what a
//! `BTreeMap` says each should return (standard library only).

use std::collections::BTreeMap;
use std::ops::Bound;

use ampbench::engine::Transactions;
use proptest::prelude::*;

pub const TABLES: usize = 2;
pub type Key = Vec<u8>;
pub type Model = [BTreeMap<Key, Vec<u8>>; TABLES];

/// One step of a sequence.
#[derive(Clone, Debug)]
pub enum Op {
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
pub enum TxnOp {
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
pub fn op(txn: Transactions) -> BoxedStrategy<Op> {
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
pub fn model_scan(
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

pub fn as_slice(b: &Bound<Key>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// A transaction's state: the model as it began, its own writes on top.
pub struct TxnModel {
    pub base: Model,
    pub writes: Vec<(usize, Key, Option<Vec<u8>>)>,
}

impl TxnModel {
    pub fn read(&self, t: usize, k: &Key) -> Option<Vec<u8>> {
        match self.writes.iter().rev().find(|w| w.0 == t && &w.1 == k) {
            Some(w) => w.2.clone(),
            None => self.base[t].get(k).cloned(),
        }
    }
    pub fn apply(&self, m: &mut Model) {
        for (t, k, v) in &self.writes {
            match v {
                Some(v) => m[*t].insert(k.clone(), v.clone()),
                None => m[*t].remove(k),
            };
        }
    }
    /// The last write of a key: `Some(None)` a delete, `None` no write.
    pub fn last_write(&self, t: usize, k: &Key) -> Option<Option<Vec<u8>>> {
        self.writes
            .iter()
            .rev()
            .find(|w| w.0 == t && &w.1 == k)
            .map(|w| w.2.clone())
    }
}
