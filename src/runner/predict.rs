//! After a step: the model's prediction beside the measurement (extras
//! `pred_write_amp`, `pred_space_amp`; a `model` and an `explain` note),
//! and, for RocksDB and MyRocks, the step's writes per column family
//! (extras `cf.NAME.flush_mb`, `cf.NAME.compaction_mb`, `cf.NAME.w_amp`)
//! and each family's tree at the step's end (`lsm.NAME.levels`, `.gaps`,
//! `.fanout`, `.last_share`: [`crate::model::shape`]).

use crate::engine::EngineStats;
use crate::metrics::{Figure, Metric};
use crate::model::step::{Facts, Measured, checks, predict_step};
use crate::names::{EXPLAIN_NOTE, MODEL_NOTE, ModelCheck};
use crate::workload::{Step, Workload};

/// What a finished step hands to [`notes`].
pub(super) struct Done<'a> {
    pub kind: crate::engine::EngineKind,
    pub settings: &'a [(String, String)],
    pub stats: Option<&'a EngineStats>,
    pub workload: &'a dyn Workload,
    pub step: Step,
    pub figs: &'a [(Metric, Figure)],
    pub ops: u64,
    pub written: u64,
    pub secs: f64,
}

fn measured(figs: &[(Metric, Figure)], m: Metric) -> Result<f64, String> {
    match figs.iter().find(|(k, _)| *k == m).map(|(_, f)| f) {
        Some(Figure::Value(v)) => Ok(*v),
        Some(Figure::NotMeasured(why)) => Err(why.clone()),
        None => Err("not recorded".into()),
    }
}

/// What the model says of a step: extras, note lines and the typed
/// checks of measured against predicted.
#[derive(Default)]
pub(super) struct Said {
    pub extras: Vec<(String, f64)>,
    pub lines: Vec<String>,
    pub checks: Vec<ModelCheck>,
}

/// The engine's cumulative column-family counters (`cf.…`) among its
/// statistics: what a step's column-family MB are counted from.
pub(super) fn cf_counters(values: &[(String, f64)]) -> Vec<(String, f64)> {
    values
        .iter()
        .filter(|(k, _)| k.starts_with("cf."))
        .cloned()
        .collect()
}

/// The model's extras, note lines and checks for a step; `cf_before`
/// holds the engine's cumulative column-family writes at the previous
/// step's end and is updated.
pub(super) fn notes(d: &Done, cf_before: &mut Vec<(String, f64)>) -> Said {
    let mut extras = Vec::new();
    let mut lines = Vec::new();
    let mut said_checks = Vec::new();
    let values: &[(String, f64)] = d.stats.map_or(&[], |s| &s.values);
    let row = match (d.workload.live_rows(), d.workload.live_bytes()) {
        (Some(n), b) if n > 0 => Some(b as f64 / n as f64),
        _ => None,
    };
    let facts = Facts {
        knobs: d.kind.def().model,
        structure: d.kind.def().structure,
        settings: d.settings,
        stats: values,
        row,
        loads: d.step.loads(),
    };
    if let Some(p) = predict_step(&facts) {
        extras.push(("pred_write_amp".into(), p.write_amp.value()));
        extras.push(("pred_space_amp".into(), p.space_amp.value()));
        lines.push(format!(
            "{MODEL_NOTE}{}: write-amp {} · space-amp {} · from the run: {} · assumed: {}",
            p.structure,
            p.write_amp.show(),
            p.space_amp.show(),
            if p.measured.is_empty() {
                "nothing".into()
            } else {
                p.measured.join(", ")
            },
            p.assumed.join("; ")
        ));
        let pending = values
            .iter()
            .filter(|(k, _)| k.starts_with("rocksdb.estimate-pending-compaction-bytes"))
            .any(|(_, v)| *v > 0.0);
        let m = Measured {
            write_amp: measured(d.figs, Metric::WriteAmp),
            space_amp: measured(d.figs, Metric::SpaceAmp),
            secs: d.secs,
            bytes_per_op: (d.ops > 0).then(|| d.written as f64 / d.ops as f64),
            pending_compaction: pending,
            syncs: d.step.syncs(),
        };
        let [w, s] = checks(&p, &m);
        lines.push(format!("{EXPLAIN_NOTE}{}; {}", w.line(), s.line()));
        said_checks = vec![w, s];
    }
    // Column-family writes in this step: the cumulative counts now less
    // those at the previous step's end.
    let now = cf_counters(values);
    let get = |v: &[(String, f64)], k: &str| v.iter().find(|(n, _)| n == k).map_or(0.0, |x| x.1);
    let mem = crate::engine::rocks_family::log::MEMTABLE_STAT;
    let cfs: std::collections::BTreeSet<&str> = now
        .iter()
        .filter_map(|(k, _)| k.strip_prefix("cf.flush_bytes.").or(k.strip_prefix(mem)))
        .filter(|cf| *cf != "__system__")
        .collect();
    for cf in cfs {
        extras.push((
            format!("cf.{cf}.memtable_mb"),
            get(&now, &format!("{mem}{cf}")) / 1e6,
        ));
        let d_flush = get(&now, &format!("cf.flush_bytes.{cf}"))
            - get(cf_before, &format!("cf.flush_bytes.{cf}"));
        let d_comp = get(&now, &format!("cf.compaction_bytes.{cf}"))
            - get(cf_before, &format!("cf.compaction_bytes.{cf}"));
        extras.push((format!("cf.{cf}.flush_mb"), d_flush / 1e6));
        extras.push((format!("cf.{cf}.compaction_mb"), d_comp / 1e6));
        if d_flush > 0.0 {
            extras.push((format!("cf.{cf}.w_amp"), (d_flush + d_comp) / d_flush));
        }
    }
    if !now.is_empty() {
        *cf_before = now;
    }
    // Each family's tree at the step's end (regime figures of seed 004).
    for sh in crate::model::shape::lsm_shapes(values) {
        lines.push(sh.line());
        let f = &sh.family;
        extras.push((format!("lsm.{f}.levels"), f64::from(sh.levels)));
        extras.push((format!("lsm.{f}.gaps"), f64::from(sh.gaps)));
        extras.push((format!("lsm.{f}.last_share"), sh.last_share));
        if let Some(x) = sh.fanout {
            extras.push((format!("lsm.{f}.fanout"), x));
        }
    }
    Said {
        extras,
        lines,
        checks: said_checks,
    }
}
