//! RocksDB's C API (Debian's librocksdb 7.8.3) behind owning types.
//!
//! A [`Db`] is a plain database or an OptimisticTransactionDB; either way
//! every non-transactional call goes to the base database, and column
//! family handles, options and the database are freed on drop in the order
//! RocksDB needs. Errors whose status is Busy, TryAgain or TimedOut (a
//! transaction lost to another) come back as [`Conflict`].

use std::ffi::c_void;
use std::os::raw::{c_char, c_int};
use std::path::Path;
use std::ptr;

use anyhow::{Result, anyhow};

use super::{bytes, c_path, c_str, take_c_string};
use crate::Conflict;

mod iter;
mod reader;
mod txn;

pub use iter::Iter;
pub use reader::{Reader, point_reads};
pub use txn::Transaction;

super::bindings!("rocksdb_sys.rs");

/// Turns RocksDB's error out-parameter into a result, freeing the message.
fn check(err: *mut c_char) -> Result<()> {
    // SAFETY: RocksDB sets `err` to null or to a malloc'd message it gives up.
    match unsafe { take_c_string(err, sys::rocksdb_free) } {
        None => Ok(()),
        Some(m)
            if m.starts_with("Resource busy")
                || m.starts_with("Operation failed. Try again")
                || m.starts_with("Operation timed out") =>
        {
            Err(Conflict(format!("rocksdb: {m}")).into())
        }
        Some(m) => Err(anyhow!("rocksdb: {m}")),
    }
}

/// Runs a C call that reports errors through a `char**` out-parameter.
fn call<T>(f: impl FnOnce(*mut *mut c_char) -> T) -> Result<T> {
    let mut err = ptr::null_mut();
    let v = f(&mut err);
    check(err)?;
    Ok(v)
}

/// Sets the calling thread's perf-context level (1 = counting off … 5).
pub fn set_perf_level(level: c_int) {
    // SAFETY: sets a thread-local level; the caller passes 1..=5.
    unsafe { sys::rocksdb_set_perf_level(level.clamp(1, 5)) }
}

/// An options object (database and column-family options).
pub struct Options(*mut sys::rocksdb_options_t);

// SAFETY: after open the options object is only read (statistics), which
// RocksDB allows from any thread.
unsafe impl Send for Options {}
// SAFETY: see `Send` above.
unsafe impl Sync for Options {}

impl Options {
    /// Parses a RocksDB options string over the defaults.
    pub fn from_string(s: &str) -> Result<Options> {
        let c = c_str(s, "rocksdb options")?;
        // SAFETY: plain constructors; `base` is destroyed here, `out` is
        // owned by the returned value (or destroyed on error by its drop).
        unsafe {
            let base = Options(sys::rocksdb_options_create());
            let out = Options(sys::rocksdb_options_create());
            call(|e| sys::rocksdb_get_options_from_string(base.0, c.as_ptr(), out.0, e))?;
            Ok(out)
        }
    }
    /// Opens and closes a database with these options in an in-memory
    /// environment (nothing touches a disk): RocksDB's own checks of how
    /// options combine, which run only at open (direct reads with mmap
    /// reads, say), before any run starts. The error is RocksDB's.
    pub fn check_by_opening(s: &str) -> Result<()> {
        let mut o = Options::from_string(s)?;
        o.create_missing();
        // SAFETY: the environment outlives the database opened on it (it is
        // destroyed after the database's close) and the options (destroyed
        // by `o`'s drop, after the environment is no longer used).
        unsafe {
            let env = sys::rocksdb_create_mem_env();
            sys::rocksdb_options_set_env(o.0, env);
            let p = c_str("/ampbench-options-check", "path")?;
            let r = call(|e| sys::rocksdb_open(o.0, p.as_ptr(), e));
            if let Ok(db) = r {
                if !db.is_null() {
                    sys::rocksdb_close(db);
                }
            }
            drop(o);
            sys::rocksdb_env_destroy(env);
            r.map(|_| ())
        }
    }
    /// Creates the database and missing column families on open.
    pub fn create_missing(&mut self) {
        // SAFETY: setters on an object we own.
        unsafe {
            sys::rocksdb_options_set_create_if_missing(self.0, 1);
            sys::rocksdb_options_set_create_missing_column_families(self.0, 1);
        }
    }
    /// Turns on RocksDB's statistics (tickers and histograms).
    pub fn enable_statistics(&mut self) {
        // SAFETY: a setter on an object we own.
        unsafe { sys::rocksdb_options_enable_statistics(self.0) }
    }
    /// The statistics as RocksDB prints them (empty when off).
    pub fn statistics(&self) -> String {
        // SAFETY: the result is null or a malloc'd string we take.
        unsafe {
            take_c_string(
                sys::rocksdb_options_statistics_get_string(self.0),
                sys::rocksdb_free,
            )
        }
        .unwrap_or_default()
    }
}

impl Drop for Options {
    fn drop(&mut self) {
        // SAFETY: created by us, destroyed once.
        unsafe { sys::rocksdb_options_destroy(self.0) }
    }
}

/// Read options (defaults).
pub struct ReadOptions(*mut sys::rocksdb_readoptions_t);
// SAFETY: never changed after creation; RocksDB only reads it.
unsafe impl Send for ReadOptions {}
// SAFETY: see `Send` above.
unsafe impl Sync for ReadOptions {}

impl ReadOptions {
    /// Default read options.
    pub fn new() -> ReadOptions {
        // SAFETY: a plain constructor.
        ReadOptions(unsafe { sys::rocksdb_readoptions_create() })
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
        unsafe { sys::rocksdb_readoptions_destroy(self.0) }
    }
}

/// Write options: synced on return or not.
pub struct WriteOptions(*mut sys::rocksdb_writeoptions_t);
// SAFETY: never changed after creation; RocksDB only reads it.
unsafe impl Send for WriteOptions {}
// SAFETY: see `Send` above.
unsafe impl Sync for WriteOptions {}

impl WriteOptions {
    /// Write options with `sync` set or not.
    pub fn new(sync: bool) -> WriteOptions {
        // SAFETY: a constructor and a setter on the new object.
        unsafe {
            let w = sys::rocksdb_writeoptions_create();
            sys::rocksdb_writeoptions_set_sync(w, u8::from(sync));
            WriteOptions(w)
        }
    }
}
impl Drop for WriteOptions {
    fn drop(&mut self) {
        // SAFETY: created by us, destroyed once.
        unsafe { sys::rocksdb_writeoptions_destroy(self.0) }
    }
}

/// A column family handle, owned by its [`Db`].
pub struct Cf(*mut sys::rocksdb_column_family_handle_t);

/// A write batch, reused across writes (cleared before each).
pub struct WriteBatch(*mut sys::rocksdb_writebatch_t);
// SAFETY: a batch is plain memory, not tied to a thread.
unsafe impl Send for WriteBatch {}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        // SAFETY: a plain constructor.
        WriteBatch(unsafe { sys::rocksdb_writebatch_create() })
    }
    /// Removes every change (the memory is kept).
    pub fn clear(&mut self) {
        // SAFETY: the batch is ours.
        unsafe { sys::rocksdb_writebatch_clear(self.0) }
    }
    /// Adds a put; `None` puts into the default family without a handle
    /// (one cache line less per write, as db_bench's puts).
    pub fn put(&mut self, cf: Option<&Cf>, key: &[u8], value: &[u8]) {
        let (k, v) = (
            key.as_ptr() as *const c_char,
            value.as_ptr() as *const c_char,
        );
        // SAFETY: the batch is ours, the handle lives in its Db, the slices
        // live across the call (RocksDB copies them).
        unsafe {
            match cf {
                None => sys::rocksdb_writebatch_put(self.0, k, key.len(), v, value.len()),
                Some(cf) => {
                    sys::rocksdb_writebatch_put_cf(self.0, cf.0, k, key.len(), v, value.len())
                }
            }
        }
    }
    /// Adds a delete.
    pub fn delete(&mut self, cf: &Cf, key: &[u8]) {
        // SAFETY: as in `put`.
        unsafe {
            sys::rocksdb_writebatch_delete_cf(
                self.0,
                cf.0,
                key.as_ptr() as *const c_char,
                key.len(),
            )
        }
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
        unsafe { sys::rocksdb_writebatch_destroy(self.0) }
    }
}

/// An open database with its column families.
pub struct Db {
    base: *mut sys::rocksdb_t,
    otxn: *mut sys::rocksdb_optimistictransactiondb_t,
    txn_options: *mut sys::rocksdb_optimistictransaction_options_t,
    cfs: Vec<Cf>,
    options: Options,
}

// SAFETY: RocksDB's DB, its column family handles and an
// OptimisticTransactionDB are safe for concurrent use from many threads.
unsafe impl Send for Db {}
// SAFETY: see `Send` above.
unsafe impl Sync for Db {}

impl Db {
    /// Opens `path` with column families `names` (the first must be
    /// `default`), all with `options`; as an OptimisticTransactionDB when
    /// `optimistic`.
    pub fn open(options: Options, path: &Path, names: &[&str], optimistic: bool) -> Result<Db> {
        let p = c_path(path)?;
        let cnames = names
            .iter()
            .map(|n| c_str(n, "column family"))
            .collect::<Result<Vec<_>>>()?;
        let name_ptrs: Vec<*const c_char> = cnames.iter().map(|n| n.as_ptr()).collect();
        let opt_ptrs: Vec<*const sys::rocksdb_options_t> =
            names.iter().map(|_| options.0 as *const _).collect();
        let mut handles = vec![ptr::null_mut(); names.len()];
        let n = names.len() as c_int;
        // A `Db` is built only from handles that exist: on a failed open
        // nothing is left to close (closing the null handle a failed open
        // leaves ended the process with SIGSEGV), and `options` is freed by
        // its own drop.
        // SAFETY: every pointer passed lives across the call; `handles` has
        // a slot per name, filled only on success. On success the handles
        // and databases are owned by the returned `Db` and freed by its drop.
        unsafe {
            if optimistic {
                let otxn = call(|e| {
                    sys::rocksdb_optimistictransactiondb_open_column_families(
                        options.0,
                        p.as_ptr(),
                        n,
                        name_ptrs.as_ptr(),
                        opt_ptrs.as_ptr(),
                        handles.as_mut_ptr(),
                        e,
                    )
                })?;
                if otxn.is_null() {
                    anyhow::bail!("rocksdb: open of {} returned no database", path.display());
                }
                Ok(Db {
                    base: sys::rocksdb_optimistictransactiondb_get_base_db(otxn),
                    otxn,
                    txn_options: sys::rocksdb_optimistictransaction_options_create(),
                    cfs: handles.into_iter().map(Cf).collect(),
                    options,
                })
            } else {
                let base = call(|e| {
                    sys::rocksdb_open_column_families(
                        options.0,
                        p.as_ptr(),
                        n,
                        name_ptrs.as_ptr(),
                        opt_ptrs.as_ptr(),
                        handles.as_mut_ptr(),
                        e,
                    )
                })?;
                if base.is_null() {
                    anyhow::bail!("rocksdb: open of {} returned no database", path.display());
                }
                Ok(Db {
                    base,
                    otxn: ptr::null_mut(),
                    txn_options: ptr::null_mut(),
                    cfs: handles.into_iter().map(Cf).collect(),
                    options,
                })
            }
        }
    }

    /// The column family at `i` (in the order opened).
    pub fn cf(&self, i: usize) -> Option<&Cf> {
        self.cfs.get(i)
    }

    /// The options the database was opened with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// True when opened as an OptimisticTransactionDB.
    pub fn optimistic(&self) -> bool {
        !self.otxn.is_null()
    }

    /// Applies a batch atomically.
    pub fn write(&self, wo: &WriteOptions, batch: &WriteBatch) -> Result<()> {
        // SAFETY: the database, options and batch are live.
        call(|e| unsafe { sys::rocksdb_write(self.base, wo.0, batch.0, e) })
    }

    /// Removes a key.
    pub fn delete(&self, wo: &WriteOptions, cf: &Cf, key: &[u8]) -> Result<()> {
        // SAFETY: the key lives across the call.
        call(|e| unsafe {
            sys::rocksdb_delete_cf(
                self.base,
                wo.0,
                cf.0,
                key.as_ptr() as *const c_char,
                key.len(),
                e,
            )
        })
    }

    /// An iterator over a column family.
    pub fn iter(&self, ro: &ReadOptions, cf: &Cf) -> Iter<'_> {
        // SAFETY: the iterator borrows the database (lifetime `'_`) and is
        // destroyed by its drop.
        Iter::new(unsafe { sys::rocksdb_create_iterator_cf(self.base, ro.0, cf.0) })
    }

    /// A string property of a column family.
    pub fn property(&self, cf: &Cf, name: &str) -> Option<String> {
        let c = c_str(name, "property").ok()?;
        // SAFETY: the result is null or a malloc'd string we take.
        unsafe {
            take_c_string(
                sys::rocksdb_property_value_cf(self.base, cf.0, c.as_ptr()),
                sys::rocksdb_free,
            )
        }
    }

    /// An integer property of a column family.
    pub fn property_int(&self, cf: &Cf, name: &str) -> Option<u64> {
        let c = c_str(name, "property").ok()?;
        let mut v: u64 = 0;
        // SAFETY: `v` outlives the call.
        let rc = unsafe { sys::rocksdb_property_int_cf(self.base, cf.0, c.as_ptr(), &mut v) };
        (rc == 0).then_some(v)
    }

    /// Flushes a column family's memtable and waits for it.
    pub fn flush(&self, cf: &Cf) -> Result<()> {
        // SAFETY: the flush options are created and destroyed here.
        unsafe {
            let fo = sys::rocksdb_flushoptions_create();
            sys::rocksdb_flushoptions_set_wait(fo, 1);
            let r = call(|e| sys::rocksdb_flush_cf(self.base, fo, cf.0, e));
            sys::rocksdb_flushoptions_destroy(fo);
            r
        }
    }

    /// Begins an optimistic transaction whose commit uses `wo`; `reuse`
    /// hands back a finished transaction's object to reinitialise.
    pub fn begin<'d>(
        &'d self,
        wo: &WriteOptions,
        reuse: Option<Transaction<'d>>,
    ) -> Result<Transaction<'d>> {
        if self.otxn.is_null() {
            anyhow::bail!("rocksdb: opened without transactions");
        }
        let old = reuse.map_or(ptr::null_mut(), Transaction::into_raw);
        // SAFETY: the database and options are live; `old` is null or a
        // transaction of this database that RocksDB reinitialises and
        // returns.
        let t = unsafe {
            sys::rocksdb_optimistictransaction_begin(self.otxn, wo.0, self.txn_options, old)
        };
        Ok(Transaction::new(t))
    }
}

/// Copies a value RocksDB malloc'd and frees it; null is a miss.
///
/// # Safety
/// `v` is null or a malloc'd buffer of `len` bytes given up by RocksDB.
unsafe fn take_value(v: *mut c_char, len: usize) -> Option<Vec<u8>> {
    if v.is_null() {
        return None;
    }
    // SAFETY: per the function contract.
    unsafe {
        let out = bytes(v as *const c_void, len).to_vec();
        sys::rocksdb_free(v as *mut c_void);
        Some(out)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        // SAFETY: every handle was created at open and is destroyed once:
        // column families before the database, the base-db wrapper before
        // the transaction database it came from.
        unsafe {
            for cf in &self.cfs {
                sys::rocksdb_column_family_handle_destroy(cf.0);
            }
            if self.otxn.is_null() {
                sys::rocksdb_close(self.base);
            } else {
                sys::rocksdb_optimistictransactiondb_close_base_db(self.base);
                sys::rocksdb_optimistictransactiondb_close(self.otxn);
                sys::rocksdb_optimistictransaction_options_destroy(self.txn_options);
            }
        }
    }
}

/// The version line of a RocksDB LOG file (the 7.8 C API has no version
/// call).
pub fn log_version(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("LOG")).unwrap_or_default();
    text.lines()
        .find_map(|l| {
            l.split_once("RocksDB version: ")
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown (no version line in LOG)".into())
}

/// The library file loaded and how the build chose it (see
/// [`super::library_file`]), and how point reads are made.
pub fn library_file() -> Option<String> {
    let file = super::library_file(
        sys::rocksdb_open as *const c_void,
        "ROCKSDB_LIB_DIR",
        env!("AMPBENCH_ROCKSDB_LIB_DIR"),
    )?;
    Some(match point_reads() {
        Ok(()) => format!("{file}; point reads through the shim (one pinned slice per session)"),
        Err(why) => {
            format!("{file}; point reads through the C API (a pinned slice per read): {why}")
        }
    })
}
