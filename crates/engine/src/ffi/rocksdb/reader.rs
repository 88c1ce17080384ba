//! Point reads through the shim in `get.cc`: one PinnableSlice per session,
//! reset at each read, instead of the C API's allocation per read; or,
//! where the shim's handle layout does not hold (another release), through
//! the C API's `rocksdb_get_pinned_cf`.

use std::ffi::c_void;
use std::os::raw::c_char;
#[cfg(rocksdb_shim)]
use std::os::raw::c_int;
use std::ptr;

use anyhow::Result;

use std::marker::PhantomData;

use super::{Cf, Db, ReadOptions, bytes, check, sys};

/// The shim's reader (opaque).
#[cfg(rocksdb_shim)]
#[repr(C)]
struct RawReader {
    _private: [u8; 0],
}

#[cfg(rocksdb_shim)]
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
    fn ampbench_rocksdb_readoptions_probe(ro: *const c_void) -> c_int;
}

/// How point reads are made in this process: `Ok` through the shim
/// (one PinnableSlice per session), or `Err(why)` through the C API (a
/// PinnableSlice allocated per read): the shim was left out of this build
/// (other headers than the 7.8 whose handle layout it reads), or the
/// library loaded is another release than the headers'. Decided once.
pub fn point_reads() -> &'static std::result::Result<(), String> {
    static HOW: std::sync::OnceLock<std::result::Result<(), String>> = std::sync::OnceLock::new();
    HOW.get_or_init(shim_holds)
}

/// Whether the shim's layout holds for the library loaded.
#[cfg(rocksdb_shim)]
fn shim_holds() -> std::result::Result<(), String> {
    let mut buf = [0 as c_char; 32];
    // SAFETY: the shim writes at most `buf.len()` bytes, NUL-terminated.
    let ok = unsafe { ampbench_rocksdb_library_matches(buf.as_mut_ptr(), buf.len()) };
    if ok != 1 {
        // SAFETY: NUL-terminated within `buf` (above).
        let v = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
        return Err(format!(
            "the library loaded is {} but the read shim was built for {HEADERS}'s handle layout",
            v.to_string_lossy()
        ));
    }
    // The same release: still, the read-options handle must read back
    // what the C API set in it, in each of four states.
    // SAFETY: a handle the C API makes and destroys below; the probe
    // reads two flags of the ReadOptions it wraps.
    unsafe {
        let ro = sys::rocksdb_readoptions_create();
        if ro.is_null() {
            return Err("the C API made no read options".into());
        }
        let mut held = true;
        for want in 0..4 {
            sys::rocksdb_readoptions_set_fill_cache(ro, (want & 1) as u8);
            sys::rocksdb_readoptions_set_verify_checksums(ro, (want >> 1) as u8);
            held &= ampbench_rocksdb_readoptions_probe(ro as *const c_void) == want;
        }
        sys::rocksdb_readoptions_destroy(ro);
        if !held {
            return Err(
                "the library's read-options handle does not read back as the shim's layout assumes"
                    .into(),
            );
        }
    }
    Ok(())
}

/// Without the shim: the C API, and why.
#[cfg(not(rocksdb_shim))]
fn shim_holds() -> std::result::Result<(), String> {
    Err(format!(
        "this build's RocksDB headers are {HEADERS}; the read shim reads 7.8's handle layout and was left out"
    ))
}

/// The headers' release the bindings were made from (build.rs).
const HEADERS: &str = env!("AMPBENCH_ROCKSDB_HEADERS");

/// One thread's point reader of one database. The value of the last read
/// stays pinned in the block cache until the next read, as in db_bench's
/// read loop; the reader borrows its database (`'d`), so the compiler
/// keeps it from outliving what it pins.
pub struct Reader<'d> {
    how: How,
    db: &'d Db,
    /// Not `Sync`: one thread reads through it at a time.
    _one: PhantomData<std::cell::Cell<()>>,
}

/// Through the shim's reader, or the C API's last pinned value (null
/// before the first read that found one).
enum How {
    #[cfg(rocksdb_shim)]
    Shim(*mut RawReader),
    CApi(*mut sys::rocksdb_pinnableslice_t),
}

// SAFETY: the reader is owned by one session at a time; RocksDB's
// PinnableSlice has no thread affinity, and the database it borrows is
// `Sync`.
unsafe impl Send for Reader<'_> {}

impl<'d> Reader<'d> {
    /// A reader of `db` with nothing pinned, through the shim when
    /// [`point_reads`] allows it.
    pub fn new(db: &'d Db) -> Reader<'d> {
        match point_reads() {
            #[cfg(rocksdb_shim)]
            // SAFETY: a plain constructor (operator new; throws only on
            // exhaustion, which aborts like any allocation failure here).
            Ok(()) => Reader {
                how: How::Shim(unsafe { ampbench_rocksdb_reader_create() }),
                db,
                _one: PhantomData,
            },
            _ => Reader::c_api(db),
        }
    }

    /// A reader through the C API whatever the build (tests compare both
    /// paths).
    pub fn c_api(db: &'d Db) -> Reader<'d> {
        Reader {
            how: How::CApi(ptr::null_mut()),
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
        let (mut len, mut err) = (0usize, ptr::null_mut());
        match &mut self.how {
            #[cfg(rocksdb_shim)]
            How::Shim(raw) => {
                let mut data = ptr::null();
                // SAFETY: the handles are live C API objects of the library
                // the shim was compiled against and checked for (their first
                // member is the C++ object, see get.cc); the key lives across
                // the call; on 1 the value stays valid until this reader's
                // next read, after `f` returns.
                unsafe {
                    let rc = ampbench_rocksdb_reader_get(
                        *raw,
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
            How::CApi(last) => {
                // SAFETY: the previous value is released once, before the
                // next read; the handles are live; the key lives across the
                // call; a non-null result is owned here until the next read
                // or drop, and its value stays valid while it lives.
                unsafe {
                    if !last.is_null() {
                        sys::rocksdb_pinnableslice_destroy(*last);
                        *last = ptr::null_mut();
                    }
                    let v = sys::rocksdb_get_pinned_cf(
                        self.db.base,
                        ro.0,
                        cf.0,
                        key.as_ptr() as *const c_char,
                        key.len(),
                        &mut err,
                    );
                    check(err)?;
                    if v.is_null() {
                        return Ok(None);
                    }
                    *last = v;
                    let p = sys::rocksdb_pinnableslice_value(v, &mut len);
                    Ok(Some(f(bytes(p as *const c_void, len))))
                }
            }
        }
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        // SAFETY: created by us, destroyed once, before the database it
        // borrows.
        unsafe {
            match self.how {
                #[cfg(rocksdb_shim)]
                How::Shim(raw) => ampbench_rocksdb_reader_destroy(raw),
                How::CApi(last) if !last.is_null() => sys::rocksdb_pinnableslice_destroy(last),
                How::CApi(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Options, WriteBatch, WriteOptions};
    use super::*;

    #[test]
    fn the_c_api_reads_what_the_default_path_reads() {
        let d = tempfile::tempdir().unwrap();
        let db = Db::open(
            Options::from_string("create_if_missing=true;create_missing_column_families=true")
                .unwrap(),
            d.path(),
            &["default", "t"],
            false,
        )
        .unwrap();
        let cf = db.cf(1).unwrap();
        let mut b = WriteBatch::new();
        for i in 0..200u32 {
            b.put(Some(cf), &i.to_be_bytes(), format!("value-{i}").as_bytes());
        }
        db.write(&WriteOptions::new(false), &b).unwrap();
        let ro = ReadOptions::new();
        let (mut usual, mut c) = (Reader::new(&db), Reader::c_api(&db));
        for i in (0..260u32).step_by(7) {
            let k = i.to_be_bytes();
            let a = usual.get(&ro, cf, &k, |v| v.to_vec()).unwrap();
            let b = c.get(&ro, cf, &k, |v| v.to_vec()).unwrap();
            assert_eq!(a, b, "key {i}");
            assert_eq!(b.is_some(), i < 200, "key {i}");
        }
        assert_eq!(point_reads().is_ok(), cfg!(rocksdb_shim));
    }
}
