//! A server's own counters of its IO and size, sampled with the rest:
//! what efficiency per operation rests on when the server's host is not
//! this one (an external target), and a second source beside /proc for a
//! server ampbench started. Each server engine says how it reads them
//! ([`CounterSource`]); a counter the server does not keep stays `None`
//! and its figure says so.

use serde::{Deserialize, Serialize};

/// One reading of a server's counters (each since the server started,
/// but the database's size).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCounters {
    /// Data reads the server issued to its files (InnoDB:
    /// `Innodb_data_reads`; PostgreSQL: `blks_read` summed over the
    /// databases, reads the OS may have served from its page cache).
    pub reads: Option<u64>,
    /// Bytes of those reads (InnoDB: `Innodb_data_read`; PostgreSQL:
    /// `blks_read` × `block_size`).
    pub read_bytes: Option<u64>,
    /// Bytes of data pages written (InnoDB: `Innodb_data_written`, the
    /// doublewrite buffer included; PostgreSQL: buffers written by the
    /// checkpointer, the background writer and backends × `block_size`).
    pub data_written: Option<u64>,
    /// Bytes of redo log / WAL written (InnoDB: `Innodb_os_log_written`;
    /// PostgreSQL: `pg_stat_wal.wal_bytes`).
    pub log_written: Option<u64>,
    /// The benchmark database's size on the server's disk (InnoDB: its
    /// tablespaces' allocated size; PostgreSQL: `pg_database_size`).
    pub db_bytes: Option<u64>,
}

impl ServerCounters {
    /// Adds another server's counters to these (a cluster's nodes): a
    /// figure either lacks stays unknown.
    pub fn add(&mut self, o: &ServerCounters) {
        fn sum(a: &mut Option<u64>, b: Option<u64>) {
            *a = a.zip(b).map(|(a, b)| a.saturating_add(b));
        }
        sum(&mut self.reads, o.reads);
        sum(&mut self.read_bytes, o.read_bytes);
        sum(&mut self.data_written, o.data_written);
        sum(&mut self.log_written, o.log_written);
        sum(&mut self.db_bytes, o.db_bytes);
    }
}

/// How a server engine reads its counters: one connection of its own,
/// used by the probe only.
pub trait CounterSource: Send + Sync {
    /// Reads the counters now; None when the server could not be asked
    /// (the figures then say so).
    fn read(&self) -> Option<ServerCounters>;
    /// Where the counters come from, as reports name the source (e.g.
    /// `SHOW GLOBAL STATUS`).
    fn source(&self) -> &'static str;
}

/// A connection of a counter source's own, made on first use and made
/// again after the server dropped it (an error forgets it).
pub struct Reconnecting<C> {
    connect: Box<dyn Fn() -> anyhow::Result<C> + Send + Sync>,
    conn: std::sync::Mutex<Option<C>>,
}

impl<C> Reconnecting<C> {
    /// A connection made by `connect` when needed.
    pub fn new(connect: Box<dyn Fn() -> anyhow::Result<C> + Send + Sync>) -> Reconnecting<C> {
        Reconnecting {
            connect,
            conn: std::sync::Mutex::new(None),
        }
    }

    /// `f` on the connection; None when there is none or `f` failed (the
    /// connection is then made anew next time).
    pub fn with<R>(&self, f: impl FnOnce(&mut C) -> anyhow::Result<R>) -> Option<R> {
        let mut g = self.conn.lock().ok()?;
        if g.is_none() {
            *g = (self.connect)().ok();
        }
        let r = f(g.as_mut()?);
        if r.is_err() {
            *g = None;
        }
        r.ok()
    }
}
