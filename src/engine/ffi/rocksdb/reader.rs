//! Point reads through the shim in `get.cc`: one PinnableSlice per session,
//! reset at each read, instead of the C API's allocation per read.

use std::ffi::c_void;
use std::os::raw::{c_char, c_int};
use std::ptr;

use anyhow::Result;

use std::marker::PhantomData;

use super::{Cf, Db, ReadOptions, bytes, check};

/// The shim's reader (opaque).
#[repr(C)]
struct RawReader {
    _private: [u8; 0],
}

unsafe extern "C" {
    fn ampbench_rocksdb_reader_create() -> *mut RawReader;
    fn ampbench_rocksdb_reader_destroy(r: *mut RawReader);
    fn ampbench_rocksdb_reader_get(
        r: *mut RawReader,
        db: *mut c_void,
        ro: *const c_void,
        cf: *mut c_void,
        key: *const c_char,
        keylen: usize,
        data: *mut *const c_char,
        len: *mut usize,
        err: *mut *mut c_char,
    ) -> c_int;
    fn ampbench_rocksdb_library_matches(buf: *mut c_char, n: usize) -> c_int;
}

/// Checks that the RocksDB library loaded is the release whose handle
/// layout the read shim was compiled for (its headers' major.minor);
/// the error names both.
pub fn check_library() -> Result<()> {
    let mut buf = [0 as c_char; 32];
    // SAFETY: the shim writes at most `buf.len()` bytes, NUL-terminated.
    let ok = unsafe { ampbench_rocksdb_library_matches(buf.as_mut_ptr(), buf.len()) };
    if ok == 1 {
        return Ok(());
    }
    // SAFETY: NUL-terminated within `buf` (above).
    let v = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
    anyhow::bail!(
        "rocksdb: the library loaded is {} but ampbench's read shim was built for {} (rebuild ampbench against this library's headers)",
        v.to_string_lossy(),
        HEADERS
    )
}

/// The headers' release the shim was compiled against (build.rs).
const HEADERS: &str = env!("AMPBENCH_ROCKSDB_HEADERS");

/// One thread's point reader of one database. The value of the last read
/// stays pinned in the block cache until the next read, as in db_bench's
/// read loop; the reader borrows its database (`'d`), so the compiler
/// keeps it from outliving what it pins.
pub struct Reader<'d> {
    raw: *mut RawReader,
    db: &'d Db,
    /// Not `Sync`: one thread reads through it at a time.
    _one: PhantomData<std::cell::Cell<()>>,
}

// SAFETY: the reader is owned by one session at a time; RocksDB's
// PinnableSlice has no thread affinity, and the database it borrows is
// `Sync`.
unsafe impl Send for Reader<'_> {}

impl<'d> Reader<'d> {
    /// A reader of `db` with nothing pinned.
    pub fn new(db: &'d Db) -> Reader<'d> {
        // SAFETY: a plain constructor (operator new; throws only on
        // exhaustion, which aborts like any allocation failure here).
        Reader {
            raw: unsafe { ampbench_rocksdb_reader_create() },
            db,
            _one: PhantomData,
        }
    }

    /// Reads `key` from `cf` and hands the value to `f` while it is pinned;
    /// None when the key is absent.
    pub fn get<T>(
        &mut self,
        ro: &ReadOptions,
        cf: &Cf,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> T,
    ) -> Result<Option<T>> {
        let (mut data, mut len, mut err) = (ptr::null(), 0usize, ptr::null_mut());
        // SAFETY: the handles are live C API objects of the library the
        // shim was compiled against (their first member is the C++ object,
        // see get.cc); the key lives across the call; on 1 the value stays
        // valid until this reader's next read, after `f` returns.
        unsafe {
            let rc = ampbench_rocksdb_reader_get(
                self.raw,
                self.db.base as *mut c_void,
                ro.0 as *const c_void,
                cf.0 as *mut c_void,
                key.as_ptr() as *const c_char,
                key.len(),
                &mut data,
                &mut len,
                &mut err,
            );
            match rc {
                1 => Ok(Some(f(bytes(data as *const c_void, len)))),
                0 => Ok(None),
                _ => {
                    check(err)?;
                    Err(anyhow::anyhow!("rocksdb: read failed without a message"))
                }
            }
        }
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        // SAFETY: created by us, destroyed once, before the database it
        // borrows.
        unsafe { ampbench_rocksdb_reader_destroy(self.raw) }
    }
}
