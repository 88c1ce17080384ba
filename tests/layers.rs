//! Issue 33: the modules import along the pipeline only (docs/design.md):
//! each top-level module of src/ may name (`crate::X`) only the modules
//! listed for it below. The edges that go against it today are listed in
//! `KNOWN`, to be removed one by one: a new edge against the pipeline
//! fails, and so does a listed edge that no longer exists (take it off
//! the list). No test here can pass by accident: the edges are read from
//! the sources each time.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The vocabulary every module may use.
const CORE: &[&str] = &[
    "names",
    "record",
    "sys",
    "named",
    "rng",
    "seedspec",
    "signals",
    "testing",
    "units",
    "UsageError",
];

/// What each module may import besides [`CORE`].
const ALLOWED: &[(&str, &[&str])] = &[
    ("names", &[]),
    ("record", &[]),
    ("rng", &[]),
    ("seedspec", &[]),
    ("signals", &[]),
    ("sys", &[]),
    ("units", &[]),
    ("testing", &[]),
    ("probe", &[]),
    // How a server outside ampbench is named and reached (URLs, TLS, a
    // PostgreSQL connection): the engines' targets and the results
    // store's PostgreSQL alike.
    ("address", &[]),
    ("metrics", &["probe"]),
    ("model", &["metrics"]),
    ("results", &["metrics", "probe", "address"]),
    ("report", &["metrics", "probe", "results", "model"]),
    ("engine", &["metrics", "probe", "address"]),
    ("setup", &["metrics", "probe"]),
    // The driver defines the worker interface a workload implements.
    ("driver", &["metrics", "probe", "engine"]),
    ("workload", &["metrics", "probe", "engine", "driver"]),
    (
        "runner",
        &[
            "metrics", "probe", "model", "results", "engine", "setup", "workload", "driver",
        ],
    ),
    (
        "crashcheck",
        &[
            "metrics", "probe", "engine", "setup", "workload", "driver", "runner",
        ],
    ),
    (
        "plan",
        &[
            "metrics", "probe", "model", "engine", "setup", "workload", "runner",
        ],
    ),
    (
        "cli",
        &[
            "metrics",
            "probe",
            "model",
            "results",
            "report",
            "engine",
            "setup",
            "workload",
            "driver",
            "runner",
            "crashcheck",
            "plan",
        ],
    ),
    (
        "fuzz",
        &[
            "metrics",
            "probe",
            "model",
            "results",
            "report",
            "engine",
            "setup",
            "workload",
            "driver",
            "runner",
            "crashcheck",
            "plan",
            "cli",
        ],
    ),
];

/// Edges against the pipeline allowed for now: none are left (issue 33
/// removed 16). An edge listed here must exist, and says why it stays.
const KNOWN: &[&str] = &[];

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Module → the modules its code names, read from src/.
fn edges() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in all {
        let rel = f.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if ["lib", "main"].contains(&module.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for line in text.lines() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            let mut rest = code;
            while let Some(i) = rest.find("crate::") {
                rest = &rest[i + "crate::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() && name != module && !CORE.contains(&name.as_str()) {
                    out.entry(module.clone()).or_default().insert(name);
                }
            }
        }
    }
    out
}

#[test]
fn modules_import_along_the_pipeline_only() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut against = BTreeSet::new();
    for (m, to) in edges() {
        let ok = allowed
            .get(m.as_str())
            .unwrap_or_else(|| panic!("module {m} is not in ALLOWED: say where it sits"));
        for t in to {
            if !ok.contains(&t.as_str()) {
                against.insert(format!("{m} -> {t}"));
            }
        }
    }
    let known: BTreeSet<String> = KNOWN.iter().map(|s| s.to_string()).collect();
    let new: Vec<&String> = against.difference(&known).collect();
    let gone: Vec<&String> = known.difference(&against).collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "imports against the pipeline not listed: {new:?}; listed but gone (remove from KNOWN): {gone:?}"
    );
}

/// The allowed imports themselves have no circle: once KNOWN is empty,
/// neither do the modules.
#[test]
fn the_allowed_imports_have_no_circle() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    fn visit<'a>(
        m: &'a str,
        g: &BTreeMap<&'a str, &'a [&'a str]>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        assert!(!path.contains(&m), "circle: {path:?} -> {m}");
        if done.contains(m) {
            return;
        }
        path.push(m);
        for t in g.get(m).copied().unwrap_or(&[]) {
            visit(t, g, path, done);
        }
        path.pop();
        done.insert(m);
    }
    let mut done = BTreeSet::new();
    for m in allowed.keys() {
        visit(m, &allowed, &mut Vec::new(), &mut done);
    }
}
