//! Every PostgreSQL connection ampbench makes (targets, its own servers,
//! the results store) runs over a stream that watches the protocol's
//! message frames as they pass, for two things the `postgres` crate does
//! not offer:
//!
//! - **How the password may go.** While the connection starts, the
//!   server's authentication request is checked against what the URL
//!   allows (libpq's `require_auth`: by default anything but a password
//!   in clear text on a connection that is not TLS with a verified
//!   server). A refused request ends the connection before the client
//!   answers it, so the password is never sent.
//! - **A server that goes silent.** Each simple query and each Sync
//!   owes one ReadyForQuery; while any is owed and nothing moves in
//!   either direction for the timeout, the stream fails the connection
//!   with one line, so no wait on a stopped or unreachable server is
//!   unbounded (TCP keepalives alone do not see a server process that
//!   was stopped: its kernel still answers them).
//!
//! A plain connection reaches this stream through the `TlsConnect` hook
//! with direct negotiation (no SSLRequest is sent, and nothing is
//! encrypted); a TLS one wraps rustls' stream, so the frames it sees are
//! the decrypted ones.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use postgres::Socket;
use postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres_rustls::MakeRustlsConnect;

pub use ampbench_pgwire::auth::{Allowed, Auth};
use ampbench_pgwire::auth::{Request, let_in, refusal, unknown};

/// What a watched connection enforces.
#[derive(Clone, Copy, Debug)]
pub struct Watch {
    /// The longest a due reply may take with nothing moving.
    pub timeout: Duration,
    /// The authentication methods accepted.
    pub allowed: Allowed,
}

/// The `MakeTlsConnect` that gives every connection a [`Watched`]
/// stream, under TLS (rustls) when `tls` is given.
pub struct Guarded {
    tls: Option<MakeRustlsConnect>,
    watch: Watch,
}

impl Guarded {
    /// Watched connections, encrypted when `tls` is given.
    pub fn new(tls: Option<MakeRustlsConnect>, watch: Watch) -> Guarded {
        Guarded { tls, watch }
    }
}

type RustlsConnect = <MakeRustlsConnect as MakeTlsConnect<Socket>>::TlsConnect;
type RustlsStream = <MakeRustlsConnect as MakeTlsConnect<Socket>>::Stream;

impl MakeTlsConnect<Socket> for Guarded {
    type Stream = Watched<Inner>;
    type TlsConnect = GuardConnect;
    type Error = std::convert::Infallible;

    fn make_tls_connect(&mut self, domain: &str) -> Result<GuardConnect, Self::Error> {
        let tls = match &mut self.tls {
            Some(m) => {
                match <MakeRustlsConnect as MakeTlsConnect<Socket>>::make_tls_connect(m, domain) {
                    Ok(c) => Some(c),
                    Err(never) => match never {},
                }
            }
            None => None,
        };
        Ok(GuardConnect {
            tls,
            watch: self.watch,
        })
    }
}

/// One connection's hook: TLS or not, then the watch.
pub struct GuardConnect {
    tls: Option<RustlsConnect>,
    watch: Watch,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl TlsConnect<Socket> for GuardConnect {
    type Stream = Watched<Inner>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Watched<Inner>, BoxError>> + Send>>;

    fn connect(self, s: Socket) -> Self::Future {
        Box::pin(async move {
            let inner = match self.tls {
                None => Inner::Plain(s),
                Some(t) => Inner::Tls(Box::new(
                    TlsConnect::<Socket>::connect(t, s)
                        .await
                        .map_err(Into::<BoxError>::into)?,
                )),
            };
            Ok(Watched::new(inner, self.watch))
        })
    }
}

/// The stream under the watch: the socket, or TLS over it.
pub enum Inner {
    /// Not encrypted.
    Plain(Socket),
    /// rustls.
    Tls(Box<RustlsStream>),
}

impl AsyncRead for Inner {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Inner::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Inner::Tls(s) => Pin::new(&mut **s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Inner {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Inner::Plain(s) => Pin::new(s).poll_write(cx, b),
            Inner::Tls(s) => Pin::new(&mut **s).poll_write(cx, b),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Inner::Plain(s) => Pin::new(s).poll_flush(cx),
            Inner::Tls(s) => Pin::new(&mut **s).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Inner::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Inner::Tls(s) => Pin::new(&mut **s).poll_shutdown(cx),
        }
    }
}

/// Message frames over a byte stream fed in pieces: the type byte (none
/// for the first message a client sends, the startup packet), the
/// length, and for one type the first four bytes of the body.
#[derive(Default)]
struct Framer {
    head: [u8; 5],
    have: usize,
    /// The next message has no type byte.
    untyped: bool,
    /// Body bytes of the current message still to pass.
    body: usize,
    kind: u8,
    peek: [u8; 4],
    peeked: usize,
    /// Body bytes wanted in `peek` (4, or 0 when none are).
    want: usize,
}

impl Framer {
    /// Feeds `b`; calls `on(type, first body bytes)` once per message,
    /// with the first four body bytes for type `peek_kind` and none for
    /// the others (type 0 is the untyped startup packet).
    fn feed(&mut self, mut b: &[u8], peek_kind: u8, mut on: impl FnMut(u8, &[u8])) {
        while !b.is_empty() {
            if self.want > 0 {
                let take = (self.want - self.peeked).min(b.len());
                self.peek[self.peeked..self.peeked + take].copy_from_slice(&b[..take]);
                self.peeked += take;
                b = &b[take..];
                if self.peeked == self.want {
                    self.want = 0;
                    let p = self.peek;
                    on(self.kind, &p);
                }
                continue;
            }
            if self.body > 0 {
                let skip = self.body.min(b.len());
                self.body -= skip;
                b = &b[skip..];
                continue;
            }
            let need = if self.untyped { 4 } else { 5 };
            let take = (need - self.have).min(b.len());
            self.head[self.have..self.have + take].copy_from_slice(&b[..take]);
            self.have += take;
            b = &b[take..];
            if self.have < need {
                return;
            }
            let (kind, len) = if self.untyped {
                (0, &self.head[0..4])
            } else {
                (self.head[0], &self.head[1..5])
            };
            let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
            self.untyped = false;
            self.have = 0;
            self.kind = kind;
            let body = len.saturating_sub(4);
            if kind == peek_kind && body >= 4 {
                self.want = 4;
                self.peeked = 0;
                self.body = body - 4;
            } else {
                self.body = body;
                on(kind, &[]);
            }
        }
    }
}

/// A connection's stream, watched (see the module's text).
pub struct Watched<S> {
    inner: S,
    watch: Watch,
    front: Framer,
    back: Framer,
    /// Replies (ReadyForQuery) owed by the server.
    owed: u32,
    /// Still authenticating, and the method the server asked for.
    starting: bool,
    asked: Option<Auth>,
    /// When bytes last moved either way.
    moved: tokio::time::Instant,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Why the connection was ended, once it was.
    refused: Option<String>,
}

impl<S> Watched<S> {
    fn new(inner: S, watch: Watch) -> Watched<S> {
        Watched {
            inner,
            watch,
            front: Framer {
                untyped: true,
                ..Framer::default()
            },
            back: Framer::default(),
            owed: 0,
            starting: true,
            asked: None,
            moved: tokio::time::Instant::now(),
            sleep: None,
            refused: None,
        }
    }

    /// Bytes the client sent: each startup packet, simple query and Sync
    /// is owed a ReadyForQuery.
    fn sent(&mut self, b: &[u8]) {
        let mut owed = 0;
        self.front.feed(b, 0xff, |kind, _| {
            if matches!(kind, 0 | b'Q' | b'S') {
                owed += 1;
            }
        });
        self.owed += owed;
        self.moved = tokio::time::Instant::now();
    }

    /// Bytes the server sent: ReadyForQuery pays a reply; while the
    /// connection starts, its authentication requests are judged.
    fn received(&mut self, b: &[u8]) {
        self.moved = tokio::time::Instant::now();
        let (starting, allowed) = (self.starting, self.watch.allowed);
        let (mut paid, mut asked, mut ok, mut refused) = (0, self.asked, false, None);
        // Every authentication request is judged on its own, in order: a
        // server may send several in one read (a refused one followed by
        // an allowed one must still be refused).
        self.back.feed(b, b'R', |kind, body| match kind {
            b'Z' => paid += 1,
            b'R' if starting && body.len() == 4 && refused.is_none() && !ok => {
                let a = match Request::of(u32::from_be_bytes([body[0], body[1], body[2], body[3]]))
                {
                    Request::Ok => {
                        ok = true;
                        return;
                    }
                    Request::Method(a) => a,
                    // SASL continue/final: part of the SCRAM exchange.
                    Request::Sasl => return,
                    Request::Unknown(code) => {
                        refused = Some(unknown(code));
                        return;
                    }
                };
                asked = Some(a);
                refused = refusal(allowed, a);
            }
            _ => {}
        });
        self.owed = self.owed.saturating_sub(paid);
        self.asked = asked;
        if self.refused.is_none() {
            self.refused = refused;
        }
        if ok && starting {
            if self.asked.is_none() && self.refused.is_none() {
                self.refused = let_in(allowed);
            }
            self.starting = false;
        }
    }

    /// Pending with a reply owed (or bytes waiting to go): fails once
    /// nothing has moved for the timeout.
    fn stalled(&mut self, cx: &mut Context<'_>, writing: bool) -> Option<io::Error> {
        if self.owed == 0 && !writing {
            return None;
        }
        let due = self.moved + self.watch.timeout;
        let s = self
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
        if s.deadline() != due {
            s.as_mut().reset(due);
        }
        match s.as_mut().poll(cx) {
            Poll::Ready(()) => Some(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the server sent nothing for {:.0} s while a reply was due (stopped, or cut off); connection closed",
                    self.watch.timeout.as_secs_f64()
                ),
            )),
            Poll::Pending => None,
        }
    }

    fn refusal(&self) -> Option<io::Error> {
        self.refused
            .as_ref()
            .map(|r| io::Error::new(io::ErrorKind::PermissionDenied, r.clone()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        if let Some(e) = me.refusal() {
            return Poll::Ready(Err(e));
        }
        let before = buf.filled().len();
        match Pin::new(&mut me.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let got = buf.filled()[before..].to_vec();
                me.received(&got);
                if let Some(e) = me.refusal() {
                    // Nothing of the request reaches the client.
                    buf.set_filled(before);
                    return Poll::Ready(Err(e));
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending => match me.stalled(cx, false) {
                Some(e) => Poll::Ready(Err(e)),
                None => Poll::Pending,
            },
            other => other,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        if let Some(e) = me.refusal() {
            return Poll::Ready(Err(e));
        }
        match Pin::new(&mut me.inner).poll_write(cx, b) {
            Poll::Ready(Ok(n)) => {
                me.sent(&b[..n]);
                // The reply's clock starts now: the timer is armed with
                // this task's waker, since the driver may not read again
                // until the socket has something to read.
                let _ = me.stalled(cx, false);
                Poll::Ready(Ok(n))
            }
            Poll::Pending => match me.stalled(cx, true) {
                Some(e) => Poll::Ready(Err(e)),
                None => Poll::Pending,
            },
            other => other,
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        match Pin::new(&mut me.inner).poll_flush(cx) {
            Poll::Pending => match me.stalled(cx, true) {
                Some(e) => Poll::Ready(Err(e)),
                None => Poll::Pending,
            },
            other => other,
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl TlsStream for Watched<Inner> {
    fn channel_binding(&self) -> ChannelBinding {
        match &self.inner {
            Inner::Plain(_) => ChannelBinding::none(),
            Inner::Tls(s) => s.channel_binding(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![kind];
        v.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn frames_are_found_across_pieces() {
        let mut stream = Vec::new();
        stream.extend(msg(b'R', &3u32.to_be_bytes()));
        stream.extend(msg(b'S', b"server_version\x0015\x00"));
        stream.extend(msg(b'Z', b"I"));
        stream.extend(msg(b'Z', b"I"));
        // Every split into pieces of one size gives the same messages.
        for piece in 1..stream.len() {
            let mut f = Framer::default();
            let mut seen = Vec::new();
            for p in stream.chunks(piece) {
                f.feed(p, b'R', |k, b| seen.push((k, b.to_vec())));
            }
            assert_eq!(
                seen,
                vec![
                    (b'R', 3u32.to_be_bytes().to_vec()),
                    (b'S', vec![]),
                    (b'Z', vec![]),
                    (b'Z', vec![])
                ],
                "pieces of {piece}"
            );
        }
        // The client's first message has no type byte.
        let mut f = Framer {
            untyped: true,
            ..Framer::default()
        };
        let mut startup = 8u32.to_be_bytes().to_vec();
        startup.extend_from_slice(&196608u32.to_be_bytes());
        startup.extend(msg(b'Q', b"SELECT 1\x00"));
        let mut kinds = Vec::new();
        f.feed(&startup, 0xff, |k, _| kinds.push(k));
        assert_eq!(kinds, vec![0, b'Q']);
    }

    #[test]
    fn a_cleartext_request_is_refused_before_it_is_answered() {
        let watch = Watch {
            timeout: Duration::from_secs(5),
            allowed: Allowed::default_for(false),
        };
        let mut w = Watched::new((), watch);
        w.sent(&[0, 0, 0, 8, 0, 3, 0, 0]);
        assert_eq!(w.owed, 1);
        w.received(&msg(b'R', &3u32.to_be_bytes()));
        assert!(w.refusal().unwrap().to_string().contains("clear text"));
        // SCRAM passes, and the ReadyForQuery pays the startup's reply.
        let mut w = Watched::new((), watch);
        w.sent(&[0, 0, 0, 8, 0, 3, 0, 0]);
        let mut b = msg(b'R', &10u32.to_be_bytes()[..]);
        b.extend(msg(b'R', &0u32.to_be_bytes()));
        b.extend(msg(b'Z', b"I"));
        w.received(&b);
        assert!(w.refusal().is_none());
        assert_eq!((w.owed, w.starting), (0, false));
        // Two requests in one read: a refused one, then an allowed one.
        let mut w = Watched::new((), watch);
        w.sent(&[0, 0, 0, 8, 0, 3, 0, 0]);
        let mut b = msg(b'R', &3u32.to_be_bytes());
        b.extend(msg(b'R', &10u32.to_be_bytes()));
        w.received(&b);
        assert!(w.refusal().unwrap().to_string().contains("clear text"));
        // An unknown method (GSS) is refused by number.
        let mut g = Watched::new((), watch);
        g.received(&msg(b'R', &7u32.to_be_bytes()));
        assert!(g.refusal().unwrap().to_string().contains("method 7"));
        // After the start, an 'R' in a reply is not judged.
        let mut w = Watched::new((), watch);
        let mut b = msg(b'R', &0u32.to_be_bytes());
        b.extend(msg(b'Z', b"I"));
        w.received(&b);
        w.sent(&msg(b'Q', b"SELECT 1\x00"));
        assert_eq!(w.owed, 1);
        w.received(&msg(b'R', &3u32.to_be_bytes()));
        assert!(w.refusal().is_none());
    }
}
