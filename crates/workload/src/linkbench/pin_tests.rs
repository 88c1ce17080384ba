//! Rows per GET_LINKS_LIST pinned to the reference's algorithm.
//!
//! The expected figures below were printed by the reference client's own
//! classes (mdcallag/linkbench 9ef9cc8 on OpenJDK 17: `RealDistribution`,
//! `ID2Chooser.calcLinkCount`, `AccessDistributions` with
//! `InvertibleShuffler`, `ZipfDistribution.pdf`), on the `nlinks` table
//! below, at maxid1 20,001 (below 100,000 ids, where the reference's ζ(n)
//! is exact, as ours is). For every rank r of the read distribution they
//! weigh min(links of (id1, type), 10,000) by the rank's probability:
//! 99.5% Zipf(0.8) through the uncorrelated shuffler, 0.5% through the
//! out-degree shuffler (rank r is the node with the r-th most links), each
//! of the 2 link types half. docs/linkbench.md describes that algorithm.

use super::*;

/// Our own table, not a reference file: 0.05% of nodes past 10,000 links.
const TABLE: &str =
    "nlinks\n0 40\n1 70\n2 80\n5 90\n20 97\n100 99\n1000 99.8\n20000 99.95\n100000 100\n";

/// What the reference computes for `TABLE` at maxid1 20,001.
const LINKS_LOADED: u64 = 1_868_000;
const MEAN: f64 = 31.212825;
const P50: u64 = 1;
const P99: u64 = 500;
const P_FULL: f64 = 2.239443e-3;

fn workload() -> (tempfile::TempDir, Linkbench) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("pin.dat");
    std::fs::write(&file, TABLE).expect("writing the table");
    let p = Params::new(
        "linkbench",
        PARAMS,
        &[
            ("maxid1".into(), "20001".into()),
            ("distribution_file".into(), file.display().to_string()),
        ],
    )
    .expect("valid parameters");
    let w = Linkbench::new(&p).expect("a workload");
    (dir, w)
}

fn rows(w: &Linkbench, id1: u64, k: u64) -> u64 {
    w.degrees
        .of_type(id1, k, w.types)
        .min(store::LIST_LIMIT as u64)
}

#[test]
fn rows_per_call_at_load_are_the_references_exactly() {
    let (_dir, w) = workload();
    assert_eq!(w.types, 2);
    let loaded: u64 = (w.start..w.start + w.n)
        .map(|id| {
            (0..w.types)
                .map(|k| w.degrees.of_type(id, k, w.types))
                .sum::<u64>()
        })
        .sum();
    assert_eq!(loaded, LINKS_LOADED);
    let acc = w.accesses();
    // (rows, probability) over every rank, both shufflers and both types.
    let mut weights: std::collections::BTreeMap<u64, f64> = Default::default();
    for r in 0..w.n {
        for (access, blend) in [(&acc.uncorr, 0.995), (&acc.read_corr, 0.005)] {
            let (id1, p) = access.at_rank(r);
            for k in 0..w.types {
                *weights.entry(rows(&w, id1, k)).or_default() += blend * p / 2.0;
            }
        }
    }
    let total: f64 = weights.values().sum();
    assert!((total - 1.0).abs() < 1e-9, "{total}");
    let mean: f64 = weights.iter().map(|(r, p)| *r as f64 * p).sum();
    assert!(
        (mean - MEAN).abs() < 1e-5,
        "mean {mean} vs the reference's {MEAN}"
    );
    let quantile = |q: f64| {
        let mut cum = 0.0;
        weights
            .iter()
            .find(|(_, p)| {
                cum += **p;
                cum >= q
            })
            .map(|(r, _)| *r)
    };
    assert_eq!(quantile(0.5), Some(P50));
    assert_eq!(quantile(0.99), Some(P99));
    let full = weights
        .get(&(store::LIST_LIMIT as u64))
        .copied()
        .unwrap_or(0.0);
    assert!(
        (full - P_FULL).abs() < 1e-8,
        "P(full list) {full} vs {P_FULL}"
    );
}

#[test]
fn rows_per_call_drawn_as_requests_draw_them_match_the_reference() {
    let (_dir, w) = workload();
    let acc = w.accesses();
    let mut r = Rng::new(2026);
    let n = 4_000_000u64;
    let (mut sum, mut full, mut small) = (0u64, 0u64, 0u64);
    for _ in 0..n {
        // As a requester: the id1, then one of the types.
        let id1 = acc.link_read(&mut r);
        let k = r.below(w.types);
        let got = rows(&w, id1, k);
        sum += got;
        full += u64::from(got == store::LIST_LIMIT as u64);
        small += u64::from(got <= P50);
    }
    let mean = sum as f64 / n as f64;
    // The mean's standard error is about sqrt(P_FULL) 10,000 / sqrt(n) =
    // 0.24 rows (full lists dominate its variance): within 4 of them.
    assert!(
        (mean - MEAN).abs() < 1.0,
        "mean {mean} vs the reference's {MEAN}"
    );
    // About 8,958 full lists expected: within 4 standard errors (about 95).
    let expect = P_FULL * n as f64;
    assert!(
        (full as f64 - expect).abs() < 4.0 * expect.sqrt(),
        "{full} full lists vs {expect:.0} expected"
    );
    // Half the calls or more return at most one row.
    assert!(small as f64 / n as f64 >= 0.5);
}
