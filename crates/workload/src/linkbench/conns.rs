//! A SQL store's two connections, as the reference client holds them: one
//! with autocommit off for link writes, one in autocommit for the rest;
//! every statement, COMMIT and ROLLBACK sent is counted, with the helpers
//! the link writes share.

use anyhow::{Result, bail};

use super::ddl::Texts;
use super::store::{Link, LinkRef, Links, Node, OpCost};
use crate::engine::sql::{Cell, SqlConn, Val};

/// A row of [`LINK_COLS`](super::ddl::LINK_COLS), its payload borrowed
/// from the row.
pub(super) fn link_of(r: &[Cell]) -> LinkRef<'_> {
    LinkRef {
        id1: int(&r[0]),
        id2: int(&r[1]),
        link_type: int(&r[2]),
        visible: int(&r[3]) == 1,
        data: r[4].bytes().unwrap_or_default(),
        time: int(&r[5]),
        version: int(&r[6]) as u32,
    }
}

/// A cell as an unsigned integer (0 when NULL or not a number).
#[inline]
pub(super) fn int(c: &Cell) -> u64 {
    match c {
        Cell::Int(i) => *i as u64,
        other => other.int().unwrap_or(0) as u64,
    }
}

/// The two connections and what they cost.
pub(super) struct Conns {
    /// Link writes: autocommit off (or BEGIN sent).
    pub(super) rw: Box<dyn SqlConn>,
    /// Reads, the fork's node writes, the load: autocommit.
    pub(super) ac: Box<dyn SqlConn>,
    /// `rw` opens transactions by itself (no BEGIN).
    pub(super) implicit: bool,
    /// What the operations since the last `take_cost` cost.
    pub(super) cost: OpCost,
    /// The last link read's rows.
    pub(super) links: Links,
    /// The last node read.
    pub(super) node: Node,
}

impl Conns {
    pub(super) fn rw_exec(&mut self, sql: &str, p: &[Val<'_>]) -> Result<u64> {
        self.cost.statements += 1;
        self.rw.execute(sql, p)
    }
    pub(super) fn ac_exec(&mut self, sql: &str, p: &[Val<'_>]) -> Result<u64> {
        self.cost.statements += 1;
        self.ac.execute(sql, p)
    }
    /// Links read on `ac`, into `links`.
    pub(super) fn ac_links(&mut self, sql: &str, p: &[Val<'_>]) -> Result<()> {
        let links = &mut self.links;
        links.clear();
        self.cost.statements += 1;
        self.ac.query_each(sql, p, &mut |r| links.push(link_of(r)))
    }
    pub(super) fn begin(&mut self) -> Result<()> {
        if !self.implicit {
            self.cost.statements += 1;
            self.rw.begin()?;
        }
        Ok(())
    }
    pub(super) fn commit(&mut self) -> Result<()> {
        self.cost.statements += 1;
        self.rw.commit()
    }
    pub(super) fn rollback(&mut self) -> Result<()> {
        self.cost.statements += 1;
        self.cost.rollbacks += 1;
        self.rw.rollback()
    }
    /// The link's visibility, locked until the transaction ends.
    pub(super) fn visibility(
        &mut self,
        t: &Texts,
        id1: u64,
        link_type: u64,
        id2: u64,
    ) -> Result<Option<bool>> {
        let p = [
            Val::Int(id1 as i64),
            Val::Int(id2 as i64),
            Val::Int(link_type as i64),
        ];
        let mut visible = None;
        self.cost.statements += 1;
        self.rw.query_each(&t.visibility_for_update, &p, &mut |r| {
            visible = visible.or(Some(int(&r[0]) == 1))
        })?;
        Ok(visible)
    }
    pub(super) fn count_add(
        &mut self,
        t: &Texts,
        id1: u64,
        link_type: u64,
        base: i64,
        now: u64,
    ) -> Result<()> {
        let now = now as i64;
        self.rw_exec(
            &t.count_add,
            &[
                Val::Int(id1 as i64),
                Val::Int(link_type as i64),
                Val::Int(base),
                Val::Int(now),
                Val::Int(base),
                Val::Int(now),
            ],
        )?;
        Ok(())
    }
    pub(super) fn count_inc(
        &mut self,
        t: &Texts,
        id1: u64,
        link_type: u64,
        delta: i64,
        now: u64,
    ) -> Result<()> {
        let n = self.rw_exec(
            &t.count_inc,
            &[
                Val::Int(delta),
                Val::Int(now as i64),
                Val::Int(id1 as i64),
                Val::Int(link_type as i64),
            ],
        )?;
        if n != 1 {
            bail!("linkbench: no count row for ({id1}, {link_type}) to change by {delta}");
        }
        Ok(())
    }
    pub(super) fn update_link(&mut self, t: &Texts, l: &Link) -> Result<u64> {
        self.rw_exec(
            &t.update_link,
            &[
                Val::Int(1),
                Val::Bytes(&l.data),
                Val::Int(l.version as i64),
                Val::Int(l.time as i64),
                Val::Int(l.id1 as i64),
                Val::Int(l.id2 as i64),
                Val::Int(l.link_type as i64),
            ],
        )
    }
    pub(super) fn hide_link(
        &mut self,
        t: &Texts,
        id1: u64,
        link_type: u64,
        id2: u64,
    ) -> Result<()> {
        self.rw_exec(
            &t.hide_link,
            &[
                Val::Int(id1 as i64),
                Val::Int(id2 as i64),
                Val::Int(link_type as i64),
            ],
        )?;
        Ok(())
    }
    /// Inserts (or upserts, per `sql`) one link, visible: every link
    /// write makes its link visible.
    pub(super) fn insert_link(&mut self, sql: &str, l: &Link) -> Result<u64> {
        let mut p = link_params(l);
        p[3] = Val::Int(1);
        self.rw_exec(sql, &p)
    }
}

/// A link row as statement parameters, in [`LINK_COLS`](super::ddl::LINK_COLS) order.
pub(super) fn link_params(l: &Link) -> [Val<'_>; 7] {
    [
        Val::Int(l.id1 as i64),
        Val::Int(l.id2 as i64),
        Val::Int(l.link_type as i64),
        Val::Int(i64::from(l.visible)),
        Val::Bytes(&l.data),
        Val::Int(l.time as i64),
        Val::Int(l.version as i64),
    ]
}
