//! Intervals for repeated runs (`--repeat N`): the mean of a figure with
//! its 95% confidence interval (Student's t), and the ratio of two
//! engines' geometric means with its interval, from the log ratios of
//! the repetitions paired in the order they ran (the method of
//! bench/vs-db_bench.sh: engines interleave, so drift on a shared machine
//! hits both sides of a pair alike).

/// Student's t, two-sided 95% (the 0.975 quantile), for `df` degrees of
/// freedom: exact values to 30, then the Cornish–Fisher expansion around
/// the normal quantile (within 0.001 of the exact value there).
pub fn t95(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df - 1],
        _ => {
            let (z, n) = (1.959_964f64, df as f64);
            z + (z.powi(3) + z) / (4.0 * n)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n)
        }
    }
}

/// Mean and sample standard deviation; None for fewer than two values.
fn mean_sd(xs: &[f64]) -> Option<(f64, f64)> {
    if xs.len() < 2 {
        return None;
    }
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    Some((m, var.sqrt()))
}

/// A figure over repetitions: its mean and the half-width of its 95%
/// interval. None for fewer than two values.
pub fn mean_ci(xs: &[f64]) -> Option<(f64, f64)> {
    let (m, sd) = mean_sd(xs)?;
    Some((m, t95(xs.len() - 1) * sd / (xs.len() as f64).sqrt()))
}

/// A ratio with its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RatioCi {
    /// The ratio of the geometric means.
    pub ratio: f64,
    /// Lower end of the interval.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
}

impl RatioCi {
    /// True when the interval excludes 1: the engines differ.
    pub fn significant(&self) -> bool {
        self.lo > 1.0 || self.hi < 1.0
    }
}

/// `a / b` over repetitions: the geometric mean of the per-repetition
/// ratios `a[i] / b[i]` (paired in run order) with Student's t interval on
/// their logs. Unequal counts are not paired: the ratio of the geometric
/// means, with Welch's interval. None for fewer than two positive values
/// on a side.
pub fn ratio_ci(a: &[f64], b: &[f64]) -> Option<RatioCi> {
    if a.iter().chain(b).any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let la: Vec<f64> = a.iter().map(|v| v.ln()).collect();
    let lb: Vec<f64> = b.iter().map(|v| v.ln()).collect();
    let (m, half) = if la.len() == lb.len() {
        let d: Vec<f64> = la.iter().zip(&lb).map(|(x, y)| x - y).collect();
        mean_ci(&d)?
    } else {
        let ((ma, sa), (mb, sb)) = (mean_sd(&la)?, mean_sd(&lb)?);
        let (va, vb) = (sa * sa / la.len() as f64, sb * sb / lb.len() as f64);
        let se = (va + vb).sqrt();
        // Welch–Satterthwaite degrees of freedom.
        let df = if se > 0.0 {
            (va + vb).powi(2) / (va * va / (la.len() - 1) as f64 + vb * vb / (lb.len() - 1) as f64)
        } else {
            (la.len() + lb.len() - 2) as f64
        };
        (ma - mb, t95(df.floor().max(1.0) as usize) * se)
    };
    Some(RatioCi {
        ratio: m.exp(),
        lo: (m - half).exp(),
        hi: (m + half).exp(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_tables() {
        assert_eq!(t95(2), 4.303);
        assert!((t95(40) - 2.021).abs() < 0.001, "{}", t95(40));
        assert!((t95(120) - 1.980).abs() < 0.001, "{}", t95(120));
        assert!(t95(0).is_infinite());
    }

    #[test]
    fn mean_ci_by_hand() {
        // 10, 12, 14: mean 12, sd 2, half = 4.303 × 2 / √3 = 4.969.
        let (m, h) = mean_ci(&[10.0, 12.0, 14.0]).unwrap();
        assert_eq!(m, 12.0);
        assert!((h - 4.969).abs() < 0.001, "{h}");
        assert!(mean_ci(&[1.0]).is_none());
    }

    #[test]
    fn paired_ratio_by_hand() {
        // Ratios 2, 2, 2: exactly 2 with no spread.
        let r = ratio_ci(&[2.0, 4.0, 6.0], &[1.0, 2.0, 3.0]).unwrap();
        assert!((r.ratio - 2.0).abs() < 1e-12 && (r.lo - 2.0).abs() < 1e-12);
        assert!(r.significant());
        // Ratios 0.9 and 1.1: geometric mean √0.99, interval wide across 1.
        let r = ratio_ci(&[0.9, 1.1], &[1.0, 1.0]).unwrap();
        assert!((r.ratio - 0.99f64.sqrt()).abs() < 1e-12);
        assert!(r.lo < 1.0 && r.hi > 1.0 && !r.significant());
        // Logs ±0.1003 around ln √0.99: half = 12.706 × sd / √2.
        let d = [0.9f64.ln(), 1.1f64.ln()];
        let sd = (d[0] - d[1]).abs() / 2f64.sqrt();
        let half = 12.706 * sd / 2f64.sqrt();
        assert!((r.hi.ln() - (0.99f64.sqrt().ln() + half)).abs() < 1e-9);
        assert!(ratio_ci(&[1.0], &[1.0]).is_none());
        assert!(ratio_ci(&[0.0, 1.0], &[1.0, 1.0]).is_none());
    }

    #[test]
    fn unpaired_ratio_uses_welch() {
        let r = ratio_ci(&[2.0, 2.2, 1.8], &[1.0, 1.1]).unwrap();
        assert!(r.ratio > 1.7 && r.ratio < 2.1 && r.significant(), "{r:?}");
    }
}
