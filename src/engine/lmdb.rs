//! LMDB through its C API (Debian's liblmdb 0.9.24, bindings generated from
//! `lmdb.h` by build.rs).
//!
//! Tables are named databases in one environment. Every read is a read-only
//! transaction; every write a write transaction (LMDB serializes writers).
//! The environment is opened with `MDB_NOSYNC`: a no-sync commit leaves the
//! pages to the OS, and a sync write calls `mdb_env_sync(force)` after its
//! commit, so it is durable on return.
//!
//! Options (`--set lmdb.KEY=VALUE`): `map_size` (default 64GB, address
//! space only: the file grows as pages are used), `max_readers` (256),
//! `writemap` and `nordahead` (`true`/`false`, default false). LMDB has no
//! cache of its own: it reads through the OS page cache, so `--cache` does
//! not apply.

use std::ffi::{CStr, CString, c_void};
use std::ops::Bound;
use std::os::raw::{c_int, c_uint};
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
    include!(concat!(env!("OUT_DIR"), "/lmdb_sys.rs"));
}

const KNOWN: &[&str] = &["map_size", "max_readers", "writemap", "nordahead"];

/// The default settings (LMDB has no cache: the OS page cache serves it).
pub fn default_settings(_cache_bytes: u64) -> Vec<(String, String)> {
    vec![
        ("map_size".into(), "64GB".into()),
        ("max_readers".into(), "256".into()),
        ("writemap".into(), "false".into()),
        ("nordahead".into(), "false".into()),
    ]
}

fn flag(settings: &[(String, String)], key: &str) -> Result<bool> {
    match settings
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
    {
        None | Some("false") | Some("0") | Some("off") => Ok(false),
        Some("true") | Some("1") | Some("on") => Ok(true),
        Some(v) => {
            Err(UsageError(format!("option 'lmdb.{key}={v}': expected true or false")).into())
        }
    }
}

fn value<'a>(settings: &'a [(String, String)], key: &str) -> &'a str {
    settings
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or("")
}

/// Checks `--set lmdb.*` options.
pub fn validate(options: &EngineOptions) -> Result<()> {
    options.check_known(EngineKind::Lmdb, KNOWN)?;
    let s = options.merged_over(&default_settings(0));
    super::options::parse_size(value(&s, "map_size"))
        .map_err(|e| UsageError(format!("option 'lmdb.map_size': {e}")))?;
    value(&s, "max_readers")
        .parse::<u32>()
        .map_err(|_| UsageError("option 'lmdb.max_readers': expected a whole number".into()))?;
    flag(&s, "writemap")?;
    flag(&s, "nordahead")?;
    Ok(())
}

/// The library's version string (`LMDB 0.9.24: (July 24, 2019)`).
pub fn library_version() -> String {
    let (mut a, mut b, mut c) = (0, 0, 0);
    // SAFETY: returns a static string.
    let s = unsafe { CStr::from_ptr(sys::mdb_version(&mut a, &mut b, &mut c)) };
    s.to_string_lossy().into_owned()
}

fn check(rc: c_int, what: &str) -> Result<()> {
    if rc == 0 {
        return Ok(());
    }
    // SAFETY: mdb_strerror returns a static string.
    let m = unsafe { CStr::from_ptr(sys::mdb_strerror(rc)) }
        .to_string_lossy()
        .into_owned();
    Err(anyhow!("lmdb {what}: {m}"))
}

fn val(b: &[u8]) -> sys::MDB_val {
    sys::MDB_val {
        mv_size: b.len(),
        mv_data: b.as_ptr() as *mut c_void,
    }
}

/// # Safety
/// `v` must have been filled by LMDB within a live transaction.
unsafe fn bytes<'a>(v: &sys::MDB_val) -> &'a [u8] {
    if v.mv_size == 0 {
        &[]
    } else {
        // SAFETY: per the function contract.
        unsafe { std::slice::from_raw_parts(v.mv_data as *const u8, v.mv_size) }
    }
}

/// An LMDB environment with one named database per table.
pub struct Lmdb {
    env: *mut sys::MDB_env,
    dbis: Vec<sys::MDB_dbi>,
    names: Vec<String>,
    dir: PathBuf,
    settings: Vec<(String, String)>,
}

// SAFETY: an MDB_env is thread-safe; with MDB_NOTLS read transactions are
// not bound to threads, and every transaction here lives within one call.
unsafe impl Send for Lmdb {}
// SAFETY: see `Send` above.
unsafe impl Sync for Lmdb {}

impl Lmdb {
    /// Opens (creating if needed) an environment and its named databases.
    pub fn open(spec: &OpenSpec) -> Result<Lmdb> {
        validate(&spec.options)?;
        let settings = spec
            .options
            .merged_over(&default_settings(spec.cache_bytes));
        let map_size =
            super::options::parse_size(value(&settings, "map_size")).map_err(|e| anyhow!(e))?;
        let readers: c_uint = value(&settings, "max_readers")
            .parse()
            .context("max_readers")?;
        let mut flags = sys::MDB_NOSYNC | sys::MDB_NOTLS;
        if flag(&settings, "writemap")? {
            flags |= sys::MDB_WRITEMAP;
        }
        if flag(&settings, "nordahead")? {
            flags |= sys::MDB_NORDAHEAD;
        }
        for t in &spec.tables {
            super::check_table_name(t)?;
        }
        let path = CString::new(spec.dir.to_string_lossy().as_bytes()).context("path")?;
        let mut env: *mut sys::MDB_env = ptr::null_mut();
        // SAFETY: plain C calls on an environment we create; it is closed on
        // every error path below.
        unsafe {
            check(sys::mdb_env_create(&mut env), "env_create")?;
            let r = (|| -> Result<Vec<sys::MDB_dbi>> {
                check(
                    sys::mdb_env_set_mapsize(env, map_size as usize),
                    "set_mapsize",
                )?;
                check(sys::mdb_env_set_maxreaders(env, readers), "set_maxreaders")?;
                check(
                    sys::mdb_env_set_maxdbs(env, (spec.tables.len() + 1) as sys::MDB_dbi),
                    "set_maxdbs",
                )?;
                check(
                    sys::mdb_env_open(env, path.as_ptr(), flags, 0o644),
                    &format!("open {}", spec.dir.display()),
                )?;
                let mut txn: *mut sys::MDB_txn = ptr::null_mut();
                check(
                    sys::mdb_txn_begin(env, ptr::null_mut(), 0, &mut txn),
                    "txn_begin",
                )?;
                let mut dbis = Vec::new();
                for t in &spec.tables {
                    let name = CString::new(t.as_str()).context("table name")?;
                    let mut dbi: sys::MDB_dbi = 0;
                    let rc = sys::mdb_dbi_open(txn, name.as_ptr(), sys::MDB_CREATE, &mut dbi);
                    if rc != 0 {
                        sys::mdb_txn_abort(txn);
                        check(rc, "dbi_open")?;
                    }
                    dbis.push(dbi);
                }
                check(sys::mdb_txn_commit(txn), "commit")?;
                Ok(dbis)
            })();
            match r {
                Ok(dbis) => Ok(Lmdb {
                    env,
                    dbis,
                    names: spec.tables.clone(),
                    dir: spec.dir.clone(),
                    settings,
                }),
                Err(e) => {
                    sys::mdb_env_close(env);
                    Err(e)
                }
            }
        }
    }

    fn dbi(&self, t: Table) -> Result<sys::MDB_dbi> {
        self.dbis
            .get(t.0)
            .copied()
            .ok_or_else(|| super::no_table(t))
    }

    fn read_txn(&self) -> Result<*mut sys::MDB_txn> {
        let mut txn = ptr::null_mut();
        // SAFETY: the environment is open.
        check(
            unsafe { sys::mdb_txn_begin(self.env, ptr::null_mut(), sys::MDB_RDONLY, &mut txn) },
            "read txn",
        )?;
        Ok(txn)
    }
}

impl KvEngine for Lmdb {
    fn kind(&self) -> EngineKind {
        EngineKind::Lmdb
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
        let dbi = self.dbi(table)?;
        let txn = self.read_txn()?;
        let mut k = val(key);
        let mut v = val(&[]);
        // SAFETY: the value is copied before the transaction ends.
        unsafe {
            let rc = sys::mdb_get(txn, dbi, &mut k, &mut v);
            let out = match rc {
                0 => Some(bytes(&v).to_vec()),
                sys::MDB_NOTFOUND => None,
                _ => {
                    sys::mdb_txn_abort(txn);
                    return check(rc, "get").map(|_| None);
                }
            };
            sys::mdb_txn_abort(txn);
            Ok(out)
        }
    }

    fn write(&self, batch: &WriteBatch, d: Durability) -> Result<()> {
        let mut txn = ptr::null_mut();
        // SAFETY: one write transaction, committed or aborted here; key and
        // value slices live across each call (LMDB copies them).
        unsafe {
            check(
                sys::mdb_txn_begin(self.env, ptr::null_mut(), 0, &mut txn),
                "write txn",
            )?;
            for op in &batch.ops {
                let rc = match op {
                    BatchOp::Put { table, key, value } => match self.dbi(*table) {
                        Ok(dbi) => sys::mdb_put(txn, dbi, &mut val(key), &mut val(value), 0),
                        Err(e) => {
                            sys::mdb_txn_abort(txn);
                            return Err(e);
                        }
                    },
                    BatchOp::Delete { table, key } => match self.dbi(*table) {
                        Ok(dbi) => match sys::mdb_del(txn, dbi, &mut val(key), ptr::null_mut()) {
                            sys::MDB_NOTFOUND => 0,
                            rc => rc,
                        },
                        Err(e) => {
                            sys::mdb_txn_abort(txn);
                            return Err(e);
                        }
                    },
                };
                if rc != 0 {
                    sys::mdb_txn_abort(txn);
                    return check(rc, "write");
                }
            }
            check(sys::mdb_txn_commit(txn), "commit")?;
            if d == Durability::Sync {
                check(sys::mdb_env_sync(self.env, 1), "env_sync")?;
            }
        }
        Ok(())
    }

    fn scan(
        &self,
        table: Table,
        range: KeyRange<'_>,
        order: Order,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let dbi = self.dbi(table)?;
        let txn = self.read_txn()?;
        let mut n = 0;
        // SAFETY: cursor and transaction are closed here; slices are used
        // before the cursor moves.
        unsafe {
            let mut cur: *mut sys::MDB_cursor = ptr::null_mut();
            let rc = sys::mdb_cursor_open(txn, dbi, &mut cur);
            if rc != 0 {
                sys::mdb_txn_abort(txn);
                return check(rc, "cursor_open").map(|_| 0);
            }
            let mut k = val(&[]);
            let mut v = val(&[]);
            let mut rc = match order {
                Order::Forward => match range.start {
                    Bound::Included(s) | Bound::Excluded(s) => {
                        k = val(s);
                        sys::mdb_cursor_get(cur, &mut k, &mut v, sys::MDB_cursor_op_MDB_SET_RANGE)
                    }
                    Bound::Unbounded => {
                        sys::mdb_cursor_get(cur, &mut k, &mut v, sys::MDB_cursor_op_MDB_FIRST)
                    }
                },
                Order::Reverse => match range.end {
                    Bound::Included(e) | Bound::Excluded(e) => {
                        k = val(e);
                        match sys::mdb_cursor_get(
                            cur,
                            &mut k,
                            &mut v,
                            sys::MDB_cursor_op_MDB_SET_RANGE,
                        ) {
                            // Landed at or after the end: step back if past it.
                            0 if !range.below_end(bytes(&k)) => sys::mdb_cursor_get(
                                cur,
                                &mut k,
                                &mut v,
                                sys::MDB_cursor_op_MDB_PREV,
                            ),
                            sys::MDB_NOTFOUND => sys::mdb_cursor_get(
                                cur,
                                &mut k,
                                &mut v,
                                sys::MDB_cursor_op_MDB_LAST,
                            ),
                            rc => rc,
                        }
                    }
                    Bound::Unbounded => {
                        sys::mdb_cursor_get(cur, &mut k, &mut v, sys::MDB_cursor_op_MDB_LAST)
                    }
                },
            };
            let next = match order {
                Order::Forward => sys::MDB_cursor_op_MDB_NEXT,
                Order::Reverse => sys::MDB_cursor_op_MDB_PREV,
            };
            let result = loop {
                if rc == sys::MDB_NOTFOUND || n >= limit {
                    break Ok(n);
                }
                if rc != 0 {
                    break check(rc, "cursor_get").map(|_| n);
                }
                let kb = bytes(&k);
                let (inside, skip) = match order {
                    Order::Forward => (range.below_end(kb), !range.above_start(kb)),
                    Order::Reverse => (range.above_start(kb), !range.below_end(kb)),
                };
                if !inside {
                    break Ok(n);
                }
                if !skip {
                    visit(kb, bytes(&v));
                    n += 1;
                }
                rc = sys::mdb_cursor_get(cur, &mut k, &mut v, next);
            };
            sys::mdb_cursor_close(cur);
            sys::mdb_txn_abort(txn);
            result
        }
    }

    fn stats(&self) -> Result<EngineStats> {
        let mut st = EngineStats::default();
        // SAFETY: plain reads of environment and database statistics.
        unsafe {
            let mut info: sys::MDB_envinfo = std::mem::zeroed();
            check(sys::mdb_env_info(self.env, &mut info), "env_info")?;
            st.values
                .push(("env.map_size".into(), info.me_mapsize as f64));
            st.values
                .push(("env.last_pgno".into(), info.me_last_pgno as f64));
            st.values
                .push(("env.last_txnid".into(), info.me_last_txnid as f64));
            st.values
                .push(("env.num_readers".into(), info.me_numreaders as f64));
            let mut es: sys::MDB_stat = std::mem::zeroed();
            check(sys::mdb_env_stat(self.env, &mut es), "env_stat")?;
            st.values.push(("env.page_size".into(), es.ms_psize as f64));
            let txn = self.read_txn()?;
            for (dbi, name) in self.dbis.iter().zip(&self.names) {
                let mut s: sys::MDB_stat = std::mem::zeroed();
                if sys::mdb_stat(txn, *dbi, &mut s) == 0 {
                    for (k, v) in [
                        ("depth", s.ms_depth as f64),
                        ("branch_pages", s.ms_branch_pages as f64),
                        ("leaf_pages", s.ms_leaf_pages as f64),
                        ("overflow_pages", s.ms_overflow_pages as f64),
                        ("entries", s.ms_entries as f64),
                    ] {
                        st.values.push((format!("{name}.{k}"), v));
                    }
                }
            }
            sys::mdb_txn_abort(txn);
        }
        Ok(st)
    }

    fn settle(&self) -> Result<String> {
        // SAFETY: the environment is open.
        check(unsafe { sys::mdb_env_sync(self.env, 1) }, "env_sync")?;
        Ok("mdb_env_sync: dirty pages written and synced (LMDB has no background work)".into())
    }

    fn close(self: Box<Self>) -> Result<()> {
        drop(self);
        Ok(())
    }
}

impl Drop for Lmdb {
    fn drop(&mut self) {
        // SAFETY: closes the environment once; no transaction is open (every
        // call ends its own). A final sync makes no-sync commits durable.
        unsafe {
            sys::mdb_env_sync(self.env, 1);
            sys::mdb_env_close(self.env);
        }
    }
}
