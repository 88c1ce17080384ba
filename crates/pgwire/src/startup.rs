//! The start of a connection: the socket (TCP keepalives, no Nagle), TLS
//! when asked for (SSLRequest, then everything under rustls; a server
//! that declines is refused), the startup message, and the password
//! proved as the server asks and the URL allows ([`crate::auth`]):
//! SCRAM-SHA-256, bound to the TLS channel when both ends can; MD5; in
//! clear text only where allowed. A request that is not allowed ends the
//! connection before it is answered.

use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::frontend;

use super::auth::{Allowed, Auth, Request, let_in, refusal, unknown};
use super::{Addr, Conn, Stream};

/// TLS for a TCP connection: the client configuration and the name the
/// server's certificate must carry.
#[derive(Clone)]
pub struct TlsTo {
    /// The configuration (roots, verification).
    pub config: Arc<rustls::ClientConfig>,
    /// The server's name as the certificate must carry it.
    pub name: rustls::pki_types::ServerName<'static>,
}

/// Who connects, where, and under what rules.
pub struct Options<'a> {
    /// The role.
    pub user: &'a str,
    /// Its password, when it has one.
    pub password: Option<&'a str>,
    /// The database.
    pub db: &'a str,
    /// The longest the start may take, as a whole (TCP, TLS,
    /// authentication, up to the first ReadyForQuery).
    pub connect_timeout: Duration,
    /// The longest a due reply may take with nothing arriving, and the
    /// kernel's limit on unacknowledged data (TCP_USER_TIMEOUT).
    pub timeout: Duration,
    /// The authentication methods accepted.
    pub allowed: Allowed,
    /// TLS, when the connection must have it.
    pub tls: Option<TlsTo>,
}

/// TCP keepalives (a probe after 10 s idle, every 5 s, 3 lost: a peer
/// gone for about 25 s is noticed) and the kernel's limit on
/// unacknowledged data, as the `postgres` crate's connections have them.
fn keepalive(s: &TcpStream, timeout: Duration) -> std::io::Result<()> {
    let fd = s.as_raw_fd();
    let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
    for (level, name, v) in [
        (libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1),
        (libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, 10),
        (libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, 5),
        (libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 3),
        (libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, ms),
    ] {
        let v: libc::c_int = v;
        // SAFETY: fd is the open socket `s` owns; the option value is a
        // c_int on the stack, its size given.
        let r = unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Where the authentication exchange stands.
#[derive(Default)]
struct Exchange {
    /// The method the server asked for.
    asked: Option<Auth>,
    /// The SCRAM exchange, once begun.
    scram: Option<sasl::ScramSha256>,
    /// The SASL steps the server has sent (continue, then final).
    steps: u8,
    /// The server proved it knows the password (SASL final, its
    /// signature checked).
    proved: bool,
}

impl Conn {
    /// Connects to `addr` and starts a session as `o` says; every later
    /// read and write gives up after `o.timeout` with nothing moving.
    pub fn connect(addr: Addr<'_>, o: &Options<'_>) -> Result<Conn> {
        let stream = match addr {
            Addr::Tcp(to) => {
                let s = TcpStream::connect_timeout(&to, o.connect_timeout)?;
                s.set_nodelay(true)?;
                keepalive(&s, o.timeout)?;
                Stream::Tcp(s)
            }
            Addr::Socket(dir, port) => {
                if o.tls.is_some() {
                    bail!("postgres: TLS over a Unix socket is not spoken");
                }
                Stream::Unix(UnixStream::connect(dir.join(format!(".s.PGSQL.{port}")))?)
            }
        };
        stream.set_timeout(o.connect_timeout)?;
        let mut c = Conn::over(stream, o.connect_timeout);
        c.deadline = Some(std::time::Instant::now() + o.connect_timeout);
        c.in_flight = true;
        if let Some(tls) = &o.tls {
            c.tls(tls)?;
        }
        c.start(o)?;
        c.in_flight = false;
        c.deadline = None;
        c.timeout = o.timeout;
        c.stream.set_timeout(o.timeout)?;
        Ok(c)
    }

    /// SSLRequest; on the server's 'S', the handshake, and the stream
    /// from then on under TLS.
    fn tls(&mut self, tls: &TlsTo) -> Result<()> {
        frontend::ssl_request(&mut self.out);
        self.send()?;
        self.fill(1)?;
        let answer = self.buf[self.start];
        self.start += 1;
        if answer != b'S' {
            bail!("postgres: the server does not offer TLS, which the URL asks for");
        }
        if self.end != self.start {
            // Bytes after the 'S' before the handshake: a man in the
            // middle's (CVE-2021-23222).
            bail!("postgres: the server sent data before the TLS handshake; refused");
        }
        let Stream::Tcp(sock) =
            std::mem::replace(&mut self.stream, Stream::Replay(Default::default()))
        else {
            bail!("postgres: TLS over a Unix socket is not spoken");
        };
        let conn = rustls::ClientConnection::new(tls.config.clone(), tls.name.clone())
            .context("postgres: TLS")?;
        let mut s = rustls::StreamOwned::new(conn, sock);
        if let Some(d) = self.deadline {
            let left = d.saturating_duration_since(std::time::Instant::now());
            s.sock
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
        }
        while s.conn.is_handshaking() {
            s.conn
                .complete_io(&mut s.sock)
                .map_err(|e| self.io_error(e, "the TLS handshake"))?;
        }
        self.stream = Stream::Tls(Box::new(s));
        Ok(())
    }

    /// The tls-server-end-point binding of the TLS channel (RFC 5929):
    /// the server certificate's hash by its signature's digest (SHA-1
    /// taken as SHA-256). None without TLS or for a signature with no
    /// such digest (Ed25519).
    fn channel_binding(&self) -> Option<Vec<u8>> {
        use sha2::Digest;
        use x509_cert::der::Decode;
        use x509_cert::der::oid::db::rfc5912 as alg;
        let Stream::Tls(s) = &self.stream else {
            return None;
        };
        let der = s.conn.peer_certificates()?.first()?;
        let cert = x509_cert::Certificate::from_der(der).ok()?;
        Some(match cert.signature_algorithm.oid {
            alg::ID_SHA_1
            | alg::ID_SHA_256
            | alg::SHA_1_WITH_RSA_ENCRYPTION
            | alg::SHA_256_WITH_RSA_ENCRYPTION
            | alg::ECDSA_WITH_SHA_256 => sha2::Sha256::digest(der).to_vec(),
            alg::ID_SHA_384 | alg::SHA_384_WITH_RSA_ENCRYPTION | alg::ECDSA_WITH_SHA_384 => {
                sha2::Sha384::digest(der).to_vec()
            }
            alg::ID_SHA_512 | alg::SHA_512_WITH_RSA_ENCRYPTION => {
                sha2::Sha512::digest(der).to_vec()
            }
            _ => return None,
        })
    }

    /// The startup message, the authentication exchange, and the rest of
    /// the start up to the first ReadyForQuery.
    pub(super) fn start(&mut self, o: &Options<'_>) -> Result<()> {
        frontend::startup_message(
            [
                ("user", o.user),
                ("database", o.db),
                ("client_encoding", "UTF8"),
            ],
            &mut self.out,
        )?;
        self.send()?;
        let mut ex = Exchange::default();
        loop {
            let (tag, body) = self.message()?;
            let b = self.buf[body].to_vec();
            match tag {
                b'R' => {
                    if self.answer(&b, o, &mut ex)? {
                        break;
                    }
                }
                b'E' => return Err(super::codec::server_error(&b).into()),
                b'N' => {}
                other => bail!(
                    "postgres: message '{}' during authentication: the server is out of step",
                    other as char
                ),
            }
        }
        loop {
            let (tag, body) = self.message()?;
            match tag {
                b'Z' => return Ok(()),
                b'E' => return Err(super::codec::server_error(&self.buf[body]).into()),
                // ParameterStatus, BackendKeyData, notices.
                _ => {}
            }
        }
    }

    /// Answers one authentication request (`b`, an 'R' message's body)
    /// as `o` allows; true once the server lets the client in.
    fn answer(&mut self, b: &[u8], o: &Options<'_>, ex: &mut Exchange) -> Result<bool> {
        let code = u32::from_be_bytes(
            b.get(..4)
                .and_then(|x| x.try_into().ok())
                .ok_or_else(|| anyhow!("postgres: a short authentication request"))?,
        );
        let password = || {
            o.password.map(str::as_bytes).ok_or_else(|| {
                anyhow!("postgres: the server asks for a password and none is given")
            })
        };
        let a = match Request::of(code) {
            Request::Ok => {
                if ex.asked.is_none()
                    && let Some(why) = let_in(o.allowed)
                {
                    bail!("postgres: {why}");
                }
                if ex.asked == Some(Auth::Scram) && !ex.proved {
                    // tokio-postgres and libpq refuse it too: a server that
                    // skips SCRAM's last step never proved it knows the
                    // password, nor its channel binding.
                    bail!(
                        "postgres: the server let this client in before SCRAM was done (it never proved it knows the password); refused"
                    );
                }
                return Ok(true);
            }
            Request::Unknown(code) => bail!("postgres: {}", unknown(code)),
            Request::Sasl => return self.sasl_step(code, &b[4..], ex).map(|_| false),
            Request::Method(a) => a,
        };
        if let Some(why) = refusal(o.allowed, a) {
            bail!("postgres: {why}");
        }
        if ex.asked.is_some() {
            bail!("postgres: a second authentication request: the server is out of step");
        }
        ex.asked = Some(a);
        match a {
            Auth::Password => frontend::password_message(password()?, &mut self.out)?,
            Auth::Md5 => {
                let salt: [u8; 4] = b
                    .get(4..8)
                    .and_then(|x| x.try_into().ok())
                    .ok_or_else(|| anyhow!("postgres: a short MD5 request"))?;
                let h = md5_hash(o.user.as_bytes(), password()?, salt);
                frontend::password_message(h.as_bytes(), &mut self.out)?;
            }
            Auth::Scram => {
                let (mechanism, s) = self.scram(&b[4..], password()?)?;
                frontend::sasl_initial_response(mechanism, s.message(), &mut self.out)?;
                ex.scram = Some(s);
            }
            Auth::None => bail!("postgres: an authentication request out of step"),
        }
        self.send()?;
        Ok(false)
    }

    /// A SASL step after SASL was begun: continue (11), answered, then
    /// final (12), whose proof must verify; in that order only.
    fn sasl_step(&mut self, code: u32, data: &[u8], ex: &mut Exchange) -> Result<()> {
        let s = ex
            .scram
            .as_mut()
            .ok_or_else(|| anyhow!("postgres: a SASL step before SASL was begun"))?;
        ex.steps += 1;
        match (code, ex.steps) {
            (11, 1) => {
                s.update(data)?;
                frontend::sasl_response(s.message(), &mut self.out)?;
                self.send()
            }
            (12, 2) => {
                s.finish(data)
                    .context("postgres: the server's SCRAM proof does not verify")?;
                ex.proved = true;
                Ok(())
            }
            _ => bail!("postgres: SASL step {code} out of order: the server is out of step"),
        }
    }

    /// The SCRAM mechanism and its first message, from the server's list
    /// (`mechanisms`, NUL-terminated names): SCRAM-SHA-256-PLUS bound to
    /// the TLS channel when both ends can, else SCRAM-SHA-256 saying
    /// whether this client could have bound it (a server that offers
    /// -PLUS to a client that says it could not is then not fooled).
    fn scram(
        &self,
        mechanisms: &[u8],
        password: &[u8],
    ) -> Result<(&'static str, sasl::ScramSha256)> {
        let names: Vec<&[u8]> = mechanisms.split(|&c| c == 0).collect();
        let has = |m: &str| names.contains(&m.as_bytes());
        let binding = self.channel_binding();
        let (mechanism, cb) = match (has(sasl::SCRAM_SHA_256_PLUS), binding) {
            (true, Some(b)) => (
                sasl::SCRAM_SHA_256_PLUS,
                sasl::ChannelBinding::tls_server_end_point(b),
            ),
            (true, None) => (sasl::SCRAM_SHA_256, sasl::ChannelBinding::unsupported()),
            (false, Some(_)) => (sasl::SCRAM_SHA_256, sasl::ChannelBinding::unrequested()),
            (false, None) => (sasl::SCRAM_SHA_256, sasl::ChannelBinding::unsupported()),
        };
        if !has(sasl::SCRAM_SHA_256) && mechanism == sasl::SCRAM_SHA_256 {
            bail!(
                "postgres: the server offers none of the SASL mechanisms this client speaks ({})",
                String::from_utf8_lossy(mechanisms)
                    .replace('\0', " ")
                    .trim()
            );
        }
        Ok((mechanism, sasl::ScramSha256::new(password, cb)))
    }
}
