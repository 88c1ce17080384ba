//! No function of the sources (the binary's and every crate's, tests
//! modules left out) is over 80 lines without a reason: a comment that
//! starts `Long:` in its doc comment or its first lines says why it is
//! one piece (one match arm per message kind, one sequence whose steps
//! share every local).

use std::path::Path;

use crate::common::rust_files;

/// Lines a function may have without a reason.
const LIMIT: usize = 80;

/// Each line's braces in code (not in a string, raw string, char or
/// comment), as (opened, closed), read across lines: a string or block
/// comment may span several.
fn braces(text: &str) -> Vec<(i64, i64)> {
    #[derive(Clone, Copy, PartialEq)]
    enum In {
        Code,
        Str,
        Raw(usize),
        Block(usize),
    }
    let mut state = In::Code;
    let mut out = Vec::new();
    for line in text.lines() {
        let c: Vec<char> = line.chars().collect();
        let (mut open, mut close, mut i) = (0, 0, 0);
        while i < c.len() {
            let at = |k: usize| c.get(i + k).copied();
            match state {
                In::Str => match c[i] {
                    '\\' => i += 1,
                    '"' => state = In::Code,
                    _ => {}
                },
                In::Raw(h) => {
                    if c[i] == '"' && (1..=h).all(|k| at(k) == Some('#')) {
                        state = In::Code;
                        i += h;
                    }
                }
                In::Block(d) => {
                    if c[i] == '*' && at(1) == Some('/') {
                        state = if d == 1 { In::Code } else { In::Block(d - 1) };
                        i += 1;
                    } else if c[i] == '/' && at(1) == Some('*') {
                        state = In::Block(d + 1);
                        i += 1;
                    }
                }
                In::Code => match c[i] {
                    '/' if at(1) == Some('/') => break,
                    '/' if at(1) == Some('*') => {
                        state = In::Block(1);
                        i += 1;
                    }
                    '"' => state = In::Str,
                    'r' if (at(1) == Some('"') || at(1) == Some('#'))
                        && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_')) =>
                    {
                        let h = c[i + 1..].iter().take_while(|&&x| x == '#').count();
                        if at(1 + h) == Some('"') {
                            state = In::Raw(h);
                            i += 1 + h;
                        }
                    }
                    // A char literal ('{', '\'', '\\'); a lifetime ('a)
                    // has no closing quote right after.
                    '\'' => {
                        if at(1) == Some('\\') {
                            let end = (i + 2..c.len()).find(|&k| c[k] == '\'');
                            i = end.unwrap_or(i);
                        } else if at(2) == Some('\'') {
                            i += 2;
                        }
                    }
                    '{' => open += 1,
                    '}' => close += 1,
                    _ => {}
                },
            }
            i += 1;
        }
        out.push((open, close));
    }
    out
}

/// The name of the function a line starts, if it starts one.
fn fn_name(line: &str) -> Option<String> {
    let mut rest = line.trim_start();
    // pub, pub(crate), pub(super), pub(in path)
    if let Some(r) = rest.strip_prefix("pub") {
        rest = match r.strip_prefix('(') {
            Some(inner) => inner.split_once(')')?.1.trim_start(),
            None => r.strip_prefix(' ')?,
        };
    }
    for prefix in ["const ", "async ", "unsafe "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    rest = rest.strip_prefix("extern \"C\" ").unwrap_or(rest);
    let name = rest.strip_prefix("fn ")?;
    Some(
        name.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect(),
    )
}

/// (line, name, lines) of each function of a file's `text` over
/// [`LIMIT`] lines whose doc comment or first lines give no reason; a
/// function that never closes is reported with 0 lines.
fn long_in(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let counts = braces(text);
    // The tests module (`#[cfg(test)]` on a `mod`) and what follows it.
    let end = (0..lines.len())
        .find(|&i| {
            lines[i].trim() == "#[cfg(test)]"
                && lines[i + 1..]
                    .iter()
                    .map(|l| l.trim_start())
                    .find(|l| !l.starts_with("#["))
                    .is_some_and(|l| l.starts_with("mod ") || l.starts_with("pub mod "))
        })
        .unwrap_or(lines.len());
    let mut out = Vec::new();
    let mut i = 0;
    while i < end {
        let Some(name) = fn_name(lines[i]) else {
            i += 1;
            continue;
        };
        let (mut depth, mut opened, mut j) = (0i64, false, i);
        while j < end {
            let (o, c) = counts[j];
            if !opened && o == 0 && lines[j].trim_end().ends_with(';') {
                break;
            }
            opened |= o > 0;
            depth += o - c;
            if opened && depth <= 0 {
                break;
            }
            j += 1;
        }
        if opened && j == end {
            out.push((i + 1, name, 0));
            break;
        }
        let n = j - i + 1;
        if opened && n > LIMIT {
            // The comments and attributes above it, and the body's first
            // lines.
            let mut k = i;
            while k > 0 && {
                let t = lines[k - 1].trim_start();
                t.starts_with("//") || t.starts_with("#[")
            } {
                k -= 1;
            }
            let said = lines[k..(i + 8).min(j)].iter().any(|l| {
                let t = l.trim_start();
                t.starts_with("//") && t.trim_start_matches('/').trim_start().starts_with("Long:")
            });
            if !said {
                out.push((i + 1, name, n));
            }
        }
        i = if opened { j + 1 } else { i + 1 };
    }
    out
}

/// (file, line, name, lines) of each long function without a reason in
/// the sources.
fn long_without_reason() -> Vec<(String, usize, String, usize)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    rust_files(&root.join("src"), &mut paths);
    rust_files(&root.join("crates"), &mut paths);
    let mut out = Vec::new();
    // Files that are a tests module of their own (`tests.rs`,
    // `*_tests.rs`, a `tests/` folder) are tests, not sources.
    paths.retain(|p| {
        let name = p.file_name().unwrap_or_default().to_string_lossy();
        name != "tests.rs"
            && !name.ends_with("_tests.rs")
            && !p.components().any(|c| c.as_os_str() == "tests")
    });
    for p in paths {
        let text = std::fs::read_to_string(&p).unwrap();
        let rel = p.strip_prefix(root).unwrap_or(&p).display().to_string();
        for (line, name, n) in long_in(&text) {
            out.push((rel.clone(), line, name, n));
        }
    }
    out.sort();
    out
}

#[test]
fn no_long_function_without_a_reason() {
    let long = long_without_reason();
    assert!(
        long.is_empty(),
        "over {LIMIT} lines with no `Long:` comment saying why:\n{}",
        long.iter()
            .map(|(f, l, n, len)| format!("  {f}:{l} {n} ({len} lines)"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_counter_sees_a_long_function_and_its_reason() {
    // Braces in strings, chars, a string over two lines, a raw string and
    // a block comment; a lifetime; a one-line function; long ones with
    // and without their reason; a `#[cfg(test)]` helper (not a module)
    // above a long one; one in the tests module.
    let body = |name: &str, reason: &str, n: usize| {
        format!(
            "/// Doc.\n{reason}pub(in crate::x) fn {name}<'a>(x: &'a str) -> &'a str {{\n{}    x\n}}\n",
            "    let _ = (\"}\", '{', '\\'', \"{\n }\", r#\"}\"#); /* { */\n".repeat(n / 2)
        )
    };
    let text = format!(
        "fn short() {{}}\n{}{}{}#[cfg(test)]\nfn helper() {{}}\n{}#[cfg(test)]\nmod tests {{\n{}}}\n",
        body("plain", "", LIMIT),
        body("flagged", "", LIMIT - 2),
        body("excused", "// Long: one sequence.\n", LIMIT),
        body("after_helper", "", LIMIT),
        body("in_tests", "", LIMIT),
    );
    let long = long_in(&text);
    let names: Vec<&str> = long.iter().map(|(_, n, _)| n.as_str()).collect();
    assert_eq!(names, ["plain", "flagged", "after_helper"], "{long:?}");
    // The first's lines: its head, LIMIT body lines (two a repeat), `x`
    // and the brace.
    assert_eq!(long[0], (3, "plain".to_string(), LIMIT + 3));
    assert_eq!(long[1].2, LIMIT + 1);
    // Short ones pass; one that never closes is reported, not skipped.
    assert!(long_in(&body("short", "", 10)).is_empty());
    let open = long_in("fn broken() {\n    if x {\n");
    assert_eq!(open, [(1, "broken".to_string(), 0)]);
}

/// (file, line) of each doc comment that opens a code block: rustdoc
/// would make it a doc test, and doc tests are off (`doctest = false` in
/// every crate's Cargo.toml: none was written, and rustdoc's pass over
/// the crates to find none took 40 s of the suite).
///
/// Seen: a fence (```` ``` ````) in a `///` or `//!` line or a
/// `#[doc = …]`, an indented block (four spaces after a blank doc line:
/// Markdown's code block outside a list), and any `/** */` or `/*! */`
/// doc comment (none is written here, so none is read).
fn doc_code_blocks(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut blank_before = false;
    for (i, l) in text.lines().enumerate() {
        let t = l.trim_start();
        let doc = (t.starts_with("///") && !t.starts_with("////")) || t.starts_with("//!");
        let body = if doc { &t[3..] } else { "" };
        let content = body.strip_prefix(' ').unwrap_or(body);
        let fenced = doc && content.trim_start().starts_with("```");
        let indented =
            doc && blank_before && content.starts_with("    ") && !content.trim().is_empty();
        let attr = (t.starts_with("#[doc") || t.starts_with("#![doc")) && t.contains("```");
        let block = t.starts_with("/**") || t.starts_with("/*!");
        if fenced || indented || attr || block {
            out.push(i + 1);
        }
        blank_before = doc && content.trim().is_empty();
    }
    out
}

#[test]
fn no_doc_comment_holds_a_code_block() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    rust_files(&root.join("src"), &mut paths);
    rust_files(&root.join("crates"), &mut paths);
    let mut found = Vec::new();
    for p in &paths {
        let text = std::fs::read_to_string(p).unwrap();
        for line in doc_code_blocks(&text) {
            found.push(format!(
                "  {}:{line}",
                p.strip_prefix(root).unwrap_or(p).display()
            ));
        }
    }
    assert!(
        found.is_empty(),
        "a code block in a doc comment would be a doc test, and doc tests are off \
         (doctest = false in each Cargo.toml): write it as prose, or turn them back on \
         (and the doc-test step of scripts/test.sh):\n{}",
        found.join("\n")
    );
    // The rule sees each kind, and not a list's continuation or a
    // comment that is not a doc comment.
    let sample = [
        "/// Text.",
        "///",
        "/// ```",
        "/// let x = 1;",
        "/// ```",
        "fn f() {}",
        "//! ```text",
        "/// Text.",
        "///",
        "///     let y = 2;",
        "/// - a list item",
        "///   continued",
        "#[doc = \"```\"]",
        "/** x */",
        "//// ```",
        "// ```",
    ]
    .join("\n");
    assert_eq!(doc_code_blocks(&sample), vec![3, 5, 7, 10, 13, 14]);
}
