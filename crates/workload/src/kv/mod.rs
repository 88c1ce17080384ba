//! The KV workload family: documents (key, value) in one table.

pub mod data;
pub mod micro;
pub mod pattern;
pub mod sql;
pub mod store;
pub mod ycsb;

use anyhow::Result;

use crate::engine::{EngineRef, Table, WriteBatch};
use store::DocStore;

/// The store for one worker: the KV mapping (table 0) or the SQL mapping
/// over a new connection.
pub fn docs_store<'a>(
    engine: EngineRef<'a>,
    table: &str,
    retries: &'a sql::Retries,
) -> Result<Box<dyn DocStore + 'a>> {
    Ok(match engine {
        EngineRef::Kv(e) => Box::new(store::KvDocs {
            session: e.session()?,
            table: Table(0),
            batch: WriteBatch::new(),
        }),
        EngineRef::Sql(e) => Box::new(sql::SqlDocs::new(e.connect()?, e.dialect(), table, retries)),
    })
}
