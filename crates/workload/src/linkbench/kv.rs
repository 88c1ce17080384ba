//! LinkBench on a key-value engine, mapped as MyRocks maps it: one table per
//! index, order-preserving big-endian keys.
//!
//! | table | key | value |
//! |---|---|---|
//! | `node` | id | type, version, time, data |
//! | `link` | link_type, id1, id2 (the primary key) | visibility, time, version, data |
//! | `link_id1_type` | id1, link_type, visibility, time, id2 | version, data (covering) |
//! | `count` | id1, link_type | count, time, version |
//!
//! GET_LINKS_LIST is a reverse scan of `link_id1_type` within (id1, type,
//! visible), newest first. A change of a link and its count is one engine
//! transaction (read for update, written, committed; retried when it loses
//! a conflict), so counts stay exact under concurrency with the engine's
//! own concurrency control, as on the SQL engines. An engine without
//! transactions (LevelDB) gets one atomic batch made under a harness lock
//! stripe per (id1, link_type) instead, and the run says so.

use std::collections::HashMap;
use std::ops::Bound;

use anyhow::{Result, anyhow};

use super::store::{Added, Check, Count, Link, LinkRef, LinkStore, Links, Node, Stripes};
use crate::engine::{
    Backoff, Durability, KeyRange, KvEngine, KvSession, Order, Table, Transactions, Txn,
    WriteBatch, is_conflict,
};

/// Table names, in [`Table`] order.
pub const TABLES: [&str; 4] = ["node", "link", "link_id1_type", "count"];
const NODE: Table = Table(0);
const LINK: Table = Table(1);
const INDEX: Table = Table(2);
const COUNT: Table = Table(3);

/// Appends each part as 8 big-endian bytes.
fn put_be(out: &mut Vec<u8>, parts: &[u64]) {
    for p in parts {
        out.extend_from_slice(&p.to_be_bytes());
    }
}

fn be(parts: &[u64]) -> Vec<u8> {
    let mut v = Vec::with_capacity(8 * parts.len());
    put_be(&mut v, parts);
    v
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .map_or(0, |s| u64::from_be_bytes(s.try_into().unwrap_or([0; 8])))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_be_bytes(s.try_into().unwrap_or([0; 4])))
}

/// Runs an encoder into a new vector (the request path; the load reuses
/// its buffers).
fn enc(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut v = Vec::new();
    f(&mut v);
    v
}

fn link_key_into(out: &mut Vec<u8>, link_type: u64, id1: u64, id2: u64) {
    out.clear();
    out.reserve(24);
    put_be(out, &[link_type, id1, id2]);
}

fn link_key(link_type: u64, id1: u64, id2: u64) -> Vec<u8> {
    enc(|o| link_key_into(o, link_type, id1, id2))
}

fn link_value_into(out: &mut Vec<u8>, l: &Link) {
    out.clear();
    out.reserve(13 + l.data.len());
    out.push(u8::from(l.visible));
    out.extend_from_slice(&l.time.to_be_bytes());
    out.extend_from_slice(&l.version.to_be_bytes());
    out.extend_from_slice(&l.data);
}

fn link_value(l: &Link) -> Vec<u8> {
    enc(|o| link_value_into(o, l))
}

fn decode_link(link_type: u64, id1: u64, id2: u64, v: &[u8]) -> Link {
    link_ref(link_type, id1, id2, v).to_link()
}

/// A link value, its payload borrowed from `v`.
fn link_ref(link_type: u64, id1: u64, id2: u64, v: &[u8]) -> LinkRef<'_> {
    LinkRef {
        id1,
        link_type,
        id2,
        visible: v.first() == Some(&1),
        time: u64_at(v, 1),
        version: u32_at(v, 9),
        data: v.get(13..).unwrap_or_default(),
    }
}

fn index_key_into(out: &mut Vec<u8>, id1: u64, link_type: u64, visible: bool, time: u64, id2: u64) {
    out.clear();
    out.reserve(33);
    put_be(out, &[id1, link_type]);
    out.push(u8::from(visible));
    put_be(out, &[time, id2]);
}

fn index_key(id1: u64, link_type: u64, visible: bool, time: u64, id2: u64) -> Vec<u8> {
    enc(|o| index_key_into(o, id1, link_type, visible, time, id2))
}

fn index_value_into(out: &mut Vec<u8>, l: &Link) {
    out.clear();
    out.reserve(4 + l.data.len());
    out.extend_from_slice(&l.version.to_be_bytes());
    out.extend_from_slice(&l.data);
}

fn index_value(l: &Link) -> Vec<u8> {
    enc(|o| index_value_into(o, l))
}

fn node_value_into(out: &mut Vec<u8>, n: &Node) {
    out.clear();
    out.reserve(16 + n.data.len());
    out.extend_from_slice(&n.node_type.to_be_bytes());
    out.extend_from_slice(&n.version.to_be_bytes());
    out.extend_from_slice(&n.time.to_be_bytes());
    out.extend_from_slice(&n.data);
}

fn node_value(n: &Node) -> Vec<u8> {
    enc(|o| node_value_into(o, n))
}

fn count_value(c: &Count) -> Vec<u8> {
    be(&[c.count, c.time, c.version])
}

/// How long a change may keep losing conflicts before it gives up (a
/// livelock, not contention: LinkBench's hottest pair is rarely changed by
/// two threads at once).
const GIVE_UP: std::time::Duration = std::time::Duration::from_secs(60);

/// Reads and writes inside one change: an engine transaction, or a batch
/// built under the harness's stripe lock.
trait Rw {
    fn get(&mut self, t: Table, key: &[u8]) -> Result<Option<Vec<u8>>>;
    fn put(&mut self, t: Table, key: &[u8], value: &[u8]) -> Result<()>;
    fn delete(&mut self, t: Table, key: &[u8]) -> Result<()>;
}

impl Rw for Txn<'_, '_> {
    fn get(&mut self, t: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Txn::get(self, t, key)
    }
    fn put(&mut self, t: Table, key: &[u8], value: &[u8]) -> Result<()> {
        Txn::put(self, t, key, value)
    }
    fn delete(&mut self, t: Table, key: &[u8]) -> Result<()> {
        Txn::delete(self, t, key)
    }
}

/// Reads from the session, writes into a batch applied at the end.
struct Batched<'s, 'a> {
    s: &'s mut (dyn KvSession + 'a),
    b: &'s mut WriteBatch,
}

impl Rw for Batched<'_, '_> {
    fn get(&mut self, t: Table, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.s.get(t, key)
    }
    fn put(&mut self, t: Table, key: &[u8], value: &[u8]) -> Result<()> {
        self.b.put(t, key, value);
        Ok(())
    }
    fn delete(&mut self, t: Table, key: &[u8]) -> Result<()> {
        self.b.delete(t, key);
        Ok(())
    }
}

fn count_row(rw: &mut dyn Rw, id1: u64, link_type: u64) -> Result<Option<Count>> {
    Ok(rw
        .get(COUNT, &be(&[id1, link_type]))?
        .map(|v| decode_count(id1, link_type, &v)))
}

fn decode_count(id1: u64, link_type: u64, v: &[u8]) -> Count {
    Count {
        id1,
        link_type,
        count: u64_at(v, 0),
        time: u64_at(v, 8),
        version: u64_at(v, 16),
    }
}

/// Adds `delta` to the count of (id1, link_type).
fn bump(rw: &mut dyn Rw, id1: u64, link_type: u64, delta: i64, now_ms: u64) -> Result<()> {
    let c = count_row(rw, id1, link_type)?;
    let (count, version) = c.map_or((0, 0), |c| (c.count, c.version + 1));
    let count = if delta >= 0 {
        count + delta as u64
    } else {
        count.saturating_sub((-delta) as u64)
    };
    rw.put(
        COUNT,
        &be(&[id1, link_type]),
        &count_value(&Count {
            id1,
            link_type,
            count,
            time: now_ms,
            version,
        }),
    )
}

/// LinkBench over a [`KvEngine`], through one worker's session.
///
/// A change of a link and its count is one engine transaction where the
/// engine has them (retried on conflict, retries counted), and one atomic
/// batch made under the (id1, link_type) lock stripe where it has none.
pub struct KvLinks<'a> {
    s: Box<dyn KvSession + 'a>,
    stripes: Option<&'a Stripes>,
    /// Whether writes maintain `link_id1_type` (false while loading into
    /// primary-key-only tables before the `index` step).
    pub with_index: bool,
    durability: Durability,
    retries: u64,
    /// Reused by the bulk loads and the harness-locked changes: a batch,
    /// and key and value buffers.
    batch: WriteBatch,
    k: Vec<u8>,
    v: Vec<u8>,
    /// The last link read's rows, and the last node read.
    links: Links,
    node: Node,
}

impl<'a> KvLinks<'a> {
    /// A store on a new session of `engine`; `stripes` (shared by every
    /// worker of the engine) are used only when it has no transactions.
    pub fn new(
        engine: &'a dyn KvEngine,
        stripes: &'a Stripes,
        with_index: bool,
        durability: Durability,
    ) -> Result<KvLinks<'a>> {
        Ok(KvLinks {
            s: engine.session()?,
            stripes: (engine.transactions() == Transactions::None).then_some(stripes),
            with_index,
            durability,
            retries: 0,
            batch: WriteBatch::new(),
            k: Vec::new(),
            v: Vec::new(),
            links: Links::with_room(),
            node: Node::default(),
        })
    }

    /// Runs `f`, a read-modify-write of (id1, link_type), atomically.
    fn change<R>(
        &mut self,
        id1: u64,
        link_type: u64,
        f: impl Fn(&mut dyn Rw) -> Result<R>,
    ) -> Result<R> {
        let d = self.durability;
        if let Some(stripes) = self.stripes {
            let (s, batch) = (&mut self.s, &mut self.batch);
            return stripes.with(id1, link_type, || {
                batch.clear();
                let mut b = Batched {
                    s: &mut **s,
                    b: batch,
                };
                let r = f(&mut b)?;
                if !b.b.is_empty() {
                    b.s.write(b.b, d)?;
                }
                Ok(r)
            });
        }
        let mut backoff = Backoff::new(GIVE_UP);
        loop {
            // The transaction ends (commits, or rolls back when dropped)
            // before any wait, so a loser never holds its updates asleep.
            let r = {
                let mut tx = self.s.begin(d)?;
                match f(&mut tx) {
                    Ok(v) => tx.commit().map(|()| v),
                    Err(e) => Err(e),
                }
            };
            match r {
                Err(e) if is_conflict(&e) => {
                    self.retries += 1;
                    backoff.wait(&format_args!("linkbench change of ({id1}, {link_type})"))?;
                }
                other => return other,
            }
        }
    }
}

impl LinkStore for KvLinks<'_> {
    fn add_link(&mut self, l: &Link) -> Result<Added> {
        self.change(l.id1, l.link_type, |rw| {
            let key = link_key(l.link_type, l.id1, l.id2);
            let old = rw
                .get(LINK, &key)?
                .map(|v| decode_link(l.link_type, l.id1, l.id2, &v));
            let mut new = l.clone();
            new.visible = true;
            rw.put(LINK, &key, &link_value(&new))?;
            if let Some(o) = &old {
                rw.delete(
                    INDEX,
                    &index_key(o.id1, o.link_type, o.visible, o.time, o.id2),
                )?;
            }
            rw.put(
                INDEX,
                &index_key(l.id1, l.link_type, true, l.time, l.id2),
                &index_value(&new),
            )?;
            let outcome = match &old {
                None => Added::New,
                Some(o) if o.visible => Added::Updated,
                Some(_) => Added::Revived,
            };
            if outcome != Added::Updated {
                bump(rw, l.id1, l.link_type, 1, l.time)?;
            }
            Ok(outcome)
        })
    }

    fn delete_link(&mut self, id1: u64, link_type: u64, id2: u64, now_ms: u64) -> Result<bool> {
        self.change(id1, link_type, |rw| {
            let key = link_key(link_type, id1, id2);
            let Some(old) = rw
                .get(LINK, &key)?
                .map(|v| decode_link(link_type, id1, id2, &v))
            else {
                return Ok(false);
            };
            if !old.visible {
                return Ok(false);
            }
            let mut hidden = old.clone();
            hidden.visible = false;
            rw.put(LINK, &key, &link_value(&hidden))?;
            rw.delete(INDEX, &index_key(id1, link_type, true, old.time, id2))?;
            rw.put(
                INDEX,
                &index_key(id1, link_type, false, old.time, id2),
                &index_value(&hidden),
            )?;
            bump(rw, id1, link_type, -1, now_ms)?;
            Ok(true)
        })
    }

    fn count_links(&mut self, id1: u64, link_type: u64) -> Result<u64> {
        Ok(self
            .s
            .get(COUNT, &be(&[id1, link_type]))?
            .map_or(0, |v| decode_count(id1, link_type, &v).count))
    }

    fn take_cost(&mut self) -> super::store::OpCost {
        super::store::OpCost {
            retries: std::mem::take(&mut self.retries),
            ..Default::default()
        }
    }

    fn multiget_links(&mut self, id1: u64, link_type: u64, id2s: &[u64]) -> Result<&Links> {
        let out = &mut self.links;
        out.clear();
        for (i, id2) in id2s.iter().enumerate() {
            // `IN (…)` semantics: a repeated id2 is one row.
            if id2s[..i].contains(id2) {
                continue;
            }
            if let Some(v) = self.s.get(LINK, &link_key(link_type, id1, *id2))? {
                out.push(link_ref(link_type, id1, *id2, &v));
            }
        }
        Ok(out)
    }

    fn get_links_list(
        &mut self,
        id1: u64,
        link_type: u64,
        max_time: u64,
        offset: usize,
        limit: usize,
    ) -> Result<&Links> {
        let lo = index_key(id1, link_type, true, 0, 0);
        let hi = index_key(id1, link_type, true, max_time, u64::MAX);
        let range = KeyRange {
            start: Bound::Included(&lo),
            end: Bound::Included(&hi),
        };
        let out = &mut self.links;
        out.clear();
        let mut skipped = 0;
        self.s
            .scan(INDEX, range, Order::Reverse, offset + limit, &mut |k, v| {
                if skipped < offset {
                    skipped += 1;
                    return;
                }
                out.push(LinkRef {
                    id1,
                    link_type,
                    id2: u64_at(k, 25),
                    visible: true,
                    time: u64_at(k, 17),
                    version: u32_at(v, 0),
                    data: v.get(4..).unwrap_or_default(),
                });
            })?;
        Ok(out)
    }

    fn add_node(&mut self, n: &Node) -> Result<()> {
        self.s
            .put(NODE, &be(&[n.id]), &node_value(n), self.durability)
    }

    fn update_node(&mut self, n: &Node) -> Result<bool> {
        let k = be(&[n.id]);
        match self.s.get(NODE, &k)? {
            Some(v) if u32_at(&v, 0) == n.node_type => {
                self.s.put(NODE, &k, &node_value(n), self.durability)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn delete_node(&mut self, id: u64) -> Result<bool> {
        let k = be(&[id]);
        if self.s.get_len(NODE, &k)?.is_none() {
            return Ok(false);
        }
        self.s.delete(NODE, &k, self.durability)?;
        Ok(true)
    }

    fn get_node(&mut self, id: u64) -> Result<Option<&Node>> {
        let Some(v) = self.s.get(NODE, &be(&[id]))? else {
            return Ok(None);
        };
        let n = &mut self.node;
        n.id = id;
        n.node_type = u32_at(&v, 0);
        n.version = u64_at(&v, 4);
        n.time = u32_at(&v, 12);
        n.data.clear();
        n.data.extend_from_slice(v.get(16..).unwrap_or_default());
        Ok(Some(n))
    }

    fn load_nodes(&mut self, nodes: &[Node]) -> Result<()> {
        let (b, k, v) = (&mut self.batch, &mut self.k, &mut self.v);
        b.clear();
        for n in nodes {
            k.clear();
            put_be(k, &[n.id]);
            node_value_into(v, n);
            b.put(NODE, k, v);
        }
        self.s.write(b, Durability::NoSync)
    }

    fn load_links(&mut self, links: &[Link]) -> Result<()> {
        let (b, k, v) = (&mut self.batch, &mut self.k, &mut self.v);
        b.clear();
        for l in links {
            link_key_into(k, l.link_type, l.id1, l.id2);
            link_value_into(v, l);
            b.put(LINK, k, v);
            if self.with_index {
                index_key_into(k, l.id1, l.link_type, l.visible, l.time, l.id2);
                index_value_into(v, l);
                b.put(INDEX, k, v);
            }
        }
        self.s.write(b, Durability::NoSync)
    }

    fn load_counts(&mut self, counts: &[Count]) -> Result<()> {
        let (b, k, v) = (&mut self.batch, &mut self.k, &mut self.v);
        b.clear();
        for c in counts {
            k.clear();
            put_be(k, &[c.id1, c.link_type]);
            v.clear();
            put_be(v, &[c.count, c.time, c.version]);
            b.put(COUNT, k, v);
        }
        self.s.write(b, Durability::NoSync)
    }

    fn build_index(&mut self) -> Result<u64> {
        // Scan in chunks and write between them: a write while the scan's
        // cursor is open would pin its snapshot (LMDB could not reuse pages,
        // WiredTiger would keep every update's history).
        let mut n = 0u64;
        let mut after: Option<Vec<u8>> = None;
        loop {
            let mut b = WriteBatch::new();
            let mut last = None;
            let range = KeyRange {
                start: after.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
                end: Bound::Unbounded,
            };
            self.s
                .scan(LINK, range, Order::Forward, 4096, &mut |k, v| {
                    let l = decode_link(u64_at(k, 0), u64_at(k, 8), u64_at(k, 16), v);
                    b.put(
                        INDEX,
                        &index_key(l.id1, l.link_type, l.visible, l.time, l.id2),
                        &index_value(&l),
                    );
                    last = Some(k.to_vec());
                })?;
            if b.is_empty() {
                break;
            }
            n += b.len() as u64;
            self.s.write(&b, Durability::NoSync)?;
            after = last;
        }
        self.with_index = true;
        Ok(n)
    }

    fn check(&mut self) -> Result<Check> {
        let mut visible: HashMap<(u64, u64), u64> = HashMap::new();
        scan_all(&mut *self.s, LINK, &mut |k, v| {
            if v.first() == Some(&1) {
                *visible.entry((u64_at(k, 8), u64_at(k, 0))).or_default() += 1;
            }
        })?;
        let mut c = Check::default();
        scan_all(&mut *self.s, COUNT, &mut |k, v| {
            c.pairs += 1;
            if visible.remove(&(u64_at(k, 0), u64_at(k, 8))).unwrap_or(0) != u64_at(v, 0) {
                c.mismatches += 1;
            }
        })?;
        // Visible links whose pair has no count row.
        c.mismatches += visible.values().filter(|n| **n > 0).count() as u64;
        c.pairs += visible.len() as u64;
        Ok(c)
    }
}

/// Every row of `table`, in chunks, looking at Ctrl-C between them: the
/// consistency check reads whole tables, which takes minutes at scale.
fn scan_all(
    s: &mut dyn KvSession,
    table: Table,
    visit: &mut dyn FnMut(&[u8], &[u8]),
) -> Result<()> {
    const CHUNK: usize = 1 << 16;
    let mut last: Option<Vec<u8>> = None;
    loop {
        if crate::signals::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(anyhow!("linkbench: the consistency check was interrupted"));
        }
        let range = match &last {
            Some(k) => KeyRange {
                start: std::ops::Bound::Excluded(k.as_slice()),
                end: std::ops::Bound::Unbounded,
            },
            None => KeyRange::all(),
        };
        let mut next = None;
        let n = s.scan(table, range, Order::Forward, CHUNK, &mut |k, v| {
            visit(k, v);
            next = Some(k.to_vec());
        })?;
        if n < CHUNK || next.is_none() {
            return Ok(());
        }
        last = next;
    }
}

/// The engine's tables must be [`TABLES`], in that order.
pub fn check_tables(names: &[String]) -> Result<()> {
    if names.len() != TABLES.len() || names.iter().zip(TABLES).any(|(a, b)| a != b) {
        return Err(anyhow!(
            "linkbench: engine opened with tables {names:?}, expected {TABLES:?}"
        ));
    }
    Ok(())
}
