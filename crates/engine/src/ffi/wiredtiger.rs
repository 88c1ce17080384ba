//! WiredTiger's C API (Debian's libwiredtiger 3.2.1) behind owning types.
//!
//! A [`Connection`] is closed on drop; a [`Session`] (single-threaded, as
//! WiredTiger requires) owns one lazily opened cursor per table and is
//! closed on drop, which closes its cursors. A scan borrows a table's
//! cursor as a [`ScanCursor`] that resets it on drop. `WT_ROLLBACK` (a
//! write conflict) comes back as [`Conflict`].

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_void};
use std::marker::PhantomData;
use std::os::raw::{c_char, c_int};
use std::path::Path;
use std::ptr;

use anyhow::{Result, anyhow};

use super::{bytes, c_path, c_str};
use crate::Conflict;
use crate::scan::Cursor;

super::bindings!("wiredtiger_sys.rs");

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

/// The error for return code `rc` of `what`, with WiredTiger's message.
fn err(rc: c_int, what: &str) -> anyhow::Error {
    let detail = LAST_ERROR.with(|e| std::mem::take(&mut *e.borrow_mut()));
    // SAFETY: wiredtiger_strerror returns a static string.
    let text = unsafe { CStr::from_ptr(sys::wiredtiger_strerror(rc)) }.to_string_lossy();
    let msg = if detail.is_empty() {
        format!("wiredtiger {what}: {text}")
    } else {
        format!("wiredtiger {what}: {text}: {detail}")
    };
    if rc == sys::WT_ROLLBACK {
        Conflict(msg).into()
    } else {
        anyhow!(msg)
    }
}

fn ok(rc: c_int, what: &str) -> Result<()> {
    if rc == 0 { Ok(()) } else { Err(err(rc, what)) }
}

/// Checks a configuration string with WiredTiger's own validator, for
/// `method` (`wiredtiger_open` or `WT_SESSION.create`).
pub fn validate(method: &str, config: &str) -> Result<()> {
    let m = c_str(method, "method")?;
    let c = c_str(config, "option")?;
    // SAFETY: both strings live across the call; a null session is allowed.
    let rc = unsafe {
        sys::wiredtiger_config_validate(ptr::null_mut(), handler(), m.as_ptr(), c.as_ptr())
    };
    ok(rc, "option")
}

/// The library's version string (`WiredTiger 3.2.1: (August 27, 2019)`).
pub fn version() -> String {
    let (mut a, mut b, mut c) = (0, 0, 0);
    // SAFETY: returns a static string.
    let s = unsafe { CStr::from_ptr(sys::wiredtiger_version(&mut a, &mut b, &mut c)) };
    s.to_string_lossy().into_owned()
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

/// A connection, closed on drop (which closes its sessions).
pub struct Connection(*mut sys::WT_CONNECTION);

// SAFETY: a WT_CONNECTION is thread-safe.
unsafe impl Send for Connection {}
// SAFETY: see `Send` above.
unsafe impl Sync for Connection {}

impl Connection {
    /// Opens (creating as the config says) the database in `home`.
    pub fn open(home: &Path, config: &str) -> Result<Connection> {
        let h = c_path(home)?;
        let cfg = c_str(config, "config")?;
        let mut conn: *mut sys::WT_CONNECTION = ptr::null_mut();
        // SAFETY: strings live across the call; conn is written on success.
        let rc = unsafe { sys::wiredtiger_open(h.as_ptr(), handler(), cfg.as_ptr(), &mut conn) };
        ok(rc, &format!("open {} with '{config}'", home.display()))?;
        Ok(Connection(conn))
    }

    /// A new session whose table `i` is `uris[i]`.
    pub fn session<'c>(&'c self, uris: &'c [CString]) -> Result<Session<'c>> {
        let mut s: *mut sys::WT_SESSION = ptr::null_mut();
        // SAFETY: the connection is open; `s` is written on success.
        let rc = unsafe { wt!(self.0, open_session, handler(), ptr::null(), &mut s) };
        ok(rc, "open_session")?;
        Ok(Session {
            s,
            uris,
            cursors: vec![ptr::null_mut(); uris.len()],
            _c: PhantomData,
        })
    }

    /// Closes the connection, reporting an error (drop ignores it).
    pub fn close(self) -> Result<()> {
        let c = self.0;
        std::mem::forget(self);
        // SAFETY: closes the connection once; sessions borrow it, so none
        // is alive here.
        ok(unsafe { wt!(c, close, ptr::null()) }, "close")
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // SAFETY: as in `close`.
        unsafe { wt!(self.0, close, ptr::null()) };
    }
}

/// A session with one lazily opened cursor per table; closed on drop.
pub struct Session<'c> {
    s: *mut sys::WT_SESSION,
    uris: &'c [CString],
    cursors: Vec<*mut sys::WT_CURSOR>,
    _c: PhantomData<&'c Connection>,
}

// SAFETY: a WT_SESSION and its cursors may be used by one thread at a time,
// from any thread; `Session` is not `Sync`.
unsafe impl Send for Session<'_> {}

impl Session<'_> {
    /// Creates a table (or anything `uri` names) with `config`.
    pub fn create(&mut self, uri: &CStr, config: &str) -> Result<()> {
        let c = c_str(config, "config")?;
        // SAFETY: the session is ours; strings live across the call.
        let rc = unsafe { wt!(self.s, create, uri.as_ptr(), c.as_ptr()) };
        ok(rc, &format!("create {uri:?} with '{config}'"))
    }

    fn cursor(&mut self, t: usize) -> Result<*mut sys::WT_CURSOR> {
        let uri = self
            .uris
            .get(t)
            .ok_or_else(|| anyhow!("table #{t} was not opened with this engine"))?;
        let slot = &mut self.cursors[t];
        if slot.is_null() {
            let mut c: *mut sys::WT_CURSOR = ptr::null_mut();
            // SAFETY: the session is ours; the URI outlives the call.
            let rc = unsafe {
                wt!(
                    self.s,
                    open_cursor,
                    uri.as_ptr(),
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

    /// Looks a key up and hands its value to `f` (before the cursor
    /// resets); `None` when missing.
    pub fn search<R>(
        &mut self,
        t: usize,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        let c = self.cursor(t)?;
        let k = item(key);
        // SAFETY: the key item points at `key` during the search; the value
        // is used before the reset releases it.
        unsafe {
            wt!(c, set_key, &k as *const sys::WT_ITEM);
            let out = match wt!(c, search) {
                0 => {
                    let mut v = item(&[]);
                    let rc = wt!(c, get_value, &mut v as *mut sys::WT_ITEM);
                    if rc != 0 {
                        wt!(c, reset);
                        return Err(err(rc, "get_value"));
                    }
                    Some(f(bytes(v.data, v.size)))
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
    }

    /// Inserts or overwrites a key.
    pub fn insert(&mut self, t: usize, key: &[u8], value: &[u8]) -> Result<()> {
        let c = self.cursor(t)?;
        let (k, v) = (item(key), item(value));
        // SAFETY: the items point at live slices; WiredTiger copies them.
        let rc = unsafe {
            wt!(c, set_key, &k as *const sys::WT_ITEM);
            wt!(c, set_value, &v as *const sys::WT_ITEM);
            let rc = wt!(c, insert);
            wt!(c, reset);
            rc
        };
        ok(rc, "insert")
    }

    /// Removes a key; a missing key is not an error.
    pub fn remove(&mut self, t: usize, key: &[u8]) -> Result<()> {
        let c = self.cursor(t)?;
        let k = item(key);
        // SAFETY: as in `insert`.
        let rc = unsafe {
            wt!(c, set_key, &k as *const sys::WT_ITEM);
            let rc = wt!(c, remove);
            wt!(c, reset);
            rc
        };
        if rc == sys::WT_NOTFOUND {
            return Ok(());
        }
        ok(rc, "remove")
    }

    /// Table `t`'s cursor for a scan; reset when the scan drops it.
    pub fn scan_cursor(&mut self, t: usize) -> Result<ScanCursor<'_>> {
        let c = self.cursor(t)?;
        Ok(ScanCursor {
            c,
            key: item(&[]),
            value: item(&[]),
            positioned: false,
            _s: PhantomData,
        })
    }

    /// Begins a transaction with `config` (e.g. `isolation=snapshot`).
    pub fn begin(&mut self, config: &CStr) -> Result<()> {
        // SAFETY: the session is ours; the config lives across the call.
        ok(
            unsafe { wt!(self.s, begin_transaction, config.as_ptr()) },
            "begin_transaction",
        )
    }

    /// Commits with `config` (e.g. `sync=on`).
    pub fn commit(&mut self, config: &CStr) -> Result<()> {
        // SAFETY: as in `begin`.
        ok(
            unsafe { wt!(self.s, commit_transaction, config.as_ptr()) },
            "commit_transaction",
        )
    }

    /// Rolls back the open transaction.
    pub fn rollback(&mut self) -> Result<()> {
        // SAFETY: as in `begin`.
        ok(
            unsafe { wt!(self.s, rollback_transaction, ptr::null()) },
            "rollback_transaction",
        )
    }

    /// Writes a checkpoint.
    pub fn checkpoint(&mut self) -> Result<()> {
        // SAFETY: the session is ours.
        ok(
            unsafe { wt!(self.s, checkpoint, ptr::null()) },
            "checkpoint",
        )
    }

    /// Every connection statistic: (description, value).
    pub fn statistics(&mut self) -> Result<Vec<(String, i64)>> {
        let mut c: *mut sys::WT_CURSOR = ptr::null_mut();
        let mut out = Vec::new();
        // SAFETY: the statistics cursor's values are (description,
        // printable value, int64), read before the cursor moves; it is
        // closed here.
        unsafe {
            ok(
                wt!(
                    self.s,
                    open_cursor,
                    c"statistics:".as_ptr(),
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
                    out.push((CStr::from_ptr(desc).to_string_lossy().into_owned(), v));
                }
            }
            wt!(c, close);
        }
        Ok(out)
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        // SAFETY: closes the session once, with its cursors.
        unsafe { wt!(self.s, close, ptr::null()) };
    }
}

/// A table's cursor during a scan; reset (position released) on drop.
pub struct ScanCursor<'s> {
    c: *mut sys::WT_CURSOR,
    key: sys::WT_ITEM,
    value: sys::WT_ITEM,
    /// On an entry: `key` and `value` hold it. After a move that found
    /// nothing they may point at memory WiredTiger released, and are not
    /// read.
    positioned: bool,
    _s: PhantomData<&'s mut ()>,
}

impl ScanCursor<'_> {
    /// After a move: reads the entry the cursor is on.
    fn landed(&mut self, rc: c_int) -> Result<bool> {
        self.positioned = false;
        match rc {
            0 => {
                // SAFETY: the cursor is positioned; the items stay valid
                // until it moves, which needs `&mut self`.
                let (rk, rv) = unsafe {
                    (
                        wt!(self.c, get_key, &mut self.key as *mut sys::WT_ITEM),
                        wt!(self.c, get_value, &mut self.value as *mut sys::WT_ITEM),
                    )
                };
                ok(if rk != 0 { rk } else { rv }, "scan read")?;
                self.positioned = true;
                Ok(true)
            }
            sys::WT_NOTFOUND => Ok(false),
            rc => Err(err(rc, "scan")),
        }
    }

    /// Positions near `key`: returns the move's code and where it landed
    /// (<0 before, 0 on, >0 after the key).
    fn near(&mut self, key: &[u8]) -> (c_int, c_int) {
        let k = item(key);
        let mut exact: c_int = 0;
        // SAFETY: the key item points at `key` during the search.
        let rc = unsafe {
            wt!(self.c, set_key, &k as *const sys::WT_ITEM);
            wt!(self.c, search_near, &mut exact)
        };
        (rc, exact)
    }
}

impl Cursor for ScanCursor<'_> {
    fn seek_ge(&mut self, key: &[u8]) -> Result<bool> {
        match self.near(key) {
            (0, exact) if exact < 0 => self.next(),
            (rc, _) => self.landed(rc),
        }
    }
    fn seek_le(&mut self, key: &[u8]) -> Result<bool> {
        match self.near(key) {
            (0, exact) if exact > 0 => self.prev(),
            (rc, _) => self.landed(rc),
        }
    }
    fn first(&mut self) -> Result<bool> {
        // SAFETY: a reset cursor's next is the first entry.
        let rc = unsafe {
            wt!(self.c, reset);
            wt!(self.c, next)
        };
        self.landed(rc)
    }
    fn last(&mut self) -> Result<bool> {
        // SAFETY: a reset cursor's prev is the last entry.
        let rc = unsafe {
            wt!(self.c, reset);
            wt!(self.c, prev)
        };
        self.landed(rc)
    }
    fn next(&mut self) -> Result<bool> {
        // SAFETY: the cursor is ours.
        let rc = unsafe { wt!(self.c, next) };
        self.landed(rc)
    }
    fn prev(&mut self) -> Result<bool> {
        // SAFETY: the cursor is ours.
        let rc = unsafe { wt!(self.c, prev) };
        self.landed(rc)
    }
    fn key(&self) -> &[u8] {
        if !self.positioned {
            return &[];
        }
        // SAFETY: filled by `landed` while positioned.
        unsafe { bytes(self.key.data, self.key.size) }
    }
    fn value(&self) -> &[u8] {
        if !self.positioned {
            return &[];
        }
        // SAFETY: as in `key`.
        unsafe { bytes(self.value.data, self.value.size) }
    }
}

impl Drop for ScanCursor<'_> {
    fn drop(&mut self) {
        // SAFETY: releases the cursor's position (and its snapshot).
        unsafe { wt!(self.c, reset) };
    }
}

/// The library file loaded and how the build chose it (see
/// [`super::library_file`]).
pub fn library_file() -> Option<String> {
    super::library_file(
        sys::wiredtiger_open as *const std::ffi::c_void,
        "WIREDTIGER_LIB_DIR",
        env!("AMPBENCH_WIREDTIGER_LIB_DIR"),
    )
}
