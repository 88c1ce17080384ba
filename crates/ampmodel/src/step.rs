//! Predicted beside measured: the model of [`super`] fed with what a step
//! of a run knows (the engine's structure and effective settings, its
//! own statistics, the workload's rows), and a one-line explanation of
//! how the prediction and the measurement compare.
//!
//! Inputs, in order of preference: measured in the run (row size, LSM
//! level sizes and compression from the engine's statistics), the
//! engine's effective settings (page size), the seed's assumption (fill
//! 2/3, one change per page write-back, 7 per LSM level). Every input not
//! measured is named in [`StepModel::assumed`].

use super::{Figure, Inputs, Structure, predict};
use crate::check::{ModelCheck, ModelFigure, Verdict};
use crate::structure::{EngineStructure, ModelKnobs};

/// What a step knows that the model uses.
pub struct Facts<'a> {
    /// What the model needs of the engine (its registry entry's).
    pub knobs: ModelKnobs,
    /// The engine's structure.
    pub structure: EngineStructure,
    /// The engine's effective settings.
    pub settings: &'a [(String, String)],
    /// The engine's own statistics at the step's end (`compaction.*`,
    /// `cf.*` from RocksDB and MyRocks).
    pub stats: &'a [(String, f64)],
    /// Average logical bytes per live row, when the workload counts rows.
    pub row: Option<f64>,
    /// True for a step that loads (pages fill before they are written).
    pub loads: bool,
}

/// A step's predicted write-amp and space-amp, with what was assumed.
#[derive(Clone, Debug)]
pub struct StepModel {
    /// The structure predicted.
    pub structure: Structure,
    /// Predicted write-amp, every term shown.
    pub write_amp: Figure,
    /// Predicted space-amp.
    pub space_amp: Figure,
    /// The inputs taken from the run, one phrase each.
    pub measured: Vec<String>,
    /// The inputs not measured, and what was assumed instead.
    pub assumed: Vec<String>,
}

fn setting(f: &Facts, key: &str) -> Option<f64> {
    let v = f.settings.iter().find(|(k, _)| k == key)?;
    crate::units::parse_size(&v.1).ok().map(|b| b as f64)
}

/// Sums `prefix.L<n>.*` statistics per level n.
fn per_level(stats: &[(String, f64)], prefix: &str) -> Vec<(u32, f64)> {
    let mut v: Vec<(u32, f64)> = Vec::new();
    for (k, x) in stats {
        let Some(rest) = k.strip_prefix(prefix) else {
            continue;
        };
        let lvl = rest.split('.').next().unwrap_or("");
        let Some(n) = lvl.strip_prefix('L').and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        match v.iter_mut().find(|(l, _)| *l == n) {
            Some(e) => e.1 += x,
            None => v.push((n, *x)),
        }
    }
    v.sort_by_key(|e| e.0);
    v
}

fn sum_stat(stats: &[(String, f64)], prefix: &str) -> f64 {
    stats
        .iter()
        .filter(|(k, _)| k.starts_with(prefix))
        .map(|(_, v)| v)
        .sum()
}

/// The prediction for a step; None for an engine that stores nothing.
// Long: the model's inputs for a step from the engine's settings and
// statistics (page, row; a leveled LSM's levels and compression, a B-Tree's
// rows per write-back), each said as measured or assumed.
pub fn predict_step(f: &Facts) -> Option<StepModel> {
    let structure = match f.structure {
        EngineStructure::LeveledLsm => Structure::LsmLeveled,
        EngineStructure::UpdateInPlaceBTree => Structure::Btree,
        EngineStructure::CopyOnWriteBTree => Structure::CowBtree,
        EngineStructure::None => return None,
    };
    let mut i = Inputs::seed(structure);
    let ModelKnobs {
        page_key,
        page_default,
        row_meta: meta,
        compresses_pages,
    } = f.knobs;
    let mut measured = Vec::new();
    let mut assumed = Vec::new();
    i.meta = meta;
    i.page = match setting(f, page_key) {
        Some(p) if p > 0.0 => {
            measured.push(format!("page {p:.0} ({page_key})"));
            p
        }
        _ => {
            measured.push(format!("page {page_default:.0} (the engine's default)"));
            page_default
        }
    };
    match f.row {
        Some(r) if r > 0.0 => {
            i.row = r;
            measured.push(format!("row {r:.0} B (the workload's live rows)"));
        }
        _ => assumed.push(format!(
            "row: not counted by the workload, {} B assumed",
            i.row
        )),
    }
    if structure == Structure::LsmLeveled {
        let sizes: Vec<(u32, f64)> = per_level(f.stats, "compaction.size_bytes.")
            .into_iter()
            .filter(|(_, b)| *b > 0.0)
            .collect();
        let total: f64 = sizes.iter().map(|(_, b)| b).sum();
        if total > 0.0 {
            let below = sizes.iter().filter(|(l, _)| *l > 0).count() as u32;
            i.levels = (1 + below).max(2);
            let largest = sizes.iter().map(|(_, b)| *b).fold(0.0, f64::max);
            i.max_share = largest / total;
            let shown: Vec<String> = sizes
                .iter()
                .map(|(l, b)| format!("L{l} {:.0}MB", b / 1048576.0))
                .collect();
            measured.push(format!("levels {} ({})", i.levels, shown.join(", ")));
        } else {
            i.levels = 2;
            assumed.push("level sizes: not in the engine's statistics, L0-L1 assumed".into());
        }
        let raw = sum_stat(f.stats, "cf.flush_raw_bytes.");
        let data = sum_stat(f.stats, "cf.flush_data_bytes.");
        if raw > 0.0 && data > 0.0 {
            i.compression = raw / data;
            measured.push(format!("compression {:.2} (flushed files)", i.compression));
        } else {
            assumed.push("compression: not measured (no flush in the LOG), none assumed".into());
        }
        assumed.push(format!(
            "{} per level below L1 (the seed's measured factor)",
            i.per_level
        ));
    } else {
        if f.loads {
            // A load appends: a page takes its fill of rows before it is
            // written back.
            i.changes = (i.page * i.fill / (i.row + i.meta)).max(1.0);
            assumed.push(format!(
                "{:.0} rows changed per page write-back (a load fills each page)",
                i.changes
            ));
        } else {
            assumed.push(
                "1 row changed per page write-back (the worst case: pages leave the cache after one change)"
                    .into(),
            );
        }
        assumed.push(format!("leaves {:.0}% full", i.fill * 100.0));
        if compresses_pages {
            assumed.push("compression: not measured, none assumed".into());
        }
    }
    let p = predict(structure, &i).ok()?;
    Some(StepModel {
        structure,
        write_amp: p.write_amp,
        space_amp: p.space_amp,
        measured,
        assumed,
    })
}

/// What a step measured that an explanation weighs.
pub struct Measured {
    /// Measured write-amp, or why not.
    pub write_amp: Result<f64, String>,
    /// Measured space-amp, or why not.
    pub space_amp: Result<f64, String>,
    /// Seconds measured.
    pub secs: f64,
    /// Logical bytes written per operation.
    pub bytes_per_op: Option<f64>,
    /// True for a leveled LSM with compaction still pending at the end.
    pub pending_compaction: bool,
    /// Whether the step's commits sync (None: the engine's own setting).
    pub syncs: Option<bool>,
}

/// One figure's comparison, typed: measured beside predicted, the
/// dominant term, and within 2× or the likely reason it is not.
fn compare(
    what: ModelFigure,
    m: &Result<f64, String>,
    p: &Figure,
    why: (&str, &str),
) -> ModelCheck {
    let dominant = p.dominant().map(|t| t.name.to_string());
    let predicted = p.value();
    let measured = m.as_ref().ok().copied();
    let verdict = Verdict::of(measured, predicted);
    let reason = match (verdict, m) {
        (_, Err(e)) => e.clone(),
        (Verdict::NothingYet | Verdict::Below, _) => why.0.to_string(),
        (Verdict::Above, _) => why.1.to_string(),
        _ => String::new(),
    };
    ModelCheck {
        figure: what,
        measured,
        predicted,
        dominant,
        verdict,
        reason,
    }
}

/// A step's write-amp and space-amp beside the model's: which term
/// dominates each prediction, and whether the measurement agrees within
/// 2× (if not, the likely reason).
pub fn checks(p: &StepModel, m: &Measured) -> [ModelCheck; 2] {
    let short = if m.secs < 60.0 {
        format!("; a {:.0}s step is short of steady state", m.secs)
    } else {
        String::new()
    };
    let small = m.bytes_per_op.filter(|b| *b < 2048.0);
    let rows = |b: f64| format!("{b:.0} B of rows");
    // Each structure's own reasons: an LSM and an update-in-place B-Tree
    // log each commit; a copy-on-write B-Tree (LMDB) has no log but
    // rewrites a path of pages per commit.
    let (w_below, w_above) = match p.structure {
        Structure::LsmLeveled | Structure::LsmTiered => (
            if m.pending_compaction {
                format!(
                    "compaction debt (the step ended before compaction rewrote what it flushed){short}"
                )
            } else {
                format!("the data has not reached every level yet{short}")
            },
            match (m.syncs, small) {
                (Some(true), Some(b)) => format!(
                    "WAL sync granularity (each synced commit writes whole log blocks for {}), and writes the model leaves out",
                    rows(b)
                ),
                (None, Some(b)) => format!(
                    "small commits ({} each: if they sync, each writes whole WAL blocks), and writes the model leaves out",
                    rows(b)
                ),
                _ => "writes the model leaves out (the WAL, small memtables flushed, compaction of files not yet full)".into(),
            },
        ),
        Structure::CowBtree => (
            format!(
                "pages changed several times within one commit are written once{short}"
            ),
            match small {
                Some(b) => format!(
                    "copy-on-write: each commit writes a new copy of every page from leaf to root, and the meta page, for {}",
                    rows(b)
                ),
                None => "copy-on-write: branch pages rewritten with each commit, and free pages not yet reused".into(),
            },
        ),
        _ => (
            format!(
                "pages took several changes before their write-back (write debt still in the cache){short}"
            ),
            match (m.syncs, small) {
                (Some(true), Some(b)) => format!(
                    "log sync granularity (each synced commit writes whole log pages for {}), and writes the model leaves out",
                    rows(b)
                ),
                (None, Some(b)) => format!(
                    "small commits ({} each: if they sync, each writes whole log pages), and pages written back after fewer changes than assumed",
                    rows(b)
                ),
                _ => "pages written back after fewer changes than assumed (a cache smaller than the data evicts them early), and writes the model leaves out (log, checkpoints, doublewrite)".into(),
            },
        ),
    };
    let s_above =
        "space not yet reclaimed (old versions, deleted rows, preallocated logs and files)";
    let s_below = "compression or fuller pages than the model assumed";
    [
        compare(
            ModelFigure::WriteAmp,
            &m.write_amp,
            &p.write_amp,
            (&w_below, &w_above),
        ),
        compare(
            ModelFigure::SpaceAmp,
            &m.space_amp,
            &p.space_amp,
            (s_below, s_above),
        ),
    ]
}

/// The explanation of a step in one line: both [`checks`] in words.
pub fn explain(p: &StepModel, m: &Measured) -> String {
    let [w, s] = checks(p, m);
    format!("{}; {}", w.line(), s.line())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The knobs of the engines these tests name (their registry
    /// entries' values, written out: the model sits below the engines).
    fn knobs(engine: &str) -> ModelKnobs {
        match engine {
            "mariadb-innodb" => ModelKnobs {
                page_key: "innodb_page_size",
                page_default: 16384.0,
                row_meta: 20.0,
                compresses_pages: false,
            },
            "sqlite" => ModelKnobs {
                page_key: "page_size",
                ..ModelKnobs::PLAIN
            },
            "rocksdb" => ModelKnobs {
                page_key: "block_size",
                ..ModelKnobs::PLAIN
            },
            _ => ModelKnobs::PLAIN,
        }
    }

    fn facts<'a>(
        engine: &'a str,
        s: EngineStructure,
        settings: &'a [(String, String)],
        stats: &'a [(String, f64)],
        loads: bool,
    ) -> Facts<'a> {
        Facts {
            knobs: knobs(engine),
            structure: s,
            settings,
            stats,
            row: Some(128.0),
            loads,
        }
    }

    #[test]
    fn innodb_worst_case_uses_its_page_and_metadata() {
        let set = vec![("innodb_page_size".to_string(), "16KB".to_string())];
        let m = predict_step(&facts(
            "mariadb-innodb",
            EngineStructure::UpdateInPlaceBTree,
            &set,
            &[],
            false,
        ))
        .unwrap();
        // redo 1 + 16384/128 = 129.
        assert!((m.write_amp.value() - 129.0).abs() < 1e-9);
        // 1/fill 1.5 × (128+20)/128.
        assert!((m.space_amp.value() - 1.5 * 148.0 / 128.0).abs() < 1e-9);
        assert!(m.measured.iter().any(|x| x.contains("innodb_page_size")));
    }

    #[test]
    fn a_load_fills_pages_before_writing_them() {
        let m = predict_step(&facts(
            "sqlite",
            EngineStructure::UpdateInPlaceBTree,
            &[],
            &[],
            true,
        ))
        .unwrap();
        // changes = 4096 × 2/3 / 128 = 21.33: 1 + 4096/(128 × 21.33) = 1 + 1.5.
        assert!((m.write_amp.value() - 2.5).abs() < 1e-9);
    }

    #[test]
    fn lsm_levels_and_compression_come_from_the_engine() {
        let stats: Vec<(String, f64)> = vec![
            ("compaction.size_bytes.L0.link".into(), 10.0 * 1048576.0),
            ("compaction.size_bytes.L5.link".into(), 10.0 * 1048576.0),
            ("compaction.size_bytes.L6.link".into(), 80.0 * 1048576.0),
            ("compaction.size_bytes.Sum.link".into(), 100.0 * 1048576.0),
            ("cf.flush_raw_bytes.link".into(), 200.0),
            ("cf.flush_data_bytes.link".into(), 100.0),
        ];
        let m = predict_step(&facts(
            "rocksdb",
            EngineStructure::LeveledLsm,
            &[],
            &stats,
            false,
        ))
        .unwrap();
        // L0 + 2 levels below: wal 1 + flush 0.5 + L0→L1 0.5 + L1→L2 3.5.
        assert!((m.write_amp.value() - 5.5).abs() < 1e-9);
        // 1/0.8 × 1/2.
        assert!((m.space_amp.value() - 0.625).abs() < 1e-9);
        let p = Measured {
            write_amp: Ok(4.0),
            space_amp: Err("no live data".into()),
            secs: 300.0,
            bytes_per_op: Some(5000.0),
            pending_compaction: false,
            syncs: None,
        };
        let e = explain(&m, &p);
        assert!(e.contains("agree within 2×"), "{e}");
        assert!(e.contains("not measured: no live data"), "{e}");
    }

    #[test]
    fn far_below_names_a_reason() {
        let m = predict_step(&facts(
            "mariadb-innodb",
            EngineStructure::UpdateInPlaceBTree,
            &[],
            &[],
            false,
        ))
        .unwrap();
        let p = Measured {
            write_amp: Ok(10.0),
            space_amp: Ok(1.6),
            secs: 20.0,
            bytes_per_op: Some(300.0),
            pending_compaction: false,
            syncs: None,
        };
        let e = explain(&m, &p);
        assert!(e.contains("below: pages took several changes"), "{e}");
        assert!(e.contains("a 20s step is short"), "{e}");
    }

    /// Issue 47: each structure has its own reasons. LMDB has no log: a
    /// copy-on-write B-Tree's gap is its page copies, not WAL sync; an
    /// unsynced load's gap is not put down to syncs.
    #[test]
    fn reasons_are_the_structures_own() {
        let above = |engine: &str, s: EngineStructure, syncs: Option<bool>, bytes: f64| {
            let m = predict_step(&facts(engine, s, &[], &[], false)).unwrap();
            let p = Measured {
                write_amp: Ok(m.write_amp.value() * 50.0),
                space_amp: Ok(m.space_amp.value()),
                secs: 1.0,
                bytes_per_op: Some(bytes),
                pending_compaction: false,
                syncs,
            };
            checks(&m, &p)[0].reason.clone()
        };
        let lmdb = above("lmdb", EngineStructure::CopyOnWriteBTree, Some(true), 544.0);
        assert!(
            lmdb.contains("copy-on-write") && !lmdb.contains("WAL"),
            "{lmdb}"
        );
        let rocks = above("rocksdb", EngineStructure::LeveledLsm, Some(true), 544.0);
        assert!(rocks.starts_with("WAL sync granularity"), "{rocks}");
        let rocks = above("rocksdb", EngineStructure::LeveledLsm, Some(false), 544.0);
        assert!(!rocks.contains("sync"), "{rocks}");
        let wt = above(
            "wiredtiger",
            EngineStructure::UpdateInPlaceBTree,
            Some(false),
            544.0,
        );
        assert!(!wt.contains("sync") && wt.contains("evicts"), "{wt}");
        let inno = above(
            "mariadb-innodb",
            EngineStructure::UpdateInPlaceBTree,
            Some(true),
            300.0,
        );
        assert!(inno.starts_with("log sync granularity"), "{inno}");
    }

    #[test]
    fn null_has_no_model() {
        assert!(predict_step(&facts("null", EngineStructure::None, &[], &[], false)).is_none());
    }
}
