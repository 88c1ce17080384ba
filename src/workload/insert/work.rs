//! The insert benchmark's workers: the inserter of the load and write
//! steps (with its deleter), the index builder, debt reduction, the query
//! threads and the rate-limited writer of the query steps.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::row::{Gen, INDEXES, Row};
use super::store::InsertStore;
use super::{Insert, now_secs};
use crate::driver::{Done, Worker};
use crate::engine::EngineRef;
use crate::rng::Rng;

/// One operation that wrote no user bytes (an index built, a query).
const ONE: Done = Done {
    kind: 0,
    ops: 1,
    written: 0,
};

/// Inserts `left` rows into table `t`, `batch` per commit; with `delete`
/// it then deletes as many of the oldest rows, so the table's size holds
/// (the reference's `--delete_per_insert`). One operation is one commit of
/// inserts (and its delete); it counts the rows inserted.
pub struct Inserter<'a> {
    /// The workload.
    pub wl: &'a Insert,
    /// This worker's store.
    pub store: Box<dyn InsertStore + 'a>,
    /// Its rows.
    pub rows_gen: Gen,
    /// Its table.
    pub t: usize,
    /// Rows still to insert.
    pub left: u64,
    /// Rows per commit.
    pub batch: usize,
    /// Delete as many of the oldest rows after each commit.
    pub delete: bool,
    /// The batch's rows, reused.
    pub rows: Vec<Row>,
}

impl Inserter<'_> {
    /// Inserts one batch of `n` rows and deletes as many old ones;
    /// returns (rows inserted, logical bytes, rows deleted).
    fn commit(&mut self, n: usize) -> Result<(u64, u64, u64)> {
        let now = now_secs();
        self.rows.resize_with(n, Row::empty);
        let mut bytes = 0;
        for r in &mut self.rows[..n] {
            self.rows_gen.fill(r, now);
            bytes += r.logical();
        }
        let indexed = self.wl.indexed();
        let table = &self.wl.tables[self.t];
        let first = table.next.fetch_add(n as u64, Ordering::SeqCst);
        self.store.insert(self.t, &self.rows[..n], first, indexed)?;
        self.wl.added(n as u64, bytes);
        let mut deleted = 0;
        if self.delete {
            let lo = table.lo.load(Ordering::SeqCst);
            let next = table.next.load(Ordering::SeqCst);
            let k = (n as u64).min(next.saturating_sub(lo));
            table.lo.fetch_add(k, Ordering::SeqCst);
            deleted = self.store.delete(self.t, lo, k, indexed)?;
            self.wl.removed(deleted);
        }
        Ok((n as u64, bytes, deleted))
    }
}

impl Worker for Inserter<'_> {
    fn op(&mut self) -> Result<Option<Done>> {
        if self.left == 0 {
            return Ok(None);
        }
        let n = (self.batch as u64).min(self.left) as usize;
        let (ops, written, _) = self.commit(n)?;
        self.left -= ops;
        Ok(Some(Done {
            kind: 0,
            ops,
            written,
        }))
    }
}

/// Builds the secondary indexes of table `t`, one operation per index.
pub struct IndexBuilder<'a> {
    /// This worker's store.
    pub store: Box<dyn InsertStore + 'a>,
    /// Its table.
    pub t: usize,
    /// Indexes still to build.
    pub left: Vec<super::row::Index>,
}

impl Worker for IndexBuilder<'_> {
    fn op(&mut self) -> Result<Option<Done>> {
        let Some(ix) = self.left.pop() else {
            return Ok(None);
        };
        self.store.create_index(self.t, ix)?;
        Ok(Some(ONE))
    }
}

/// Debt reduction: the mapping's part (VACUUM, InnoDB purge), the
/// engine's own (flush and compactions, dirty pages, a checkpoint), then
/// an optional sleep; one operation.
pub struct Debt<'a> {
    /// The workload.
    pub wl: &'a Insert,
    /// A store for the mapping's part.
    pub store: Box<dyn InsertStore + 'a>,
    /// The engine.
    pub engine: EngineRef<'a>,
    /// Done already.
    pub done: bool,
}

impl Worker for Debt<'_> {
    fn op(&mut self) -> Result<Option<Done>> {
        if self.done {
            return Ok(None);
        }
        self.done = true;
        let mut said = Vec::new();
        if let Some(s) = self.store.reduce_debt(self.wl.tables.len())? {
            said.push(s);
        }
        let engine_part = match self.engine {
            EngineRef::Kv(e) => e.settle()?,
            EngineRef::Sql(e) => e.settle()?,
        };
        said.push(engine_part);
        if self.wl.debt_sleep > 0.0 {
            std::thread::sleep(Duration::from_secs_f64(self.wl.debt_sleep));
            said.push(format!("slept {}s", self.wl.debt_sleep));
        }
        *self.wl.debt_said.lock().unwrap_or_else(|p| p.into_inner()) = said;
        Ok(Some(ONE))
    }
}

/// A query thread: range or point queries on its table at full speed.
pub struct Querier<'a> {
    /// The workload.
    pub wl: &'a Insert,
    /// This worker's store.
    pub store: Box<dyn InsertStore + 'a>,
    /// Its random stream.
    pub rng: Rng,
    /// Its table.
    pub t: usize,
    /// Point queries (`qp`) rather than range queries (`qr`).
    pub point: bool,
    /// Ids of a point query, reused.
    pub ids: Vec<u64>,
}

impl Worker for Querier<'_> {
    fn op(&mut self) -> Result<Option<Done>> {
        let per = self.wl.rows_per_query;
        if self.point {
            let table = &self.wl.tables[self.t];
            let lo = table.lo.load(Ordering::Relaxed);
            let hi = table.next.load(Ordering::Relaxed).max(lo + 1);
            self.ids.clear();
            for _ in 0..per {
                let id = lo + self.rng.below(hi - lo);
                self.ids.push(id);
            }
            let found = self.store.point(self.t, &self.ids)?;
            self.wl.point_found(per as u64, found as u64);
        } else {
            let ixs = &INDEXES[..self.wl.indexes];
            let ix = if ixs.is_empty() {
                None
            } else {
                Some(ixs[self.rng.below(ixs.len() as u64) as usize])
            };
            let from = match ix {
                Some(ix) => self.rng.below(ix.first_values() as u64),
                None => {
                    let table = &self.wl.tables[self.t];
                    let lo = table.lo.load(Ordering::Relaxed);
                    let hi = table.next.load(Ordering::Relaxed).max(lo + 1);
                    lo + self.rng.below(hi - lo)
                }
            };
            self.store.range(self.t, ix, from, per)?;
        }
        Ok(Some(ONE))
    }
}

/// The query steps' writer: one commit of `batch` rows (and the delete of
/// as many old ones) per call, to the tables in turn, at the rate the
/// driver keeps; counts what it did inside the measured window.
pub struct Writer<'a> {
    /// Inserts and deletes, one table after another.
    pub ins: Vec<Inserter<'a>>,
    /// The next table's inserter.
    pub turn: usize,
    /// The measured window (start, end).
    pub window: (Instant, Instant),
}

impl Worker for Writer<'_> {
    fn op(&mut self) -> Result<Option<Done>> {
        let at = Instant::now();
        let i = self.turn % self.ins.len();
        self.turn += 1;
        let w = &mut self.ins[i];
        let n = w.batch;
        let (ops, written, deleted) = w.commit(n)?;
        if at >= self.window.0 && at < self.window.1 {
            w.wl.writer_did(ops, deleted);
        }
        Ok(Some(Done {
            kind: 0,
            ops,
            written,
        }))
    }
}
