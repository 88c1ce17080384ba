//! An optimistic transaction of a RocksDB database.

use std::marker::PhantomData;
use std::os::raw::c_char;

use anyhow::Result;

use super::{Cf, Db, ReadOptions, call, sys, take_value};

/// An optimistic transaction, destroyed on drop (rolled back if open).
pub struct Transaction<'d>(*mut sys::rocksdb_transaction_t, PhantomData<&'d Db>);

// SAFETY: a transaction is used by one thread at a time (it is owned by a
// session); RocksDB does not tie it to the thread that began it.
unsafe impl Send for Transaction<'_> {}

impl Transaction<'_> {
    /// Wraps a transaction of a database that outlives `'d`.
    pub(super) fn new(t: *mut sys::rocksdb_transaction_t) -> Self {
        Transaction(t, PhantomData)
    }

    /// Gives up ownership (for reuse by the next begin).
    pub(super) fn into_raw(self) -> *mut sys::rocksdb_transaction_t {
        let p = self.0;
        std::mem::forget(self);
        p
    }

    /// Reads a key (its own writes first), tracked for the commit's
    /// conflict check.
    pub fn get_for_update(
        &mut self,
        ro: &ReadOptions,
        cf: &Cf,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        let mut len = 0usize;
        // SAFETY: the key lives across the call; the value is taken.
        unsafe {
            let v = call(|e| {
                sys::rocksdb_transaction_get_for_update_cf(
                    self.0,
                    ro.0,
                    cf.0,
                    key.as_ptr() as *const c_char,
                    key.len(),
                    &mut len,
                    1,
                    e,
                )
            })?;
            Ok(take_value(v, len))
        }
    }
    /// Writes a key.
    pub fn put(&mut self, cf: &Cf, key: &[u8], value: &[u8]) -> Result<()> {
        // SAFETY: the slices live across the call (copied by RocksDB).
        call(|e| unsafe {
            sys::rocksdb_transaction_put_cf(
                self.0,
                cf.0,
                key.as_ptr() as *const c_char,
                key.len(),
                value.as_ptr() as *const c_char,
                value.len(),
                e,
            )
        })
    }
    /// Removes a key.
    pub fn delete(&mut self, cf: &Cf, key: &[u8]) -> Result<()> {
        // SAFETY: as in `put`.
        call(|e| unsafe {
            sys::rocksdb_transaction_delete_cf(
                self.0,
                cf.0,
                key.as_ptr() as *const c_char,
                key.len(),
                e,
            )
        })
    }
    /// Commits; a [`Conflict`] when a key read or written changed since.
    pub fn commit(&mut self) -> Result<()> {
        // SAFETY: the transaction is live.
        call(|e| unsafe { sys::rocksdb_transaction_commit(self.0, e) })
    }
    /// Rolls back.
    pub fn rollback(&mut self) -> Result<()> {
        // SAFETY: the transaction is live.
        call(|e| unsafe { sys::rocksdb_transaction_rollback(self.0, e) })
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        // SAFETY: created by `Db::begin`, destroyed once; destroying an
        // uncommitted transaction discards it.
        unsafe { sys::rocksdb_transaction_destroy(self.0) }
    }
}
