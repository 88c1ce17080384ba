//! What the medium holds under a volatile write cache, so a power cut can
//! be played: before a write makes a clean block dirty, the block's
//! content (the medium's) is kept in a pool made when the server starts;
//! at the cut, every block still dirty gets its kept content back in the
//! host file, which is then exactly what the medium held. Blocks that
//! became clean (destaged) free their slots.
//!
//! Nothing here allocates after [`Shadow::new`]: the pool, the map and
//! the free list are made at their largest (the cache's blocks plus what
//! the IOs in flight can add).

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

use super::model::{BLOCK, IN_FLIGHT_BLOCKS, Model};

/// The kept contents of the blocks dirty in a volatile cache.
pub struct Shadow {
    pool: Vec<u8>,
    slots: HashMap<u64, u32>,
    free: Vec<u32>,
    /// Blocks made dirty when the pool was full, so their old content was
    /// not kept (a cut cannot drop their writes exactly; reported).
    pub unkept: u64,
}

impl Shadow {
    /// A pool for a cache of `cache_bytes`.
    pub fn new(cache_bytes: u64) -> Shadow {
        let n = (cache_bytes / BLOCK) as usize + IN_FLIGHT_BLOCKS + 256;
        Shadow {
            // Zeroed pages the kernel maps on first touch.
            pool: vec![0; n * BLOCK as usize],
            slots: HashMap::with_capacity(n),
            free: (0..n as u32).rev().collect(),
            unkept: 0,
        }
    }

    /// Before a write of `len` bytes at `offset` (under the model's lock,
    /// the model settled to the write's time): keeps the content of each
    /// block the write makes dirty.
    pub fn before_write(&mut self, m: &Model, file: &File, size: u64, offset: u64, len: u64) {
        for b in offset / BLOCK..(offset + len).div_ceil(BLOCK) {
            if m.is_dirty(b) {
                continue;
            }
            // A slot left from an earlier dirty spell is stale: reuse it.
            let slot = match self.slots.get(&b) {
                Some(s) => *s,
                None => match self.take(m) {
                    Some(s) => {
                        self.slots.insert(b, s);
                        s
                    }
                    None => {
                        self.unkept += 1;
                        continue;
                    }
                },
            };
            let at = slot as usize * BLOCK as usize;
            let buf = &mut self.pool[at..at + BLOCK as usize];
            let want = BLOCK.min(size.saturating_sub(b * BLOCK)) as usize;
            buf.fill(0);
            // A block past the file's end, or a read error, keeps zeros:
            // the write itself would fail the same way.
            let _ = file.read_exact_at(&mut buf[..want], b * BLOCK);
        }
    }

    /// The blocks a destage took to the medium while a later write keeps
    /// them dirty ([`Model::refresh`]): the medium now holds what the
    /// file holds for them, so that is the content a cut gives back.
    pub fn refresh(&mut self, m: &mut Model, file: &File, size: u64) {
        for b in m.refresh.drain(..) {
            if let Some(s) = self.slots.get(&b) {
                let at = *s as usize * BLOCK as usize;
                let buf = &mut self.pool[at..at + BLOCK as usize];
                let want = BLOCK.min(size.saturating_sub(b * BLOCK)) as usize;
                buf.fill(0);
                let _ = file.read_exact_at(&mut buf[..want], b * BLOCK);
            }
        }
    }

    /// A free slot, sweeping out the blocks no longer dirty when none is.
    fn take(&mut self, m: &Model) -> Option<u32> {
        if self.free.is_empty() {
            let free = &mut self.free;
            self.slots.retain(|b, s| {
                let keep = m.is_dirty(*b);
                if !keep {
                    free.push(*s);
                }
                keep
            });
        }
        self.free.pop()
    }

    /// The power cut (the model settled to the cut's time): every block
    /// still dirty gets the medium's content back. Returns the blocks
    /// whose writes were dropped.
    /// Every block is tried; the first error is returned after.
    pub fn cut(&mut self, m: &Model, file: &File, size: u64) -> std::io::Result<u64> {
        let mut dropped = 0;
        let mut first_err = None;
        for (b, s) in &self.slots {
            if !m.is_dirty(*b) {
                continue;
            }
            let at = *s as usize * BLOCK as usize;
            let len = BLOCK.min(size.saturating_sub(b * BLOCK)) as usize;
            match file.write_all_at(&self.pool[at..at + len], b * BLOCK) {
                Ok(()) => dropped += 1,
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        self.clear();
        match first_err {
            Some(e) => Err(e),
            None => Ok(dropped),
        }
    }

    /// Forgets every kept block (the cache starts empty).
    pub fn clear(&mut self) {
        let free = &mut self.free;
        for (_, s) in self.slots.drain() {
            free.push(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devmodel::model::{Op, Params, Service, WriteCache};

    fn volatile() -> Params {
        Params {
            units: 1,
            stripe: 64 << 10,
            read: Service {
                mean_us: 100.0,
                sigma: 0.0,
            },
            write: Service {
                mean_us: 100.0,
                sigma: 0.0,
            },
            seq_us: 10.0,
            unit_mbps: 100.0,
            iops: 1000.0,
            mbps: 100.0,
            flush_us: 0.0,
            cache: Some(WriteCache {
                bytes: 1 << 20,
                destage_iops: 100.0,
                destage_mbps: 100.0,
                battery: false,
                hit_us: 10.0,
                delay_us: 0.0,
            }),
            path_us: 0.0,
            ..Params::transparent()
        }
    }

    /// A write as the server does it: keep, then write, then the model.
    fn write(m: &mut Model, s: &mut Shadow, f: &File, t: u64, off: u64, byte: u8, len: usize) {
        m.settle(t);
        s.refresh(m, f, 1 << 20);
        s.before_write(m, f, 1 << 20, off, len as u64);
        f.write_all_at(&vec![byte; len], off).unwrap();
        m.submit(t, Op::Write, off, len as u64);
        s.refresh(m, f, 1 << 20);
    }

    /// A cut at `t`, as the server does it.
    fn cut(m: &mut Model, s: &mut Shadow, f: &File, t: u64) -> u64 {
        m.settle(t);
        s.refresh(m, f, 1 << 20);
        s.cut(m, f, 1 << 20).unwrap()
    }

    fn block(f: &File, b: u64) -> Vec<u8> {
        let mut v = vec![0; BLOCK as usize];
        f.read_exact_at(&mut v, b * BLOCK).unwrap();
        v
    }

    #[test]
    fn a_cut_drops_exactly_the_writes_not_yet_destaged_or_flushed() {
        let f = tempfile::tempfile().unwrap();
        f.set_len(1 << 20).unwrap();
        let mut m = Model::new(volatile(), 1);
        m.track_refresh();
        let mut s = Shadow::new(1 << 20);
        let ms = 1_000_000;
        // Block 0 written, then a flush: durable.
        write(&mut m, &mut s, &f, ms, 0, 1, 4096);
        let flushed = m.submit(2 * ms, Op::Flush, 0, 0).at;
        // Block 0 written again and blocks 5-6 written, right after the
        // flush: at 100 destages/s each takes 10 ms, so a cut 1 ms later
        // drops both.
        write(&mut m, &mut s, &f, flushed, 0, 2, 4096);
        write(&mut m, &mut s, &f, flushed, 5 * 4096, 3, 8192);
        // Partly overwritten while dirty: the old content kept is still
        // the medium's (zeros), not the first write's.
        write(&mut m, &mut s, &f, flushed + 1, 5 * 4096, 4, 100);
        let dropped = cut(&mut m, &mut s, &f, flushed + ms);
        assert_eq!(dropped, 3);
        assert!(block(&f, 0).iter().all(|&b| b == 1), "block 0 as flushed");
        assert!(block(&f, 5).iter().all(|&b| b == 0));
        assert!(block(&f, 6).iter().all(|&b| b == 0));
        assert_eq!(s.unkept, 0);
    }

    #[test]
    fn destaged_writes_survive_a_cut_and_free_their_slots() {
        let f = tempfile::tempfile().unwrap();
        f.set_len(1 << 20).unwrap();
        let mut m = Model::new(volatile(), 1);
        m.track_refresh();
        let mut s = Shadow::new(1 << 20);
        write(&mut m, &mut s, &f, 0, 8 * 4096, 7, 4096);
        // 10 ms per destage: a cut after a second drops nothing.
        assert_eq!(cut(&mut m, &mut s, &f, 1_000_000_000), 0);
        assert!(block(&f, 8).iter().all(|&b| b == 7));
        // Every slot is free again.
        assert_eq!(s.free.len(), s.pool.len() / BLOCK as usize);
    }

    /// A flushed write to blocks 0-1, then (before the flush returns) a
    /// write to blocks 1-2 that the cache holds for its delay: the flush
    /// took block 1 to the medium, so a cut must not give it back its
    /// content from before the first write.
    #[test]
    fn a_block_a_flush_destaged_keeps_its_flushed_content_when_rewritten() {
        let f = tempfile::tempfile().unwrap();
        f.set_len(1 << 20).unwrap();
        let mut p = volatile();
        if let Some(c) = p.cache.as_mut() {
            c.delay_us = 100_000.0;
        }
        let mut m = Model::new(p, 1);
        m.track_refresh();
        let mut s = Shadow::new(1 << 20);
        let ms = 1_000_000;
        write(&mut m, &mut s, &f, 0, 0, 1, 8192);
        let flushed = m.submit(ms, Op::Flush, 0, 0).at;
        write(&mut m, &mut s, &f, 2 * ms, 4096, 2, 8192);
        // The flush returned; the second write is held 100 ms.
        assert_eq!(cut(&mut m, &mut s, &f, flushed + ms), 2);
        assert!(block(&f, 0).iter().all(|&b| b == 1), "flushed");
        assert!(
            block(&f, 1).iter().all(|&b| b != 0),
            "flushed, then rewritten"
        );
        assert!(block(&f, 2).iter().all(|&b| b == 0), "never flushed");
    }
}
