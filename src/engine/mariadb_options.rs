//! MariaDB option keys checked before any server starts: my.cnf words
//! the server lists in `mariadbd --verbose --help` (with MyRocks loaded),
//! or MyRocks column-family options, which `myrocks_cf` routes.

use std::process::Command;

use anyhow::Result;

use super::mariadb::is_myrocks;
use super::{EngineKind, EngineOptions};

/// Checks option keys are my.cnf words the server knows (its `--verbose
/// --help` list, MyRocks loaded; `skip-`, `enable-`, `disable-` and
/// `loose-` prefixes allowed), or MyRocks column-family options; the
/// server checks the values.
pub fn validate(kind: EngineKind, options: &EngineOptions) -> Result<()> {
    for (k, v) in &options.pairs {
        crate::setup::server::check_setting(kind.name(), k, v, &SETTINGS)?;
        let routed = is_myrocks(kind)
            && (k == "default_cf_options" || super::myrocks_cf::CF_OPTIONS.contains(&k.as_str()));
        if let Some(known) = known_options() {
            let n = k.replace('_', "-");
            let base = ["skip-", "enable-", "disable-", "loose-"]
                .iter()
                .find_map(|p| n.strip_prefix(p))
                .unwrap_or(&n);
            if !routed && !known.contains(base) && !n.starts_with("loose-") {
                return Err(crate::UsageError(format!(
                    "unknown option '{kind}.{k}': mariadbd has no such setting (`mariadbd --verbose --help` lists them{})",
                    if is_myrocks(kind) {
                        "; RocksDB column-family options go in by name or in default_cf_options"
                    } else {
                        ""
                    }
                ))
                .into());
            }
        }
    }
    Ok(())
}

/// The server's option names (`max-connections`), from `mariadbd
/// --verbose --help` with MyRocks loaded, read once; None when it cannot
/// be run (the server's start then reports a bad key).
fn known_options() -> Option<&'static std::collections::HashSet<String>> {
    static KNOWN: std::sync::OnceLock<Option<std::collections::HashSet<String>>> =
        std::sync::OnceLock::new();
    KNOWN
        .get_or_init(|| {
            let o = Command::new("mariadbd")
                .args([
                    "--no-defaults",
                    "--plugin-load-add=ha_rocksdb.so",
                    "--verbose",
                    "--help",
                ])
                .output()
                .ok()?;
            let names: std::collections::HashSet<String> = String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.strip_prefix("  --"))
                .filter_map(|l| l.split(['[', '=', ' ']).next())
                .map(str::to_string)
                .collect();
            // Too few names: the help did not list the options.
            (names.len() > 100).then_some(names)
        })
        .as_ref()
}

/// my.cnf keys, and those ampbench makes itself: where and to whom the
/// server listens, and as whom and where it runs.
const SETTINGS: crate::setup::server::Settings = crate::setup::server::Settings {
    extra: '-',
    noun: "a my.cnf setting",
    reserved: RESERVED,
};

const RESERVED: &[&str] = &[
    "bind-address",
    "port",
    "socket",
    "extra-port",
    "skip-grant-tables",
    "user",
    "datadir",
    "pid-file",
    "plugin-dir",
];
