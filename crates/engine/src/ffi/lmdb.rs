//! LMDB's C API (Debian's liblmdb 0.9.24) behind owning types.
//!
//! An [`Env`] is synced and closed on drop; transactions abort on drop
//! unless committed; a read transaction can be reset and renewed (no
//! allocation per read); cursors close on drop.

use std::ffi::{CStr, c_void};
use std::marker::PhantomData;
use std::os::raw::{c_int, c_uint};
use std::path::Path;
use std::ptr;

use anyhow::{Result, anyhow};

use super::{bytes, c_path, c_str};
use crate::scan::Cursor;

super::bindings!("lmdb_sys.rs");

fn check(rc: c_int, what: &str) -> Result<()> {
    if rc == 0 {
        return Ok(());
    }
    // SAFETY: mdb_strerror returns a static string.
    let m = unsafe { CStr::from_ptr(sys::mdb_strerror(rc)) }.to_string_lossy();
    Err(anyhow!("lmdb {what}: {m}"))
}

fn val(b: &[u8]) -> sys::MDB_val {
    sys::MDB_val {
        mv_size: b.len(),
        mv_data: b.as_ptr() as *mut c_void,
    }
}

/// The library's version string (`LMDB 0.9.24: (July 24, 2019)`).
pub fn version() -> String {
    let (mut a, mut b, mut c) = (0, 0, 0);
    // SAFETY: returns a static string.
    let s = unsafe { CStr::from_ptr(sys::mdb_version(&mut a, &mut b, &mut c)) };
    s.to_string_lossy().into_owned()
}

/// How to open an environment.
#[derive(Clone, Copy, Debug)]
pub struct EnvConfig {
    /// Address space reserved for the map, bytes.
    pub map_size: u64,
    /// Reader slots.
    pub max_readers: u32,
    /// Named databases.
    pub max_dbs: u32,
    /// `MDB_WRITEMAP`.
    pub writemap: bool,
    /// `MDB_NORDAHEAD`.
    pub nordahead: bool,
}

/// A named database in an environment.
#[derive(Clone, Copy, Debug)]
pub struct Dbi(sys::MDB_dbi);

/// Figures of an environment.
#[derive(Clone, Copy, Debug)]
pub struct EnvInfo {
    /// Map size, bytes.
    pub map_size: u64,
    /// Last page number used.
    pub last_pgno: u64,
    /// Last committed transaction id.
    pub last_txnid: u64,
    /// Reader slots in use.
    pub num_readers: u32,
    /// Page size, bytes.
    pub page_size: u32,
}

/// Figures of one named database.
#[derive(Clone, Copy, Debug)]
pub struct DbStat {
    /// B-Tree depth.
    pub depth: u32,
    /// Branch pages.
    pub branch_pages: u64,
    /// Leaf pages.
    pub leaf_pages: u64,
    /// Overflow pages.
    pub overflow_pages: u64,
    /// Entries.
    pub entries: u64,
}

/// An environment opened with `MDB_NOSYNC` (a commit leaves pages to the
/// OS; [`Env::sync`] makes them durable) and `MDB_NOTLS` (read
/// transactions are not tied to threads).
pub struct Env(*mut sys::MDB_env);

// SAFETY: an MDB_env is thread-safe; with MDB_NOTLS read transactions are
// not bound to threads.
unsafe impl Send for Env {}
// SAFETY: see `Send` above.
unsafe impl Sync for Env {}

impl Env {
    /// Opens (creating if needed) the environment in directory `path`.
    pub fn open(path: &Path, cfg: EnvConfig) -> Result<Env> {
        let p = c_path(path)?;
        let mut flags = sys::MDB_NOSYNC | sys::MDB_NOTLS;
        if cfg.writemap {
            flags |= sys::MDB_WRITEMAP;
        }
        if cfg.nordahead {
            flags |= sys::MDB_NORDAHEAD;
        }
        let mut env: *mut sys::MDB_env = ptr::null_mut();
        // SAFETY: creates the environment; from here on `e` owns it and
        // closes it on every error path by its drop.
        check(unsafe { sys::mdb_env_create(&mut env) }, "env_create")?;
        let e = Env(env);
        // SAFETY: setters and open on the environment we own.
        unsafe {
            check(
                sys::mdb_env_set_mapsize(e.0, cfg.map_size as usize),
                "set_mapsize",
            )?;
            check(
                sys::mdb_env_set_maxreaders(e.0, cfg.max_readers as c_uint),
                "set_maxreaders",
            )?;
            check(
                sys::mdb_env_set_maxdbs(e.0, cfg.max_dbs as sys::MDB_dbi),
                "set_maxdbs",
            )?;
            check(
                sys::mdb_env_open(e.0, p.as_ptr(), flags, 0o644),
                &format!("open {}", path.display()),
            )?;
        }
        Ok(e)
    }

    /// Opens (creating) the named databases, in one write transaction.
    pub fn open_dbs(&self, names: &[String]) -> Result<Vec<Dbi>> {
        let txn = self.write_txn()?;
        let mut out = Vec::new();
        for n in names {
            let name = c_str(n, "table name")?;
            let mut dbi: sys::MDB_dbi = 0;
            // SAFETY: the transaction is live; the name outlives the call.
            check(
                unsafe { sys::mdb_dbi_open(txn.0, name.as_ptr(), sys::MDB_CREATE, &mut dbi) },
                "dbi_open",
            )?;
            out.push(Dbi(dbi));
        }
        txn.commit()?;
        Ok(out)
    }

    /// Turns `MDB_NOSYNC` on or off for the commits that follow. Call
    /// only while no other thread commits (the flag is a plain field).
    pub fn set_nosync(&self, on: bool) -> Result<()> {
        // SAFETY: the environment is open; MDB_NOSYNC is a flag LMDB lets
        // change at run time.
        check(
            unsafe { sys::mdb_env_set_flags(self.0, sys::MDB_NOSYNC, on as c_int) },
            "env_set_flags",
        )
    }

    /// Writes and syncs every committed page.
    pub fn sync(&self) -> Result<()> {
        // SAFETY: the environment is open.
        check(unsafe { sys::mdb_env_sync(self.0, 1) }, "env_sync")
    }

    /// The environment's figures.
    pub fn info(&self) -> Result<EnvInfo> {
        // SAFETY: plain reads into structs we own.
        unsafe {
            let mut i: sys::MDB_envinfo = std::mem::zeroed();
            check(sys::mdb_env_info(self.0, &mut i), "env_info")?;
            let mut s: sys::MDB_stat = std::mem::zeroed();
            check(sys::mdb_env_stat(self.0, &mut s), "env_stat")?;
            Ok(EnvInfo {
                map_size: i.me_mapsize as u64,
                last_pgno: i.me_last_pgno as u64,
                last_txnid: i.me_last_txnid as u64,
                num_readers: i.me_numreaders,
                page_size: s.ms_psize,
            })
        }
    }

    /// A read-only transaction.
    pub fn read_txn(&self) -> Result<RoTxn<'_>> {
        let mut t = ptr::null_mut();
        // SAFETY: the environment is open; the transaction is owned by the
        // returned value.
        check(
            unsafe { sys::mdb_txn_begin(self.0, ptr::null_mut(), sys::MDB_RDONLY, &mut t) },
            "read txn",
        )?;
        Ok(RoTxn(t, PhantomData))
    }

    /// A write transaction (LMDB runs one at a time: this waits for the
    /// current writer).
    pub fn write_txn(&self) -> Result<RwTxn<'_>> {
        let mut t = ptr::null_mut();
        // SAFETY: as in `read_txn`.
        check(
            unsafe { sys::mdb_txn_begin(self.0, ptr::null_mut(), 0, &mut t) },
            "write txn",
        )?;
        Ok(RwTxn(t, PhantomData))
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        // SAFETY: closes the environment once; transactions borrow it, so
        // none is open. A final sync makes no-sync commits durable.
        unsafe {
            sys::mdb_env_sync(self.0, 1);
            sys::mdb_env_close(self.0);
        }
    }
}

/// Reads shared by both kinds of transaction.
///
/// # Safety
/// `txn` must be a live, active transaction.
unsafe fn txn_get<'t>(txn: *mut sys::MDB_txn, dbi: Dbi, key: &[u8]) -> Result<Option<&'t [u8]>> {
    let mut k = val(key);
    let mut v = val(&[]);
    // SAFETY: per the function contract; the value lives as long as the
    // transaction, which `'t` is tied to by the callers.
    unsafe {
        match sys::mdb_get(txn, dbi.0, &mut k, &mut v) {
            0 => Ok(Some(bytes(v.mv_data, v.mv_size))),
            sys::MDB_NOTFOUND => Ok(None),
            rc => check(rc, "get").map(|_| None),
        }
    }
}

/// # Safety
/// `txn` must be a live, active transaction.
unsafe fn txn_cursor<'t>(txn: *mut sys::MDB_txn, dbi: Dbi) -> Result<LmdbCursor<'t>> {
    let mut c = ptr::null_mut();
    // SAFETY: per the function contract.
    check(
        unsafe { sys::mdb_cursor_open(txn, dbi.0, &mut c) },
        "cursor_open",
    )?;
    Ok(LmdbCursor {
        c,
        key: val(&[]),
        value: val(&[]),
        positioned: false,
        _t: PhantomData,
    })
}

/// A read-only transaction; aborted on drop.
pub struct RoTxn<'e>(*mut sys::MDB_txn, PhantomData<&'e Env>);

// SAFETY: with MDB_NOTLS a read transaction may move between threads; it is
// used by one at a time.
unsafe impl Send for RoTxn<'_> {}

impl RoTxn<'_> {
    /// Reads a key; the value lives as long as this borrow.
    pub fn get(&self, dbi: Dbi, key: &[u8]) -> Result<Option<&[u8]>> {
        // SAFETY: the transaction is active (renewed before use).
        unsafe { txn_get(self.0, dbi, key) }
    }
    /// A cursor over a database.
    pub fn cursor(&self, dbi: Dbi) -> Result<LmdbCursor<'_>> {
        // SAFETY: as in `get`.
        unsafe { txn_cursor(self.0, dbi) }
    }
    /// A database's figures.
    pub fn stat(&self, dbi: Dbi) -> Result<DbStat> {
        // SAFETY: as in `get`; a plain read into a struct we own.
        unsafe {
            let mut s: sys::MDB_stat = std::mem::zeroed();
            check(sys::mdb_stat(self.0, dbi.0, &mut s), "stat")?;
            Ok(DbStat {
                depth: s.ms_depth,
                branch_pages: s.ms_branch_pages as u64,
                leaf_pages: s.ms_leaf_pages as u64,
                overflow_pages: s.ms_overflow_pages as u64,
                entries: s.ms_entries as u64,
            })
        }
    }
    /// Releases the snapshot, keeping the handle for [`RoTxn::renew`].
    pub fn reset(&mut self) {
        // SAFETY: the transaction is live; a reset one may be renewed.
        unsafe { sys::mdb_txn_reset(self.0) }
    }
    /// Takes a new snapshot on a reset transaction.
    pub fn renew(&mut self) -> Result<()> {
        // SAFETY: the transaction was reset.
        check(unsafe { sys::mdb_txn_renew(self.0) }, "txn_renew")
    }
}

impl Drop for RoTxn<'_> {
    fn drop(&mut self) {
        // SAFETY: aborts once; allowed on active and reset transactions.
        unsafe { sys::mdb_txn_abort(self.0) }
    }
}

/// A write transaction; aborted on drop unless committed. Not `Send`:
/// LMDB's writer lock is a mutex the beginning thread holds until commit
/// or abort, and MDB_NOTLS frees only read transactions from their
/// thread. A session that keeps one between calls holds it as a
/// [`HeldTxn`].
pub struct RwTxn<'e>(*mut sys::MDB_txn, PhantomData<&'e Env>);

/// A write transaction kept by a session between calls, whose session may
/// move to another thread while none is open. It is used, committed and
/// aborted only on the thread that began it: elsewhere every access is an
/// error, and a drop ends the process (see its `Drop`).
pub struct HeldTxn<'e> {
    txn: std::mem::ManuallyDrop<RwTxn<'e>>,
    thread: std::thread::ThreadId,
}

// SAFETY: the transaction inside is reached only on the thread that began
// it (checked by `get`, `into_inner` and `drop`); moving the holder moves
// no access.
unsafe impl Send for HeldTxn<'_> {}

impl<'e> HeldTxn<'e> {
    /// Holds a transaction begun on this thread.
    pub fn hold(txn: RwTxn<'e>) -> HeldTxn<'e> {
        HeldTxn {
            txn: std::mem::ManuallyDrop::new(txn),
            thread: std::thread::current().id(),
        }
    }

    fn check(&self) -> Result<()> {
        if std::thread::current().id() != self.thread {
            anyhow::bail!("lmdb: a write transaction is used on a thread that did not begin it");
        }
        Ok(())
    }

    /// The transaction, on the thread that began it.
    pub fn get(&mut self) -> Result<&mut RwTxn<'e>> {
        self.check()?;
        Ok(&mut self.txn)
    }

    /// Gives the transaction back, on the thread that began it.
    pub fn into_inner(mut self) -> Result<RwTxn<'e>> {
        self.check()?;
        // SAFETY: taken once; `self` is forgotten so its drop does not
        // touch the taken value.
        let t = unsafe { std::mem::ManuallyDrop::take(&mut self.txn) };
        std::mem::forget(self);
        Ok(t)
    }
}

impl Drop for HeldTxn<'_> {
    fn drop(&mut self) {
        if self.check().is_err() {
            // Neither choice is sound: aborting the transaction here would
            // unlock another thread's writer mutex, and leaving it open
            // would block every later writer and close the environment
            // under a live transaction. A session never moves between
            // threads with a transaction open; if one does, stop.
            eprintln!(
                "ampbench: an LMDB write transaction was dropped on a thread that did not begin it"
            );
            std::process::abort();
        }
        // SAFETY: dropped once, on its own thread.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.txn) }
    }
}

impl RwTxn<'_> {
    /// Reads a key (this transaction's writes included).
    pub fn get(&self, dbi: Dbi, key: &[u8]) -> Result<Option<&[u8]>> {
        // SAFETY: the transaction is active.
        unsafe { txn_get(self.0, dbi, key) }
    }
    /// Writes a key.
    pub fn put(&mut self, dbi: Dbi, key: &[u8], value: &[u8]) -> Result<()> {
        // SAFETY: the slices live across the call; LMDB copies them.
        check(
            unsafe { sys::mdb_put(self.0, dbi.0, &mut val(key), &mut val(value), 0) },
            "put",
        )
    }
    /// Removes a key; a missing key is not an error.
    pub fn delete(&mut self, dbi: Dbi, key: &[u8]) -> Result<()> {
        // SAFETY: as in `put`.
        match unsafe { sys::mdb_del(self.0, dbi.0, &mut val(key), ptr::null_mut()) } {
            sys::MDB_NOTFOUND => Ok(()),
            rc => check(rc, "del"),
        }
    }
    /// A cursor over a database.
    pub fn cursor(&self, dbi: Dbi) -> Result<LmdbCursor<'_>> {
        // SAFETY: the transaction is active.
        unsafe { txn_cursor(self.0, dbi) }
    }
    /// Commits.
    pub fn commit(self) -> Result<()> {
        let t = self.0;
        std::mem::forget(self);
        // SAFETY: commits once; LMDB frees the transaction either way.
        check(unsafe { sys::mdb_txn_commit(t) }, "commit")
    }
}

impl Drop for RwTxn<'_> {
    fn drop(&mut self) {
        // SAFETY: aborts an uncommitted transaction once.
        unsafe { sys::mdb_txn_abort(self.0) }
    }
}

/// A cursor; closed on drop. Its key and value are read only while it is
/// positioned on an entry: after a seek that found nothing (which leaves
/// the sought key's pointer behind) they are empty.
pub struct LmdbCursor<'t> {
    c: *mut sys::MDB_cursor,
    key: sys::MDB_val,
    value: sys::MDB_val,
    positioned: bool,
    _t: PhantomData<&'t ()>,
}

impl LmdbCursor<'_> {
    fn go(&mut self, op: sys::MDB_cursor_op) -> Result<bool> {
        // SAFETY: the cursor is live; key/value are written by LMDB and stay
        // valid while the transaction lives and the cursor does not move.
        let rc = unsafe { sys::mdb_cursor_get(self.c, &mut self.key, &mut self.value, op) };
        self.positioned = rc == 0;
        match rc {
            0 => Ok(true),
            sys::MDB_NOTFOUND => Ok(false),
            rc => check(rc, "cursor_get").map(|_| false),
        }
    }
}

impl Cursor for LmdbCursor<'_> {
    fn seek_ge(&mut self, key: &[u8]) -> Result<bool> {
        self.key = val(key);
        self.go(sys::MDB_cursor_op_MDB_SET_RANGE)
    }
    fn first(&mut self) -> Result<bool> {
        self.go(sys::MDB_cursor_op_MDB_FIRST)
    }
    fn last(&mut self) -> Result<bool> {
        self.go(sys::MDB_cursor_op_MDB_LAST)
    }
    fn next(&mut self) -> Result<bool> {
        self.go(sys::MDB_cursor_op_MDB_NEXT)
    }
    fn prev(&mut self) -> Result<bool> {
        self.go(sys::MDB_cursor_op_MDB_PREV)
    }
    fn key(&self) -> &[u8] {
        if !self.positioned {
            return &[];
        }
        // SAFETY: filled by LMDB while positioned (see `go`).
        unsafe { bytes(self.key.mv_data, self.key.mv_size) }
    }
    fn value(&self) -> &[u8] {
        if !self.positioned {
            return &[];
        }
        // SAFETY: as in `key`.
        unsafe { bytes(self.value.mv_data, self.value.mv_size) }
    }
}

impl Drop for LmdbCursor<'_> {
    fn drop(&mut self) {
        // SAFETY: closes the cursor once, before its transaction ends (the
        // cursor borrows it).
        unsafe { sys::mdb_cursor_close(self.c) }
    }
}

/// The library file loaded and how the build chose it (see
/// [`super::library_file`]).
pub fn library_file() -> Option<String> {
    super::library_file(
        sys::mdb_env_create as *const std::ffi::c_void,
        "LMDB_LIB_DIR",
        env!("AMPBENCH_LMDB_LIB_DIR"),
    )
}
