//! The Universal Scalability Law fitted to a concurrency sweep:
//! X(N) = λN / (1 + σ(N−1) + κN(N−1)), with λ the throughput of one
//! thread, σ contention and κ coherency (crosstalk). Fitted by least
//! squares on the linearised form N·λ/X(N) − 1 = σ(N−1) + κN(N−1), with
//! σ and κ held at 0 or above; the predicted peak is at N* = √((1−σ)/κ).

/// A fit and how far each point is from it.
#[derive(Clone, Debug, PartialEq)]
pub struct UslFit {
    /// Throughput of one thread (measured at N = 1, or scaled from the
    /// smallest N measured).
    pub lambda: f64,
    /// Contention.
    pub sigma: f64,
    /// Coherency.
    pub kappa: f64,
    /// Concurrency of the predicted peak (None when κ = 0: no peak).
    pub peak_n: Option<f64>,
    /// (measured − predicted) / predicted, per point in the given order.
    pub residuals: Vec<f64>,
}

impl UslFit {
    /// The predicted throughput at `n`.
    pub fn predict(&self, n: f64) -> f64 {
        self.lambda * n / (1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0))
    }
}

/// Fits (threads, throughput) points; None with fewer than three distinct
/// levels or a throughput that is not positive.
pub fn fit(points: &[(f64, f64)]) -> Option<UslFit> {
    let mut levels: Vec<f64> = points.iter().map(|p| p.0).collect();
    levels.sort_by(f64::total_cmp);
    levels.dedup();
    if levels.len() < 3
        || points
            .iter()
            .any(|p| p.0 < 1.0 || p.1 <= 0.0 || !p.1.is_finite())
    {
        return None;
    }
    let (n0, x0) = points.iter().copied().min_by(|a, b| a.0.total_cmp(&b.0))?;
    let lambda = x0 / n0;
    // Rows: a = N−1, b = N(N−1), y = Nλ/X − 1.
    let rows: Vec<(f64, f64, f64)> = points
        .iter()
        .map(|&(n, x)| (n - 1.0, n * (n - 1.0), n * lambda / x - 1.0))
        .collect();
    let one = |col: fn(&(f64, f64, f64)) -> f64| {
        let num: f64 = rows.iter().map(|r| col(r) * r.2).sum();
        let den: f64 = rows.iter().map(|r| col(r) * col(r)).sum();
        if den > 0.0 { (num / den).max(0.0) } else { 0.0 }
    };
    let (saa, sbb, sab) = rows.iter().fold((0.0, 0.0, 0.0), |s, r| {
        (s.0 + r.0 * r.0, s.1 + r.1 * r.1, s.2 + r.0 * r.1)
    });
    let (say, sby) = rows
        .iter()
        .fold((0.0, 0.0), |s, r| (s.0 + r.0 * r.2, s.1 + r.1 * r.2));
    let det = saa * sbb - sab * sab;
    let (mut sigma, mut kappa) = if det.abs() > 1e-12 {
        ((say * sbb - sby * sab) / det, (sby * saa - say * sab) / det)
    } else {
        (0.0, 0.0)
    };
    if sigma < 0.0 || det.abs() <= 1e-12 {
        sigma = 0.0;
        kappa = one(|r| r.1);
    }
    if kappa < 0.0 {
        kappa = 0.0;
        sigma = one(|r| r.0);
    }
    let mut f = UslFit {
        lambda,
        sigma,
        kappa,
        peak_n: (kappa > 0.0 && sigma < 1.0).then(|| ((1.0 - sigma) / kappa).sqrt()),
        residuals: Vec::new(),
    };
    f.residuals = points
        .iter()
        .map(|&(n, x)| (x - f.predict(n)) / f.predict(n))
        .collect();
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_known_parameters() {
        // λ = 1000, σ = 0.1, κ = 0.01: X(N) by hand from the formula.
        let x = |n: f64| 1000.0 * n / (1.0 + 0.1 * (n - 1.0) + 0.01 * n * (n - 1.0));
        let pts: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0]
            .iter()
            .map(|&n| (n, x(n)))
            .collect();
        let f = fit(&pts).unwrap();
        assert!((f.sigma - 0.1).abs() < 1e-9, "{f:?}");
        assert!((f.kappa - 0.01).abs() < 1e-9, "{f:?}");
        // N* = √(0.9 / 0.01) = 9.4868…
        assert!((f.peak_n.unwrap() - 9.486_832_98).abs() < 1e-6);
        assert!(f.residuals.iter().all(|r| r.abs() < 1e-9));
        // X(4) = 4000 / (1 + 0.3 + 0.12) = 2816.9…
        assert!((f.predict(4.0) - 2_816.901_408).abs() < 1e-3);
    }

    #[test]
    fn linear_scaling_has_no_peak_and_too_few_points_no_fit() {
        let f = fit(&[(1.0, 100.0), (2.0, 200.0), (4.0, 400.0)]).unwrap();
        assert_eq!((f.sigma, f.kappa, f.peak_n), (0.0, 0.0, None));
        assert!(fit(&[(1.0, 100.0), (2.0, 190.0)]).is_none());
        assert!(fit(&[(1.0, 100.0), (2.0, 0.0), (4.0, 300.0)]).is_none());
    }
}
