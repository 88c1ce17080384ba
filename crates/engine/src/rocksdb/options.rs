//! RocksDB's options: our defaults, the options string built from them and
//! `--set rocksdb.KEY=VALUE` overrides, our own settings (`statistics`,
//! `perf_level`), and validation by RocksDB's own parser.

use std::os::raw::c_int;

use anyhow::Result;

use crate::UsageError;
use crate::ffi::rocksdb::Options;
use crate::{EngineKind, EngineOptions};

/// The default settings for a cache size (see the engine's module doc).
pub fn default_settings(cache_bytes: u64) -> Vec<(String, String)> {
    [
        ("write_buffer_size", "67108864".to_string()),
        ("max_background_jobs", "2".to_string()),
        ("level_compaction_dynamic_level_bytes", "true".to_string()),
        ("compression", "kSnappyCompression".to_string()),
        ("table.filter_policy", "bloomfilter:10:false".to_string()),
        ("table.block_cache", cache_bytes.to_string()),
        ("statistics", "true".to_string()),
        ("perf_level", "1".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Our settings, which are not RocksDB options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Ours {
    pub(super) statistics: bool,
    pub(super) perf_level: c_int,
}

/// Builds the RocksDB options string from settings; ours (`statistics`,
/// `perf_level`) are returned apart.
pub(super) fn options_string(settings: &[(String, String)]) -> Result<(String, Ours)> {
    let mut db = Vec::new();
    let mut table = Vec::new();
    let mut statistics = true;
    let mut perf_level = 1;
    for (k, v) in settings {
        if k == "perf_level" {
            perf_level = match v.parse::<c_int>() {
                Ok(n @ 1..=5) => n,
                _ => {
                    return Err(UsageError(format!(
                        "option 'rocksdb.perf_level={v}': expected 1 (off) to 5"
                    ))
                    .into());
                }
            };
        } else if k == "statistics" {
            statistics = match v.as_str() {
                "true" | "1" | "on" => true,
                "false" | "0" | "off" => false,
                _ => {
                    return Err(UsageError(format!(
                        "option 'rocksdb.statistics={v}': expected true or false"
                    ))
                    .into());
                }
            };
        } else if let Some(t) = k.strip_prefix("table.") {
            table.push(format!("{t}={v}"));
        } else {
            db.push(format!("{k}={v}"));
        }
    }
    if !table.is_empty() {
        db.push(format!("block_based_table_factory={{{}}}", table.join(";")));
    }
    Ok((
        db.join(";"),
        Ours {
            statistics,
            perf_level,
        },
    ))
}

/// Options that put the engine's files elsewhere (anywhere in the key
/// or inside a nested options string).
const PATHS: &[&str] = &["wal_dir", "db_log_dir", "db_paths", "cf_paths"];

/// Judges one option: those that put files outside the engine's
/// directory are unsafe (see `engine::guard`).
pub fn guard(key: &str, value: &str) -> Option<crate::guard::Refusal> {
    use crate::guard::{Refusal, names_in_value, norm};
    let k = norm(key.strip_prefix("table.").unwrap_or(key), '_');
    std::iter::once(k)
        .chain(names_in_value(value, '_'))
        .find(|n| PATHS.contains(&n.as_str()))
        .map(Refusal::Unsafe)
}

/// Checks `--set rocksdb.*` options by parsing them with RocksDB itself;
/// the error names the first key RocksDB refuses.
pub fn validate(_kind: EngineKind, options: &EngineOptions) -> Result<()> {
    let settings = options.merged_over(&default_settings(8 << 20));
    let (s, _) = options_string(&settings)?;
    if Options::from_string(&s).is_ok() {
        // Options that parse may still not go together; RocksDB says so
        // only at open (allow_mmap_reads with use_direct_reads).
        return Options::check_by_opening(&s).map_err(|e| {
            UsageError(format!(
                "--set rocksdb: {} (RocksDB refused to open with these options)",
                format!("{e:#}").trim_end()
            ))
            .into()
        });
    }
    for (k, v) in &options.pairs {
        let (one, _) = options_string(&[(k.clone(), v.clone())])?;
        if one.is_empty() {
            continue;
        }
        if let Err(e) = Options::from_string(&one) {
            return Err(UsageError(format!("invalid option 'rocksdb.{k}={v}': {e}")).into());
        }
    }
    Err(UsageError(format!("rocksdb refused the options string '{s}'")).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_string_groups_table_keys() {
        let (s, st) = options_string(&[
            ("compaction_pri".into(), "kOldestSmallestSeqFirst".into()),
            ("table.block_size".into(), "8192".into()),
            ("statistics".into(), "false".into()),
        ])
        .unwrap();
        assert_eq!(
            s,
            "compaction_pri=kOldestSmallestSeqFirst;block_based_table_factory={block_size=8192}"
        );
        assert!(!st.statistics);
        assert_eq!(st.perf_level, 1, "perf context counting is off by default");
    }

    #[test]
    fn perf_level_is_ours_and_checked() {
        let (s, st) = options_string(&[("perf_level".into(), "3".into())]).unwrap();
        assert_eq!(s, "", "perf_level is not a RocksDB options-string key");
        assert_eq!(st.perf_level, 3);
        for bad in ["0", "6", "x"] {
            let e = options_string(&[("perf_level".into(), bad.into())]).unwrap_err();
            assert!(e.to_string().contains("rocksdb.perf_level"), "{e}");
        }
    }

    #[test]
    fn validate_names_bad_key() {
        let bad = EngineOptions {
            pairs: vec![("no_such_option".into(), "1".into())],
            ..Default::default()
        };
        let kind = EngineKind::parse("rocksdb").unwrap();
        let e = validate(kind, &bad).unwrap_err().to_string();
        assert!(e.contains("rocksdb.no_such_option"), "{e}");
        let good = EngineOptions {
            pairs: vec![("compaction_pri".into(), "kOldestSmallestSeqFirst".into())],
            ..Default::default()
        };
        validate(kind, &good).unwrap();
    }
}
