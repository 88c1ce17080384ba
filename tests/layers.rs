//! The layering Cargo cannot check (issues 33 and 50). The stages of the
//! pipeline are crates (crates/, docs/design.md), each listing only the
//! crates below it, so an import that runs back up does not build. What
//! is left to check here:
//! - the binary crate's own modules (src/: the plan, the runner, the
//!   crash check, the command line) import along the pipeline only;
//! - no two modules of one folder, in any crate, name each other.
//!
//! No test here can pass by accident: the edges are read from the sources
//! each time.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::rust_files;

/// What each module of src/ may import: the others of src/, and the
/// crates below, by the module names src/lib.rs gives them
/// (`crate::report` is ampbench-report). The core's modules (`names`,
/// `units`, …) every module may use.
const ALLOWED: &[(&str, &[&str])] = &[
    (
        "runner",
        &[
            "metrics", "probe", "ampmodel", "results", "engine", "setup", "workload", "driver",
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
            "metrics", "probe", "ampmodel", "engine", "setup", "workload", "driver", "runner",
        ],
    ),
    (
        "cli",
        &[
            "address",
            "metrics",
            "probe",
            "ampmodel",
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
            "address",
            "metrics",
            "probe",
            "ampmodel",
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

/// The crates below the binary's, by their module names in src/lib.rs.
const STAGES: &[&str] = &[
    "address", "metrics", "probe", "ampmodel", "results", "report", "engine", "setup", "workload",
    "driver",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Module of src/ → the other modules of src/ and the stages its code
/// names.
fn edges() -> BTreeMap<String, BTreeSet<String>> {
    let src = root().join("src");
    let mut all = Vec::new();
    rust_files(&src, &mut all);
    let own: BTreeSet<String> = ALLOWED.iter().map(|(m, _)| m.to_string()).collect();
    let named: BTreeSet<String> = own
        .iter()
        .cloned()
        .chain(STAGES.iter().map(|s| s.to_string()))
        .collect();
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
        assert!(
            own.contains(&module),
            "module {module} of src/ is not in ALLOWED: say where it sits"
        );
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
                if name != module && named.contains(&name) {
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
        for t in to {
            if !allowed[m.as_str()].contains(&t.as_str()) {
                against.insert(format!("{m} -> {t}"));
            }
        }
    }
    assert!(
        against.is_empty(),
        "imports against the pipeline: {against:?}"
    );
}

/// Each crate of crates/ uses exactly the ampbench crates docs/design.md's
/// table of crates says (its "the ampbench crates it uses" column), so
/// the table is the layering and cannot drift from the Cargo.tomls.
#[test]
fn crates_use_what_the_design_says() {
    let design = std::fs::read_to_string(root().join("docs/design.md")).unwrap();
    let section = design
        .split("\n## ")
        .find(|s| s.starts_with("Crates"))
        .expect("docs/design.md has a Crates section");
    let mut table: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in section.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | `name` | what it holds | uses |
        if cells.len() == 5 && cells[1].starts_with('`') && cells[1].ends_with('`') {
            let name = cells[1].trim_matches('`').to_string();
            let uses = cells[3]
                .split(',')
                .map(str::trim)
                .filter(|u| !u.is_empty() && *u != "none")
                .map(str::to_string)
                .collect();
            table.insert(name, uses);
        }
    }
    let mut seen = BTreeSet::new();
    for e in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let toml = std::fs::read_to_string(e.path().join("Cargo.toml")).unwrap();
        let mut uses = BTreeSet::new();
        for line in toml.lines() {
            let line = line.trim();
            // Only `ampbench-x = { path = … }` lines: a table form or a
            // renamed package would hide from this reading, so they fail.
            assert!(
                !line.starts_with("[dependencies.ampbench")
                    && !line.starts_with("[dev-dependencies.ampbench")
                    && !line.contains("package = \"ampbench"),
                "crates/{name}/Cargo.toml: name an ampbench crate as `ampbench-x = {{ path = … }}`: {line}"
            );
            if let Some(dep) = line.strip_prefix("ampbench") {
                let dep = dep.split([' ', '=', '.']).next().unwrap();
                let dep = dep.strip_prefix('-').unwrap_or_else(|| {
                    panic!("crates/{name} depends on the binary's crate: {line}")
                });
                uses.insert(dep.to_string());
            }
        }
        let said = table
            .get(&name)
            .unwrap_or_else(|| panic!("crates/{name} is not in docs/design.md's table of crates"));
        assert_eq!(
            &uses, said,
            "crates/{name}: its Cargo.toml (left) against docs/design.md (right)"
        );
        seen.insert(name);
    }
    let listed: BTreeSet<String> = table.keys().cloned().collect();
    assert_eq!(seen, listed, "crates/ against docs/design.md's table");
}

/// Import circles inside a folder of any crate (issue 50): two modules of
/// one folder that name each other, directly or round a longer circle
/// (test code included; an item a folder's mod.rs or lib.rs brings in
/// from one of its modules counts as that module's). The eleven found on
/// 2026-11-29 are gone; one listed here (`folder: a, b, c`) must exist,
/// and says why it stays.
const KNOWN_CIRCLES: &[&str] = &[];

/// The module path of a source file: `report/text.rs` is
/// `["report", "text"]`, `report/mod.rs` is `["report"]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" && stem != "main" {
        parts.push(stem.to_string());
    }
    parts
}

/// The code of a file without its comments (line comments only: the
/// sources have no block comments).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            // A `//` inside a string ("http://") is rare in paths; cut
            // only a line that starts with one, or a trailing comment
            // after code that has no quote before it.
            Some(i) if l[..i].trim().is_empty() || !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first path segments at the start of `code` (`a` of `a::b`, each
/// of `{a, b::c}`; a group inside a group is not followed).
fn names_after(code: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let rest = code.trim_start();
    if let Some(group) = rest.strip_prefix('{') {
        let end = group.find('}').unwrap_or(group.len());
        group[..end]
            .split(',')
            .map(|p| ident(p.trim()))
            .filter(|n| !n.is_empty())
            .collect()
    } else {
        vec![ident(rest)]
    }
}

/// Every source root: the binary's src/ (its folders are named as they
/// are, `runner/…`) and each crate's (`report`, `engine/ffi`, …).
fn roots() -> Vec<(PathBuf, String)> {
    let mut out = vec![(root().join("src"), String::new())];
    for e in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        out.push((
            e.path().join("src"),
            e.file_name().to_string_lossy().into_owned(),
        ));
    }
    out
}

/// Every (folder, from, to): module `from` of a folder of the source root
/// `src` naming its sibling `to` (by `crate::`, `super::` or `self::`);
/// the folders are named under `label`, the crate's name.
fn sibling_edges(src: &Path, label: &str) -> BTreeSet<(String, String, String)> {
    let src = src.to_path_buf();
    let mut all = Vec::new();
    rust_files(&src, &mut all);
    let is_module = |folder: &[String], name: &str| {
        let d = folder.iter().fold(src.clone(), |p, c| p.join(c));
        d.join(format!("{name}.rs")).is_file() || d.join(name).join("mod.rs").is_file()
    };
    let via = reexports(&src, &all, &is_module);
    // A path's next segment: a module, or an item a folder's mod.rs
    // brings in from one of its modules (`super::Step` is `step`'s).
    let foreign = crate_aliases(&src);
    let module_of = |path: &[String], n: &str| -> Option<String> {
        if path.is_empty() && foreign.contains(n) {
            // `crate::probe` in ampbench-setup is the probe crate, not
            // the `probe` function its lib.rs brings in from `probeline`.
            return None;
        }
        if is_module(path, n) {
            return Some(n.to_string());
        }
        via.get(&(path.to_vec(), n.to_string())).cloned()
    };
    let mut out = BTreeSet::new();
    for f in all {
        let rel = f.strip_prefix(&src).unwrap().to_path_buf();
        let here = module_path(&rel);
        let text = code_of(&std::fs::read_to_string(&f).unwrap());
        // Inside an inline module (`mod tests { … }`, to the file's end),
        // `super::` is the file's own module.
        let inline = text
            .lines()
            .position(|l| {
                let l = l.trim();
                (l.starts_with("mod ") || l.starts_with("pub mod ")) && l.ends_with('{')
            })
            .map_or(text.len(), |n| {
                text.lines().take(n).map(|l| l.len() + 1).sum::<usize>()
            });
        let (outer, inner) = text.split_at(inline.min(text.len()));
        let parent = here[..here.len().saturating_sub(1)].to_vec();
        for (code, prefix, base) in [
            (outer, "crate::", Vec::new()),
            (outer, "super::", parent),
            (outer, "self::", here.clone()),
            (inner, "crate::", Vec::new()),
            (inner, "super::", here.clone()),
        ] {
            let mut rest = code;
            while let Some(i) = rest.find(prefix) {
                // Not the tail of a longer path (`x::crate::`).
                let before = rest[..i].chars().last();
                rest = &rest[i + prefix.len()..];
                if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                // `crate::report::text`: the full path, one segment at a
                // time, until it leaves the modules.
                let mut path = base.clone();
                let mut tail = rest;
                loop {
                    let names = names_after(tail);
                    if names.len() != 1 {
                        for n in names {
                            let mut p = path.clone();
                            p.push(module_of(&path, &n).unwrap_or(n));
                            note_edge(&here, &p, &is_module, &mut out);
                        }
                        break;
                    }
                    let n = names[0].clone();
                    let Some(m) = module_of(&path, &n).filter(|_| !n.is_empty()) else {
                        break;
                    };
                    path.push(m.clone());
                    if m != n {
                        // An item of `m`, reached through its folder.
                        break;
                    }
                    tail = &tail.trim_start()[n.len()..];
                    match tail.strip_prefix("::") {
                        Some(t) => tail = t,
                        None => break,
                    }
                }
                note_edge(&here, &path, &is_module, &mut out);
            }
        }
    }
    out.into_iter()
        .map(|(d, a, b)| {
            let d = match (label.is_empty(), d.is_empty()) {
                (true, _) => d,
                (false, true) => label.to_string(),
                (false, false) => format!("{label}/{d}"),
            };
            (d, a, b)
        })
        .collect()
}

/// The crates below that a crate's lib.rs names as its own modules
/// (`use ampbench_probe as probe;`, `use ampbench_core::{names, units};`).
fn crate_aliases(src: &Path) -> BTreeSet<String> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap_or_default();
    let mut out = BTreeSet::new();
    for stmt in code_of(&lib).split(';') {
        // Past attributes (`#[cfg(test)]`) and the items before.
        let Some(at) = stmt.rfind("use ampbench_") else {
            continue;
        };
        let path = stmt[at + "use ampbench_".len()..].replace('\n', " ");
        if let Some((_, alias)) = path.split_once(" as ") {
            out.insert(alias.trim().to_string());
        } else if let Some((_, items)) = path.split_once("::") {
            for item in items.split([',', '{', '}']) {
                let item = item.trim();
                if !item.is_empty() {
                    out.insert(item.rsplit("::").next().unwrap_or(item).to_string());
                }
            }
        }
    }
    out
}

/// What each folder's mod.rs (and lib.rs) brings in from its own modules
/// with `use` (`pub use step::{Step, StepKind}`, or a private `use
/// step::run_step`, which its modules reach as `super::run_step`):
/// (folder, item) → the module it comes from. A glob (`use super::*`) is
/// not followed.
fn reexports(
    src: &Path,
    all: &[PathBuf],
    is_module: &dyn Fn(&[String], &str) -> bool,
) -> BTreeMap<(Vec<String>, String), String> {
    let mut out = BTreeMap::new();
    for f in all {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name != "mod.rs" && name != "lib.rs" {
            continue;
        }
        let folder = module_path(f.strip_prefix(src).unwrap());
        let code = code_of(&std::fs::read_to_string(f).unwrap());
        for stmt in code.split(';') {
            // The statement's `use` line, past attributes and items before.
            let lines: Vec<&str> = stmt.lines().collect();
            let Some(at) = lines.iter().rposition(|l| {
                let l = l.trim_start();
                l.starts_with("use ") || (l.starts_with("pub") && l.contains(" use "))
            }) else {
                continue;
            };
            let text: String = lines[at..].join(" ");
            let Some(path) = text.split_once("use ").map(|(_, p)| p.trim()) else {
                continue;
            };
            let path = path.strip_prefix("self::").unwrap_or(path);
            let Some((child, items)) = path.split_once("::") else {
                continue;
            };
            if !is_module(&folder, child) {
                continue;
            }
            for item in items.split([',', '{', '}']) {
                let item = item.trim();
                let shown = match item.split_once(" as ") {
                    Some((_, alias)) => alias.trim(),
                    None => item.rsplit("::").next().unwrap_or(item),
                };
                if !shown.is_empty() && shown != "self" && shown != "*" {
                    out.insert((folder.clone(), shown.to_string()), child.to_string());
                }
            }
        }
    }
    out
}

/// The edge between siblings that `from` naming module path `to` makes,
/// if any: in the folder the two paths share, from `from`'s module there
/// to `to`'s (a module naming its own folder's parts, or a part of itself,
/// is no edge).
fn note_edge(
    from: &[String],
    to: &[String],
    is_module: &dyn Fn(&[String], &str) -> bool,
    out: &mut BTreeSet<(String, String, String)>,
) {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    if from.len() <= common || to.len() <= common {
        return;
    }
    let folder = &from[..common];
    if !is_module(folder, &to[common]) {
        return;
    }
    out.insert((folder.join("/"), from[common].clone(), to[common].clone()));
}

/// The circles of sibling edges, one per folder's strongly connected set
/// of two or more modules: `folder: a, b, c`.
fn circles(edges: &BTreeSet<(String, String, String)>) -> BTreeSet<String> {
    let mut by_folder: BTreeMap<&str, BTreeMap<&str, BTreeSet<&str>>> = BTreeMap::new();
    for (d, a, b) in edges {
        by_folder
            .entry(d)
            .or_default()
            .entry(a)
            .or_default()
            .insert(b);
    }
    let mut out = BTreeSet::new();
    for (d, g) in by_folder {
        // Reachability by search from each node: the folders are small.
        let reach = |from: &str| -> BTreeSet<&str> {
            let mut seen = BTreeSet::new();
            let mut todo = vec![from];
            while let Some(n) = todo.pop() {
                for t in g.get(n).into_iter().flatten() {
                    if seen.insert(*t) {
                        todo.push(t);
                    }
                }
            }
            seen
        };
        let nodes: BTreeSet<&str> = g.keys().copied().collect();
        let mut placed = BTreeSet::new();
        for n in &nodes {
            if placed.contains(n) {
                continue;
            }
            let fwd = reach(n);
            let set: Vec<&str> = fwd
                .iter()
                .copied()
                .filter(|m| reach(m).contains(n))
                .collect();
            if set.len() >= 2 {
                placed.extend(set.iter().copied());
                let label = if d.is_empty() { "src" } else { d };
                out.insert(format!("{label}: {}", set.join(", ")));
            }
        }
    }
    out
}

#[test]
fn no_import_circle_inside_a_folder() {
    let mut edges = BTreeSet::new();
    for (src, label) in roots() {
        edges.extend(sibling_edges(&src, &label));
    }
    let found = circles(&edges);
    let known: BTreeSet<String> = KNOWN_CIRCLES.iter().map(|s| s.to_string()).collect();
    let new: Vec<&String> = found.difference(&known).collect();
    let gone: Vec<&String> = known.difference(&found).collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "import circles inside a folder not listed: {new:?}; listed but gone (remove from KNOWN_CIRCLES): {gone:?}"
    );
}
