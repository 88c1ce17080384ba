//! MariaDB option keys checked before any server starts: my.cnf words
//! the server lists in `mariadbd --verbose --help` (with MyRocks loaded),
//! or MyRocks column-family options, which `rocks_family::myrocks_cf` routes.

use std::process::Command;

use anyhow::Result;

use super::{EngineKind, EngineOptions, Structure};

/// True for the MyRocks profile: of the MariaDB profiles (servers that
/// speak MySQL's protocol), the one that stores in a leveled LSM.
pub fn is_myrocks(kind: EngineKind) -> bool {
    kind.speaks() == Some(super::Protocol::MySql) && kind.def().structure == Structure::LeveledLsm
}

/// Checks option keys are my.cnf words the server knows (its `--verbose
/// --help` list, MyRocks loaded; `skip-`, `enable-`, `disable-` and
/// `loose-` prefixes allowed), or MyRocks column-family options; the
/// server checks the values.
pub fn validate(kind: EngineKind, options: &EngineOptions) -> Result<()> {
    for (k, v) in &options.pairs {
        crate::server::check_setting(kind.name(), k, v, &SETTINGS)?;
        let routed = is_myrocks(kind)
            && (k == "default_cf_options"
                || super::rocks_family::myrocks_cf::CF_OPTIONS.contains(&k.as_str()));
        if let Some(known) = known_options() {
            let n = k.replace('_', "-");
            let base = [
                "skip-", "enable-", "disable-", "loose-", "maximum-", "autoset-",
            ]
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
                // `  --name=…`, or with a short form, `  -C, --name=…`.
                .filter_map(|l| {
                    let l = l.strip_prefix("  -")?;
                    l.strip_prefix('-')
                        .or_else(|| l.split_once(", --").map(|(_, r)| r))
                })
                .filter_map(|l| l.split(['[', '=', ' ']).next())
                .map(str::to_string)
                .collect();
            // Too few names: the help did not list the options.
            (names.len() > 100).then_some(names)
        })
        .as_ref()
}

/// my.cnf keys: letters, digits, `_` and `-`.
const SETTINGS: crate::server::Settings = crate::server::Settings {
    extra: '-',
    noun: "a my.cnf setting",
};

/// The prefixes mariadbd's option parser takes before any option name
/// (my_getopt): `skip-` and `disable-` turn it off.
const PREFIXES: &[(&str, bool)] = &[
    ("loose-", false),
    ("skip-", true),
    ("disable-", true),
    ("enable-", false),
    ("maximum-", false),
    ("autoset-", false),
];

/// Where and to whom the server listens, how it authenticates, as whom
/// and where it runs: ampbench's.
const RESERVED: &[&str] = &[
    "bind-address",
    "port",
    "socket",
    "extra-port",
    "skip-grant-tables",
    "grant-tables",
    "proxy-protocol-networks",
    "skip-name-resolve",
    "name-resolve",
    "user",
    "datadir",
    "pid-file",
    "plugin-dir",
];

/// Settings that name a file or directory, or load code.
const UNSAFE: &[&str] = &[
    "secure-file-priv",
    "init-file",
    "log-error",
    "log-bin",
    "log-bin-index",
    "log-basename",
    "relay-log",
    "relay-log-index",
    "plugin-load",
    "plugin-load-add",
    "tmpdir",
    "basedir",
    "language",
    "log-tc",
    "rocksdb-datadir",
    "rocksdb-wal-dir",
];

/// Name endings of settings that name a file or directory, or run a
/// command.
const UNSAFE_ENDINGS: &[&str] = &[
    "-file",
    "-filename",
    "-dir",
    "-directory",
    "-path",
    "-home-dir",
    "tmpdir",
    "-cmd",
    "-command",
];

/// Name beginnings of settings kept to ampbench: Galera (`wsrep_*`: a
/// provider library, a notify command, a cluster listening on every
/// address).
const RESERVED_PREFIXES: &[&str] = &["wsrep"];

/// Name beginnings of settings that name files: TLS keys and
/// certificates, the DDL recovery log.
const UNSAFE_PREFIXES: &[&str] = &["ssl", "log-ddl-recovery", "log-isam"];

/// Names inside a RocksDB options string (MyRocks' `*_cf_options`) that
/// put files elsewhere.
const ROCKSDB_PATHS: &[&str] = &["cf-paths", "db-paths", "wal-dir", "db-log-dir"];

/// The names mariadbd may read `key` as: `key` itself and `key` with
/// each of its prefixes taken off (`enable-skip-grant-tables` is
/// `skip-grant-tables`), each with whether a negating prefix came off.
fn spellings(key: &str) -> Vec<(String, bool)> {
    let mut out = vec![(super::guard::norm(key, '-'), false)];
    let mut i = 0;
    while i < out.len() {
        let (k, off) = out[i].clone();
        for (p, negates) in PREFIXES {
            if let Some(rest) = k.strip_prefix(p) {
                if !rest.is_empty() && !out.iter().any(|(o, _)| o == rest) {
                    out.push((rest.to_string(), off || *negates));
                }
            }
        }
        i += 1;
    }
    out
}

/// The options mariadbd may take `name` for: itself when it is an option,
/// otherwise every option (and every name ampbench guards) it
/// abbreviates; mariadbd takes any unambiguous prefix of an option name.
fn resolve(name: &str, known: Option<&std::collections::HashSet<String>>) -> Vec<String> {
    if known.is_some_and(|k| k.contains(name)) || RESERVED.contains(&name) || UNSAFE.contains(&name)
    {
        return vec![name.to_string()];
    }
    let mut out: Vec<String> = RESERVED
        .iter()
        .chain(UNSAFE)
        .filter(|r| r.starts_with(name))
        .map(|r| r.to_string())
        .collect();
    if let Some(k) = known {
        out.extend(k.iter().filter(|o| o.starts_with(name)).cloned());
    }
    if out.is_empty() {
        out.push(name.to_string());
    }
    out
}

/// Judges one my.cnf setting as mariadbd would read it: every prefix and
/// abbreviation resolved, `-` and `_` alike, any case.
pub fn guard(key: &str, value: &str) -> Option<super::guard::Refusal> {
    judge(key, value, known_options())
}

/// [`guard`] with the server's option names `known` (None: they could
/// not be read, and a key that is not one of ampbench's own names is
/// refused as unchecked).
fn judge(
    key: &str,
    value: &str,
    known: Option<&std::collections::HashSet<String>>,
) -> Option<super::guard::Refusal> {
    use super::guard::{Refusal, matches};
    let mut unsafe_name = None;
    for (spelling, off) in spellings(key) {
        for name in resolve(&spelling, known) {
            if RESERVED.contains(&name.as_str())
                || RESERVED_PREFIXES.iter().any(|p| name.starts_with(p))
            {
                return Some(Refusal::Reserved(name));
            }
            // Turning a path off (`skip-log-bin`) names nothing.
            if !off
                && unsafe_name.is_none()
                && (matches(&name, UNSAFE, UNSAFE_ENDINGS)
                    || UNSAFE_PREFIXES.iter().any(|p| name.starts_with(p)))
            {
                unsafe_name = Some(name);
            }
        }
    }
    if unsafe_name.is_none() {
        unsafe_name = super::guard::names_in_value(value, '-')
            .into_iter()
            .find(|n| ROCKSDB_PATHS.contains(&n.as_str()));
    }
    if unsafe_name.is_none() && known.is_none() {
        return Some(Refusal::Unchecked(
            "mariadbd --verbose --help did not list the server's options".into(),
        ));
    }
    unsafe_name.map(Refusal::Unsafe)
}

#[cfg(test)]
mod tests {
    use super::super::guard::Refusal;
    use super::*;

    #[test]
    fn without_the_servers_option_list_nothing_unchecked_passes() {
        // Issue 47: `general-log-fi` abbreviates general_log_file, which
        // only the server's list can tell.
        let none = None;
        assert!(matches!(
            judge("general-log-fi", "/etc/x", none),
            Some(Refusal::Unchecked(_))
        ));
        assert!(matches!(
            judge("max_connections", "100", none),
            Some(Refusal::Unchecked(_))
        ));
        // Reserved and unsafe names are still named as such.
        assert_eq!(
            judge("bind-address", "1.2.3.4", none),
            Some(Refusal::Reserved("bind-address".into()))
        );
        // With the list, the abbreviation resolves and is refused as unsafe.
        let known: std::collections::HashSet<String> = ["general-log-file", "max-connections"]
            .map(String::from)
            .into();
        assert!(matches!(
            judge("general-log-fi", "/etc/x", Some(&known)),
            Some(Refusal::Unsafe(n)) if n == "general-log-file"
        ));
        assert_eq!(judge("max_connections", "100", Some(&known)), None);
    }

    #[test]
    fn prefixes_and_abbreviations_resolve_before_the_check() {
        // Issue 31: both got through the old check.
        assert_eq!(
            guard("enable-skip-grant-tables", ""),
            Some(Refusal::Reserved("skip-grant-tables".into()))
        );
        assert_eq!(
            guard("loose-bind-addr", "1.2.3.4"),
            Some(Refusal::Reserved("bind-address".into()))
        );
        for k in [
            "wsrep_on",
            "wsrep-provider",
            "loose-wsrep_notify_cmd",
            "bind_address",
            "LOOSE-BIND-ADDRESS",
            "loose-skip-grant-tables",
            "disable-grant-tables",
            "maximum-port",
            "autoset-user",
            "sock",
        ] {
            assert!(
                matches!(guard(k, "x"), Some(Refusal::Reserved(_))),
                "{k}: {:?}",
                guard(k, "x")
            );
        }
    }

    #[test]
    fn paths_and_code_are_unsafe_but_turning_them_off_is_not() {
        for k in [
            "secure_file_priv",
            "init_file",
            "loose-init-file",
            "log_error",
            "general_log_file",
            "slow-query-log-file",
            "plugin_load_add",
            "plugin-load",
            "log-bin",
            "innodb_data_home_dir",
            "innodb_undo_directory",
            "innodb-buffer-pool-filename",
            "aria_log_dir_path",
            "innodb_tmpdir",
            "slave_load_tmpdir",
            "rocksdb_tmpdir",
            "ssl_key",
            "ssl-ca",
            "log_ddl_recovery",
            "log-isam",
        ] {
            assert!(
                matches!(guard(k, "/etc/x"), Some(Refusal::Unsafe(_))),
                "{k}: {:?}",
                guard(k, "/etc/x")
            );
        }
        assert_eq!(
            guard(
                "rocksdb_default_cf_options",
                "write_buffer_size=1m;cf_paths=/x"
            ),
            Some(Refusal::Unsafe("cf-paths".into()))
        );
        for k in [
            "skip-log-bin",
            "innodb_buffer_pool_size",
            "innodb_log_file_size",
            "innodb-file-per-table",
            "log-bin-trust-function-creators",
            "sync_binlog",
            "max_connections",
        ] {
            assert_eq!(guard(k, "1"), None, "{k}");
        }
    }
}
