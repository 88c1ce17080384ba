//! `--server-bin DIR`: another build or version of a server, run locally
//! as Debian's is: a MariaDB installation tree (`bin/mariadb-install-db`,
//! `sbin/mariadbd` or `bin/mariadbd`, `share/mysql`, as `make install`
//! and the binary tarballs lay it out) or a PostgreSQL `bin/` directory
//! (`postgres` and `initdb`, their `share/` where they were built to
//! find it). The version is read from the binary and recorded.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::UsageError;

/// The oldest MariaDB the engine's settings and SQL are known to work on.
const MARIADB_MIN: (u32, u32) = (10, 4);
/// The oldest PostgreSQL (pg_stat_wal).
const POSTGRES_MIN: u32 = 14;

/// A server build found under `--server-bin`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "server", rename_all = "lowercase")]
pub enum ServerBin {
    /// A MariaDB installation tree.
    MariaDb {
        /// The tree (`--basedir`).
        base: PathBuf,
        /// Its server binary.
        mariadbd: PathBuf,
        /// Its bootstrap script.
        install_db: PathBuf,
        /// `mariadbd --version`'s version, e.g. `10.11.6-MariaDB-0+deb12u1`.
        version: String,
    },
    /// A PostgreSQL bin directory.
    Postgres {
        /// The directory holding `postgres` and `initdb`.
        bin: PathBuf,
        /// `postgres --version`'s version, e.g. `15.18`.
        version: String,
    },
}

fn first_file(dir: &Path, names: &[&str]) -> Option<PathBuf> {
    names.iter().map(|n| dir.join(n)).find(|p| p.is_file())
}

/// The version word after `Ver` (mariadbd) or the last word (postgres).
fn version_of(bin: &Path, after_ver: bool) -> Result<String, UsageError> {
    let o = Command::new(bin)
        .arg("--version")
        .output()
        .map_err(|e| UsageError(format!("--server-bin: cannot run {}: {e}", bin.display())))?;
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let v = if after_ver {
        text.split_whitespace()
            .skip_while(|w| *w != "Ver")
            .nth(1)
            .map(String::from)
    } else {
        text.split_whitespace().last().map(String::from)
    };
    v.filter(|_| o.status.success()).ok_or_else(|| {
        UsageError(format!(
            "--server-bin: {} --version said no version ({})",
            bin.display(),
            text.trim()
        ))
    })
}

/// Leading numbers of a version (`10.11.6-MariaDB` → [10, 11, 6]).
fn numbers(v: &str) -> Vec<u32> {
    v.split(|c: char| !c.is_ascii_digit())
        .take_while(|s| !s.is_empty())
        .filter_map(|s| s.parse().ok())
        .collect()
}

impl ServerBin {
    /// Finds the server under `dir`: a one-line error when it holds none,
    /// or one ampbench cannot run (MySQL's tree, a version too old).
    pub fn detect(dir: &Path) -> Result<ServerBin, UsageError> {
        let dir = std::fs::canonicalize(dir)
            .map_err(|e| UsageError(format!("--server-bin {}: {e}", dir.display())))?;
        if let Some(postgres) = first_file(&dir, &["postgres", "bin/postgres"]) {
            let bin = postgres.parent().map(Path::to_path_buf).unwrap_or_default();
            if !bin.join("initdb").is_file() {
                return Err(UsageError(format!(
                    "--server-bin {}: postgres without initdb beside it",
                    dir.display()
                )));
            }
            let version = version_of(&postgres, false)?;
            if numbers(&version).first().copied().unwrap_or(0) < POSTGRES_MIN {
                return Err(UsageError(format!(
                    "--server-bin {}: PostgreSQL {version} is too old (ampbench needs {POSTGRES_MIN} or newer)",
                    dir.display()
                )));
            }
            return Ok(ServerBin::Postgres { bin, version });
        }
        if let Some(mariadbd) =
            first_file(&dir, &["sbin/mariadbd", "bin/mariadbd", "libexec/mariadbd"])
        {
            let install_db = first_file(
                &dir,
                &["bin/mariadb-install-db", "scripts/mariadb-install-db"],
            )
            .ok_or_else(|| {
                UsageError(format!(
                    "--server-bin {}: mariadbd without bin/mariadb-install-db",
                    dir.display()
                ))
            })?;
            let version = version_of(&mariadbd, true)?;
            let n = numbers(&version);
            let (major, minor) = (
                n.first().copied().unwrap_or(0),
                n.get(1).copied().unwrap_or(0),
            );
            if (major, minor) < MARIADB_MIN {
                return Err(UsageError(format!(
                    "--server-bin {}: MariaDB {version} is too old (ampbench needs {}.{} or newer)",
                    dir.display(),
                    MARIADB_MIN.0,
                    MARIADB_MIN.1
                )));
            }
            return Ok(ServerBin::MariaDb {
                base: dir,
                mariadbd,
                install_db,
                version,
            });
        }
        if first_file(&dir, &["sbin/mysqld", "bin/mysqld"]).is_some() {
            return Err(UsageError(format!(
                "--server-bin {}: a MySQL tree (mysqld without mariadbd): not supported yet; reach a running MySQL with --target",
                dir.display()
            )));
        }
        Err(UsageError(format!(
            "--server-bin {}: no server in it (looked for postgres, bin/postgres, sbin/mariadbd, bin/mariadbd)",
            dir.display()
        )))
    }

    /// The engines this build runs.
    pub fn serves(&self, engine: &str) -> bool {
        match self {
            ServerBin::MariaDb { .. } => engine.starts_with("mariadb"),
            ServerBin::Postgres { .. } => engine == "postgres",
        }
    }

    /// The version as the run records it.
    pub fn version(&self) -> String {
        match self {
            ServerBin::MariaDb { version, base, .. } => {
                format!("MariaDB {version} (--server-bin {})", base.display())
            }
            ServerBin::Postgres { version, bin } => {
                format!("PostgreSQL {version} (--server-bin {})", bin.display())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_as_numbers() {
        assert_eq!(numbers("10.11.6-MariaDB-0+deb12u1"), vec![10, 11, 6]);
        assert_eq!(numbers("15.18"), vec![15, 18]);
        assert_eq!(numbers("x"), Vec::<u32>::new());
    }

    #[test]
    fn a_directory_without_a_server_is_one_line() {
        let d = tempfile::tempdir().unwrap();
        let e = ServerBin::detect(d.path()).unwrap_err().0;
        assert!(e.contains("no server in it"), "{e}");
        let e = ServerBin::detect(&d.path().join("missing")).unwrap_err().0;
        assert!(e.starts_with("--server-bin "), "{e}");
    }
}
