//! A PostgreSQL connection by URL, as the engines' target connections
//! and the results store make it: TLS as the URL says (required, never
//! preferred), the host named for the certificate and reached at the
//! address resolved once.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use postgres::config::SslMode;
use postgres::{Client, NoTls};
use rustls::ClientConfig;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::{Endpoint, Target};

/// A connection to endpoint `e` (resolved to `at`) of `t`, in `db`: under
/// TLS when `tls` is given.
pub fn connect(
    t: &Target,
    tls: Option<&Arc<ClientConfig>>,
    (e, at): &(Endpoint, SocketAddr),
    db: &str,
    timeout: Duration,
) -> Result<Client, postgres::Error> {
    let mut c = postgres::Config::new();
    c.port(at.port())
        .user(&t.user)
        .dbname(db)
        .connect_timeout(timeout);
    if let Some(p) = &t.password {
        c.password(p);
    }
    match tls {
        None => {
            c.host(&at.ip().to_string()).ssl_mode(SslMode::Disable);
            c.connect(NoTls)
        }
        Some(config) => {
            c.host(&e.host).hostaddr(at.ip()).ssl_mode(SslMode::Require);
            c.connect(MakeRustlsConnect::new(ClientConfig::clone(config)))
        }
    }
}

/// A connection to the first endpoint of `t`, in `db`, within `timeout`;
/// an error is one line naming the URL (without its password).
pub fn connect_url(t: &Target, db: &str, timeout: Duration) -> Result<Client> {
    let e = t
        .endpoints
        .first()
        .ok_or_else(|| anyhow::anyhow!("{}: no host", t.shown()))?;
    use std::net::ToSocketAddrs;
    let at = (e.host.as_str(), e.port)
        .to_socket_addrs()
        .map_err(|err| anyhow::anyhow!("{}: cannot resolve host '{}': {err}", t.shown(), e.host))?
        .next()
        .ok_or_else(|| anyhow::anyhow!("{}: host '{}' has no address", t.shown(), e.host))?;
    let tls = super::tls::client_config(t)?;
    connect(t, tls.as_ref(), &(e.clone(), at), db, timeout).map_err(|err| {
        anyhow::anyhow!(
            "cannot connect to {}: {}",
            t.shown(),
            one_line(&err).replace('\n', " ")
        )
    })
}

/// The server's error on one line: its SQLSTATE message when it sent one.
pub fn one_line(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => d.message().to_string(),
        None => {
            // The driver's kind, then its causes ("error performing TLS
            // handshake: server does not support TLS").
            let mut s = e.to_string();
            let mut cause = std::error::Error::source(e);
            while let Some(c) = cause {
                let c_s = c.to_string();
                if !s.contains(&c_s) {
                    s = format!("{s}: {c_s}");
                }
                cause = c.source();
            }
            s.lines().next().unwrap_or_default().to_string()
        }
    }
}
