//! LinkBench's logical operations (the `LinkStore`), its rows, and the
//! per-(id1, link_type) lock stripes the KV mapping uses, on an engine
//! without transactions, to keep counts exact under concurrency.

use std::sync::Mutex;

use anyhow::Result;

/// The first link type (`123456789 + k`).
pub const LINK_TYPE_BASE: u64 = 123_456_789;
/// Every node's type.
pub const NODE_TYPE: u32 = 2048;
/// GET_LINKS_LIST's row limit (`LinkStore.DEFAULT_LIMIT`).
pub const LIST_LIMIT: usize = 10_000;

/// A directed edge.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Link {
    /// Source.
    pub id1: u64,
    /// Type.
    pub link_type: u64,
    /// Destination.
    pub id2: u64,
    /// Visible (true) or hidden (soft-deleted).
    pub visible: bool,
    /// Payload (≤ 254 bytes).
    pub data: Vec<u8>,
    /// Time, epoch ms.
    pub time: u64,
    /// Version (the driver always writes 0).
    pub version: u32,
}

/// A link as a read returned it: its payload borrowed from the list
/// ([`Links`]) that holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkRef<'a> {
    /// Source.
    pub id1: u64,
    /// Type.
    pub link_type: u64,
    /// Destination.
    pub id2: u64,
    /// Visible (true) or hidden (soft-deleted).
    pub visible: bool,
    /// Payload.
    pub data: &'a [u8],
    /// Time, epoch ms.
    pub time: u64,
    /// Version.
    pub version: u32,
}

impl LinkRef<'_> {
    /// An owned copy.
    pub fn to_link(&self) -> Link {
        Link {
            id1: self.id1,
            link_type: self.link_type,
            id2: self.id2,
            visible: self.visible,
            data: self.data.to_vec(),
            time: self.time,
            version: self.version,
        }
    }
}

/// A link of a [`Links`] without its payload: where the payload ends in
/// the list's byte buffer.
#[derive(Clone, Copy, Debug, Default)]
struct Head {
    id1: u64,
    link_type: u64,
    id2: u64,
    time: u64,
    end: usize,
    version: u32,
    visible: bool,
}

/// The links one read returned, kept by the store until its next read.
/// Their payloads are copied one after the other into one byte buffer,
/// and both the buffer and the list are kept from read to read. A store
/// makes its list [`with_room`](Links::with_room) for the longest list a
/// read returns ([`LIST_LIMIT`] links, [`ROOM_BYTES`] of payload) and
/// touches that memory once: a read then allocates nothing, and the
/// client's memory does not creep up as LinkBench's lists grow through a
/// request step. Kept at each thread's longest list so far instead, it
/// grew for the whole step (issue 31: +5.9 MB/h on PostgreSQL at 16
/// threads, the live heap's buffers of 256 KB–1 MB going from 7 to 16 in
/// a minute); released after each list longer than 1,024 links instead,
/// the resident memory jumped by a few MB from minute to minute.
///
/// Measured (mix 2017, maxid1 200,001, 4 requesters, 60 s runs, each on
/// its own server, client user CPU per request, mean ± standard
/// deviation): a new vector per read and a payload allocated per row,
/// 4.89 µs (± 0.14, nine runs); the vector kept and each row's payload
/// moved into its link, 4.50 (± 0.08, four), and 4.77 (± 0.23, four) on
/// a later day, alternated with this design's 4.30 (± 0.17, four).
/// Keeping each slot's own payload buffer and copying rows into it ran
/// 10% fewer instructions under callgrind but took 5.16 µs (± 0.08,
/// five): a long list's slots are cold memory of many sizes.
#[derive(Debug, Default)]
pub struct Links {
    heads: Vec<Head>,
    data: Vec<u8>,
}

/// Payload bytes a list keeps room for: 64 per link of a full list (a
/// link's payload is log-normal with median 8 bytes, or 23 with mix 2017,
/// so a mean of 13 or 38).
pub const ROOM_BYTES: usize = LIST_LIMIT * 64;

impl Links {
    /// An empty list with room for [`LIST_LIMIT`] links and
    /// [`ROOM_BYTES`] of payload, its memory written once so that it is
    /// resident from the start (about 1.1 MB).
    pub fn with_room() -> Links {
        let mut l = Links {
            heads: Vec::with_capacity(LIST_LIMIT),
            data: Vec::with_capacity(ROOM_BYTES),
        };
        // Written, not allocated zeroed: fresh zeroed pages are not
        // resident until first written.
        l.heads.resize(LIST_LIMIT, Head::default());
        l.data.resize(ROOM_BYTES, 1);
        l.clear();
        l
    }

    /// Empties the list, keeping its room (a list that outgrew it, with
    /// long payloads, gives the excess back).
    pub fn clear(&mut self) {
        self.heads.clear();
        self.data.clear();
        self.heads.shrink_to(LIST_LIMIT);
        self.data.shrink_to(ROOM_BYTES);
    }

    /// Room kept for links and for payload bytes.
    pub fn capacity(&self) -> (usize, usize) {
        (self.heads.capacity(), self.data.capacity())
    }

    /// Adds a link at the end, copying its payload.
    pub fn push(&mut self, l: LinkRef<'_>) {
        self.data.extend_from_slice(l.data);
        self.heads.push(Head {
            id1: l.id1,
            link_type: l.link_type,
            id2: l.id2,
            time: l.time,
            end: self.data.len(),
            version: l.version,
            visible: l.visible,
        });
    }

    /// Links in the list.
    pub fn len(&self) -> usize {
        self.heads.len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }

    /// The `i`th link.
    pub fn get(&self, i: usize) -> Option<LinkRef<'_>> {
        let h = self.heads.get(i)?;
        let start = i.checked_sub(1).map_or(0, |p| self.heads[p].end);
        Some(self.link(h, start))
    }

    /// The last link.
    pub fn last(&self) -> Option<LinkRef<'_>> {
        self.get(self.heads.len().checked_sub(1)?)
    }

    /// The links in order.
    pub fn iter(&self) -> impl Iterator<Item = LinkRef<'_>> + '_ {
        let starts = std::iter::once(0).chain(self.heads.iter().map(|h| h.end));
        self.heads
            .iter()
            .zip(starts)
            .map(|(h, start)| self.link(h, start))
    }

    /// The link of `h`, whose payload starts at `start`.
    fn link(&self, h: &Head, start: usize) -> LinkRef<'_> {
        LinkRef {
            id1: h.id1,
            link_type: h.link_type,
            id2: h.id2,
            visible: h.visible,
            data: &self.data[start..h.end],
            time: h.time,
            version: h.version,
        }
    }

    /// Owned copies of the links.
    pub fn to_vec(&self) -> Vec<Link> {
        self.iter().map(|l| l.to_link()).collect()
    }
}

/// A node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Node {
    /// Id.
    pub id: u64,
    /// Type (always 2048).
    pub node_type: u32,
    /// Version.
    pub version: u64,
    /// Time, epoch seconds.
    pub time: u32,
    /// Payload.
    pub data: Vec<u8>,
}

/// A counttable row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Count {
    /// id1.
    pub id1: u64,
    /// Link type.
    pub link_type: u64,
    /// Visible links of (id1, link_type).
    pub count: u64,
    /// Time of the last change, ms.
    pub time: u64,
    /// Changes.
    pub version: u64,
}

/// What ADD_LINK found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Added {
    /// A new link (count + 1).
    New,
    /// The link existed and was visible: its data and time were updated.
    Updated,
    /// The link existed hidden and is visible again (count + 1).
    Revived,
}

/// What a store did for one operation beyond its result: the reference
/// client's retry and fallback paths, counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCost {
    /// Transactions run again after a conflict (a deadlock or lock-wait
    /// timeout on a server, a write conflict in an engine transaction).
    pub retries: u64,
    /// ROLLBACKs issued (after a conflict or a duplicate key, or when the
    /// operation found nothing to change).
    pub rollbacks: u64,
    /// Switches between the insert and the update path: the fork's
    /// ADD_LINK on a duplicate key, its UPDATE_LINK on a missing link.
    pub fallbacks: u64,
    /// Statements sent to the server, COMMIT and ROLLBACK included (0 on
    /// an embedded engine).
    pub statements: u64,
}

/// The result of the consistency check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Check {
    /// (id1, link_type) pairs compared.
    pub pairs: u64,
    /// Pairs whose count differs from their visible links.
    pub mismatches: u64,
}

/// LinkBench's operations. One store per worker thread.
pub trait LinkStore: Send {
    /// ADD_LINK (and UPDATE_LINK, which the reference runs the same way):
    /// insert, update a visible link, or revive a hidden one; the count
    /// follows in the same transaction.
    fn add_link(&mut self, l: &Link) -> Result<Added>;
    /// The fork's UPDATE_LINK: the same change as ADD_LINK (update a link,
    /// reviving it if hidden, inserting it if missing), issued as the fork
    /// issues it: the update path first. Stores whose statements do not
    /// differ run [`add_link`](LinkStore::add_link).
    fn update_link(&mut self, l: &Link) -> Result<Added> {
        self.add_link(l)
    }
    /// DELETE_LINK: hide a visible link and decrement its count; returns
    /// whether a visible link was hidden.
    fn delete_link(&mut self, id1: u64, link_type: u64, id2: u64, now_ms: u64) -> Result<bool>;
    /// COUNT_LINK.
    fn count_links(&mut self, id1: u64, link_type: u64) -> Result<u64>;
    /// MULTIGET_LINK: the links (visible or not) among `id2s`, in a list
    /// the store keeps until its next read.
    fn multiget_links(&mut self, id1: u64, link_type: u64, id2s: &[u64]) -> Result<&Links>;
    /// GET_LINKS_LIST: visible links with time ≤ `max_time`, newest first,
    /// skipping `offset`, at most `limit`, in a list the store keeps until
    /// its next read.
    fn get_links_list(
        &mut self,
        id1: u64,
        link_type: u64,
        max_time: u64,
        offset: usize,
        limit: usize,
    ) -> Result<&Links>;
    /// ADD_NODE (the id is given: one allocator, the workload's).
    fn add_node(&mut self, n: &Node) -> Result<()>;
    /// UPDATE_NODE; returns whether the node existed.
    fn update_node(&mut self, n: &Node) -> Result<bool>;
    /// DELETE_NODE; returns whether the node existed.
    fn delete_node(&mut self, id: u64) -> Result<bool>;
    /// GET_NODE: the node, held by the store until its next read.
    fn get_node(&mut self, id: u64) -> Result<Option<&Node>>;
    /// Bulk load of nodes (one transaction).
    fn load_nodes(&mut self, nodes: &[Node]) -> Result<()>;
    /// Bulk load of new links (one transaction).
    fn load_links(&mut self, links: &[Link]) -> Result<()>;
    /// Bulk load of counts (one transaction).
    fn load_counts(&mut self, counts: &[Count]) -> Result<()>;
    /// Builds the id1_type index (the `index` step); returns rows indexed.
    fn build_index(&mut self) -> Result<u64>;
    /// Checks count == visible links for every (id1, link_type).
    fn check(&mut self) -> Result<Check>;
    /// What the operations since the last call cost beyond their result
    /// (retries, rollbacks, fallbacks, statements); resets it.
    fn take_cost(&mut self) -> OpCost {
        OpCost::default()
    }
}

/// Lock stripes by (id1, link_type): the KV mapping's per-pair locking, so
/// a link change and its count change are one critical section.
pub struct Stripes {
    locks: Vec<Mutex<()>>,
}

impl Default for Stripes {
    fn default() -> Self {
        Stripes {
            locks: (0..4096).map(|_| Mutex::new(())).collect(),
        }
    }
}

impl Stripes {
    /// Runs `f` holding the lock of (id1, link_type).
    pub fn with<R>(&self, id1: u64, link_type: u64, f: impl FnOnce() -> R) -> R {
        let h = crate::dist::scramble(id1 ^ link_type.rotate_left(32)) as usize % self.locks.len();
        let _g = self.locks[h].lock().unwrap_or_else(|p| p.into_inner());
        f()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(id2: u64, data: &[u8]) -> Link {
        Link {
            id1: 7,
            link_type: LINK_TYPE_BASE,
            id2,
            visible: id2 % 2 == 0,
            data: data.to_vec(),
            time: 1000 + id2,
            version: id2 as u32,
        }
    }

    fn as_ref(l: &Link) -> LinkRef<'_> {
        LinkRef {
            id1: l.id1,
            link_type: l.link_type,
            id2: l.id2,
            visible: l.visible,
            data: &l.data,
            time: l.time,
            version: l.version,
        }
    }

    #[test]
    fn a_list_hands_back_each_link_with_its_own_payload() {
        let want = vec![link(1, b"first"), link(2, b""), link(3, &[9; 254])];
        let mut l = Links::default();
        assert!(l.is_empty() && l.last().is_none() && l.get(0).is_none());
        for w in &want {
            l.push(as_ref(w));
        }
        assert_eq!(l.len(), 3);
        assert_eq!(l.to_vec(), want);
        assert_eq!(l.get(1).map(|x| x.data), Some(&b""[..]));
        assert_eq!(l.last().map(|x| x.to_link()), Some(want[2].clone()));
        assert!(l.get(3).is_none());
    }

    #[test]
    fn a_list_read_again_reuses_its_buffers() {
        let want: Vec<Link> = (0..50).map(|i| link(i, &[i as u8; 100])).collect();
        let mut l = Links::default();
        for w in &want {
            l.push(as_ref(w));
        }
        let at = (l.heads.as_ptr(), l.data.as_ptr());
        l.clear();
        assert!(l.is_empty());
        for w in want.iter().rev() {
            l.push(as_ref(w));
        }
        assert_eq!(at, (l.heads.as_ptr(), l.data.as_ptr()));
        assert_eq!(
            l.iter().map(|x| x.id2).collect::<Vec<_>>(),
            (0..50).rev().collect::<Vec<_>>()
        );
        assert!(l.iter().all(|x| x.data == [x.id2 as u8; 100]));
    }

    #[test]
    fn a_full_list_fits_its_room_and_long_payloads_give_the_excess_back() {
        let mut l = Links::with_room();
        assert_eq!(l.capacity(), (LIST_LIMIT, ROOM_BYTES));
        let at = (l.heads.as_ptr(), l.data.as_ptr());
        for i in 0..LIST_LIMIT as u64 {
            l.push(as_ref(&link(i, &[1; 64])));
        }
        assert_eq!(at, (l.heads.as_ptr(), l.data.as_ptr()), "no allocation");
        l.clear();
        let long = link(1, &[7; 200]);
        for _ in 0..LIST_LIMIT {
            l.push(as_ref(&long));
        }
        assert!(l.capacity().1 >= LIST_LIMIT * 200);
        l.clear();
        assert_eq!(l.capacity(), (LIST_LIMIT, ROOM_BYTES));
    }
}
