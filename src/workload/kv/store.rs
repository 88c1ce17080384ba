//! The Store of the KV workloads: their logical operations on documents,
//! and the mapping onto any [`KvEngine`] (one table, `docs`). The SQL
//! mapping (a `(k, v)` table) comes with the server engines.

use anyhow::Result;

use crate::engine::{Durability, KeyRange, KvEngine, Order, Table, WriteBatch};

/// The logical operations of the KV workloads.
pub trait DocStore: Send + Sync {
    /// Inserts (or overwrites) documents atomically.
    fn insert_batch(&self, docs: &[(Vec<u8>, Vec<u8>)], d: Durability) -> Result<()>;
    /// Reads one document; returns its value length if found.
    fn read(&self, key: &[u8]) -> Result<Option<usize>>;
    /// Reads one document's value.
    fn read_value(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Inserts or overwrites one document.
    fn write(&self, key: &[u8], value: &[u8], d: Durability) -> Result<()>;
    /// Reads up to `n` documents in key order from `start`; returns how many.
    fn scan(&self, start: &[u8], n: usize) -> Result<usize>;
}

/// The KV mapping: documents are the rows of one engine table.
#[derive(Clone, Copy)]
pub struct KvDocs<'a> {
    /// The engine.
    pub engine: &'a dyn KvEngine,
    /// The table holding the documents.
    pub table: Table,
}

impl DocStore for KvDocs<'_> {
    fn insert_batch(&self, docs: &[(Vec<u8>, Vec<u8>)], d: Durability) -> Result<()> {
        let mut b = WriteBatch::new();
        for (k, v) in docs {
            b.put(self.table, k, v);
        }
        self.engine.write(&b, d)
    }
    fn read(&self, key: &[u8]) -> Result<Option<usize>> {
        Ok(self.engine.get(self.table, key)?.map(|v| v.len()))
    }
    fn read_value(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.engine.get(self.table, key)
    }
    fn write(&self, key: &[u8], value: &[u8], d: Durability) -> Result<()> {
        self.engine.put(self.table, key, value, d)
    }
    fn scan(&self, start: &[u8], n: usize) -> Result<usize> {
        self.engine.scan(
            self.table,
            KeyRange::from(start),
            Order::Forward,
            n,
            &mut |_, _| {},
        )
    }
}
