//! The PostgreSQL client protocol for the measured path: a blocking
//! connection that speaks what a benchmark client needs — the startup
//! (TLS, SCRAM-SHA-256 with channel binding, MD5, the password in clear
//! only where allowed), simple queries, and prepared statements executed
//! with one write and one read per statement — with no allocation per
//! statement beyond the cells it returns.
//!
//! Why not the `postgres` crate here (it still serves administration and
//! the results store): it is a blocking face over tokio-postgres, so each
//! statement crosses to a runtime and back: 7.0 system calls and 1.9
//! context switches per LinkBench request against 3.0 and 1.55 for
//! [ampbench's MariaDB client](../ampbench_mywire/index.html), and twice
//! its client CPU (99 against 51 µs). This crate keeps one read buffer
//! and one write buffer per connection, prepared statements in a short
//! list found by the SQL text's address, and decodes rows where they lie
//! in the read buffer. Messages are written by `postgres-protocol`, the
//! well-kept crate under tokio-postgres, which also does MD5 and SCRAM.
//!
//! A reply due is waited for at most the connection's timeout with
//! nothing arriving (the socket's own timeout), and what the server may
//! send is bounded ([`Limits`]): a target ampbench did not start is not
//! trusted with this process's memory or time.
//!
//! Protocol reference: PostgreSQL's "Frontend/Backend Protocol" chapter
//! (message flow, extended query, message formats).

#![warn(missing_docs)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::ops::Range;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use bytes::BytesMut;
use postgres_protocol::message::frontend;

use ampbench_core::sqlval::{Cell, Val};

pub mod auth;
mod codec;
mod startup;

pub use auth::{Allowed, Auth};
pub use startup::{Options, TlsTo};

/// The most statements a connection keeps prepared; the oldest is closed
/// to make room.
const MAX_STMTS: usize = 256;
/// The longest message other than a row (a notice, a parameter, an
/// authentication request, a description): none is near this.
const MAX_OTHER: usize = 1 << 20;
/// The read buffer's size; after a reply that grew it past
/// [`MAX_OTHER`], it goes back to this.
const BUF: usize = 64 << 10;
/// What a row costs in memory beyond its bytes on the wire, counted
/// against [`Limits::result`]: a cell per column, and the row's vector.
const CELL_COST: u64 = 32;
const ROW_COST: u64 = 24;

/// What a connection takes from a server before it refuses the rest as
/// not believable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The longest message.
    pub message: usize,
    /// The most bytes of rows one result may bring.
    pub result: u64,
}

impl Default for Limits {
    /// 64 MiB messages (a workload's longest row is far shorter) and
    /// 256 MiB results (LinkBench's longest list, 10,000 links, is about
    /// 2 MB).
    fn default() -> Limits {
        Limits {
            message: 64 << 20,
            result: 256 << 20,
        }
    }
}

/// An error the server sent (an ErrorResponse).
#[derive(Debug)]
pub struct ServerError {
    /// ERROR, FATAL or PANIC.
    pub severity: String,
    /// SQLSTATE (23505 duplicate key, 40P01 deadlock…).
    pub code: String,
    /// The message.
    pub message: String,
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} ({})", self.severity, self.message, self.code)
    }
}

impl std::error::Error for ServerError {}

/// What a DataRow costs against [`Limits::result`]: its bytes, and the
/// memory of the cells it becomes.
fn row_cost(b: &[u8]) -> u64 {
    let columns = b.get(..2).map_or(0, |c| u16::from_be_bytes([c[0], c[1]]));
    b.len() as u64 + ROW_COST + CELL_COST * u64::from(columns)
}

/// The SQLSTATE of `e`, if the server sent it.
pub fn error_code(e: &anyhow::Error) -> Option<&str> {
    e.chain()
        .find_map(|c| c.downcast_ref::<ServerError>().map(|s| s.code.as_str()))
}

/// The server's message of `e` when the server sent one, else `e` on one
/// line: what a one-line error shows.
pub fn one_line(e: &anyhow::Error) -> String {
    match e.chain().find_map(|c| c.downcast_ref::<ServerError>()) {
        Some(s) => s.message.clone(),
        None => format!("{e:#}")
            .lines()
            .next()
            .unwrap_or_default()
            .to_string(),
    }
}

/// Where to connect.
pub enum Addr<'a> {
    /// A TCP address (127.0.0.1 and a port for a server ampbench
    /// started; a target's resolved address).
    Tcp(std::net::SocketAddr),
    /// The directory of a server's Unix socket, and the port that names
    /// the socket in it (`.s.PGSQL.PORT`).
    Socket(&'a Path, u16),
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    /// TCP under TLS, after the SSLRequest.
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
    /// Bytes given in advance as the server's, what is written dropped:
    /// the tests' server.
    Replay(std::io::Cursor<Vec<u8>>),
}

impl Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
            Stream::Replay(s) => s.read(buf),
        }
    }

    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(b),
            Stream::Unix(s) => s.write_all(b),
            Stream::Tls(s) => {
                s.write_all(b)?;
                // rustls buffers what is written: send it now.
                s.flush()
            }
            Stream::Replay(_) => Ok(()),
        }
    }

    /// Gives up a read or write after `t`.
    fn set_timeout(&self, t: Duration) -> std::io::Result<()> {
        let t = Some(t);
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t).and_then(|_| s.set_write_timeout(t)),
            Stream::Unix(s) => s.set_read_timeout(t).and_then(|_| s.set_write_timeout(t)),
            Stream::Tls(s) => s
                .sock
                .set_read_timeout(t)
                .and_then(|_| s.sock.set_write_timeout(t)),
            Stream::Replay(_) => Ok(()),
        }
    }
}

/// What receives a result's rows, one at a time.
pub type Rows<'a> = &'a mut dyn FnMut(&mut Vec<Cell>);

/// A prepared statement: its text (and that text's address, the fast
/// lookup), its name on the server, its parameters' types, and its
/// result columns' types and formats.
struct Stmt {
    sql: String,
    at: usize,
    name: String,
    params: Vec<u32>,
    cols: Vec<u32>,
    formats: Vec<i16>,
}

/// One connection.
pub struct Conn {
    stream: Stream,
    /// The messages being written.
    out: BytesMut,
    /// Bytes read from the server: `buf[start..end]` not yet taken as a
    /// message. A reply is usually read by one system call and its
    /// messages decoded where they lie.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    stmts: Vec<Stmt>,
    /// The number in the next statement's name.
    next_name: u64,
    affected: u64,
    /// The row being decoded, reused from row to row.
    row: Vec<Cell>,
    /// A BEGIN is written to `out` by [`Conn::queue_begin`], not yet
    /// sent.
    queued: bool,
    /// The error of a queued BEGIN whose reply came apart from its
    /// request's (before a simple query).
    queued_error: Option<ServerError>,
    /// A request was sent and its reply is not all read. An error that
    /// leaves it set (the connection broke, or the server sent what
    /// could not be read) leaves the reply unread, so the connection is
    /// refused from then on rather than read out of step.
    in_flight: bool,
    /// The server's reply broke off after an error it sent (a FATAL
    /// error, then the connection closed): the error is returned, the
    /// connection is not used again.
    broken: bool,
    /// How long a reply may take with nothing arriving.
    timeout: Duration,
    /// While the connection starts: when the start must be done by.
    deadline: Option<std::time::Instant>,
    limits: Limits,
}

impl Conn {
    /// A connection over `stream`, not yet started.
    fn over(stream: Stream, timeout: Duration) -> Conn {
        Conn {
            stream,
            out: BytesMut::with_capacity(4096),
            buf: vec![0; BUF],
            start: 0,
            end: 0,
            stmts: Vec::new(),
            next_name: 0,
            affected: 0,
            row: Vec::new(),
            queued: false,
            queued_error: None,
            in_flight: false,
            broken: false,
            timeout,
            deadline: None,
            limits: Limits::default(),
        }
    }

    /// Sets what the connection takes from the server ([`Limits`]).
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Begins a request: refused when an earlier one broke off in the
    /// middle of its reply.
    fn request(&mut self) -> Result<()> {
        if self.in_flight || self.broken {
            bail!(
                "postgres: this connection broke off in the middle of a reply and is not used again"
            );
        }
        self.in_flight = true;
        if self.buf.len() > MAX_OTHER && self.start == self.end {
            // A long reply is read: its room is given back.
            self.buf = vec![0; BUF];
            (self.start, self.end) = (0, 0);
        }
        Ok(())
    }

    /// Ends a request: its reply is read to ReadyForQuery, or the error
    /// is the server's (which is only returned once ReadyForQuery came).
    /// Any other error leaves the request in flight. A queued query's
    /// error is the request's.
    fn settle<T>(&mut self, r: Result<T>) -> Result<T> {
        let r = match (self.queued_error.take(), r) {
            (Some(e), Ok(_)) => Err(anyhow::Error::from(e).context("postgres: a queued statement")),
            (_, r) => r,
        };
        if r.is_ok() || r.as_ref().err().is_some_and(|e| error_code(e).is_some()) {
            self.in_flight = false;
        }
        r
    }

    /// Sends what is in `out`, a queued BEGIN first.
    fn send(&mut self) -> Result<()> {
        let r = self.stream.write_all(&self.out);
        self.out.clear();
        self.queued = false;
        r.map_err(|e| self.io_error(e, "writing to the server"))
    }

    /// Writes BEGIN to go out with the next request, in the same write:
    /// one round trip less. It is sent in the extended protocol with no
    /// Sync of its own, so the server answers it and the request in one
    /// reply (a ReadyForQuery flushes the server's output: a BEGIN sent
    /// as a simple query would come back on its own, and cost a read),
    /// and a BEGIN that fails makes the server skip the request, whose
    /// error it then is.
    pub fn queue_begin(&mut self) -> Result<()> {
        if !self.queued {
            frontend::parse("", "BEGIN", std::iter::empty(), &mut self.out)?;
            frontend::bind(
                "",
                "",
                std::iter::empty(),
                std::iter::empty::<()>(),
                |_, _| Ok(postgres_protocol::IsNull::No),
                std::iter::empty(),
                &mut self.out,
            )
            .map_err(|_| anyhow!("postgres: writing BEGIN"))?;
            frontend::execute("", 0, &mut self.out)?;
            self.queued = true;
        }
        Ok(())
    }

    /// Before a simple query: a queued BEGIN is closed by a Sync (the
    /// server would skip a simple query after an extended one's error
    /// until a Sync), and that part's reply, up to its ReadyForQuery, is
    /// read first (`absorb`).
    fn sync_queued(&mut self) -> bool {
        if self.queued {
            frontend::sync(&mut self.out);
        }
        self.queued
    }

    /// Reads the reply of a queued BEGIN closed by [`Conn::sync_queued`],
    /// keeping its error.
    fn absorb(&mut self) -> Result<()> {
        loop {
            let (tag, body) = self.message()?;
            match tag {
                b'E' if self.queued_error.is_none() => {
                    self.queued_error = Some(codec::server_error(&self.buf[body]));
                }
                b'Z' => return Ok(()),
                _ => {}
            }
        }
    }

    /// An I/O error as the caller wants it: a timeout named as one (the
    /// OS says "Resource temporarily unavailable").
    fn io_error(&self, e: std::io::Error, what: &str) -> anyhow::Error {
        match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => anyhow!(
                "postgres: the server sent nothing for {:.0} s while a reply was due (stopped, or cut off); connection closed",
                self.timeout.as_secs_f64()
            ),
            _ => anyhow::Error::new(e).context(format!("postgres: {what}")),
        }
    }

    /// Makes at least `n` unread bytes available in `buf`.
    #[inline]
    fn fill(&mut self, n: usize) -> Result<()> {
        if self.end - self.start >= n {
            return Ok(());
        }
        self.refill(n)
    }

    /// Reads from the server until `n` unread bytes are in `buf`.
    fn refill(&mut self, n: usize) -> Result<()> {
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        if self.buf.len() < n {
            self.buf.resize(n, 0);
        }
        while self.end < n {
            if let Some(d) = self.deadline {
                // The start as a whole is bounded, not only each read.
                let left = d.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    bail!(
                        "postgres: the connection did not start within {:.0} s",
                        self.timeout.as_secs_f64()
                    );
                }
                self.stream
                    .set_timeout(left)
                    .map_err(|e| self.io_error(e, "setting a timeout"))?;
            }
            let k = match self.stream.read(&mut self.buf[self.end..]) {
                Ok(k) => k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.io_error(e, "reading from the server")),
            };
            if k == 0 {
                bail!("postgres: the server closed the connection");
            }
            self.end += k;
        }
        Ok(())
    }

    /// Reads one message: its type and where its body lies in `buf`
    /// (valid until the next read).
    fn message(&mut self) -> Result<(u8, Range<usize>)> {
        self.fill(5)?;
        let h = &self.buf[self.start..self.start + 5];
        let tag = h[0];
        let len = u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize;
        if len < 4 {
            bail!(
                "postgres: a message of length {len} from the server: its replies are out of step"
            );
        }
        let most = if tag == b'D' {
            self.limits.message
        } else {
            MAX_OTHER.min(self.limits.message)
        };
        if len > most {
            bail!("postgres: the server sent a message of more than {most} bytes");
        }
        self.fill(1 + len)?;
        let body = self.start + 5..self.start + 1 + len;
        self.start += 1 + len;
        Ok((tag, body))
    }

    /// Reads the rest of a reply after the server's error, up to its
    /// ReadyForQuery, and returns the error.
    fn error_reply(&mut self, body: Range<usize>) -> Result<()> {
        let e = codec::server_error(&self.buf[body]);
        loop {
            match self.message() {
                Ok((b'Z', _)) => return Err(e.into()),
                Ok(_) => {}
                Err(_) => {
                    // A FATAL error, then the server closed the
                    // connection: its error is the one to give.
                    self.broken = true;
                    return Err(e.into());
                }
            }
        }
    }

    /// Sends a simple query and reads its reply: rows counted, each
    /// handed to `rows` as text when given; the affected rows are
    /// [`Conn::affected_rows`]. Several statements may be sent at once
    /// (SET, DDL, BEGIN, COMMIT…).
    pub fn simple(&mut self, sql: &str, mut rows: Option<Rows<'_>>) -> Result<u64> {
        self.request()?;
        let mark = self.out.len();
        let begun = self.sync_queued();
        if let Err(e) = frontend::query(sql, &mut self.out) {
            // Nothing is sent (a NUL in the text): what was queued stays.
            self.out.truncate(mark);
            self.in_flight = false;
            return Err(anyhow::Error::new(e).context(format!("postgres: {sql}")));
        }
        let r = (|| {
            self.send()?;
            if begun {
                self.absorb()?;
            }
            let (mut n, mut bytes) = (0u64, 0u64);
            self.affected = 0;
            loop {
                let (tag, body) = self.message()?;
                match tag {
                    b'D' => {
                        n += 1;
                        bytes += row_cost(&self.buf[body.clone()]);
                        self.check_result(bytes)?;
                        if let Some(f) = rows.as_deref_mut() {
                            codec::text_row(&self.buf[body], &mut self.row)?;
                            f(&mut self.row);
                        }
                    }
                    b'C' => self.affected = codec::affected(&self.buf[body]),
                    b'E' => {
                        self.error_reply(body)?;
                    }
                    b'G' => {
                        // COPY FROM STDIN: not spoken; the server then
                        // sends its error and ReadyForQuery.
                        frontend::copy_fail("COPY is not supported here", &mut self.out)?;
                        self.send()?;
                    }
                    b'Z' => return Ok(n),
                    // Row descriptions, empty queries, COPY TO's data,
                    // notices, parameter changes and notifications.
                    _ => {}
                }
            }
        })();
        self.settle(r)
    }

    /// Runs statements without parameters, keeping no row.
    pub fn batch(&mut self, sql: &str) -> Result<()> {
        self.simple(sql, None).map(|_| ())
    }

    /// Refuses a result past [`Limits::result`].
    fn check_result(&self, bytes: u64) -> Result<()> {
        if bytes > self.limits.result {
            bail!(
                "postgres: the server sent more than {} bytes of rows in one result",
                self.limits.result
            );
        }
        Ok(())
    }

    /// The prepared statement for `sql`: found by the text's address
    /// (the workloads build their texts once), checked against the text;
    /// prepared on first use (Parse and Describe in one write).
    fn stmt(&mut self, sql: &str) -> Result<usize> {
        let at = sql.as_ptr() as usize;
        if let Some(i) = self
            .stmts
            .iter()
            .position(|s| s.at == at && s.sql == sql)
            .or_else(|| self.stmts.iter().position(|s| s.sql == sql))
        {
            self.stmts[i].at = at;
            return Ok(i);
        }
        let name = format!("a{}", self.next_name);
        let mark = self.out.len();
        if let Err(e) = frontend::parse(&name, sql, std::iter::empty(), &mut self.out)
            .and_then(|_| frontend::describe(b'S', &name, &mut self.out))
        {
            // Nothing is sent (a NUL in the text): what was queued stays.
            self.out.truncate(mark);
            self.in_flight = false;
            return Err(e.into());
        }
        self.next_name += 1;
        if self.stmts.len() >= MAX_STMTS {
            let old = self.stmts.remove(0);
            frontend::close(b'S', &old.name, &mut self.out)?;
        }
        frontend::sync(&mut self.out);
        self.send()?;
        let (mut params, mut cols) = (Vec::new(), Vec::new());
        loop {
            let (tag, body) = self.message()?;
            let b = &self.buf[body.clone()];
            match tag {
                b't' => params = codec::param_types(b)?,
                b'T' => cols = codec::column_types(b)?,
                b'E' => {
                    self.error_reply(body)?;
                }
                b'Z' => break,
                // ParseComplete, BindComplete and CommandComplete (a
                // queued BEGIN's), CloseComplete, NoData, notices.
                _ => {}
            }
        }
        let formats = cols.iter().map(|&t| codec::result_format(t)).collect();
        self.stmts.push(Stmt {
            sql: sql.to_string(),
            at,
            name,
            params,
            cols,
            formats,
        });
        Ok(self.stmts.len() - 1)
    }

    /// Executes `sql` as a prepared statement with `params`, handing each
    /// row to `rows` in a vector reused from row to row (`rows` may take
    /// cells out of it): Bind, Execute and Sync in one write, the reply
    /// read to its ReadyForQuery.
    pub fn exec_each(
        &mut self,
        sql: &str,
        params: &[Val<'_>],
        rows: Option<Rows<'_>>,
    ) -> Result<()> {
        self.request()?;
        let r = self.exec_inner(sql, params, rows);
        self.settle(r)
    }

    fn exec_inner(
        &mut self,
        sql: &str,
        params: &[Val<'_>],
        mut rows: Option<Rows<'_>>,
    ) -> Result<()> {
        let i = match self.stmt(sql) {
            Ok(i) => i,
            Err(e) => return Err(e.context(format!("preparing: {sql}"))),
        };
        let s = &self.stmts[i];
        if s.params.len() != params.len() {
            // Nothing is sent: the connection stays usable.
            self.in_flight = false;
            bail!(
                "postgres: statement takes {} parameters, {} given: {sql}",
                s.params.len(),
                params.len()
            );
        }
        let mark = self.out.len();
        if let Err(e) = codec::bind(&s.name, &s.params, params, &s.formats, &mut self.out) {
            // What was queued stays for the next request.
            self.out.truncate(mark);
            self.in_flight = false;
            return Err(e.context(format!("postgres: {sql}")));
        }
        frontend::execute("", 0, &mut self.out)?;
        frontend::sync(&mut self.out);
        self.send()?;
        self.affected = 0;
        let mut bytes = 0u64;
        loop {
            let (tag, body) = self.message()?;
            match tag {
                b'D' => {
                    bytes += row_cost(&self.buf[body.clone()]);
                    self.check_result(bytes)?;
                    if let Some(f) = rows.as_deref_mut() {
                        let cols = &self.stmts[i].cols;
                        codec::binary_row(&self.buf[body], cols, &mut self.row)?;
                        f(&mut self.row);
                    }
                }
                b'C' => self.affected = codec::affected(&self.buf[body]),
                b'E' => self.error_reply(body)?,
                b'Z' => return Ok(()),
                // ParseComplete and BindComplete (a queued BEGIN's too),
                // notices, parameter changes.
                _ => {}
            }
        }
    }

    /// Rows affected by the last statement (its command tag's count).
    pub fn affected_rows(&self) -> u64 {
        self.affected
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // Terminate; the server closes the connection. Not on a
        // connection that broke off.
        if self.in_flight {
            return;
        }
        self.out.clear();
        frontend::terminate(&mut self.out);
        let _ = self.stream.write_all(&self.out);
    }
}

#[cfg(test)]
mod tests;
