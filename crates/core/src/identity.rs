//! Where a step sits in its run.

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
