//! The null engine: accepts every call and stores nothing, so a run on it
//! measures the harness alone (generators, driver, meter).

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{Durability, EngineKind, KeyRange, KvEngine, OpenSpec, Order, Table, WriteBatch};

/// The version string the null engine reports.
pub const VERSION: &str = "null (ampbench built-in)";

/// An engine that stores nothing: every get misses, every scan is empty.
pub struct Null {
    dir: PathBuf,
}

impl Null {
    /// Opens the null engine; it only checks its (empty) options.
    pub fn open(spec: &OpenSpec) -> Result<Null> {
        spec.options.reject_all(EngineKind::Null)?;
        Ok(Null {
            dir: spec.dir.clone(),
        })
    }
}

impl KvEngine for Null {
    fn kind(&self) -> EngineKind {
        EngineKind::Null
    }
    fn version(&self) -> String {
        VERSION.into()
    }
    fn settings(&self) -> Vec<(String, String)> {
        Vec::new()
    }
    fn dir(&self) -> &Path {
        &self.dir
    }
    fn get(&self, _table: Table, _key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(None)
    }
    fn scan(
        &self,
        _table: Table,
        _range: KeyRange<'_>,
        _order: Order,
        _limit: usize,
        _visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        Ok(0)
    }
    fn write(&self, _batch: &WriteBatch, _durability: Durability) -> Result<()> {
        Ok(())
    }
    fn put(&self, _t: Table, _k: &[u8], _v: &[u8], _d: Durability) -> Result<()> {
        Ok(())
    }
    fn close(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}
