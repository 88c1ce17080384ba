//! A PostgreSQL connection by URL, as the engines' target connections
//! and the results store make it: TLS as the URL says (required, never
//! preferred), the host named for the certificate and reached at the
//! address resolved once.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use postgres::Client;
use postgres::config::{SslMode, SslNegotiation};
use rustls::ClientConfig;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::pgstream::{Guarded, Watch};
use super::{Endpoint, Target};

/// How long a due reply may take, with nothing moving, when the target
/// does not say ([`Target::timeout`]).
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(600);

/// A connection to endpoint `e` (resolved to `at`) of `t`, in `db`, opened
/// within `connect_timeout`: under TLS when `tls` is given, watched
/// ([`super::pgstream`]): the password goes only as `t` allows, and a
/// reply due for `t`'s timeout with nothing moving ends the connection.
/// TCP keepalives find a peer that is gone while the connection idles.
pub fn connect(
    t: &Target,
    tls: Option<&Arc<ClientConfig>>,
    (e, at): &(Endpoint, SocketAddr),
    db: &str,
    connect_timeout: Duration,
) -> Result<Client, postgres::Error> {
    let timeout = t.timeout.unwrap_or(REPLY_TIMEOUT);
    let mut c = postgres::Config::new();
    c.port(at.port())
        .user(&t.user)
        .dbname(db)
        .connect_timeout(connect_timeout);
    keepalive(&mut c, timeout);
    if let Some(p) = &t.password {
        c.password(p);
    }
    let watch = Watch {
        timeout,
        allowed: t.allowed_auth(),
    };
    match tls {
        None => {
            // Direct negotiation: no SSLRequest, the stream handed to
            // the watch as it is (nothing is encrypted).
            c.host(&at.ip().to_string())
                .ssl_mode(SslMode::Require)
                .ssl_negotiation(SslNegotiation::Direct);
            c.connect(Guarded::new(None, watch))
        }
        Some(config) => {
            c.host(&e.host).hostaddr(at.ip()).ssl_mode(SslMode::Require);
            c.connect(Guarded::new(
                Some(MakeRustlsConnect::new(ClientConfig::clone(config))),
                watch,
            ))
        }
    }
}

/// A connection to endpoint `e` (resolved to `at`) of `t`, in `db`, for
/// the measured path ([`ampbench_pgwire`]): under TLS when `tls` is
/// given, the password only as `t` allows, a reply due for `t`'s timeout
/// with nothing arriving ending it, as [`connect`]'s do.
pub fn connect_wire(
    t: &Target,
    tls: Option<&Arc<ClientConfig>>,
    (e, at): &(Endpoint, SocketAddr),
    db: &str,
    connect_timeout: Duration,
) -> Result<ampbench_pgwire::Conn> {
    let tls = match tls {
        None => None,
        Some(config) => Some(ampbench_pgwire::TlsTo {
            config: config.clone(),
            name: rustls::pki_types::ServerName::try_from(e.host.clone())
                .map_err(|err| anyhow::anyhow!("{}: host '{}': {err}", t.shown(), e.host))?,
        }),
    };
    ampbench_pgwire::Conn::connect(
        ampbench_pgwire::Addr::Tcp(*at),
        &ampbench_pgwire::Options {
            user: &t.user,
            password: t.password.as_deref(),
            db,
            connect_timeout,
            timeout: t.timeout.unwrap_or(REPLY_TIMEOUT),
            allowed: t.allowed_auth(),
            tls,
        },
    )
}

/// The longest a connection may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// TCP keepalives (a probe after 10 s idle, every 5 s, 3 lost: a peer
/// gone for about 25 s is noticed) and the kernel's limit on unacknowledged
/// data (`timeout`).
pub fn keepalive(c: &mut postgres::Config, timeout: Duration) {
    c.keepalives(true)
        .keepalives_idle(Duration::from_secs(10))
        .keepalives_interval(Duration::from_secs(5))
        .keepalives_retries(3)
        .tcp_user_timeout(timeout);
}

/// A connection to a server ampbench started on 127.0.0.1 (`port`),
/// watched as [`connect`]'s are: SCRAM or nothing, never the password in
/// clear text, and a reply due for `timeout` ends it.
pub fn connect_local(
    port: u16,
    user: &str,
    db: &str,
    password: &str,
    timeout: Duration,
) -> Result<Client, postgres::Error> {
    let mut c = postgres::Config::new();
    c.host("127.0.0.1")
        .port(port)
        .user(user)
        .dbname(db)
        .password(password)
        .connect_timeout(timeout.min(CONNECT_TIMEOUT))
        .ssl_mode(SslMode::Require)
        .ssl_negotiation(SslNegotiation::Direct);
    keepalive(&mut c, timeout);
    c.connect(Guarded::new(
        None,
        Watch {
            timeout,
            allowed: super::pgstream::Allowed::default_for(false),
        },
    ))
}

/// A connection to a server ampbench started, for the measured path
/// ([`ampbench_pgwire`]): on 127.0.0.1 (`port`) or its Unix socket in
/// `socket` (a directory only the server's user and root enter), SCRAM
/// or nothing, never the password in clear text, and a reply due for
/// `timeout` ends it.
pub fn connect_local_wire(
    (port, socket): (u16, Option<&std::path::Path>),
    user: &str,
    db: &str,
    password: &str,
    timeout: Duration,
) -> Result<ampbench_pgwire::Conn> {
    let addr = match socket {
        Some(dir) => ampbench_pgwire::Addr::Socket(dir, port),
        None => ampbench_pgwire::Addr::Tcp(SocketAddr::from(([127, 0, 0, 1], port))),
    };
    ampbench_pgwire::Conn::connect(
        addr,
        &ampbench_pgwire::Options {
            user,
            password: Some(password),
            db,
            connect_timeout: timeout.min(CONNECT_TIMEOUT),
            timeout,
            allowed: super::pgstream::Allowed::default_for(false),
            tls: None,
        },
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    fn msg(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![kind];
        v.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    /// A scripted server: reads the startup packet, sends `first`, then
    /// records what the client sends until `quiet` passes without any
    /// and, if `then` is given, sends it after each of the client's
    /// messages.
    fn scripted(
        first: Vec<u8>,
        then: Option<Vec<u8>>,
        quiet: Duration,
    ) -> (u16, std::thread::JoinHandle<Vec<u8>>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let h = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut len = [0u8; 4];
            s.read_exact(&mut len).unwrap();
            let mut startup = vec![0u8; u32::from_be_bytes(len) as usize - 4];
            s.read_exact(&mut startup).unwrap();
            s.write_all(&first).unwrap();
            s.set_read_timeout(Some(quiet)).unwrap();
            let mut got = Vec::new();
            let mut b = [0u8; 4096];
            loop {
                match s.read(&mut b) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        got.extend_from_slice(&b[..n]);
                        if let Some(t) = &then {
                            let _ = s.write_all(t);
                        }
                    }
                }
            }
            got
        });
        (port, h)
    }

    fn target(port: u16, query: &str) -> Target {
        let mut t = Target::parse(&format!(
            "postgres://bench:s3cret@127.0.0.1:{port}/db{query}"
        ))
        .unwrap();
        t.timeout = Some(Duration::from_secs(2));
        t
    }

    /// Issue 47: a server asking for the password in clear text on a
    /// plain connection is refused, and the password never sent.
    #[test]
    fn a_cleartext_password_request_is_refused_unless_allowed() {
        let ask = msg(b'R', &3u32.to_be_bytes());
        let (port, h) = scripted(ask.clone(), None, Duration::from_secs(1));
        let Err(e) = connect_url(&target(port, ""), "db", Duration::from_secs(5)) else {
            panic!("connected after a cleartext request");
        };
        let e = format!("{e:#}");
        assert!(e.contains("clear text") && e.contains("refused"), "{e}");
        let got = h.join().unwrap();
        assert!(
            !got.windows(6).any(|w| w == b"s3cret"),
            "the password was sent: {got:?}"
        );
        // Allowed by the URL: it is sent (the one line says it may be).
        let mut ok = msg(b'R', &0u32.to_be_bytes());
        ok.extend(msg(b'Z', b"I"));
        let (port, h) = scripted(ask, Some(ok), Duration::from_secs(1));
        let t = target(port, "?require_auth=password");
        assert!(t.cleartext_warning("--target").is_some());
        let c = connect_url(&t, "db", Duration::from_secs(5));
        assert!(c.is_ok(), "{:?}", c.err());
        drop(c);
        let got = h.join().unwrap();
        assert!(got.windows(6).any(|w| w == b"s3cret"));
        // No warning where the password cannot go in clear text.
        assert!(target(1, "").cleartext_warning("--target").is_none());
    }

    /// Issue 47: a server that stops answering mid-query ends the
    /// connection after the timeout, with one line, instead of a wait
    /// without end.
    #[test]
    fn a_silent_server_ends_the_wait() {
        let mut ok = msg(b'R', &0u32.to_be_bytes());
        ok.extend(msg(b'Z', b"I"));
        let (port, h) = scripted(ok, None, Duration::from_secs(6));
        let mut c = connect_url(
            &target(port, "?require_auth=none"),
            "db",
            Duration::from_secs(5),
        )
        .unwrap();
        let t0 = std::time::Instant::now();
        let e = c.simple_query("SELECT 1").unwrap_err();
        let waited = t0.elapsed();
        assert!(
            waited >= Duration::from_secs(2) && waited < Duration::from_secs(10),
            "{waited:?}"
        );
        assert!(
            one_line(&e).contains("sent nothing for 2 s"),
            "{}",
            one_line(&e)
        );
        drop(c);
        h.join().unwrap();
    }
}
