//! Named sets of engine settings beside today's defaults (`--preset`,
//! `preset = "…"` in a plan): how the seed posts' era ran each engine when
//! its database was larger than memory. A preset goes over the engine's
//! IO-bound profile (`--memory`) and under the user's `--set`, so a plan
//! can still change one key; it is recorded with the run's settings, as
//! every setting is.
//!
//! `era-2015`: the posts of 2015-2016 ran InnoDB as a tuned server then
//! did, its buffer pool most of the memory, and MyRocks reading through
//! the OS page cache, which held its compressed blocks beside a block
//! cache of uncompressed ones (MyRocks' direct reads came later). Today's
//! profile gives InnoDB a quarter of the limit (`--cache`'s default) and
//! MyRocks direct reads, which leave the rest of the limit caching
//! nothing: MyRocks then read 2.26 device IOs per request where the
//! post's did at most 0.46 (issue 49's measurement).

use super::EngineKind;

/// A named set of settings per engine, made from the memory limit.
pub struct Preset {
    /// The name `--preset` takes.
    pub name: &'static str,
    /// What it is, in one line (listed when a name is not known).
    pub about: &'static str,
    /// The settings for an engine under a memory limit in bytes (None:
    /// the cached configuration, no limit); empty where the preset
    /// leaves the engine as it is.
    pub settings: fn(EngineKind, Option<u64>) -> Vec<(String, String)>,
}

/// Every preset.
pub const PRESETS: &[Preset] = &[Preset {
    name: "era-2015",
    about: "the seed posts' IO-bound settings: InnoDB's pool at 5/8 of the memory limit, MyRocks, RocksDB and WiredTiger reading through the page cache",
    settings: era_2015,
}];

/// The preset named `name`, or an error naming the known ones.
pub fn find(name: &str) -> Result<&'static Preset, crate::UsageError> {
    PRESETS.iter().find(|p| p.name == name).ok_or_else(|| {
        let known: Vec<String> = PRESETS
            .iter()
            .map(|p| format!("{}: {}", p.name, p.about))
            .collect();
        crate::UsageError(format!(
            "preset '{name}': not a preset (known: {})",
            known.join("; ")
        ))
    })
}

/// InnoDB's pool is 5/8 of the limit (split between a cluster's nodes,
/// which share it): the rest holds the server's own
/// memory (connections, the redo log buffer, the dictionary) and the page
/// cache the limit also counts; at 512MB that is 320MB, the share seed
/// 003's run 2 measured in its regime. MyRocks and RocksDB read through
/// the page cache (buffered reads); their flushes and compactions keep
/// direct IO, as the profile has it, so written files do not crowd the
/// blocks read. Nothing changes without a limit.
fn era_2015(kind: EngineKind, memory: Option<u64>) -> Vec<(String, String)> {
    let Some(m) = memory else {
        return Vec::new();
    };
    let pair = |k: &str, v: String| (k.to_string(), v);
    match kind.name() {
        "mariadb-innodb" => vec![pair("innodb_buffer_pool_size", pool(m, 1))],
        // The cluster's nodes share the one limit.
        "mariadb-galera" => vec![pair(
            "innodb_buffer_pool_size",
            pool(m, crate::galera::NODES as u64),
        )],
        "mariadb-myrocks" => vec![pair("rocksdb_use_direct_reads", "OFF".into())],
        "rocksdb" => vec![pair("use_direct_reads", "false".into())],
        // MongoDB's WiredTiger never used direct IO: the page cache held
        // its compressed blocks beside its own cache.
        "wiredtiger" => vec![pair("direct_io", "[]".into())],
        _ => Vec::new(),
    }
}

/// 5/8 of `memory` over `servers`, in MB as my.cnf takes it.
fn pool(memory: u64, servers: u64) -> String {
    format!("{}M", (memory / 8 * 5 / servers) >> 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn era_2015_sizes_innodb_by_the_limit_and_leaves_the_cached_run() {
        let p = find("era-2015").unwrap();
        let innodb = EngineKind::parse("mariadb-innodb").unwrap();
        assert_eq!(
            (p.settings)(innodb, Some(512 << 20)),
            vec![("innodb_buffer_pool_size".to_string(), "320M".to_string())]
        );
        assert_eq!(
            (p.settings)(innodb, Some(2 << 30)),
            vec![("innodb_buffer_pool_size".to_string(), "1280M".to_string())]
        );
        assert!((p.settings)(innodb, None).is_empty());
        // Three nodes under one 512MB limit: 320MB / 3.
        let galera = EngineKind::parse("mariadb-galera").unwrap();
        assert_eq!(
            (p.settings)(galera, Some(512 << 20)),
            vec![("innodb_buffer_pool_size".to_string(), "106M".to_string())]
        );
        let rocksdb = EngineKind::parse("rocksdb").unwrap();
        assert_eq!(
            (p.settings)(rocksdb, Some(512 << 20)),
            vec![("use_direct_reads".to_string(), "false".to_string())]
        );
        let myrocks = EngineKind::parse("mariadb-myrocks").unwrap();
        assert_eq!(
            (p.settings)(myrocks, Some(512 << 20)),
            vec![("rocksdb_use_direct_reads".to_string(), "OFF".to_string())]
        );
        let wt = EngineKind::parse("wiredtiger").unwrap();
        assert_eq!(
            (p.settings)(wt, Some(512 << 20)),
            vec![("direct_io".to_string(), "[]".to_string())]
        );
        let lmdb = EngineKind::parse("lmdb").unwrap();
        assert!((p.settings)(lmdb, Some(512 << 20)).is_empty());
        let e = find("era-1999").err().unwrap().0;
        assert!(e.contains("era-1999") && e.contains("era-2015"), "{e}");
    }
}
