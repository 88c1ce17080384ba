//! Engine settings ampbench refuses, whoever passes them (`--set`, a
//! plan's `[engines]`, `--sweep`).
//!
//! ampbench runs as root and starts servers on shared machines, so two
//! kinds of setting are kept out:
//! - **reserved**: where and to whom a server listens, how it
//!   authenticates, as whom and where it runs. ampbench sets these
//!   itself (127.0.0.1, this run's user and password, its own
//!   directory); no flag lets them through.
//! - **unsafe**: settings that name a file or directory outside the
//!   engine's own, or load code (MariaDB's `init_file`, `log_error`,
//!   `plugin_load_add`, PostgreSQL's `archive_command`,
//!   `shared_preload_libraries`, WiredTiger's `extensions`, RocksDB's
//!   `wal_dir`). A root process writing or running what such a setting
//!   names does what its author wants, so they pass only with
//!   `--allow-unsafe-settings` on the command line (never from a plan
//!   file, which someone else may have written).
//!
//! Each engine's registry entry has a judge (`EngineDef::guard`) that
//! sees every spelling the engine itself accepts: MariaDB's option
//! prefixes (`loose-`, `skip-`, `enable-`, `disable-`, `maximum-`,
//! `autoset-`) and abbreviations, `-` for `_`, any case.

use anyhow::Result;

use super::{EngineKind, EngineOptions};
use crate::UsageError;

pub use super::options::Refusal;

/// A judge that refuses nothing (engines with no such settings).
pub fn none(_key: &str, _value: &str) -> Option<Refusal> {
    None
}

/// Checks every option of `options` with `kind`'s judge; the error is one
/// line naming the key as given and the setting it resolves to.
pub fn check(kind: EngineKind, options: &EngineOptions) -> Result<()> {
    // ampbench's own defaults pass as they are (the plan template lists
    // them, WiredTiger's snappy extension among them).
    let defaults = kind.default_settings(0);
    for (k, v) in &options.pairs {
        // A key is one word: no blank or quote for a parser to trim or
        // read as part of the value (`extensions =…`, `"wal_dir"=…`).
        if k.is_empty()
            || !k
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Err(UsageError(format!(
                "--set {kind}.{k}: a key is letters, digits, '_', '-' and '.' only"
            ))
            .into());
        }
        if defaults.iter().any(|(dk, dv)| dk == k && dv == v) {
            continue;
        }
        match (kind.def().guard)(k, v) {
            None => {}
            Some(Refusal::Reserved(name)) => {
                return Err(UsageError(format!(
                    "--set {kind}.{k}: {} is set by ampbench and not to be changed (its servers listen on 127.0.0.1, admit only this run's user and keep to their own directory)",
                    describe(k, &name)
                ))
                .into());
            }
            Some(Refusal::Unsafe(name)) if !options.allow_unsafe => {
                return Err(UsageError(format!(
                    "--set {kind}.{k}: {} names a file or directory or loads code, which ampbench (running as root) passes only with --allow-unsafe-settings",
                    describe(k, &name)
                ))
                .into());
            }
            Some(Refusal::Unchecked(why)) if !options.allow_unsafe => {
                return Err(UsageError(format!(
                    "--set {kind}.{k}: cannot be checked ({why}), so it might abbreviate a setting that names a file or loads code; ampbench (running as root) passes it only with --allow-unsafe-settings"
                ))
                .into());
            }
            Some(Refusal::Unsafe(_) | Refusal::Unchecked(_)) => {}
        }
    }
    Ok(())
}

/// `name` (the key, or the key with what its value sets), or "`key`
/// (which the engine reads as `name`)" when the engine reads the key as
/// another setting.
fn describe(key: &str, name: &str) -> String {
    let (k, n) = (norm(key, '_'), norm(name, '_'));
    if n == k || n.starts_with(&format!("{k}=")) {
        format!("'{name}'")
    } else {
        format!("'{key}' (which the engine reads as '{name}')")
    }
}

/// A key in one spelling: lower case, `-` and `_` as `sep`.
pub fn norm(key: &str, sep: char) -> String {
    key.chars()
        .map(|c| match c {
            '-' | '_' => sep,
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// The names in a value that looks like an options string
/// (`a=1;b={c=2}`, WiredTiger's `log=(path=x)`): every word followed by
/// `=` or `:` (WiredTiger's parser takes either), with quotes and blanks
/// between them skipped (`"extensions" : […]`, RocksDB's `wal_dir =x`),
/// normalised with `sep`. It finds more than the engine would read as
/// names (`bloomfilter:10` gives `bloomfilter`): it is used to refuse,
/// so a false name costs nothing and a missed one would.
pub fn names_in_value(value: &str, sep: char) -> Vec<String> {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.';
    let chars: Vec<char> = value.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !is_word(chars[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && is_word(chars[i]) {
            i += 1;
        }
        let word: String = chars[start..i].iter().collect();
        let mut j = i;
        while j < chars.len() && matches!(chars[j], ' ' | '\t' | '"' | '\'') {
            j += 1;
        }
        if j < chars.len() && matches!(chars[j], '=' | ':') {
            out.push(norm(&word, sep));
        }
    }
    out
}

/// True when `name` ends with one of `suffixes` or equals one of `exact`.
pub fn matches(name: &str, exact: &[&str], suffixes: &[&str]) -> bool {
    exact.contains(&name) || suffixes.iter().any(|s| name.ends_with(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_an_options_string() {
        assert_eq!(
            names_in_value("log=(enabled=true,path=/etc)", '_'),
            ["log", "enabled", "path"]
        );
        assert_eq!(
            names_in_value("max_open_files=1;wal_dir=/x", '_'),
            ["max_open_files", "wal_dir"]
        );
        assert!(names_in_value("/etc/passwd", '_').is_empty());
        // WiredTiger's `:` and quoted keys, RocksDB's blanks.
        assert_eq!(
            names_in_value("eviction_target=80,\"extensions\" : [/x.so]", '_'),
            ["eviction_target", "extensions"]
        );
        assert_eq!(names_in_value("1;wal_dir =/x", '_'), ["wal_dir"]);
    }

    #[test]
    fn spellings_are_one() {
        assert_eq!(norm("Bind_Address", '-'), "bind-address");
        assert_eq!(norm("init-file", '_'), "init_file");
        assert_eq!(describe("init-file", "init_file"), "'init_file'");
        assert_eq!(
            describe("bind-addr", "bind-address"),
            "'bind-addr' (which the engine reads as 'bind-address')"
        );
    }
}
