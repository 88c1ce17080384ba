//! A RocksDB iterator as a [`Cursor`].

use std::ffi::c_void;
use std::marker::PhantomData;
use std::os::raw::c_char;

use anyhow::Result;

use super::{Db, call, sys};
use crate::ffi::bytes;
use crate::scan::Cursor;

/// An iterator, destroyed on drop (also when a scan's visitor panics).
/// Its key and value are read only while it is positioned on an entry
/// (`valid`): after a seek that found nothing they are empty, never a
/// read of an invalid iterator.
pub struct Iter<'d> {
    it: *mut sys::rocksdb_iterator_t,
    valid: bool,
    _db: PhantomData<&'d Db>,
}

impl Iter<'_> {
    /// Wraps an iterator of a database that outlives `'d`.
    pub(super) fn new(it: *mut sys::rocksdb_iterator_t) -> Self {
        Iter {
            it,
            valid: false,
            _db: PhantomData,
        }
    }

    fn valid(&mut self) -> Result<bool> {
        // SAFETY: the iterator is live.
        self.valid = unsafe { sys::rocksdb_iter_valid(self.it) } != 0;
        if self.valid {
            return Ok(true);
        }
        // SAFETY: as above.
        call(|e| unsafe { sys::rocksdb_iter_get_error(self.it, e) })?;
        Ok(false)
    }
}

impl Cursor for Iter<'_> {
    fn seek_ge(&mut self, key: &[u8]) -> Result<bool> {
        // SAFETY: the key lives across the call.
        unsafe { sys::rocksdb_iter_seek(self.it, key.as_ptr() as *const c_char, key.len()) };
        self.valid()
    }
    fn seek_le(&mut self, key: &[u8]) -> Result<bool> {
        // SAFETY: as in `seek_ge`.
        unsafe {
            sys::rocksdb_iter_seek_for_prev(self.it, key.as_ptr() as *const c_char, key.len())
        };
        self.valid()
    }
    fn first(&mut self) -> Result<bool> {
        // SAFETY: the iterator is live.
        unsafe { sys::rocksdb_iter_seek_to_first(self.it) };
        self.valid()
    }
    fn last(&mut self) -> Result<bool> {
        // SAFETY: the iterator is live.
        unsafe { sys::rocksdb_iter_seek_to_last(self.it) };
        self.valid()
    }
    fn next(&mut self) -> Result<bool> {
        if !self.valid {
            return Ok(false);
        }
        // SAFETY: the iterator is valid (RocksDB requires it for Next).
        unsafe { sys::rocksdb_iter_next(self.it) };
        self.valid()
    }
    fn prev(&mut self) -> Result<bool> {
        if !self.valid {
            return Ok(false);
        }
        // SAFETY: as in `next`.
        unsafe { sys::rocksdb_iter_prev(self.it) };
        self.valid()
    }
    fn key(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        let mut len = 0usize;
        // SAFETY: the iterator is valid; the slice lives until the next
        // move, which needs `&mut self`.
        unsafe {
            bytes(
                sys::rocksdb_iter_key(self.it, &mut len) as *const c_void,
                len,
            )
        }
    }
    fn value(&self) -> &[u8] {
        if !self.valid {
            return &[];
        }
        let mut len = 0usize;
        // SAFETY: as in `key`.
        unsafe {
            bytes(
                sys::rocksdb_iter_value(self.it, &mut len) as *const c_void,
                len,
            )
        }
    }
}

impl Drop for Iter<'_> {
    fn drop(&mut self) {
        // SAFETY: created by `Db::iter`, destroyed once.
        unsafe { sys::rocksdb_iter_destroy(self.it) }
    }
}
