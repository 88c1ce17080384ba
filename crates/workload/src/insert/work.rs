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

/// The deletes an inserter hands to its table's deleter: the reference's
/// queue of 8 statements between its inserter and deleter processes. The
/// inserter waits while 8 are pending, so neither runs more than 8 ahead.
#[derive(Default)]
pub struct DeleteQueue {
    state: std::sync::Mutex<Pending>,
    cv: std::sync::Condvar,
}

#[derive(Default)]
struct Pending {
    /// (lowest id, rows) to delete, in order.
    q: std::collections::VecDeque<(u64, u64)>,
    /// The inserter is done (or gone): no more will come.
    closed: bool,
    /// The deleter is gone (an error): the inserter must stop.
    broken: bool,
}

/// The reference's queue length between inserter and deleter.
const QUEUE: usize = 8;

impl DeleteQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hands over a delete, waiting while the queue is full.
    fn push(&self, lo: u64, n: u64) -> Result<()> {
        let mut p = self.lock();
        while p.q.len() >= QUEUE && !p.broken {
            p = self
                .cv
                .wait_timeout(p, Duration::from_millis(50))
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
        if p.broken {
            anyhow::bail!("insert: the deleter of this table stopped");
        }
        p.q.push_back((lo, n));
        self.cv.notify_all();
        Ok(())
    }

    /// The next delete; None when the inserter is done and none is left,
    /// or on Ctrl-C.
    fn pop(&self) -> Option<(u64, u64)> {
        let mut p = self.lock();
        loop {
            if let Some(d) = p.q.pop_front() {
                self.cv.notify_all();
                return Some(d);
            }
            if p.closed || crate::signals::INTERRUPTED.load(Ordering::SeqCst) {
                return None;
            }
            p = self
                .cv
                .wait_timeout(p, Duration::from_millis(50))
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }

    /// Empty and open again, for a new step.
    pub fn reset(&self) {
        *self.lock() = Pending::default();
    }

    /// No more deletes will come.
    pub fn close(&self) {
        self.lock().closed = true;
        self.cv.notify_all();
    }

    fn break_off(&self) {
        self.lock().broken = true;
        self.cv.notify_all();
    }
}

/// Deletes what its table's inserter hands over, on a connection (or
/// session) of its own, while the inserter goes on: the reference's
/// deleter process. Its operations count no rows (the step's rate is
/// inserts, as the reference's).
pub struct Deleter<'a> {
    /// The workload.
    pub wl: &'a Insert,
    /// This worker's store.
    pub store: Box<dyn InsertStore + 'a>,
    /// Its table.
    pub t: usize,
    /// Its table's queue.
    pub queue: &'a DeleteQueue,
}

impl Worker for Deleter<'_> {
    fn op(&mut self) -> Result<Option<Done>> {
        let Some((lo, n)) = self.queue.pop() else {
            return Ok(None);
        };
        let deleted = self.store.delete(self.t, lo, n, self.wl.indexed())?;
        self.wl.removed(deleted);
        Ok(Some(Done {
            kind: 1,
            ops: 0,
            written: 0,
        }))
    }
}

impl Drop for Deleter<'_> {
    fn drop(&mut self) {
        // Gone, by the end or an error: an inserter still waiting stops.
        self.queue.break_off();
    }
}

/// Inserts `left` rows into table `t`, `batch` per commit; with `delete`
/// as many of the oldest rows then go, so the table's size holds (the
/// reference's `--delete_per_insert`): handed to the table's [`Deleter`]
/// when there is a `queue` (the reference's shape), or deleted here after
/// each commit. One operation is one commit of inserts (and an inline
/// delete); it counts the rows inserted.
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
    /// The table's deleter queue (concurrent deletes), if any.
    pub queue: Option<&'a DeleteQueue>,
    /// The batch's rows, reused.
    pub rows: Vec<Row>,
}

impl Drop for Inserter<'_> {
    fn drop(&mut self) {
        if let Some(q) = self.queue {
            q.close();
        }
    }
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
            match self.queue {
                Some(q) => q.push(lo, k)?,
                None => {
                    deleted = self.store.delete(self.t, lo, k, indexed)?;
                    self.wl.removed(deleted);
                }
            }
        }
        Ok((n as u64, bytes, deleted))
    }
}

impl Worker for Inserter<'_> {
    fn op(&mut self) -> Result<Option<Done>> {
        if self.left == 0 {
            if let Some(q) = self.queue {
                q.close();
            }
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

/// Builds the secondary indexes of table `t`: first `pre` rows inserted
/// without them (the reference's l.x inserts 100 rows, then builds), then
/// one operation per statement that builds indexes (InnoDB's one ALTER
/// TABLE builds the three; elsewhere one each), counting the indexes.
pub struct IndexBuilder<'a> {
    /// The workload.
    pub wl: &'a Insert,
    /// This worker's store.
    pub store: Box<dyn InsertStore + 'a>,
    /// Its table.
    pub t: usize,
    /// Indexes still to build, in order.
    pub left: Vec<super::row::Index>,
    /// Rows to insert before the build (op `insert`, not counted as ops).
    pub pre: u64,
    /// Their generator.
    pub rows_gen: Gen,
}

impl Worker for IndexBuilder<'_> {
    fn op(&mut self) -> Result<Option<Done>> {
        if self.pre > 0 {
            let n = std::mem::take(&mut self.pre) as usize;
            let now = now_secs();
            let mut rows = vec![Row::empty(); n];
            let mut bytes = 0;
            for r in &mut rows {
                self.rows_gen.fill(r, now);
                bytes += r.logical();
            }
            let first = self.wl.tables[self.t]
                .next
                .fetch_add(n as u64, Ordering::SeqCst);
            self.store.insert(self.t, &rows, first, false)?;
            self.wl.added(n as u64, bytes);
            return Ok(Some(Done {
                kind: 1,
                ops: 0,
                written: bytes,
            }));
        }
        if self.left.is_empty() {
            return Ok(None);
        }
        let n = self.store.create_indexes(self.t, &self.left)?.max(1);
        self.left.drain(..n.min(self.left.len()));
        Ok(Some(Done {
            kind: 0,
            ops: n as u64,
            written: 0,
        }))
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
