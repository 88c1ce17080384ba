//! The HTML report in a real browser: a tiny run on two engines, its page
//! rendered by Debian's Chromium, headless. A script added to a copy of the
//! page (the page itself has none) reads what the browser laid out: every
//! chart is visible and has marks of its own for every engine in its
//! legend, the throughput-over-time lines have enough points, the
//! response-time spectra reach p99.9, and the page fetched nothing.
//! Chromium's console is captured; nothing but the check's own line may
//! appear on it.

use crate::common;

use common::ok;
use std::path::Path;
use std::process::Command;

const CHROMIUM: &str = "/usr/bin/chromium";

/// Reads the laid-out page: for each chart its title, whether it is shown,
/// and per colour of the palette how many elements carry it and the most
/// points of one line in it.
const CHECK: &str = r#"<script>
window.addEventListener('load', () => {
  const palette = ['#0072B2','#E69F00','#009E73','#CC79A7','#56B4E9','#D55E00','#F0E442','#000000'];
  const measure = () => [...document.querySelectorAll('figure.chart svg')].map(svg => {
    const r = svg.getBoundingClientRect();
    const title = (svg.querySelector('text') || {textContent: ''}).textContent.trim();
    const colours = {};
    for (const el of svg.querySelectorAll('polyline,rect,circle,path')) {
      const c = (el.getAttribute('stroke') || '') + '|' + (el.getAttribute('fill') || '');
      const hit = palette.find(p => c.toUpperCase().includes(p) && p !== '#000000');
      if (!hit) continue;
      const b = el.getBBox();
      if (b.width <= 0 && b.height <= 0) continue;
      const pts = el.tagName === 'polyline' ? el.getAttribute('points').trim().split(/\s+/).length : 1;
      const o = colours[hit] || (colours[hit] = {marks: 0, points: 0});
      o.marks += 1;
      o.points = Math.max(o.points, pts);
    }
    return {title, shown: r.width > 0 && r.height > 0, colours};
  });
  // The log-scale chart is behind a switch: measure again with it on,
  // and keep each chart as it was while shown.
  const before = measure();
  const sw = document.getElementById('logops');
  if (sw) sw.click();
  const after = measure();
  const charts = before.map((c, i) => c.shown ? c : Object.assign(after[i], {switched: true}));
  const out = document.createElement('pre');
  out.id = 'check';
  const mark = w => [w, 'JSON'].join('_');
  out.textContent = mark('CHECK') + JSON.stringify({charts, resources: performance.getEntriesByType('resource').length}) + mark('END');
  document.body.appendChild(out);
  console.log('check ran');
});
</script>"#;

/// Runs headless Chromium (as root it needs --no-sandbox) on a page.
fn chromium(args: &[&str], page: &Path) -> std::process::Output {
    Command::new("timeout")
        .args([
            "120",
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium")
}

/// Opens `page` (a copy with the check script, written to `html`) in
/// Chromium and returns what the check read; asserts the console said
/// nothing but the check's line and the page fetched nothing.
fn check_page(page: &str, html: &Path) -> serde_json::Value {
    std::fs::write(html, page.replace("</body>", &format!("{CHECK}</body>"))).unwrap();
    let o = chromium(
        &[
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--window-size=1400,6000",
            "--dump-dom",
        ],
        html,
    );
    let dom = String::from_utf8_lossy(&o.stdout);
    let log = String::from_utf8_lossy(&o.stderr);
    let json = dom
        .split_once("CHECK_JSON")
        .and_then(|(_, r)| r.split_once("END_JSON"))
        .map(|(j, _)| j)
        .unwrap_or_else(|| panic!("the check did not run:\n{log}"));
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    // The console: the check's own line is there (so the console is read),
    // and nothing else the page said.
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.iter().any(|l| l.contains("check ran")), "{log}");
    assert_eq!(console.len(), 1, "console messages: {console:?}");
    assert_eq!(v["resources"], 0, "the page fetched something");
    v
}

/// Every chart is shown (the log-scale one once its switch is on) and has,
/// for every engine in its legend, marks of its own beside its legend key.
fn check_charts(charts: &[serde_json::Value]) {
    for c in charts {
        let t = c["title"].as_str().unwrap();
        let colours = c["colours"].as_object().unwrap();
        // The log-scale chart is shown once its switch is on.
        assert!(c["shown"].as_bool().unwrap(), "{t}: not shown");
        assert_eq!(
            c["switched"].as_bool().unwrap_or(false),
            t.ends_with("log scale"),
            "{t}"
        );
        // A legend key and at least one mark of its own per engine.
        let engines = if t.contains("relative to") { 1 } else { 2 };
        assert!(colours.len() >= engines, "{t}: {colours:?}");
        for (col, o) in colours {
            assert!(
                o["marks"].as_u64().unwrap() >= 2,
                "{t}: {col} has only a legend key"
            );
        }
    }
}

/// The acceptance check on any page: `AMPBENCH_PAGE=report.html cargo
/// test --release --test quick -- --ignored html_browser::` (e.g. the
/// page of `make run`).
#[test]
#[ignore]
fn the_page_named_by_ampbench_page() {
    let path = std::env::var("AMPBENCH_PAGE").expect("set AMPBENCH_PAGE to an HTML report");
    let page = std::fs::read_to_string(&path).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let v = check_page(&page, &dir.path().join("page.html"));
    let charts = v["charts"].as_array().unwrap();
    check_charts(charts);
    for c in charts {
        let t = c["title"].as_str().unwrap();
        let most = c["colours"]
            .as_object()
            .unwrap()
            .values()
            .map(|o| o["points"].as_u64().unwrap())
            .max()
            .unwrap_or(0);
        eprintln!(
            "{:>3} engines {:>4} points  {t}",
            c["colours"].as_object().unwrap().len(),
            most
        );
    }
    eprintln!("{} charts checked", charts.len());
}

#[test]
fn every_chart_draws_every_engine_in_chromium() {
    if !Path::new(CHROMIUM).exists() {
        ampbench::testing::skip(
            "html_browser",
            &format!("{CHROMIUM} is not installed (scripts/deps.sh installs it)"),
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("r.db");
    let r = results.to_str().unwrap();
    ok(&[
        "run",
        "-e",
        "rocksdb,lmdb",
        "--steps",
        "load,pq.1,owa.1",
        "--duration",
        "3",
        "--warmup",
        "0",
        "-p",
        "docs=20000",
        "--dir",
        dir.path().to_str().unwrap(),
        "--results",
        r,
    ]);
    let page = ok(&["report", "--results", r, "--format", "html"]);
    assert!(!page.contains("<script"), "the page itself has no script");
    let html = dir.path().join("page.html");
    let shot = dir.path().join("page.png");
    let v = check_page(&page, &html);
    let charts = v["charts"].as_array().unwrap();
    let titled = |p: &'static str| {
        charts
            .iter()
            .filter(move |c| c["title"].as_str().unwrap().contains(p))
    };
    // ops/s (linear, and log behind its switch), over time ×3, spectra
    // (load: 1 op; pq.1: 1; owa.1: 1), efficiency ×3, size, RSS, w-amp,
    // s-amp.
    assert!(charts.len() >= 14, "{} charts: {v}", charts.len());
    check_charts(charts);
    // A 3 s step gets 0.1 s bins: 30 points (≥ 10 asked for a 30 s step);
    // the load, a fraction of a second, has what it has.
    assert_eq!(titled("over time").count(), 3);
    for c in titled("over time").filter(|c| !c["title"].as_str().unwrap().starts_with("load")) {
        for o in c["colours"].as_object().unwrap().values() {
            assert!(o["points"].as_u64().unwrap() >= 10, "{c}");
        }
    }
    // The spectra reach p99.9 (13 points of 17, up to 99.99).
    assert!(titled("by percentile").count() >= 3);
    for c in titled("by percentile") {
        for o in c["colours"].as_object().unwrap().values() {
            assert!(o["points"].as_u64().unwrap() >= 13, "{c}");
        }
    }
    // A screenshot renders (kept beside the page while the test runs).
    let s = chromium(
        &[
            "--window-size=1400,3000",
            &format!("--screenshot={}", shot.display()),
        ],
        &html,
    );
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 50_000,
        "{} bytes",
        png.len()
    );
}
