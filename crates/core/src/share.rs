//! One client's share of a run's work.

/// One client's share of a run's work: client `client` of `clients`
/// (`--clients N --client K`; 0 of 1 alone). Loads split their key or id
/// range over every client's workers (YCSB's `insertstart`/`insertcount`
/// per client); other steps draw their own streams (the step's seed is
/// derived from the client).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Share {
    /// This client, 0-based.
    pub client: usize,
    /// The run's clients.
    pub clients: usize,
}

impl Default for Share {
    fn default() -> Share {
        Share {
            client: 0,
            clients: 1,
        }
    }
}

impl Share {
    /// Worker `i`'s part of `0..total` when each client runs `threads`
    /// workers: the range split evenly over all `threads × clients`, this
    /// client's workers taking the parts `client × threads + i`.
    pub fn part(&self, total: u64, threads: usize, i: usize) -> (u64, u64) {
        let workers = (threads.max(1) * self.clients.max(1)) as u128;
        let g = (self.client * threads.max(1) + i) as u128;
        // Boundaries at g × total / workers: parts differ by one at most.
        let at = |g: u128| (g.min(workers) * total as u128 / workers) as u64;
        (at(g), at(g + 1))
    }

    /// This client's part of `0..total` (its workers' parts together).
    pub fn mine(&self, total: u64) -> (u64, u64) {
        self.part(total, 1, 0)
    }
}

#[cfg(test)]
mod share_tests {
    use super::Share;

    /// Every client's workers' parts cover 0..total once, in order, and
    /// differ in size by one at most.
    #[test]
    fn parts_cover_the_range_once() {
        for total in [0u64, 1, 7, 100, 1_000_003] {
            for clients in 1..=5 {
                for threads in 1..=4 {
                    let mut next = 0;
                    let mut sizes = Vec::new();
                    for client in 0..clients {
                        let s = Share { client, clients };
                        for i in 0..threads {
                            let (a, b) = s.part(total, threads, i);
                            assert_eq!(a, next, "{total} {clients} {threads}");
                            assert!(b >= a);
                            sizes.push(b - a);
                            next = b;
                        }
                    }
                    assert_eq!(next, total);
                    let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
                    assert!(hi - lo <= 1, "{sizes:?}");
                }
            }
        }
    }
}
