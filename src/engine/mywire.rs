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

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use sha1::{Digest, Sha1};

use super::sql::{Cell, Val};

mod caps {
    pub const LONG_PASSWORD: u32 = 1;
    pub const LONG_FLAG: u32 = 4;
    pub const CONNECT_WITH_DB: u32 = 8;
    pub const PROTOCOL_41: u32 = 0x200;
    pub const TRANSACTIONS: u32 = 0x2000;
    pub const SECURE_CONNECTION: u32 = 0x8000;
    pub const MULTI_STATEMENTS: u32 = 0x1_0000;
    pub const MULTI_RESULTS: u32 = 0x2_0000;
    pub const PS_MULTI_RESULTS: u32 = 0x4_0000;
    pub const PLUGIN_AUTH: u32 = 0x8_0000;
}

/// SERVER_MORE_RESULTS_EXISTS in an OK or EOF packet's status.
const MORE_RESULTS: u16 = 0x0008;
/// The most statements a connection keeps prepared.
const MAX_STMTS: usize = 256;
/// utf8mb4_general_ci; workloads set their own with SET NAMES.
const CHARSET: u8 = 45;

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
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Stream {
    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(b),
            Stream::Unix(s) => s.write_all(b),
        }
    }
}

/// Where to connect.
pub enum Addr<'a> {
    /// 127.0.0.1 and a port.
    Tcp(u16),
    /// A Unix socket.
    Socket(&'a Path),
}

/// A prepared statement: its text (and that text's address, the fast
/// lookup), the server's id, and its parameter count.
struct Stmt {
    sql: String,
    at: usize,
    id: u32,
    params: usize,
}

/// One connection.
pub struct Conn {
    r: BufReader<Stream>,
    /// The packet being written (header, then payload).
    out: Vec<u8>,
    /// The payload of the packet last read.
    inp: Vec<u8>,
    seq: u8,
    stmts: Vec<Stmt>,
    affected: u64,
    /// Column types and unsigned flags of the result being read.
    cols: Vec<(u8, bool)>,
}

fn lenenc(b: &[u8], pos: &mut usize) -> Result<u64> {
    let first = *b
        .get(*pos)
        .ok_or_else(|| anyhow!("mariadb: short packet"))?;
    let (n, v) = match first {
        0xfb => (1, 0),
        0xfc => (3, le(b, *pos + 1, 2)?),
        0xfd => (4, le(b, *pos + 1, 3)?),
        0xfe => (9, le(b, *pos + 1, 8)?),
        x => (1, u64::from(x)),
    };
    *pos += n;
    Ok(v)
}

fn le(b: &[u8], at: usize, n: usize) -> Result<u64> {
    let s = b
        .get(at..at + n)
        .ok_or_else(|| anyhow!("mariadb: short packet"))?;
    Ok(s.iter().rev().fold(0u64, |v, &x| (v << 8) | u64::from(x)))
}

fn put_lenenc(out: &mut Vec<u8>, v: u64) {
    match v {
        0..=250 => out.push(v as u8),
        251..=0xffff => {
            out.push(0xfc);
            out.extend_from_slice(&(v as u16).to_le_bytes());
        }
        0x1_0000..=0xff_ffff => {
            out.push(0xfd);
            out.extend_from_slice(&(v as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xfe);
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

/// mysql_native_password: SHA1(pw) XOR SHA1(scramble + SHA1(SHA1(pw))).
fn native_password(password: &str, scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let h1 = Sha1::digest(password.as_bytes());
    let h2 = Sha1::digest(h1);
    let mut h = Sha1::new();
    h.update(scramble);
    h.update(h2);
    let h3 = h.finalize();
    h1.iter().zip(h3.iter()).map(|(a, b)| a ^ b).collect()
}

impl Conn {
    /// Connects and logs in as `user` to database `db`.
    pub fn connect(addr: Addr<'_>, user: &str, password: &str, db: &str) -> Result<Conn> {
        let stream = match addr {
            Addr::Tcp(port) => {
                let s = TcpStream::connect(("127.0.0.1", port))?;
                s.set_nodelay(true)?;
                Stream::Tcp(s)
            }
            Addr::Socket(p) => Stream::Unix(UnixStream::connect(p)?),
        };
        let mut c = Conn {
            r: BufReader::with_capacity(64 << 10, stream),
            out: Vec::with_capacity(4096),
            inp: Vec::with_capacity(4096),
            seq: 0,
            stmts: Vec::new(),
            affected: 0,
            cols: Vec::new(),
        };
        c.login(user, password, db).context("mariadb: logging in")?;
        Ok(c)
    }

    fn login(&mut self, user: &str, password: &str, db: &str) -> Result<()> {
        self.read_packet()?;
        let p = &self.inp;
        if p.first() == Some(&0xff) {
            return Err(self.err_packet().into());
        }
        if p.first() != Some(&10) {
            bail!("unsupported handshake version {:?}", p.first());
        }
        let nul = |from: usize| -> Result<usize> {
            p[from..]
                .iter()
                .position(|&b| b == 0)
                .map(|i| from + i)
                .ok_or_else(|| anyhow!("malformed handshake"))
        };
        let mut pos = nul(1)? + 1 + 4; // version, connection id
        let mut scramble = p.get(pos..pos + 8).context("short handshake")?.to_vec();
        pos += 8 + 1;
        let lower = le(p, pos, 2)? as u32;
        pos += 2 + 1 + 2; // capabilities, charset, status
        let upper = le(p, pos, 2)? as u32;
        let server_caps = lower | (upper << 16);
        pos += 2;
        let data_len = usize::from(*p.get(pos).context("short handshake")?);
        pos += 1 + 10;
        if server_caps & caps::SECURE_CONNECTION != 0 {
            let n = data_len.saturating_sub(8).max(13);
            let part = p.get(pos..pos + n).context("short handshake")?;
            scramble.extend_from_slice(&part[..12.min(part.len())]);
            pos += n;
        }
        let plugin = if server_caps & caps::PLUGIN_AUTH != 0 && pos < p.len() {
            let end = nul(pos).unwrap_or(p.len());
            String::from_utf8_lossy(&p[pos..end]).into_owned()
        } else {
            "mysql_native_password".to_string()
        };
        let want = caps::LONG_PASSWORD
            | caps::LONG_FLAG
            | caps::CONNECT_WITH_DB
            | caps::PROTOCOL_41
            | caps::TRANSACTIONS
            | caps::SECURE_CONNECTION
            | caps::MULTI_STATEMENTS
            | caps::MULTI_RESULTS
            | caps::PS_MULTI_RESULTS
            | caps::PLUGIN_AUTH;
        let token = if plugin == "mysql_native_password" {
            native_password(password, &scramble)
        } else {
            Vec::new() // the server will ask to switch
        };
        self.begin_packet(1);
        self.out
            .extend_from_slice(&(want & server_caps).to_le_bytes());
        self.out.extend_from_slice(&(16u32 << 20).to_le_bytes());
        self.out.push(CHARSET);
        self.out.extend_from_slice(&[0; 23]);
        self.out.extend_from_slice(user.as_bytes());
        self.out.push(0);
        self.out.push(token.len() as u8);
        self.out.extend_from_slice(&token);
        self.out.extend_from_slice(db.as_bytes());
        self.out.push(0);
        self.out.extend_from_slice(b"mysql_native_password\0");
        self.send()?;
        loop {
            self.read_packet()?;
            match self.inp.first() {
                Some(0x00) => return Ok(()),
                Some(0xff) => return Err(self.err_packet().into()),
                Some(0xfe) => {
                    // Auth switch: plugin name, NUL, new scramble.
                    let p = &self.inp[1..];
                    let end = p.iter().position(|&b| b == 0).unwrap_or(p.len());
                    let name = String::from_utf8_lossy(&p[..end]).into_owned();
                    if name != "mysql_native_password" {
                        bail!("the server asks for auth plugin {name}, which is not supported");
                    }
                    let data = &p[(end + 1).min(p.len())..];
                    let data = &data[..20.min(data.len())];
                    let token = native_password(password, data);
                    let seq = self.seq;
                    self.begin_packet(seq);
                    self.out.extend_from_slice(&token);
                    self.send()?;
                }
                other => bail!("unexpected packet {other:?} during login"),
            }
        }
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
            self.r.get_mut().write_all(&self.out)?;
            self.seq = seq.wrapping_add(1);
            return Ok(());
        }
        let payload = self.out.split_off(4);
        let mut chunks = payload.chunks(0xff_ffff).peekable();
        let mut last_full = false;
        while let Some(ch) = chunks.next() {
            let mut h = (ch.len() as u32).to_le_bytes();
            h[3] = seq;
            self.r.get_mut().write_all(&h)?;
            self.r.get_mut().write_all(ch)?;
            seq = seq.wrapping_add(1);
            last_full = ch.len() == 0xff_ffff && chunks.peek().is_none();
        }
        if last_full {
            self.r.get_mut().write_all(&[0, 0, 0, seq])?;
            seq = seq.wrapping_add(1);
        }
        self.seq = seq;
        Ok(())
    }

    /// Reads one packet (joining the parts of a long one) into `inp`.
    fn read_packet(&mut self) -> Result<()> {
        self.inp.clear();
        loop {
            let mut h = [0u8; 4];
            self.r
                .read_exact(&mut h)
                .context("mariadb: reading from the server")?;
            let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
            self.seq = h[3].wrapping_add(1);
            let at = self.inp.len();
            self.inp.resize(at + len, 0);
            self.r
                .read_exact(&mut self.inp[at..])
                .context("mariadb: reading from the server")?;
            if len < 0xff_ffff {
                return Ok(());
            }
        }
    }

    fn err_packet(&self) -> ServerError {
        let p = &self.inp;
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
        self.affected = lenenc(&self.inp, &mut pos)?;
        lenenc(&self.inp, &mut pos)?;
        Ok(le(&self.inp, pos, 2)? as u16)
    }

    fn is_eof(&self) -> bool {
        self.inp.first() == Some(&0xfe) && self.inp.len() < 9
    }

    /// Reads column definitions up to their EOF, keeping type and
    /// unsignedness.
    fn read_columns(&mut self, n: usize) -> Result<()> {
        self.cols.clear();
        for _ in 0..n {
            self.read_packet()?;
            let mut pos = 0;
            for _ in 0..6 {
                let l = lenenc(&self.inp, &mut pos)? as usize;
                pos += l;
            }
            pos += 1 + 2 + 4; // fixed-length marker, charset, length
            let ty = *self
                .inp
                .get(pos)
                .context("mariadb: short column definition")?;
            let flags = le(&self.inp, pos + 1, 2)?;
            self.cols.push((ty, flags & 0x20 != 0));
        }
        if n > 0 {
            self.read_packet()?; // EOF
        }
        Ok(())
    }

    /// Reads one result (OK, ERR, or a result set whose rows go to
    /// `rows`, binary or text); returns the status flags.
    fn read_result(&mut self, binary: bool, mut rows: Option<&mut Vec<Vec<Cell>>>) -> Result<u16> {
        self.read_packet()?;
        match self.inp.first() {
            Some(0x00) => return self.ok_packet(),
            Some(0xff) => return Err(self.err_packet().into()),
            Some(0xfb) => bail!("mariadb: LOCAL INFILE is not supported"),
            _ => {}
        }
        let mut pos = 0;
        let n = lenenc(&self.inp, &mut pos)? as usize;
        self.read_columns(n)?;
        loop {
            self.read_packet()?;
            if self.is_eof() {
                self.affected = 0;
                return Ok(le(&self.inp, 3, 2)? as u16);
            }
            if self.inp.first() == Some(&0xff) {
                return Err(self.err_packet().into());
            }
            if let Some(out) = rows.as_deref_mut() {
                let row = if binary {
                    self.binary_row()?
                } else {
                    self.text_row()?
                };
                out.push(row);
            }
        }
    }

    fn text_row(&self) -> Result<Vec<Cell>> {
        let mut pos = 0;
        let mut row = Vec::with_capacity(self.cols.len());
        for _ in 0..self.cols.len() {
            if self.inp.get(pos) == Some(&0xfb) {
                pos += 1;
                row.push(Cell::Null);
                continue;
            }
            let l = lenenc(&self.inp, &mut pos)? as usize;
            let v = self.inp.get(pos..pos + l).context("mariadb: short row")?;
            pos += l;
            row.push(Cell::Bytes(v.to_vec()));
        }
        Ok(row)
    }

    fn binary_row(&self) -> Result<Vec<Cell>> {
        let p = &self.inp;
        let n = self.cols.len();
        let bitmap = 1..1 + (n + 7 + 2) / 8;
        let mut pos = bitmap.end;
        let mut row = Vec::with_capacity(n);
        for (i, &(ty, unsigned)) in self.cols.iter().enumerate() {
            let bit = i + 2;
            let nulls = p.get(bitmap.clone()).context("mariadb: short row")?;
            if nulls[bit / 8] & (1 << (bit % 8)) != 0 {
                row.push(Cell::Null);
                continue;
            }
            let fixed = |size: usize, pos: &mut usize| -> Result<u64> {
                let v = le(p, *pos, size)?;
                *pos += size;
                Ok(v)
            };
            let int = |v: u64, bits: u32| -> i64 {
                if unsigned || bits == 64 {
                    v as i64
                } else {
                    let shift = 64 - bits;
                    ((v << shift) as i64) >> shift
                }
            };
            let cell = match ty {
                1 => Cell::Int(int(fixed(1, &mut pos)?, 8)),
                2 | 13 => Cell::Int(int(fixed(2, &mut pos)?, 16)),
                3 | 9 => Cell::Int(int(fixed(4, &mut pos)?, 32)),
                8 => Cell::Int(int(fixed(8, &mut pos)?, 64)),
                4 => Cell::Text(f32::from_bits(fixed(4, &mut pos)? as u32).to_string()),
                5 => Cell::Text(f64::from_bits(fixed(8, &mut pos)?).to_string()),
                6 => Cell::Null,
                7 | 10 | 11 | 12 => {
                    let l = fixed(1, &mut pos)? as usize;
                    let v = p.get(pos..pos + l).context("mariadb: short row")?;
                    pos += l;
                    Cell::Text(temporal(ty, v))
                }
                _ => {
                    let l = lenenc(p, &mut pos)? as usize;
                    let v = p.get(pos..pos + l).context("mariadb: short row")?;
                    pos += l;
                    Cell::Bytes(v.to_vec())
                }
            };
            row.push(cell);
        }
        Ok(row)
    }

    /// Sends a text query and reads every result, keeping the rows of
    /// none (SET, DDL, BEGIN, COMMIT…).
    pub fn query_drop(&mut self, sql: &str) -> Result<()> {
        self.begin_packet(0);
        self.out.push(0x03);
        self.out.extend_from_slice(sql.as_bytes());
        self.send()?;
        while self.read_result(false, None)? & MORE_RESULTS != 0 {}
        Ok(())
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
        if self.inp.first() == Some(&0xff) {
            return Err(self.err_packet().into());
        }
        let id = le(&self.inp, 1, 4)? as u32;
        let columns = le(&self.inp, 5, 2)? as usize;
        let params = le(&self.inp, 7, 2)? as usize;
        for n in [params, columns] {
            for _ in 0..n {
                self.read_packet()?;
            }
            if n > 0 {
                self.read_packet()?; // EOF
            }
        }
        self.stmts.push(Stmt {
            sql: sql.to_string(),
            at,
            id,
            params,
        });
        Ok(self.stmts.len() - 1)
    }

    /// Executes `sql` as a prepared statement with `params`; the rows of a
    /// result set go to `rows`.
    pub fn exec(
        &mut self,
        sql: &str,
        params: &[Val<'_>],
        rows: Option<&mut Vec<Vec<Cell>>>,
    ) -> Result<()> {
        let i = self.stmt(sql)?;
        let s = &self.stmts[i];
        if s.params != params.len() {
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
        if !params.is_empty() {
            let at = self.out.len();
            self.out.resize(at + params.len().div_ceil(8), 0);
            for (k, p) in params.iter().enumerate() {
                if matches!(p, Val::Null) {
                    self.out[at + k / 8] |= 1 << (k % 8);
                }
            }
            self.out.push(1); // types follow
            for p in params {
                let ty: u8 = match p {
                    Val::Null => 6,
                    Val::Int(_) => 8,
                    Val::Bytes(_) | Val::Text(_) => 253,
                };
                self.out.extend_from_slice(&[ty, 0]);
            }
            for p in params {
                match p {
                    Val::Null => {}
                    Val::Int(v) => self.out.extend_from_slice(&v.to_le_bytes()),
                    Val::Bytes(b) => {
                        put_lenenc(&mut self.out, b.len() as u64);
                        self.out.extend_from_slice(b);
                    }
                    Val::Text(t) => {
                        put_lenenc(&mut self.out, t.len() as u64);
                        self.out.extend_from_slice(t.as_bytes());
                    }
                }
            }
        }
        self.send()?;
        let mut status = self.read_result(true, rows)?;
        while status & MORE_RESULTS != 0 {
            status = self.read_result(true, None)?;
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
        // COM_QUIT; the server closes the connection.
        self.begin_packet(0);
        self.out.push(0x01);
        let _ = self.send();
    }
}

/// A binary-protocol date, datetime, timestamp or time as text.
fn temporal(ty: u8, v: &[u8]) -> String {
    let g = |i: usize| v.get(i).copied().unwrap_or(0) as u32;
    if ty == 11 {
        let days = u32::from_le_bytes([g(1) as u8, g(2) as u8, g(3) as u8, g(4) as u8]);
        let sign = if g(0) == 1 { "-" } else { "" };
        return format!("{sign}{:02}:{:02}:{:02}", days * 24 + g(5), g(6), g(7));
    }
    let year = g(0) | (g(1) << 8);
    let date = format!("{year:04}-{:02}-{:02}", g(2), g(3));
    if ty == 10 {
        date
    } else {
        format!("{date} {:02}:{:02}:{:02}", g(4), g(5), g(6))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_encode_and_decode() {
        for v in [
            0u64,
            250,
            251,
            0xffff,
            0x1_0000,
            0xff_ffff,
            0x100_0000,
            u64::MAX,
        ] {
            let mut b = Vec::new();
            put_lenenc(&mut b, v);
            let mut pos = 0;
            assert_eq!(lenenc(&b, &mut pos).unwrap(), v);
            assert_eq!(pos, b.len());
        }
    }

    #[test]
    fn native_password_matches_a_token_computed_elsewhere() {
        // Python: h1 = sha1(b"secret"); h3 = sha1(bytes(range(1, 21)) +
        // sha1(h1)); bytes(a ^ b for a, b in zip(h1, h3)).hex()
        let scramble: Vec<u8> = (1..=20).collect();
        let t = native_password("secret", &scramble);
        let hex: String = t.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "b32bb3a583e1340c0a1108d58b1be49781ad8c2f");
        assert!(native_password("", &scramble).is_empty());
    }
}
