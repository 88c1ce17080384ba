//! `--slice` tables: a long step as consecutive slices, each with the full
//! set of figures, and a degradation line (the last full slice against the
//! first), as the seeds' "2nd hour / 12th hour / 24th hour" tables show a
//! database aging.

use std::fmt::Write;

use super::parts::cell;
use crate::metrics::Metric;
use crate::results::RunView;
use crate::results::read::SliceView;

/// The columns: heading, figure, scale, decimals.
const COLS: [(&str, Metric, f64, usize); 9] = [
    ("ops/s", Metric::OpsPerSec, 1.0, 0),
    ("r/o", Metric::RPerOp, 1.0, 3),
    ("rKB/o", Metric::RkbPerOp, 1.0, 3),
    ("wKB/o", Metric::WkbPerOp, 1.0, 3),
    ("cpu/o", Metric::CpuUsPerOp, 1.0, 0),
    ("cs/o", Metric::CsPerOp, 1.0, 2),
    ("db.gb", Metric::DbBytes, 1e-9, 3),
    ("rss.gb", Metric::RssBytes, 1e-9, 3),
    ("w-amp", Metric::WriteAmp, 1.0, 2),
];

/// The last slice's figure over the first's, or `-` when either is
/// missing or the first prints as zero at the column's `prec` decimals
/// (a ratio to a rounding error says nothing).
fn ratio(first: Option<f64>, last: Option<f64>, prec: usize) -> String {
    let tiny = 0.5 * 10f64.powi(-(prec as i32));
    match (first, last) {
        (Some(a), Some(b)) if a.abs() >= tiny => format!("{:.2}", b / a),
        _ => "-".into(),
    }
}

fn row(o: &mut String, label: &str, s: &SliceView) {
    let _ = write!(o, "  {label:<16}");
    for (_, m, scale, prec) in COLS {
        let _ = write!(o, " {:>9}", cell(s.fig(m).map(|v| v * scale), prec));
    }
    let _ = writeln!(o);
}

/// One table per step that recorded slices; empty when none did.
pub fn render(run: &RunView) -> String {
    let mut o = String::new();
    let with: Vec<_> = run.steps.iter().filter(|s| !s.slices.is_empty()).collect();
    if with.is_empty() {
        return o;
    }
    let len = run.recorded.slice;
    let _ = writeln!(
        o,
        "\nper slice{} (--slice): each slice's own figures; last/first: the last full slice over the first",
        len.map_or(String::new(), |l| format!(
            " of {}",
            crate::units::show_secs(l)
        ))
    );
    for s in with {
        let _ = writeln!(o, "{} {}", s.engine, s.step);
        let _ = write!(o, "  {:<16}", "slice (s)");
        for (h, ..) in COLS {
            let _ = write!(o, " {h:>9}");
        }
        let _ = writeln!(o);
        for sl in &s.slices {
            let label = format!(
                "{} {:.0}-{:.0}{}",
                sl.idx + 1,
                sl.t0,
                sl.t1,
                if sl.partial { " part" } else { "" }
            );
            row(&mut o, &label, sl);
        }
        let full: Vec<&SliceView> = s.slices.iter().filter(|x| !x.partial).collect();
        if let (Some(a), Some(b)) = (full.first(), full.last()) {
            if a.idx != b.idx {
                let _ = write!(o, "  {:<16}", "last/first");
                for (_, m, scale, prec) in COLS {
                    let v = |x: &SliceView| x.fig(m).map(|v| v * scale);
                    let _ = write!(o, " {:>9}", ratio(v(a), v(b), prec));
                }
                let _ = writeln!(o);
            }
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_needs_a_base() {
        assert_eq!(ratio(Some(2.0), Some(3.0), 0), "1.50");
        assert_eq!(ratio(Some(0.0), Some(3.0), 3), "-");
        assert_eq!(ratio(Some(0.0004), Some(3.0), 3), "-");
        assert_eq!(ratio(Some(0.002), Some(0.003), 3), "1.50");
        assert_eq!(ratio(None, Some(3.0), 0), "-");
    }
}
