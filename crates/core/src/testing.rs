//! What the tests share with the library: how a test that cannot run on
//! this machine says so.

use std::io::Write;
use std::path::Path;

/// Where skipped tests are noted, one line each, for `make test` to count
/// and print (it empties the file first).
pub const SKIPS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/test-skips.txt");

/// A test that cannot run here (no root, no loop device, no browser):
/// under `CI=true` this fails the test, so CI is never green by skipping;
/// elsewhere it prints `skipped: WHY` and notes it in [`SKIPS`], and the
/// caller returns.
pub fn skip(test: &str, why: &str) {
    skip_in(
        std::env::var("CI").ok().as_deref(),
        Path::new(SKIPS),
        test,
        why,
    )
}

fn skip_in(ci: Option<&str>, notes: &Path, test: &str, why: &str) {
    if ci.is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        panic!("{test} cannot run here and CI=true does not let it skip: {why}");
    }
    eprintln!("skipped: {why}");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(notes)
    {
        let _ = writeln!(f, "{test}: {why}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_fails_under_ci_and_is_counted_elsewhere() {
        let d = tempfile::tempdir().unwrap();
        let notes = d.path().join("skips");
        let ci = std::panic::catch_unwind(|| skip_in(Some("true"), &notes, "t", "no loop device"));
        let e = ci.unwrap_err();
        let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.contains("CI=true") && msg.contains("no loop device"),
            "{msg}"
        );
        assert!(!notes.exists(), "a CI skip is a failure, not a note");
        skip_in(None, &notes, "t", "no loop device");
        skip_in(Some("false"), &notes, "u", "no browser");
        assert_eq!(
            std::fs::read_to_string(&notes).unwrap(),
            "t: no loop device\nu: no browser\n"
        );
    }
}
