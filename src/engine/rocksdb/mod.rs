//! RocksDB through its C API (Debian's librocksdb 7.8.3, bindings generated
//! from its own header by build.rs).
//!
//! Tables are column families; the first table is RocksDB's default column
//! family (as in db_bench, whose writes it is compared with: a write to the
//! default family skips the family lookup, and a one-table workload then
//! has no second, empty family beside it). Options are one RocksDB options string built
//! from our defaults and `--set rocksdb.KEY=VALUE` overrides and handed to
//! `rocksdb_get_options_from_string`, so any RocksDB option works; keys
//! starting with `table.` go into `block_based_table_factory={…}`. The same
//! options object (and so one block cache) serves every column family.
//!
//! Defaults (fair against the other engines: a bloom filter, a block cache
//! of `--cache` bytes, snappy like WiredTiger and LevelDB):
//! `write_buffer_size=64MB`, `max_background_jobs=2`,
//! `level_compaction_dynamic_level_bytes=true`, `compression=kSnappyCompression`,
//! `table.filter_policy=bloomfilter:10:false`, `table.block_cache=<cache>`.
//! `statistics=true|false` (ours) turns RocksDB's tickers on (default) or off.
//! `perf_level=N` (ours) is RocksDB's per-thread perf-context level, set in
//! every thread that calls the engine: 1 (counting off, the default, as in
//! db_bench) up to 5. RocksDB's own default, 2, counts into the thread's
//! perf context on every operation, a thread-local lookup each time, which
//! cost ampbench 10% of a fill against db_bench until it was set to 1; we
//! never read the perf context.

use std::cell::Cell;
use std::ffi::{CStr, CString, c_void};
use std::ops::Bound;
use std::os::raw::{c_char, c_int};
use std::path::{Path, PathBuf};
use std::ptr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

use super::{
    Durability, EngineKind, EngineOptions, EngineStats, KeyRange, KvEngine, OpenSpec, Order, Table,
    WriteBatch,
};

#[allow(
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    dead_code,
    unsafe_op_in_unsafe_fn,
    clippy::all
)]
mod sys {
    include!(concat!(env!("OUT_DIR"), "/rocksdb_sys.rs"));
}

mod options;

pub use options::{default_settings, validate};
use options::{destroy_options, options_string, parse_options};

/// A RocksDB database opened with one column family per table.
pub struct RocksDb {
    db: *mut sys::rocksdb_t,
    options: *mut sys::rocksdb_options_t,
    cfs: Vec<*mut sys::rocksdb_column_family_handle_t>,
    default_cf: *mut sys::rocksdb_column_family_handle_t,
    table_names: Vec<String>,
    read: *mut sys::rocksdb_readoptions_t,
    write_sync: *mut sys::rocksdb_writeoptions_t,
    write_nosync: *mut sys::rocksdb_writeoptions_t,
    dir: PathBuf,
    version: String,
    settings: Vec<(String, String)>,
    statistics: bool,
    perf_level: c_int,
}

// SAFETY: RocksDB's DB object, column-family handles, read/write options and
// (after open) its options object are safe for concurrent use from many
// threads; none of them is mutated after `open` returns.
unsafe impl Send for RocksDb {}
// SAFETY: see `Send` above.
unsafe impl Sync for RocksDb {}

/// Turns a RocksDB error string into an error, freeing it.
fn check(err: *mut c_char) -> Result<()> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: RocksDB returns a NUL-terminated malloc'd string, freed once here.
    let msg = unsafe { CStr::from_ptr(err) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: `err` came from RocksDB and is not used again.
    unsafe { sys::rocksdb_free(err as *mut c_void) };
    Err(anyhow!("rocksdb: {msg}"))
}

/// The library version, read from the LOG of a scratch database (the 7.8 C
/// API has no version call).
pub fn library_version() -> Result<String> {
    let dir = tempfile::tempdir().context("cannot create a scratch directory")?;
    let spec = OpenSpec {
        dir: dir.path().to_path_buf(),
        tables: vec![],
        cache_bytes: 8 << 20,
        options: EngineOptions::default(),
    };
    let db = RocksDb::open(&spec)?;
    let v = db.version.clone();
    Box::new(db).close()?;
    Ok(v)
}

fn read_log_version(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("LOG")).unwrap_or_default();
    text.lines()
        .find_map(|l| {
            l.split_once("RocksDB version: ")
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown (no version line in LOG)".into())
}

/// What each thread that calls RocksDB keeps: one write batch, cleared and
/// reused for every write (as db_bench's writers reuse theirs, so a put
/// costs no batch allocation), and the perf level last set in the thread.
struct ThreadState {
    batch: *mut sys::rocksdb_writebatch_t,
    perf_level: Cell<c_int>,
}

impl Drop for ThreadState {
    fn drop(&mut self) {
        // SAFETY: created once per thread below and destroyed once here; a
        // batch is not tied to any database.
        unsafe { sys::rocksdb_writebatch_destroy(self.batch) }
    }
}

thread_local! {
    static THREAD: ThreadState = ThreadState {
        // SAFETY: a plain constructor.
        batch: unsafe { sys::rocksdb_writebatch_create() },
        perf_level: Cell::new(0),
    };
}

/// Adds a put to a write batch (the slices are copied into it). A put to
/// the default family goes in without a family handle, as db_bench's do:
/// the batch then need not look up the handle's id (one cache line less
/// per write).
///
/// # Safety
/// `wb` and `cf` must be live handles; `default` tells whether `cf` is the
/// database's default family.
unsafe fn batch_put(
    wb: *mut sys::rocksdb_writebatch_t,
    cf: *mut sys::rocksdb_column_family_handle_t,
    default: bool,
    key: &[u8],
    value: &[u8],
) {
    let (k, v) = (
        key.as_ptr() as *const c_char,
        value.as_ptr() as *const c_char,
    );
    // SAFETY: the caller's contract; the slices live for the call.
    unsafe {
        if default {
            sys::rocksdb_writebatch_put(wb, k, key.len(), v, value.len())
        } else {
            sys::rocksdb_writebatch_put_cf(wb, cf, k, key.len(), v, value.len())
        }
    }
}

impl RocksDb {
    /// Opens (creating if needed) a database with a column family per table.
    pub fn open(spec: &OpenSpec) -> Result<RocksDb> {
        let settings = spec
            .options
            .merged_over(&default_settings(spec.cache_bytes));
        let (s, ours) = options_string(&settings)?;
        let options = parse_options(&s)
            .with_context(|| format!("rocksdb options '{s}' for {}", spec.dir.display()))?;
        for t in &spec.tables {
            super::check_table_name(t)?;
        }
        if spec.tables.iter().skip(1).any(|t| t == "default") {
            bail!(
                "rocksdb: only the first table can be named 'default' (it is the default column family)"
            );
        }
        let mut names: Vec<CString> = vec![CString::new("default").context("cf name")?];
        for t in spec.tables.iter().skip(1) {
            names.push(CString::new(t.as_str()).context("table name")?);
        }
        let name_ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
        let opt_ptrs: Vec<*const sys::rocksdb_options_t> =
            names.iter().map(|_| options as *const _).collect();
        let mut handles: Vec<*mut sys::rocksdb_column_family_handle_t> =
            vec![ptr::null_mut(); names.len()];
        let path = CString::new(spec.dir.to_string_lossy().as_bytes()).context("path")?;
        let mut err = ptr::null_mut();
        // SAFETY: every pointer passed lives until the call returns; the
        // handles array has one slot per name.
        let db = unsafe {
            sys::rocksdb_options_set_create_if_missing(options, 1);
            sys::rocksdb_options_set_create_missing_column_families(options, 1);
            if ours.statistics {
                sys::rocksdb_options_enable_statistics(options);
            }
            sys::rocksdb_open_column_families(
                options,
                path.as_ptr(),
                names.len() as c_int,
                name_ptrs.as_ptr(),
                opt_ptrs.as_ptr(),
                handles.as_mut_ptr(),
                &mut err,
            )
        };
        if let Err(e) = check(err) {
            destroy_options(options);
            return Err(e).with_context(|| format!("opening rocksdb in {}", spec.dir.display()));
        }
        // SAFETY: plain constructors.
        let (read, write_sync, write_nosync) = unsafe {
            let r = sys::rocksdb_readoptions_create();
            let ws = sys::rocksdb_writeoptions_create();
            sys::rocksdb_writeoptions_set_sync(ws, 1);
            let wn = sys::rocksdb_writeoptions_create();
            sys::rocksdb_writeoptions_set_sync(wn, 0);
            (r, ws, wn)
        };
        let default_cf = handles[0];
        // Table i is handle i: the first table is the default family. With
        // no tables the default family is still open (for `rocksdb.stats`).
        let cfs = if spec.tables.is_empty() {
            Vec::new()
        } else {
            handles.clone()
        };
        Ok(RocksDb {
            db,
            options,
            cfs,
            default_cf,
            table_names: spec.tables.clone(),
            read,
            write_sync,
            write_nosync,
            dir: spec.dir.clone(),
            version: read_log_version(&spec.dir),
            settings,
            statistics: ours.statistics,
            perf_level: ours.perf_level,
        })
    }

    /// Runs `f` in this thread's state, first setting the thread's perf
    /// level to this database's (a per-thread RocksDB setting).
    fn on_thread<T>(&self, f: impl FnOnce(&ThreadState) -> T) -> T {
        THREAD.with(|t| {
            if t.perf_level.get() != self.perf_level {
                // SAFETY: sets a thread-local level; any value 1-5 is valid.
                unsafe { sys::rocksdb_set_perf_level(self.perf_level) };
                t.perf_level.set(self.perf_level);
            }
            f(t)
        })
    }

    /// Readies this thread for a call (its perf level), for calls that need
    /// no batch.
    fn enter_thread(&self) {
        self.on_thread(|_| ());
    }

    /// Runs `f` with this thread's write batch, cleared (capacity kept).
    fn with_batch<T>(&self, f: impl FnOnce(*mut sys::rocksdb_writebatch_t) -> T) -> T {
        self.on_thread(|t| {
            // SAFETY: the batch belongs to this thread and is not in use (no
            // write calls back into another).
            unsafe { sys::rocksdb_writebatch_clear(t.batch) };
            f(t.batch)
        })
    }

    fn write_batch(&self, wb: *mut sys::rocksdb_writebatch_t, d: Durability) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: db is open; `wb` is a live batch.
        unsafe { sys::rocksdb_write(self.db, self.wopts(d), wb, &mut err) };
        check(err)
    }

    fn cf(&self, t: Table) -> Result<*mut sys::rocksdb_column_family_handle_t> {
        // The first table is the default family, kept beside the database
        // handle: no look into the table vector on the common path.
        if t.0 == 0 && !self.cfs.is_empty() {
            return Ok(self.default_cf);
        }
        self.cfs.get(t.0).copied().ok_or_else(|| super::no_table(t))
    }

    fn wopts(&self, d: Durability) -> *mut sys::rocksdb_writeoptions_t {
        match d {
            Durability::Sync => self.write_sync,
            Durability::NoSync => self.write_nosync,
        }
    }

    fn property(&self, cf: *mut sys::rocksdb_column_family_handle_t, name: &str) -> Option<String> {
        let c = CString::new(name).ok()?;
        // SAFETY: db and cf are open; the result is malloc'd by RocksDB.
        unsafe {
            let p = sys::rocksdb_property_value_cf(self.db, cf, c.as_ptr());
            if p.is_null() {
                return None;
            }
            let s = CStr::from_ptr(p).to_string_lossy().into_owned();
            sys::rocksdb_free(p as *mut c_void);
            Some(s)
        }
    }

    fn property_int(
        &self,
        cf: *mut sys::rocksdb_column_family_handle_t,
        name: &str,
    ) -> Option<u64> {
        let c = CString::new(name).ok()?;
        let mut v: u64 = 0;
        // SAFETY: db and cf are open; `v` outlives the call.
        let rc = unsafe { sys::rocksdb_property_int_cf(self.db, cf, c.as_ptr(), &mut v) };
        (rc == 0).then_some(v)
    }
}

impl KvEngine for RocksDb {
    fn kind(&self) -> EngineKind {
        EngineKind::Rocksdb
    }
    fn version(&self) -> String {
        self.version.clone()
    }
    fn settings(&self) -> Vec<(String, String)> {
        self.settings.clone()
    }
    fn dir(&self) -> &Path {
        &self.dir
    }

    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let cf = self.cf(table)?;
        self.enter_thread();
        let mut len: usize = 0;
        let mut err = ptr::null_mut();
        // SAFETY: key outlives the call; the value is malloc'd by RocksDB,
        // copied, then freed.
        unsafe {
            let v = sys::rocksdb_get_cf(
                self.db,
                self.read,
                cf,
                key.as_ptr() as *const c_char,
                key.len(),
                &mut len,
                &mut err,
            );
            check(err)?;
            if v.is_null() {
                return Ok(None);
            }
            let out = std::slice::from_raw_parts(v as *const u8, len).to_vec();
            sys::rocksdb_free(v as *mut c_void);
            Ok(Some(out))
        }
    }

    fn get_len(&self, table: Table, key: &[u8]) -> Result<Option<usize>> {
        let cf = self.cf(table)?;
        self.enter_thread();
        let mut err = ptr::null_mut();
        // SAFETY: key outlives the call; the pinned slice is read, then
        // destroyed once.
        unsafe {
            let p = sys::rocksdb_get_pinned_cf(
                self.db,
                self.read,
                cf,
                key.as_ptr() as *const c_char,
                key.len(),
                &mut err,
            );
            check(err)?;
            if p.is_null() {
                return Ok(None);
            }
            let mut len: usize = 0;
            sys::rocksdb_pinnableslice_value(p, &mut len);
            sys::rocksdb_pinnableslice_destroy(p);
            Ok(Some(len))
        }
    }

    fn put(&self, table: Table, key: &[u8], value: &[u8], d: Durability) -> Result<()> {
        let cf = self.cf(table)?;
        self.with_batch(|wb| {
            // SAFETY: `wb` is this thread's cleared batch; cf is open.
            unsafe { batch_put(wb, cf, cf == self.default_cf, key, value) };
            self.write_batch(wb, d)
        })
    }

    fn delete(&self, table: Table, key: &[u8], d: Durability) -> Result<()> {
        let cf = self.cf(table)?;
        self.enter_thread();
        let mut err = ptr::null_mut();
        // SAFETY: key outlives the call.
        unsafe {
            sys::rocksdb_delete_cf(
                self.db,
                self.wopts(d),
                cf,
                key.as_ptr() as *const c_char,
                key.len(),
                &mut err,
            )
        };
        check(err)
    }

    fn write(&self, batch: &WriteBatch, d: Durability) -> Result<()> {
        // Resolve every table first, so a bad one fails before anything is
        // added to the batch.
        let mut cfs = Vec::with_capacity(batch.ops.len());
        for op in &batch.ops {
            let (super::BatchOp::Put { table, .. } | super::BatchOp::Delete { table, .. }) = op;
            cfs.push(self.cf(*table)?);
        }
        self.with_batch(|wb| {
            for (op, cf) in batch.ops.iter().zip(cfs) {
                // SAFETY: `wb` is this thread's cleared batch; the slices are
                // copied into it.
                unsafe {
                    match op {
                        super::BatchOp::Put { key, value, .. } => {
                            batch_put(wb, cf, cf == self.default_cf, key, value)
                        }
                        super::BatchOp::Delete { key, .. } => sys::rocksdb_writebatch_delete_cf(
                            wb,
                            cf,
                            key.as_ptr() as *const c_char,
                            key.len(),
                        ),
                    }
                }
            }
            self.write_batch(wb, d)
        })
    }

    fn scan(
        &self,
        table: Table,
        range: KeyRange<'_>,
        order: Order,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let cf = self.cf(table)?;
        self.enter_thread();
        let mut n = 0;
        // SAFETY: the iterator is created and destroyed here; key/value
        // slices are used only before the iterator moves.
        unsafe {
            let it = sys::rocksdb_create_iterator_cf(self.db, self.read, cf);
            let key_of = |it: *mut sys::rocksdb_iterator_t| {
                let mut len = 0usize;
                let p = sys::rocksdb_iter_key(it, &mut len);
                std::slice::from_raw_parts(p as *const u8, len)
            };
            match order {
                Order::Forward => {
                    match range.start {
                        Bound::Included(s) | Bound::Excluded(s) => {
                            sys::rocksdb_iter_seek(it, s.as_ptr() as *const c_char, s.len())
                        }
                        Bound::Unbounded => sys::rocksdb_iter_seek_to_first(it),
                    }
                    if let Bound::Excluded(s) = range.start {
                        if sys::rocksdb_iter_valid(it) != 0 && key_of(it) == s {
                            sys::rocksdb_iter_next(it);
                        }
                    }
                }
                Order::Reverse => {
                    match range.end {
                        Bound::Included(e) | Bound::Excluded(e) => sys::rocksdb_iter_seek_for_prev(
                            it,
                            e.as_ptr() as *const c_char,
                            e.len(),
                        ),
                        Bound::Unbounded => sys::rocksdb_iter_seek_to_last(it),
                    }
                    if let Bound::Excluded(e) = range.end {
                        if sys::rocksdb_iter_valid(it) != 0 && key_of(it) == e {
                            sys::rocksdb_iter_prev(it);
                        }
                    }
                }
            }
            while n < limit && sys::rocksdb_iter_valid(it) != 0 {
                let k = key_of(it);
                let inside = match order {
                    Order::Forward => range.below_end(k),
                    Order::Reverse => range.above_start(k),
                };
                if !inside {
                    break;
                }
                let mut vlen = 0usize;
                let vp = sys::rocksdb_iter_value(it, &mut vlen);
                visit(k, std::slice::from_raw_parts(vp as *const u8, vlen));
                n += 1;
                match order {
                    Order::Forward => sys::rocksdb_iter_next(it),
                    Order::Reverse => sys::rocksdb_iter_prev(it),
                }
            }
            let mut err = ptr::null_mut();
            sys::rocksdb_iter_get_error(it, &mut err);
            sys::rocksdb_iter_destroy(it);
            check(err)?;
        }
        Ok(n)
    }

    fn stats(&self) -> Result<EngineStats> {
        let mut st = EngineStats::default();
        if let Some(s) = self.property(self.default_cf, "rocksdb.stats") {
            st.texts.push(("rocksdb.stats".into(), s));
        }
        for (i, cf) in self.cfs.iter().enumerate() {
            let name = &self.table_names[i];
            if let Some(s) = self.property(*cf, "rocksdb.cfstats") {
                for (level, col, v) in super::compaction_stats::parse(&s) {
                    st.values
                        .push((format!("compaction.{col}.{level}.{name}"), v));
                }
                st.texts.push((format!("rocksdb.cfstats.{name}"), s));
            }
            for p in [
                "rocksdb.estimate-live-data-size",
                "rocksdb.total-sst-files-size",
                "rocksdb.estimate-pending-compaction-bytes",
                "rocksdb.estimate-num-keys",
                "rocksdb.num-running-compactions",
            ] {
                if let Some(v) = self.property_int(*cf, p) {
                    st.values.push((format!("{p}.{name}"), v as f64));
                }
            }
        }
        if self.statistics {
            // SAFETY: options are open; the string is malloc'd by RocksDB.
            let text = unsafe {
                let p = sys::rocksdb_options_statistics_get_string(self.options);
                if p.is_null() {
                    String::new()
                } else {
                    let s = CStr::from_ptr(p).to_string_lossy().into_owned();
                    sys::rocksdb_free(p as *mut c_void);
                    s
                }
            };
            for line in text.lines() {
                if let Some((name, rest)) = line.split_once(" COUNT : ") {
                    if let Ok(v) = rest.trim().parse::<f64>() {
                        st.values.push((name.trim().to_string(), v));
                    }
                }
            }
            st.texts.push(("rocksdb.statistics".into(), text));
        }
        Ok(st)
    }

    fn settle(&self) -> Result<String> {
        let start = Instant::now();
        // SAFETY: flush options are created and destroyed here; db and cfs are open.
        unsafe {
            let fo = sys::rocksdb_flushoptions_create();
            sys::rocksdb_flushoptions_set_wait(fo, 1);
            for cf in &self.cfs {
                let mut err = ptr::null_mut();
                sys::rocksdb_flush_cf(self.db, fo, *cf, &mut err);
                if let Err(e) = check(err) {
                    sys::rocksdb_flushoptions_destroy(fo);
                    return Err(e);
                }
            }
            sys::rocksdb_flushoptions_destroy(fo);
        }
        let limit = Duration::from_secs(1800);
        loop {
            let busy = self.cfs.iter().any(|cf| {
                self.property_int(*cf, "rocksdb.compaction-pending")
                    .unwrap_or(0)
                    > 0
                    || self
                        .property_int(*cf, "rocksdb.num-running-compactions")
                        .unwrap_or(0)
                        > 0
                    || self
                        .property_int(*cf, "rocksdb.num-running-flushes")
                        .unwrap_or(0)
                        > 0
            });
            if !busy {
                break;
            }
            if start.elapsed() > limit {
                bail!(
                    "rocksdb: compactions still pending after {}s",
                    limit.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(format!(
            "flushed memtables and waited for compactions: {:.1}s",
            start.elapsed().as_secs_f64()
        ))
    }

    fn close(self: Box<Self>) -> Result<()> {
        drop(self);
        Ok(())
    }
}

impl Drop for RocksDb {
    fn drop(&mut self) {
        // SAFETY: every handle was created at open and is destroyed once,
        // column families before the database, options last.
        unsafe {
            for cf in self.cfs.iter().filter(|cf| **cf != self.default_cf) {
                sys::rocksdb_column_family_handle_destroy(*cf);
            }
            sys::rocksdb_column_family_handle_destroy(self.default_cf);
            sys::rocksdb_close(self.db);
            sys::rocksdb_readoptions_destroy(self.read);
            sys::rocksdb_writeoptions_destroy(self.write_sync);
            sys::rocksdb_writeoptions_destroy(self.write_nosync);
            sys::rocksdb_options_destroy(self.options);
        }
    }
}
