//! What a storage class's device does with each IO, on a clock of its own
//! (nanoseconds), so one piece of code serves both the FUSE server (the
//! real clock) and the unit tests (a simulated one).
//!
//! - **Units.** An IO goes to one parallel unit (a spindle, a flash
//!   channel), chosen by its stripe: `(offset / stripe) % units`, as RAID 0
//!   lays chunks out. A unit serves one IO at a time. A random IO costs a
//!   positioning time drawn from the class's distribution (lognormal with
//!   the class's mean); an IO that starts where the unit's last one ended
//!   costs only a command overhead. Both then pay the transfer at the
//!   unit's rate.
//! - **One budget.** Reads and writes draw on one IOPS budget and one
//!   bandwidth budget (a GCRA token bucket each, with a burst of one IO
//!   per unit): at depth a device gives its budget whatever the mix.
//! - **A write cache** (optional). A write lands in the cache and
//!   completes at the cache's hit time. The cache destages its writes in
//!   the order they came, at the destage rate; each destaged write is then
//!   charged to the shared budget, so write-back takes capacity from
//!   reads. A write to blocks already dirty is absorbed. When the cache is
//!   full a write waits for room. A flush returns at once with a
//!   battery-backed cache; with a volatile one it waits for every write
//!   before it to reach the medium, then pays the medium's flush time.
//!   A read of blocks dirty in the cache is served from it.
//!
//! The model holds every figure it needs in memory allocated when it is
//! made: nothing on the IO path allocates (the server's threads must not
//! wait on reclaim, which may be waiting on this device).

use std::collections::{HashMap, VecDeque};

pub use super::params::{Params, Service, WriteCache};
use super::physics::{self, Streams};
use crate::rng::Rng;

pub use super::params::Nanos;

/// The cache's block: the unit of "already dirty".
pub const BLOCK: u64 = 4096;

/// Blocks the IOs in flight can add beyond a full cache (the server's 64
/// threads with 1 MiB each): the cache's maps are made this much larger,
/// so they never grow on the IO path.
pub const IN_FLIGHT_BLOCKS: usize = 64 * 256;

/// What an IO is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// A read of `len` bytes at `offset`.
    Read,
    /// A write.
    Write,
    /// A cache flush (fsync).
    Flush,
}

/// When an IO completes, and why then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done {
    /// Completion time (the path's own time taken off).
    pub at: Nanos,
    /// The device's own latency as the model has it (before the path's
    /// time is taken off): what the device figures record.
    pub own: Nanos,
    /// It waited for the shared budget (or, a write, for room in the cache).
    pub waited: bool,
    /// Served by the write cache without the medium.
    pub cached: bool,
    /// A write whose every block was already dirty in the cache: it adds
    /// nothing to destage.
    pub absorbed: bool,
    /// A read the cache served (every block dirty in it).
    pub cache_read: bool,
}

impl Done {
    fn new(at: Nanos, waited: bool, cached: bool) -> Done {
        Done {
            at,
            own: 0,
            waited,
            cached,
            absorbed: false,
            cache_read: false,
        }
    }
}

/// One write waiting in the cache.
#[derive(Clone, Copy, Debug)]
struct Dirty {
    first: u64,
    blocks: u64,
    len: u64,
    /// What its destage takes from the IOPS budget, ns (0 when it
    /// continues a stream or joins dirty blocks: bandwidth only).
    ci: Nanos,
    /// It joined dirty blocks beside it: it reaches the medium within
    /// their IO, not as one of its own.
    merged: bool,
    /// When it reaches the medium.
    done: Nanos,
    /// When it would, destaged at once (the cache's own pace, no delay).
    eager: Nanos,
    /// Bytes pushed into the cache up to and including this one.
    cum: u64,
}

struct Cache {
    p: WriteCache,
    ring: VecDeque<Dirty>,
    /// Dirty block → how many queued writes cover it.
    blocks: HashMap<u64, u32>,
    /// Bytes destaged so far (compared with `cum`).
    popped: u64,
    /// Bytes pushed so far.
    pushed: u64,
    /// When the last queued write reaches the medium.
    tail: Nanos,
    /// The write streams it follows (a write continuing one destages at
    /// bandwidth only).
    streams: Streams,
    /// Queued writes that cost a random IO at destage (the depth a
    /// controller sorts by address).
    random: usize,
}

/// The most IOs a unit's queue counts (deeper queues gain nothing more
/// that the model tells apart, and the list never grows).
const UNIT_QUEUE: usize = 64;

/// A unit's state.
#[derive(Clone, Debug)]
struct Unit {
    free_at: Nanos,
    head: u64,
    /// When the IOs given to it finish: those after an arrival are its
    /// queue then.
    ends: Vec<Nanos>,
}

impl Unit {
    /// The IOs queued at `t` (the one arriving counted), the finished
    /// ones forgotten.
    fn depth(&mut self, t: Nanos) -> usize {
        self.ends.retain(|&e| e > t);
        self.ends.len() + 1
    }

    fn queue(&mut self, end: Nanos) {
        // Ends come in order (a unit serves one IO after another): when
        // full, the first to finish makes room.
        if self.ends.len() == UNIT_QUEUE {
            self.ends.remove(0);
        }
        self.ends.push(end);
    }
}

/// The device model.
pub struct Model {
    p: Params,
    units: Vec<Unit>,
    iops_tat: Nanos,
    bw_tat: Nanos,
    rng: Rng,
    cache: Option<Cache>,
    last: Nanos,
    /// IOs the medium served: reads, writes (destaged ones included).
    pub medium_reads: u64,
    /// Write IOs at the medium (destaged ones included; a write merged
    /// with dirty blocks beside it goes within their IO).
    pub medium_writes: u64,
    /// Dirty bytes in the cache integrated over time, byte·ns (the
    /// value at each IO held until the next).
    pub dirty_byte_ns: u128,
    /// What garbage collection multiplies a random write by.
    gc: f64,
    /// Blocks a destage took to the medium that stay in the cache for a
    /// later write (kept only with [`Model::track_refresh`]): the medium
    /// now holds their content as of the destage, so a power cut must
    /// not take them back further (see `medium.rs`).
    pub refresh: Vec<u64>,
    track: bool,
}

fn ns(secs: f64) -> Nanos {
    (secs * 1e9).round() as Nanos
}

impl Model {
    /// A model of `p`, its draws seeded by `seed`.
    pub fn new(p: Params, seed: u64) -> Model {
        let cache = p.cache.map(|c| {
            let slots = (c.bytes / BLOCK).max(16) as usize + IN_FLIGHT_BLOCKS;
            Cache {
                p: c,
                ring: VecDeque::with_capacity(slots),
                blocks: HashMap::with_capacity(slots * 2),
                popped: 0,
                pushed: 0,
                tail: 0,
                streams: Streams::default(),
                random: 0,
            }
        });
        Model {
            units: (0..p.units.max(1))
                .map(|_| Unit {
                    free_at: 0,
                    head: u64::MAX,
                    ends: Vec::with_capacity(UNIT_QUEUE),
                })
                .collect(),
            p,
            iops_tat: 0,
            bw_tat: 0,
            rng: Rng::new(seed),
            cache,
            last: 0,
            medium_reads: 0,
            medium_writes: 0,
            dirty_byte_ns: 0,
            gc: p.gc_amp(),
            refresh: Vec::new(),
            track: false,
        }
    }

    /// The parameters.
    pub fn params(&self) -> &Params {
        &self.p
    }

    /// Bytes waiting in the write cache at the last IO.
    pub fn dirty_bytes(&self) -> u64 {
        self.cache.as_ref().map_or(0, |c| c.pushed - c.popped)
    }

    /// The writes still in a volatile cache, as (offset, length): what a
    /// power cut at the last IO's time loses. Empty with no cache or a
    /// battery-backed one.
    pub fn volatile_writes(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.cache
            .iter()
            .filter(|c| !c.p.battery)
            .flat_map(|c| c.ring.iter().map(|d| (d.first * BLOCK, d.blocks * BLOCK)))
    }

    /// Keeps [`Model::refresh`] from now on (the server keeping the
    /// medium's content; room made now, so the IO path does not grow it
    /// in the common case).
    pub fn track_refresh(&mut self) {
        self.track = true;
        self.refresh = Vec::with_capacity(IN_FLIGHT_BLOCKS);
    }

    /// Brings the cache up to `t` (what reached the medium by then leaves
    /// it), as an IO arriving at `t` would.
    pub fn settle(&mut self, t: Nanos) {
        let t = t.max(self.last);
        self.advance(t);
        self.destage_until(t);
    }

    /// Moves the model's clock to `t`, adding the dirty bytes held since
    /// the last IO to their integral.
    fn advance(&mut self, t: Nanos) {
        let held = u128::from(t.saturating_sub(self.last));
        self.dirty_byte_ns += u128::from(self.dirty_bytes()) * held;
        self.last = t;
    }

    /// True when block `b` (of [`BLOCK`] bytes) is in the write cache, not
    /// yet on the medium.
    pub fn is_dirty(&self, b: u64) -> bool {
        self.cache
            .as_ref()
            .is_some_and(|c| c.blocks.contains_key(&b))
    }

    /// An IO arriving at `t`: when it completes. Times that go backwards
    /// (threads racing to the model's lock) count as the latest seen.
    pub fn submit(&mut self, t: Nanos, op: Op, offset: u64, len: u64) -> Done {
        let t = t.max(self.last);
        let mut d = self.submit_at(t, op, offset, len);
        d.own = d.at.saturating_sub(t);
        d.at = d.at.saturating_sub(ns(self.p.path_us * 1e-6)).max(t);
        d
    }

    fn submit_at(&mut self, t: Nanos, op: Op, offset: u64, len: u64) -> Done {
        self.advance(t);
        self.destage_until(t);
        let hit = |c: &Cache| t.saturating_add(ns(c.p.hit_us * 1e-6));
        match op {
            Op::Read => {
                if let Some(c) = &self.cache {
                    if len > 0 && c.all_dirty(offset, len) {
                        let mut d = Done::new(hit(c), false, true);
                        d.cache_read = true;
                        return d;
                    }
                }
                self.medium(t, Op::Read, offset, len)
            }
            Op::Write => self.cache_write(t, offset, len),
            Op::Flush => {
                let flush = ns(self.p.flush_us * 1e-6);
                match &self.cache {
                    None => Done::new(t.saturating_add(flush), false, false),
                    Some(c) if c.p.battery => Done::new(hit(c), false, true),
                    // Waiting for the medium is a flush's work, not a
                    // wait for budget or room. A flush sends every write
                    // it covers at the cache's own pace, not after its
                    // delay.
                    Some(c) => {
                        let at = c.tail.max(t).saturating_add(flush);
                        if let Some(c) = self.cache.as_mut() {
                            for d in c.ring.iter_mut() {
                                d.done = d.done.min(d.eager);
                            }
                        }
                        Done::new(at, false, false)
                    }
                }
            }
        }
    }

    /// An IO at the medium: budget, then its units. An IO over several
    /// stripe chunks is split, each piece served by its chunk's unit; it
    /// completes with its last piece.
    fn medium(&mut self, t: Nanos, op: Op, offset: u64, len: u64) -> Done {
        // RAID 0: chunk k is on unit k % n, at chunk k / n of that unit.
        let (n, stripe) = (self.units.len() as u64, self.p.stripe.max(1));
        let end = offset + len.max(1);
        let piece = |c: u64| {
            let (lo, hi) = (offset.max(c * stripe), end.min((c + 1) * stripe));
            let local = c / n * stripe + lo % stripe;
            ((c % n) as usize, local, hi - lo)
        };
        let chunks = offset / stripe..=(end - 1) / stripe;
        let seq = chunks.clone().all(|c| {
            let (u, local, _) = piece(c);
            self.units[u].head == local
        });
        let amp = if op == Op::Write { self.gc } else { 1.0 };
        let start = self.charge(t, len, seq, amp);
        let mut done = start;
        for c in chunks {
            let (ui, local, plen) = piece(c);
            let depth = self.units[ui].depth(start);
            let pos = if self.units[ui].head == local {
                ns(self.p.seq_us * 1e-6)
            } else {
                // A unit that reorders its queue positions faster at
                // depth; a flash write at steady state pays its garbage
                // collection.
                let (draw, amp) = if op == Op::Read {
                    (self.p.read.draw(&mut self.rng), 1.0)
                } else {
                    (self.p.write.draw(&mut self.rng), self.gc)
                };
                (draw as f64 * physics::queue_factor(self.p.queueing, depth) * amp) as Nanos
            };
            let u = &mut self.units[ui];
            let d = start
                .max(u.free_at)
                .saturating_add(pos)
                .saturating_add(ns(plen as f64 / (self.p.unit_mbps * 1e6)));
            u.free_at = d;
            u.head = local + plen;
            u.queue(d);
            done = done.max(d);
        }
        if op == Op::Read {
            self.medium_reads += 1;
        } else {
            self.medium_writes += 1;
        }
        Done::new(done, start > t, false)
    }

    /// Takes one IO of `len` bytes from the budget at `t`: when it may
    /// start. The IOPS budget is what positioning costs: a sequential IO
    /// pays the bandwidth budget only; a random write at a flash device
    /// at steady state pays `amp` IOs (garbage collection's).
    fn charge(&mut self, t: Nanos, len: u64, seq: bool, amp: f64) -> Nanos {
        let ci = if seq { 0 } else { ns(amp / self.p.iops) };
        let cb = ns(len as f64 / (self.p.mbps * 1e6));
        // A burst of one IO per unit: of 4 KiB for the bandwidth budget.
        let burst = self.units.len() as u64;
        let start = t
            .max(
                self.iops_tat
                    .saturating_sub(ns(1.0 / self.p.iops).saturating_mul(burst)),
            )
            .max(
                self.bw_tat
                    .saturating_sub(ns(BLOCK as f64 / (self.p.mbps * 1e6)).saturating_mul(burst)),
            );
        // Each budget is taken from when the IO may start (a shaper, not
        // a policer): a wait on one budget is no credit on the other.
        self.iops_tat = self.iops_tat.max(start).saturating_add(ci);
        self.bw_tat = self.bw_tat.max(start).saturating_add(cb);
        start
    }

    /// Takes every cached write that reached the medium by `t` off the
    /// cache, charging each to the budget at its own time.
    fn destage_until(&mut self, t: Nanos) {
        let Some(c) = &mut self.cache else {
            return;
        };
        while let Some(d) = c.ring.front().copied().filter(|d| d.done <= t) {
            c.ring.pop_front();
            c.popped += d.len;
            if d.ci > 0 {
                c.random -= 1;
            }
            for b in d.first..d.first + d.blocks {
                if let Some(n) = c.blocks.get_mut(&b) {
                    *n -= 1;
                    if *n == 0 {
                        c.blocks.remove(&b);
                    } else if self.track {
                        self.refresh.push(b);
                    }
                }
            }
            if !d.merged {
                self.medium_writes += 1;
            }
            // Charged at its start on the medium; a write that continued
            // a stream or joined dirty blocks costs bandwidth only.
            let ci = d.ci;
            let cb = ns(d.len as f64 / (self.p.mbps * 1e6));
            let at = d.done.saturating_sub(ci.max(cb));
            self.iops_tat = self.iops_tat.max(at).saturating_add(ci);
            self.bw_tat = self.bw_tat.max(at).saturating_add(cb);
        }
    }

    // Long: the write cache's accept rule (hit, room by bytes, room by count,
    // destage), on the measured path of every write.
    fn cache_write(&mut self, t: Nanos, offset: u64, len: u64) -> Done {
        let Some(c) = &mut self.cache else {
            return self.medium(t, Op::Write, offset, len);
        };
        let hit = ns(c.p.hit_us * 1e-6);
        if len > 0 && c.all_dirty(offset, len) {
            let mut d = Done::new(t.saturating_add(hit), false, true);
            d.absorbed = true;
            return d;
        }
        // Room by bytes: the oldest writes leave until this one fits.
        let mut accept = t;
        let over = (c.pushed - c.popped + len).saturating_sub(c.p.bytes);
        if over > 0 {
            let target = c.popped + over;
            let i = c.ring.partition_point(|d| d.cum < target);
            // A full cache sends what must leave at its own pace.
            for d in c.ring.iter_mut().take(i + 1) {
                d.done = d.done.min(d.eager);
            }
            if let Some(d) = c.ring.get(i).or(c.ring.back()) {
                accept = accept.max(d.done);
            }
        }
        // Room by count (the ring was sized for 4 KiB writes; smaller
        // ones can fill it first): the oldest leaves, and is taken off
        // now so the ring never grows.
        if c.ring.len() == c.ring.capacity() {
            if let Some(d) = c.ring.front() {
                accept = accept.max(d.done);
            }
            self.destage_until(accept);
        }
        let Some(c) = &mut self.cache else {
            return self.medium(t, Op::Write, offset, len);
        };
        let (first, end) = (offset / BLOCK, (offset + len).div_ceil(BLOCK));
        // Destaged with what it continues: a recent stream, or dirty
        // blocks just before, under or after it (the controller merges
        // them into one IO). Otherwise a random IO: destaged faster the
        // more random writes wait (in address order across the units;
        // the depth is taken when the write arrives, so a burst into an
        // empty cache gains from its later writes only), taking one IO
        // from the budget (the budget is the array's at depth already),
        // and amplified by a flash device's garbage collection.
        let streamed = c.streams.write(offset, offset + len);
        let joins = (first.saturating_sub(1)..=end).any(|b| c.blocks.contains_key(&b));
        let seq = streamed || joins;
        let bw = len as f64 / (c.p.destage_mbps * 1e6);
        let units = self.p.units.max(1) as usize;
        let sort = physics::queue_factor(self.p.queueing, (c.random + 1).div_ceil(units));
        let cost = if seq {
            ns(bw)
        } else {
            ns(bw.max(sort * self.gc / c.p.destage_iops))
        };
        let ci = if seq {
            0
        } else {
            ns(self.gc / self.p.iops).max(1)
        };
        if !seq {
            c.random += 1;
        }
        let eager = c.tail.max(accept).saturating_add(cost);
        c.tail = eager;
        let done = eager.max(t.saturating_add(ns(c.p.delay_us * 1e-6)));
        c.pushed += len;
        for b in first..end {
            *c.blocks.entry(b).or_insert(0) += 1;
        }
        c.ring.push_back(Dirty {
            first,
            blocks: end - first,
            len,
            ci,
            merged: joins,
            done,
            eager,
            cum: c.pushed,
        });
        Done::new(accept.saturating_add(hit), accept > t, true)
    }
}

impl Cache {
    fn all_dirty(&self, offset: u64, len: u64) -> bool {
        (offset / BLOCK..(offset + len).div_ceil(BLOCK)).all(|b| self.blocks.contains_key(&b))
    }
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
