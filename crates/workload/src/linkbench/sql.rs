//! LinkBench on a SQL engine: each operation sends the statements of the
//! reference client it follows (the [`Variant`]), no more, and counts them.
//!
//! Like the reference, a store holds two connections: one with autocommit
//! off for the link writes (on MariaDB no BEGIN is sent: a statement opens
//! the transaction; PostgreSQL has no such mode, so BEGIN is sent and
//! counted), one in autocommit for reads, the fork's node writes and the
//! load. Deadlocks and lock-wait timeouts roll back and run the
//! transaction again, as the reference does, counted as retries.
//!
//! - **fork** (`LinkStoreSql`, `LinkStoreMysql`): ADD_LINK is a plain
//!   INSERT and the count upsert, COMMIT; on a duplicate key it rolls back
//!   and takes the update path. UPDATE_LINK is `SELECT … FOR UPDATE`, then
//!   UPDATE (and, when the link was hidden, `UPDATE counttable`), COMMIT; a
//!   missing link rolls back and takes the insert path. DELETE_LINK locks
//!   the row, hides it and decrements the count, or rolls back when the
//!   link is missing or hidden. Node writes autocommit.
//! - **original** (`LinkStoreMysql` of facebookarchive/linkbench): ADD_LINK
//!   and UPDATE_LINK are `INSERT … ON DUPLICATE KEY UPDATE`, whose affected
//!   rows (1 new, 2 revived, 0 existing) choose the count upsert and the
//!   UPDATE, COMMIT; DELETE_LINK ends with COMMIT either way; node writes
//!   are the statement and COMMIT on the write connection. On PostgreSQL,
//!   whose upsert cannot tell a new row from a changed one, ADD_LINK reads
//!   the row `FOR UPDATE` first (one statement more than the reference).
//!
//! Other differences, each for a reason: node ids come from the
//! workload's allocator (as on the KV engines) rather than AUTO_INCREMENT;
//! the load autocommits one multi-row INSERT per batch.

use anyhow::{Result, bail};

use super::conns::{Conns, int, link_params};
use super::ddl::Texts;
pub use super::ddl::{index_ddl, schema};
use super::dist::Variant;
use super::store::{Added, Check, Count, Link, LinkStore, Links, NODE_TYPE, Node, OpCost};
use crate::engine::Durability;
use crate::engine::sql::{Cell, Dialect, SqlConn, Val};

/// The most switches between the insert and the update path in one
/// ADD_LINK or UPDATE_LINK (links are never removed, so one suffices).
const MAX_SWITCHES: usize = 10;

/// Where one attempt of the fork's link write ended.
enum Path {
    Done(Added),
    /// Take the other path (insert ↔ update).
    Switch,
}

/// LinkBench over two connections to one server.
pub struct SqlLinks {
    c: Conns,
    t: Texts,
    d: Dialect,
    variant: Variant,
    /// MULTIGET_LINK's parameters, the vector kept from call to call.
    params: Vec<Val<'static>>,
}

impl SqlLinks {
    /// The mapping over `rw` (link writes) and `ac` (the rest); writes
    /// commit with `durability`.
    pub fn new(
        mut rw: Box<dyn SqlConn>,
        mut ac: Box<dyn SqlConn>,
        d: Dialect,
        variant: Variant,
        durability: Durability,
    ) -> Result<SqlLinks> {
        rw.set_durability(durability)?;
        if d == Dialect::MySql {
            // The tables are latin1: payload bytes pass through unchanged.
            rw.batch("SET NAMES latin1")?;
            ac.batch("SET NAMES latin1")?;
        }
        let implicit = rw.autocommit_off()?;
        Ok(SqlLinks {
            c: Conns {
                rw,
                ac,
                implicit,
                cost: OpCost::default(),
                links: Links::with_room(),
                node: Node::default(),
            },
            t: Texts::new(d),
            d,
            variant,
            params: Vec::new(),
        })
    }

    /// Runs a write transaction on `rw`: `f` ends it (COMMIT or ROLLBACK);
    /// on a deadlock, lock-wait timeout or serialization failure it is
    /// rolled back and run again, at most [`MAX_RETRIES`] times.
    fn write<R>(&mut self, mut f: impl FnMut(&mut Conns, &Texts) -> Result<R>) -> Result<R> {
        for _ in 0..=MAX_RETRIES {
            self.c.begin()?;
            match f(&mut self.c, &self.t) {
                Ok(r) => return Ok(r),
                Err(e) => {
                    let retry = self.c.rw.is_retryable(&e) || e.to_string() == lost_race();
                    let _ = self.c.rollback();
                    if !retry {
                        return Err(e);
                    }
                    self.c.cost.retries += 1;
                }
            }
        }
        Err(gave_up())
    }

    /// Runs one autocommitted statement on `ac`, again after a deadlock,
    /// lock-wait timeout or serialization failure (at most [`MAX_RETRIES`]
    /// times).
    fn auto<R>(&mut self, mut f: impl FnMut(&mut Conns, &Texts) -> Result<R>) -> Result<R> {
        for _ in 0..=MAX_RETRIES {
            match f(&mut self.c, &self.t) {
                Err(e) if self.c.ac.is_retryable(&e) => self.c.cost.retries += 1,
                r => return r,
            }
        }
        Err(gave_up())
    }

    /// The fork's `newLinkLoop`: the insert or the update path, switching
    /// on a duplicate key or a missing link.
    fn fork_link(&mut self, l: &Link, mut insert: bool) -> Result<Added> {
        for _ in 0..MAX_SWITCHES {
            let path = if insert {
                self.write(|c, t| {
                    match c.insert_link(&t.insert_link, l) {
                        Err(e) if c.rw.is_duplicate_key(&e) => {
                            c.rollback()?;
                            return Ok(Path::Switch);
                        }
                        r => r?,
                    };
                    c.count_add(t, l.id1, l.link_type, 1, super::now_ms())?;
                    c.commit()?;
                    Ok(Path::Done(Added::New))
                })?
            } else {
                self.write(|c, t| {
                    let Some(visible) = c.visibility(t, l.id1, l.link_type, l.id2)? else {
                        c.rollback()?;
                        return Ok(Path::Switch);
                    };
                    if c.update_link(t, l)? == 0 {
                        c.rollback()?;
                        return Ok(Path::Done(Added::Updated));
                    }
                    if !visible {
                        c.count_inc(t, l.id1, l.link_type, 1, super::now_ms())?;
                    }
                    c.commit()?;
                    Ok(Path::Done(if visible {
                        Added::Updated
                    } else {
                        Added::Revived
                    }))
                })?
            };
            match path {
                Path::Done(a) => return Ok(a),
                Path::Switch => {
                    self.c.cost.fallbacks += 1;
                    insert = !insert;
                }
            }
        }
        bail!(
            "linkbench: the write of link ({}, {}, {}) switched between insert and update {MAX_SWITCHES} times",
            l.id1,
            l.link_type,
            l.id2
        )
    }

    /// The original's ADD_LINK (and UPDATE_LINK).
    fn original_link(&mut self, l: &Link) -> Result<Added> {
        let d = self.d;
        self.write(|c, t| {
            let now = super::now_ms();
            let got = match d {
                Dialect::MySql => match c.insert_link(&t.upsert_link, l)? {
                    1 => Added::New,
                    2 => Added::Revived,
                    _ => Added::Updated,
                },
                Dialect::Postgres => match c.visibility(t, l.id1, l.link_type, l.id2)? {
                    None => {
                        if c.insert_link(&t.upsert_link, l)? == 0 {
                            // A concurrent insert won: run again as a conflict.
                            bail!(lost_race());
                        }
                        Added::New
                    }
                    Some(false) => Added::Revived,
                    Some(true) => Added::Updated,
                },
            };
            if got != Added::Updated {
                c.count_add(t, l.id1, l.link_type, 1, now)?;
            }
            if got != Added::New {
                c.update_link(t, l)?;
            }
            c.commit()?;
            Ok(got)
        })
    }

    /// A node write: autocommitted (fork) or with COMMIT on the write
    /// connection (original).
    fn node_write(&mut self, sql: fn(&Texts) -> &str, p: &[Val<'_>]) -> Result<u64> {
        match self.variant {
            Variant::Fork => self.auto(|c, t| c.ac_exec(sql(t), p)),
            Variant::Original => self.write(|c, t| {
                let n = c.rw_exec(sql(t), p)?;
                c.commit()?;
                Ok(n)
            }),
        }
    }
}

impl LinkStore for SqlLinks {
    fn add_link(&mut self, l: &Link) -> Result<Added> {
        match self.variant {
            Variant::Fork => self.fork_link(l, true),
            Variant::Original => self.original_link(l),
        }
    }

    fn update_link(&mut self, l: &Link) -> Result<Added> {
        match self.variant {
            Variant::Fork => self.fork_link(l, false),
            Variant::Original => self.original_link(l),
        }
    }

    fn delete_link(&mut self, id1: u64, link_type: u64, id2: u64, now_ms: u64) -> Result<bool> {
        let variant = self.variant;
        self.write(|c, t| {
            if c.visibility(t, id1, link_type, id2)? != Some(true) {
                match variant {
                    Variant::Fork => c.rollback()?,
                    Variant::Original => c.commit()?,
                }
                return Ok(false);
            }
            c.hide_link(t, id1, link_type, id2)?;
            match variant {
                Variant::Fork => c.count_inc(t, id1, link_type, -1, now_ms)?,
                Variant::Original => {
                    let now = Val::Int(now_ms as i64);
                    let p = [Val::Int(id1 as i64), Val::Int(link_type as i64), now, now];
                    c.rw_exec(&t.count_dec_upsert, &p)?;
                }
            }
            c.commit()?;
            Ok(true)
        })
    }

    fn count_links(&mut self, id1: u64, link_type: u64) -> Result<u64> {
        let p = [Val::Int(id1 as i64), Val::Int(link_type as i64)];
        self.auto(|c, t| {
            let mut n = 0;
            c.cost.statements += 1;
            c.ac.query_each(&t.count_links, &p, &mut |r| n = int(&r[0]))?;
            Ok(n)
        })
    }

    fn multiget_links(&mut self, id1: u64, link_type: u64, id2s: &[u64]) -> Result<&Links> {
        if id2s.is_empty() {
            self.c.links.clear();
            return Ok(&self.c.links);
        }
        let mut p = std::mem::take(&mut self.params);
        p.clear();
        p.extend([Val::Int(id1 as i64), Val::Int(link_type as i64)]);
        p.extend(id2s.iter().map(|i| Val::Int(*i as i64)));
        let n = id2s.len();
        self.t.prepare_multiget(n);
        let r = self.auto(|c, t| c.ac_links(t.multiget(n), &p));
        self.params = p;
        r?;
        Ok(&self.c.links)
    }

    fn get_links_list(
        &mut self,
        id1: u64,
        link_type: u64,
        max_time: u64,
        offset: usize,
        limit: usize,
    ) -> Result<&Links> {
        let p = [
            Val::Int(id1 as i64),
            Val::Int(link_type as i64),
            Val::Int(0),
            Val::Int(max_time.min(i64::MAX as u64) as i64),
            Val::Int(limit as i64),
            Val::Int(offset as i64),
        ];
        self.auto(|c, t| c.ac_links(&t.links_list, &p))?;
        Ok(&self.c.links)
    }

    fn add_node(&mut self, n: &Node) -> Result<()> {
        let p = [
            Val::Int(n.id as i64),
            Val::Int(n.node_type as i64),
            Val::Int(n.version as i64),
            Val::Int(n.time as i64),
            Val::Bytes(&n.data),
        ];
        self.node_write(|t| &t.add_node, &p)?;
        Ok(())
    }

    fn update_node(&mut self, n: &Node) -> Result<bool> {
        let p = [
            Val::Int(n.version as i64),
            Val::Int(n.time as i64),
            Val::Bytes(&n.data),
            Val::Int(n.id as i64),
        ];
        Ok(self.node_write(|t| &t.update_node, &p)? > 0)
    }

    fn delete_node(&mut self, id: u64) -> Result<bool> {
        Ok(self.node_write(|t| &t.delete_node, &[Val::Int(id as i64)])? > 0)
    }

    fn get_node(&mut self, id: u64) -> Result<Option<&Node>> {
        let p = [Val::Int(id as i64)];
        let found = self.auto(|c, t| {
            let (mut found, node) = (false, &mut c.node);
            c.cost.statements += 1;
            c.ac.query_each(&t.get_node, &p, &mut |r| {
                found = true;
                node.id = int(&r[0]);
                node.node_type = int(&r[1]) as u32;
                node.version = int(&r[2]);
                node.time = int(&r[3]) as u32;
                node.data.clear();
                node.data
                    .extend_from_slice(r[4].bytes().unwrap_or_default());
            })?;
            Ok(found)
        })?;
        // The reference returns nothing for another type.
        Ok(Some(&self.c.node).filter(|n| found && n.node_type == NODE_TYPE))
    }

    fn load_nodes(&mut self, nodes: &[Node]) -> Result<()> {
        for chunk in nodes.chunks(1024) {
            let sql = self.t.values(
                "INSERT INTO nodetable (id, type, version, time, data) VALUES",
                chunk.len(),
                5,
            );
            let mut params = Vec::with_capacity(chunk.len() * 5);
            for n in chunk {
                params.extend([
                    Val::Int(n.id as i64),
                    Val::Int(n.node_type as i64),
                    Val::Int(n.version as i64),
                    Val::Int(n.time as i64),
                    Val::Bytes(&n.data),
                ]);
            }
            self.auto(|c, _| c.ac_exec(&sql, &params))?;
        }
        Ok(())
    }

    fn load_links(&mut self, links: &[Link]) -> Result<()> {
        for chunk in links.chunks(1024) {
            let mut sql = self.t.values(
                &format!("INSERT INTO linktable ({}) VALUES", super::ddl::LINK_COLS),
                chunk.len(),
                7,
            );
            if self.variant == Variant::Original && self.d == Dialect::MySql {
                sql.push_str(" ON DUPLICATE KEY UPDATE visibility = VALUES(visibility)");
            }
            let mut params = Vec::with_capacity(chunk.len() * 7);
            for l in chunk {
                params.extend(link_params(l));
            }
            self.auto(|c, _| c.ac_exec(&sql, &params))?;
        }
        Ok(())
    }

    fn load_counts(&mut self, counts: &[Count]) -> Result<()> {
        for chunk in counts.chunks(1024) {
            let verb = match (self.variant, self.d) {
                (Variant::Original, Dialect::MySql) => "REPLACE",
                _ => "INSERT",
            };
            let sql = self.t.values(
                &format!("{verb} INTO counttable (id, link_type, count, time, version) VALUES"),
                chunk.len(),
                5,
            );
            let mut params = Vec::with_capacity(chunk.len() * 5);
            for c in chunk {
                params.extend([
                    Val::Int(c.id1 as i64),
                    Val::Int(c.link_type as i64),
                    Val::Int(c.count as i64),
                    Val::Int(c.time as i64),
                    Val::Int(c.version as i64),
                ]);
            }
            self.auto(|c, _| c.ac_exec(&sql, &params))?;
        }
        Ok(())
    }

    fn build_index(&mut self) -> Result<u64> {
        let rocks = self.d == Dialect::MySql
            && {
                let e = self.c.ac.query(
                "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'linktable'",
                &[],
            )?;
                e.first().and_then(|r| r.first()).is_some_and(|c| match c {
                    Cell::Text(t) => t.eq_ignore_ascii_case("rocksdb"),
                    Cell::Bytes(b) => b.eq_ignore_ascii_case(b"rocksdb"),
                    _ => false,
                })
            };
        self.c.ac.batch(&index_ddl(self.d, rocks))?;
        let rows = self.c.ac.query("SELECT count(*) FROM linktable", &[])?;
        Ok(rows.first().map_or(0, |r| int(&r[0])))
    }

    fn check(&mut self) -> Result<Check> {
        let c = &mut self.c.ac;
        let interrupted = || {
            if crate::signals::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(anyhow::anyhow!(
                    "linkbench: the consistency check was interrupted"
                ));
            }
            Ok(())
        };
        let pairs = c.query("SELECT count(*) FROM counttable", &[])?;
        interrupted()?;
        let bad_counts = c.query(
            "SELECT count(*) FROM counttable c LEFT JOIN (SELECT id1, link_type, COUNT(*) AS n FROM linktable \
             WHERE visibility = 1 GROUP BY id1, link_type) l ON c.id = l.id1 AND c.link_type = l.link_type \
             WHERE COALESCE(l.n, 0) <> c.count",
            &[],
        )?;
        interrupted()?;
        let missing = c.query(
            "SELECT count(*) FROM (SELECT id1, link_type FROM linktable WHERE visibility = 1 GROUP BY id1, link_type) l \
             LEFT JOIN counttable c ON c.id = l.id1 AND c.link_type = l.link_type WHERE c.id IS NULL",
            &[],
        )?;
        let first = |r: &Vec<Vec<Cell>>| r.first().map_or(0, |r| int(&r[0]));
        Ok(Check {
            pairs: first(&pairs) + first(&missing),
            mismatches: first(&bad_counts) + first(&missing),
        })
    }

    fn take_cost(&mut self) -> OpCost {
        std::mem::take(&mut self.c.cost)
    }
}

/// Retries of one transaction or statement after conflicts before its
/// step fails: a server that refuses it this often is not contended but
/// stuck (a certification or serialization failure that recurs).
pub const MAX_RETRIES: u32 = 1000;

/// The error of a transaction that kept failing on conflicts.
fn gave_up() -> anyhow::Error {
    anyhow::anyhow!(
        "a transaction failed on conflicts (deadlock, lock wait or serialization) {} times in a row: the step stops",
        MAX_RETRIES + 1
    )
}

/// A marker error for PostgreSQL's lost insert race (treated as retryable).
fn lost_race() -> &'static str {
    "linkbench: concurrent insert of the same link; retrying"
}
