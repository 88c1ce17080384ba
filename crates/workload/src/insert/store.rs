//! The insert benchmark's logical operations: the Store each mapping (KV
//! in `kv.rs`, SQL in `sql.rs`) implements, one per worker.

use anyhow::Result;

use super::row::{Index, Row};

/// What a consistency check found in one table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableCheck {
    /// Rows found by the primary key.
    pub rows: u64,
    /// Per secondary index: its name, entries found, and whether they are
    /// exactly one per row (counts and the mapping's digest agree).
    pub indexes: Vec<(&'static str, u64, bool)>,
}

impl TableCheck {
    /// Mismatches against `expected` live rows: the row count's
    /// difference, plus each index's difference from the rows (at least 1
    /// for an index whose entries are not the rows' though as many).
    pub fn mismatches(&self, expected: u64) -> u64 {
        let mut m = self.rows.abs_diff(expected);
        for (_, n, same) in &self.indexes {
            let d = n.abs_diff(self.rows);
            m += if d == 0 && !same { 1 } else { d };
        }
        m
    }
}

/// The workload's operations on one table (`t`, 0-based) of a mapping.
pub trait InsertStore: Send {
    /// Inserts `rows` with ids `first..first + rows.len()` (the KV
    /// mapping's; a SQL table assigns its own AUTO_INCREMENT or bigserial
    /// ids, which run the same way while one writer owns the table), in
    /// one commit; `indexed`: write the secondary index entries too (the
    /// indexes exist).
    fn insert(&mut self, t: usize, rows: &[Row], first: u64, indexed: bool) -> Result<()>;
    /// Deletes the rows with ids in `lo..lo + n` (the oldest), and their
    /// index entries, in one commit; returns the rows deleted.
    fn delete(&mut self, t: usize, lo: u64, n: u64, indexed: bool) -> Result<u64>;
    /// Builds secondary index `ix` of table `t` from its rows.
    fn create_index(&mut self, t: usize, ix: Index) -> Result<()>;
    /// Builds the first of `ixs` (or, where the engine builds several in
    /// one statement as the reference asks it to, all of them); returns
    /// how many it built.
    fn create_indexes(&mut self, t: usize, ixs: &[Index]) -> Result<usize> {
        match ixs.first() {
            Some(ix) => self.create_index(t, *ix).map(|_| 1),
            None => Ok(0),
        }
    }
    /// A covering range query: up to `limit` entries of `ix` from its
    /// first column's value `from` upwards (the primary key's when `ix` is
    /// None); returns the entries read.
    fn range(&mut self, t: usize, ix: Option<Index>, from: u64, limit: usize) -> Result<usize>;
    /// A point query: the rows with these ids; returns the rows found.
    fn point(&mut self, t: usize, ids: &[u64]) -> Result<usize>;
    /// Counts table `t`'s rows and the entries of its first `indexes`
    /// secondary indexes, and whether each index has one entry per row.
    fn check(&mut self, t: usize, indexes: &[Index]) -> Result<TableCheck>;
    /// The mapping's part of debt reduction before the engine's own
    /// (PostgreSQL: VACUUM each table; InnoDB: wait for purge); returns
    /// what it did, or None.
    fn reduce_debt(&mut self, _tables: usize) -> Result<Option<String>> {
        Ok(None)
    }
}

/// A store whose table `t` is the inner store's `t + by`: one of several
/// ampbench clients (`--clients`), whose tables follow the others'.
pub struct Shifted<'a> {
    /// The store.
    pub inner: Box<dyn InsertStore + 'a>,
    /// The first table of this client.
    pub by: usize,
}

impl InsertStore for Shifted<'_> {
    fn insert(&mut self, t: usize, rows: &[Row], first: u64, indexed: bool) -> Result<()> {
        self.inner.insert(t + self.by, rows, first, indexed)
    }
    fn delete(&mut self, t: usize, lo: u64, n: u64, indexed: bool) -> Result<u64> {
        self.inner.delete(t + self.by, lo, n, indexed)
    }
    fn create_index(&mut self, t: usize, ix: Index) -> Result<()> {
        self.inner.create_index(t + self.by, ix)
    }
    fn create_indexes(&mut self, t: usize, ixs: &[Index]) -> Result<usize> {
        self.inner.create_indexes(t + self.by, ixs)
    }
    fn range(&mut self, t: usize, ix: Option<Index>, from: u64, limit: usize) -> Result<usize> {
        self.inner.range(t + self.by, ix, from, limit)
    }
    fn point(&mut self, t: usize, ids: &[u64]) -> Result<usize> {
        self.inner.point(t + self.by, ids)
    }
    fn check(&mut self, t: usize, indexes: &[Index]) -> Result<TableCheck> {
        self.inner.check(t + self.by, indexes)
    }
    fn reduce_debt(&mut self, tables: usize) -> Result<Option<String>> {
        // Every table up to this client's last (the tables before are
        // other clients', reduced by them too).
        self.inner.reduce_debt(tables + self.by)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mismatches_count_missing_rows_and_wrong_entries() {
        let c = TableCheck {
            rows: 10,
            indexes: vec![("a", 10, true), ("b", 9, false), ("c", 10, false)],
        };
        assert_eq!(c.mismatches(10), 2);
        assert_eq!(c.mismatches(12), 4);
        let ok = TableCheck {
            rows: 5,
            indexes: vec![("a", 5, true)],
        };
        assert_eq!(ok.mismatches(5), 0);
    }
}
