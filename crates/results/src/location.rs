//! Where the results store is: a SQLite file, or a PostgreSQL database
//! by URL (`--results postgres://user@host/db`).

use std::fmt;
use std::path::PathBuf;

use crate::address::{Protocol, Target};

/// The environment variable a PostgreSQL results store's password may
/// come from, so it need not sit on the command line.
pub const PASSWORD_ENV: &str = "AMPBENCH_RESULTS_PASSWORD";

/// A results store's location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file.
    File(PathBuf),
    /// A PostgreSQL database (its password, if any, never shown).
    Postgres(Target),
}

impl Location {
    /// `postgres://…` or `postgresql://…` is a PostgreSQL store (libpq's
    /// URL forms, `sslmode`, the password from the URL or
    /// [`PASSWORD_ENV`]); anything else is a file path.
    pub fn parse(s: &str) -> Result<Location, crate::UsageError> {
        let lower = s.to_ascii_lowercase();
        if !(lower.starts_with("postgres://") || lower.starts_with("postgresql://")) {
            if lower.contains("://") {
                return Err(crate::UsageError(format!(
                    "--results '{}': a results store is a file path or a postgres:// URL",
                    Target::redact(s)
                )));
            }
            return Ok(Location::File(PathBuf::from(s)));
        }
        let mut t = Target::parse(s)
            .map_err(|e| crate::UsageError(e.0.replacen("--target", "--results", 1)))?;
        if t.protocol != Protocol::Postgres {
            return Err(crate::UsageError(format!(
                "--results '{}': the results store is PostgreSQL",
                Target::redact(s)
            )));
        }
        if t.password.is_none() {
            t.password = std::env::var(PASSWORD_ENV).ok().filter(|p| !p.is_empty());
        }
        Ok(Location::Postgres(t))
    }

    /// True for a PostgreSQL store.
    pub fn is_postgres(&self) -> bool {
        matches!(self, Location::Postgres(_))
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(p) => write!(f, "{}", p.display()),
            Location::Postgres(t) => f.write_str(&t.shown()),
        }
    }
}

impl serde::Serialize for Location {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl From<PathBuf> for Location {
    fn from(p: PathBuf) -> Location {
        Location::File(p)
    }
}

impl From<&std::path::Path> for Location {
    fn from(p: &std::path::Path) -> Location {
        Location::File(p.to_path_buf())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_urls() {
        assert_eq!(
            Location::parse("r.db").unwrap(),
            Location::File("r.db".into())
        );
        let l =
            Location::parse("postgres://bench:pw@10.0.0.2:5433/results?sslmode=require").unwrap();
        assert!(l.is_postgres());
        assert!(!l.to_string().contains("pw"), "{l}");
        assert!(l.to_string().contains("10.0.0.2:5433/results"), "{l}");
        let e = Location::parse("mysql://u:secret@h/db").unwrap_err().0;
        assert!(e.contains("--results") && !e.contains("secret"), "{e}");
        assert!(Location::parse("http://x/y").is_err());
    }
}
