//! The MariaDB client protocol for the measured path: a connection that
//! speaks just what a benchmark client needs — `mysql_native_password`
//! login, text queries, and binary-protocol prepared statements — with no
//! allocation per statement beyond the cells it returns.
//!
//! Why not the `mysql` crate here (it still serves the admin connection):
//! on LinkBench its per-statement work (parameter and row values boxed
//! one by one, column definitions parsed into owned structures on every
//! execution, a statement cache keyed by SipHash of the text, a fresh
//! result iterator) made ampbench's client cost 10 µs of user CPU per
//! request, against a floor of about 2 µs; issue 17 asks for half of the
//! reference Java client's cost. This module keeps one read buffer and
//! one write buffer per connection, prepared statements in a short list
//! found by the SQL text's address, and reads column types straight out
//! of the column definition packets.
//!
//! Protocol references: MariaDB's "Client/Server Protocol" pages
//! (handshake v10, HandshakeResponse41, OK/ERR/EOF packets,
//! COM_STMT_PREPARE/EXECUTE and the binary result set).

#![warn(missing_docs)]

// The core crate's modules, under the names the code has always used
// (`crate::sqlval` is ampbench-core's `sqlval`).
use ampbench_core::sqlval;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::ops::Range;
use std::os::unix::net::UnixStream;
use std::path::Path;

use anyhow::{Context, Result, bail};

use ampbench_core::sqlval::{Cell, Val};

mod codec;
mod login;

use codec::{binary_row, column_type, le, lenenc, put_params, text_row};

/// SERVER_MORE_RESULTS_EXISTS in an OK or EOF packet's status.
const MORE_RESULTS: u16 = 0x0008;
/// The most statements a connection keeps prepared.
const MAX_STMTS: usize = 256;
/// What a connection takes from a server before it refuses the rest as
/// not believable: a target ampbench did not start is not trusted with
/// this process's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The longest packet, its parts joined (`max-packet=` in a
    /// `mysql://` URL).
    pub packet: usize,
    /// The most bytes of rows one result may bring (`max-result=`).
    pub result: u64,
}

impl Default for Limits {
    /// 64 MiB packets (a workload's longest row is far shorter) and
    /// 256 MiB results (LinkBench's longest list, 10,000 links, is about
    /// 2 MB).
    fn default() -> Limits {
        Limits {
            packet: 64 << 20,
            result: 256 << 20,
        }
    }
}
/// The most columns a result may have (MariaDB's limit per table).
const MAX_COLUMNS: u64 = 4096;

/// An error the server sent (an ERR packet).
#[derive(Debug)]
pub struct ServerError {
    /// The server's error number (1062 duplicate key, 1213 deadlock…).
    pub code: u16,
    /// SQLSTATE.
    pub state: String,
    /// The message.
    pub message: String,
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ERROR {} ({}): {}", self.code, self.state, self.message)
    }
}

impl std::error::Error for ServerError {}

/// The server error number of `e`, if the server sent it.
pub fn error_code(e: &anyhow::Error) -> Option<u16> {
    e.chain()
        .find_map(|c| c.downcast_ref::<ServerError>().map(|s| s.code))
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    /// TCP under TLS, after the login's SSL request.
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
    /// Nothing: the moment a TCP stream is taken to be wrapped in TLS.
    Closed,
    /// Bytes given in advance as the server's, what is written dropped:
    /// the fuzz targets' server.
    Replay(std::io::Cursor<Vec<u8>>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
            Stream::Replay(s) => s.read(buf),
            Stream::Closed => Err(std::io::ErrorKind::NotConnected.into()),
        }
    }
}

impl Stream {
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
            Stream::Closed => Err(std::io::ErrorKind::NotConnected.into()),
        }
    }

    /// Gives up a read or write after `t` (None: waits as long as it
    /// takes).
    fn set_timeout(&self, t: Option<std::time::Duration>) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => {
                s.set_read_timeout(t)?;
                s.set_write_timeout(t)
            }
            Stream::Unix(s) => {
                s.set_read_timeout(t)?;
                s.set_write_timeout(t)
            }
            Stream::Tls(s) => {
                s.sock.set_read_timeout(t)?;
                s.sock.set_write_timeout(t)
            }
            Stream::Replay(_) | Stream::Closed => Ok(()),
        }
    }
}

/// An I/O error as the reader of a message wants it: a timeout named as
/// one (the OS says "Resource temporarily unavailable").
fn io_error(e: std::io::Error, what: &str, timeout: Option<std::time::Duration>) -> anyhow::Error {
    match (e.kind(), timeout) {
        (std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut, Some(t)) => {
            anyhow::anyhow!(
                "mariadb: {what}: no answer within {} s (--server-timeout)",
                t.as_secs_f64()
            )
        }
        _ => anyhow::Error::new(e).context(format!("mariadb: {what}")),
    }
}

/// What receives a result set's rows, one at a time.
pub type Rows<'a> = &'a mut dyn FnMut(&mut Vec<Cell>);

/// Where to connect.
pub enum Addr<'a> {
    /// A TCP address (127.0.0.1 and a port for a server ampbench
    /// started; a target's resolved address).
    Tcp(std::net::SocketAddr),
    /// A Unix socket.
    Socket(&'a Path),
}

/// TLS for a TCP connection: the client configuration and the name the
/// server's certificate must carry.
#[derive(Clone)]
pub struct TlsTo {
    /// The configuration (roots, verification).
    pub config: std::sync::Arc<rustls::ClientConfig>,
    /// The server's name as the certificate must carry it.
    pub name: rustls::pki_types::ServerName<'static>,
}

/// A prepared statement: its text (and that text's address, the fast
/// lookup), the server's id, and its parameter count.
struct Stmt {
    sql: String,
    at: usize,
    id: u32,
    params: usize,
    /// Result column types and unsigned flags, as last sent by the
    /// server (at PREPARE or at an execution that sent them).
    cols: Vec<(u8, bool)>,
}

/// One connection.
pub struct Conn {
    stream: Stream,
    /// The packet being written (header, then payload).
    out: Vec<u8>,
    /// Bytes read from the server: `buf[start..end]` not yet taken as a
    /// packet. A response is usually read by one system call and its
    /// packets parsed where they lie, with no copy.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Where the last packet's payload lies in `buf`, unless it came in
    /// parts (16 MB or more): then it is in `joined`.
    pkt: Range<usize>,
    joined: Option<Vec<u8>>,
    seq: u8,
    stmts: Vec<Stmt>,
    affected: u64,
    /// Column types and unsigned flags of the result being read.
    cols: Vec<(u8, bool)>,
    /// The row being decoded, reused from row to row.
    row: Vec<Cell>,
    /// Both ends agreed on MariaDB's metadata caching: an execution sends
    /// its column definitions only when they changed.
    cache_metadata: bool,
    /// A request was sent and its response is not all read: set while a
    /// request is in flight. An error that leaves it set (the
    /// connection broke, or the server sent what could not be read)
    /// leaves packets of the old response unread, so the connection is
    /// refused from then on rather than read out of step.
    in_flight: bool,
    /// How long a read or write may wait.
    timeout: Option<std::time::Duration>,
    /// What it takes from the server.
    limits: Limits,
}

impl Conn {
    /// Connects and logs in as `user` to database `db` (empty: none),
    /// under TLS when `tls` is given (a server that does not offer it is
    /// refused); every read and write gives up after `timeout` (None:
    /// waits as long as it takes). `public_key_request`: without TLS, a
    /// `caching_sha2_password` full authentication may ask the server for
    /// its RSA key (which nothing authenticates; MySQL's
    /// `--get-server-public-key`).
    pub fn connect(
        addr: Addr<'_>,
        user: &str,
        password: &str,
        db: &str,
        timeout: Option<std::time::Duration>,
        tls: Option<&TlsTo>,
        public_key_request: bool,
    ) -> Result<Conn> {
        let stream = match addr {
            Addr::Tcp(to) => {
                let s = match timeout {
                    Some(t) => TcpStream::connect_timeout(&to, t)?,
                    None => TcpStream::connect(to)?,
                };
                s.set_nodelay(true)?;
                Stream::Tcp(s)
            }
            Addr::Socket(p) => Stream::Unix(UnixStream::connect(p)?),
        };
        stream.set_timeout(timeout)?;
        let mut c = Conn::over(stream, timeout);
        c.in_flight = true;
        c.login(user, password, db, tls, public_key_request)
            .context("mariadb: logging in")?;
        c.in_flight = false;
        Ok(c)
    }

    /// A connection over `stream`, not yet logged in.
    fn over(stream: Stream, timeout: Option<std::time::Duration>) -> Conn {
        Conn {
            stream,
            out: Vec::with_capacity(4096),
            buf: vec![0; 64 << 10],
            start: 0,
            end: 0,
            pkt: 0..0,
            joined: None,
            seq: 0,
            stmts: Vec::new(),
            affected: 0,
            cols: Vec::new(),
            row: Vec::new(),
            cache_metadata: false,
            in_flight: false,
            timeout,
            limits: Limits::default(),
        }
    }

    /// Sets what the connection takes from the server ([`Limits`]).
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// Begins a request: refused when an earlier one broke off in the
    /// middle of its response.
    fn request(&mut self) -> Result<()> {
        if self.in_flight {
            bail!(
                "mariadb: this connection broke off in the middle of a response and is not used again"
            );
        }
        self.in_flight = true;
        Ok(())
    }

    /// Ends a request: its response is read, or ended by the server's
    /// error (an ERR packet ends a response). Any other error leaves the
    /// request in flight (see [`Conn::request`]).
    fn settle<T>(&mut self, r: Result<T>) -> Result<T> {
        if r.is_ok() || r.as_ref().err().is_some_and(|e| error_code(e).is_some()) {
            self.in_flight = false;
        }
        r
    }

    /// Starts a packet with sequence number `seq`.
    fn begin_packet(&mut self, seq: u8) {
        self.out.clear();
        self.out.extend_from_slice(&[0, 0, 0, seq]);
    }

    /// Sends the packet in `out`, split at 16 MB as the protocol wants.
    fn send(&mut self) -> Result<()> {
        let total = self.out.len() - 4;
        let mut seq = self.out[3];
        if total < 0xff_ffff {
            self.out[..3].copy_from_slice(&(total as u32).to_le_bytes()[..3]);
            self.stream
                .write_all(&self.out)
                .map_err(|e| io_error(e, "writing to the server", self.timeout))?;
            self.seq = seq.wrapping_add(1);
            return Ok(());
        }
        let payload = self.out.split_off(4);
        let mut chunks = payload.chunks(0xff_ffff).peekable();
        let mut last_full = false;
        while let Some(ch) = chunks.next() {
            let mut h = (ch.len() as u32).to_le_bytes();
            h[3] = seq;
            self.stream
                .write_all(&h)
                .and_then(|_| self.stream.write_all(ch))
                .map_err(|e| io_error(e, "writing to the server", self.timeout))?;
            seq = seq.wrapping_add(1);
            last_full = ch.len() == 0xff_ffff && chunks.peek().is_none();
        }
        if last_full {
            self.stream
                .write_all(&[0, 0, 0, seq])
                .map_err(|e| io_error(e, "writing to the server", self.timeout))?;
            seq = seq.wrapping_add(1);
        }
        self.seq = seq;
        Ok(())
    }

    /// The payload of the packet last read.
    fn pkt(&self) -> &[u8] {
        match &self.joined {
            Some(j) => j,
            None => &self.buf[self.pkt.clone()],
        }
    }

    /// Makes at least `n` unread bytes available in `buf`.
    /// Usually the bytes are there already (a response is read at once):
    /// that check is inlined into the packet reader, the read is not.
    #[inline]
    fn fill(&mut self, n: usize) -> Result<()> {
        if self.end - self.start >= n {
            return Ok(());
        }
        self.refill(n)
    }

    /// Reads from the server until `n` unread bytes are in `buf`.
    fn refill(&mut self, n: usize) -> Result<()> {
        // Move what is left to the front (usually nothing), and grow the
        // buffer for a packet longer than it.
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        if self.buf.len() < n {
            self.buf.resize(n, 0);
        }
        while self.end < n {
            let k = match self.stream.read(&mut self.buf[self.end..]) {
                Ok(k) => k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_error(e, "reading from the server", self.timeout)),
            };
            if k == 0 {
                bail!("mariadb: the server closed the connection");
            }
            self.end += k;
        }
        Ok(())
    }

    /// Reads one packet (joining the parts of a long one). Each packet
    /// must carry the sequence number that follows the last one, and a
    /// joined packet may not pass [`Limits::packet`].
    fn read_packet(&mut self) -> Result<()> {
        self.joined = None;
        loop {
            self.fill(4)?;
            let h = &self.buf[self.start..self.start + 4];
            let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
            if h[3] != self.seq {
                bail!(
                    "mariadb: packet number {} where {} was due: the server's answers are out of step",
                    h[3],
                    self.seq
                );
            }
            self.seq = h[3].wrapping_add(1);
            if self.joined.as_ref().map_or(0, Vec::len) + len > self.limits.packet {
                bail!(
                    "mariadb: the server sent a packet of more than {} bytes (max-packet= in the URL)",
                    self.limits.packet
                );
            }
            self.start += 4;
            self.fill(len)?;
            let at = self.start..self.start + len;
            self.start += len;
            if len < 0xff_ffff && self.joined.is_none() {
                self.pkt = at;
                return Ok(());
            }
            self.joined
                .get_or_insert_with(Vec::new)
                .extend_from_slice(&self.buf[at]);
            if len < 0xff_ffff {
                return Ok(());
            }
        }
    }

    fn err_packet(&self) -> ServerError {
        let p = self.pkt();
        let code = le(p, 1, 2).unwrap_or(0) as u16;
        let (state, msg) = if p.get(3) == Some(&b'#') && p.len() >= 9 {
            (String::from_utf8_lossy(&p[4..9]).into_owned(), &p[9..])
        } else {
            (String::new(), p.get(3..).unwrap_or(&[]))
        };
        ServerError {
            code,
            state,
            message: String::from_utf8_lossy(msg).into_owned(),
        }
    }

    /// Reads an OK packet's affected rows and status.
    fn ok_packet(&mut self) -> Result<u16> {
        let mut pos = 1;
        self.affected = lenenc(self.pkt(), &mut pos)?;
        lenenc(self.pkt(), &mut pos)?;
        Ok(le(self.pkt(), pos, 2)? as u16)
    }

    /// Reads `n` column definitions and their EOF into `cols`: type and
    /// unsignedness of each.
    fn read_columns(&mut self, n: usize) -> Result<()> {
        self.cols.clear();
        for _ in 0..n {
            self.read_packet()?;
            let c = column_type(self.pkt())?;
            self.cols.push(c);
        }
        if n > 0 {
            self.read_packet()?; // EOF
        }
        Ok(())
    }

    /// Reads one result (OK, ERR, or a result set whose rows, binary or
    /// text, are handed to `rows` one by one in a reused vector);
    /// returns the status flags. `stmt` is the prepared statement
    /// executed, whose column types stand in when the server skips them.
    fn read_result(
        &mut self,
        binary: bool,
        stmt: Option<usize>,
        mut rows: Option<Rows<'_>>,
    ) -> Result<u16> {
        self.read_packet()?;
        match self.pkt().first() {
            Some(0x00) => return self.ok_packet(),
            Some(0xff) => return Err(self.err_packet().into()),
            Some(0xfb) => bail!("mariadb: LOCAL INFILE is not supported"),
            _ => {}
        }
        let mut pos = 0;
        let n = lenenc(self.pkt(), &mut pos)?;
        if n > MAX_COLUMNS {
            bail!("mariadb: a result of {n} columns (at most {MAX_COLUMNS})");
        }
        let n = n as usize;
        let skipped = self.cache_metadata && self.pkt().get(pos) == Some(&0);
        match stmt {
            Some(i) if skipped => {
                // Unchanged since sent: the column count, then the EOF.
                self.cols.clear();
                self.cols.extend_from_slice(&self.stmts[i].cols);
                if self.cols.len() != n {
                    bail!(
                        "mariadb: {n} columns without definitions, {} known",
                        self.cols.len()
                    );
                }
                self.read_packet()?;
                if !is_eof(self.pkt()) {
                    bail!("mariadb: no EOF after a column count without definitions");
                }
            }
            None if skipped => bail!("mariadb: column definitions skipped for a text query"),
            _ => {
                self.read_columns(n)?;
                if let Some(i) = stmt {
                    let s = &mut self.stmts[i];
                    s.cols.clear();
                    s.cols.extend_from_slice(&self.cols);
                }
            }
        }
        let mut taken = 0u64;
        loop {
            self.read_packet()?;
            taken += self.pkt().len() as u64;
            if taken > self.limits.result {
                bail!(
                    "mariadb: a result of more than {} bytes of rows (max-result= in the URL)",
                    self.limits.result
                );
            }
            // The packet's fields borrowed apart from the row and columns,
            // so a row is decoded where it lies.
            let p = match &self.joined {
                Some(j) => j.as_slice(),
                None => &self.buf[self.pkt.clone()],
            };
            if is_eof(p) {
                self.affected = 0;
                return Ok(le(p, 3, 2)? as u16);
            }
            if p.first() == Some(&0xff) {
                return Err(self.err_packet().into());
            }
            if let Some(f) = rows.as_deref_mut() {
                if binary {
                    binary_row(p, &self.cols, &mut self.row)?;
                } else {
                    text_row(p, self.cols.len(), &mut self.row)?;
                }
                f(&mut self.row);
            }
        }
    }

    /// Sends a text query and reads every result, keeping the rows of
    /// none (SET, DDL, BEGIN, COMMIT…).
    pub fn query_drop(&mut self, sql: &str) -> Result<()> {
        self.request()?;
        let r = (|| {
            self.begin_packet(0);
            self.out.push(0x03);
            self.out.extend_from_slice(sql.as_bytes());
            self.send()?;
            while self.read_result(false, None, None)? & MORE_RESULTS != 0 {}
            Ok(())
        })();
        self.settle(r)
    }

    /// Sends a text query and reads its result, each row (text protocol)
    /// handed to `rows`; the affected rows are [`Conn::affected_rows`].
    pub fn query_text(&mut self, sql: &str, rows: Rows<'_>) -> Result<()> {
        self.request()?;
        let r = (|| {
            self.begin_packet(0);
            self.out.push(0x03);
            self.out.extend_from_slice(sql.as_bytes());
            self.send()?;
            let mut status = self.read_result(false, None, Some(rows))?;
            while status & MORE_RESULTS != 0 {
                status = self.read_result(false, None, None)?;
            }
            Ok(())
        })();
        self.settle(r)
    }

    /// The prepared statement for `sql`: found by the text's address (the
    /// workloads build their texts once), checked against the text;
    /// prepared on first use.
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
        if self.stmts.len() >= MAX_STMTS {
            for s in std::mem::take(&mut self.stmts) {
                self.begin_packet(0);
                self.out.push(0x19); // COM_STMT_CLOSE: no reply
                self.out.extend_from_slice(&s.id.to_le_bytes());
                self.send()?;
            }
        }
        self.begin_packet(0);
        self.out.push(0x16);
        self.out.extend_from_slice(sql.as_bytes());
        self.send()?;
        self.read_packet()?;
        if self.pkt().first() == Some(&0xff) {
            return Err(self.err_packet().into());
        }
        let p = self.pkt();
        let id = le(p, 1, 4)? as u32;
        let columns = le(p, 5, 2)? as usize;
        let params = le(p, 7, 2)? as usize;
        for _ in 0..params {
            self.read_packet()?;
        }
        if params > 0 {
            self.read_packet()?; // EOF
        }
        // The result's columns: what an execution that skips its column
        // definitions refers to.
        self.read_columns(columns)?;
        self.stmts.push(Stmt {
            sql: sql.to_string(),
            at,
            id,
            params,
            cols: self.cols.clone(),
        });
        Ok(self.stmts.len() - 1)
    }

    /// Executes `sql` as a prepared statement with `params`; the rows of a
    /// result set are collected into `rows`.
    pub fn exec(
        &mut self,
        sql: &str,
        params: &[Val<'_>],
        rows: Option<&mut Vec<Vec<Cell>>>,
    ) -> Result<()> {
        match rows {
            Some(out) => self.exec_each(sql, params, Some(&mut |r| out.push(std::mem::take(r)))),
            None => self.exec_each(sql, params, None),
        }
    }

    /// Executes `sql` as a prepared statement with `params`, handing each
    /// row of a result set to `rows` in a vector reused from row to row
    /// (`rows` may take cells out of it).
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

    fn exec_inner(&mut self, sql: &str, params: &[Val<'_>], rows: Option<Rows<'_>>) -> Result<()> {
        let i = self.stmt(sql)?;
        let s = &self.stmts[i];
        if s.params != params.len() {
            // Nothing is sent: the connection stays usable.
            self.in_flight = false;
            bail!(
                "mariadb: statement takes {} parameters, {} given: {sql}",
                s.params,
                params.len()
            );
        }
        let id = s.id;
        self.begin_packet(0);
        self.out.push(0x17);
        self.out.extend_from_slice(&id.to_le_bytes());
        self.out.push(0); // no cursor
        self.out.extend_from_slice(&1u32.to_le_bytes());
        put_params(&mut self.out, params);
        self.send()?;
        let mut status = self.read_result(true, Some(i), rows)?;
        while status & MORE_RESULTS != 0 {
            status = self.read_result(true, None, None)?;
        }
        Ok(())
    }

    /// Rows affected by the last statement (changed rows, not found rows).
    pub fn affected_rows(&self) -> u64 {
        self.affected
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // COM_QUIT; the server closes the connection. Not on a connection
        // that broke off or never logged in (nothing is sent in clear to
        // a server that refused TLS).
        if self.in_flight {
            return;
        }
        self.begin_packet(0);
        self.out.push(0x01);
        let _ = self.send();
    }
}

/// An EOF packet (0xfe and shorter than 9 bytes: a longer 0xfe packet is
/// a row or an auth switch).
fn is_eof(p: &[u8]) -> bool {
    p.first() == Some(&0xfe) && p.len() < 9
}

/// The fuzz target `mywire_login`: `data` is everything a server sends to
/// a login. Returns the error's text, if any; never panics.
pub fn replay_login(data: &[u8]) -> Option<String> {
    let mut c = Conn::over(Stream::Replay(std::io::Cursor::new(data.to_vec())), None);
    c.login("bench", "secret", "ampbench", None, false)
        .err()
        .map(|e| format!("{e:#}"))
}

/// The fuzz target `mywire_results`: after a login (metadata caching on
/// when the first byte is odd), the rest of `data` is everything a server
/// sends to a prepared statement's preparation and two executions, each
/// followed by a text query. Every row is decoded. Returns the last
/// error's text, if any; never panics, and a connection broken off in the
/// middle of a response refuses what follows.
pub fn replay_results(data: &[u8]) -> Option<String> {
    let (&flags, rest) = data.split_first()?;
    let mut c = Conn::over(Stream::Replay(std::io::Cursor::new(rest.to_vec())), None);
    c.cache_metadata = flags & 1 != 0;
    let mut last = None;
    let mut cells = 0usize;
    for _ in 0..2 {
        let r = c.exec_each(
            REPLAY_SQL,
            &[Val::Int(7), Val::Bytes(b"payload")],
            Some(&mut |row: &mut Vec<Cell>| cells += row.len()),
        );
        if let Err(e) = r {
            last = Some(format!("{e:#}"));
        }
        if let Err(e) = c.query_drop("DO 1") {
            last = Some(format!("{e:#}"));
        }
    }
    last
}

/// The statement the results replay prepares.
const REPLAY_SQL: &str = "SELECT id, data FROM t WHERE id = ? AND data <> ?";

#[cfg(test)]
mod tests {
    use super::codec::put_lenenc;
    use super::*;

    /// A scripted server: packets with their sequence numbers.
    struct Script(Vec<u8>);

    impl Script {
        fn packet(&mut self, seq: u8, payload: &[u8]) -> &mut Self {
            self.0
                .extend_from_slice(&(payload.len() as u32).to_le_bytes()[..3]);
            self.0.push(seq);
            self.0.extend_from_slice(payload);
            self
        }
    }

    /// MariaDB 10.11's handshake: protocol 10, version, connection id,
    /// scramble, capabilities (LONG_PASSWORD clear: MariaDB's extended
    /// capabilities, metadata caching among them), plugin name.
    fn handshake() -> Vec<u8> {
        let mut p = vec![10];
        p.extend_from_slice(b"5.5.5-10.11.19-MariaDB\0");
        p.extend_from_slice(&7u32.to_le_bytes());
        p.extend_from_slice(b"abcdefgh\0");
        let caps: u32 = 0xf7fe | (0x81bf << 16);
        p.extend_from_slice(&(caps as u16).to_le_bytes());
        p.push(45);
        p.extend_from_slice(&2u16.to_le_bytes());
        p.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
        p.push(21);
        p.extend_from_slice(&[0; 6]);
        p.extend_from_slice(&0x1du32.to_le_bytes());
        p.extend_from_slice(b"ijklmnopqrst\0");
        p.extend_from_slice(b"mysql_native_password\0");
        p
    }

    fn ok(affected: u8, status: u16) -> Vec<u8> {
        let mut p = vec![0, affected, 0];
        p.extend_from_slice(&status.to_le_bytes());
        p.extend_from_slice(&[0, 0]);
        p
    }

    fn eof() -> Vec<u8> {
        vec![0xfe, 0, 0, 2, 0]
    }

    fn column(name: &str, ty: u8) -> Vec<u8> {
        let mut p = Vec::new();
        for s in ["def", "ampbench", "t", "t", name, name] {
            put_lenenc(&mut p, s.len() as u64);
            p.extend_from_slice(s.as_bytes());
        }
        p.push(0x0c);
        p.extend_from_slice(&63u16.to_le_bytes());
        p.extend_from_slice(&20u32.to_le_bytes());
        p.push(ty);
        p.extend_from_slice(&[0, 0, 0, 0, 0]);
        p
    }

    fn row(id: i64, data: &[u8]) -> Vec<u8> {
        let mut p = vec![0, 0];
        p.extend_from_slice(&id.to_le_bytes());
        put_lenenc(&mut p, data.len() as u64);
        p.extend_from_slice(data);
        p
    }

    /// A login's bytes: the handshake, then OK.
    pub(super) fn login_bytes() -> Vec<u8> {
        let mut s = Script(Vec::new());
        s.packet(0, &handshake()).packet(2, &ok(0, 2));
        s.0
    }

    /// The results replay's bytes: PREPARE's answer, then twice an
    /// execution's two rows and a text query's OK. With `cached`, the
    /// second execution skips its column definitions.
    pub(super) fn results_bytes(cached: bool) -> Vec<u8> {
        let mut s = Script(Vec::new());
        let mut prep = vec![0];
        prep.extend_from_slice(&1u32.to_le_bytes());
        prep.extend_from_slice(&2u16.to_le_bytes());
        prep.extend_from_slice(&2u16.to_le_bytes());
        prep.extend_from_slice(&[0, 0, 0]);
        s.packet(1, &prep)
            .packet(2, &column("?", 8))
            .packet(3, &column("?", 253))
            .packet(4, &eof())
            .packet(5, &column("id", 8))
            .packet(6, &column("data", 252))
            .packet(7, &eof());
        for i in 0..2 {
            let skip = cached && i == 1;
            s.packet(1, if skip { &[2, 0] } else { &[2, 1] });
            let mut seq = 2;
            if !skip {
                s.packet(2, &column("id", 8))
                    .packet(3, &column("data", 252));
                seq = 4;
            }
            s.packet(seq, &eof())
                .packet(seq + 1, &row(1, b"first"))
                .packet(seq + 2, &row(2, b""))
                .packet(seq + 3, &eof());
            s.packet(1, &ok(0, 2));
        }
        let mut out = vec![u8::from(cached)];
        out.extend_from_slice(&s.0);
        out
    }

    #[test]
    fn a_scripted_server_logs_in_and_answers() {
        assert_eq!(replay_login(&login_bytes()), None);
        for cached in [false, true] {
            assert_eq!(replay_results(&results_bytes(cached)), None, "{cached}");
        }
        // Where the fuzz corpus's seeds come from.
        if let Ok(dir) = std::env::var("AMPBENCH_WRITE_SEEDS") {
            let d = std::path::Path::new(&dir);
            std::fs::create_dir_all(d.join("mywire_login")).unwrap();
            std::fs::create_dir_all(d.join("mywire_results")).unwrap();
            std::fs::write(d.join("mywire_login/mariadb-10.11"), login_bytes()).unwrap();
            for cached in [false, true] {
                std::fs::write(
                    d.join(format!("mywire_results/two-rows-cached-{cached}")),
                    results_bytes(cached),
                )
                .unwrap();
            }
        }
    }

    /// Issue 47: a target's packets and results are capped, each cap
    /// its own one-line error naming the URL parameter.
    #[test]
    fn packets_and_results_past_the_limits_are_refused() {
        let r = results_bytes(false);
        for (limits, says) in [
            (
                Limits {
                    packet: 64 << 20,
                    result: 10,
                },
                "max-result",
            ),
            (
                Limits {
                    packet: 8,
                    result: 1 << 20,
                },
                "max-packet",
            ),
        ] {
            let mut c = Conn::over(Stream::Replay(std::io::Cursor::new(r[1..].to_vec())), None);
            c.set_limits(limits);
            let e = c
                .exec_each(REPLAY_SQL, &[Val::Int(1), Val::Null], Some(&mut |_| {}))
                .unwrap_err();
            assert!(format!("{e:#}").contains(says), "{e:#}");
        }
        // Within the default limits, the same bytes read.
        let mut c = Conn::over(Stream::Replay(std::io::Cursor::new(r[1..].to_vec())), None);
        let mut n = 0;
        c.exec_each(REPLAY_SQL, &[Val::Int(1), Val::Null], Some(&mut |_| n += 1))
            .unwrap();
        assert_eq!(n, 2);
    }

    /// Issue 31: what a server may not do. Each is an error, and a
    /// connection left in the middle of a response refuses the next
    /// statement rather than read the old response's packets as its own.
    #[test]
    fn a_server_out_of_step_is_refused_and_poisons_the_connection() {
        // A packet whose sequence number is not the next one.
        let mut bad = login_bytes();
        bad[3] = 5;
        let e = replay_login(&bad).unwrap();
        assert!(e.contains("out of step"), "{e}");
        // A header announcing more continuation than the limit: parts of
        // 16 MB - 1 without end.
        let mut s = Script(Vec::new());
        let part = vec![0u8; 0xff_ffff];
        for seq in 0..17u8 {
            s.packet(seq, &part);
        }
        let e = replay_login(&s.0).unwrap();
        assert!(e.contains("more than"), "{e}");
        // A row cut short in the middle of a result: the statement fails,
        // and so does the next one, without reading.
        let mut r = results_bytes(false);
        let at = r.windows(5).position(|w| w == b"first").unwrap();
        r[at - 1] = 200; // a length past the row
        let mut c = Conn::over(Stream::Replay(std::io::Cursor::new(r[1..].to_vec())), None);
        let e = c
            .exec_each(REPLAY_SQL, &[Val::Int(1), Val::Null], Some(&mut |_| {}))
            .unwrap_err();
        assert!(format!("{e:#}").contains("short row"), "{e:#}");
        let e = c.query_drop("DO 1").unwrap_err();
        assert!(format!("{e:#}").contains("broke off"), "{e:#}");
        // A result of more columns than a table may have.
        let mut s = Script(Vec::new());
        let mut n = vec![0xfd];
        n.extend_from_slice(&[0xff, 0xff, 0xff]);
        s.packet(1, &n);
        let mut c = Conn::over(Stream::Replay(std::io::Cursor::new(s.0)), None);
        let e = c.query_drop("SELECT 1").unwrap_err();
        assert!(format!("{e:#}").contains("columns"), "{e:#}");
    }
}
