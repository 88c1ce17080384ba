//! The key-value face of an engine: [`KvEngine`] opens a [`KvSession`] per
//! worker thread (the thread owns it: nothing is shared, so nothing is
//! locked on the measured path), and a session reads, writes, scans and,
//! where the engine has them, runs transactions through a [`Txn`].

use std::ops::Bound;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::Engine;

/// Whether a write must be durable when the call returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Durability {
    /// Durable on return: the engine syncs its log (or data) before returning.
    Sync,
    /// The engine may return before the write reaches storage.
    NoSync,
}

impl Durability {
    /// `Sync` when `sync` is true.
    pub fn from_sync(sync: bool) -> Durability {
        if sync {
            Durability::Sync
        } else {
            Durability::NoSync
        }
    }
}

/// A table opened with the engine: an index into [`super::OpenSpec::tables`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Table(pub usize);

/// Direction of a range scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Ascending keys, starting at the range's start.
    Forward,
    /// Descending keys, starting at the range's end.
    Reverse,
}

/// A key range for scans; `start` is the low end, `end` the high end,
/// whatever the scan's direction.
#[derive(Clone, Copy, Debug)]
pub struct KeyRange<'a> {
    /// The low end.
    pub start: Bound<&'a [u8]>,
    /// The high end.
    pub end: Bound<&'a [u8]>,
}

impl<'a> KeyRange<'a> {
    /// Every key of the table.
    pub fn all() -> KeyRange<'static> {
        KeyRange {
            start: Bound::Unbounded,
            end: Bound::Unbounded,
        }
    }

    /// Keys from `start` (inclusive) upwards.
    pub fn from(start: &'a [u8]) -> KeyRange<'a> {
        KeyRange {
            start: Bound::Included(start),
            end: Bound::Unbounded,
        }
    }
}

/// One change in a [`WriteBatch`], as its iterator gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// Insert or overwrite.
    Put {
        /// Target table.
        table: Table,
        /// Key bytes.
        key: &'a [u8],
        /// Value bytes.
        value: &'a [u8],
    },
    /// Remove (a missing key is not an error).
    Delete {
        /// Target table.
        table: Table,
        /// Key bytes.
        key: &'a [u8],
    },
}

/// Where one change's bytes are in the batch's buffer.
#[derive(Clone, Copy, Debug)]
struct Entry {
    table: Table,
    at: usize,
    key_len: usize,
    /// `None` for a delete.
    value_len: Option<usize>,
}

/// Changes applied atomically, across tables, by [`KvSession::write`]. Keys
/// and values are copied into one buffer, so a batch reused with
/// [`clear`](WriteBatch::clear) allocates nothing once it has grown.
#[derive(Clone, Debug, Default)]
pub struct WriteBatch {
    bytes: Vec<u8>,
    entries: Vec<Entry>,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }
    /// Adds a put.
    pub fn put(&mut self, table: Table, key: &[u8], value: &[u8]) {
        self.entries.push(Entry {
            table,
            at: self.bytes.len(),
            key_len: key.len(),
            value_len: Some(value.len()),
        });
        self.bytes.extend_from_slice(key);
        self.bytes.extend_from_slice(value);
    }
    /// Adds a delete.
    pub fn delete(&mut self, table: Table, key: &[u8]) {
        self.entries.push(Entry {
            table,
            at: self.bytes.len(),
            key_len: key.len(),
            value_len: None,
        });
        self.bytes.extend_from_slice(key);
    }
    /// The changes, in the order added.
    pub fn iter(&self) -> impl Iterator<Item = BatchOp<'_>> {
        self.entries.iter().map(|e| {
            let key = &self.bytes[e.at..e.at + e.key_len];
            match e.value_len {
                Some(n) => BatchOp::Put {
                    table: e.table,
                    key,
                    value: &self.bytes[e.at + e.key_len..e.at + e.key_len + n],
                },
                None => BatchOp::Delete {
                    table: e.table,
                    key,
                },
            }
        })
    }
    /// Number of changes.
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    /// True when there are no changes.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    /// Removes every change, keeping the allocations.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.bytes.clear();
    }
}

/// What an engine offers for multi-key read-modify-write changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transactions {
    /// None: a caller that needs one must serialise its changes itself.
    None,
    /// One writer at a time (LMDB's write transaction, SQLite's `BEGIN
    /// IMMEDIATE`): a second writer waits, and there is never a conflict.
    Serial,
    /// Optimistic (RocksDB's OptimisticTransactionDB): keys read for update
    /// and written are checked at commit, which fails with a [`Conflict`]
    /// when another writer changed one of them since.
    Optimistic,
    /// Snapshot isolation, first updater wins (WiredTiger): an update of a
    /// key another open or newer transaction changed fails at once with a
    /// [`Conflict`].
    Snapshot,
}

impl Transactions {
    /// How it is shown in reports.
    pub fn describe(self) -> &'static str {
        match self {
            Transactions::None => "none",
            Transactions::Serial => "serial (one writer at a time, no conflicts)",
            Transactions::Optimistic => "optimistic (conflicts found at commit)",
            Transactions::Snapshot => "snapshot isolation (conflicts found at update)",
        }
    }
}

/// A transaction lost to a concurrent one and was rolled back: retry it.
/// Engines return it (in the error chain) from a transaction's reads,
/// writes or commit; see [`is_conflict`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict(pub String);

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "transaction conflict: {}", self.0)
    }
}

impl std::error::Error for Conflict {}

/// True when `e` is (or wraps) a [`Conflict`].
pub fn is_conflict(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<Conflict>())
}

/// Waits between attempts of a transaction that keeps losing conflicts:
/// the first retry only yields, later ones sleep 10 µs, 20 µs, … up to
/// 10 ms, so a writer whose conflicting update belongs to a transaction
/// still committing (a WiredTiger update stays uncommitted through its
/// commit's fsync) waits for it instead of spinning. Gives up after
/// `limit` of retrying (a livelock, not contention).
#[derive(Debug)]
pub struct Backoff {
    attempts: u32,
    started: Option<std::time::Instant>,
    limit: std::time::Duration,
}

impl Backoff {
    /// A backoff that gives up after `limit` of retries in a row.
    pub fn new(limit: std::time::Duration) -> Backoff {
        Backoff {
            attempts: 0,
            started: None,
            limit,
        }
    }

    /// Retries so far.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Waits before the next attempt; fails when retrying has lasted past
    /// the limit.
    pub fn wait(&mut self, what: &dyn std::fmt::Display) -> Result<()> {
        let started = *self.started.get_or_insert_with(std::time::Instant::now);
        if started.elapsed() > self.limit {
            anyhow::bail!(
                "{what}: still losing conflicts after {} retries in {:.1}s",
                self.attempts,
                started.elapsed().as_secs_f64()
            );
        }
        self.attempts += 1;
        match self.attempts {
            1 => std::thread::yield_now(),
            n => std::thread::sleep(std::time::Duration::from_micros(
                (10u64 << (n - 2).min(10)).min(10_000),
            )),
        }
        Ok(())
    }
}

/// A storage engine with named tables, point and range reads, atomic
/// batches and, where it has them, transactions. Work is done through
/// sessions, one per thread.
pub trait KvEngine: Engine {
    /// A new session for the calling thread. Sessions hold the engine's
    /// per-thread state (a WiredTiger session with its cursors, an SQLite
    /// connection, a reusable LMDB read transaction, a RocksDB write batch)
    /// and are used by one thread at a time.
    fn session(&self) -> Result<Box<dyn KvSession + '_>>;

    /// The transactions sessions of this engine can run.
    fn transactions(&self) -> Transactions {
        Transactions::None
    }
}

/// One thread's handle on a [`KvEngine`].
///
/// Required: [`get`](KvSession::get), [`scan`](KvSession::scan) and
/// [`write`](KvSession::write). `put`, `delete` and `get_len` default to
/// those; engines override them where cheaper. The `txn_*` methods are the
/// engine side of [`Txn`]: engines without transactions keep the defaults,
/// which fail; callers use `begin` on `dyn KvSession`, never these.
pub trait KvSession: Send {
    /// Reads one key.
    fn get(&mut self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Reads one key and returns only its value's length: an engine that can
    /// look at the value in place (RocksDB pins it in the block cache) skips
    /// the copy, as db_bench's readrandom does.
    fn get_len(&mut self, table: Table, key: &[u8]) -> Result<Option<usize>> {
        Ok(self.get(table, key)?.map(|v| v.len()))
    }

    /// Visits up to `limit` entries of `range` in `order`, calling `visit`
    /// with each key and value; returns how many were visited.
    fn scan(
        &mut self,
        table: Table,
        range: KeyRange<'_>,
        order: Order,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize>;

    /// Applies every change of `batch` atomically.
    fn write(&mut self, batch: &WriteBatch, durability: Durability) -> Result<()>;

    /// Applies every change of a load's batch. Unlike [`write`](Self::write)
    /// the batch need not be atomic: an engine whose transactions hold
    /// every touched page in its cache until commit (WiredTiger) applies an
    /// unsynced batch change by change, as the ForestDB benchmark's
    /// WiredTiger wrapper does (it opens a transaction only to sync).
    fn write_load(&mut self, batch: &WriteBatch, durability: Durability) -> Result<()> {
        self.write(batch, durability)
    }

    /// Inserts or overwrites one key.
    fn put(&mut self, table: Table, key: &[u8], value: &[u8], d: Durability) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(table, key, value);
        self.write(&b, d)
    }

    /// Removes one key; a missing key is not an error.
    fn delete(&mut self, table: Table, key: &[u8], d: Durability) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(table, key);
        self.write(&b, d)
    }

    /// Starts a transaction whose commit has durability `d`.
    fn txn_begin(&mut self, _d: Durability) -> Result<()> {
        anyhow::bail!("this engine has no transactions")
    }
    /// Reads a key in the open transaction: its own writes first, and the
    /// key takes part in conflict detection (validated at commit, or
    /// conflicting at once) as the engine's [`Transactions`] says.
    fn txn_get(&mut self, _table: Table, _key: &[u8]) -> Result<Option<Vec<u8>>> {
        anyhow::bail!("no transaction is open")
    }
    /// Writes a key in the open transaction.
    fn txn_put(&mut self, _table: Table, _key: &[u8], _value: &[u8]) -> Result<()> {
        anyhow::bail!("no transaction is open")
    }
    /// Removes a key in the open transaction (a missing key is not an error).
    fn txn_delete(&mut self, _table: Table, _key: &[u8]) -> Result<()> {
        anyhow::bail!("no transaction is open")
    }
    /// Commits the open transaction; a [`Conflict`] means it was rolled back.
    fn txn_commit(&mut self) -> Result<()> {
        anyhow::bail!("no transaction is open")
    }
    /// Rolls back the open transaction (nothing when none is open).
    fn txn_rollback(&mut self) -> Result<()> {
        Ok(())
    }
}

impl<'a> dyn KvSession + 'a {
    /// Starts a transaction. It rolls back when dropped uncommitted (an
    /// error, a conflict, a panic), so the session is always usable again.
    pub fn begin(&mut self, d: Durability) -> Result<Txn<'_, 'a>> {
        self.txn_begin(d)?;
        Ok(Txn {
            s: self,
            open: true,
            wrote: false,
        })
    }
}

/// An open transaction on a session; see [`KvSession::txn_get`] for what
/// its reads see. Any call may fail with a [`Conflict`]: drop the
/// transaction (it rolls back) and run it again.
///
/// A transaction that wrote nothing ends with a rollback, not a commit: it
/// has nothing to make durable, and no engine then syncs its log for it
/// (RocksDB and LMDB would).
pub struct Txn<'s, 'a> {
    s: &'s mut (dyn KvSession + 'a),
    open: bool,
    wrote: bool,
}

impl Txn<'_, '_> {
    /// Reads a key (read-your-writes; checked for conflicts).
    pub fn get(&mut self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.s.txn_get(table, key)
    }
    /// Writes a key.
    pub fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<()> {
        self.wrote = true;
        self.s.txn_put(table, key, value)
    }
    /// Removes a key.
    pub fn delete(&mut self, table: Table, key: &[u8]) -> Result<()> {
        self.wrote = true;
        self.s.txn_delete(table, key)
    }
    /// Commits (rolls back one that wrote nothing). On error the
    /// transaction is rolled back.
    pub fn commit(mut self) -> Result<()> {
        self.open = false;
        if !self.wrote {
            return self.s.txn_rollback();
        }
        let r = self.s.txn_commit();
        if r.is_err() {
            let _ = self.s.txn_rollback();
        }
        r
    }
    /// Rolls back.
    pub fn rollback(mut self) -> Result<()> {
        self.open = false;
        self.s.txn_rollback()
    }
}

impl Drop for Txn<'_, '_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.s.txn_rollback();
        }
    }
}
