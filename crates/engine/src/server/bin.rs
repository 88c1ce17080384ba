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

/// The version word after `Ver` (mariadbd) or the last word (postgres),
/// from `bin --version` run as the server's system user `user` where it
/// exists: root runs nothing of another build.
fn version_of(bin: &Path, after_ver: bool, user: &str) -> Result<String, UsageError> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(bin);
    cmd.arg("--version")
        .env_clear()
        .env("PATH", super::SERVER_PATH);
    if let Ok((uid, gid)) = super::user_ids(user) {
        cmd.uid(uid).gid(gid);
    }
    let o = cmd
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

/// Why root must not run what is at `p` (lstat, no link followed): not
/// root's, or writable by group or others. A root-owned directory that
/// others may write but whose sticky bit keeps them from renaming or
/// removing what is not theirs (`/tmp`) passes as a parent.
fn not_roots(p: &Path, parent: bool) -> Option<String> {
    not_roots_or(p, parent, None)
}

/// [`not_roots`], an entry of the tree itself also passing when it is the
/// server user's (`server`, uid): Debian's own plugin directory holds
/// `auth_pam_tool_dir`, mysql's. That user runs the tree's programs
/// anyway (the server, its bootstrap, `--version`), so what it can
/// change gives it nothing it does not have.
fn not_roots_or(p: &Path, parent: bool, server: Option<u32>) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = match std::fs::symlink_metadata(p) {
        Ok(m) => m,
        Err(e) => return Some(format!("{}: {e}", p.display())),
    };
    let mode = m.mode() & 0o7777;
    if m.uid() != 0 && (parent || server != Some(m.uid())) {
        return Some(format!(
            "{} is owned by uid {}, not root",
            p.display(),
            m.uid()
        ));
    }
    if m.file_type().is_symlink() {
        return None;
    }
    let sticky_dir = m.is_dir() && mode & 0o1000 != 0;
    if mode & 0o022 != 0 && !(parent && sticky_dir) {
        return Some(format!(
            "{} is writable by {} (mode {mode:o})",
            p.display(),
            if mode & 0o020 != 0 {
                "its group"
            } else {
                "others"
            }
        ));
    }
    None
}

/// Refuses a tree root would run programs from when anyone but root
/// could change what runs: the tree, every directory above it, and
/// everything below it must be root's and writable by root only. A
/// symbolic link is followed one step at a time, each step's directory
/// and its parents checked (a link in a directory someone else can write
/// could be pointed elsewhere later), and what it leads to checked as
/// the tree is (a directory walked); a link that leads nowhere is
/// refused (it could be made to lead anywhere). With those checks the
/// path, resolved once, names the same files when they run.
fn check_owner(dir: &Path, server: Option<u32>) -> Result<(), String> {
    let parents = |p: &Path| -> Result<(), String> {
        for a in p.ancestors().skip(1) {
            if let Some(why) = not_roots(a, true) {
                return Err(why);
            }
        }
        Ok(())
    };
    parents(dir)?;
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        if !seen.insert(p.clone()) || seen.len() > 200_000 {
            continue;
        }
        if let Some(why) = not_roots_or(&p, false, server) {
            return Err(why);
        }
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            return Err(format!("{} vanished while it was checked", p.display()));
        };
        if m.file_type().is_symlink() {
            // One step: the link's target, from the link's directory.
            let t = std::fs::read_link(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            let t = match p.parent() {
                Some(d) if t.is_relative() => d.join(t),
                _ => t,
            };
            if std::fs::symlink_metadata(&t).is_err() {
                return Err(format!(
                    "{} is a link to {}, which does not exist",
                    p.display(),
                    t.display()
                ));
            }
            // The directories the step goes through, resolved.
            let at = t
                .parent()
                .and_then(|d| std::fs::canonicalize(d).ok())
                .ok_or_else(|| format!("{}: cannot resolve {}", p.display(), t.display()))?;
            if !at.starts_with(dir) {
                if let Some(why) = not_roots(&at, true) {
                    return Err(format!("{why} (through {})", p.display()));
                }
                parents(&at).map_err(|why| format!("{why} (through {})", p.display()))?;
            }
            stack.push(at.join(t.file_name().unwrap_or_default()));
        } else if m.is_dir() {
            let rd = std::fs::read_dir(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            stack.extend(rd.flatten().map(|e| e.path()));
        }
    }
    Ok(())
}

impl ServerBin {
    /// Finds the server under `dir`: a one-line error when it holds none,
    /// or one ampbench cannot run (MySQL's tree, a version too old), or
    /// (run as root) a tree anyone but root could change, since root runs
    /// its programs (`--version`, `mariadb-install-db`).
    // Long: the checks of a server tree root will run, in order (ownership of
    // every directory up, the binaries, their versions).
    pub fn detect(dir: &Path) -> Result<ServerBin, UsageError> {
        let dir = std::fs::canonicalize(dir)
            .map_err(|e| UsageError(format!("--server-bin {}: {e}", dir.display())))?;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            // A PostgreSQL bin/ runs its installation's lib/ and share/
            // too: the installation is checked.
            let tree = match dir.parent() {
                Some(p) if dir.file_name().is_some_and(|n| n == "bin") => p,
                _ => &dir,
            };
            // The user the tree's programs run as.
            let user = if first_file(&dir, &["postgres", "bin/postgres"]).is_some() {
                "postgres"
            } else {
                "mysql"
            };
            let server = super::user_ids(user).ok().map(|(uid, _)| uid);
            check_owner(tree, server).map_err(|why| {
                UsageError(format!(
                    "--server-bin {}: {why}; ampbench, running as root, starts this tree's programs, so the directories above it must be root's, and the tree root's (or the server user's), all writable by their owner only (chown root, chmod go-w)",
                    dir.display()
                ))
            })?;
        }
        if let Some(postgres) = first_file(&dir, &["postgres", "bin/postgres"]) {
            let bin = postgres.parent().map(Path::to_path_buf).unwrap_or_default();
            if !bin.join("initdb").is_file() {
                return Err(UsageError(format!(
                    "--server-bin {}: postgres without initdb beside it",
                    dir.display()
                )));
            }
            let version = version_of(&postgres, false, "postgres")?;
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
            let version = version_of(&mariadbd, true, "mysql")?;
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
    pub fn serves(&self, engine: crate::EngineKind) -> bool {
        engine.speaks()
            == Some(match self {
                ServerBin::MariaDb { .. } => crate::address::Protocol::MySql,
                ServerBin::Postgres { .. } => crate::address::Protocol::Postgres,
            })
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

    /// Issue 47: a tree others could change is refused before anything
    /// of it runs, naming the file and why.
    #[test]
    fn a_tree_others_can_change_is_refused_as_root() {
        use std::os::unix::fs::PermissionsExt;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            crate::testing::skip("a_tree_others_can_change_is_refused_as_root", "needs root");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        // A fake server: the check comes before it would run.
        let postgres = bin.join("postgres");
        // The tree's programs run as the server's user: the mark is made
        // where it may write.
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let marks = tempfile::tempdir().unwrap();
        std::fs::set_permissions(marks.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let ran = marks.path().join("ran");
        std::fs::write(
            &postgres,
            format!(
                "#!/bin/sh\ntouch {}\necho 'postgres (PostgreSQL) 15.1'\n",
                ran.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&postgres, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::copy(&postgres, bin.join("initdb")).unwrap();
        assert!(ServerBin::detect(&bin).is_ok());
        assert!(ran.exists());
        std::fs::remove_file(&ran).unwrap();
        let refused = |what: &str| {
            let e = ServerBin::detect(&bin).unwrap_err().0;
            assert!(e.contains(what) && e.contains("root's"), "{e}");
            assert!(!ran.exists(), "the tree's program ran: {e}");
        };
        // Group-writable: the tree's directory, then a program in it.
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o775)).unwrap();
        refused("writable by its group");
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&postgres, std::fs::Permissions::from_mode(0o757)).unwrap();
        refused("writable by others");
        std::fs::set_permissions(&postgres, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Another user's file, or a parent directory of another user's.
        std::os::unix::fs::chown(&postgres, Some(65534), None).unwrap();
        refused("not root");
        std::os::unix::fs::chown(&postgres, Some(0), None).unwrap();
        std::os::unix::fs::chown(d.path(), Some(65534), None).unwrap();
        refused("not root");
        std::os::unix::fs::chown(d.path(), Some(0), None).unwrap();
        // A link to a program another user may change.
        let elsewhere = tempfile::tempdir().unwrap();
        let theirs = elsewhere.path().join("initdb");
        std::fs::copy(&postgres, &theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
        std::fs::remove_file(bin.join("initdb")).unwrap();
        std::os::unix::fs::symlink(&theirs, bin.join("initdb")).unwrap();
        refused("initdb is owned by uid 65534");
        // A link that leads nowhere (yet), and a linked directory holding
        // another user's program.
        std::fs::remove_file(bin.join("initdb")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path().join("later"), bin.join("initdb")).unwrap();
        refused("does not exist");
        std::fs::remove_file(bin.join("initdb")).unwrap();
        std::fs::copy(&postgres, bin.join("initdb")).unwrap();
        let shared = elsewhere.path().join("lib");
        std::fs::create_dir(&shared).unwrap();
        std::fs::copy(&postgres, shared.join("plugin")).unwrap();
        std::os::unix::fs::chown(shared.join("plugin"), Some(65534), None).unwrap();
        std::os::unix::fs::symlink(&shared, d.path().join("lib")).unwrap();
        refused("not root");
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
