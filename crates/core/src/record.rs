//! The typed step record: what a step's producers (the harness, the
//! model, the workload) hand to the results layer beside the metric
//! figures, and what reports read back, as fields and enums. The results
//! file stores it as named rows (table `extras`) and as note lines (table
//! `step_notes`); this module alone names those rows and prefixes, so no
//! producer and no report agree on a figure through a string.

use std::collections::BTreeMap;

/// Equal slices of each step whose throughput is recorded (the insert
/// benchmark's "rate in 10 time slices").
pub const SLICES: usize = 10;

// The stored names (rows of table `extras`, keys of the JSON report's
// `extras`). Only this module reads or writes them.
const SLICE: &str = "slice.";
const CALLS_PER_SEC: &str = "calls_per_sec";
const BG_OPS: &str = "bg_ops";
const MEM_PEAK_MB: &str = "mem_peak_mb";
const MEM_LIMIT_HITS: &str = "mem_limit_hits";
const PRED_WRITE_AMP: &str = "pred_write_amp";
const PRED_SPACE_AMP: &str = "pred_space_amp";
const FAMILY: &str = "cf.";
const TREE: &str = "lsm.";
const MODEL_NOTE: &str = "model ";
const EXPLAIN_NOTE: &str = "explain: ";
const BACKGROUND: &str = "bg.";

/// Which engine a step ran, and, in a view merged from several runs,
/// which run or corner: what reports group and compare by. Shown as
/// `ENGINE`, `CORNER:ENGINE` (`io:rocksdb`) or `RUN:ENGINE` (`12:rocksdb`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EngineLabel {
    /// The run, in a view merged from runs that are not one per corner.
    pub run: Option<i64>,
    /// The corner, in a view merged from one run per corner.
    pub corner: Option<crate::bound::Bound>,
    /// The engine as its run names it (`rocksdb`, `rocksdb[bloom=10]`).
    pub engine: String,
}

impl EngineLabel {
    /// An engine of a lone run.
    pub fn plain(engine: &str) -> EngineLabel {
        EngineLabel {
            engine: engine.to_string(),
            ..EngineLabel::default()
        }
    }

    /// Its corner or run as shown before the engine (`io`, `12`).
    pub fn prefix(&self) -> Option<String> {
        match (self.corner, self.run) {
            (Some(c), _) => Some(c.name().to_string()),
            (None, Some(r)) => Some(r.to_string()),
            (None, None) => None,
        }
    }

    /// As the short report shows it: a corner in words (`cached
    /// rocksdb`, `IO-bound rocksdb`), a run as `12:rocksdb`.
    pub fn in_words(&self) -> String {
        match self.corner {
            Some(c) => format!("{} {}", c.in_words(), self.engine),
            None => self.to_string(),
        }
    }

    /// The same engine in `corner`.
    pub fn in_corner(&self, corner: Option<crate::bound::Bound>) -> EngineLabel {
        EngineLabel {
            corner,
            ..self.clone()
        }
    }
}

impl std::fmt::Display for EngineLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.prefix() {
            Some(p) => write!(f, "{p}:{}", self.engine),
            None => f.write_str(&self.engine),
        }
    }
}

/// How a background thread's operation kind is named among a step's
/// response times: `bg.NAME`.
pub fn background_op(name: &str) -> String {
    format!("{BACKGROUND}{name}")
}

/// True for a background thread's operation kind (see [`background_op`]).
pub fn is_background(op: &str) -> bool {
    op.starts_with(BACKGROUND)
}

/// The names of the workloads' own figures that another layer reads
/// (reports, plans): named here, once, for both the workload that writes
/// them and the report that reads them.
pub mod workload_figure {
    /// Inserts per second the insert benchmark's background writer
    /// reached.
    pub const WRITER_IPS: &str = "writer_ips";
    /// Inserts per second it was asked for.
    pub const WRITER_TARGET_IPS: &str = "writer_target_ips";
    /// Deletes per second it reached.
    pub const WRITER_DPS: &str = "writer_dps";
    /// 1 when the writer fell behind its rate.
    pub const WRITER_BEHIND: &str = "writer_behind";
}

/// The harness's own figures of a step.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Harness {
    /// Calls per second where a call counts as several operations (a
    /// batch of rows, a range query's documents).
    pub calls_per_sec: Option<f64>,
    /// Background operations (a rate-limited writer's).
    pub bg_ops: Option<f64>,
    /// Throughput in each of [`SLICES`] equal slices of the step, ops/s
    /// (empty for a step too short to slice).
    pub slices: Vec<f64>,
    /// Peak memory of the engine's cgroup over the step, MB (`--memory`).
    pub mem_peak_mb: Option<f64>,
    /// Charges the engine's cgroup refused at its memory limit.
    pub mem_limit_hits: Option<f64>,
}

/// The amplification model's prediction for a step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    /// Device bytes written per logical byte written.
    pub write_amp: f64,
    /// Bytes on disk per live logical byte.
    pub space_amp: f64,
}

impl Prediction {
    /// The predicted figure.
    pub fn of(self, f: crate::check::ModelFigure) -> f64 {
        match f {
            crate::check::ModelFigure::WriteAmp => self.write_amp,
            crate::check::ModelFigure::SpaceAmp => self.space_amp,
        }
    }
}

/// One column family's writes in a step (RocksDB, MyRocks).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FamilyWrites {
    /// Its memtables at the step's end, MB.
    pub memtable_mb: Option<f64>,
    /// MB flushed from memtables in the step.
    pub flush_mb: Option<f64>,
    /// MB written by compaction in the step.
    pub compaction_mb: Option<f64>,
    /// (flush + compaction) / flush, when anything was flushed.
    pub w_amp: Option<f64>,
}

/// One column family's tree at the step's end (see
/// the amplification model's shape, ampbench-ampmodel).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TreeShape {
    /// Levels below L0 holding data.
    pub levels: Option<f64>,
    /// Empty levels between L0 and the last.
    pub gaps: Option<f64>,
    /// The last level's share of the bytes.
    pub last_share: Option<f64>,
    /// The size ratio between adjacent levels, where there are two.
    pub fanout: Option<f64>,
}

/// What a step records beside its metric figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepExtras {
    /// The harness's figures.
    pub harness: Harness,
    /// The model's prediction, where it has one for the engine.
    pub prediction: Option<Prediction>,
    /// Column-family writes, by family.
    pub families: BTreeMap<String, FamilyWrites>,
    /// Column-family trees at the step's end, by family.
    pub trees: BTreeMap<String, TreeShape>,
    /// The workload's own figures, by the names it gives them (consistency
    /// pairs, rows per query, retries per operation…), and any row an
    /// older or newer ampbench stored that this one does not know.
    pub workload: BTreeMap<String, f64>,
}

impl StepExtras {
    /// The record as stored rows `(name, value)`, sorted by name.
    pub fn rows(&self) -> Vec<(String, f64)> {
        let mut out: BTreeMap<String, f64> = self.workload.clone();
        let mut put = |k: String, v: Option<f64>| {
            if let Some(v) = v {
                out.insert(k, v);
            }
        };
        let h = &self.harness;
        put(CALLS_PER_SEC.into(), h.calls_per_sec);
        put(BG_OPS.into(), h.bg_ops);
        put(MEM_PEAK_MB.into(), h.mem_peak_mb);
        put(MEM_LIMIT_HITS.into(), h.mem_limit_hits);
        for (i, v) in h.slices.iter().enumerate() {
            put(format!("{SLICE}{}", i + 1), Some(*v));
        }
        if let Some(p) = self.prediction {
            put(PRED_WRITE_AMP.into(), Some(p.write_amp));
            put(PRED_SPACE_AMP.into(), Some(p.space_amp));
        }
        for (cf, f) in &self.families {
            put(format!("{FAMILY}{cf}.memtable_mb"), f.memtable_mb);
            put(format!("{FAMILY}{cf}.flush_mb"), f.flush_mb);
            put(format!("{FAMILY}{cf}.compaction_mb"), f.compaction_mb);
            put(format!("{FAMILY}{cf}.w_amp"), f.w_amp);
        }
        for (cf, t) in &self.trees {
            put(format!("{TREE}{cf}.levels"), t.levels);
            put(format!("{TREE}{cf}.gaps"), t.gaps);
            put(format!("{TREE}{cf}.last_share"), t.last_share);
            put(format!("{TREE}{cf}.fanout"), t.fanout);
        }
        out.into_iter().collect()
    }

    /// The record from stored rows; a row it does not know is kept among
    /// the workload's figures, so nothing stored is lost.
    pub fn from_rows<'a>(rows: impl IntoIterator<Item = (&'a str, f64)>) -> StepExtras {
        let mut x = StepExtras::default();
        let mut slices: BTreeMap<usize, f64> = BTreeMap::new();
        let (mut pw, mut ps) = (None, None);
        for (k, v) in rows {
            if !x.take(k, v, &mut slices, &mut pw, &mut ps) {
                x.workload.insert(k.to_string(), v);
            }
        }
        // Slices are 1..=n without a gap; anything else stays as stored.
        if slices.keys().copied().eq(1..=slices.len()) {
            x.harness.slices = slices.into_values().collect();
        } else {
            for (i, v) in slices {
                x.workload.insert(format!("{SLICE}{i}"), v);
            }
        }
        match (pw, ps) {
            (Some(write_amp), Some(space_amp)) => {
                x.prediction = Some(Prediction {
                    write_amp,
                    space_amp,
                })
            }
            (w, s) => {
                if let Some(w) = w {
                    x.workload.insert(PRED_WRITE_AMP.into(), w);
                }
                if let Some(s) = s {
                    x.workload.insert(PRED_SPACE_AMP.into(), s);
                }
            }
        }
        x
    }

    /// Takes one known row; false for a name it does not know.
    fn take(
        &mut self,
        k: &str,
        v: f64,
        slices: &mut BTreeMap<usize, f64>,
        pw: &mut Option<f64>,
        ps: &mut Option<f64>,
    ) -> bool {
        let h = &mut self.harness;
        let slot = match k {
            CALLS_PER_SEC => &mut h.calls_per_sec,
            BG_OPS => &mut h.bg_ops,
            MEM_PEAK_MB => &mut h.mem_peak_mb,
            MEM_LIMIT_HITS => &mut h.mem_limit_hits,
            PRED_WRITE_AMP => pw,
            PRED_SPACE_AMP => ps,
            _ => {
                if let Some(i) = k
                    .strip_prefix(SLICE)
                    .and_then(|i| i.parse::<usize>().ok().filter(|n| n.to_string() == i))
                {
                    if i >= 1 {
                        slices.insert(i, v);
                        return true;
                    }
                    return false;
                }
                return self.take_family(k, v);
            }
        };
        *slot = Some(v);
        true
    }

    /// Takes a `cf.NAME.FIELD` or `lsm.NAME.FIELD` row.
    fn take_family(&mut self, k: &str, v: f64) -> bool {
        if let Some((cf, field)) = k.strip_prefix(FAMILY).and_then(|r| r.rsplit_once('.')) {
            let f = self.families.entry(cf.to_string()).or_default();
            let slot = match field {
                "memtable_mb" => &mut f.memtable_mb,
                "flush_mb" => &mut f.flush_mb,
                "compaction_mb" => &mut f.compaction_mb,
                "w_amp" => &mut f.w_amp,
                _ => {
                    if *f == FamilyWrites::default() {
                        self.families.remove(cf);
                    }
                    return false;
                }
            };
            *slot = Some(v);
            return true;
        }
        if let Some((cf, field)) = k.strip_prefix(TREE).and_then(|r| r.rsplit_once('.')) {
            let t = self.trees.entry(cf.to_string()).or_default();
            let slot = match field {
                "levels" => &mut t.levels,
                "gaps" => &mut t.gaps,
                "last_share" => &mut t.last_share,
                "fanout" => &mut t.fanout,
                _ => {
                    if *t == TreeShape::default() {
                        self.trees.remove(cf);
                    }
                    return false;
                }
            };
            *slot = Some(v);
            return true;
        }
        false
    }

    /// A figure by its stored name (a plan's `figure = "lsm.cf_link_pk.levels"`
    /// or a workload figure's name).
    pub fn named(&self, name: &str) -> Option<f64> {
        match self.workload.get(name) {
            Some(v) => Some(*v),
            None => self
                .rows()
                .into_iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v),
        }
    }

    /// True for a stored name of a column family's write (`cf.NAME.…`):
    /// a plan's figure that sums families.
    pub fn names_family(name: &str) -> Option<&str> {
        name.strip_prefix(FAMILY)
    }

    /// The figures shown in a report's "workload figures": the
    /// workload's, the background ops, the trees' and, with `memory`, the
    /// memory group's (the slices, the prediction, the families' writes
    /// and calls/s have tables of their own), as `(name, value)` sorted
    /// by name.
    pub fn shown_with_workload(&self, memory: bool) -> Vec<(String, f64)> {
        let h = &self.harness;
        let x = StepExtras {
            harness: Harness {
                bg_ops: h.bg_ops,
                mem_peak_mb: h.mem_peak_mb.filter(|_| memory),
                mem_limit_hits: h.mem_limit_hits.filter(|_| memory),
                ..Harness::default()
            },
            trees: self.trees.clone(),
            // Rows this build does not know under a name it writes (a
            // file of another build) stay out, as their tables' own.
            workload: self
                .workload
                .iter()
                .filter(|(k, _)| ![SLICE, "pred_", FAMILY].iter().any(|p| k.starts_with(p)))
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            ..StepExtras::default()
        };
        x.rows()
    }

    /// The mean of each stored figure over `steps` (repetitions), over
    /// those that have it.
    pub fn mean(steps: &[&StepExtras]) -> StepExtras {
        let mut acc: BTreeMap<String, (f64, f64)> = BTreeMap::new();
        for s in steps {
            for (k, v) in s.rows() {
                let e = acc.entry(k).or_default();
                e.0 += v;
                e.1 += 1.0;
            }
        }
        StepExtras::from_rows(acc.iter().map(|(k, (sum, n))| (k.as_str(), sum / n)))
    }

    /// One record for several clients' records of the same step: counts
    /// and rates summed (rows, retries, slice rates, calls/s), the
    /// memory peak the highest, and what describes the one engine they
    /// share (the model's prediction, its column families' writes and
    /// trees) the first client's.
    pub fn merge(clients: &[&StepExtras]) -> StepExtras {
        let Some(first) = clients.first() else {
            return StepExtras::default();
        };
        let sum = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
        let mut out = StepExtras {
            prediction: first.prediction,
            families: first.families.clone(),
            trees: first.trees.clone(),
            ..StepExtras::default()
        };
        for c in clients {
            let (h, o) = (&c.harness, &mut out.harness);
            o.calls_per_sec = sum(o.calls_per_sec, h.calls_per_sec);
            o.bg_ops = sum(o.bg_ops, h.bg_ops);
            o.mem_limit_hits = sum(o.mem_limit_hits, h.mem_limit_hits);
            o.mem_peak_mb = match (o.mem_peak_mb, h.mem_peak_mb) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            if o.slices.len() < h.slices.len() {
                o.slices.resize(h.slices.len(), 0.0);
            }
            for (a, b) in o.slices.iter_mut().zip(&h.slices) {
                *a += b;
            }
            for (k, v) in &c.workload {
                *out.workload.entry(k.clone()).or_default() += v;
            }
        }
        out
    }
}

/// What a workload says after a step: its own figures and lines.
#[derive(Clone, Debug, Default)]
pub struct StepNotes {
    /// Its figures by the names it gives them, stored with the step
    /// (see [`StepExtras::workload`]).
    pub figures: Vec<(String, f64)>,
    /// Lines for the run's output, stored as [`Note::Said`].
    pub lines: Vec<String>,
}

/// What a step's producers say of it, one line each, by who says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    /// The workload's or the harness's (a consistency check, retries, a
    /// tree's shape): shown among the workload notes.
    Said(String),
    /// The model's prediction and what it assumed.
    Model(String),
    /// The model's explanation of the measured against the predicted.
    Explain(String),
}

impl Note {
    /// Its text, without who said it.
    pub fn text(&self) -> &str {
        match self {
            Note::Said(t) | Note::Model(t) | Note::Explain(t) => t,
        }
    }

    /// The same kind of note with `f` applied to its text.
    pub fn map(&self, f: impl FnOnce(&str) -> String) -> Note {
        match self {
            Note::Said(t) => Note::Said(f(t)),
            Note::Model(t) => Note::Model(f(t)),
            Note::Explain(t) => Note::Explain(f(t)),
        }
    }

    /// True for the model's lines.
    pub fn is_model(&self) -> bool {
        !matches!(self, Note::Said(_))
    }

    /// As stored (and shown in the JSON report): the model's lines with
    /// their prefix.
    pub fn stored(&self) -> String {
        match self {
            Note::Said(t) => t.clone(),
            Note::Model(t) => format!("{MODEL_NOTE}{t}"),
            Note::Explain(t) => format!("{EXPLAIN_NOTE}{t}"),
        }
    }

    /// A stored line back.
    pub fn from_stored(line: &str) -> Note {
        if let Some(t) = line.strip_prefix(MODEL_NOTE) {
            Note::Model(t.to_string())
        } else if let Some(t) = line.strip_prefix(EXPLAIN_NOTE) {
            Note::Explain(t.to_string())
        } else {
            Note::Said(line.to_string())
        }
    }
}

impl serde::Serialize for Note {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.stored())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(r: &[(&str, f64)]) -> Vec<(String, f64)> {
        let mut v: Vec<(String, f64)> = r.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    #[test]
    fn stored_rows_come_back_as_they_went() {
        let stored = rows(&[
            ("calls_per_sec", 12.0),
            ("bg_ops", 3.0),
            ("slice.1", 10.0),
            ("slice.2", 20.0),
            ("pred_write_amp", 4.5),
            ("pred_space_amp", 1.1),
            ("cf.default.flush_mb", 2.0),
            ("cf.default.w_amp", 3.0),
            ("lsm.default.levels", 3.0),
            ("lsm.default.fanout", 10.0),
            ("consistency_mismatches", 0.0),
            ("retries.insert", 2.0),
            ("cf.default.something_new", 7.0),
        ]);
        let x = StepExtras::from_rows(stored.iter().map(|(k, v)| (k.as_str(), *v)));
        assert_eq!(x.harness.slices, vec![10.0, 20.0]);
        assert_eq!(x.harness.calls_per_sec, Some(12.0));
        assert_eq!(
            x.prediction,
            Some(Prediction {
                write_amp: 4.5,
                space_amp: 1.1
            })
        );
        assert_eq!(x.families["default"].flush_mb, Some(2.0));
        assert_eq!(x.trees["default"].fanout, Some(10.0));
        assert_eq!(x.workload["cf.default.something_new"], 7.0);
        assert_eq!(x.workload.len(), 3);
        assert_eq!(x.rows(), stored);
    }

    #[test]
    fn a_lone_prediction_or_a_gap_in_the_slices_is_kept_as_stored() {
        let stored = rows(&[("pred_write_amp", 2.0), ("slice.1", 1.0), ("slice.3", 3.0)]);
        let x = StepExtras::from_rows(stored.iter().map(|(k, v)| (k.as_str(), *v)));
        assert_eq!(x.prediction, None);
        assert!(x.harness.slices.is_empty());
        assert_eq!(x.rows(), stored);
    }

    #[test]
    fn only_names_it_writes_are_taken_and_others_stay_out_of_the_workload_table() {
        let x = StepExtras::from_rows([
            ("slice.01", 1.0),
            ("slice.1", 2.0),
            ("pred_space_amp", 3.0),
            ("rows", 4.0),
            ("mem_peak_mb", 5.0),
        ]);
        assert_eq!(x.harness.slices, vec![2.0]);
        assert_eq!(x.workload["slice.01"], 1.0);
        assert_eq!(
            x.shown_with_workload(false),
            vec![("rows".to_string(), 4.0)]
        );
        assert_eq!(x.shown_with_workload(true).len(), 2);
        assert_eq!(x.named("rows"), Some(4.0));
        assert_eq!(x.named("slice.1"), Some(2.0));
    }

    #[test]
    fn clients_add_up_and_share_the_engine() {
        let a = StepExtras::from_rows([
            ("slice.1", 10.0),
            ("mem_peak_mb", 5.0),
            ("pred_write_amp", 2.0),
            ("pred_space_amp", 1.0),
            ("cf.x.flush_mb", 4.0),
            ("rows", 1.0),
        ]);
        let b = StepExtras::from_rows([
            ("slice.1", 30.0),
            ("mem_peak_mb", 9.0),
            ("pred_write_amp", 3.0),
            ("pred_space_amp", 1.5),
            ("cf.x.flush_mb", 4.0),
            ("rows", 2.0),
        ]);
        let m = StepExtras::merge(&[&a, &b]);
        assert_eq!(m.harness.slices, vec![40.0]);
        assert_eq!(m.harness.mem_peak_mb, Some(9.0));
        assert_eq!(m.prediction.map(|p| p.write_amp), Some(2.0));
        assert_eq!(m.families["x"].flush_mb, Some(4.0));
        assert_eq!(m.workload["rows"], 3.0);
        let mean = StepExtras::mean(&[&a, &b]);
        assert_eq!(mean.workload["rows"], 1.5);
        assert_eq!(mean.harness.slices, vec![20.0]);
    }

    #[test]
    fn notes_keep_who_said_them() {
        for n in [
            Note::Said("a check".into()),
            Note::Model("leveled LSM: write-amp 5".into()),
            Note::Explain("write-amp agrees".into()),
        ] {
            assert_eq!(Note::from_stored(&n.stored()), n);
        }
        assert_eq!(Note::Model("x".into()).stored(), "model x");
        assert!(Note::Explain("x".into()).is_model());
    }
}
