//! WiredTiger through its C API (Debian's libwiredtiger 3.2.1, bindings
//! generated from `wiredtiger.h` by build.rs).
//!
//! Tables are `table:NAME` with raw byte keys and values (`u`/`u`). A
//! WT_SESSION is single-threaded, so the adapter keeps a pool of sessions,
//! each with its cursors; a call takes one from the pool and puts it back.
//! A write that conflicts with a concurrent one (`WT_ROLLBACK`) is retried.
//!
//! Defaults (like MongoDB's): `cache_size=<cache>`, `log=(enabled=true)`,
//! `checkpoint=(wait=60)`, `statistics=(fast)`, snappy block compression
//! when Debian's snappy extension is present. `--set wiredtiger.KEY=VALUE`
//! adds to the `wiredtiger_open` config; `table.KEY` keys go to the
//! table's create config. WiredTiger itself validates both.
//! A sync write commits with `sync=on`; a no-sync one leaves the log in
//! WiredTiger's buffer (`transaction_sync` is off).

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_void};
use std::ops::Bound;
use std::os::raw::{c_char, c_int};
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::Mutex;

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
    include!(concat!(env!("OUT_DIR"), "/wiredtiger_sys.rs"));
}

/// Calls a WiredTiger method, a function pointer in the object's struct.
/// WiredTiger fills in every method of its handles, so the pointer is
/// always set (the `expect` states an invariant of the library).
macro_rules! wt {
    ($obj:expr, $method:ident $(, $arg:expr)*) => {
        ((*$obj).$method.expect(concat!("WiredTiger sets ", stringify!($method))))($obj $(, $arg)*)
    };
}

thread_local! {
    /// The last error message WiredTiger reported on this thread.
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

unsafe extern "C" fn on_error(
    _h: *mut sys::WT_EVENT_HANDLER,
    _s: *mut sys::WT_SESSION,
    _error: c_int,
    message: *const c_char,
) -> c_int {
    // SAFETY: WiredTiger passes a NUL-terminated message valid for the call.
    let m = unsafe { CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned();
    LAST_ERROR.with(|e| *e.borrow_mut() = m);
    0
}

unsafe extern "C" fn on_message(
    _h: *mut sys::WT_EVENT_HANDLER,
    _s: *mut sys::WT_SESSION,
    _message: *const c_char,
) -> c_int {
    0
}

unsafe extern "C" fn on_progress(
    _h: *mut sys::WT_EVENT_HANDLER,
    _s: *mut sys::WT_SESSION,
    _op: *const c_char,
    _progress: u64,
) -> c_int {
    0
}

unsafe extern "C" fn on_close(
    _h: *mut sys::WT_EVENT_HANDLER,
    _s: *mut sys::WT_SESSION,
    _c: *mut sys::WT_CURSOR,
) -> c_int {
    0
}

/// Keeps WiredTiger's messages off the terminal: errors are returned with
/// their text instead. WiredTiger may write into the handler (it fills in
/// missing callbacks), so it lives in leaked heap memory, made once and
/// shared by every connection; it holds only function pointers.
fn handler() -> *mut sys::WT_EVENT_HANDLER {
    static HANDLER: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *HANDLER.get_or_init(|| {
        Box::leak(Box::new(sys::WT_EVENT_HANDLER {
            handle_error: Some(on_error),
            handle_message: Some(on_message),
            handle_progress: Some(on_progress),
            handle_close: Some(on_close),
        })) as *mut sys::WT_EVENT_HANDLER as usize
    }) as *mut sys::WT_EVENT_HANDLER
}

fn err(rc: c_int, what: &str) -> anyhow::Error {
    let detail = LAST_ERROR.with(|e| std::mem::take(&mut *e.borrow_mut()));
    // SAFETY: wiredtiger_strerror returns a static string.
    let text = unsafe { CStr::from_ptr(sys::wiredtiger_strerror(rc)) }.to_string_lossy();
    if detail.is_empty() {
        anyhow!("wiredtiger {what}: {text}")
    } else {
        anyhow!("wiredtiger {what}: {text}: {detail}")
    }
}

fn ok(rc: c_int, what: &str) -> Result<()> {
    if rc == 0 { Ok(()) } else { Err(err(rc, what)) }
}

/// Where Debian puts the snappy compressor extension, if installed.
fn snappy_extension() -> Option<&'static str> {
    [
        "/usr/lib/x86_64-linux-gnu/libwiredtiger_snappy.so",
        "/usr/lib/aarch64-linux-gnu/libwiredtiger_snappy.so",
        "/usr/lib/libwiredtiger_snappy.so",
    ]
    .into_iter()
    .find(|p| Path::new(p).exists())
}

/// The default settings for a cache size (see the module doc).
pub fn default_settings(cache_bytes: u64) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = vec![
        (
            "cache_size".into(),
            super::options::format_size(cache_bytes.max(1 << 20)),
        ),
        ("log".into(), "(enabled=true)".into()),
        ("checkpoint".into(), "(wait=60)".into()),
        ("statistics".into(), "(fast)".into()),
        ("session_max".into(), "256".into()),
    ];
    if let Some(p) = snappy_extension() {
        v.push(("extensions".into(), format!("[{p}]")));
        v.push(("table.block_compressor".into(), "snappy".into()));
    }
    v
}

fn split_configs(settings: &[(String, String)]) -> (String, String) {
    let mut open = vec!["create".to_string()];
    let mut table = vec!["key_format=u".to_string(), "value_format=u".to_string()];
    for (k, v) in settings {
        match k.strip_prefix("table.") {
            Some(t) => table.push(format!("{t}={v}")),
            None => open.push(format!("{k}={v}")),
        }
    }
    (open.join(","), table.join(","))
}

/// Checks `--set wiredtiger.*` options with WiredTiger's own validator.
pub fn validate(options: &EngineOptions) -> Result<()> {
    for (k, v) in &options.pairs {
        let (method, cfg) = match k.strip_prefix("table.") {
            Some(t) => ("WT_SESSION.create", format!("{t}={v}")),
            None => ("wiredtiger_open", format!("{k}={v}")),
        };
        let m = CString::new(method).context("method name")?;
        let c = CString::new(cfg).context("option contains a NUL byte")?;
        // SAFETY: both strings live across the call; a null session is allowed.
        let rc = unsafe {
            sys::wiredtiger_config_validate(ptr::null_mut(), handler(), m.as_ptr(), c.as_ptr())
        };
        if rc != 0 {
            let e = err(rc, "option");
            return Err(UsageError(format!("invalid option 'wiredtiger.{k}={v}': {e}")).into());
        }
    }
    Ok(())
}

/// The library's version string (`WiredTiger 3.2.1: (August 27, 2019)`).
pub fn library_version() -> String {
    let (mut a, mut b, mut c) = (0, 0, 0);
    // SAFETY: returns a static string.
    let s = unsafe { CStr::from_ptr(sys::wiredtiger_version(&mut a, &mut b, &mut c)) };
    s.to_string_lossy().into_owned()
}

/// A session with one lazily opened cursor per table.
struct Session {
    s: *mut sys::WT_SESSION,
    cursors: Vec<*mut sys::WT_CURSOR>,
}

/// A WiredTiger connection with a pool of sessions.
pub struct WiredTiger {
    conn: *mut sys::WT_CONNECTION,
    uris: Vec<CString>,
    pool: Mutex<Vec<Session>>,
    dir: PathBuf,
    settings: Vec<(String, String)>,
}

// SAFETY: WT_CONNECTION is thread-safe; each WT_SESSION (and its cursors) is
// used by one thread at a time, guaranteed by taking it out of the pool.
unsafe impl Send for WiredTiger {}
// SAFETY: see `Send` above.
unsafe impl Sync for WiredTiger {}

impl WiredTiger {
    /// Opens (creating if needed) a connection and its tables.
    pub fn open(spec: &OpenSpec) -> Result<WiredTiger> {
        validate(&spec.options)?;
        let settings = spec
            .options
            .merged_over(&default_settings(spec.cache_bytes));
        let (open_cfg, table_cfg) = split_configs(&settings);
        let home = CString::new(spec.dir.to_string_lossy().as_bytes()).context("path")?;
        let cfg = CString::new(open_cfg.clone()).context("config")?;
        let mut conn: *mut sys::WT_CONNECTION = ptr::null_mut();
        // SAFETY: strings live across the call; conn is written on success.
        let rc = unsafe { sys::wiredtiger_open(home.as_ptr(), handler(), cfg.as_ptr(), &mut conn) };
        ok(
            rc,
            &format!("open {} with '{open_cfg}'", spec.dir.display()),
        )?;
        let mut uris = Vec::new();
        for t in &spec.tables {
            super::check_table_name(t)?;
            uris.push(CString::new(format!("table:{t}")).context("uri")?);
        }
        let wt = WiredTiger {
            conn,
            uris,
            pool: Mutex::new(Vec::new()),
            dir: spec.dir.clone(),
            settings,
        };
        let tcfg = CString::new(table_cfg.clone()).context("config")?;
        let s = wt.take()?;
        for uri in &wt.uris {
            // SAFETY: the session is ours; strings live across the call.
            let rc = unsafe { wt!(s.s, create, uri.as_ptr(), tcfg.as_ptr()) };
            if rc != 0 {
                let e = err(rc, &format!("create {uri:?} with '{table_cfg}'"));
                wt.give(s);
                return Err(e);
            }
        }
        wt.give(s);
        Ok(wt)
    }

    fn take(&self) -> Result<Session> {
        if let Some(s) = self
            .pool
            .lock()
            .map_err(|_| anyhow!("session pool poisoned"))?
            .pop()
        {
            return Ok(s);
        }
        let mut s: *mut sys::WT_SESSION = ptr::null_mut();
        // SAFETY: the connection is open; `s` is written on success.
        let rc = unsafe { wt!(self.conn, open_session, handler(), ptr::null(), &mut s) };
        ok(rc, "open_session")?;
        Ok(Session {
            s,
            cursors: vec![ptr::null_mut(); self.uris.len()],
        })
    }

    fn give(&self, s: Session) {
        if let Ok(mut p) = self.pool.lock() {
            p.push(s);
        }
    }

    fn cursor(&self, s: &mut Session, t: Table) -> Result<*mut sys::WT_CURSOR> {
        let slot = s.cursors.get_mut(t.0).ok_or_else(|| super::no_table(t))?;
        if slot.is_null() {
            let mut c: *mut sys::WT_CURSOR = ptr::null_mut();
            // SAFETY: the session is ours; the URI lives in self.
            let rc = unsafe {
                wt!(
                    s.s,
                    open_cursor,
                    self.uris[t.0].as_ptr(),
                    ptr::null_mut(),
                    ptr::null(),
                    &mut c
                )
            };
            ok(rc, "open_cursor")?;
            *slot = c;
        }
        Ok(*slot)
    }

    /// Runs `f` with a pooled session, returning the session afterwards.
    fn with<R>(&self, f: impl FnOnce(&Self, &mut Session) -> Result<R>) -> Result<R> {
        let mut s = self.take()?;
        let r = f(self, &mut s);
        self.give(s);
        r
    }

    /// Applies `ops` in one transaction, retrying on write conflicts.
    fn transact(&self, s: &mut Session, ops: &[BatchOp], d: Durability) -> Result<()> {
        let commit = CString::new(match d {
            Durability::Sync => "sync=on",
            Durability::NoSync => "",
        })
        .context("config")?;
        loop {
            // SAFETY: the session is ours for the duration of the call.
            unsafe {
                ok(
                    wt!(s.s, begin_transaction, ptr::null()),
                    "begin_transaction",
                )?
            };
            let mut rc = 0;
            for op in ops {
                let (table, key, value) = match op {
                    BatchOp::Put { table, key, value } => (*table, key, Some(value)),
                    BatchOp::Delete { table, key } => (*table, key, None),
                };
                let c = match self.cursor(s, table) {
                    Ok(c) => c,
                    Err(e) => {
                        // SAFETY: rolls back the transaction begun above.
                        unsafe { wt!(s.s, rollback_transaction, ptr::null()) };
                        return Err(e);
                    }
                };
                let k = item(key);
                // SAFETY: the items point at live slices until the call returns;
                // WiredTiger copies them on insert/remove.
                rc = unsafe {
                    wt!(c, set_key, &k as *const sys::WT_ITEM);
                    match value {
                        Some(v) => {
                            let vi = item(v);
                            wt!(c, set_value, &vi as *const sys::WT_ITEM);
                            wt!(c, insert)
                        }
                        None => match wt!(c, remove) {
                            sys::WT_NOTFOUND => 0,
                            other => other,
                        },
                    }
                };
                // SAFETY: releases the cursor's position.
                unsafe { wt!(c, reset) };
                if rc != 0 {
                    break;
                }
            }
            if rc == 0 {
                // SAFETY: commits the transaction begun above.
                rc = unsafe { wt!(s.s, commit_transaction, commit.as_ptr()) };
                if rc == 0 {
                    return Ok(());
                }
                if rc != sys::WT_ROLLBACK {
                    return Err(err(rc, "commit_transaction"));
                }
                continue;
            }
            // SAFETY: rolls back the transaction begun above.
            unsafe { wt!(s.s, rollback_transaction, ptr::null()) };
            if rc != sys::WT_ROLLBACK {
                return Err(err(rc, "write"));
            }
            std::thread::yield_now();
        }
    }
}

fn item(b: &[u8]) -> sys::WT_ITEM {
    sys::WT_ITEM {
        data: b.as_ptr() as *const c_void,
        size: b.len(),
        mem: ptr::null_mut(),
        memsize: 0,
        flags: 0,
    }
}

fn empty_item() -> sys::WT_ITEM {
    item(&[])
}

/// # Safety
/// `it` must have been filled by WiredTiger and be used before the cursor moves.
unsafe fn bytes<'a>(it: &sys::WT_ITEM) -> &'a [u8] {
    if it.size == 0 {
        &[]
    } else {
        // SAFETY: per the function contract.
        unsafe { std::slice::from_raw_parts(it.data as *const u8, it.size) }
    }
}

impl KvEngine for WiredTiger {
    fn kind(&self) -> EngineKind {
        EngineKind::Wiredtiger
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
        self.with(|me, s| {
            let c = me.cursor(s, table)?;
            let k = item(key);
            // SAFETY: the key item points at `key` during search; the value
            // is copied before reset.
            unsafe {
                wt!(c, set_key, &k as *const sys::WT_ITEM);
                let rc = wt!(c, search);
                let out = match rc {
                    0 => {
                        let mut v = empty_item();
                        let rc = wt!(c, get_value, &mut v as *mut sys::WT_ITEM);
                        if rc != 0 {
                            wt!(c, reset);
                            return Err(err(rc, "get_value"));
                        }
                        Some(bytes(&v).to_vec())
                    }
                    sys::WT_NOTFOUND => None,
                    rc => {
                        wt!(c, reset);
                        return Err(err(rc, "search"));
                    }
                };
                wt!(c, reset);
                Ok(out)
            }
        })
    }

    fn write(&self, batch: &WriteBatch, d: Durability) -> Result<()> {
        self.with(|me, s| me.transact(s, &batch.ops, d))
    }

    fn scan(
        &self,
        table: Table,
        range: KeyRange<'_>,
        order: Order,
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        self.with(|me, s| {
            let c = me.cursor(s, table)?;
            let mut n = 0;
            // SAFETY: key/value items are read and used before the cursor
            // moves; the cursor is reset before returning.
            let r = unsafe {
                let step = |c: *mut sys::WT_CURSOR| match order {
                    Order::Forward => wt!(c, next),
                    Order::Reverse => wt!(c, prev),
                };
                let seek = match (order, range.start, range.end) {
                    (Order::Forward, Bound::Included(b) | Bound::Excluded(b), _)
                    | (Order::Reverse, _, Bound::Included(b) | Bound::Excluded(b)) => Some(b),
                    _ => None,
                };
                let mut rc = match seek {
                    None => step(c),
                    Some(b) => {
                        let k = item(b);
                        wt!(c, set_key, &k as *const sys::WT_ITEM);
                        let mut exact: c_int = 0;
                        let rc = wt!(c, search_near, &mut exact);
                        // search_near lands on a neighbour: move to the first
                        // key on the scan's side of the bound.
                        if rc == 0
                            && ((order == Order::Forward && exact < 0)
                                || (order == Order::Reverse && exact > 0))
                        {
                            step(c)
                        } else {
                            rc
                        }
                    }
                };
                loop {
                    if rc == sys::WT_NOTFOUND || n >= limit {
                        break Ok(n);
                    }
                    if rc != 0 {
                        break Err(err(rc, "scan"));
                    }
                    let mut k = empty_item();
                    let mut v = empty_item();
                    let rk = wt!(c, get_key, &mut k as *mut sys::WT_ITEM);
                    let rv = wt!(c, get_value, &mut v as *mut sys::WT_ITEM);
                    if rk != 0 || rv != 0 {
                        break Err(err(if rk != 0 { rk } else { rv }, "scan read"));
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
                    rc = step(c);
                }
            };
            // SAFETY: releases the cursor's position.
            unsafe { wt!(c, reset) };
            r
        })
    }

    fn stats(&self) -> Result<EngineStats> {
        self.with(|_, s| {
            let uri = CString::new("statistics:").context("uri")?;
            let mut c: *mut sys::WT_CURSOR = ptr::null_mut();
            let mut st = EngineStats::default();
            // SAFETY: the statistics cursor's values are (description,
            // printable value, int64), read before the cursor moves.
            unsafe {
                ok(
                    wt!(
                        s.s,
                        open_cursor,
                        uri.as_ptr(),
                        ptr::null_mut(),
                        ptr::null(),
                        &mut c
                    ),
                    "open statistics cursor",
                )?;
                while wt!(c, next) == 0 {
                    let mut desc: *const c_char = ptr::null();
                    let mut pv: *const c_char = ptr::null();
                    let mut v: i64 = 0;
                    if wt!(c, get_value, &mut desc, &mut pv, &mut v) == 0 && !desc.is_null() {
                        let d = CStr::from_ptr(desc).to_string_lossy().into_owned();
                        st.values.push((d, v as f64));
                    }
                }
                wt!(c, close);
            }
            Ok(st)
        })
    }

    fn settle(&self) -> Result<String> {
        let t = std::time::Instant::now();
        self.with(|_, s| {
            // SAFETY: the session is ours.
            unsafe { ok(wt!(s.s, checkpoint, ptr::null()), "checkpoint") }
        })?;
        Ok(format!("checkpoint: {:.1}s", t.elapsed().as_secs_f64()))
    }

    fn close(mut self: Box<Self>) -> Result<()> {
        // Sessions and cursors are closed by the connection.
        if let Ok(mut p) = self.pool.lock() {
            p.clear();
        }
        let conn = std::mem::replace(&mut self.conn, ptr::null_mut());
        // SAFETY: closes the connection once; every session and cursor of
        // it is closed with it and never used again.
        let rc = unsafe { wt!(conn, close, ptr::null()) };
        ok(rc, "close")
    }
}

impl Drop for WiredTiger {
    fn drop(&mut self) {
        // Dropped without close (an error path): still close the connection.
        if !self.conn.is_null() {
            // SAFETY: as in `close`.
            unsafe { wt!(self.conn, close, ptr::null()) };
        }
    }
}
