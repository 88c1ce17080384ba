//! LevelDB's C API (Debian's libleveldb 1.23) behind owning types: the
//! database (with its options, block cache and bloom filter), read and
//! write options, write batches and iterators are freed on drop.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::os::raw::c_char;
use std::path::Path;
use std::ptr;

use anyhow::{Result, anyhow};

use super::{bytes, c_path, c_str, take_c_string};
use crate::scan::Cursor;

super::bindings!("leveldb_sys.rs");

fn call<T>(f: impl FnOnce(*mut *mut c_char) -> T) -> Result<T> {
    let mut err = ptr::null_mut();
    let v = f(&mut err);
    // SAFETY: LevelDB sets `err` to null or to a malloc'd message it gives up.
    match unsafe { take_c_string(err, sys::leveldb_free) } {
        None => Ok(v),
        Some(m) => Err(anyhow!("leveldb: {m}")),
    }
}

/// The library's version (`LevelDB 1.23`).
pub fn version() -> String {
    // SAFETY: plain getters.
    let (a, b) = unsafe { (sys::leveldb_major_version(), sys::leveldb_minor_version()) };
    format!("LevelDB {a}.{b}")
}

/// How to open a database.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Memtable size, bytes.
    pub write_buffer: u64,
    /// Block cache, bytes.
    pub cache: u64,
    /// Bloom filter bits per key (0: none).
    pub bloom_bits: i32,
    /// Snappy block compression.
    pub snappy: bool,
    /// Block size, bytes.
    pub block_size: u64,
    /// Table file size, bytes.
    pub max_file_size: u64,
    /// Open files kept.
    pub max_open_files: i32,
}

/// An open database; closed (then its options, cache and filter freed) on
/// drop.
pub struct Db {
    db: *mut sys::leveldb_t,
    options: *mut sys::leveldb_options_t,
    cache: *mut sys::leveldb_cache_t,
    filter: *mut sys::leveldb_filterpolicy_t,
}

// SAFETY: a leveldb_t is thread-safe; the options objects are not changed
// after open.
unsafe impl Send for Db {}
// SAFETY: see `Send` above.
unsafe impl Sync for Db {}

impl Db {
    /// Opens (creating if needed) the database in `path`.
    pub fn open(path: &Path, c: Config) -> Result<Db> {
        let p = c_path(path)?;
        // SAFETY: the objects created here are owned by `d`, whose drop
        // frees them (and skips the database while it is null).
        unsafe {
            let mut d = Db {
                db: ptr::null_mut(),
                options: sys::leveldb_options_create(),
                cache: sys::leveldb_cache_create_lru(c.cache as usize),
                filter: if c.bloom_bits > 0 {
                    sys::leveldb_filterpolicy_create_bloom(c.bloom_bits)
                } else {
                    ptr::null_mut()
                },
            };
            let o = d.options;
            sys::leveldb_options_set_create_if_missing(o, 1);
            sys::leveldb_options_set_write_buffer_size(o, c.write_buffer as usize);
            sys::leveldb_options_set_cache(o, d.cache);
            if !d.filter.is_null() {
                sys::leveldb_options_set_filter_policy(o, d.filter);
            }
            sys::leveldb_options_set_compression(
                o,
                if c.snappy {
                    sys::leveldb_snappy_compression as i32
                } else {
                    sys::leveldb_no_compression as i32
                },
            );
            sys::leveldb_options_set_block_size(o, c.block_size as usize);
            sys::leveldb_options_set_max_file_size(o, c.max_file_size as usize);
            sys::leveldb_options_set_max_open_files(o, c.max_open_files);
            d.db = call(|e| sys::leveldb_open(o, p.as_ptr(), e))?;
            Ok(d)
        }
    }

    /// Reads a key (copied out).
    pub fn get(&self, ro: &ReadOptions, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut len = 0usize;
        // SAFETY: the key lives across the call; the value is malloc'd by
        // LevelDB, copied, then freed.
        unsafe {
            let v = call(|e| {
                sys::leveldb_get(
                    self.db,
                    ro.0,
                    key.as_ptr() as *const c_char,
                    key.len(),
                    &mut len,
                    e,
                )
            })?;
            if v.is_null() {
                return Ok(None);
            }
            let out = bytes(v as *const c_void, len).to_vec();
            sys::leveldb_free(v as *mut c_void);
            Ok(Some(out))
        }
    }

    /// Writes one key.
    pub fn put(&self, wo: &WriteOptions, key: &[u8], value: &[u8]) -> Result<()> {
        // SAFETY: the slices live across the call.
        call(|e| unsafe {
            sys::leveldb_put(
                self.db,
                wo.0,
                key.as_ptr() as *const c_char,
                key.len(),
                value.as_ptr() as *const c_char,
                value.len(),
                e,
            )
        })
    }

    /// Applies a batch atomically.
    pub fn write(&self, wo: &WriteOptions, b: &WriteBatch) -> Result<()> {
        // SAFETY: the database, options and batch are live.
        call(|e| unsafe { sys::leveldb_write(self.db, wo.0, b.0, e) })
    }

    /// An iterator over the whole key space.
    pub fn iter(&self, ro: &ReadOptions) -> Iter<'_> {
        // SAFETY: the iterator borrows the database and is destroyed by its
        // drop.
        Iter(
            unsafe { sys::leveldb_create_iterator(self.db, ro.0) },
            false,
            PhantomData,
        )
    }

    /// A property (`leveldb.stats`, `leveldb.num-files-at-levelN`, …).
    pub fn property(&self, name: &str) -> Option<String> {
        let c = c_str(name, "property").ok()?;
        // SAFETY: the result is null or a malloc'd string we take.
        unsafe {
            take_c_string(
                sys::leveldb_property_value(self.db, c.as_ptr()),
                sys::leveldb_free,
            )
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        // SAFETY: each object is destroyed once, the database first.
        unsafe {
            if !self.db.is_null() {
                sys::leveldb_close(self.db);
            }
            sys::leveldb_options_destroy(self.options);
            sys::leveldb_cache_destroy(self.cache);
            if !self.filter.is_null() {
                sys::leveldb_filterpolicy_destroy(self.filter);
            }
        }
    }
}

/// Read options (defaults).
pub struct ReadOptions(*mut sys::leveldb_readoptions_t);
// SAFETY: never changed after creation; LevelDB only reads it.
unsafe impl Send for ReadOptions {}
// SAFETY: see `Send` above.
unsafe impl Sync for ReadOptions {}

impl ReadOptions {
    /// Default read options.
    pub fn new() -> ReadOptions {
        // SAFETY: a plain constructor.
        ReadOptions(unsafe { sys::leveldb_readoptions_create() })
    }
}
impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions::new()
    }
}
impl Drop for ReadOptions {
    fn drop(&mut self) {
        // SAFETY: created by us, destroyed once.
        unsafe { sys::leveldb_readoptions_destroy(self.0) }
    }
}

/// Write options: synced on return or not.
pub struct WriteOptions(*mut sys::leveldb_writeoptions_t);
// SAFETY: never changed after creation; LevelDB only reads it.
unsafe impl Send for WriteOptions {}
// SAFETY: see `Send` above.
unsafe impl Sync for WriteOptions {}

impl WriteOptions {
    /// Write options with `sync` set or not.
    pub fn new(sync: bool) -> WriteOptions {
        // SAFETY: a constructor and a setter on the new object.
        unsafe {
            let w = sys::leveldb_writeoptions_create();
            sys::leveldb_writeoptions_set_sync(w, u8::from(sync));
            WriteOptions(w)
        }
    }
}
impl Drop for WriteOptions {
    fn drop(&mut self) {
        // SAFETY: created by us, destroyed once.
        unsafe { sys::leveldb_writeoptions_destroy(self.0) }
    }
}

/// A write batch, reused across writes.
pub struct WriteBatch(*mut sys::leveldb_writebatch_t);
// SAFETY: a batch is plain memory, not tied to a thread.
unsafe impl Send for WriteBatch {}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        // SAFETY: a plain constructor.
        WriteBatch(unsafe { sys::leveldb_writebatch_create() })
    }
    /// Removes every change.
    pub fn clear(&mut self) {
        // SAFETY: the batch is ours.
        unsafe { sys::leveldb_writebatch_clear(self.0) }
    }
    /// Adds a put (copied).
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        // SAFETY: the slices live across the call; LevelDB copies them.
        unsafe {
            sys::leveldb_writebatch_put(
                self.0,
                key.as_ptr() as *const c_char,
                key.len(),
                value.as_ptr() as *const c_char,
                value.len(),
            )
        }
    }
    /// Adds a delete.
    pub fn delete(&mut self, key: &[u8]) {
        // SAFETY: as in `put`.
        unsafe { sys::leveldb_writebatch_delete(self.0, key.as_ptr() as *const c_char, key.len()) }
    }
}
impl Default for WriteBatch {
    fn default() -> Self {
        WriteBatch::new()
    }
}
impl Drop for WriteBatch {
    fn drop(&mut self) {
        // SAFETY: created by us, destroyed once.
        unsafe { sys::leveldb_writebatch_destroy(self.0) }
    }
}

/// An iterator, destroyed on drop. Its key and value are read only while
/// it is on an entry (`.1`): after a seek that found nothing they are
/// empty, never a read of an invalid iterator.
pub struct Iter<'d>(*mut sys::leveldb_iterator_t, bool, PhantomData<&'d Db>);

impl Iter<'_> {
    fn valid(&mut self) -> Result<bool> {
        // SAFETY: the iterator is live.
        self.1 = unsafe { sys::leveldb_iter_valid(self.0) } != 0;
        if self.1 {
            return Ok(true);
        }
        // SAFETY: as above.
        call(|e| unsafe { sys::leveldb_iter_get_error(self.0, e) })?;
        Ok(false)
    }
}

impl Cursor for Iter<'_> {
    fn seek_ge(&mut self, key: &[u8]) -> Result<bool> {
        // SAFETY: the key lives across the call.
        unsafe { sys::leveldb_iter_seek(self.0, key.as_ptr() as *const c_char, key.len()) };
        self.valid()
    }
    fn first(&mut self) -> Result<bool> {
        // SAFETY: the iterator is live.
        unsafe { sys::leveldb_iter_seek_to_first(self.0) };
        self.valid()
    }
    fn last(&mut self) -> Result<bool> {
        // SAFETY: the iterator is live.
        unsafe { sys::leveldb_iter_seek_to_last(self.0) };
        self.valid()
    }
    fn next(&mut self) -> Result<bool> {
        if !self.1 {
            return Ok(false);
        }
        // SAFETY: the iterator is valid (LevelDB requires it for Next).
        unsafe { sys::leveldb_iter_next(self.0) };
        self.valid()
    }
    fn prev(&mut self) -> Result<bool> {
        if !self.1 {
            return Ok(false);
        }
        // SAFETY: as in `next`.
        unsafe { sys::leveldb_iter_prev(self.0) };
        self.valid()
    }
    fn key(&self) -> &[u8] {
        if !self.1 {
            return &[];
        }
        let mut len = 0usize;
        // SAFETY: called while valid; the slice lives until the next move.
        unsafe {
            bytes(
                sys::leveldb_iter_key(self.0, &mut len) as *const c_void,
                len,
            )
        }
    }
    fn value(&self) -> &[u8] {
        if !self.1 {
            return &[];
        }
        let mut len = 0usize;
        // SAFETY: as in `key`.
        unsafe {
            bytes(
                sys::leveldb_iter_value(self.0, &mut len) as *const c_void,
                len,
            )
        }
    }
}

impl Drop for Iter<'_> {
    fn drop(&mut self) {
        // SAFETY: created by `Db::iter`, destroyed once.
        unsafe { sys::leveldb_iter_destroy(self.0) }
    }
}

/// The library file loaded and how the build chose it (see
/// [`super::library_file`]).
pub fn library_file() -> Option<String> {
    super::library_file(
        sys::leveldb_open as *const std::ffi::c_void,
        "LEVELDB_LIB_DIR",
        env!("AMPBENCH_LEVELDB_LIB_DIR"),
    )
}
