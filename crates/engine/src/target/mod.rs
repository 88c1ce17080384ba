//! External targets: a MariaDB, MySQL or PostgreSQL server ampbench did
//! not start, reached by `--target URL` (see [`url`]). The server side of
//! the pipeline is then Local (`engine::server`, a server ampbench starts
//! and stops) or External (here): the same SQL face, workloads and
//! figures, but no process, data directory or device of the server is on
//! this host, so efficiency per operation comes from the server's own
//! counters (`probe::server`).
//!
//! Someone else's server is treated with care:
//! - ampbench works in a database it creates (`ampbench_` and 12 random
//!   hex digits) and drops at the end (unless `--keep`), or in the one
//!   `--target-db` names;
//! - it never drops what it did not create: a named database must hold
//!   no table, or with `--target-db-owned` only tables of ampbench's
//!   workloads, which it then drops; any other table stops the run;
//! - it sets nothing server-wide (durability stays the server's, and is
//!   recorded).

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};

pub mod mysql;
pub mod postgres;
pub use crate::address::tls;
pub use ampbench_address as url;

pub use url::{Endpoint, Protocol, Target, Tls};

/// The environment variable a target's password may come from.
pub const PASSWORD_ENV: &str = "AMPBENCH_TARGET_PASSWORD";

/// How long a connection to a target may take to open.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The engine setting that names the target's database a run works in.
pub const DATABASE_SETTING: &str = "database";

/// Everything an engine needs to reach a target.
#[derive(Clone, Debug)]
pub struct TargetSpec {
    /// The target, its password resolved.
    pub target: Target,
    /// `--target-db`: work in this database rather than one of ampbench's.
    pub db: Option<String>,
    /// `--target-db-owned`: the named database's workload tables may be
    /// dropped.
    pub db_owned: bool,
    /// `--keep`: leave the database (or tables) on the server.
    pub keep: bool,
    /// One of several clients joining the database `db` that client 0
    /// made (`--clients`): its tables are used as they are, and nothing
    /// is dropped.
    pub joined: bool,
    /// A run of several clients: the first hex digits of the database
    /// name client 0 makes ([`run_tag`]).
    pub run_tag: Option<String>,
}

impl serde::Serialize for TargetSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("url", &self.target.shown())?;
        m.serialize_entry("db", &self.db)?;
        m.serialize_entry("db_owned", &self.db_owned)?;
        m.end()
    }
}

/// Fills in a target's password from `file` (its first line; the file
/// must be readable by its owner only) or, failing that, from
/// [`PASSWORD_ENV`]. A password in the URL and a file is an error.
pub fn resolve_password(t: &mut Target, file: Option<&Path>) -> Result<(), crate::UsageError> {
    use crate::UsageError;
    if let Some(f) = file {
        if t.password.is_some() {
            return Err(UsageError(
                "--target-password-file: the URL has a password already; give one or the other"
                    .into(),
            ));
        }
        use std::io::Read;
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let named = |e: &dyn std::fmt::Display| {
            UsageError(format!("--target-password-file {}: {e}", f.display()))
        };
        // Opened once, never through a link, never blocking on a FIFO;
        // what is checked is the file that is read.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(f)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP) => named(&"a symbolic link; give the file itself"),
                _ => named(&e),
            })?;
        let meta = file.metadata().map_err(|e| named(&e))?;
        if !meta.is_file() {
            return Err(named(&"not a regular file"));
        }
        if meta.mode() & 0o077 != 0 {
            return Err(named(&format!(
                "readable by others (mode {:o}); chmod 600 it",
                meta.mode() & 0o777
            )));
        }
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if meta.uid() != me {
            return Err(named(&format!(
                "owned by uid {}, not by this user (uid {me})",
                meta.uid()
            )));
        }
        let mut text = String::new();
        file.take(4096)
            .read_to_string(&mut text)
            .map_err(|e| named(&e))?;
        t.password = Some(text.lines().next().unwrap_or_default().to_string());
    } else if t.password.is_none() {
        if let Ok(p) = std::env::var(PASSWORD_ENV) {
            t.password = Some(p);
        }
    }
    Ok(())
}

/// Checks a database name given by `--target-db` or the URL: letters,
/// digits, `_` and `$` (nothing to quote, on either server).
pub fn check_db_name(name: &str) -> Result<(), crate::UsageError> {
    if name.is_empty()
        || name.len() > 63
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
    {
        return Err(crate::UsageError(format!(
            "--target-db '{name}': 1-63 ASCII letters, digits, '_' or '$'"
        )));
    }
    Ok(())
}

/// The first six hex digits of the databases a run of several clients
/// makes: from the run's id and name in the results store, so a note
/// copied from another run's barrier names a database no client of this
/// run takes.
pub fn run_tag(run: i64, name: &str) -> String {
    use sha2::Digest;
    let h = sha2::Sha256::digest(format!("ampbench run {run} {name}").as_bytes());
    h[..3].iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks the database name a joining client read from client 0's note
/// in the results store (`--clients`): the store is shared, so the note
/// is not trusted more than a flag would be. It must be the database
/// this client's own plan names (`--target-db`), or else one ampbench
/// makes for this run ([`fresh_db_name`] with the run's `tag`), and a
/// valid name besides.
pub fn check_joined_db(
    note: &str,
    named: Option<&str>,
    tag: &str,
) -> Result<(), crate::UsageError> {
    check_db_name(note)?;
    let ok = match named {
        Some(n) => note == n,
        None => note.strip_prefix("ampbench_").is_some_and(|h| {
            h.len() == 12
                && h.starts_with(tag)
                && h.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        }),
    };
    if ok {
        Ok(())
    } else {
        Err(crate::UsageError(format!(
            "client 0's note in the results store names database '{note}', not {}: refused (the store's notes are not trusted)",
            named.map_or_else(
                || format!("one ampbench makes for this run (ampbench_{tag} and 6 hex digits)"),
                |n| format!("--target-db {n}")
            )
        )))
    }
}

/// Logs in to the target's every endpoint once, before a run records
/// anything: its failure is bad input (a wrong password, an unreachable
/// host, a refused TLS handshake), one line naming the URL.
pub fn preflight(spec: &TargetSpec) -> Result<(), crate::UsageError> {
    let r = match spec.target.protocol {
        Protocol::MySql => mysql::preflight(spec),
        Protocol::Postgres => postgres::preflight(spec),
    };
    r.map_err(|e| crate::UsageError(format!("--target {e:#}")))
}

/// Waits up to 5 s for `others()` (the other sessions in the database
/// about to be dropped) to reach none: a client's connections end a
/// moment after it closes them. Returns how many are left, and the
/// refusal to give when some are.
pub fn wait_alone(db: &str, shown: &str, mut others: impl FnMut() -> Result<u64>) -> Result<()> {
    let t0 = std::time::Instant::now();
    loop {
        let n = others()?;
        if n == 0 {
            return Ok(());
        }
        if t0.elapsed() > Duration::from_secs(5) {
            bail!(
                "database {db} kept on {shown}: {n} other session{} still use it (another client of the run?); remove it with DROP DATABASE {db} once they are done",
                if n == 1 { "" } else { "s" }
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A fresh database name: `ampbench_` and 12 hex digits, random but for
/// the first six of a run of several clients, its [`run_tag`].
pub fn fresh_db_name(tag: Option<&str>) -> Result<String> {
    let random = crate::server::random_password()?;
    Ok(match tag {
        Some(t) => format!("ampbench_{t}{}", &random[..12 - t.len().min(12)]),
        None => format!("ampbench_{}", &random[..12]),
    })
}

/// True for a table one of ampbench's workloads creates: LinkBench's
/// (with PostgreSQL's partitions), the insert benchmark's `piN`, and
/// the key-value workloads' `docs` and `usertable`, or one of `extra`
/// (the open spec's tables).
pub fn is_workload_table(name: &str, extra: &[String]) -> bool {
    // Exact case: ampbench makes only lower-case names, and MySQL's table
    // names may be case-sensitive (someone's `Docs` is not ours).
    let n = name;
    let digits_after = |p: &str| {
        n.strip_prefix(p)
            .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
    };
    matches!(
        n,
        "linktable" | "counttable" | "nodetable" | "docs" | "usertable"
    ) || digits_after("linktable_p")
        || digits_after("pi")
        || extra.iter().any(|e| e == n)
}

/// What to do with the tables found in a database ampbench is to work
/// in: Ok(tables to drop first) or the one-line refusal.
pub fn judge_tables(
    db: &str,
    found: &[String],
    owned: bool,
    extra: &[String],
) -> Result<Vec<String>> {
    let foreign: Vec<&String> = found
        .iter()
        .filter(|t| !is_workload_table(t, extra))
        .collect();
    if !foreign.is_empty() {
        bail!(
            "database {db} holds {} table{} ampbench does not know ({}): it works only in a database of its own",
            foreign.len(),
            if foreign.len() == 1 { "" } else { "s" },
            foreign
                .iter()
                .take(5)
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !found.is_empty() && !owned {
        bail!(
            "database {db} holds workload tables from before ({}): pass --target-db-owned to let ampbench drop them",
            found.join(", ")
        );
    }
    Ok(found.to_vec())
}

/// Where a run works on a target, and what it may remove at the end:
/// the database it created, or in a named database exactly the workload
/// tables that existed once the workload's schema was made (a table of
/// that name someone else makes later is not touched).
pub struct Place {
    /// The database.
    pub db: String,
    /// ampbench created it: it is dropped at the end.
    pub created: bool,
    /// The open spec's tables (workload names beside the built-in ones).
    tables: Vec<String>,
    /// The workload tables found right after the schema was made.
    made: std::sync::Mutex<Vec<String>>,
}

impl Place {
    /// A place in `db`; `tables` are the open spec's.
    pub fn new(db: String, created: bool, tables: Vec<String>) -> Place {
        Place {
            db,
            created,
            tables,
            made: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Takes note of the tables present once the schema is made: its
    /// workload tables are this run's.
    pub fn schema_made(&self, found: Vec<String>) {
        let mine: Vec<String> = found
            .into_iter()
            .filter(|t| is_workload_table(t, &self.tables))
            .collect();
        if let Ok(mut m) = self.made.lock() {
            *m = mine;
        }
    }

    /// Of the tables `found` now in a named database, those this run made
    /// (names checked by [`is_workload_table`]: letters, digits, `_`).
    pub fn to_drop(&self, found: &[String]) -> Vec<String> {
        let made = self.made.lock().map(|m| m.clone()).unwrap_or_default();
        found.iter().filter(|t| made.contains(t)).cloned().collect()
    }

    /// What a close that keeps everything leaves on `shown`: the
    /// database, or this run's tables in the named one, and the
    /// statement (`drop`) that removes it.
    pub fn left(&self, shown: &str, drop: &str) -> String {
        if self.created {
            format!(
                "database {} kept on {shown} (remove it with {drop} {})",
                self.db, self.db
            )
        } else {
            let made = self.made.lock().map(|m| m.join(", ")).unwrap_or_default();
            format!("tables {made} kept in database {} on {shown}", self.db)
        }
    }

    /// Judges the tables found in a named database at open (see
    /// [`judge_tables`]).
    pub fn judge(&self, found: &[String], owned: bool) -> Result<Vec<String>> {
        judge_tables(&self.db, found, owned, &self.tables)
    }

    /// Judges the tables a joining client finds in client 0's database:
    /// only ampbench's workload tables (client 0 made them), nothing to
    /// drop.
    pub fn judge_joined(&self, found: &[String]) -> Result<()> {
        judge_tables(&self.db, found, true, &self.tables).map(|_| ())
    }
}

/// A target's endpoints, resolved once, handed to connections in turn.
pub struct Endpoints {
    addrs: Vec<(Endpoint, SocketAddr)>,
    next: AtomicUsize,
}

impl Endpoints {
    /// Resolves every endpoint; an unknown host is a one-line error.
    pub fn resolve(t: &Target) -> Result<Endpoints> {
        let mut addrs = Vec::new();
        for e in &t.endpoints {
            let a = (e.host.as_str(), e.port)
                .to_socket_addrs()
                .with_context(|| format!("--target: cannot resolve host '{}'", e.host))?
                .next()
                .ok_or_else(|| anyhow!("--target: host '{}' has no address", e.host))?;
            addrs.push((e.clone(), a));
        }
        Ok(Endpoints {
            addrs,
            next: AtomicUsize::new(0),
        })
    }

    /// The next endpoint, round-robin (as go-tpc hands out connections).
    pub fn next(&self) -> &(Endpoint, SocketAddr) {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.addrs.len();
        &self.addrs[i]
    }

    /// The first endpoint (administration and counters).
    pub fn first(&self) -> &(Endpoint, SocketAddr) {
        &self.addrs[0]
    }

    /// Every endpoint.
    pub fn all(&self) -> &[(Endpoint, SocketAddr)] {
        &self.addrs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_tables_are_known_and_others_refused() {
        assert!(is_workload_table("linktable_p3", &[]));
        assert!(is_workload_table("pi12", &[]));
        assert!(!is_workload_table("PI12", &[]), "exact case only");
        assert!(!is_workload_table("pi", &[]));
        assert!(!is_workload_table("orders", &[]));
        assert!(judge_tables("d", &[], false, &[]).unwrap().is_empty());
        let e = judge_tables("d", &["orders".into(), "pi1".into()], true, &[]).unwrap_err();
        assert!(
            e.to_string()
                .contains("1 table ampbench does not know (orders)"),
            "{e}"
        );
        let e = judge_tables("d", &["pi1".into()], false, &[]).unwrap_err();
        assert!(e.to_string().contains("--target-db-owned"), "{e}");
        assert_eq!(
            judge_tables("d", &["pi1".into()], true, &[]).unwrap(),
            vec!["pi1"]
        );
    }

    #[test]
    fn a_place_drops_only_what_its_schema_made() {
        let p = Place::new("scratch".into(), false, vec!["extra1".into()]);
        assert!(p.to_drop(&["pi1".into()]).is_empty(), "nothing made yet");
        p.schema_made(vec!["pi1".into(), "orders".into(), "extra1".into()]);
        let now = [
            "pi1".into(),
            "docs".into(),
            "extra1".into(),
            "orders".into(),
        ];
        assert_eq!(p.to_drop(&now), vec!["pi1", "extra1"]);
    }

    #[test]
    fn password_file_must_be_private() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("pw");
        std::fs::write(&f, "s3cret\nignored\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut t = Target::parse("mysql://u@h/db").unwrap();
        let e = resolve_password(&mut t, Some(&f)).unwrap_err();
        assert!(e.0.contains("readable by others"), "{}", e.0);
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        resolve_password(&mut t, Some(&f)).unwrap();
        assert_eq!(t.password.as_deref(), Some("s3cret"));
        let e = resolve_password(&mut t, Some(&f)).unwrap_err();
        assert!(e.0.contains("has a password already"), "{}", e.0);
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        let mut t = Target::parse("mysql://u@h/db").unwrap();
        let e = resolve_password(&mut t, Some(&link)).unwrap_err();
        assert!(e.0.contains("symbolic link"), "{}", e.0);
        let e = resolve_password(&mut t, Some(d.path())).unwrap_err();
        assert!(
            e.0.contains("not a regular file") || e.0.contains("readable by others"),
            "{}",
            e.0
        );
    }

    #[test]
    fn db_names() {
        assert!(check_db_name("ampbench_x1").is_ok());
        assert!(check_db_name("a;drop").is_err());
        assert!(check_db_name("").is_err());
        let n = fresh_db_name(None).unwrap();
        assert_eq!(n.len(), "ampbench_".len() + 12);
        assert_ne!(n, fresh_db_name(None).unwrap());
        // A run's databases carry its tag: a note from another run, or
        // a name of another form, is refused.
        let tag = run_tag(7, "night");
        let mine = fresh_db_name(Some(&tag)).unwrap();
        assert_eq!(mine.len(), n.len());
        assert!(check_joined_db(&mine, None, &tag).is_ok());
        assert!(check_joined_db(&mine, None, &run_tag(8, "night")).is_err());
        assert!(check_joined_db("shop", None, &tag).is_err());
        assert!(check_joined_db("shop", Some("shop"), &tag).is_ok());
    }
}
