//! `--set ENGINE.KEY=VALUE` flags, as options per engine.

use std::collections::BTreeMap;

use super::{EngineKind, EngineOptions};
use crate::UsageError;

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
}
