//! `ampbench model` as a user runs it.

use crate::common;
use common::{ok, run};

/// `ampbench model` prints the seeds' worked examples with their terms.
#[test]
fn model_prints_the_seeds_examples() {
    let out = ok(&["model", "lsm-leveled"]);
    assert!(
        out.contains("wal 1 + flush 1 + L0→L1 1 + L1→L2 7 + L2→L3 7 + L3→L4 7 = 24"),
        "{out}"
    );
    let out = ok(&["model", "btree", "--row", "128", "--page", "4096"]);
    assert!(out.contains("= 33\n"), "{out}");
    let o = run(&["model", "btree", "--fill", "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--fill 2"));
    let o = run(&["model", "hash"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown model 'hash'"));
}
