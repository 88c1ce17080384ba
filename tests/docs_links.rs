//! Issue 33: the docs name no file that no longer exists. Every path of
//! this repository a doc names (`src/…`, `crates/…`, `tests/…`, `docs/…`, `plans/…`,
//! `bench/…`, `scripts/…`, `fuzz/…`) and every relative Markdown link
//! must exist; placeholders (`crates/engine/src/NAME.rs`) and the reference
//! tools' own paths are named below.

use std::path::Path;

/// Paths that are not this repository's: placeholders and other tools'.
const NOT_OURS: &[&str] = &["bench/ibench"];

/// `crates/engine/src/NAME.rs`, `fuzz/corpus/TARGET`, `plans/seeds/NNN-`.
fn is_placeholder(p: &str) -> bool {
    p.ends_with('-')
        || p.split('/').any(|c| {
            let stem = c.split('.').next().unwrap_or("");
            stem.len() > 1 && stem.chars().all(|ch| ch.is_ascii_uppercase())
        })
}

#[test]
fn the_docs_name_only_files_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "md") {
            docs.push(e.path());
        }
    }
    assert!(docs.len() > 3, "{docs:?}");
    let mut missing = Vec::new();
    let mut checked = 0;
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap();
        let name = doc.strip_prefix(root).unwrap().display().to_string();
        // Repository paths, wherever they stand.
        for top in [
            "src/", "crates/", "tests/", "docs/", "plans/", "bench/", "scripts/", "fuzz/",
        ] {
            for (i, _) in text.match_indices(top) {
                let before = text[..i].chars().last();
                if before.is_some_and(|c| {
                    c.is_ascii_alphanumeric() || c == '/' || c == '.' || c == '_' || c == '-'
                }) {
                    continue;
                }
                let p: String = text[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || "/._-".contains(*c))
                    .collect();
                let p = p.trim_end_matches(['.', ',']);
                if NOT_OURS.contains(&p) || is_placeholder(p) {
                    continue;
                }
                checked += 1;
                if !root.join(p).exists() {
                    missing.push(format!("{name}: {p}"));
                }
            }
        }
        // Relative Markdown links: [text](path).
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split('#').next().unwrap_or("");
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            if !doc.parent().unwrap().join(target).exists() {
                missing.push(format!("{name}: link {target}"));
            }
        }
    }
    assert!(checked > 20, "only {checked} references read");
    assert!(
        missing.is_empty(),
        "the docs name what does not exist: {missing:#?}"
    );
}
