//! After a step: the model's prediction beside the measurement (a
//! [`Prediction`], a model and an explain [`Note`]), and, for RocksDB and
//! MyRocks, the step's writes per column family ([`FamilyWrites`]) and
//! each family's tree at the step's end ([`TreeShape`], from
//! [`crate::ampmodel::shape`]).

use crate::ampmodel::step::{Facts, Measured, checks, predict_step};
use crate::check::ModelCheck;
use crate::engine::EngineStats;
use crate::metrics::{Figure, Metric};
use crate::record::{FamilyWrites, Note, Prediction, StepExtras, TreeShape};
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

/// What the model says of a step: its part of the record (prediction,
/// families, trees), note lines and the typed checks of measured against
/// predicted.
#[derive(Default)]
pub(super) struct Said {
    pub record: StepExtras,
    pub lines: Vec<Note>,
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

/// The model's part of the record, note lines and checks for a step; `cf_before`
/// holds the engine's cumulative column-family writes at the previous
/// step's end and is updated.
// Long: the model's part of a step in order: the prediction and its two checks
// against the measured figures, each column family's writes since the last
// step, each family's tree shape; they fill one record.
pub(super) fn notes(d: &Done, cf_before: &mut Vec<(String, f64)>) -> Said {
    let mut record = StepExtras::default();
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
        record.prediction = Some(Prediction {
            write_amp: p.write_amp.value(),
            space_amp: p.space_amp.value(),
        });
        lines.push(Note::Model(format!(
            "{}: write-amp {} · space-amp {} · from the run: {} · assumed: {}",
            p.structure,
            p.write_amp.show(),
            p.space_amp.show(),
            if p.measured.is_empty() {
                "nothing".into()
            } else {
                p.measured.join(", ")
            },
            p.assumed.join("; ")
        )));
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
        lines.push(Note::Explain(format!("{}; {}", w.line(), s.line())));
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
        let d_flush = get(&now, &format!("cf.flush_bytes.{cf}"))
            - get(cf_before, &format!("cf.flush_bytes.{cf}"));
        let d_comp = get(&now, &format!("cf.compaction_bytes.{cf}"))
            - get(cf_before, &format!("cf.compaction_bytes.{cf}"));
        record.families.insert(
            cf.to_string(),
            FamilyWrites {
                memtable_mb: Some(get(&now, &format!("{mem}{cf}")) / 1e6),
                flush_mb: Some(d_flush / 1e6),
                compaction_mb: Some(d_comp / 1e6),
                w_amp: (d_flush > 0.0).then(|| (d_flush + d_comp) / d_flush),
            },
        );
    }
    if !now.is_empty() {
        *cf_before = now;
    }
    // Each family's tree at the step's end (regime figures of seed 004).
    for sh in crate::ampmodel::shape::lsm_shapes(values) {
        lines.push(Note::Said(sh.line()));
        record.trees.insert(
            sh.family.clone(),
            TreeShape {
                levels: Some(f64::from(sh.levels)),
                gaps: Some(f64::from(sh.gaps)),
                last_share: Some(sh.last_share),
                fanout: sh.fanout,
            },
        );
    }
    Said {
        record,
        lines,
        checks: said_checks,
    }
}
