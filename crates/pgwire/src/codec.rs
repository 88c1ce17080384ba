//! Values to and from the wire: parameters bound in the format their
//! type takes, rows decoded where they lie, and the few backend messages
//! read on the measured path. Nothing the server sends is trusted: every
//! length is checked against what is there.

use anyhow::{Result, anyhow, bail};
use bytes::{BufMut, BytesMut};
use postgres_protocol::IsNull;
use postgres_protocol::message::frontend;

use ampbench_core::sqlval::{Cell, Val};

use super::ServerError;

/// Type OIDs (pg_type.dat) this client decodes in binary.
mod oid {
    pub const BOOL: u32 = 16;
    pub const BYTEA: u32 = 17;
    pub const INT8: u32 = 20;
    pub const INT2: u32 = 21;
    pub const INT4: u32 = 23;
    pub const OID: u32 = 26;
    pub const FLOAT8: u32 = 701;
}

/// Text (0) or binary (1).
const TEXT: i16 = 0;
const BINARY: i16 = 1;

/// The format a result column of type `t` is asked in: binary for the
/// types decoded here, text for the rest (a NUMERIC or a timestamp comes
/// as the server writes it).
pub(super) fn result_format(t: u32) -> i16 {
    match t {
        oid::BOOL | oid::BYTEA | oid::INT8 | oid::INT2 | oid::INT4 | oid::OID | oid::FLOAT8 => {
            BINARY
        }
        _ => TEXT,
    }
}

/// The format a parameter of type `t` holding `v` is sent in: an integer
/// in binary into an integer column, bytes or text in binary into bytea
/// (its raw bytes: bytea's text input would read backslashes as
/// escapes); every other value as text, which the server reads with its
/// type's input function.
fn param_format(t: u32, v: &Val<'_>) -> i16 {
    match (v, t) {
        (Val::Int(_), oid::INT2 | oid::INT4 | oid::INT8)
        | (Val::Bytes(_) | Val::Text(_), oid::BYTEA) => BINARY,
        _ => TEXT,
    }
}

/// Writes a Bind of statement `name` (types `types`) with `params` to
/// `out`, asking the result columns in `formats`.
pub(super) fn bind(
    name: &str,
    types: &[u32],
    params: &[Val<'_>],
    formats: &[i16],
    out: &mut BytesMut,
) -> Result<()> {
    let r = frontend::bind(
        "",
        name,
        types.iter().zip(params).map(|(&t, v)| param_format(t, v)),
        types.iter().zip(params),
        |(&t, v), out| put_param(t, v, out),
        formats.iter().copied(),
        out,
    );
    match r {
        Ok(()) => Ok(()),
        Err(frontend::BindError::Conversion(e)) => Err(anyhow!("{e}")),
        Err(frontend::BindError::Serialization(e)) => Err(e.into()),
    }
}

/// One parameter's bytes, in [`param_format`]'s format.
fn put_param(
    t: u32,
    v: &Val<'_>,
    out: &mut BytesMut,
) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
    let range = |what: &str| format!("{v:?} is out of range for a parameter of type {what}");
    match (v, t) {
        (Val::Null, _) => return Ok(IsNull::Yes),
        (Val::Int(i), oid::INT2) => out.put_i16(i16::try_from(*i).map_err(|_| range("smallint"))?),
        (Val::Int(i), oid::INT4) => out.put_i32(i32::try_from(*i).map_err(|_| range("integer"))?),
        (Val::Int(i), oid::INT8) => out.put_i64(*i),
        (Val::Int(i), _) => out.put_slice(i.to_string().as_bytes()),
        (Val::Bytes(b), _) => out.put_slice(b),
        (Val::Text(s), _) => out.put_slice(s.as_bytes()),
    }
    Ok(IsNull::No)
}

/// A big-endian integer of `n` bytes at `at` in `b`, or an error naming
/// the message.
fn be(b: &[u8], at: usize, n: usize, what: &str) -> Result<u64> {
    let s = b
        .get(at..at + n)
        .ok_or_else(|| anyhow!("postgres: a {what} message from the server is cut short"))?;
    Ok(s.iter().fold(0u64, |a, &x| a << 8 | x as u64))
}

/// ParameterDescription: the parameters' type OIDs.
pub(super) fn param_types(b: &[u8]) -> Result<Vec<u32>> {
    let n = be(b, 0, 2, "parameter description")? as usize;
    (0..n)
        .map(|i| Ok(be(b, 2 + 4 * i, 4, "parameter description")? as u32))
        .collect()
}

/// RowDescription: the columns' type OIDs.
pub(super) fn column_types(b: &[u8]) -> Result<Vec<u32>> {
    let n = be(b, 0, 2, "row description")? as usize;
    let mut at = 2;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        // name NUL, table OID, column number, type OID, size, modifier,
        // format.
        let nul = b
            .get(at..)
            .and_then(|r| r.iter().position(|&c| c == 0))
            .ok_or_else(|| anyhow!("postgres: a row description from the server is cut short"))?;
        at += nul + 1;
        out.push(be(b, at + 6, 4, "row description")? as u32);
        at += 18;
    }
    if at > b.len() {
        bail!("postgres: a row description from the server is cut short");
    }
    Ok(out)
}

/// The fields of a DataRow: each column's bytes, None for NULL.
fn fields(b: &[u8]) -> Result<impl Iterator<Item = Result<Option<&[u8]>>>> {
    let n = be(b, 0, 2, "data row")? as usize;
    let mut at = 2;
    Ok((0..n).map(move |_| {
        let len = be(b, at, 4, "data row")? as u32 as i32;
        at += 4;
        if len < 0 {
            return Ok(None);
        }
        let v = b
            .get(at..at + len as usize)
            .ok_or_else(|| anyhow!("postgres: a data row from the server is cut short"))?;
        at += len as usize;
        Ok(Some(v))
    }))
}

/// A DataRow of a prepared statement, its columns of types `cols` in
/// [`result_format`]'s formats, into `row`, which ends with one cell per
/// column. A bytea column whose cell already holds bytes (the previous
/// row's, when the caller reuses `row`) is copied into that buffer, so
/// rows after the first allocate nothing for it; an integer is written
/// into the cell in place.
pub(super) fn binary_row(b: &[u8], cols: &[u32], row: &mut Vec<Cell>) -> Result<()> {
    let n = be(b, 0, 2, "data row")? as usize;
    if n != cols.len() {
        bail!(
            "postgres: a row of {n} columns where its description has {}",
            cols.len()
        );
    }
    row.resize_with(n, || Cell::Null);
    let mut at = 2;
    for (&t, cell) in cols.iter().zip(row.iter_mut()) {
        let len = be(b, at, 4, "data row")? as u32 as i32;
        at += 4;
        if len < 0 {
            *cell = Cell::Null;
            continue;
        }
        let v = b
            .get(at..at + len as usize)
            .ok_or_else(|| anyhow!("postgres: a data row from the server is cut short"))?;
        at += len as usize;
        *cell = match t {
            oid::INT8 => Cell::Int(int(v, 8)?),
            oid::INT4 => Cell::Int(int(v, 4)?),
            oid::INT2 => Cell::Int(int(v, 2)?),
            oid::OID => Cell::Int(int(v, 4)? as u32 as i64),
            oid::BOOL => Cell::Int((v.first() == Some(&1)) as i64),
            oid::BYTEA => {
                if let Cell::Bytes(buf) = cell {
                    buf.clear();
                    buf.extend_from_slice(v);
                    continue;
                }
                Cell::Bytes(v.to_vec())
            }
            oid::FLOAT8 => {
                let a: [u8; 8] = v
                    .try_into()
                    .map_err(|_| anyhow!("postgres: a float8 of {} bytes", v.len()))?;
                Cell::Text(f64::from_be_bytes(a).to_string())
            }
            _ => Cell::Text(String::from_utf8_lossy(v).into_owned()),
        };
    }
    Ok(())
}

/// A binary integer of `n` bytes (2, 4 or 8).
fn int(v: &[u8], n: usize) -> Result<i64> {
    if v.len() != n {
        bail!(
            "postgres: a {n}-byte integer of {} bytes from the server",
            v.len()
        );
    }
    Ok(match n {
        8 => i64::from_be_bytes(v.try_into()?),
        4 => i32::from_be_bytes(v.try_into()?) as i64,
        _ => i16::from_be_bytes(v.try_into()?) as i64,
    })
}

/// A DataRow of a simple query (every column text) into `row`.
pub(super) fn text_row(b: &[u8], row: &mut Vec<Cell>) -> Result<()> {
    row.clear();
    for f in fields(b)? {
        row.push(match f? {
            Some(v) => Cell::Text(String::from_utf8_lossy(v).into_owned()),
            None => Cell::Null,
        });
    }
    Ok(())
}

/// CommandComplete: the count its tag ends with ("INSERT 0 5", "UPDATE
/// 3", "SELECT 10"), 0 for a tag without one ("BEGIN").
pub(super) fn affected(b: &[u8]) -> u64 {
    let tag = b.strip_suffix(&[0]).unwrap_or(b);
    tag.rsplit(|&c| c == b' ')
        .next()
        .and_then(|n| std::str::from_utf8(n).ok()?.parse().ok())
        .unwrap_or(0)
}

/// ErrorResponse: its severity, SQLSTATE and message.
pub(super) fn server_error(b: &[u8]) -> ServerError {
    let mut e = ServerError {
        severity: String::new(),
        code: String::new(),
        message: String::new(),
    };
    for field in b.split(|&c| c == 0) {
        let Some((&kind, v)) = field.split_first() else {
            continue;
        };
        let v = String::from_utf8_lossy(v).into_owned();
        match kind {
            // The non-localised severity wins over the localised one.
            b'V' => e.severity = v,
            b'S' if e.severity.is_empty() => e.severity = v,
            b'C' => e.code = v,
            b'M' => e.message = v,
            _ => {}
        }
    }
    e
}
