//! What RocksDB and MyRocks (RocksDB inside MariaDB) share: the per-level
//! compaction statistics table, the `LOG`'s per-column-family writes, and
//! MyRocks' column-family options by their RocksDB names. Always compiled:
//! MyRocks needs them when the `rocksdb` feature (the embedded engine) is
//! off, so they cannot sit in `engine/rocksdb/`, which that feature gates.

pub mod compaction_stats;
pub mod log;
pub mod myrocks_cf;
