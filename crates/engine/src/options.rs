//! Engine options given as `--set ENGINE.KEY=VALUE` (parsed per engine in
//! `sets.rs`), why a setting is refused (judged in `guard.rs`), and sizes
//! like `256MB`.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::UsageError;

/// Why a setting is refused: its name as the engine resolves it, and
/// which kind of setting it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Set by ampbench, never by the user.
    Reserved(String),
    /// A path or code loading: only with `--allow-unsafe-settings`.
    Unsafe(String),
    /// Cannot be judged (why): the engine's own list of settings could
    /// not be read, so an abbreviation of a guarded one cannot be ruled
    /// out; only with `--allow-unsafe-settings`.
    Unchecked(String),
}

/// The `--set` options of one engine, in the order given (a later value for
/// the same key wins).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineOptions {
    /// (key, value) pairs, key without the engine prefix.
    pub pairs: Vec<(String, String)>,
    /// Settings that name files or load code are allowed
    /// (`--allow-unsafe-settings` on the command line; see
    /// [`super::guard`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_unsafe: bool,
}

impl EngineOptions {
    /// The last value given for `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Fails on the first key not in `known`, naming it.
    pub fn check_known(&self, kind: impl std::fmt::Display, known: &[&str]) -> Result<()> {
        for (k, _) in &self.pairs {
            if !known.contains(&k.as_str()) {
                return Err(UsageError(format!(
                    "unknown option '{kind}.{k}' (known: {})",
                    known.join(", ")
                ))
                .into());
            }
        }
        Ok(())
    }

    /// Fails if any option was given: for engines that take none.
    pub fn reject_all(&self, kind: impl std::fmt::Display) -> Result<()> {
        if let Some((k, _)) = self.pairs.first() {
            return Err(UsageError(format!(
                "unknown option '{kind}.{k}': {kind} takes no options"
            ))
            .into());
        }
        Ok(())
    }

    /// Merges defaults with these options: defaults first, then overrides
    /// replacing a default of the same key, then new keys in given order.
    pub fn merged_over(&self, defaults: &[(String, String)]) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = defaults.to_vec();
        for (k, v) in &self.pairs {
            match out.iter_mut().find(|(dk, _)| dk == k) {
                Some(slot) => slot.1 = v.clone(),
                None => out.push((k.clone(), v.clone())),
            }
        }
        out
    }
}

/// Settings as shown on the console: `KEY=VALUE`, or `KEY` alone for a
/// flag (an empty value, like my.cnf's `skip-log-bin`), space-separated.
pub fn show(settings: &[(String, String)]) -> String {
    settings
        .iter()
        .map(|(k, v)| {
            if v.is_empty() {
                k.clone()
            } else {
                format!("{k}={v}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The memtable budget of an LSM (RocksDB, MyRocks) under a memory
/// limit: an eighth of it, between 4MB and RocksDB's default memtable,
/// 64MB.
pub fn memtables(memory: u64) -> u64 {
    (memory / 8).clamp(4 << 20, 64 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_and_unknown() {
        let o = EngineOptions {
            pairs: vec![("a".into(), "2".into()), ("c".into(), "3".into())],
            ..Default::default()
        };
        let m = o.merged_over(&[("a".into(), "1".into()), ("b".into(), "1".into())]);
        assert_eq!(
            m,
            vec![
                ("a".into(), "2".into()),
                ("b".into(), "1".into()),
                ("c".into(), "3".into())
            ]
        );
        let err = o.check_known("lmdb", &["a"]).unwrap_err();
        assert!(err.to_string().contains("lmdb.c"), "{err}");
    }
}
