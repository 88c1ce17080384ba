//! The model beside measurement: the figures the amplification model
//! predicts, and each step's check of a prediction against what was
//! measured, with its verdict.

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
