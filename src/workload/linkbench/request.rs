//! The request step's worker.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::notes::RowCounts;
use super::payload::Motif;
use super::store::{LINK_TYPE_BASE, LIST_LIMIT, Link, LinkStore, NODE_TYPE, Node};
use super::{Accesses, LinkOp, Linkbench, Variant, choose, dist, now_ms};
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
    /// Rows of each non-history GET_LINKS_LIST, by interval of the
    /// measured phase (warm-up dropped).
    /// This thread's GET_LINKS_LIST rows in the interval it is in (index,
    /// counts), handed to the workload's per-interval counts when the
    /// interval changes: one histogram per thread, whatever the run's
    /// length.
    pub(super) rows: Option<(usize, RowCounts)>,
    /// When the measured phase starts and ends, and the interval length.
    pub(super) measured: (Instant, Instant, Duration),
    pub(super) found: (u64, u64),
    pub(super) costs: super::Costs,
    pub(super) id2s: Vec<u64>,
    /// The link and the node the next write sends, reused so a write
    /// allocates no payload.
    pub(super) link: Link,
    pub(super) node: Node,
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
    fn id2(&mut self, id1: u64, k: u64, p_exist: f64) -> u64 {
        let wl = self.wl;
        let n0 = wl.degrees.of_type(id1, k, wl.types);
        dist::choose_id2(&mut self.rng, wl.variant, id1, n0, p_exist, wl.start + wl.n)
    }
    fn record_rows(&mut self, rows: usize) {
        let (t0, end, every) = self.measured;
        let now = Instant::now();
        let Some(since) = now.checked_duration_since(t0) else {
            return; // warm-up
        };
        if now > end {
            return; // past the measured phase (the last ops of a stopping step)
        }
        let i = (since.as_nanos() / every.as_nanos().max(1)) as usize;
        if self.rows.as_ref().is_some_and(|r| r.0 != i) {
            self.hand_over_rows();
        }
        self.rows
            .get_or_insert_with(|| (i, RowCounts::new()))
            .1
            .record(rows as u64);
    }
    fn hand_over_rows(&mut self) {
        let Some((i, mine)) = self.rows.take() else {
            return;
        };
        if let Ok(mut all) = self.wl.rows.lock() {
            if all.len() <= i {
                all.resize_with(i + 1, RowCounts::new);
            }
            all[i].add(&mine);
        }
    }
    /// A new link to write, in `self.link`.
    fn new_link(&mut self, id1: u64, link_type: u64, id2: u64) {
        let len = dist::lognormal_len(&mut self.rng, self.wl.link_median, 254);
        let l = &mut self.link;
        (l.id1, l.link_type, l.id2, l.visible) = (id1, link_type, id2, true);
        self.link_motif.fill_into(&mut self.rng, len, &mut l.data);
        (l.time, l.version) = (now_ms(), 0);
    }

    /// A node to write (`version` 1 for a new node, 2 for an update), in
    /// `self.node`; returns the bytes it writes.
    fn new_node(&mut self, id: u64, version: u64) -> u64 {
        let len = dist::lognormal_len(&mut self.rng, self.wl.node_median, 1 << 20);
        let n = &mut self.node;
        (n.id, n.node_type, n.version) = (id, NODE_TYPE, version);
        n.time = (now_ms() / 1000) as u32;
        self.node_motif.fill_into(&mut self.rng, len, &mut n.data);
        24 + n.data.len() as u64
    }
}

impl Drop for Requester<'_> {
    fn drop(&mut self) {
        self.hand_over_rows();
        if let Ok(mut m) = self.wl.multiget.lock() {
            m.0 += self.found.0;
            m.1 += self.found.1;
        }
        if let Ok(mut r) = self.wl.costs.lock() {
            for (total, mine) in r.iter_mut().zip(&self.costs) {
                total.add(mine);
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
                let id2 = self.id2(id1, k, p);
                self.new_link(id1, t, id2);
                written = 37 + self.link.data.len() as u64;
                if op == LinkOp::UpdateLink && wl.variant == Variant::Fork {
                    self.store.update_link(&self.link)?;
                } else {
                    self.store.add_link(&self.link)?;
                }
                op
            }
            LinkOp::DeleteLink => {
                let id1 = self.link_write_id();
                let (k, t) = self.link_type();
                let id2 = self.id2(id1, k, 0.9);
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
                let mut id2s = std::mem::take(&mut self.id2s);
                dist::multiget_id2s(
                    &mut self.rng,
                    wl.variant,
                    id1,
                    n0,
                    want,
                    wl.start + wl.n,
                    &mut id2s,
                );
                let got = self.store.multiget_links(id1, t, &id2s)?.len() as u64;
                self.found.0 += got;
                let distinct = id2s
                    .iter()
                    .enumerate()
                    .filter(|(i, x)| !id2s[..*i].contains(x))
                    .count() as u64;
                self.found.1 += distinct.saturating_sub(got);
                self.id2s = id2s;
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
                    let (n, last) = (rows.len(), rows.last().map_or(0, |l| l.time));
                    self.record_rows(n);
                    if n >= LIST_LIMIT {
                        // One entry per list, kept as it was when present
                        // (the reference's HistoryKey index).
                        let known = self.history.iter().any(|h| h.0 == id1 && h.1 == t);
                        if !known && self.history.len() >= 2048 {
                            let i = self.rng.below(2048) as usize;
                            self.history[i] = (id1, t, last);
                        } else if !known {
                            self.history.push((id1, t, last));
                        }
                    }
                    LinkOp::GetLinksList
                }
            }
            LinkOp::AddNode => {
                let id = wl.next_node.fetch_add(1, Ordering::Relaxed);
                written = self.new_node(id, 1);
                self.store.add_node(&self.node)?;
                op
            }
            LinkOp::UpdateNode => {
                let id = self.acc.node_update.pick(&mut self.rng);
                written = self.new_node(id, 2);
                self.store.update_node(&self.node)?;
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
        let cost = self.store.take_cost();
        self.costs[op.index()].record(&cost);
        Ok(Some(Done {
            kind: op.index(),
            ops: 1,
            written,
        }))
    }
}
