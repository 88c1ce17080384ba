//! The null engine: accepts every call and stores nothing, so a run on it
//! measures the harness alone (generators, driver, meter).

use anyhow::Result;

use super::{
    Conformance, Durability, Engine, EngineDef, EngineInfo, EngineRef, KeyRange, KvEngine,
    KvSession, Order, Structure, Table, WriteBatch,
};
use crate::structure::ModelKnobs;

/// The version string the null engine reports.
pub const VERSION: &str = "null (ampbench built-in)";

/// The registry entry.
pub const ENGINES: &[EngineDef] = &[EngineDef {
    name: "null",
    about: "does nothing: measures the harness itself",
    structure: Structure::None,
    model: ModelKnobs::PLAIN,
    conformance: Conformance::cases(20),
    server: None,
    run_as: None,
    library: || None,
    library_version: || Ok(VERSION.into()),
    default_settings: |_| Vec::new(),
    io_bound: |_| Vec::new(),
    direct_io: false,
    presets: &[],
    validate: |kind, options| options.reject_all(kind),
    guard: super::guard::none,
    open: |kind, spec| {
        spec.options.reject_all(kind)?;
        Ok(Box::new(Null {
            info: EngineInfo {
                kind,
                version: VERSION.into(),
                settings: Vec::new(),
                dir: spec.dir.clone(),
            },
        }))
    },
}];

/// An engine that stores nothing: every get misses, every scan is empty.
pub struct Null {
    info: EngineInfo,
}

impl Engine for Null {
    fn info(&self) -> &EngineInfo {
        &self.info
    }
    fn face(&self) -> EngineRef<'_> {
        EngineRef::Kv(self)
    }
}

impl KvEngine for Null {
    fn session(&self) -> Result<Box<dyn KvSession + '_>> {
        Ok(Box::new(NullSession))
    }
}

/// A session of the null engine.
struct NullSession;

impl KvSession for NullSession {
    fn get(&mut self, _table: Table, _key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(None)
    }
    fn scan(
        &mut self,
        _table: Table,
        _range: KeyRange<'_>,
        _order: Order,
        _limit: usize,
        _visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        Ok(0)
    }
    fn write(&mut self, _batch: &WriteBatch, _durability: Durability) -> Result<()> {
        Ok(())
    }
    fn put(&mut self, _t: Table, _k: &[u8], _v: &[u8], _d: Durability) -> Result<()> {
        Ok(())
    }
}
