//! The insert benchmark on a KV engine: per benchmark table `piN` an
//! engine table under the primary key (8-byte big-endian id → encoded
//! row) and one engine table per secondary index (index columns and id,
//! big-endian, → empty value), as MyRocks and MongoRocks lay them out.
//!
//! Index entries are written blind: an insert puts the row and its
//! entries in one batch, with no read. On an LSM that is a memtable
//! insert; on a B-Tree the same put must find its leaf, reading it when
//! it is not cached: that difference is what the benchmark shows. A
//! delete reads the rows it removes (their entries' keys hold their
//! columns), as every engine must. `l.x` builds an index from sorted
//! entries, as the SQL engines' index builds do.

use anyhow::Result;

use super::row::{Digest, Fixed, INDEXES, Index, PK, Row, index_key, pk};
use super::store::{InsertStore, TableCheck};
use crate::engine::{Durability, KeyRange, KvSession, Order, Table, WriteBatch};

/// Index entries sorted in memory at a time by an index build: 24 MB.
const SORT_RUN: usize = 1 << 20;

/// The engine tables of `tables` benchmark tables with `indexes`
/// secondary indexes each: `pi1`, `pi1_marketsegment`, …, `pi2`, ….
pub fn table_names(tables: usize, indexes: usize) -> Vec<String> {
    (1..=tables)
        .flat_map(|t| {
            std::iter::once(format!("pi{t}")).chain(
                INDEXES[..indexes]
                    .iter()
                    .map(move |ix| format!("pi{t}_{}", ix.name())),
            )
        })
        .collect()
}

/// One worker's KV store.
pub struct KvInsert<'a> {
    s: Box<dyn KvSession + 'a>,
    /// Secondary indexes per table (engine tables per benchmark table - 1).
    indexes: usize,
    durability: Durability,
    batch: WriteBatch,
    key: Vec<u8>,
    value: Vec<u8>,
    /// Fixed columns and ids of the rows a delete read.
    doomed: Vec<(u64, Fixed)>,
}

impl<'a> KvInsert<'a> {
    /// A store over `s`, whose engine opened [`table_names`]`(_, indexes)`.
    pub fn new(s: Box<dyn KvSession + 'a>, indexes: usize, durability: Durability) -> Self {
        KvInsert {
            s,
            indexes,
            durability,
            batch: WriteBatch::new(),
            key: Vec::with_capacity(32),
            value: Vec::with_capacity(64),
            doomed: Vec::new(),
        }
    }

    fn pk_table(&self, t: usize) -> Table {
        Table(t * (1 + self.indexes))
    }

    fn ix_table(&self, t: usize, ix: Index) -> Table {
        let k = INDEXES.iter().position(|i| *i == ix).unwrap_or(0);
        Table(t * (1 + self.indexes) + 1 + k)
    }

    /// Adds the entries of row `id` to every index to the batch, as puts
    /// or deletes.
    fn entries(&mut self, t: usize, f: Fixed, id: u64, put: bool) {
        for ix in &INDEXES[..self.indexes] {
            index_key(*ix, f, id, &mut self.key);
            let table = self.ix_table(t, *ix);
            if put {
                self.batch.put(table, &self.key, &[]);
            } else {
                self.batch.delete(table, &self.key);
            }
        }
    }
}

impl InsertStore for KvInsert<'_> {
    fn insert(&mut self, t: usize, rows: &[Row], first: u64, indexed: bool) -> Result<()> {
        self.batch.clear();
        let table = self.pk_table(t);
        for (i, r) in rows.iter().enumerate() {
            let id = first + i as u64;
            self.value.clear();
            r.encode(&mut self.value);
            self.batch.put(table, &pk(id), &self.value);
            if indexed {
                self.entries(t, r.columns(), id, true);
            }
        }
        self.s.write(&self.batch, self.durability)
    }

    fn delete(&mut self, t: usize, lo: u64, n: u64, indexed: bool) -> Result<u64> {
        let table = self.pk_table(t);
        let start = pk(lo);
        let end = pk(lo.saturating_add(n));
        let mut doomed = std::mem::take(&mut self.doomed);
        doomed.clear();
        let range = KeyRange {
            start: std::ops::Bound::Included(&start),
            end: std::ops::Bound::Excluded(&end),
        };
        self.s
            .scan(table, range, Order::Forward, n as usize, &mut |k, v| {
                if let (Ok(id), Some(f)) = (<[u8; PK]>::try_from(k), Row::fixed(v)) {
                    doomed.push((u64::from_be_bytes(id), f));
                }
            })?;
        self.batch.clear();
        for (id, f) in &doomed {
            self.batch.delete(table, &pk(*id));
            if indexed {
                self.entries(t, *f, *id, false);
            }
        }
        let found = doomed.len() as u64;
        self.doomed = doomed;
        if found > 0 {
            self.s.write(&self.batch, self.durability)?;
        }
        Ok(found)
    }

    /// Builds an index as a SQL engine does: the rows are read in primary
    /// key order, their entries sorted (in runs of [`SORT_RUN`] entries, so
    /// memory stays bounded) and written in key order, so a B-Tree appends
    /// to its rightmost leaf instead of reading a random leaf per entry.
    fn create_index(&mut self, t: usize, ix: Index) -> Result<()> {
        let table = self.pk_table(t);
        let target = self.ix_table(t, ix);
        let mut from = pk(0).to_vec();
        let mut run: Vec<[u8; 24]> = Vec::new();
        let mut len = 0;
        loop {
            let mut last = None;
            let key = &mut self.key;
            let n = self.s.scan(
                table,
                KeyRange::from(&from),
                Order::Forward,
                4096,
                &mut |k, v| {
                    if let (Ok(id), Some(f)) = (<[u8; PK]>::try_from(k), Row::fixed(v)) {
                        let id = u64::from_be_bytes(id);
                        index_key(ix, f, id, key);
                        let mut e = [0u8; 24];
                        e[..key.len()].copy_from_slice(key);
                        len = key.len();
                        run.push(e);
                        last = Some(id);
                    }
                },
            )?;
            let more = last.is_some() && n == 4096;
            if run.len() >= SORT_RUN || !more {
                run.sort_unstable();
                for chunk in run.chunks(4096) {
                    self.batch.clear();
                    for e in chunk {
                        self.batch.put(target, &e[..len], &[]);
                    }
                    self.s.write_load(&self.batch, Durability::NoSync)?;
                }
                run.clear();
            }
            match last {
                Some(id) if more => from = pk(id + 1).to_vec(),
                _ => return Ok(()),
            }
        }
    }

    fn range(&mut self, t: usize, ix: Option<Index>, from: u64, limit: usize) -> Result<usize> {
        let (table, start) = match ix {
            // `>` (registersegment): from the next value of the column on.
            Some(ix) => (
                self.ix_table(t, ix),
                ((from + u64::from(ix.strict())) as u32)
                    .to_be_bytes()
                    .to_vec(),
            ),
            None => (self.pk_table(t), pk(from).to_vec()),
        };
        self.s.scan(
            table,
            KeyRange::from(&start),
            Order::Forward,
            limit,
            &mut |_, _| {},
        )
    }

    fn point(&mut self, t: usize, ids: &[u64]) -> Result<usize> {
        let table = self.pk_table(t);
        let mut found = 0;
        for id in ids {
            if self.s.get_len(table, &pk(*id))?.is_some() {
                found += 1;
            }
        }
        Ok(found)
    }

    fn check(&mut self, t: usize, indexes: &[Index]) -> Result<TableCheck> {
        let table = self.pk_table(t);
        let mut want = vec![Digest::default(); indexes.len()];
        let mut rows = 0u64;
        let key = &mut self.key;
        self.s.scan(
            table,
            KeyRange::all(),
            Order::Forward,
            usize::MAX,
            &mut |k, v| {
                rows += 1;
                if let (Ok(id), Some(f)) = (<[u8; PK]>::try_from(k), Row::fixed(v)) {
                    for (d, ix) in want.iter_mut().zip(indexes) {
                        index_key(*ix, f, u64::from_be_bytes(id), key);
                        d.add(key);
                    }
                }
            },
        )?;
        let mut out = TableCheck {
            rows,
            indexes: Vec::new(),
        };
        for (ix, w) in indexes.iter().zip(want) {
            let mut got = Digest::default();
            let table = self.ix_table(t, *ix);
            self.s.scan(
                table,
                KeyRange::all(),
                Order::Forward,
                usize::MAX,
                &mut |k, _| got.add(k),
            )?;
            out.indexes.push((ix.name(), got.count, got == w));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_named_per_client_with_their_indexes() {
        assert_eq!(
            table_names(2, 1),
            ["pi1", "pi1_marketsegment", "pi2", "pi2_marketsegment"]
        );
        assert_eq!(table_names(1, 3).len(), 4);
        assert_eq!(table_names(3, 0), ["pi1", "pi2", "pi3"]);
    }
}
