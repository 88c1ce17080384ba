//! The one bounded-scan loop every ordered engine uses: seek to the range's
//! first key in the scan's direction, skip an excluded bound, visit keys
//! until the other bound or the limit. An engine provides only a small
//! [`Cursor`] over its own iterator.

use std::ops::Bound;

use anyhow::Result;

use super::{KeyRange, Order};

/// An ordered cursor over one table. Each move returns whether the cursor
/// is now on an entry; `key` and `value` are read only while it is.
pub trait Cursor {
    /// Moves to the first key ≥ `key`.
    fn seek_ge(&mut self, key: &[u8]) -> Result<bool>;
    /// Moves to the first entry.
    fn first(&mut self) -> Result<bool>;
    /// Moves to the last entry.
    fn last(&mut self) -> Result<bool>;
    /// Moves to the next entry.
    fn next(&mut self) -> Result<bool>;
    /// Moves to the previous entry.
    fn prev(&mut self) -> Result<bool>;
    /// The current key.
    fn key(&self) -> &[u8];
    /// The current value.
    fn value(&self) -> &[u8];

    /// Moves to the last key ≤ `key`. The default seeks forward and steps
    /// back; engines with a native reverse seek override it.
    fn seek_le(&mut self, key: &[u8]) -> Result<bool> {
        if self.seek_ge(key)? {
            if self.key() == key {
                return Ok(true);
            }
            return self.prev();
        }
        self.last()
    }
}

/// True when `key` is inside the end bound.
pub fn below_end(end: Bound<&[u8]>, key: &[u8]) -> bool {
    match end {
        Bound::Included(e) => key <= e,
        Bound::Excluded(e) => key < e,
        Bound::Unbounded => true,
    }
}

/// True when `key` is inside the start bound.
pub fn above_start(start: Bound<&[u8]>, key: &[u8]) -> bool {
    match start {
        Bound::Included(s) => key >= s,
        Bound::Excluded(s) => key > s,
        Bound::Unbounded => true,
    }
}

/// Visits up to `limit` entries of `range` in `order` with `c`; returns how
/// many were visited.
pub fn bounded_scan<C: Cursor + ?Sized>(
    c: &mut C,
    range: KeyRange<'_>,
    order: Order,
    limit: usize,
    visit: &mut dyn FnMut(&[u8], &[u8]),
) -> Result<usize> {
    if limit == 0 {
        return Ok(0);
    }
    let (from, to) = match order {
        Order::Forward => (range.start, range.end),
        Order::Reverse => (range.end, range.start),
    };
    let step = |c: &mut C| match order {
        Order::Forward => c.next(),
        Order::Reverse => c.prev(),
    };
    let mut on = match (order, from) {
        (Order::Forward, Bound::Included(k) | Bound::Excluded(k)) => c.seek_ge(k)?,
        (Order::Reverse, Bound::Included(k) | Bound::Excluded(k)) => c.seek_le(k)?,
        (Order::Forward, Bound::Unbounded) => c.first()?,
        (Order::Reverse, Bound::Unbounded) => c.last()?,
    };
    if let Bound::Excluded(k) = from {
        if on && c.key() == k {
            on = step(c)?;
        }
    }
    let mut n = 0;
    while on && n < limit {
        let k = c.key();
        let inside = match order {
            Order::Forward => below_end(to, k),
            Order::Reverse => above_start(to, k),
        };
        if !inside {
            break;
        }
        visit(k, c.value());
        n += 1;
        on = step(c)?;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cursor over a sorted vector, using only the trait's default
    /// `seek_le`, so the loop is checked apart from any engine.
    struct VecCursor {
        rows: Vec<(Vec<u8>, Vec<u8>)>,
        at: Option<usize>,
    }

    impl VecCursor {
        fn to(&mut self, i: Option<usize>) -> Result<bool> {
            self.at = i.filter(|i| *i < self.rows.len());
            Ok(self.at.is_some())
        }
    }

    impl Cursor for VecCursor {
        fn seek_ge(&mut self, key: &[u8]) -> Result<bool> {
            let i = self.rows.iter().position(|(k, _)| k.as_slice() >= key);
            self.to(i)
        }
        fn first(&mut self) -> Result<bool> {
            self.to(Some(0))
        }
        fn last(&mut self) -> Result<bool> {
            self.to(self.rows.len().checked_sub(1))
        }
        fn next(&mut self) -> Result<bool> {
            self.to(self.at.map(|i| i + 1))
        }
        fn prev(&mut self) -> Result<bool> {
            self.to(self.at.and_then(|i| i.checked_sub(1)))
        }
        fn key(&self) -> &[u8] {
            self.at.map_or(&[], |i| &self.rows[i].0)
        }
        fn value(&self) -> &[u8] {
            self.at.map_or(&[], |i| &self.rows[i].1)
        }
    }

    fn scan(range: KeyRange<'_>, order: Order, limit: usize) -> Vec<u8> {
        let mut c = VecCursor {
            rows: [1u8, 3, 5, 7]
                .iter()
                .map(|k| (vec![*k], vec![*k]))
                .collect(),
            at: None,
        };
        let mut out = Vec::new();
        let n = bounded_scan(&mut c, range, order, limit, &mut |k, _| out.push(k[0])).unwrap();
        assert_eq!(n, out.len());
        out
    }

    #[test]
    fn bounds_orders_and_limits() {
        use Bound::*;
        let r = |s: Bound<&'static [u8]>, e: Bound<&'static [u8]>| KeyRange { start: s, end: e };
        assert_eq!(scan(KeyRange::all(), Order::Forward, 9), [1, 3, 5, 7]);
        assert_eq!(scan(KeyRange::all(), Order::Reverse, 2), [7, 5]);
        assert_eq!(
            scan(r(Included(&[3]), Excluded(&[7])), Order::Forward, 9),
            [3, 5]
        );
        assert_eq!(
            scan(r(Excluded(&[3]), Included(&[7])), Order::Forward, 9),
            [5, 7]
        );
        assert_eq!(
            scan(r(Excluded(&[3]), Excluded(&[7])), Order::Reverse, 9),
            [5]
        );
        assert_eq!(
            scan(r(Included(&[2]), Included(&[6])), Order::Reverse, 9),
            [5, 3]
        );
        assert_eq!(
            scan(r(Unbounded, Included(&[0])), Order::Reverse, 9),
            Vec::<u8>::new()
        );
        assert_eq!(
            scan(r(Included(&[8]), Unbounded), Order::Forward, 9),
            Vec::<u8>::new()
        );
        assert_eq!(
            scan(r(Unbounded, Excluded(&[9])), Order::Reverse, 9),
            [7, 5, 3, 1]
        );
        assert_eq!(scan(KeyRange::all(), Order::Forward, 0), Vec::<u8>::new());
    }
}
