//! The Store of the KV workloads: their logical operations on documents,
//! the mapping onto any [`crate::engine::KvEngine`] (one table) here, and onto any SQL
//! engine (a `(k, v)` table) in `sql.rs`. Each worker has its own store.

use anyhow::Result;

use crate::engine::{Durability, KeyRange, KvSession, Order, Table, WriteBatch};

/// The logical operations of the KV workloads.
pub trait DocStore: Send {
    /// Inserts (or overwrites) documents atomically.
    fn insert_batch(&mut self, docs: &[(Vec<u8>, Vec<u8>)], d: Durability) -> Result<()>;
    /// Reads one document; returns its value length if found.
    fn read(&mut self, key: &[u8]) -> Result<Option<usize>>;
    /// Reads one document's value.
    fn read_value(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Inserts or overwrites one document.
    fn write(&mut self, key: &[u8], value: &[u8], d: Durability) -> Result<()>;
    /// Reads up to `n` documents in key order from `start`; returns how many.
    fn scan(&mut self, start: &[u8], n: usize) -> Result<usize>;
}

/// The KV mapping: documents are the rows of one engine table, reached
/// through the worker's own session.
pub struct KvDocs<'a> {
    /// The worker's session.
    pub session: Box<dyn KvSession + 'a>,
    /// The table holding the documents.
    pub table: Table,
    /// The batch of `insert_batch`, reused.
    pub batch: WriteBatch,
}

impl DocStore for KvDocs<'_> {
    fn insert_batch(&mut self, docs: &[(Vec<u8>, Vec<u8>)], d: Durability) -> Result<()> {
        self.batch.clear();
        for (k, v) in docs {
            self.batch.put(self.table, k, v);
        }
        self.session.write_load(&self.batch, d)
    }
    fn read(&mut self, key: &[u8]) -> Result<Option<usize>> {
        self.session.get_len(self.table, key)
    }
    fn read_value(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.session.get(self.table, key)
    }
    fn write(&mut self, key: &[u8], value: &[u8], d: Durability) -> Result<()> {
        self.session.put(self.table, key, value, d)
    }
    fn scan(&mut self, start: &[u8], n: usize) -> Result<usize> {
        self.session.scan(
            self.table,
            KeyRange::from(start),
            Order::Forward,
            n,
            &mut |_, _| {},
        )
    }
}
