//! LevelDB through its C API (Debian's libleveldb 1.23, via the safe
//! wrapper in `ffi/leveldb.rs`).
//!
//! LevelDB has one key space, so a table is a one-byte key prefix (the
//! table's index): order within a table is preserved, and a scan is bounded
//! to its prefix. LevelDB has no transactions: callers that need multi-key
//! read-modify-write changes serialise them themselves.
//!
//! Options (`--set leveldb.KEY=VALUE`), defaults matched to RocksDB's:
//! `write_buffer_size` (64MB), `cache_size` (`--cache`), `bloom_bits` (10),
//! `compression` (`snappy` or `none`; snappy), `block_size` (4KB),
//! `max_file_size` (2MB, LevelDB's own), `max_open_files` (1000).
//! LevelDB has no call to wait for its compactions, so `settle` does nothing
//! and says so.

use anyhow::{Context, Result};

use super::ffi::leveldb::{self as ffi, Config, Db, ReadOptions, WriteOptions};
use super::scan::{Cursor, bounded_scan};
use super::{
    BatchOp, Conformance, Durability, Engine, EngineDef, EngineInfo, EngineKind, EngineOptions,
    EngineRef, EngineStats, KeyRange, KvEngine, KvSession, OpenSpec, Order, Structure, Table,
    WriteBatch,
};
use crate::UsageError;
use crate::structure::ModelKnobs;

/// The registry entry.
pub const ENGINES: &[EngineDef] = &[EngineDef {
    name: "leveldb",
    about: "LevelDB (Debian's libleveldb, a leveled LSM; no transactions)",
    structure: Structure::LeveledLsm,
    model: ModelKnobs {
        page_key: "block_size",
        page_default: 4096.0,
        row_meta: 0.0,
        compresses_pages: false,
    },
    conformance: Conformance::cases(40),
    server: None,
    run_as: None,
    library: || ffi::library_file(),
    library_version: || Ok(ffi::version()),
    default_settings,
    io_bound: |_| Vec::new(),
    direct_io: false,
    presets: &[],
    validate,
    guard: super::guard::none,
    open: |kind, spec| Ok(Box::new(LevelDb::open(kind, spec)?)),
}];

const KNOWN: &[&str] = &[
    "write_buffer_size",
    "cache_size",
    "bloom_bits",
    "compression",
    "block_size",
    "max_file_size",
    "max_open_files",
];

/// The default settings for a cache size (see the module doc).
pub fn default_settings(cache_bytes: u64) -> Vec<(String, String)> {
    vec![
        ("write_buffer_size".into(), "64MB".into()),
        ("cache_size".into(), crate::units::format_size(cache_bytes)),
        ("bloom_bits".into(), "10".into()),
        ("compression".into(), "snappy".into()),
        ("block_size".into(), "4KB".into()),
        ("max_file_size".into(), "2MB".into()),
        ("max_open_files".into(), "1000".into()),
    ]
}

fn parse(settings: &[(String, String)]) -> Result<Config> {
    let get = |k: &str| {
        settings
            .iter()
            .rev()
            .find(|(a, _)| a == k)
            .map_or("", |(_, v)| v.as_str())
    };
    let size = |k: &str| {
        crate::units::parse_size(get(k))
            .map_err(|e| UsageError(format!("option 'leveldb.{k}': {e}")))
    };
    let int = |k: &str| {
        get(k).parse::<i32>().map_err(|_| {
            UsageError(format!(
                "option 'leveldb.{k}={}': expected a whole number",
                get(k)
            ))
        })
    };
    Ok(Config {
        write_buffer: size("write_buffer_size")?,
        cache: size("cache_size")?,
        bloom_bits: int("bloom_bits")?,
        snappy: match get("compression") {
            "snappy" => true,
            "none" => false,
            v => {
                return Err(UsageError(format!(
                    "option 'leveldb.compression={v}': expected snappy or none"
                ))
                .into());
            }
        },
        block_size: size("block_size")?,
        max_file_size: size("max_file_size")?,
        max_open_files: int("max_open_files")?,
    })
}

/// Checks `--set leveldb.*` options.
pub fn validate(kind: EngineKind, options: &EngineOptions) -> Result<()> {
    options.check_known(kind, KNOWN)?;
    parse(&options.merged_over(&default_settings(8 << 20))).map(|_| ())
}

/// A LevelDB database; tables are one-byte key prefixes.
pub struct LevelDb {
    info: EngineInfo,
    db: Db,
    read: ReadOptions,
    write_sync: WriteOptions,
    write_nosync: WriteOptions,
    tables: usize,
}

impl LevelDb {
    /// Opens (creating if needed) a database.
    pub fn open(kind: EngineKind, spec: &OpenSpec) -> Result<LevelDb> {
        validate(kind, &spec.options)?;
        if spec.tables.len() > 254 {
            anyhow::bail!("leveldb: at most 254 tables");
        }
        let settings = spec.settings(default_settings);
        let db = Db::open(&spec.dir, parse(&settings)?)
            .with_context(|| format!("opening leveldb in {}", spec.dir.display()))?;
        Ok(LevelDb {
            info: EngineInfo {
                kind,
                version: ffi::version(),
                settings,
                dir: spec.dir.clone(),
            },
            db,
            read: ReadOptions::new(),
            write_sync: WriteOptions::new(true),
            write_nosync: WriteOptions::new(false),
            tables: spec.tables.len(),
        })
    }

    fn wopts(&self, d: Durability) -> &WriteOptions {
        match d {
            Durability::Sync => &self.write_sync,
            Durability::NoSync => &self.write_nosync,
        }
    }

    /// The table's key prefix.
    fn prefix(&self, t: Table) -> Result<u8> {
        if t.0 >= self.tables {
            return Err(super::no_table(t));
        }
        Ok(t.0 as u8)
    }
}

impl Engine for LevelDb {
    fn info(&self) -> &EngineInfo {
        &self.info
    }
    fn face(&self) -> EngineRef<'_> {
        EngineRef::Kv(self)
    }
    fn stats(&self) -> Result<EngineStats> {
        let mut st = EngineStats::default();
        if let Some(s) = self.db.property("leveldb.stats") {
            st.texts.push(("leveldb.stats".into(), s));
        }
        let num = |name: &str| self.db.property(name).and_then(|s| s.trim().parse().ok());
        for level in 0..7 {
            if let Some(v) = num(&format!("leveldb.num-files-at-level{level}")) {
                st.values.push((format!("num-files-at-level{level}"), v));
            }
        }
        if let Some(v) = num("leveldb.approximate-memory-usage") {
            st.values.push(("approximate-memory-usage".into(), v));
        }
        Ok(st)
    }
    fn settle(&self) -> Result<String> {
        Ok("not settled: LevelDB has no call to wait for its background compactions".into())
    }
}

impl KvEngine for LevelDb {
    fn session(&self) -> Result<Box<dyn KvSession + '_>> {
        Ok(Box::new(Session {
            e: self,
            key: Vec::new(),
            batch: ffi::WriteBatch::new(),
        }))
    }
}

/// A thread's session: a key buffer for prefixed keys and a write batch,
/// both reused.
struct Session<'e> {
    e: &'e LevelDb,
    key: Vec<u8>,
    batch: ffi::WriteBatch,
}

/// Writes the prefixed key into `buf`.
fn prefixed<'b>(buf: &'b mut Vec<u8>, p: u8, key: &[u8]) -> &'b [u8] {
    buf.clear();
    buf.push(p);
    buf.extend_from_slice(key);
    buf
}

impl KvSession for Session<'_> {
    fn get(&mut self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let k = prefixed(&mut self.key, self.e.prefix(table)?, key);
        self.e.db.get(&self.e.read, k)
    }
    fn put(&mut self, table: Table, key: &[u8], value: &[u8], d: Durability) -> Result<()> {
        let k = prefixed(&mut self.key, self.e.prefix(table)?, key);
        self.e.db.put(self.e.wopts(d), k, value)
    }
    fn write(&mut self, batch: &WriteBatch, d: Durability) -> Result<()> {
        self.batch.clear();
        for op in batch.iter() {
            match op {
                BatchOp::Put { table, key, value } => {
                    let k = prefixed(&mut self.key, self.e.prefix(table)?, key);
                    self.batch.put(k, value)
                }
                BatchOp::Delete { table, key } => {
                    let k = prefixed(&mut self.key, self.e.prefix(table)?, key);
                    self.batch.delete(k)
                }
            }
        }
        self.e.db.write(self.e.wopts(d), &self.batch)
    }
    fn scan(
        &mut self,
        table: Table,
        range: KeyRange<'_>,
        order: Order,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let mut c = PrefixCursor {
            inner: self.e.db.iter(&self.e.read),
            prefix: self.e.prefix(table)?,
            buf: &mut self.key,
        };
        bounded_scan(&mut c, range, order, limit, visit)
    }
}

/// A cursor over one table: the keys of the whole key space that start
/// with the table's prefix, shown without it.
struct PrefixCursor<'b, C> {
    inner: C,
    prefix: u8,
    buf: &'b mut Vec<u8>,
}

impl<C: Cursor> PrefixCursor<'_, C> {
    fn inside(&self, on: bool) -> bool {
        on && self.inner.key().first() == Some(&self.prefix)
    }
}

impl<C: Cursor> Cursor for PrefixCursor<'_, C> {
    fn seek_ge(&mut self, key: &[u8]) -> Result<bool> {
        let k = prefixed(self.buf, self.prefix, key);
        let on = self.inner.seek_ge(k)?;
        Ok(self.inside(on))
    }
    fn first(&mut self) -> Result<bool> {
        let on = self.inner.seek_ge(&[self.prefix])?;
        Ok(self.inside(on))
    }
    fn last(&mut self) -> Result<bool> {
        // The last key before the next table's first (prefixes are < 255).
        let on = if self.inner.seek_ge(&[self.prefix + 1])? {
            self.inner.prev()?
        } else {
            self.inner.last()?
        };
        Ok(self.inside(on))
    }
    fn next(&mut self) -> Result<bool> {
        let on = self.inner.next()?;
        Ok(self.inside(on))
    }
    fn prev(&mut self) -> Result<bool> {
        let on = self.inner.prev()?;
        Ok(self.inside(on))
    }
    fn key(&self) -> &[u8] {
        self.inner.key().get(1..).unwrap_or_default()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
}
