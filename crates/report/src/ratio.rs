//! A ratio of two figures, and the noise floor below which a base says
//! nothing: what the ratio tables of every format and the repetitions'
//! intervals share.

use crate::metrics::Metric;

/// `a / b` when both were measured and `b` is not zero.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    }
}

/// The noise floor of a figure as a ratio's base: below it the base is
/// a rounding error (a step that writes nothing shows 0.001 KB/op of
/// metadata), and a ratio to it says nothing. With how it is said.
pub fn floor(m: Metric) -> Option<(f64, &'static str)> {
    Some(match m {
        Metric::RPerOp => (0.001, "r/o under 0.001"),
        Metric::RkbPerOp => (0.01, "rKB/o under 0.01"),
        Metric::WkbPerOp => (0.01, "wKB/o under 0.01"),
        Metric::CsPerOp => (0.01, "cs/o under one switch per 100 ops"),
        Metric::CpuUsPerOp => (0.1, "cpu/o under 0.1 µs"),
        Metric::WriteAmp | Metric::SpaceAmp => (0.01, "an amplification under 0.01"),
        Metric::DbBytes => (1e6, "a database under 1 MB"),
        _ => return None,
    })
}

/// `a / b` for figure `m`, unless the base is missing, zero or below
/// the figure's [`floor`]: Err(true) when it is the floor that stops it.
pub fn metric_ratio(m: Metric, a: Option<f64>, b: Option<f64>) -> Result<f64, bool> {
    if let (Some((f, _)), Some(b)) = (floor(m), b) {
        if b.abs() < f {
            return Err(true);
        }
    }
    ratio(a, b).ok_or(false)
}
