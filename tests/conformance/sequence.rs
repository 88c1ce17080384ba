//! One sequence run on a fresh engine, every result checked against the
//! model: plain operations, reopen, transactions and races.

use std::ops::Bound;

use ampbench::engine::{
    self, Durability, Engine, EngineKind, KeyRange, KvEngine, KvSession, Order, Table, WriteBatch,
    is_conflict,
};
use proptest::prelude::*;

use super::model::{Key, Model, Op, TxnModel, TxnOp, as_slice, model_scan};
use super::{fail, kv, spec};

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
pub fn run(kind: EngineKind, ops: &[Op]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let spec = spec(kind, dir.path());
    // An engine that keeps nothing (null) must answer every read empty.
    let stores = kind.structure() != ampbench::engine::Structure::None;
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
