//! Steps as enums: each workload declares its own (with `named!`) and says
//! of each step whether it loads the data set and whether it needs data it
//! does not load; [`Step`] holds a step of any workload for the runner.

use serde::{Serialize, Serializer};

use super::insert::InsertStep;
use super::kv::micro::MicroStep;
use super::kv::pattern::PatternStep;
use super::kv::ycsb::YcsbStep;
use super::linkbench::LinkbenchStep;
use super::{StepKind, WorkloadKind};

/// A step of one of the workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A step of `pattern`.
    Pattern(PatternStep),
    /// A step of `ycsb`.
    Ycsb(YcsbStep),
    /// A step of `micro`.
    Micro(MicroStep),
    /// A step of `linkbench`.
    Linkbench(LinkbenchStep),
    /// A step of `insert`.
    Insert(InsertStep),
}

/// Applies an expression to the workload's own step, whatever the variant.
macro_rules! each {
    ($step:expr, $s:ident => $e:expr) => {
        match $step {
            Step::Pattern($s) => $e,
            Step::Ycsb($s) => $e,
            Step::Micro($s) => $e,
            Step::Linkbench($s) => $e,
            Step::Insert($s) => $e,
        }
    };
}

impl Step {
    /// The step's name (`load`, `pq.1`, `readrandom`, …).
    pub fn name(self) -> &'static str {
        each!(self, s => s.name())
    }
    /// What the step does, one line (its doc comment).
    pub fn about(self) -> &'static str {
        each!(self, s => s.about())
    }
    /// See [`StepKind::syncs`].
    pub fn syncs(self) -> Option<bool> {
        each!(self, s => s.syncs())
    }
    /// See [`StepKind::loads`].
    pub fn loads(self) -> bool {
        each!(self, s => s.loads())
    }
    /// See [`StepKind::needs_data`].
    pub fn needs_data(self) -> bool {
        each!(self, s => s.needs_data())
    }
    /// See [`StepKind::concurrent`].
    pub fn concurrent(self) -> bool {
        each!(self, s => s.concurrent())
    }
    /// See [`StepKind::repeatable`].
    pub fn repeatable(self) -> bool {
        each!(self, s => s.repeatable())
    }
    /// The workload it belongs to.
    pub fn workload(self) -> WorkloadKind {
        match self {
            Step::Pattern(_) => WorkloadKind::Pattern,
            Step::Ycsb(_) => WorkloadKind::Ycsb,
            Step::Micro(_) => WorkloadKind::Micro,
            Step::Linkbench(_) => WorkloadKind::Linkbench,
            Step::Insert(_) => WorkloadKind::Insert,
        }
    }
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Step {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Converts a [`Step`] back to a workload's own step (an error names the
/// mismatch: a workload was handed another's step).
macro_rules! own_step {
    ($variant:ident, $t:ty) => {
        impl TryFrom<Step> for $t {
            type Error = anyhow::Error;
            fn try_from(s: Step) -> anyhow::Result<$t> {
                match s {
                    Step::$variant(x) => Ok(x),
                    other => Err(anyhow::anyhow!(
                        "step '{other}' of workload {} given to workload {}",
                        other.workload().name(),
                        WorkloadKind::$variant.name()
                    )),
                }
            }
        }
        impl From<$t> for Step {
            fn from(s: $t) -> Step {
                Step::$variant(s)
            }
        }
    };
}
own_step!(Pattern, PatternStep);
own_step!(Ycsb, YcsbStep);
own_step!(Micro, MicroStep);
own_step!(Linkbench, LinkbenchStep);
own_step!(Insert, InsertStep);

impl WorkloadKind {
    /// The workload's steps, in run order.
    pub fn steps(self) -> Vec<Step> {
        match self {
            WorkloadKind::Pattern => PatternStep::ALL.iter().map(|s| Step::from(*s)).collect(),
            WorkloadKind::Ycsb => YcsbStep::ALL.iter().map(|s| Step::from(*s)).collect(),
            WorkloadKind::Micro => MicroStep::ALL.iter().map(|s| Step::from(*s)).collect(),
            WorkloadKind::Linkbench => LinkbenchStep::ALL.iter().map(|s| Step::from(*s)).collect(),
            WorkloadKind::Insert => InsertStep::ALL.iter().map(|s| Step::from(*s)).collect(),
        }
    }

    /// Parses a step name of this workload; the error lists its steps.
    pub fn step(self, name: &str) -> Result<Step, crate::UsageError> {
        Ok(match self {
            WorkloadKind::Pattern => PatternStep::parse(name)?.into(),
            WorkloadKind::Ycsb => YcsbStep::parse(name)?.into(),
            WorkloadKind::Micro => MicroStep::parse(name)?.into(),
            WorkloadKind::Linkbench => LinkbenchStep::parse(name)?.into(),
            WorkloadKind::Insert => InsertStep::parse(name)?.into(),
        })
    }

    /// The step to run first when the selection needs data but loads none
    /// (`--steps a,b` on ycsb, `--steps pq.1` on pattern, `--steps
    /// readrandom` on micro), so no step measures an empty database: the
    /// workload's first loading step. `None` when nothing needs it.
    pub fn load_first(self, steps: &[Step]) -> Option<Step> {
        let needs = steps.iter().any(|s| s.needs_data());
        let loads = steps.iter().any(|s| s.loads());
        if !needs || loads {
            return None;
        }
        self.steps().into_iter().find(|s| s.loads())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_workload_has_a_loading_step_first_and_names_round_trip() {
        for w in WorkloadKind::ALL {
            let steps = w.steps();
            assert!(steps[0].loads(), "{}", w.name());
            for s in &steps {
                assert_eq!(w.step(s.name()).unwrap(), *s);
                assert_eq!(s.workload(), *w);
            }
            let e = w.step("nostep").unwrap_err().0;
            assert!(e.contains("'nostep'") && e.contains(steps[0].name()), "{e}");
        }
    }

    #[test]
    fn load_first_only_when_data_is_needed_and_not_loaded() {
        let y = |n: &str| WorkloadKind::Ycsb.step(n).unwrap();
        assert_eq!(
            WorkloadKind::Ycsb.load_first(&[y("a"), y("c")]),
            Some(y("load"))
        );
        assert_eq!(WorkloadKind::Ycsb.load_first(&[y("load"), y("c")]), None);
        let m = |n: &str| WorkloadKind::Micro.step(n).unwrap();
        assert_eq!(
            WorkloadKind::Micro.load_first(&[m("readrandom")]),
            Some(m("fillseq"))
        );
        assert_eq!(
            WorkloadKind::Micro.load_first(&[m("fillrandom"), m("readrandom")]),
            None
        );
        assert_eq!(WorkloadKind::Micro.load_first(&[m("overwrite")]), None);
        let l = |n: &str| WorkloadKind::Linkbench.step(n).unwrap();
        assert_eq!(
            WorkloadKind::Linkbench.load_first(&[l("request")]),
            Some(l("load"))
        );
    }
}
