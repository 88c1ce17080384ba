//! A self-contained HTML page (no scripts, no external files): the run's
//! facts, throughput per step with bars, throughput over time per step
//! (one line per engine, from the stored interval figures), the efficiency
//! and amplification figures with bars, the ratio table, and response
//! times. Charts are inline SVG drawn here; every number on the page is a
//! stored figure.

use std::fmt::Write;

use super::charts::css;
use super::compare::{engines, failures, find, steps, title};
use super::html_charts;
use super::repeat::RatioCell;
use crate::metrics::Metric;
use crate::results::RunView;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn num(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.prec$}"))
}

/// A row of charts (two fit side by side at 1,400 px).
fn figures(o: &mut String, svgs: impl IntoIterator<Item = String>) {
    let svgs: Vec<String> = svgs.into_iter().collect();
    if svgs.is_empty() {
        return;
    }
    o.push_str("<div class=charts>");
    for svg in svgs {
        let _ = write!(o, "<figure class=chart>{svg}</figure>");
    }
    o.push_str("</div>");
}

/// A text section of the report, kept as text (fixed-width tables).
fn pre(o: &mut String, title: &str, text: &str) {
    let t = text.trim_matches('\n');
    if !t.is_empty() {
        let _ = write!(o, "<h2>{}</h2><pre>{}</pre>", esc(title), esc(t));
    }
}

/// The figures behind the charts: (metric, heading, decimals).
const COLS: &[(Metric, &str, usize)] = &[
    (Metric::DbBytes, "db GB", 3),
    (Metric::RPerOp, "r/o", 3),
    (Metric::RkbPerOp, "rKB/o", 3),
    (Metric::WkbPerOp, "wKB/o", 3),
    (Metric::CsPerOp, "cs/o", 2),
    (Metric::CpuUsPerOp, "cpu µs/o", 1),
    (Metric::RssBytes, "rss GB", 3),
    (Metric::SpaceAmp, "space-amp", 2),
    (Metric::WriteAmp, "write-amp", 2),
];

/// Renders the page; `base` is the ratio table's base engine.
pub fn render(run: &RunView, base: Option<&str>) -> String {
    let es = engines(run);
    let ss = steps(run);
    let mut o = String::new();
    head(&mut o, run, &es);
    throughput(&mut o, run, &es, &ss);
    charts(&mut o, run, &es, &ss, base);
    efficiency(&mut o, run, &es, &ss);
    if let Some(b) = base.map(str::to_string).or_else(|| es.first().cloned()) {
        ratios(&mut o, run, &es, &ss, &b);
    }
    pre(
        &mut o,
        "Predicted beside measured",
        &super::theory::render(run),
    );
    pre(&mut o, "Slices", &super::slices::render(run));
    pre(&mut o, "Sweeps", &super::sweep::render(run));
    pre(
        &mut o,
        "Concurrency and the Universal Scalability Law",
        &super::concurrency::render(run),
    );
    latencies(&mut o, run);
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

/// The page's head and style, its title, the run's command and
/// versions, the engines' colour key, and a seed plan's post beside the
/// run.
fn head(o: &mut String, run: &RunView, es: &[String]) {
    let colour = |e: &str| css(es.iter().position(|x| x == e).unwrap_or(0));
    let which = title(run);
    let _ = write!(
        o,
        "<!doctype html><html><head><meta charset=utf-8><title>ampbench {which}: {}</title><style>\
         body{{font:14px system-ui,sans-serif;margin:2em;max-width:1400px}}\
         .charts{{display:flex;flex-wrap:wrap;gap:8px}} figure.chart{{margin:0 0 8px}}\
         .log{{display:none}} #logops:checked~.lin{{display:none}} #logops:checked~.log{{display:block}}\
         pre{{background:#f8f8f8;padding:6px;overflow-x:auto;font-size:12px}} .foot{{color:#555;font-size:12px}} .ns{{color:#888;font-style:italic}}\
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
    for e in es {
        let _ = write!(
            o,
            "<span style=\"background:{}\"></span>{}",
            colour(e),
            esc(e)
        );
    }
    o.push_str("</p>");
    // A seed plan's run: the post's table beside this machine's, first.
    if let Some(seed) = super::post::of_run(run) {
        pre(
            o,
            &format!("The seed post beside this run: {}", seed.title),
            &super::post::render(&seed, run),
        );
    }
}

/// Operations/second per step: a chart (linear, or log by a switch that
/// needs no script), then the figures.
fn throughput(o: &mut String, run: &RunView, es: &[String], ss: &[String]) {
    o.push_str("<h2>Operations/second for each step</h2>");
    if let Some((lin, log)) = html_charts::throughput(run, es, ss) {
        let _ = write!(
            o,
            "<input type=checkbox id=logops><label for=logops> log scale</label>\
             <div class=lin><figure class=chart>{lin}</figure></div>\
             <div class=log><figure class=chart>{log}</figure></div>"
        );
    }
    o.push_str("<table><tr><th>step</th>");
    for e in es {
        let _ = write!(o, "<th>{}</th>", esc(e));
    }
    o.push_str("</tr>");
    for st in ss {
        let _ = write!(o, "<tr><td>{}</td>", esc(st));
        for e in es {
            let v = find(run, e, st).map_or("-".into(), |s| {
                super::repeat::with_ci(s, Metric::OpsPerSec, 0)
            });
            let _ = write!(o, "<td class=n>{v}</td>");
        }
        o.push_str("</tr>");
    }
    o.push_str("</table>");
}

/// The charts: throughput over time, response-time spectra, cost
/// relative to the base engine, sizes, amplification, concurrency.
fn charts(o: &mut String, run: &RunView, es: &[String], ss: &[String], base: Option<&str>) {
    o.push_str("<h2>Throughput over time</h2>");
    figures(
        o,
        ss.iter()
            .filter_map(|st| html_charts::over_time(run, st, es)),
    );

    o.push_str(
        "<h2>Response time by percentile</h2><p>Each operation kind's response-time \
         spectrum over the whole step (HdrHistogram's percentile plot: the x axis counts \
         nines, 90 % to 99.99 %; the y axis is logarithmic).</p>",
    );
    figures(
        o,
        ss.iter().flat_map(|st| html_charts::spectra(run, st, es)),
    );

    let base_e = base.map(str::to_string).or_else(|| es.first().cloned());
    if let Some(b) = base_e.as_deref().filter(|_| es.len() > 1) {
        let _ = write!(
            o,
            "<h2>Cost per operation relative to {}</h2><p>Each engine's figure over {}'s in \
             the same step (log axis; a bar above the line costs more, below costs less; \
             in runs merged by corner, over the base engine's in the same corner). \
             A figure whose base is below its noise floor is left out, and said so.</p>",
            esc(b),
            esc(b)
        );
        let mut svgs = Vec::new();
        for st in ss {
            if let Some((svg, skipped)) = html_charts::efficiency(run, st, es, b) {
                svgs.push(svg);
                if !skipped.is_empty() {
                    let _ = write!(
                        o,
                        "<p class=foot>{}: left out: {}</p>",
                        esc(st),
                        esc(&skipped.join("; "))
                    );
                }
            }
        }
        figures(o, svgs);
    }

    o.push_str("<h2>Database size and memory</h2>");
    figures(o, html_charts::sizes(run, es, ss));
    o.push_str("<h2>Amplification</h2>");
    figures(o, html_charts::amplification(run, es, ss));
    let conc = html_charts::concurrency(run, es);
    if !conc.is_empty() {
        o.push_str("<h2>Concurrency</h2>");
        figures(o, conc);
    }
}

/// The figures behind the charts, per step and engine.
fn efficiency(o: &mut String, run: &RunView, es: &[String], ss: &[String]) {
    o.push_str(
        "<h2>Efficiency per operation and amplification</h2><table><tr><th>step</th><th>engine</th>",
    );
    for (_, t, _) in COLS {
        let _ = write!(o, "<th>{t}</th>");
    }
    o.push_str("</tr>");
    for st in ss {
        for e in es {
            let Some(s) = find(run, e, st) else { continue };
            let _ = write!(o, "<tr><td>{}</td><td>{}</td>", esc(st), esc(e));
            for (name, _, prec) in COLS {
                let scale = if name.name().ends_with("_bytes") {
                    1e9
                } else {
                    1.0
                };
                let v = if scale == 1.0 {
                    super::repeat::with_ci(s, *name, *prec)
                } else {
                    num(s.fig(*name).map(|v| v / scale), *prec)
                };
                let _ = write!(o, "<td class=n>{v}</td>");
            }
            o.push_str("</tr>");
        }
    }
    o.push_str("</table>");
}

/// Each engine's figures over base engine `b`'s in the same step, with
/// intervals where repeats give them.
fn ratios(o: &mut String, run: &RunView, es: &[String], ss: &[String], b: &str) {
    let others: Vec<&String> = es.iter().filter(|e| *e != b).collect();
    if others.is_empty() {
        return;
    }
    let _ = write!(
        o,
        "<h2>Ratios to {}</h2><p>Each engine's figure divided by {}'s in the same step.</p>\
         <table><tr><th>step</th><th>engine</th>",
        esc(b),
        esc(b)
    );
    for (_, t, _) in std::iter::once(&(Metric::OpsPerSec, "ops/s", 2)).chain(COLS) {
        let _ = write!(o, "<th>{t}</th>");
    }
    o.push_str("</tr>");
    let mut floored = false;
    let mut not_significant = false;
    for st in ss {
        let Some(bs) = find(run, b, st) else {
            continue;
        };
        for e in &others {
            let Some(s) = find(run, e, st) else { continue };
            let _ = write!(o, "<tr><td>{}</td><td>{}</td>", esc(st), esc(e));
            for (name, _, _) in std::iter::once(&(Metric::OpsPerSec, "", 2)).chain(COLS) {
                let c = RatioCell::of(*name, s, bs);
                not_significant |= c.not_significant();
                floored |= c == RatioCell::Floored;
                let cell = match c {
                    RatioCell::Value(v, Some(ci)) if c.not_significant() => format!(
                        "<span class=ns>{v:.2}~</span><br><small>{:.2}–{:.2}</small>",
                        ci.lo, ci.hi
                    ),
                    RatioCell::Value(v, Some(ci)) => {
                        format!("{v:.2}<br><small>{:.2}–{:.2}</small>", ci.lo, ci.hi)
                    }
                    _ => c.short(),
                };
                let _ = write!(o, "<td class=n>{cell}</td>");
            }
            o.push_str("</tr>");
        }
    }
    o.push_str("</table>");
    if not_significant {
        o.push_str(
            "<p class=foot>~ the ratio's 95% interval (shown below it) includes 1: \
             the difference is not significant.</p>",
        );
    }
    if floored {
        o.push_str(
            "<p class=foot>-* the base's figure is below its noise floor (wKB/o or rKB/o \
             under 0.01, r/o under 0.001, cs/o under 0.01, cpu/o under 0.1 µs, an \
             amplification under 0.01, a database under 1 MB): a ratio to it would say \
             nothing.</p>",
        );
    }
}

/// Response time per operation kind, µs.
fn latencies(o: &mut String, run: &RunView) {
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
}

/// The HTML page.
pub struct Html;

impl crate::Exporter for Html {
    fn name(&self) -> &'static str {
        "html"
    }
    fn about(&self) -> &'static str {
        "A self-contained HTML page with charts"
    }
    fn render(&self, run: &RunView, on: &crate::Inputs<'_>) -> anyhow::Result<String> {
        Ok(render(&crate::repeat::collapse(run), on.base))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::StepView;
    use crate::results::read::IntervalView;
    use std::collections::BTreeMap;

    fn step(engine: &str, ops: &[f64]) -> StepView {
        let fig = |v: f64| -> BTreeMap<Metric, crate::metrics::Figure> {
            [(Metric::OpsPerSec, crate::metrics::Figure::Value(v))].into()
        };
        StepView {
            secs: Some(ops.len() as f64),
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
            ..StepView::with_figures(
                engine,
                "load",
                &[(
                    Metric::OpsPerSec,
                    ops.iter().sum::<f64>() / ops.len() as f64,
                )],
            )
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
        // Throughput over time: one line per engine, from the intervals
        // (this step has no rates).
        let over = h
            .split("<figure class=chart>")
            .find(|c| c.contains("operations/s over time"))
            .unwrap();
        for colour in ["#0072B2", "#E69F00"] {
            let lines = over
                .split("<polyline")
                .filter(|l| l.split('>').next().unwrap().contains(colour))
                .count();
            assert_eq!(lines, 2, "{colour}: a line and its legend key\n{over}");
        }
        assert!(h.contains("&lt;x&gt;") && !h.contains("<x>"));
        assert!(h.contains("Ratios to rocksdb"));
        // lmdb's ops/s (50) over rocksdb's (200).
        assert!(h.contains("<td class=n>0.25</td>"), "{h}");
        assert!(!h.contains("<script"), "no scripts");
    }
}
