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

/// A named set of settings per engine, made from the memory limit; each
/// engine's registry entry ([`super::registry::EngineDef::presets`]) says
/// what it sets under the preset's name, so no engine is named here.
pub struct Preset {
    /// The name `--preset` takes.
    pub name: &'static str,
    /// What it is, in one line (listed when a name is not known).
    pub about: &'static str,
}

/// The name of the seed posts' IO-bound settings; each engine's
/// registry entry says what it sets under it.
pub const ERA_2015: &str = "era-2015";

/// Every preset.
pub const PRESETS: &[Preset] = &[Preset {
    name: ERA_2015,
    about: "the seed posts' IO-bound settings",
}];

/// The preset named `name`, or an error naming the known ones.
pub fn find(name: &str) -> Result<&'static Preset, crate::UsageError> {
    PRESETS.iter().find(|p| p.name == name).ok_or_else(|| {
        let known: Vec<String> = PRESETS
            .iter()
            .map(|p| format!("{}: {}, for {}", p.name, p.about, p.engines().join(", ")))
            .collect();
        crate::UsageError(format!(
            "preset '{name}': not a preset (known: {})",
            known.join("; ")
        ))
    })
}

impl Preset {
    /// The engines it changes: those whose registry entry lists it.
    pub fn engines(&self) -> Vec<&'static str> {
        EngineKind::all()
            .filter(|k| k.def().presets.iter().any(|(p, _)| *p == self.name))
            .map(EngineKind::name)
            .collect()
    }

    /// Its settings for `kind` under a memory limit in bytes: what the
    /// engine's registry entry lists under the preset's name; empty
    /// where it leaves the engine as it is, and without a limit (None,
    /// the cached configuration: the preset is of IO-bound runs).
    pub fn settings(&self, kind: EngineKind, memory: Option<u64>) -> Vec<(String, String)> {
        let Some(m) = memory else {
            return Vec::new();
        };
        kind.def()
            .presets
            .iter()
            .find(|(p, _)| *p == self.name)
            .map_or_else(Vec::new, |(_, settings)| settings(m))
    }
}

/// InnoDB's buffer pool under `era-2015`: 5/8 of `memory` over the
/// `servers` that share it, in MB as my.cnf takes it. The rest holds the
/// server's own memory (connections, the redo log buffer, the
/// dictionary) and the page cache the limit also counts; at 512MB that
/// is 320MB, the share seed 003's run 2 measured in its regime.
pub fn innodb_pool(memory: u64, servers: u64) -> String {
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
            p.settings(innodb, Some(512 << 20)),
            vec![("innodb_buffer_pool_size".to_string(), "320M".to_string())]
        );
        assert_eq!(
            p.settings(innodb, Some(2 << 30)),
            vec![("innodb_buffer_pool_size".to_string(), "1280M".to_string())]
        );
        assert!(p.settings(innodb, None).is_empty());
        // What it changes is read from the registry.
        let engines = p.engines();
        assert!(engines.contains(&"mariadb-innodb") && engines.contains(&"wiredtiger"));
        assert!(!engines.contains(&"lmdb"), "{engines:?}");
        // Three nodes under one 512MB limit: 320MB / 3.
        let galera = EngineKind::parse("mariadb-galera").unwrap();
        assert_eq!(
            p.settings(galera, Some(512 << 20)),
            vec![("innodb_buffer_pool_size".to_string(), "106M".to_string())]
        );
        let rocksdb = EngineKind::parse("rocksdb").unwrap();
        assert_eq!(
            p.settings(rocksdb, Some(512 << 20)),
            vec![("use_direct_reads".to_string(), "false".to_string())]
        );
        let myrocks = EngineKind::parse("mariadb-myrocks").unwrap();
        assert_eq!(
            p.settings(myrocks, Some(512 << 20)),
            vec![("rocksdb_use_direct_reads".to_string(), "OFF".to_string())]
        );
        let wt = EngineKind::parse("wiredtiger").unwrap();
        assert_eq!(
            p.settings(wt, Some(512 << 20)),
            vec![("direct_io".to_string(), "[]".to_string())]
        );
        let lmdb = EngineKind::parse("lmdb").unwrap();
        assert!(p.settings(lmdb, Some(512 << 20)).is_empty());
        let e = find("era-1999").err().unwrap().0;
        assert!(e.contains("era-1999") && e.contains("era-2015"), "{e}");
    }
}
