//! Engine options given as `--set ENGINE.KEY=VALUE`, and sizes like `256MB`.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::EngineKind;
use crate::UsageError;

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
    pub fn check_known(&self, kind: EngineKind, known: &[&str]) -> Result<()> {
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
    pub fn reject_all(&self, kind: EngineKind) -> Result<()> {
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

/// Parses `--set` values (`ENGINE.KEY=VALUE`) into options per engine.
pub fn parse_sets(sets: &[String]) -> Result<BTreeMap<EngineKind, EngineOptions>, UsageError> {
    let mut out: BTreeMap<EngineKind, EngineOptions> = BTreeMap::new();
    for s in sets {
        let (lhs, value) = s
            .split_once('=')
            .ok_or_else(|| UsageError(format!("--set '{s}': expected ENGINE.KEY=VALUE")))?;
        let (engine, key) = lhs.split_once('.').ok_or_else(|| {
            UsageError(format!(
                "--set '{s}': expected ENGINE.KEY=VALUE (no engine prefix)"
            ))
        })?;
        let kind =
            EngineKind::parse(engine).map_err(|e| UsageError(format!("--set '{s}': {}", e.0)))?;
        if key.is_empty() {
            return Err(UsageError(format!("--set '{s}': empty key")));
        }
        out.entry(kind)
            .or_default()
            .pairs
            .push((key.to_string(), value.to_string()));
    }
    Ok(out)
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
    fn sets() {
        let m = parse_sets(&[
            "rocksdb.compaction_pri=kOldestSmallestSeqFirst".into(),
            "wiredtiger.cache_size=1GB".into(),
            "rocksdb.table.block_size=8192".into(),
        ])
        .unwrap();
        let r = &m[&EngineKind::parse("rocksdb").unwrap()];
        assert_eq!(r.get("compaction_pri"), Some("kOldestSmallestSeqFirst"));
        assert_eq!(r.get("table.block_size"), Some("8192"));
        assert!(
            parse_sets(&["nosuch.x=1".into()])
                .unwrap_err()
                .0
                .contains("nosuch")
        );
        assert!(parse_sets(&["rocksdb=1".into()]).is_err());
        assert!(parse_sets(&["rocksdb.x".into()]).is_err());
    }

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
        let err = o
            .check_known(EngineKind::parse("lmdb").unwrap(), &["a"])
            .unwrap_err();
        assert!(err.to_string().contains("lmdb.c"), "{err}");
    }
}
