//! The request step's worker.

use std::sync::atomic::Ordering;

use anyhow::Result;

use super::payload::Motif;
use super::store::{LINK_TYPE_BASE, LIST_LIMIT, Link, LinkStore, NODE_TYPE, Node};
use super::{Accesses, LinkOp, Linkbench, choose, dist, now_ms};
use crate::driver::{Done, Worker};
use crate::rng::Rng;

/// Request worker.
pub(super) struct Requester<'a> {
    pub(super) wl: &'a Linkbench,
    pub(super) acc: &'a Accesses,
    pub(super) store: Box<dyn LinkStore + 'a>,
    pub(super) rng: Rng,
    pub(super) link_motif: Motif,
    pub(super) node_motif: Motif,
    pub(super) history: Vec<(u64, u64, u64)>,
    pub(super) rows: Vec<u64>,
    pub(super) found: (u64, u64),
    pub(super) retries: super::Retries,
}

impl Requester<'_> {
    fn link_read_id(&mut self) -> u64 {
        if self.rng.chance(0.995) {
            self.acc.uncorr.pick(&mut self.rng)
        } else {
            self.acc.read_corr.pick(&mut self.rng)
        }
    }
    /// Writes use the uncorrelated read distribution 99.5% of the time: the
    /// reference's config key typo (`read_uncorr_` for `write_uncorr_`).
    fn link_write_id(&mut self) -> u64 {
        if self.rng.chance(0.995) {
            self.acc.uncorr.pick(&mut self.rng)
        } else {
            self.acc.write_corr.pick(&mut self.rng)
        }
    }
    fn link_type(&mut self) -> (u64, u64) {
        let k = self.rng.below(self.wl.types);
        (k, LINK_TYPE_BASE + k)
    }
    fn new_link(&mut self, id1: u64, link_type: u64, id2: u64) -> Link {
        let len = dist::lognormal_len(&mut self.rng, self.wl.link_median, 254);
        Link {
            id1,
            link_type,
            id2,
            visible: true,
            data: self.link_motif.fill(&mut self.rng, len),
            time: now_ms(),
            version: 0,
        }
    }
}

impl Drop for Requester<'_> {
    fn drop(&mut self) {
        if let Ok(mut r) = self.wl.rows.lock() {
            r.append(&mut self.rows);
        }
        if let Ok(mut m) = self.wl.multiget.lock() {
            m.0 += self.found.0;
            m.1 += self.found.1;
        }
        if let Ok(mut r) = self.wl.retries.lock() {
            for (total, mine) in r.iter_mut().zip(self.retries) {
                total.0 += mine.0;
                total.1 += mine.1;
            }
        }
    }
}

impl Worker for Requester<'_> {
    fn op(&mut self) -> Result<Option<Done>> {
        let wl = self.wl;
        let op = choose(&wl.mix, &mut self.rng);
        let mut written = 0u64;
        let op = match op {
            LinkOp::AddLink | LinkOp::UpdateLink => {
                let id1 = self.link_write_id();
                let (k, t) = self.link_type();
                let p = if op == LinkOp::AddLink { 0.05 } else { 0.9 };
                let id2 =
                    dist::choose_id2(&mut self.rng, id1, wl.degrees.of_type(id1, k, wl.types), p);
                let l = self.new_link(id1, t, id2);
                written = 37 + l.data.len() as u64;
                self.store.add_link(&l)?;
                op
            }
            LinkOp::DeleteLink => {
                let id1 = self.link_write_id();
                let (k, t) = self.link_type();
                let id2 = dist::choose_id2(
                    &mut self.rng,
                    id1,
                    wl.degrees.of_type(id1, k, wl.types),
                    0.9,
                );
                self.store.delete_link(id1, t, id2, now_ms())?;
                op
            }
            LinkOp::CountLink => {
                let id1 = self.link_read_id();
                let (_, t) = self.link_type();
                self.store.count_links(id1, t)?;
                op
            }
            LinkOp::MultigetLink => {
                let id1 = self.link_read_id();
                let (k, t) = self.link_type();
                let want = dist::multiget_count(&mut self.rng);
                let n0 = wl.degrees.of_type(id1, k, wl.types);
                let range = ((n0 as f64 / 0.5).ceil() as u64).max(1);
                let mut id2s: Vec<u64> = Vec::with_capacity(want);
                if range <= want as u64 {
                    id2s.extend((0..want as u64).map(|j| id1 + j));
                } else {
                    for _ in 0..100 {
                        if id2s.len() >= want {
                            break;
                        }
                        let id2 = id1 + self.rng.below(range);
                        if !id2s.contains(&id2) {
                            id2s.push(id2);
                        }
                    }
                }
                let got = self.store.multiget_links(id1, t, &id2s)?.len() as u64;
                self.found.0 += got;
                self.found.1 += id2s.len() as u64 - got;
                op
            }
            LinkOp::GetLinksList => {
                if !self.history.is_empty() && self.rng.f64() * 100.0 < wl.history_pct {
                    let i = self.rng.below(self.history.len() as u64) as usize;
                    let (id1, t, time) = self.history[i];
                    let rows = self.store.get_links_list(id1, t, time, 1, LIST_LIMIT)?;
                    match rows.last() {
                        Some(l) if rows.len() >= LIST_LIMIT => self.history[i].2 = l.time,
                        _ => {
                            self.history.swap_remove(i);
                        }
                    }
                    LinkOp::GetLinksListHistory
                } else {
                    let id1 = self.link_read_id();
                    let (_, t) = self.link_type();
                    let rows = self
                        .store
                        .get_links_list(id1, t, i64::MAX as u64, 0, LIST_LIMIT)?;
                    self.rows.push(rows.len() as u64);
                    if rows.len() >= LIST_LIMIT {
                        let last = rows.last().map_or(0, |l| l.time);
                        if self.history.len() >= 2048 {
                            let i = self.rng.below(2048) as usize;
                            self.history[i] = (id1, t, last);
                        } else {
                            self.history.push((id1, t, last));
                        }
                    }
                    LinkOp::GetLinksList
                }
            }
            LinkOp::AddNode => {
                let id = wl.next_node.fetch_add(1, Ordering::Relaxed);
                let len = dist::lognormal_len(&mut self.rng, wl.node_median, 1 << 20);
                let data = self.node_motif.fill(&mut self.rng, len);
                written = 24 + data.len() as u64;
                self.store.add_node(&Node {
                    id,
                    node_type: NODE_TYPE,
                    version: 1,
                    time: (now_ms() / 1000) as u32,
                    data,
                })?;
                op
            }
            LinkOp::UpdateNode => {
                let id = self.acc.node_update.pick(&mut self.rng);
                let len = dist::lognormal_len(&mut self.rng, wl.node_median, 1 << 20);
                let data = self.node_motif.fill(&mut self.rng, len);
                written = 24 + data.len() as u64;
                self.store.update_node(&Node {
                    id,
                    node_type: NODE_TYPE,
                    version: 2,
                    time: (now_ms() / 1000) as u32,
                    data,
                })?;
                op
            }
            LinkOp::DeleteNode => {
                let id = self.acc.node_delete.pick(&mut self.rng);
                self.store.delete_node(id)?;
                op
            }
            // GET_NODE (choose returns only the mix's ten kinds).
            _ => {
                let id = self.acc.node_read.pick(&mut self.rng);
                self.store.get_node(id)?;
                LinkOp::GetNode
            }
        };
        let retried = self.store.retries();
        if retried > 0 {
            self.retries[op.index()].0 += 1;
            self.retries[op.index()].1 += retried;
        }
        Ok(Some(Done {
            kind: op.index(),
            ops: 1,
            written,
        }))
    }
}
