//! The crash check's transactions on a key-value engine: one atomic batch
//! per transaction over three tables, keys in big-endian so that one
//! writer's rows are one key range.

use std::ops::Bound;

use anyhow::{Result, bail};

use super::ledger::{Found, IDS, SLOTS};
use super::{Writer, pad};
use crate::engine::{Durability, KeyRange, KvEngine, KvSession, Order, Table, WriteBatch};

/// The tables, in [`crate::engine::OpenSpec::tables`] order.
pub const TABLES: [&str; 3] = ["cc_kv", "cc_link", "cc_count"];
const KV: Table = Table(0);
const LINK: Table = Table(1);
const COUNT: Table = Table(2);

fn prefix(round: u32, t: usize) -> Vec<u8> {
    let mut k = round.to_be_bytes().to_vec();
    k.extend_from_slice(&(t as u32).to_be_bytes());
    k
}

fn key(round: u32, t: usize, parts: &[u64]) -> Vec<u8> {
    let mut k = prefix(round, t);
    for p in parts {
        k.extend_from_slice(&p.to_be_bytes());
    }
    k
}

fn be(b: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(..8)?.try_into().ok()?))
}

/// One writer's session.
pub struct KvWriter<'a> {
    session: Box<dyn KvSession + 'a>,
    batch: WriteBatch,
    counts: [u64; IDS as usize],
    round: u32,
    t: usize,
    durability: Durability,
}

impl<'a> KvWriter<'a> {
    /// Writer `t` of `round` on its own session of `e`.
    pub fn new(e: &'a dyn KvEngine, round: u32, t: usize, d: Durability) -> Result<KvWriter<'a>> {
        Ok(KvWriter {
            session: e.session()?,
            batch: WriteBatch::new(),
            counts: [0; IDS as usize],
            round,
            t,
            durability: d,
        })
    }
}

impl Writer for KvWriter<'_> {
    fn txn(&mut self, n: u64) -> Result<()> {
        let (r, t) = (self.round, self.t);
        let id1 = n % IDS;
        let c = self.counts[id1 as usize] + 1;
        let mut value = n.to_be_bytes().to_vec();
        value.extend_from_slice(&pad(r, t, n));
        self.batch.clear();
        self.batch.put(KV, &key(r, t, &[n % SLOTS]), &value);
        self.batch.put(LINK, &key(r, t, &[id1, n]), &value);
        self.batch.put(COUNT, &key(r, t, &[id1]), &c.to_be_bytes());
        self.session.write(&self.batch, self.durability)?;
        self.counts[id1 as usize] = c;
        Ok(())
    }
}

/// Visits every row of writer `t` of `round` in `table`.
fn rows(
    s: &mut dyn KvSession,
    table: Table,
    round: u32,
    t: usize,
    visit: &mut dyn FnMut(&[u8], &[u8]),
) -> Result<()> {
    let lo = prefix(round, t);
    let hi = prefix(round, t + 1);
    let range = KeyRange {
        start: Bound::Included(&lo),
        end: Bound::Excluded(&hi),
    };
    s.scan(table, range, Order::Forward, usize::MAX, visit)?;
    Ok(())
}

/// Writer `t`'s rows of `round`, as found.
pub fn read(e: &dyn KvEngine, round: u32, t: usize) -> Result<Found> {
    let mut s = e.session()?;
    let mut f = Found::default();
    let mut bad = 0;
    rows(s.as_mut(), LINK, round, t, &mut |k, _| match (
        be(&k[8..]),
        be(k.get(16..).unwrap_or_default()),
    ) {
        (Some(id1), Some(seq)) => f.links.push((id1, seq)),
        _ => bad += 1,
    })?;
    rows(
        s.as_mut(),
        COUNT,
        round,
        t,
        &mut |k, v| match (be(&k[8..]), be(v)) {
            (Some(id1), Some(c)) => {
                f.counts.insert(id1, c);
            }
            _ => bad += 1,
        },
    )?;
    rows(
        s.as_mut(),
        KV,
        round,
        t,
        &mut |k, v| match (be(&k[8..]), be(v)) {
            (Some(slot), Some(n)) => {
                f.values.insert(slot, (n, v[8..] == pad(round, t, n)[..]));
            }
            _ => bad += 1,
        },
    )?;
    if bad > 0 {
        bail!("{bad} rows of writer {t} have keys or values of the wrong length");
    }
    Ok(f)
}

/// Links of every round and writer.
pub fn total_links(e: &dyn KvEngine) -> Result<u64> {
    let mut s = e.session()?;
    let n = s.scan(
        LINK,
        KeyRange::all(),
        Order::Forward,
        usize::MAX,
        &mut |_, _| {},
    )?;
    Ok(n as u64)
}
