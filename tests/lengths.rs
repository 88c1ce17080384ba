//! No function of the sources (the binary's and every crate's, tests
//! modules left out) is over 80 lines without a reason: a comment that
//! starts `Long:` in its doc comment or its first lines says why it is
//! one piece (one match arm per message kind, one sequence whose steps
//! share every local).

use std::path::{Path, PathBuf};

/// Lines a function may have without a reason.
const LIMIT: usize = 80;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The line without its string and char literals and its `//` comment,
/// so that the braces left are code's.
fn code(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    let mut in_str = false;
    while let Some(c) = chars.next() {
        if in_str {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '/' if chars.peek() == Some(&'/') => break,
            // A char literal ('{'); a lifetime ('a) has no closing quote
            // two or three characters on.
            '\'' => {
                let rest: String = chars.clone().take(3).collect();
                if rest.starts_with("\\") && rest.ends_with('\'') {
                    chars.nth(2);
                } else if rest.chars().nth(1) == Some('\'') {
                    chars.nth(1);
                } else {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The name of the function a line starts, if it starts one.
fn fn_name(line: &str) -> Option<String> {
    let mut rest = line.trim_start();
    for prefix in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
    ] {
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
/// [`LIMIT`] lines whose doc comment or first lines give no reason.
fn long_in(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    // A file's tests module is its last item.
    let end = lines
        .iter()
        .position(|l| l.trim() == "#[cfg(test)]")
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
            let c = code(lines[j]);
            if !opened && c.trim_end().ends_with(';') {
                break;
            }
            for ch in c.chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if opened && depth == 0 {
                break;
            }
            j += 1;
        }
        let n = j - i + 1;
        if opened && n > LIMIT {
            // The doc comment and attributes above, and the body's first
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
    files(&root.join("src"), &mut paths);
    files(&root.join("crates"), &mut paths);
    let mut out = Vec::new();
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
    // Braces in strings and chars, a lifetime, a one-line function, a
    // long one with and without its reason, and one in the tests module.
    let body = |name: &str, reason: &str, n: usize| {
        format!(
            "/// Doc.\n{reason}pub(crate) fn {name}<'a>(x: &'a str) -> &'a str {{\n{}    x\n}}\n",
            "    let _ = (\"}\", '{', '\\'');\n".repeat(n)
        )
    };
    let text = format!(
        "fn short() {{}}\n{}{}{}#[cfg(test)]\nmod tests {{\n{}}}\n",
        body("plain", "", LIMIT),
        body("flagged", "", LIMIT - 1),
        body("excused", "// Long: one sequence.\n", LIMIT),
        body("in_tests", "", LIMIT),
    );
    let long = long_in(&text);
    let names: Vec<&str> = long.iter().map(|(_, n, _)| n.as_str()).collect();
    assert_eq!(names, ["plain", "flagged"], "{long:?}");
    // The first's lines: its head, LIMIT lines, `x` and the brace.
    assert_eq!(long[0], (3, "plain".to_string(), LIMIT + 3));
    assert_eq!(long[1].2, LIMIT + 2);
}
