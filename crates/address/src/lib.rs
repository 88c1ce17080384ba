//! How a server ampbench did not start is named and reached, for the
//! engines (`--target`) and the results store (`--results postgres://`)
//! alike: URLs, TLS ([`tls`]), a PostgreSQL connection ([`pg`]).
//!
//! The URLs: `mysql://` (also `mariadb://`) and `postgres://`
//! (also `postgresql://`), in the forms their ecosystems use, with one or
//! more hosts (`host1:port,host2:port`, as libpq takes them) and a list
//! of URLs separated by commas. Parsed into [`Target`]; every error is
//! one line that names the part that is wrong.

#![warn(missing_docs)]

// The core crate's modules, under the names the code has always used
// (`crate::UsageError` is ampbench-core's `UsageError`).
use ampbench_core::{UsageError, units};

pub mod pg;
pub mod pgstream;
pub mod tls;

use std::fmt;

/// The wire protocol a target speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// MariaDB's and MySQL's.
    MySql,
    /// PostgreSQL's.
    Postgres,
}

impl Protocol {
    /// The port a URL without one means.
    pub fn default_port(self) -> u16 {
        match self {
            Protocol::MySql => 3306,
            Protocol::Postgres => 5432,
        }
    }
    /// The scheme written in reports.
    pub fn scheme(self) -> &'static str {
        match self {
            Protocol::MySql => "mysql",
            Protocol::Postgres => "postgres",
        }
    }
}

/// Whether and how the connection is encrypted, from the URL's `tls=`
/// (MySQL) or `sslmode=` (PostgreSQL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tls {
    /// Never (`tls=false`, `sslmode=disable`): the default, said in the
    /// run's output.
    Off,
    /// Encrypted and the server's certificate verified against the
    /// system's roots or `tlsca=`/`sslrootcert=` (`tls=true`,
    /// `sslmode=verify-full`; `verify-ca` checks the chain only).
    Verify {
        /// Check that the certificate names the host.
        host: bool,
    },
    /// Encrypted, the certificate not checked (`tls=skip-verify`,
    /// `sslmode=require`), as those modes mean in their own clients.
    Unverified,
}

/// One server of a target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The host name or address as written (brackets removed).
    pub host: String,
    /// The port.
    pub port: u16,
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// A server ampbench did not start, reached by address.
#[derive(Clone, PartialEq, Eq)]
pub struct Target {
    /// Its protocol.
    pub protocol: Protocol,
    /// Its servers; connections go to them in turn.
    pub endpoints: Vec<Endpoint>,
    /// The user to log in as.
    pub user: String,
    /// The password (from the URL, `--target-password-file` or
    /// `AMPBENCH_TARGET_PASSWORD`); never printed or recorded.
    pub password: Option<String>,
    /// The database the URL names, if any (`--target-db` overrides it).
    pub db: Option<String>,
    /// Encryption.
    pub tls: Tls,
    /// A CA file for the server's certificate (`tlsca=`, `sslrootcert=`).
    pub ca: Option<String>,
    /// The storage engine of the tables (`engine=innodb|rocksdb`, MySQL
    /// only), if given.
    pub engine: Option<String>,
    /// MySQL: without TLS, `caching_sha2_password`'s full authentication
    /// may ask the server for its RSA key (`get-server-public-key=true`;
    /// nothing authenticates that key).
    pub public_key_request: bool,
    /// PostgreSQL: the authentication methods the server may ask for
    /// (libpq's `require_auth`); None for the default, everything but
    /// the password in clear text outside TLS with a verified server.
    pub require_auth: Option<pgstream::Allowed>,
    /// PostgreSQL: how long a due reply may take with nothing moving
    /// before the connection is ended (`--server-timeout` for a target,
    /// `--store-timeout` for the results store); None for
    /// [`pg::REPLY_TIMEOUT`].
    pub timeout: Option<std::time::Duration>,
    /// MySQL: the longest packet and the most bytes of rows of one result
    /// taken from the server (`max-packet=`, `max-result=`); None for
    /// the client's defaults.
    pub max_packet: Option<u64>,
    /// See [`Target::max_packet`].
    pub max_result: Option<u64>,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown())
    }
}

impl Target {
    /// The target as reports show it: its URL without the password.
    pub fn shown(&self) -> String {
        let hosts: Vec<String> = self.endpoints.iter().map(|e| e.to_string()).collect();
        let mut s = format!(
            "{}://{}@{}",
            self.protocol.scheme(),
            self.user,
            hosts.join(",")
        );
        if let Some(d) = &self.db {
            s.push('/');
            s.push_str(d);
        }
        let mut q = Vec::new();
        match (self.protocol, self.tls) {
            (_, Tls::Off) => {}
            (Protocol::MySql, Tls::Verify { .. }) => q.push("tls=true".to_string()),
            (Protocol::MySql, Tls::Unverified) => q.push("tls=skip-verify".into()),
            (Protocol::Postgres, Tls::Verify { host: true }) => {
                q.push("sslmode=verify-full".into())
            }
            (Protocol::Postgres, Tls::Verify { host: false }) => q.push("sslmode=verify-ca".into()),
            (Protocol::Postgres, Tls::Unverified) => q.push("sslmode=require".into()),
        }
        if let Some(e) = &self.engine {
            q.push(format!("engine={e}"));
        }
        if let Some(a) = self.require_auth {
            q.push(format!("require_auth={}", a.names()));
        }
        if !q.is_empty() {
            s.push('?');
            s.push_str(&q.join("&"));
        }
        s
    }
}

impl serde::Serialize for Target {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.shown())
    }
}

fn bad(what: String) -> UsageError {
    UsageError(format!("--target: {what}"))
}

/// Splits `--target`'s value into its URLs: a comma starts a new URL only
/// where a scheme follows it (inside one URL, commas separate hosts).
fn split_urls(s: &str) -> Vec<&str> {
    let mut cuts = vec![0];
    for (i, _) in s.match_indices(',') {
        let rest = &s[i + 1..];
        if rest.split_once("://").is_some_and(|(scheme, _)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '+')
        }) {
            cuts.push(i + 1);
        }
    }
    cuts.push(s.len() + 1);
    cuts.windows(2).map(|w| s[w[0]..w[1] - 1].trim()).collect()
}

/// Decodes `%XX` escapes (a password or database name with `@`, `/`,
/// `:` or `,` in it).
fn decode(part: &str, s: &str) -> Result<String, UsageError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| bad(format!("{part}: '%' must start an escape like %40")))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad(format!("{part}: the escapes are not UTF-8")))
}

/// Parses one `host[:port]` of a URL's host list (an IPv6 address in
/// brackets).
fn endpoint(h: &str, default_port: u16) -> Result<Endpoint, UsageError> {
    let (host, port) = if let Some(rest) = h.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| bad(format!("host '{h}': an IPv6 address needs its closing ']'")))?;
        match after {
            "" => (host, None),
            a => (
                host,
                Some(
                    a.strip_prefix(':')
                        .ok_or_else(|| bad(format!("host '{h}': expected ':PORT' after ']'")))?,
                ),
            ),
        }
    } else {
        match h.split_once(':') {
            Some((_, p)) if p.contains(':') => {
                return Err(bad(format!(
                    "host '{h}': an IPv6 address goes in brackets ([::1]:3306)"
                )));
            }
            Some((host, port)) => (host, Some(port)),
            None => (h, None),
        }
    };
    if host.is_empty() {
        return Err(bad(format!("host '{h}': no host name")));
    }
    if !host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'))
    {
        return Err(bad(format!("host '{host}': not a host name or address")));
    }
    let port = match port {
        None => default_port,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| bad(format!("port '{p}' of {host}: must be 1 to 65535")))?,
    };
    Ok(Endpoint {
        host: host.to_string(),
        port,
    })
}

/// Parses one URL.
// Long: one URL read left to right (scheme, authority, hosts, path, query),
// each part's error naming it; the parts share the positions cut so far.
fn parse_one(url: &str) -> Result<Target, UsageError> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| bad("not a URL (mysql://… or postgres://…)".into()))?;
    let protocol = match scheme {
        "mysql" | "mariadb" => Protocol::MySql,
        "postgres" | "postgresql" => Protocol::Postgres,
        s => {
            return Err(bad(format!(
                "scheme '{s}': expected mysql, mariadb, postgres or postgresql"
            )));
        }
    };
    // The authority ends at the first '/' or '?': a password with one
    // of those (or '@') in it must be escaped (%2F, %3F, %40).
    let cut = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(cut);
    if tail.contains('@') {
        return Err(bad(
            "an '@' after the host: escape '/', '?' and '@' in the user or password as %2F, %3F, %40"
                .into(),
        ));
    }
    let (auth, hosts) = match authority.rsplit_once('@') {
        Some((a, h)) => (Some(a), h),
        None => (None, authority),
    };
    let (path, query) = match tail.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (tail, None),
    };
    let db = path.strip_prefix('/');
    let (user, password) = match auth {
        None => (None, None),
        Some(a) => match a.split_once(':') {
            Some((u, p)) => (Some(decode("user", u)?), Some(decode("password", p)?)),
            None => (Some(decode("user", a)?), None),
        },
    };
    if hosts.is_empty() {
        return Err(bad(format!("'{}' names no host", Target::redact(url))));
    }
    let endpoints = hosts
        .split(',')
        .map(|h| endpoint(h.trim(), protocol.default_port()))
        .collect::<Result<Vec<_>, _>>()?;
    let db = match db {
        None | Some("") => None,
        Some(d) => Some(decode("database", d)?),
    };
    let mut t = Target {
        protocol,
        endpoints,
        user: user.filter(|u| !u.is_empty()).ok_or_else(|| {
            bad(format!(
                "'{}' names no user (user@host)",
                Target::redact(url)
            ))
        })?,
        password,
        db,
        tls: Tls::Off,
        ca: None,
        engine: None,
        public_key_request: false,
        require_auth: None,
        timeout: None,
        max_packet: None,
        max_result: None,
    };
    for kv in query.unwrap_or("").split('&').filter(|s| !s.is_empty()) {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| bad("a parameter without '=': expected KEY=VALUE".into()))?;
        let v = decode(k, v)?;
        match (protocol, k) {
            (Protocol::MySql, "tls" | "ssl-mode" | "ssl_mode") => {
                t.tls = match v.to_ascii_lowercase().as_str() {
                    "false" | "disabled" | "off" => Tls::Off,
                    "true" | "verify_identity" | "verify-identity" => Tls::Verify { host: true },
                    "verify_ca" | "verify-ca" => Tls::Verify { host: false },
                    "skip-verify" | "required" => Tls::Unverified,
                    _ => {
                        return Err(bad(format!(
                            "{k}={v}: expected true, false, skip-verify, required, verify_ca or verify_identity"
                        )));
                    }
                }
            }
            (Protocol::Postgres, "sslmode") => {
                t.tls = match v.as_str() {
                    "disable" => Tls::Off,
                    "require" => Tls::Unverified,
                    "verify-ca" => Tls::Verify { host: false },
                    "verify-full" => Tls::Verify { host: true },
                    "allow" | "prefer" => {
                        return Err(bad(format!(
                            "sslmode={v}: say disable, require, verify-ca or verify-full (a benchmark does not fall back silently)"
                        )));
                    }
                    _ => {
                        return Err(bad(format!(
                            "sslmode={v}: expected disable, require, verify-ca or verify-full"
                        )));
                    }
                }
            }
            (Protocol::MySql, "tlsca" | "ssl-ca") | (Protocol::Postgres, "sslrootcert") => {
                t.ca = Some(v)
            }
            (Protocol::MySql, "engine") => {
                let e = v.to_ascii_lowercase();
                if e != "innodb" && e != "rocksdb" {
                    return Err(bad(format!("engine={v}: expected innodb or rocksdb")));
                }
                t.engine = Some(e);
            }
            (Protocol::MySql, "max-packet" | "max-result") => {
                let n = crate::units::parse_size(&v)
                    .ok()
                    .filter(|n| *n >= 1024)
                    .ok_or_else(|| bad(format!("{k}={v}: a size of 1KB or more (64MB, 1GB)")))?;
                if k == "max-packet" {
                    t.max_packet = Some(n);
                } else {
                    t.max_result = Some(n);
                }
            }
            (Protocol::MySql, "get-server-public-key" | "allowPublicKeyRetrieval") => {
                t.public_key_request = match v.as_str() {
                    "true" | "1" => true,
                    "false" | "0" => false,
                    _ => return Err(bad(format!("{k}={v}: expected true or false"))),
                }
            }
            (Protocol::Postgres, "require_auth") => {
                t.require_auth = Some(pgstream::Allowed::parse(&v).map_err(bad)?)
            }
            (Protocol::Postgres, "user") => t.user = v,
            (Protocol::Postgres, "dbname") => t.db = Some(v),
            (Protocol::Postgres, "password") | (Protocol::MySql, "password") => {
                t.password = Some(v)
            }
            (_, k) => {
                let known = match protocol {
                    Protocol::MySql => {
                        "tls, tlsca, engine, get-server-public-key, max-packet, max-result"
                    }
                    Protocol::Postgres => "sslmode, sslrootcert, require_auth, user, dbname",
                };
                return Err(bad(format!("unknown parameter '{k}' (known: {known})")));
            }
        }
    }
    if t.ca.is_some() && t.tls == Tls::Off {
        t.tls = Tls::Verify { host: true };
    }
    Ok(t)
}

impl Target {
    /// The authentication methods a connection to this target accepts
    /// (see [`pgstream`]).
    pub fn allowed_auth(&self) -> pgstream::Allowed {
        self.require_auth.unwrap_or_else(|| {
            pgstream::Allowed::default_for(matches!(self.tls, Tls::Verify { .. }))
        })
    }

    /// One line to print before connecting, when the URL lets the
    /// password travel unencrypted (a PostgreSQL URL whose
    /// `require_auth` allows it in clear text without TLS).
    pub fn cleartext_warning(&self, flag: &str) -> Option<String> {
        (self.protocol == Protocol::Postgres
            && self.password.is_some()
            && self.tls != Tls::Verify { host: true }
            && self.tls != Tls::Verify { host: false }
            && self.allowed_auth().has(pgstream::Auth::Password))
        .then(|| {
            format!(
                "note: {flag} {}: require_auth allows the password in clear text without a verified TLS server: if the server asks for it so, it travels readable (sslmode=verify-full keeps it encrypted)",
                self.shown()
            )
        })
    }

    /// Parses `--target`'s value: one URL or several, comma-separated;
    /// every URL must speak the same protocol as the user, password,
    /// database and TLS of the first (their hosts are added to its).
    pub fn parse(s: &str) -> Result<Target, UsageError> {
        let mut urls = split_urls(s.trim()).into_iter();
        let first = urls.next().unwrap_or_default();
        let mut t = parse_one(first)?;
        for u in urls {
            let o = parse_one(u)?;
            if o.protocol != t.protocol
                || o.user != t.user
                || o.password != t.password
                || o.db != t.db
                || o.tls != t.tls
                || o.engine != t.engine
                || o.public_key_request != t.public_key_request
                || o.require_auth != t.require_auth
                || o.max_packet != t.max_packet
                || o.max_result != t.max_result
            {
                return Err(bad(format!(
                    "'{}' differs from '{}' in more than its hosts: one run reaches one database",
                    Target::redact(u),
                    Target::redact(first)
                )));
            }
            t.endpoints.extend(o.endpoints);
        }
        Ok(t)
    }

    /// A URL as it may be printed: everything between the user's name
    /// and the last `@` (the password, escaped or not) replaced by `***`.
    pub fn redact(url: &str) -> String {
        // libpq's `password=` parameter too.
        let redacted = redact_query_password(url);
        let url = redacted.as_str();
        let (scheme, rest) = match url.split_once("://") {
            Some((s, r)) => (format!("{s}://"), r),
            None => (String::new(), url),
        };
        match rest.rsplit_once('@') {
            Some((auth, after)) => match auth.split_once(':') {
                Some((user, _)) => format!("{scheme}{user}:***@{after}"),
                None if scheme.is_empty() => format!("***@{after}"),
                None => url.to_string(),
            },
            None => url.to_string(),
        }
    }

    /// [`Target::redact`] of each URL of a `--target` list.
    pub fn redact_list(s: &str) -> String {
        split_urls(s)
            .into_iter()
            .map(Target::redact)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// `url` with the value of a `password=` query parameter replaced by
/// `***`.
fn redact_query_password(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_string();
    };
    let q: Vec<String> = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
            _ => kv.to_string(),
        })
        .collect();
    format!("{base}?{}", q.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mysql_url_with_everything() {
        let t = Target::parse(
            "mysql://bob:s%40cret@db1:3307,[::1]/shop?tls=skip-verify&engine=RocksDB",
        )
        .unwrap();
        assert_eq!(t.protocol, Protocol::MySql);
        assert_eq!(t.user, "bob");
        assert_eq!(t.password.as_deref(), Some("s@cret"));
        assert_eq!(t.db.as_deref(), Some("shop"));
        assert_eq!(t.tls, Tls::Unverified);
        assert_eq!(t.engine.as_deref(), Some("rocksdb"));
        assert_eq!(
            t.endpoints,
            vec![
                Endpoint {
                    host: "db1".into(),
                    port: 3307
                },
                Endpoint {
                    host: "::1".into(),
                    port: 3306
                },
            ]
        );
        let shown = t.shown();
        assert_eq!(
            shown,
            "mysql://bob@db1:3307,[::1]:3306/shop?tls=skip-verify&engine=rocksdb"
        );
        assert!(!format!("{t:?}").contains("cret"));
        assert!(!serde_json::to_string(&t).unwrap().contains("cret"));
    }

    #[test]
    fn several_postgres_urls_make_one_target() {
        let t = Target::parse(
            "postgres://u:p@10.0.0.1/db?sslmode=verify-full,postgresql://u:p@10.0.0.2:6432/db?sslmode=verify-full",
        )
        .unwrap();
        assert_eq!(t.endpoints.len(), 2);
        assert_eq!(t.endpoints[0].port, 5432);
        assert_eq!(t.endpoints[1].port, 6432);
        assert_eq!(t.tls, Tls::Verify { host: true });
        let e = Target::parse("postgres://u:p@a/db1,postgres://u:p@b/db2").unwrap_err();
        assert!(e.0.contains("more than its hosts"), "{}", e.0);
        assert!(!e.0.contains(":p@"), "{}", e.0);
    }

    #[test]
    fn limits_and_auth_methods_are_read() {
        let t = Target::parse("mysql://u@h/db?max-packet=16MB&max-result=1GB").unwrap();
        assert_eq!(
            (t.max_packet, t.max_result),
            (Some(16 << 20), Some(1 << 30))
        );
        let t = Target::parse("postgres://u@h/db?require_auth=scram-sha-256").unwrap();
        assert!(!t.allowed_auth().has(pgstream::Auth::Md5));
        assert!(
            t.shown().contains("require_auth=scram-sha-256"),
            "{}",
            t.shown()
        );
        // The default: no password in clear text unless TLS verifies the
        // server.
        let plain = Target::parse("postgres://u@h/db").unwrap();
        assert!(!plain.allowed_auth().has(pgstream::Auth::Password));
        let tls = Target::parse("postgres://u@h/db?sslmode=verify-full").unwrap();
        assert!(tls.allowed_auth().has(pgstream::Auth::Password));
    }

    #[test]
    fn typos_are_named() {
        for (url, says) in [
            ("mysq://u@h/db", "scheme 'mysq'"),
            ("mysql://u@h:33o6/db", "port '33o6'"),
            ("mysql://u@h:0/db", "port '0'"),
            (
                "postgres://u@h/db?sslmod=require",
                "unknown parameter 'sslmod'",
            ),
            ("postgres://u@h/db?sslmode=prefer", "sslmode=prefer"),
            ("mysql://u@h/db?tls=maybe", "tls=maybe"),
            ("mysql://u@h/db?max-packet=12", "max-packet=12"),
            ("postgres://u@h/db?require_auth=gss", "gss"),
            ("mysql://h/db", "names no user"),
            ("mysql://u:pw@/db", "names no host"),
            ("localhost:3306", "not a URL"),
            ("mysql://u@h/d%4", "database: '%'"),
            ("mysql://u@ho st/db", "host 'ho st'"),
            ("mysql://u@h/db?engine=myisam", "engine=myisam"),
            ("mysql://u:pw@2001:db8::a:10/db", "in brackets"),
            ("mysql://u:pw@[::1]3306/db", "after ']'"),
            ("mysql://bob:pw?x@db1/shop", "escape"),
            ("mysql://u:pw@prod/db@x", "escape"),
            ("bob:pw@db1", "not a URL"),
        ] {
            let e = Target::parse(url).unwrap_err().0;
            assert!(e.starts_with("--target: "), "{e}");
            assert!(e.contains(says), "{url}: {e}");
            assert!(!e.contains('\n'));
            assert!(!e.contains("pw"), "{e}");
        }
    }

    #[test]
    fn redacts_passwords_only() {
        assert_eq!(Target::redact("mysql://a:b?c@h/d"), "mysql://a:***@h/d");
        assert_eq!(Target::redact("a:b@h"), "a:***@h");
        assert_eq!(
            Target::redact("postgres://u@h/db?sslmode=require&password=s3cret"),
            "postgres://u@h/db?sslmode=require&password=***"
        );
        assert_eq!(
            Target::redact_list("mysql://a:b@h/d,mysql://a:b@g/d"),
            "mysql://a:***@h/d,mysql://a:***@g/d"
        );
        assert_eq!(Target::redact("mysql://a:b@h/d"), "mysql://a:***@h/d");
        assert_eq!(Target::redact("mysql://a@h/d"), "mysql://a@h/d");
        assert_eq!(
            Target::redact("postgres://a:b%40c@h:1,g:2/d?x=y"),
            "postgres://a:***@h:1,g:2/d?x=y"
        );
    }
}
