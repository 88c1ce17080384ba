//! A self-contained HTML page (no scripts, no external files): the run's
//! facts, throughput per step with bars, throughput over time per step
//! (one line per engine, from the stored interval figures), the efficiency
//! and amplification figures with bars, the ratio table, and response
//! times. Charts are inline SVG drawn here; every number on the page is a
//! stored figure.

use std::fmt::Write;

use super::compare::{engines, failures, find, metric_ratio, steps, title};
use crate::metrics::Metric;
use crate::results::RunView;

/// Engine colours, in engine order (colour-blind-safe palette).
const COLOURS: &[&str] = &[
    "#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn num(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.prec$}"))
}

/// A table cell with the value and a bar proportional to `v / max`.
fn bar_cell(v: Option<f64>, max: f64, prec: usize, colour: &str) -> String {
    let w = match v {
        Some(v) if max > 0.0 && v > 0.0 => (v / max * 100.0).clamp(1.0, 100.0),
        _ => 0.0,
    };
    format!(
        "<td class=n><div class=bar style=\"width:{w:.1}%;background:{colour}\"></div>{}</td>",
        num(v, prec)
    )
}

/// An SVG line chart of interval ops/s over time, one line per engine.
fn over_time(run: &RunView, step: &str, es: &[String]) -> String {
    let (w, h, l, b) = (640.0, 200.0, 70.0, 30.0);
    let mut lines: Vec<(usize, Vec<(f64, f64)>)> = Vec::new();
    let (mut tmax, mut ymax) = (0.0f64, 0.0f64);
    for (i, e) in es.iter().enumerate() {
        let Some(s) = find(run, e, step) else {
            continue;
        };
        let pts: Vec<(f64, f64)> = s
            .intervals
            .iter()
            .filter_map(|iv| {
                let y = iv.figures.get(&Metric::OpsPerSec).and_then(|f| f.0)?;
                Some((iv.t1, y))
            })
            .collect();
        for (t, y) in &pts {
            tmax = tmax.max(*t);
            ymax = ymax.max(*y);
        }
        if !pts.is_empty() {
            lines.push((i, pts));
        }
    }
    if lines.is_empty() || tmax <= 0.0 || ymax <= 0.0 {
        return String::new();
    }
    let x = |t: f64| l + t / tmax * (w - l - 10.0);
    let y = |v: f64| (h - b) - v / ymax * (h - b - 10.0);
    let mut o = format!(
        "<figure><figcaption>{} — operations/s per interval</figcaption>\
         <svg width={w} height={h} viewBox=\"0 0 {w} {h}\" role=img>",
        esc(step)
    );
    // Axes with the maximum and zero marked.
    let _ = write!(
        o,
        "<line x1={l} y1={} x2={} y2={} stroke=#888 />\
         <line x1={l} y1=10 x2={l} y2={} stroke=#888 />\
         <text x={} y=14 text-anchor=end>{ymax:.0}</text>\
         <text x={} y={} text-anchor=end>0</text>\
         <text x={} y={} text-anchor=end>{tmax:.1} s</text>",
        h - b,
        w - 10.0,
        h - b,
        h - b,
        l - 4.0,
        l - 4.0,
        h - b,
        w - 10.0,
        h - 8.0
    );
    for (i, pts) in &lines {
        let colour = COLOURS[i % COLOURS.len()];
        let mut path = String::new();
        for (k, (t, v)) in pts.iter().enumerate() {
            let _ = write!(
                path,
                "{}{:.1},{:.1} ",
                if k == 0 { "M" } else { "L" },
                x(*t),
                y(*v)
            );
        }
        let _ = write!(
            o,
            "<path d=\"{path}\" fill=none stroke=\"{colour}\" stroke-width=2 />"
        );
        if pts.len() == 1 {
            let (t, v) = pts[0];
            let _ = write!(
                o,
                "<circle cx={:.1} cy={:.1} r=3 fill=\"{colour}\" />",
                x(t),
                y(v)
            );
        }
    }
    o.push_str("</svg></figure>\n");
    o
}

/// Renders the page; `base` is the ratio table's base engine.
pub fn render(run: &RunView, base: Option<&str>) -> String {
    let es = engines(run);
    let ss = steps(run);
    let colour = |e: &str| {
        let i = es.iter().position(|x| x == e).unwrap_or(0);
        COLOURS[i % COLOURS.len()]
    };
    let mut o = String::new();
    let which = title(run);
    let _ = write!(
        o,
        "<!doctype html><html><head><meta charset=utf-8><title>ampbench {which}: {}</title><style>\
         body{{font:14px system-ui,sans-serif;margin:2em;max-width:1100px}}\
         table{{border-collapse:collapse;margin:.5em 0 1.5em}}\
         td,th{{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}}\
         td.n{{text-align:right;position:relative;min-width:5em}}\
         .bar{{position:absolute;left:0;top:3px;bottom:3px;opacity:.25}}\
         figure{{display:inline-block;margin:0 1em 1em 0}} svg text{{font-size:11px}}\
         .key span{{display:inline-block;width:1em;height:.8em;margin:0 .3em 0 1em}}\
         code{{background:#f4f4f4;padding:0 3px}}</style></head><body>",
        esc(&run.workload)
    );
    let _ = write!(
        o,
        "<h1>ampbench {which} · {}</h1><p>engines {} · seed {} · started {} · {}</p>\
         <p>command: <code>{}</code></p>",
        esc(&run.workload),
        esc(&run.engines),
        run.seed,
        esc(&run.started),
        esc(run.status.name()),
        esc(&run.command)
    );
    if let serde_json::Value::Object(v) = &run.versions {
        let list: Vec<String> = v
            .iter()
            .map(|(k, v)| format!("{} {}", esc(k), esc(v.as_str().unwrap_or(""))))
            .collect();
        if !list.is_empty() {
            let _ = write!(o, "<p>versions: {}</p>", list.join(" · "));
        }
    }
    o.push_str("<p class=key>");
    for e in &es {
        let _ = write!(
            o,
            "<span style=\"background:{}\"></span>{}",
            colour(e),
            esc(e)
        );
    }
    o.push_str("</p>");

    // Throughput per step.
    o.push_str("<h2>Operations/second for each step</h2><table><tr><th>step</th>");
    for e in &es {
        let _ = write!(o, "<th>{}</th>", esc(e));
    }
    o.push_str("</tr>");
    for st in &ss {
        let vals: Vec<Option<f64>> = es
            .iter()
            .map(|e| find(run, e, st).and_then(|s| s.fig(Metric::OpsPerSec)))
            .collect();
        let max = vals.iter().flatten().fold(0.0f64, |a, b| a.max(*b));
        let _ = write!(o, "<tr><td>{}</td>", esc(st));
        for (e, v) in es.iter().zip(&vals) {
            o.push_str(&bar_cell(*v, max, 0, colour(e)));
        }
        o.push_str("</tr>");
    }
    o.push_str("</table>");

    // Throughput over time.
    o.push_str("<h2>Throughput over time</h2>");
    for st in &ss {
        o.push_str(&over_time(run, st, &es));
    }

    // Efficiency and amplification, bars scaled per step across engines.
    let cols: &[(Metric, &str, usize)] = &[
        (Metric::DbBytes, "db GB", 3),
        (Metric::RPerOp, "r/o", 3),
        (Metric::RkbPerOp, "rKB/o", 3),
        (Metric::WkbPerOp, "wKB/o", 3),
        (Metric::CsPerOp, "cs/o", 1),
        (Metric::CpuUsPerOp, "cpu µs/o", 0),
        (Metric::RssBytes, "rss GB", 3),
        (Metric::SpaceAmp, "space-amp", 2),
        (Metric::WriteAmp, "write-amp", 2),
    ];
    o.push_str(
        "<h2>Efficiency per operation and amplification</h2>\
         <p>Bars compare the engines within a step (longest = the step's largest).</p>\
         <table><tr><th>step</th><th>engine</th>",
    );
    for (_, t, _) in cols {
        let _ = write!(o, "<th>{t}</th>");
    }
    o.push_str("</tr>");
    for st in &ss {
        for e in &es {
            let Some(s) = find(run, e, st) else { continue };
            let _ = write!(o, "<tr><td>{}</td><td>{}</td>", esc(st), esc(e));
            for (name, _, prec) in cols {
                let scale = if name.name().ends_with("_bytes") {
                    1e9
                } else {
                    1.0
                };
                let v = s.fig(*name).map(|v| v / scale);
                let max = es
                    .iter()
                    .filter_map(|x| find(run, x, st).and_then(|s| s.fig(*name)))
                    .fold(0.0f64, f64::max)
                    / scale;
                o.push_str(&bar_cell(v, max, *prec, colour(e)));
            }
            o.push_str("</tr>");
        }
    }
    o.push_str("</table>");

    // Ratios to the base engine.
    if let Some(b) = base.map(str::to_string).or_else(|| es.first().cloned()) {
        let others: Vec<&String> = es.iter().filter(|e| **e != b).collect();
        if !others.is_empty() {
            let _ = write!(
                o,
                "<h2>Ratios to {}</h2><p>Each engine's figure divided by {}'s in the same step.</p>\
                 <table><tr><th>step</th><th>engine</th>",
                esc(&b),
                esc(&b)
            );
            for (_, t, _) in std::iter::once(&(Metric::OpsPerSec, "ops/s", 2)).chain(cols) {
                let _ = write!(o, "<th>{t}</th>");
            }
            o.push_str("</tr>");
            for st in &ss {
                let Some(bs) = find(run, &b, st) else {
                    continue;
                };
                for e in &others {
                    let Some(s) = find(run, e, st) else { continue };
                    let _ = write!(o, "<tr><td>{}</td><td>{}</td>", esc(st), esc(e));
                    for (name, _, _) in std::iter::once(&(Metric::OpsPerSec, "", 2)).chain(cols) {
                        let r = metric_ratio(*name, s.fig(*name), bs.fig(*name));
                        let _ = write!(o, "<td class=n>{}</td>", num(r.ok(), 2));
                    }
                    o.push_str("</tr>");
                }
            }
            o.push_str("</table>");
        }
    }

    // Response times.
    o.push_str(
        "<h2>Response time per operation (µs)</h2><table><tr><th>engine</th><th>step</th>\
         <th>op</th><th>count</th><th>mean</th><th>p50</th><th>p95</th><th>p99</th>\
         <th>p99.9</th><th>max</th></tr>",
    );
    for s in &run.steps {
        for (op, l) in &s.latencies {
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=n>{}</td><td class=n>{:.1}</td>\
                 <td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td>\
                 <td class=n>{}</td></tr>",
                esc(&s.engine),
                esc(&s.step),
                esc(op),
                l.count,
                l.mean,
                l.p50,
                l.p95,
                l.p99,
                l.p999,
                l.max
            );
        }
    }
    o.push_str("</table>");
    for f in failures(run) {
        let _ = write!(o, "<p><b>note:</b> {}</p>", esc(&f));
    }
    o.push_str(
        "<p>r/o, rKB/o, wKB/o: device reads, KB read and KB written per operation · cs/o, \
         cpu µs/o: context switches and CPU µs per operation of the engine's process · \
         space-amp: database bytes / live logical bytes · write-amp: device bytes written / \
         logical bytes written. A '-' is a figure that was not measured (the JSON report says why).</p>\
         </body></html>\n",
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::Status;
    use crate::results::StepView;
    use crate::results::read::IntervalView;
    use std::collections::BTreeMap;

    fn step(engine: &str, ops: &[f64]) -> StepView {
        let fig = |v: f64| -> BTreeMap<Metric, (Option<f64>, Option<String>)> {
            [(Metric::OpsPerSec, (Some(v), None))].into()
        };
        StepView {
            id: 0,
            ordinal: 0,
            engine: engine.into(),
            step: "load".into(),
            status: Status::Done,
            error: None,
            secs: Some(ops.len() as f64),
            settle: None,
            figures: fig(ops.iter().sum::<f64>() / ops.len() as f64),
            latencies: Vec::new(),
            extras: Vec::new(),
            notes: Vec::new(),
            intervals: ops
                .iter()
                .enumerate()
                .map(|(i, v)| IntervalView {
                    idx: i as i64,
                    t0: i as f64,
                    t1: i as f64 + 1.0,
                    ops: *v as i64,
                    bg_ops: 0,
                    figures: fig(*v),
                })
                .collect(),
            slices: Vec::new(),
        }
    }

    #[test]
    fn page_has_a_line_per_engine_and_escapes_names() {
        let run = RunView {
            command: "ampbench run -e <x>".into(),
            workload: "pattern".into(),
            steps: vec![
                step("rocksdb", &[100.0, 300.0]),
                step("lmdb", &[50.0, 50.0]),
            ],
            ..RunView::empty()
        };
        let h = render(&run, None);
        assert!(h.starts_with("<!doctype html>") && h.ends_with("</html>\n"));
        assert_eq!(h.matches("<path d=").count(), 2, "one line per engine");
        // The peak (300 at t=2) sits at the top of the plot (y = 10).
        assert!(h.contains("L630.0,10.0"), "{h}");
        assert!(h.contains("&lt;x&gt;") && !h.contains("<x>"));
        assert!(h.contains("Ratios to rocksdb"));
        // lmdb's ops/s (50) over rocksdb's (200).
        assert!(h.contains("<td class=n>0.25</td>"), "{h}");
        assert!(!h.contains("<script"), "no scripts");
    }
}
