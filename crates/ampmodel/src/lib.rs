//! Theory beside measurement: predicted write-amp, space-amp and read-amp
//! of the storage structures the seeds reason about, each printed as the
//! sum (or product) of its terms, so a reader sees which term dominates.
//!
//! The formulas and their sources (docs/model.md has them in full):
//! - B-Tree (update in place, InnoDB): worst-case write-amp = redo of the
//!   row + a page written back per changed row, `(page + row) / row` ≈ 33
//!   for 128-byte rows in 4 KB pages; leaves 50-70% full give space-amp
//!   1/fill (1.5 at 2/3, 2 at 1/2), times the per-row metadata (~20 B
//!   for InnoDB).
//! - Copy-on-write B-Tree (WiredTiger): as the B-Tree (a log record and a
//!   leaf written per change), its leaves written to new places.
//! - Leveled LSM: wal 1 + flush 1 + L0→L1 1 + the per-level factor (~7
//!   measured, ~10 by hand) per level below L1: 1+1+1+7+7+7 = 24 for L0-L4;
//!   space-amp 1 / (the largest level's share of the data, ~0.9) ≈ 1.1.
//! - Size-tiered LSM: wal 1 + flush 1 + one merge per tier; space-amp
//!   1 / (the largest tier's share, ~0.5) ≈ 2.
//! - Log-structured store with a compaction threshold t (ForestDB):
//!   space-amp 1/(1−t), write-amp 1/t, as the seed gives them.
//!
//! Read-amp is disk reads per point query and per short range query under
//! the seed's cache assumption: everything but the B-Tree's leaves, or the
//! LSM's largest level's data blocks, is cached.

#![warn(missing_docs)]

// The core crate's modules, under the names the code has always used
// (`crate::UsageError` is ampbench-core's `UsageError`).
use ampbench_core::{UsageError, check, named, structure, units};

pub mod shape;
pub mod step;

use anyhow::Result;

crate::named! {
    /// The structures `ampbench model` predicts.
    pub enum Structure: "model" {
        /// Leveled-compaction LSM (RocksDB, MyRocks, LevelDB).
        LsmLeveled = "lsm-leveled",
        /// Size-tiered LSM.
        LsmTiered = "lsm-tiered",
        /// Update-in-place B-Tree (InnoDB).
        Btree = "btree",
        /// Copy-on-write B-Tree (WiredTiger, LMDB).
        CowBtree = "cow-btree",
        /// Log-structured store with a compaction threshold (ForestDB).
        LogStructured = "log-structured",
    }
}

/// The inputs of a prediction. Every structure uses some of them; see
/// each field.
#[derive(Clone, Debug, PartialEq)]
pub struct Inputs {
    /// Logical bytes per row (key and value).
    pub row: f64,
    /// B-Tree page (or LSM data block) bytes.
    pub page: f64,
    /// B-Tree leaf fill factor (0-1].
    pub fill: f64,
    /// Rows changed in a page before it is written back (B-Trees).
    pub changes: f64,
    /// Per-row metadata bytes (InnoDB ~20: transaction id, roll pointer,
    /// header).
    pub meta: f64,
    /// LSM levels, L0 included (leveled: L0..L{levels-1}).
    pub levels: u32,
    /// LSM size ratio between adjacent levels (or tiers).
    pub fanout: f64,
    /// Measured write-amp of moving data from level N to N+1, below L1
    /// (the seed: ~7, where hand-waving says ~fanout).
    pub per_level: f64,
    /// Compression ratio (logical / stored bytes; 1 = none), applied to
    /// what flush and compaction write and to stored sizes.
    pub compression: f64,
    /// The largest LSM level's (or tier's) share of the stored data.
    pub max_share: f64,
    /// Compaction threshold t of a log-structured store (0-1).
    pub threshold: f64,
    /// Rows a short range query returns.
    pub range_rows: f64,
}

impl Inputs {
    /// The seed's example values for a structure: 128-byte rows, 4 KB
    /// pages, leaves 2/3 full, one change per write-back, no metadata, an
    /// LSM of L0-L4 with fanout 10 and a measured per-level factor of 7,
    /// no compression; leveled 0.9 and tiered 0.5 of the data in the
    /// largest level; t = 0.25; 10-row range queries.
    pub fn seed(s: Structure) -> Inputs {
        Inputs {
            row: 128.0,
            page: 4096.0,
            fill: 2.0 / 3.0,
            changes: 1.0,
            meta: 0.0,
            levels: 5,
            fanout: 10.0,
            per_level: 7.0,
            compression: 1.0,
            max_share: if s == Structure::LsmTiered { 0.5 } else { 0.9 },
            threshold: 0.25,
            range_rows: 10.0,
        }
    }

    /// Checks every input is in its range; the error names the key.
    pub fn check(&self) -> Result<(), crate::UsageError> {
        let bad = |k: &str, v: f64, what: &str| {
            Err(crate::UsageError(format!("model: --{k} {v}: {what}")))
        };
        for (k, v) in [
            ("row", self.row),
            ("page", self.page),
            ("changes", self.changes),
            ("fanout", self.fanout),
            ("per-level", self.per_level),
            ("compression", self.compression),
            ("range-rows", self.range_rows),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return bad(k, v, "must be a positive number");
            }
        }
        for (k, v) in [
            ("fill", self.fill),
            ("max-share", self.max_share),
            ("threshold", self.threshold),
        ] {
            if !(v > 0.0 && v <= 1.0) {
                return bad(k, v, "must be in (0, 1]");
            }
        }
        if !(self.meta.is_finite() && self.meta >= 0.0) {
            return bad("meta", self.meta, "must be zero or more bytes");
        }
        if self.levels < 2 {
            return Err(crate::UsageError(format!(
                "model: --levels {}: an LSM has at least L0 and L1",
                self.levels
            )));
        }
        Ok(())
    }
}

/// One named term of a sum or product.
#[derive(Clone, Debug, PartialEq)]
pub struct Term {
    /// What it is (`wal`, `L1→L2`, `page write-back 4096/128`).
    pub name: String,
    /// Its value.
    pub value: f64,
}

/// A figure as the sum (or product) of its terms.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// The terms, in order.
    pub terms: Vec<Term>,
    /// True when the terms multiply (space-amp's factors), false when
    /// they add.
    pub product: bool,
    /// What the figure assumes, in one line.
    pub assumes: String,
}

impl Figure {
    fn sum(terms: Vec<Term>, assumes: impl Into<String>) -> Figure {
        Figure {
            terms,
            product: false,
            assumes: assumes.into(),
        }
    }

    fn product(terms: Vec<Term>, assumes: impl Into<String>) -> Figure {
        Figure {
            terms,
            product: true,
            assumes: assumes.into(),
        }
    }

    /// The figure's value.
    pub fn value(&self) -> f64 {
        if self.product {
            self.terms.iter().map(|t| t.value).product()
        } else {
            self.terms.iter().map(|t| t.value).sum()
        }
    }

    /// The term with the largest share (the one that dominates).
    pub fn dominant(&self) -> Option<&Term> {
        self.terms.iter().max_by(|a, b| a.value.total_cmp(&b.value))
    }

    /// `wal 1 + flush 1 + … = 24`.
    pub fn show(&self) -> String {
        let op = if self.product { " × " } else { " + " };
        let parts: Vec<String> = self
            .terms
            .iter()
            .map(|t| {
                // A term named by its formula shows `formula=value`.
                let sep = if t.name.contains(['/', '×']) {
                    "="
                } else {
                    " "
                };
                format!("{}{sep}{}", t.name, num(t.value))
            })
            .collect();
        format!("{} = {}", parts.join(op), num(self.value()))
    }
}

/// A number with as many decimals as it needs (at most 2).
fn num(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A structure's predicted amplification.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    /// The structure.
    pub structure: Structure,
    /// Bytes written to storage per byte changed.
    pub write_amp: Figure,
    /// Stored bytes per logical byte.
    pub space_amp: Figure,
    /// Disk reads per point query.
    pub read_point: Figure,
    /// Disk reads per short range query.
    pub read_range: Figure,
}

/// Predicts `s` from `i`.
// Long: one match arm per engine structure (the model's formulas), each with
// its terms named as `ampbench model` prints them.
pub fn predict(s: Structure, i: &Inputs) -> Result<Prediction, crate::UsageError> {
    i.check()?;
    let t = |name: String, value: f64| Term { name, value };
    let c = i.compression;
    // Leaf blocks a short range spans: its first, plus its rows' bytes
    // over a (full or partly full) block.
    let span = |fill: f64| {
        vec![
            t("first block".into(), 1.0),
            t(
                format!(
                    "{}×{}/({}×{})",
                    num(i.range_rows),
                    num(i.row),
                    num(i.page),
                    num(fill)
                ),
                i.range_rows * i.row / (i.page * fill * c),
            ),
        ]
    };
    let p = match s {
        Structure::Btree | Structure::CowBtree => {
            let redo = if s == Structure::Btree { "redo" } else { "log" };
            let page = if s == Structure::Btree {
                "page write-back"
            } else {
                "leaf written anew"
            };
            let mut space = vec![t(format!("1/fill {}", num(i.fill)), 1.0 / i.fill)];
            if i.meta > 0.0 {
                space.push(t(
                    format!("metadata ({}+{})/{}", num(i.row), num(i.meta), num(i.row)),
                    (i.row + i.meta) / i.row,
                ));
            }
            if c != 1.0 {
                space.push(t(format!("1/compression {}", num(c)), 1.0 / c));
            }
            Prediction {
                structure: s,
                write_amp: Figure::sum(
                    vec![
                        t(redo.into(), 1.0),
                        t(
                            format!("{page} {}/({}×{})", num(i.page), num(i.row), num(i.changes)),
                            i.page / (i.row * i.changes * c),
                        ),
                    ],
                    "worst case: every changed row's page is written back before another change reaches it",
                ),
                space_amp: Figure::product(space, "leaves fragmented by random inserts"),
                read_point: Figure::sum(vec![t("leaf".into(), 1.0)], "non-leaf levels cached"),
                read_range: Figure::sum(span(i.fill), "non-leaf levels cached"),
            }
        }
        Structure::LsmLeveled => {
            let mut w = vec![t("wal".into(), 1.0), t("flush".into(), 1.0 / c)];
            w.push(t("L0→L1".into(), 1.0 / c));
            for l in 1..i.levels - 1 {
                w.push(t(format!("L{l}→L{}", l + 1), i.per_level / c));
            }
            Prediction {
                structure: s,
                write_amp: Figure::sum(
                    w,
                    format!(
                        "levels L0-L{}, {} per level below L1 (measured; fanout {} by hand)",
                        i.levels - 1,
                        num(i.per_level),
                        num(i.fanout)
                    ),
                ),
                space_amp: lsm_space(i, "old versions in the levels above the largest"),
                read_point: Figure::sum(
                    vec![t("largest level's data block".into(), 1.0)],
                    "all but the largest level's data blocks cached; bloom filters in memory",
                ),
                read_range: Figure::sum(
                    span(1.0),
                    "all but the largest level's data blocks cached",
                ),
            }
        }
        Structure::LsmTiered => {
            let mut w = vec![t("wal".into(), 1.0), t("flush".into(), 1.0 / c)];
            for k in 1..i.levels {
                w.push(t(format!("tier {k} merge"), 1.0 / c));
            }
            let runs = i.fanout;
            Prediction {
                structure: s,
                write_amp: Figure::sum(
                    w,
                    format!("{} tiers, each row merged once per tier", i.levels - 1),
                ),
                space_amp: lsm_space(i, "older versions in the other tiers"),
                read_point: Figure::sum(
                    vec![t("largest tier's data block".into(), 1.0)],
                    "bloom filters rule out the other runs; all but the largest tier cached",
                ),
                read_range: Figure::sum(
                    vec![
                        t(
                            format!("one block per run of the largest tier ({})", num(runs)),
                            runs,
                        ),
                        t(
                            format!("{}×{}/{}", num(i.range_rows), num(i.row), num(i.page)),
                            i.range_rows * i.row / (i.page * c),
                        ),
                    ],
                    "a range is in every run of the largest tier",
                ),
            }
        }
        Structure::LogStructured => {
            let th = i.threshold;
            Prediction {
                structure: s,
                write_amp: Figure::sum(
                    vec![t(format!("1/t (t = {})", num(th)), 1.0 / th)],
                    "the file is compacted when its stale share reaches t",
                ),
                space_amp: Figure::product(
                    vec![t(
                        format!("1/(1−t) (t = {})", num(th)),
                        1.0 / (1.0 - th).max(1e-9),
                    )],
                    "worst case: just before compaction",
                ),
                read_point: Figure::sum(
                    vec![t("document block".into(), 1.0)],
                    "the index (HB+trie) cached",
                ),
                read_range: Figure::sum(
                    vec![t(
                        format!("one block per row ({})", num(i.range_rows)),
                        i.range_rows,
                    )],
                    "not clustered: rows of a range are where they were written",
                ),
            }
        }
    };
    Ok(p)
}

/// An LSM's space-amp: 1 / the largest level's share, over compression.
fn lsm_space(i: &Inputs, why: &str) -> Figure {
    let mut v = vec![Term {
        name: format!("1/largest share {}", num(i.max_share)),
        value: 1.0 / i.max_share,
    }];
    if i.compression != 1.0 {
        v.push(Term {
            name: format!("1/compression {}", num(i.compression)),
            value: 1.0 / i.compression,
        });
    }
    Figure::product(v, why)
}

/// The prediction as text, one figure per line with its terms.
pub fn render(p: &Prediction) -> String {
    let mut o = format!("{}\n", p.structure);
    for (name, f) in [
        ("write-amp", &p.write_amp),
        ("space-amp", &p.space_amp),
        ("read-amp, point", &p.read_point),
        ("read-amp, range", &p.read_range),
    ] {
        o.push_str(&format!(
            "  {name:<16} {}\n  {:<16} ({})\n",
            f.show(),
            "",
            f.assumes
        ));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(s: Structure, f: impl FnOnce(&mut Inputs)) -> Prediction {
        let mut i = Inputs::seed(s);
        f(&mut i);
        predict(s, &i).unwrap()
    }

    #[test]
    fn the_seeds_worked_examples() {
        // B-Tree worst case: (4096 + 128) / 128 = 33.
        let b = with(Structure::Btree, |_| {});
        assert!((b.write_amp.value() - 33.0).abs() < 1e-9);
        assert_eq!(
            b.write_amp.show(),
            "redo 1 + page write-back 4096/(128×1)=32 = 33"
        );
        // Leveled LSM, L0-L4, 7 per level below L1: 1+1+1+7+7+7 = 24.
        let l = with(Structure::LsmLeveled, |_| {});
        assert_eq!(
            l.write_amp.show(),
            "wal 1 + flush 1 + L0→L1 1 + L1→L2 7 + L2→L3 7 + L3→L4 7 = 24"
        );
        // Space-amp: leveled 1.1 vs size-tiered 2.
        assert!((l.space_amp.value() - 1.11).abs() < 0.01);
        assert!((with(Structure::LsmTiered, |_| {}).space_amp.value() - 2.0).abs() < 1e-9);
        // B-Tree leaves 2/3 full: 1.5; 1/2 full: 2.
        assert!((b.space_amp.value() - 1.5).abs() < 1e-9);
        let half = with(Structure::Btree, |i| i.fill = 0.5);
        assert!((half.space_amp.value() - 2.0).abs() < 1e-9);
        // ForestDB's threshold: t = 0.25 → space 4/3, write 4; t = 0.5 → 2 and 2.
        let q = with(Structure::LogStructured, |_| {});
        assert!((q.space_amp.value() - 4.0 / 3.0).abs() < 1e-9);
        assert!((q.write_amp.value() - 4.0).abs() < 1e-9);
        let h = with(Structure::LogStructured, |i| i.threshold = 0.5);
        assert!((h.space_amp.value() - 2.0).abs() < 1e-9);
        assert!((h.write_amp.value() - 2.0).abs() < 1e-9);
        // Disk reads: 1 per point query for both; 1 or 2 for a short range.
        assert_eq!(b.read_point.value(), 1.0);
        assert_eq!(l.read_point.value(), 1.0);
        for r in [b.read_range.value(), l.read_range.value()] {
            assert!((1.0..=2.0).contains(&r), "{r}");
        }
    }

    #[test]
    fn terms_respond_to_their_inputs() {
        // InnoDB's ~20 bytes of metadata per 128-byte row.
        let m = with(Structure::Btree, |i| i.meta = 20.0);
        assert!((m.space_amp.value() - 1.5 * 148.0 / 128.0).abs() < 1e-9);
        // Ten changes per page before write-back: 1 + 32/10.
        let c = with(Structure::Btree, |i| i.changes = 10.0);
        assert!((c.write_amp.value() - 4.2).abs() < 1e-9);
        // The page term dominates the B-Tree; L1→L2 (first of the 7s) the LSM.
        assert!(
            with(Structure::Btree, |_| {})
                .write_amp
                .dominant()
                .unwrap()
                .name
                .starts_with("page write-back")
        );
        assert_eq!(
            with(Structure::LsmLeveled, |i| i.levels = 7)
                .write_amp
                .value(),
            3.0 + 5.0 * 7.0
        );
        // Compression 2 halves what flush and compaction write.
        let z = with(Structure::LsmLeveled, |i| i.compression = 2.0);
        assert!((z.write_amp.value() - (1.0 + 0.5 + 0.5 + 10.5)).abs() < 1e-9);
    }

    #[test]
    fn bad_inputs_name_their_key() {
        let mut i = Inputs::seed(Structure::Btree);
        i.fill = 1.5;
        assert!(
            predict(Structure::Btree, &i)
                .unwrap_err()
                .0
                .contains("--fill 1.5")
        );
        let mut i = Inputs::seed(Structure::LsmLeveled);
        i.levels = 1;
        assert!(
            predict(Structure::LsmLeveled, &i)
                .unwrap_err()
                .0
                .contains("--levels 1")
        );
        assert!(
            Structure::parse("hash")
                .unwrap_err()
                .0
                .contains("lsm-leveled")
        );
    }
}
