//! What the writers said and what the engine kept: the parent's ledger of
//! begun and acknowledged transactions per writer thread, the state read
//! back after recovery, and the verdict comparing them.
//!
//! Writer `t` of round `r` runs transactions 1, 2, 3… one after the
//! other; transaction `n` sets `kv[slot n % SLOTS] = n`, inserts link
//! `(n % IDS, n)` and adds one to `count[n % IDS]`, atomically. So after a
//! crash the thread's state must be that after some transaction `d` (its
//! first `d` transactions and nothing else), with `d` at least the last
//! acknowledged transaction and at most the last begun one.

use std::collections::BTreeMap;

/// Value slots each writer overwrites in turn.
pub const SLOTS: u64 = 32;
/// Link heads (`id1`) each writer spreads its links over.
pub const IDS: u64 = 8;

/// What a writer reports, in order, for its transactions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Transaction `n` of thread `t` is about to commit.
    Begin(usize, u64),
    /// Transaction `n` of thread `t` committed: the engine acknowledged it.
    Ack(usize, u64),
    /// Thread `t` stopped on an error (the crash, for a server).
    Error(usize, String),
}

impl Event {
    /// The line a writer in a child process prints for it.
    pub fn line(&self) -> String {
        match self {
            Event::Begin(t, n) => format!("b {t} {n}\n"),
            Event::Ack(t, n) => format!("a {t} {n}\n"),
            Event::Error(t, e) => format!("e {t} {}\n", e.replace('\n', " ")),
        }
    }

    /// Parses a line of [`Event::line`]; `None` for anything else (a line
    /// cut by the kill).
    pub fn parse(line: &str) -> Option<Event> {
        let mut f = line.splitn(3, ' ');
        let (kind, t) = (f.next()?, f.next()?.parse().ok()?);
        let rest = f.next()?;
        match kind {
            "b" => Some(Event::Begin(t, rest.parse().ok()?)),
            "a" => Some(Event::Ack(t, rest.parse().ok()?)),
            "e" => Some(Event::Error(t, rest.to_string())),
            _ => None,
        }
    }
}

/// One writer's transactions as the parent heard of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Heard {
    /// The last transaction begun.
    pub begun: u64,
    /// The last transaction acknowledged.
    pub acked: u64,
}

/// Every writer's [`Heard`], and the errors they stopped on.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    /// By thread.
    pub threads: Vec<Heard>,
    /// Errors the writers reported.
    pub errors: Vec<String>,
}

impl Ledger {
    /// A ledger for `threads` writers.
    pub fn new(threads: usize) -> Ledger {
        Ledger {
            threads: vec![Heard::default(); threads],
            errors: Vec::new(),
        }
    }

    /// Records one event; an event out of order is an error of the writer.
    pub fn apply(&mut self, e: Event) {
        let bad = |t: usize| format!("writer {t}: an event out of order");
        match e {
            Event::Begin(t, n) => match self.threads.get_mut(t) {
                Some(h) if n == h.begun + 1 && h.acked == h.begun => h.begun = n,
                _ => self.errors.push(bad(t)),
            },
            Event::Ack(t, n) => match self.threads.get_mut(t) {
                Some(h) if n == h.begun && h.acked + 1 == n => h.acked = n,
                _ => self.errors.push(bad(t)),
            },
            Event::Error(t, m) => self.errors.push(format!("writer {t}: {m}")),
        }
    }

    /// Acknowledged transactions, all writers.
    pub fn acked(&self) -> u64 {
        self.threads.iter().map(|h| h.acked).sum()
    }
}

/// One writer's state read back after recovery.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Found {
    /// Links as (id1, seq).
    pub links: Vec<(u64, u64)>,
    /// Non-zero counts by id1.
    pub counts: BTreeMap<u64, u64>,
    /// Non-zero values by slot: the version, and whether the rest of the
    /// value is the bytes written with it.
    pub values: BTreeMap<u64, (u64, bool)>,
}

/// A writer's state after its first `d` transactions.
pub fn expected(d: u64) -> Found {
    let mut f = Found::default();
    for n in 1..=d {
        f.links.push((n % IDS, n));
        *f.counts.entry(n % IDS).or_default() += 1;
        f.values.insert(n % SLOTS, (n, true));
    }
    f.links.sort_unstable();
    f
}

/// What recovery kept of one writer's transactions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Transactions found durable (the last one present).
    pub durable: u64,
    /// Acknowledged transactions that are missing.
    pub lost: u64,
    /// A transaction begun but not acknowledged that is present (the
    /// crash came between commit and acknowledgement: allowed).
    pub unacked_found: bool,
    /// What is wrong beside losses: a transaction never begun present, a
    /// half-applied transaction, a torn value.
    pub problems: Vec<String>,
}

/// Compares what writer `t` was heard to do with what was found.
pub fn verify(t: usize, heard: Heard, found: &Found) -> Verdict {
    let durable = found.links.iter().map(|l| l.1).max().unwrap_or(0);
    let mut v = Verdict {
        durable,
        lost: heard.acked.saturating_sub(durable),
        unacked_found: durable > heard.acked,
        problems: Vec::new(),
    };
    if durable > heard.begun {
        v.problems.push(format!(
            "writer {t}: transaction {durable} present, but only {} were begun",
            heard.begun
        ));
    }
    let want = expected(durable);
    let mut links = found.links.clone();
    links.sort_unstable();
    if links != want.links {
        v.problems.push(format!(
            "writer {t}: {} links where transactions 1..={durable} made {}",
            links.len(),
            want.links.len()
        ));
    }
    if found.counts != want.counts {
        v.problems.push(format!(
            "writer {t}: counts {:?} do not match the links after transaction {durable} ({:?})",
            found.counts, want.counts
        ));
    }
    if found.values != want.values {
        let torn = found.values.values().filter(|x| !x.1).count();
        v.problems.push(if torn > 0 {
            format!("writer {t}: {torn} values torn (bytes not those written)")
        } else {
            format!("writer {t}: values do not match the state after transaction {durable}")
        });
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_and_cut_lines_are_dropped() {
        for e in [
            Event::Begin(3, 17),
            Event::Ack(0, 1),
            Event::Error(1, "connection lost".into()),
        ] {
            assert_eq!(Event::parse(e.line().trim_end()), Some(e));
        }
        assert_eq!(Event::parse("a 3"), None);
        assert_eq!(Event::parse("a x 4"), None);
    }

    #[test]
    fn ledger_follows_each_writer_in_order() {
        let mut l = Ledger::new(2);
        for e in [
            Event::Begin(0, 1),
            Event::Ack(0, 1),
            Event::Begin(1, 1),
            Event::Begin(0, 2),
        ] {
            l.apply(e);
        }
        assert_eq!(l.threads[0], Heard { begun: 2, acked: 1 });
        assert_eq!(l.threads[1], Heard { begun: 1, acked: 0 });
        assert!(l.errors.is_empty());
        l.apply(Event::Ack(1, 2));
        assert_eq!(l.errors.len(), 1);
        assert_eq!(l.acked(), 1);
    }

    #[test]
    fn the_state_after_some_transaction_between_acked_and_begun_passes() {
        let heard = Heard {
            begun: 41,
            acked: 40,
        };
        for d in [40, 41] {
            let v = verify(0, heard, &expected(d));
            assert_eq!((v.lost, v.problems.len()), (0, 0), "{d}: {v:?}");
            assert_eq!(v.unacked_found, d == 41);
        }
    }

    #[test]
    fn losses_phantoms_and_half_transactions_are_caught() {
        let heard = Heard {
            begun: 41,
            acked: 40,
        };
        // The last 3 acknowledged transactions are missing.
        let v = verify(0, heard, &expected(37));
        assert_eq!((v.lost, v.problems.len()), (3, 0));
        // A transaction never begun.
        let v = verify(0, heard, &expected(42));
        assert_eq!(v.problems.len(), 1, "{v:?}");
        // Transaction 40's link without its count.
        let mut f = expected(40);
        *f.counts.get_mut(&(40 % IDS)).unwrap() -= 1;
        assert_eq!(verify(0, heard, &f).problems.len(), 1);
        // A link missing in the middle.
        let mut f = expected(40);
        f.links.retain(|l| l.1 != 20);
        assert_eq!(verify(0, heard, &f).problems.len(), 1);
        // A torn value.
        let mut f = expected(40);
        f.values.insert(3, (35, false));
        let v = verify(0, heard, &f);
        assert!(v.problems[0].contains("torn"), "{v:?}");
        // Hand-counted: 40 transactions over 8 ids is 5 each, 32 slots
        // hold versions 9..=40.
        let e = expected(40);
        assert!(e.counts.values().all(|&c| c == 5));
        assert_eq!(e.values.len(), 32);
        assert_eq!(e.values.values().map(|v| v.0).min(), Some(9));
    }
}
