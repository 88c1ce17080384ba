//! LevelDB through its C API (Debian's libleveldb 1.23, bindings generated
//! from `leveldb/c.h` by build.rs).
//!
//! LevelDB has one key space, so a table is a one-byte key prefix (the
//! table's index): order within a table is preserved, and a scan is bounded
//! to its prefix.
//!
//! Options (`--set leveldb.KEY=VALUE`), defaults matched to RocksDB's:
//! `write_buffer_size` (64MB), `cache_size` (`--cache`), `bloom_bits` (10),
//! `compression` (`snappy` or `none`; snappy), `block_size` (4KB),
//! `max_file_size` (2MB, LevelDB's own), `max_open_files` (1000).
//! LevelDB has no call to wait for its compactions, so `settle` does nothing
//! and says so.

use std::ffi::{CStr, CString, c_void};
use std::ops::Bound;
use std::os::raw::c_char;
use std::path::{Path, PathBuf};
use std::ptr;

use anyhow::{Context, Result, anyhow};

use super::{
    BatchOp, Durability, EngineKind, EngineOptions, EngineStats, KeyRange, KvEngine, OpenSpec,
    Order, Table, WriteBatch,
};
use crate::UsageError;

#[allow(
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    dead_code,
    unsafe_op_in_unsafe_fn,
    clippy::all
)]
mod sys {
    include!(concat!(env!("OUT_DIR"), "/leveldb_sys.rs"));
}

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
        (
            "cache_size".into(),
            super::options::format_size(cache_bytes),
        ),
        ("bloom_bits".into(), "10".into()),
        ("compression".into(), "snappy".into()),
        ("block_size".into(), "4KB".into()),
        ("max_file_size".into(), "2MB".into()),
        ("max_open_files".into(), "1000".into()),
    ]
}

/// Parsed settings.
struct Parsed {
    write_buffer: u64,
    cache: u64,
    bloom_bits: i32,
    snappy: bool,
    block_size: u64,
    max_file_size: u64,
    max_open_files: i32,
}

fn parse(settings: &[(String, String)]) -> Result<Parsed> {
    let get = |k: &str| {
        settings
            .iter()
            .rev()
            .find(|(a, _)| a == k)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    };
    let size = |k: &str| {
        super::options::parse_size(get(k))
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
    Ok(Parsed {
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
pub fn validate(options: &EngineOptions) -> Result<()> {
    options.check_known(EngineKind::Leveldb, KNOWN)?;
    parse(&options.merged_over(&default_settings(8 << 20))).map(|_| ())
}

/// The library's version (`1.23`).
pub fn library_version() -> String {
    // SAFETY: plain getters.
    let (a, b) = unsafe { (sys::leveldb_major_version(), sys::leveldb_minor_version()) };
    format!("LevelDB {a}.{b}")
}

fn check(err: *mut c_char) -> Result<()> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: LevelDB returns a malloc'd NUL-terminated string, freed here.
    let m = unsafe { CStr::from_ptr(err) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: freed once.
    unsafe { sys::leveldb_free(err as *mut c_void) };
    Err(anyhow!("leveldb: {m}"))
}

/// A LevelDB database; tables are one-byte key prefixes.
pub struct LevelDb {
    db: *mut sys::leveldb_t,
    options: *mut sys::leveldb_options_t,
    cache: *mut sys::leveldb_cache_t,
    filter: *mut sys::leveldb_filterpolicy_t,
    read: *mut sys::leveldb_readoptions_t,
    write_sync: *mut sys::leveldb_writeoptions_t,
    write_nosync: *mut sys::leveldb_writeoptions_t,
    tables: usize,
    dir: PathBuf,
    settings: Vec<(String, String)>,
}

// SAFETY: a leveldb_t is thread-safe; options objects are not mutated after open.
unsafe impl Send for LevelDb {}
// SAFETY: see `Send` above.
unsafe impl Sync for LevelDb {}

impl LevelDb {
    /// Opens (creating if needed) a database.
    pub fn open(spec: &OpenSpec) -> Result<LevelDb> {
        validate(&spec.options)?;
        if spec.tables.len() > 254 {
            anyhow::bail!("leveldb: at most 254 tables");
        }
        let settings = spec
            .options
            .merged_over(&default_settings(spec.cache_bytes));
        let p = parse(&settings)?;
        let path = CString::new(spec.dir.to_string_lossy().as_bytes()).context("path")?;
        // SAFETY: objects created here are owned by the returned value, or
        // destroyed on the error path.
        unsafe {
            let options = sys::leveldb_options_create();
            sys::leveldb_options_set_create_if_missing(options, 1);
            sys::leveldb_options_set_write_buffer_size(options, p.write_buffer as usize);
            let cache = sys::leveldb_cache_create_lru(p.cache as usize);
            sys::leveldb_options_set_cache(options, cache);
            let filter = if p.bloom_bits > 0 {
                let f = sys::leveldb_filterpolicy_create_bloom(p.bloom_bits);
                sys::leveldb_options_set_filter_policy(options, f);
                f
            } else {
                ptr::null_mut()
            };
            sys::leveldb_options_set_compression(
                options,
                if p.snappy {
                    sys::leveldb_snappy_compression as i32
                } else {
                    sys::leveldb_no_compression as i32
                },
            );
            sys::leveldb_options_set_block_size(options, p.block_size as usize);
            sys::leveldb_options_set_max_file_size(options, p.max_file_size as usize);
            sys::leveldb_options_set_max_open_files(options, p.max_open_files);
            let mut err = ptr::null_mut();
            let db = sys::leveldb_open(options, path.as_ptr(), &mut err);
            if let Err(e) = check(err) {
                sys::leveldb_options_destroy(options);
                sys::leveldb_cache_destroy(cache);
                if !filter.is_null() {
                    sys::leveldb_filterpolicy_destroy(filter);
                }
                return Err(e)
                    .with_context(|| format!("opening leveldb in {}", spec.dir.display()));
            }
            let read = sys::leveldb_readoptions_create();
            let ws = sys::leveldb_writeoptions_create();
            sys::leveldb_writeoptions_set_sync(ws, 1);
            let wn = sys::leveldb_writeoptions_create();
            sys::leveldb_writeoptions_set_sync(wn, 0);
            Ok(LevelDb {
                db,
                options,
                cache,
                filter,
                read,
                write_sync: ws,
                write_nosync: wn,
                tables: spec.tables.len(),
                dir: spec.dir.clone(),
                settings,
            })
        }
    }

    fn key(&self, t: Table, key: &[u8]) -> Result<Vec<u8>> {
        if t.0 >= self.tables {
            return Err(super::no_table(t));
        }
        let mut k = Vec::with_capacity(key.len() + 1);
        k.push(t.0 as u8);
        k.extend_from_slice(key);
        Ok(k)
    }

    fn wopts(&self, d: Durability) -> *mut sys::leveldb_writeoptions_t {
        match d {
            Durability::Sync => self.write_sync,
            Durability::NoSync => self.write_nosync,
        }
    }
}

impl KvEngine for LevelDb {
    fn kind(&self) -> EngineKind {
        EngineKind::Leveldb
    }
    fn version(&self) -> String {
        library_version()
    }
    fn settings(&self) -> Vec<(String, String)> {
        self.settings.clone()
    }
    fn dir(&self) -> &Path {
        &self.dir
    }

    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let k = self.key(table, key)?;
        let mut len = 0usize;
        let mut err = ptr::null_mut();
        // SAFETY: the value is malloc'd by LevelDB, copied, then freed.
        unsafe {
            let v = sys::leveldb_get(
                self.db,
                self.read,
                k.as_ptr() as *const c_char,
                k.len(),
                &mut len,
                &mut err,
            );
            check(err)?;
            if v.is_null() {
                return Ok(None);
            }
            let out = std::slice::from_raw_parts(v as *const u8, len).to_vec();
            sys::leveldb_free(v as *mut c_void);
            Ok(Some(out))
        }
    }

    fn put(&self, table: Table, key: &[u8], value: &[u8], d: Durability) -> Result<()> {
        let k = self.key(table, key)?;
        let mut err = ptr::null_mut();
        // SAFETY: slices live across the call.
        unsafe {
            sys::leveldb_put(
                self.db,
                self.wopts(d),
                k.as_ptr() as *const c_char,
                k.len(),
                value.as_ptr() as *const c_char,
                value.len(),
                &mut err,
            )
        };
        check(err)
    }

    fn write(&self, batch: &WriteBatch, d: Durability) -> Result<()> {
        // SAFETY: the batch is created, filled (LevelDB copies), written and
        // destroyed here.
        unsafe {
            let wb = sys::leveldb_writebatch_create();
            for op in &batch.ops {
                let r = match op {
                    BatchOp::Put { table, key, value } => self.key(*table, key).map(|k| {
                        sys::leveldb_writebatch_put(
                            wb,
                            k.as_ptr() as *const c_char,
                            k.len(),
                            value.as_ptr() as *const c_char,
                            value.len(),
                        )
                    }),
                    BatchOp::Delete { table, key } => self.key(*table, key).map(|k| {
                        sys::leveldb_writebatch_delete(wb, k.as_ptr() as *const c_char, k.len())
                    }),
                };
                if let Err(e) = r {
                    sys::leveldb_writebatch_destroy(wb);
                    return Err(e);
                }
            }
            let mut err = ptr::null_mut();
            sys::leveldb_write(self.db, self.wopts(d), wb, &mut err);
            sys::leveldb_writebatch_destroy(wb);
            check(err)
        }
    }

    fn scan(
        &self,
        table: Table,
        range: KeyRange<'_>,
        order: Order,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let prefix = self.key(table, &[])?;
        let next_prefix = [prefix[0] + 1];
        let mut n = 0;
        // SAFETY: the iterator is created and destroyed here; slices are
        // used before it moves.
        unsafe {
            let it = sys::leveldb_create_iterator(self.db, self.read);
            let key_of = |it: *mut sys::leveldb_iterator_t| -> &[u8] {
                let mut len = 0usize;
                let p = sys::leveldb_iter_key(it, &mut len);
                std::slice::from_raw_parts(p as *const u8, len)
            };
            match order {
                Order::Forward => {
                    let s = match range.start {
                        Bound::Included(s) | Bound::Excluded(s) => self.key(table, s)?,
                        Bound::Unbounded => prefix.clone(),
                    };
                    sys::leveldb_iter_seek(it, s.as_ptr() as *const c_char, s.len());
                }
                Order::Reverse => {
                    let e = match range.end {
                        Bound::Included(e) | Bound::Excluded(e) => self.key(table, e)?,
                        Bound::Unbounded => next_prefix.to_vec(),
                    };
                    sys::leveldb_iter_seek(it, e.as_ptr() as *const c_char, e.len());
                    if sys::leveldb_iter_valid(it) == 0 {
                        sys::leveldb_iter_seek_to_last(it);
                    }
                }
            }
            while n < limit && sys::leveldb_iter_valid(it) != 0 {
                let full = key_of(it);
                if full.first() != Some(&prefix[0]) {
                    if order == Order::Reverse && full.first().is_some_and(|b| *b > prefix[0]) {
                        sys::leveldb_iter_prev(it);
                        continue;
                    }
                    break;
                }
                let k = &full[1..];
                let (inside, skip) = match order {
                    Order::Forward => (range.below_end(k), !range.above_start(k)),
                    Order::Reverse => (range.above_start(k), !range.below_end(k)),
                };
                if !inside {
                    break;
                }
                if !skip {
                    let mut vlen = 0usize;
                    let vp = sys::leveldb_iter_value(it, &mut vlen);
                    visit(k, std::slice::from_raw_parts(vp as *const u8, vlen));
                    n += 1;
                }
                match order {
                    Order::Forward => sys::leveldb_iter_next(it),
                    Order::Reverse => sys::leveldb_iter_prev(it),
                }
            }
            let mut err = ptr::null_mut();
            sys::leveldb_iter_get_error(it, &mut err);
            sys::leveldb_iter_destroy(it);
            check(err)?;
        }
        Ok(n)
    }

    fn stats(&self) -> Result<EngineStats> {
        let mut st = EngineStats::default();
        let prop = |name: &str| -> Option<String> {
            let c = CString::new(name).ok()?;
            // SAFETY: the result is malloc'd by LevelDB, copied and freed.
            unsafe {
                let p = sys::leveldb_property_value(self.db, c.as_ptr());
                if p.is_null() {
                    return None;
                }
                let s = CStr::from_ptr(p).to_string_lossy().into_owned();
                sys::leveldb_free(p as *mut c_void);
                Some(s)
            }
        };
        if let Some(s) = prop("leveldb.stats") {
            st.texts.push(("leveldb.stats".into(), s));
        }
        for level in 0..7 {
            if let Some(v) = prop(&format!("leveldb.num-files-at-level{level}"))
                .and_then(|s| s.trim().parse().ok())
            {
                st.values.push((format!("num-files-at-level{level}"), v));
            }
        }
        if let Some(v) =
            prop("leveldb.approximate-memory-usage").and_then(|s| s.trim().parse().ok())
        {
            st.values.push(("approximate-memory-usage".into(), v));
        }
        Ok(st)
    }

    fn settle(&self) -> Result<String> {
        Ok("not settled: LevelDB has no call to wait for its background compactions".into())
    }

    fn close(self: Box<Self>) -> Result<()> {
        drop(self);
        Ok(())
    }
}

impl Drop for LevelDb {
    fn drop(&mut self) {
        // SAFETY: each object is destroyed once, the database first.
        unsafe {
            sys::leveldb_close(self.db);
            sys::leveldb_readoptions_destroy(self.read);
            sys::leveldb_writeoptions_destroy(self.write_sync);
            sys::leveldb_writeoptions_destroy(self.write_nosync);
            sys::leveldb_options_destroy(self.options);
            sys::leveldb_cache_destroy(self.cache);
            if !self.filter.is_null() {
                sys::leveldb_filterpolicy_destroy(self.filter);
            }
        }
    }
}
