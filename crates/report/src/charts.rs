//! The HTML page's charts, drawn by `plotters` into inline SVG (see
//! docs/design.md for why): grouped bars, lines over time, percentile
//! spectra on a "nines" axis, and bars normalised to a base. Each function
//! returns one `<svg>` element, or None when it has nothing to draw, so
//! the page never shows an empty frame.

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// Engine colours, in engine order (the Okabe–Ito colour-blind-safe
/// palette, then black).
pub const COLOURS: &[(u8, u8, u8)] = &[
    (0, 114, 178),
    (230, 159, 0),
    (0, 158, 115),
    (204, 121, 167),
    (86, 180, 233),
    (213, 94, 0),
    (240, 228, 66),
    (0, 0, 0),
];

/// An engine's colour as plotters and CSS take it.
pub fn colour(i: usize) -> RGBColor {
    let (r, g, b) = COLOURS[i % COLOURS.len()];
    RGBColor(r, g, b)
}

/// The CSS form of [`colour`].
pub fn css(i: usize) -> String {
    let (r, g, b) = COLOURS[i % COLOURS.len()];
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// Chart size in pixels: two side by side fit a 1,400 px page.
pub const SIZE: (u32, u32) = (640, 320);

/// A chart across the page, for many groups of bars.
pub const WIDE: (u32, u32) = (1290, 360);

/// A number for an axis: 3 significant digits, k/M/G above a thousand.
pub fn short(v: f64) -> String {
    let a = v.abs();
    let (d, s) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let t = if d.abs() >= 100.0 || d == d.trunc() {
        format!("{d:.0}")
    } else if d.abs() >= 10.0 {
        format!("{d:.1}")
    } else if d.abs() >= 0.01 || d == 0.0 {
        format!("{d:.2}")
    } else {
        format!("{d:.1e}")
    };
    format!("{t}{s}")
}

/// One data series: its label and colour index.
pub struct Series<T> {
    /// Legend text.
    pub label: String,
    /// Index into [`COLOURS`].
    pub colour: usize,
    /// The points (or values).
    pub data: T,
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Draws into a fresh SVG string of `size`; `f` gets the white root area.
fn svg(size: (u32, u32), f: impl FnOnce(&Area<'_>) -> Result<(), String>) -> Option<String> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        root.fill(&WHITE).ok()?;
        f(&root).ok()?;
        root.present().ok()?;
    }
    Some(buf)
}

fn e<E: std::fmt::Debug>(x: E) -> String {
    format!("{x:?}")
}

/// The y axis: linear, or logarithmic by plotting log10 of each value on
/// a linear axis whose labels show the values (plotters' own log axis
/// crowds a decade's labels or leaves a narrow range with one).
#[derive(Clone, Copy)]
struct Axis {
    log: bool,
}

impl Axis {
    /// Where a value sits on the axis; None for a value a log axis cannot
    /// show.
    fn at(self, v: f64) -> Option<f64> {
        match (self.log, v.is_finite()) {
            (_, false) => None,
            (true, _) if v <= 0.0 => None,
            (true, _) => Some(v.log10()),
            (false, _) => Some(v),
        }
    }
    /// The label of an axis position.
    fn label(self, p: f64) -> String {
        if self.log {
            let v = 10f64.powf(p);
            // Two significant digits: 1, 3.2, 10, 32, 100…
            let mag = 10f64.powf(v.log10().floor() - 1.0);
            short((v / mag).round() * mag)
        } else {
            short(p)
        }
    }
    /// The axis range for positions `lo..hi` (padded; a linear axis
    /// starts at 0 unless it must go below).
    fn range(self, lo: f64, hi: f64) -> std::ops::Range<f64> {
        if self.log {
            let pad = ((hi - lo) * 0.08).max(0.15);
            (lo - pad)..(hi + pad)
        } else {
            let lo = lo.min(0.0);
            let hi = if hi > lo { hi } else { lo + 1.0 };
            lo..(hi + (hi - lo) * 0.12)
        }
    }
}

/// The smallest and largest of some values, None when there are none.
fn bounds(vals: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (a, b) = vals.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    (a <= b).then_some((a, b))
}

/// Each series' points placed on the chart's axes by `at` (None drops a
/// point a log axis cannot show).
fn placed<P>(
    series: &[Series<Vec<P>>],
    at: impl Fn(&P) -> Option<(f64, f64)>,
) -> Vec<Series<Vec<(f64, f64)>>> {
    series
        .iter()
        .map(|s| Series {
            label: s.label.clone(),
            colour: s.colour,
            data: s.data.iter().filter_map(&at).collect(),
        })
        .collect()
}

/// Lines over a shared x axis (e.g. ops/s over seconds), one per series;
/// a series of eight points or fewer also gets dots. `log_y` for a log y
/// axis.
pub fn lines(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series<Vec<(f64, f64)>>],
    log_y: bool,
) -> Option<String> {
    let ax = Axis { log: log_y };
    let conv = placed(series, |(x, y)| {
        Some((*x, ax.at(*y)?)).filter(|p| p.0.is_finite())
    });
    let (x0, mut x1) = bounds(conv.iter().flat_map(|s| s.data.iter().map(|p| p.0)))?;
    let (y0, y1) = bounds(conv.iter().flat_map(|s| s.data.iter().map(|p| p.1)))?;
    if x1 - x0 < 1e-9 {
        x1 = x0 + 1.0;
    }
    plot(
        title,
        (x0..x1, x_desc, &|v| short(*v)),
        (ax.range(y0, y1), y_desc, ax),
        SeriesLabelPosition::UpperRight,
        None,
        |chart| {
            for s in &conv {
                draw_line(chart, s, s.data.len() <= 8)?;
            }
            Ok(())
        },
    )
}

/// An x axis: its range, description and label formatter.
type XAxis<'f> = (std::ops::Range<f64>, &'f str, &'f dyn Fn(&f64) -> String);

type Chart<'a> = ChartContext<'a, SVGBackend<'a>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Builds a chart with its caption, mesh and legend; `draw` adds the data.
fn plot(
    title: &str,
    x: XAxis<'_>,
    y: (std::ops::Range<f64>, &str, Axis),
    legend_at: SeriesLabelPosition,
    groups: Option<usize>,
    draw: impl FnOnce(&mut Chart<'_>) -> Result<(), String>,
) -> Option<String> {
    let (ax, y_desc) = (y.2, y.1);
    // Many groups of bars get the page's width.
    let size = if groups.is_some_and(|n| n > 6) {
        WIDE
    } else {
        SIZE
    };
    svg(size, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .margin_right(28)
            .x_label_area_size(40)
            .y_label_area_size(62)
            .build_cartesian_2d(x.0, y.0)
            .map_err(e)?;
        let mut mesh = chart.configure_mesh();
        // Bars: a label at each group's middle (every half unit), no
        // vertical lines.
        if let Some(n) = groups {
            mesh.disable_x_mesh().x_labels(2 * n + 1);
        } else {
            mesh.x_labels(8);
        }
        mesh.light_line_style(BLACK.mix(0.03))
            .y_labels(8)
            .x_desc(x.1)
            .y_desc(y_desc)
            .x_label_formatter(x.2)
            .y_label_formatter(&|v| ax.label(*v))
            .draw()
            .map_err(e)?;
        draw(&mut chart)?;
        chart
            .configure_series_labels()
            .position(legend_at)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .label_font(("sans-serif", 12))
            .draw()
            .map_err(e)
    })
}

fn draw_line(chart: &mut Chart<'_>, s: &Series<Vec<(f64, f64)>>, dots: bool) -> Result<(), String> {
    let c = colour(s.colour);
    let style = ShapeStyle::from(&c).stroke_width(2);
    let a = chart
        .draw_series(LineSeries::new(s.data.iter().copied(), style))
        .map_err(e)?;
    a.label(&s.label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
    if dots {
        chart
            .draw_series(s.data.iter().map(|p| Circle::new(*p, 3, c.filled())))
            .map_err(e)?;
    }
    Ok(())
}

/// The response-time percentile spectrum: x is the percentile on a
/// "nines" axis (−log10(1 − p)), labelled 0 %, 90 %, 99 %, 99.9 %,
/// 99.99 %; y is µs on a log axis. One line per series of (percentile, µs).
pub fn spectrum(title: &str, series: &[Series<Vec<(f64, u64)>>]) -> Option<String> {
    let nines = |p: f64| -(1.0 - (p / 100.0).min(0.999_99)).log10();
    let ax = Axis { log: true };
    let conv = placed(series, |(p, v)| {
        Some((nines(*p), ax.at((*v).max(1) as f64)?))
    });
    let (y0, y1) = bounds(conv.iter().flat_map(|s| s.data.iter().map(|p| p.1)))?;
    let label = |v: &f64| match v.round() as i64 {
        0 => "0%".into(),
        1 => "90%".into(),
        2 => "99%".into(),
        3 => "99.9%".into(),
        _ => "99.99%".into(),
    };
    plot(
        title,
        (0f64..4.0, "percentile", &label),
        (ax.range(y0, y1), "response time (µs)", ax),
        SeriesLabelPosition::UpperLeft,
        None,
        |chart| {
            for s in &conv {
                draw_line(chart, s, true)?;
            }
            Ok(())
        },
    )
}

/// One bar of a group: its value and an optional marker (e.g. the
/// model's prediction) drawn as a black bar across it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bar {
    /// The bar's height (None: not measured, nothing drawn).
    pub value: Option<f64>,
    /// A value marked on the bar.
    pub mark: Option<f64>,
    /// An interval drawn as a whisker (e.g. the 95% interval of a mean).
    pub err: Option<(f64, f64)>,
}

/// Grouped bars: one group per label, one bar per series in each group.
/// `log_y` draws a log axis; `base` draws bars from that value (e.g. 1 for
/// ratios to a base engine: above the line is more, below is less) with a
/// line across it.
// Long: one SVG chart (axes, groups, bars, base line, legend) drawn in order;
// its parts share the scales.
pub fn bars(
    title: &str,
    y_desc: &str,
    groups: &[String],
    series: &[Series<Vec<Bar>>],
    log_y: bool,
    base: Option<f64>,
) -> Option<String> {
    let ax = Axis { log: log_y };
    let vals = series
        .iter()
        .flat_map(|s| s.data.iter().flat_map(|b| [b.value, b.mark]))
        .flatten()
        .chain(base)
        .filter_map(|v| ax.at(v));
    let (y0, y1) = bounds(vals)?;
    if groups.is_empty()
        || !series.iter().any(|s| {
            s.data
                .iter()
                .any(|b| b.value.and_then(|v| ax.at(v)).is_some())
        })
    {
        return None;
    }
    let mut yr = ax.range(y0, y1);
    // Headroom for the legend above the tallest bar.
    yr.end += (yr.end - yr.start) * 0.2;
    // Bars start at the base, or at the axis' bottom.
    let from = base
        .and_then(|b| ax.at(b))
        .unwrap_or(if log_y { yr.start } else { 0.0 });
    let w = 0.8 / series.len().max(1) as f64;
    let x1 = groups.len() as f64;
    // Group i spans [i, i+1); a label sits at its middle.
    let label = |v: &f64| {
        let i = v.floor().max(0.0) as usize;
        if (v - i as f64 - 0.5).abs() < 1e-6 {
            groups.get(i).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    plot(
        title,
        (0f64..x1, "", &label),
        (yr, y_desc, ax),
        SeriesLabelPosition::UpperRight,
        Some(groups.len()),
        |chart| {
            for (k, s) in series.iter().enumerate() {
                let c = colour(s.colour);
                let mut labelled = false;
                for (i, bar) in s.data.iter().enumerate() {
                    let Some(v) = bar.value.and_then(|v| ax.at(v)) else {
                        continue;
                    };
                    let xa = i as f64 + 0.1 + w * k as f64;
                    let a = chart
                        .draw_series(std::iter::once(Rectangle::new(
                            [(xa, from), (xa + w, v)],
                            c.filled(),
                        )))
                        .map_err(e)?;
                    if !labelled {
                        labelled = true;
                        a.label(&s.label).legend(move |(x, y)| {
                            Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled())
                        });
                    }
                    if let Some((lo, hi)) = bar.err {
                        if let (Some(lo), Some(hi)) = (ax.at(lo), ax.at(hi)) {
                            let xm = xa + w / 2.0;
                            let cap = w / 4.0;
                            chart
                                .draw_series(
                                    [
                                        vec![(xm, lo), (xm, hi)],
                                        vec![(xm - cap, lo), (xm + cap, lo)],
                                        vec![(xm - cap, hi), (xm + cap, hi)],
                                    ]
                                    .into_iter()
                                    .map(|p| PathElement::new(p, BLACK.stroke_width(1))),
                                )
                                .map_err(e)?;
                        }
                    }
                    if let Some(m) = bar.mark.and_then(|m| ax.at(m)) {
                        chart
                            .draw_series(std::iter::once(PathElement::new(
                                vec![(xa, m), (xa + w, m)],
                                BLACK.stroke_width(3),
                            )))
                            .map_err(e)?;
                    }
                }
            }
            if base.is_some() {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(0.0, from), (x1, from)],
                        BLACK.mix(0.6).stroke_width(1),
                    )))
                    .map_err(e)?;
            }
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_numbers_read_well() {
        assert_eq!(short(0.0), "0");
        assert_eq!(short(12_345.0), "12.3k");
        assert_eq!(short(2.5e6), "2.50M");
        assert_eq!(short(0.126), "0.13");
        assert_eq!(short(150.0), "150");
    }

    #[test]
    fn a_line_chart_has_one_path_per_series_and_a_legend() {
        let s = vec![
            Series {
                label: "rocksdb".into(),
                colour: 0,
                data: vec![(0.0, 10.0), (1.0, 20.0), (2.0, 15.0), (3.0, 30.0)],
            },
            Series {
                label: "lmdb".into(),
                colour: 1,
                data: vec![(0.0, 5.0), (3.0, 8.0)],
            },
        ];
        let svg = lines("load", "seconds", "ops/s", &s, false).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(
            svg.contains("\nrocksdb\n") && svg.contains("\nlmdb\n"),
            "{svg}"
        );
        assert!(svg.contains("\nload\n"));
        // Both lines in their colours.
        assert!(svg.contains("#0072B2") || svg.contains("#0072b2"), "{svg}");
        assert!(lines("x", "s", "y", &[], false).is_none());
    }

    #[test]
    fn bars_skip_unmeasured_values_and_mark_predictions() {
        let groups = vec!["load".to_string(), "pq".to_string()];
        let s = vec![Series {
            label: "rocksdb".into(),
            colour: 0,
            data: vec![
                Bar {
                    value: Some(2.0),
                    mark: Some(1.5),
                    err: None,
                },
                Bar::default(),
            ],
        }];
        let svg = bars("w-amp", "", &groups, &s, false, None).unwrap();
        assert!(svg.contains("\nload\n") && svg.contains("\npq\n"), "{svg}");
        let none = vec![Series {
            label: "x".into(),
            colour: 0,
            data: vec![Bar::default()],
        }];
        assert!(bars("t", "", &groups, &none, false, None).is_none());
    }
}
