//! The load and index steps' workers.

use std::sync::atomic::Ordering;

use anyhow::Result;

use super::payload::Motif;
use super::store::{self, LINK_TYPE_BASE, Link, LinkStore, NODE_TYPE, Node};
use super::{CHUNK, LinkOp, Linkbench, dist, now_ms};
use crate::driver::{Done, Worker};
use crate::rng::Rng;

/// Loader: thread 0 loads nodes, the others links and counts.
pub(super) struct Loader<'a> {
    pub(super) wl: &'a Linkbench,
    pub(super) store: Box<dyn LinkStore + 'a>,
    pub(super) rng: Rng,
    pub(super) nodes: Option<u64>,
    /// This client's part of the load: its first chunk (chunks below it
    /// are other clients') and the end of its node ids.
    pub(super) span: (u64, u64),
    pub(super) motif: Motif,
    /// Links generated and not yet written: the first `used`. The slots
    /// (and their payload buffers) are reused from batch to batch.
    pub(super) links: Vec<Link>,
    pub(super) used: usize,
    /// A batch of nodes, reused the same way.
    pub(super) node_buf: Vec<Node>,
    pub(super) counts: Vec<store::Count>,
}

/// A reusable slot: the existing one at `i`, or a new one pushed.
fn slot<T>(v: &mut Vec<T>, i: usize, new: impl FnOnce() -> T) -> &mut T {
    if i == v.len() {
        v.push(new());
    }
    &mut v[i]
}

fn empty_link() -> Link {
    Link {
        id1: 0,
        link_type: 0,
        id2: 0,
        visible: true,
        data: Vec::new(),
        time: 0,
        version: 0,
    }
}

impl Loader<'_> {
    fn flush_links(&mut self) -> Result<u64> {
        let mut w = 0;
        if self.used > 0 {
            let links = &self.links[..self.used];
            self.store.load_links(links)?;
            w += links.iter().map(|l| 37 + l.data.len() as u64).sum::<u64>();
            self.wl
                .links_loaded
                .fetch_add(links.len() as u64, Ordering::Relaxed);
            self.used = 0;
        }
        Ok(w)
    }
    fn flush_counts(&mut self) -> Result<u64> {
        let n = self.counts.len() as u64;
        if n > 0 {
            self.store.load_counts(&self.counts)?;
            self.counts.clear();
            self.wl.counts_loaded.fetch_add(n, Ordering::Relaxed);
        }
        Ok(n * 40)
    }
}

impl Worker for Loader<'_> {
    // Long: the loader's operation: a batch of nodes, else one chunk of links
    // with their counts (taken in reverse, as the reference queues them), else
    // the last flush; the branches share the worker's buffers and generator.
    fn op(&mut self) -> Result<Option<Done>> {
        let wl = self.wl;
        if let Some(next) = self.nodes {
            let end = self.span.1;
            if next >= end {
                return Ok(None);
            }
            let to = (next + 1024).min(end);
            let now_s = (now_ms() / 1000) as u32;
            let count = (to - next) as usize;
            for (i, id) in (next..to).enumerate() {
                let len = dist::lognormal_len(&mut self.rng, wl.node_median, 1 << 20);
                let n = slot(&mut self.node_buf, i, || Node {
                    id: 0,
                    node_type: NODE_TYPE,
                    version: 1,
                    time: 0,
                    data: Vec::new(),
                });
                n.id = id;
                n.time = now_s;
                self.motif.fill_into(&mut self.rng, len, &mut n.data);
            }
            let nodes = &self.node_buf[..count];
            self.store.load_nodes(nodes)?;
            let written: u64 = nodes.iter().map(|n| 24 + n.data.len() as u64).sum();
            wl.nodes_loaded
                .fetch_add(nodes.len() as u64, Ordering::Relaxed);
            wl.logical.fetch_add(written, Ordering::Relaxed);
            self.nodes = Some(to);
            return Ok(Some(Done {
                kind: LinkOp::LoadNodesBulk.index(),
                ops: nodes.len() as u64,
                written,
            }));
        }
        // Chunks are taken in reverse order, as the reference queues them.
        let lo = self.span.0;
        let c = wl
            .next_chunk
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |c| {
                c.checked_sub(1).filter(|_| c > lo)
            });
        let Ok(c) = c else {
            let w = self.flush_links()? + self.flush_counts()?;
            if w == 0 {
                return Ok(None);
            }
            wl.logical.fetch_add(w, Ordering::Relaxed);
            return Ok(Some(Done {
                kind: LinkOp::LoadLinksBulk.index(),
                ops: 0,
                written: w,
            }));
        };
        let c = c - 1;
        let first = wl.start + c * CHUNK;
        let last = (first + CHUNK).min(wl.start + wl.n);
        let mut written = 0;
        for id1 in first..last {
            for k in 0..wl.types {
                let n = wl.degrees.of_type(id1, k, wl.types);
                let link_type = LINK_TYPE_BASE + k;
                let mut max_time = 0;
                for j in 0..n {
                    let time = past_time(&mut self.rng, now_ms());
                    max_time = max_time.max(time);
                    let len = dist::lognormal_len(&mut self.rng, wl.link_median, 254);
                    let l = slot(&mut self.links, self.used, empty_link);
                    l.id1 = id1;
                    l.link_type = link_type;
                    l.id2 = id1 + j;
                    l.time = time;
                    self.motif.fill_into(&mut self.rng, len, &mut l.data);
                    self.used += 1;
                    if self.used >= 1024 {
                        written += self.flush_links()?;
                    }
                }
                if n > 0 {
                    self.counts.push(store::Count {
                        id1,
                        link_type,
                        count: n,
                        time: max_time,
                        version: 0,
                    });
                    if self.counts.len() >= 1024 {
                        written += self.flush_counts()?;
                    }
                }
            }
        }
        wl.logical.fetch_add(written, Ordering::Relaxed);
        Ok(Some(Done {
            kind: LinkOp::LoadLinksBulk.index(),
            ops: 0,
            written,
        }))
    }
}

/// A loaded link's time: uniform over the 2³² ms (≈ 49.7 days) before
/// `now_ms` (`chooseInitialTimestamp`: now − 2³¹ + a signed 32-bit draw),
/// so time is not correlated with id2 and no link is dated in the future.
pub(super) fn past_time(r: &mut Rng, now_ms: u64) -> u64 {
    now_ms.saturating_sub(1 << 32) + r.below(1 << 32)
}

/// The index step: one call that builds id1_type.
pub(super) struct Indexer<'a> {
    pub(super) store: Box<dyn LinkStore + 'a>,
    pub(super) done: bool,
}

impl Worker for Indexer<'_> {
    fn op(&mut self) -> Result<Option<Done>> {
        if self.done {
            return Ok(None);
        }
        self.done = true;
        let n = self.store.build_index()?;
        Ok(Some(Done {
            kind: LinkOp::CreateIndex.index(),
            ops: n,
            written: 0,
        }))
    }
}
