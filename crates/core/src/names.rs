//! Names as enums: [`named!`] declares an enum whose values have one name
//! each (the command line's, the results file's and JSON's), with `ALL`,
//! `name`, `parse` (an unknown name is a [`crate::UsageError`] listing the
//! valid ones), `Display` and `Serialize`. Steps, operation kinds, figures,
//! statuses and distributions are declared with it, so no code matches on
//! their strings.

/// Declares a named enum; see the module doc. `$what` names the kind of
/// value in errors (`ycsb step`, `distribution`, …).
#[macro_export]
macro_rules! named {
    (
        $(#[$m:meta])*
        $vis:vis enum $name:ident : $what:literal {
            $( $(#[doc = $doc:literal])* $var:ident = $s:literal ),+ $(,)?
        }
    ) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $( $(#[doc = $doc])* $var ),+
        }

        impl $name {
            /// Every value, in order.
            pub const ALL: &'static [$name] = &[$($name::$var),+];

            /// Its name: on the command line, in the results file and in JSON.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$var => $s),+
                }
            }

            /// What it is: its doc comment, one line.
            pub fn about(self) -> &'static str {
                match self {
                    $($name::$var => concat!($($doc),*).trim_start()),+
                }
            }

            /// Its position in [`Self::ALL`].
            pub fn index(self) -> usize {
                self as usize
            }

            /// Parses a name; the error lists the valid ones.
            pub fn parse(s: &str) -> Result<$name, $crate::UsageError> {
                Self::ALL.iter().copied().find(|v| v.name() == s).ok_or_else(|| {
                    $crate::UsageError(format!(
                        "unknown {} '{}' (known: {})",
                        $what,
                        s,
                        Self::names().join(", ")
                    ))
                })
            }

            /// Every name, in order.
            pub fn names() -> Vec<&'static str> {
                Self::ALL.iter().map(|v| v.name()).collect()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl $crate::serde::Serialize for $name {
            fn serialize<S: $crate::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }
    };
}

crate::named! {
    /// The outcome of a run or a step, as stored in the results file.
    pub enum Status: "status" {
        /// Still running, or the process died before it ended (a step's
        /// figures then come from its completed intervals).
        Running = "running",
        /// Ended normally.
        Done = "done",
        /// Ended with an error (recorded beside it).
        Failed = "failed",
        /// Stopped by Ctrl-C; what was measured is kept.
        Interrupted = "interrupted",
        /// A run of several clients some of which died or failed: the
        /// others' figures are kept, the run is short of theirs.
        Partial = "partial",
    }
}

/// What the write-amp and space-amp model needs of an engine besides
/// its structure; each engine's registry entry holds its own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelKnobs {
    /// The setting that holds its page (or block) size; "" for none.
    pub page_key: &'static str,
    /// Its page size when that setting is not set, in bytes.
    pub page_default: f64,
    /// Bytes a row carries besides its key and value (InnoDB: transaction
    /// id, roll pointer and record header; PostgreSQL: tuple header and
    /// line pointer).
    pub row_meta: f64,
    /// True for a B-Tree that compresses its pages: a ratio the model
    /// does not measure, and says so.
    pub compresses_pages: bool,
}

impl ModelKnobs {
    /// 4 KB pages under no setting, nothing per row, no compression.
    pub const PLAIN: ModelKnobs = ModelKnobs {
        page_key: "",
        page_default: 4096.0,
        row_meta: 0.0,
        compresses_pages: false,
    };
}

/// How an engine stores data: what the model predicts for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EngineStructure {
    /// A log-structured merge tree with leveled compaction.
    LeveledLsm,
    /// A B-Tree updated in place (pages written back after changes).
    UpdateInPlaceBTree,
    /// A copy-on-write B-Tree (a changed page is written to a new place).
    CopyOnWriteBTree,
    /// Stores nothing.
    None,
}

impl EngineStructure {
    /// How it is shown.
    pub fn name(self) -> &'static str {
        match self {
            EngineStructure::LeveledLsm => "leveled LSM",
            EngineStructure::UpdateInPlaceBTree => "update-in-place B-Tree",
            EngineStructure::CopyOnWriteBTree => "copy-on-write B-Tree",
            EngineStructure::None => "none",
        }
    }
}

/// Cached or IO-bound (`--bound`, a plan's `bound`): the corner a run
/// measures.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    /// No memory limit: the data fits in memory.
    Cache,
    /// A memory limit well below the data.
    Io,
}

impl Bound {
    /// Its name as recorded and written: `cache`, `io`.
    pub fn name(self) -> &'static str {
        match self {
            Bound::Cache => "cache",
            Bound::Io => "io",
        }
    }

    /// As the text reports say it: `cached`, `IO-bound`.
    pub fn in_words(self) -> &'static str {
        match self {
            Bound::Cache => "cached",
            Bound::Io => "IO-bound",
        }
    }
}

/// An engine's own counters, as it reports them.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct EngineStats {
    /// Numeric counters, by the engine's own names (e.g. RocksDB tickers,
    /// WiredTiger statistics descriptions) or ours where parsed from text
    /// (`compaction.w_amp.L1.default`).
    pub values: Vec<(String, f64)>,
    /// Text reports (e.g. RocksDB `rocksdb.stats`).
    pub texts: Vec<(String, String)>,
}

crate::named! {
    /// A figure the model predicts.
    pub enum ModelFigure: "model figure" {
        /// Device bytes written per logical byte written.
        WriteAmp = "write-amp",
        /// Bytes on disk per live logical byte.
        SpaceAmp = "space-amp",
    }
}

crate::named! {
    /// How a measured figure compares with the model's prediction.
    pub enum Verdict: "verdict" {
        /// Within 2× either way.
        Agree = "agree",
        /// Under half the prediction.
        Below = "below",
        /// Over twice the prediction.
        Above = "above",
        /// Under 0.01: nothing reached storage yet.
        NothingYet = "nothing-yet",
        /// The figure was not measured.
        NotMeasured = "not-measured",
    }
}

/// One figure of a step beside the model's prediction, as stored with the
/// step (table `model_checks`) and read back by reports: no report parses
/// an explanation's text.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ModelCheck {
    /// The figure.
    pub figure: ModelFigure,
    /// What the step measured; `None` when it was not measured.
    pub measured: Option<f64>,
    /// The model's prediction.
    pub predicted: f64,
    /// The prediction's dominant term, e.g. `wal` or `L0→L1`.
    pub dominant: Option<String>,
    /// How the two compare.
    pub verdict: Verdict,
    /// The likely reason, or why it was not measured; empty when they
    /// agree.
    pub reason: String,
}

impl Verdict {
    /// How `measured` compares with `predicted`: under 0.01 nothing
    /// reached storage; within 2× either way they agree.
    pub fn of(measured: Option<f64>, predicted: f64) -> Verdict {
        match measured {
            None => Verdict::NotMeasured,
            Some(v) if v < 0.01 => Verdict::NothingYet,
            Some(v) if v <= 2.0 * predicted && v >= predicted / 2.0 => Verdict::Agree,
            Some(v) if v < predicted / 2.0 => Verdict::Below,
            Some(_) => Verdict::Above,
        }
    }
}

impl ModelCheck {
    /// Measured over predicted, when both are there and above 0.01.
    pub fn ratio(&self) -> Option<f64> {
        self.measured
            .filter(|m| *m >= 0.01 && self.predicted > 0.0)
            .map(|m| m / self.predicted)
    }

    /// True when measured and predicted differ by more than 2×.
    pub fn diverges(&self) -> bool {
        matches!(self.verdict, Verdict::Below | Verdict::Above)
    }

    /// The comparison in words: `write-amp 3.71 measured vs 2.16
    /// predicted, wal dominates: agree within 2×`.
    pub fn line(&self) -> String {
        let what = self.figure;
        let pv = self.predicted;
        let dom = self
            .dominant
            .as_ref()
            .map_or(String::new(), |t| format!(", {t} dominates"));
        let v = self.measured.unwrap_or(0.0);
        match self.verdict {
            Verdict::NotMeasured => {
                format!(
                    "{what} predicted {pv:.2}{dom}; not measured: {}",
                    self.reason
                )
            }
            Verdict::NothingYet => format!(
                "{what} {v:.2} measured vs {pv:.2} predicted{dom}: nothing reached storage yet ({})",
                self.reason
            ),
            Verdict::Agree => {
                format!("{what} {v:.2} measured vs {pv:.2} predicted{dom}: agree within 2×")
            }
            Verdict::Below => format!(
                "{what} {v:.2} measured vs {pv:.2} predicted{dom}: measured {:.1}× below: {}",
                pv / v,
                self.reason
            ),
            Verdict::Above => format!(
                "{what} {v:.2} measured vs {pv:.2} predicted{dom}: measured {:.1}× above: {}",
                v / pv,
                self.reason
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Status;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_valid_ones() {
        for s in Status::ALL {
            assert_eq!(Status::parse(s.name()).unwrap(), *s);
            assert_eq!(s.to_string(), s.name());
        }
        let e = Status::parse("finished").unwrap_err().0;
        assert_eq!(
            e,
            "unknown status 'finished' (known: running, done, failed, interrupted, partial)"
        );
        assert_eq!(serde_json::to_string(&Status::Done).unwrap(), "\"done\"");
    }
}

/// Where a step sits in its run, as typed fields: the workload's step, the
/// storage class a storage sweep ran it at, the thread level a thread
/// sweep ran it at. Recorded with the step (its spec's `identity`); its
/// label (`pq.n`, `request@disk-array`, `pq.n@slow-ssd@8`) is made from
/// it, and only a results file from before it was recorded has its
/// identity parsed back from the label ([`StepIdentity::parse`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StepIdentity {
    /// The workload's step name (`pq.n`, `request`).
    pub step: String,
    /// The class of a `--storage` sweep it ran at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// The level of a `--threads` sweep it ran at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<usize>,
}

impl StepIdentity {
    /// The step's label: `STEP[@CLASS][@N]`.
    pub fn label(&self) -> String {
        let mut l = self.without_level();
        if let Some(n) = self.level {
            l.push_str(&format!("@{n}"));
        }
        l
    }

    /// The label without the thread level: what a thread sweep's levels
    /// of one step share.
    pub fn without_level(&self) -> String {
        match &self.class {
            Some(c) => format!("{}@{c}", self.step),
            None => self.step.clone(),
        }
    }

    /// A label read back (a results file recorded before the identity
    /// was): a last `@N` part is a thread level, another `@` part a class.
    pub fn parse(label: &str) -> StepIdentity {
        let (rest, level) = match label.rsplit_once('@') {
            Some((r, n)) if n.parse::<usize>().is_ok() => (r, n.parse().ok()),
            _ => (label, None),
        };
        let (step, class) = match rest.split_once('@') {
            Some((s, c)) => (s.to_string(), Some(c.to_string())),
            None => (rest.to_string(), None),
        };
        StepIdentity { step, class, level }
    }
}

#[cfg(test)]
mod identity_tests {
    use super::StepIdentity;

    #[test]
    fn labels_and_identities_round_trip() {
        for (label, step, class, level) in [
            ("pq.n", "pq.n", None, None),
            ("request@disk-array", "request", Some("disk-array"), None),
            ("pq.n@8", "pq.n", None, Some(8)),
            ("pq.n@slow-ssd@8", "pq.n", Some("slow-ssd"), Some(8)),
        ] {
            let id = StepIdentity::parse(label);
            assert_eq!(
                id,
                StepIdentity {
                    step: step.into(),
                    class: class.map(str::to_string),
                    level,
                }
            );
            assert_eq!(id.label(), label);
        }
    }
}

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
