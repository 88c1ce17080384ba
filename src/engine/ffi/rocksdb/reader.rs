//! Point reads through the shim in `get.cc`: one PinnableSlice per session,
//! reset at each read, instead of the C API's allocation per read.

use std::ffi::c_void;
use std::os::raw::{c_char, c_int};
use std::ptr;

use anyhow::Result;

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
}

/// One thread's point reader. The value of the last read stays pinned in
/// the block cache until the next read, as in db_bench's read loop; a
/// reader must be dropped before the database it read from.
pub struct Reader(*mut RawReader);

// SAFETY: the reader is owned by one session at a time; RocksDB's
// PinnableSlice has no thread affinity.
unsafe impl Send for Reader {}

impl Reader {
    /// A reader with nothing pinned.
    pub fn new() -> Reader {
        // SAFETY: a plain constructor (operator new; throws only on
        // exhaustion, which aborts like any allocation failure here).
        Reader(unsafe { ampbench_rocksdb_reader_create() })
    }

    /// Reads `key` from `cf` and hands the value to `f` while it is pinned;
    /// None when the key is absent.
    pub fn get<T>(
        &mut self,
        db: &Db,
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
                self.0,
                db.base as *mut c_void,
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

impl Default for Reader {
    fn default() -> Self {
        Reader::new()
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        // SAFETY: created by us, destroyed once, before the database (the
        // session that owns it borrows the engine).
        unsafe { ampbench_rocksdb_reader_destroy(self.0) }
    }
}
