//! The request step's worker.

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
    pub(super) history: TailCache,
    /// This thread's GET_LINKS_LIST rows (history queries included, as
    /// the reference's RANGE_SIZE counts them) in the interval it is in (index,
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
        self.acc.link_read(&mut self.rng)
    }
    fn link_write_id(&mut self) -> u64 {
        self.acc.link_write(&mut self.rng)
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
    fn record_rows(&mut self, rows: usize, history: bool) {
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
            .record(rows as u64, history);
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
    // Long: one match arm per LinkBench operation (the reference's request
    // mix), on the measured path.
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
                    let (id1, t, time) = self.history.get(i);
                    let rows = self.store.get_links_list(id1, t, time, 1, LIST_LIMIT)?;
                    let (n, last) = (rows.len(), rows.last().map(|l| l.time));
                    match last {
                        Some(time) if n >= LIST_LIMIT => self.history.update(i, time),
                        _ => self.history.remove(i),
                    }
                    self.record_rows(n, true);
                    LinkOp::GetLinksListHistory
                } else {
                    let id1 = self.link_read_id();
                    let (_, t) = self.link_type();
                    let rows = self
                        .store
                        .get_links_list(id1, t, i64::MAX as u64, 0, LIST_LIMIT)?;
                    let (n, last) = (rows.len(), rows.last().map_or(0, |l| l.time));
                    self.record_rows(n, false);
                    if n >= LIST_LIMIT {
                        self.history.add(&mut self.rng, (id1, t, last));
                    }
                    LinkOp::GetLinksList
                }
            }
            LinkOp::AddNode => {
                let id = wl.new_node_id();
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

/// A thread's cache of lists that came back full, to re-read their older
/// links (GET_LINKS_LIST_HISTORY): the reference's `listTailHistory` (at
/// most 2,048 entries of (id1, type, time of the last link read)) with its
/// `listTailHistoryIndex`, quirk included. The index forgets a list only
/// when it leaves from the last slot; removed from another slot (its
/// history ran out, or a new list evicted it) it stays in the index, and
/// that thread never caches it again.
#[derive(Debug, Default)]
pub(super) struct TailCache {
    entries: Vec<(u64, u64, u64)>,
    index: std::collections::HashSet<(u64, u64)>,
}

impl TailCache {
    /// Entries at most.
    const LIMIT: usize = 2048;

    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    fn len(&self) -> usize {
        self.entries.len()
    }
    fn get(&self, i: usize) -> (u64, u64, u64) {
        self.entries[i]
    }
    /// The list at `i` has more: its next query starts before `time`.
    fn update(&mut self, i: usize, time: u64) {
        self.entries[i].2 = time;
    }
    /// Drops entry `i` (the last entry takes its slot).
    fn remove(&mut self, i: usize) {
        if i + 1 == self.entries.len() {
            let (id1, t, _) = self.entries[i];
            self.index.remove(&(id1, t));
            self.entries.pop();
        } else {
            self.entries.swap_remove(i);
        }
    }
    /// Caches a list that came back full, unless the index has it; when
    /// full, over a random entry.
    fn add(&mut self, rng: &mut Rng, e: (u64, u64, u64)) {
        if !self.index.insert((e.0, e.1)) {
            return;
        }
        if self.entries.len() < Self::LIMIT {
            self.entries.push(e);
            return;
        }
        let i = rng.below(self.entries.len() as u64) as usize;
        if i + 1 == self.entries.len() {
            let (id1, t, _) = self.entries[i];
            self.index.remove(&(id1, t));
        }
        self.entries[i] = e;
    }
}

#[cfg(test)]
mod tests {
    use super::TailCache;
    use crate::rng::Rng;

    #[test]
    fn the_tail_cache_forgets_a_list_only_from_its_last_slot() {
        let mut r = Rng::new(1);
        let mut c = TailCache::default();
        c.add(&mut r, (1, 7, 100));
        c.add(&mut r, (2, 7, 200));
        c.add(&mut r, (1, 7, 50)); // known: kept as it was
        assert_eq!((c.len(), c.get(0)), (2, (1, 7, 100)));
        // (1, 7) leaves from the first slot: (2, 7) moves there, and
        // (1, 7) stays in the index, so it is not cached again.
        c.remove(0);
        assert_eq!((c.len(), c.get(0)), (1, (2, 7, 200)));
        c.add(&mut r, (1, 7, 90));
        assert_eq!(c.len(), 1);
        // (2, 7) leaves from the last slot: forgotten, cached again.
        c.remove(0);
        assert!(c.is_empty());
        c.add(&mut r, (2, 7, 150));
        assert_eq!((c.len(), c.get(0)), (1, (2, 7, 150)));
        c.update(0, 120);
        assert_eq!(c.get(0), (2, 7, 120));
        // Full: a new list takes a random slot.
        for id in 10..10 + TailCache::LIMIT as u64 {
            c.add(&mut r, (id, 7, 1));
        }
        assert_eq!(c.len(), TailCache::LIMIT);
        assert!(
            c.entries
                .iter()
                .any(|e| e.0 == 10 + TailCache::LIMIT as u64 - 1)
        );
    }
}
