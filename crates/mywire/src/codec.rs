//! The MariaDB protocol's encodings: length-encoded integers, the login
//! token, statement parameters, and rows in the text and binary formats.

use anyhow::{Context, Result, anyhow};
use sha1::{Digest, Sha1};

use crate::sqlval::{Cell, Val};

/// The `len` bytes at `pos` (a length the server sent: checked, never
/// trusted), and `pos` moved past them.
#[inline]
pub(super) fn bytes_at<'p>(p: &'p [u8], pos: &mut usize, len: u64) -> Result<&'p [u8]> {
    let v = usize::try_from(len)
        .ok()
        .and_then(|l| pos.checked_add(l))
        .and_then(|end| p.get(*pos..end))
        .ok_or_else(short_row)?;
    *pos += v.len();
    Ok(v)
}

/// A length-encoded integer at `pos`, and `pos` moved past it.
pub(super) fn lenenc(b: &[u8], pos: &mut usize) -> Result<u64> {
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

/// The `n`-byte little-endian integer at `at` (n <= 8).
pub(super) fn le(b: &[u8], at: usize, n: usize) -> Result<u64> {
    let s = at
        .checked_add(n)
        .and_then(|end| b.get(at..end))
        .filter(|_| n <= 8)
        .ok_or_else(|| anyhow!("mariadb: short packet"))?;
    let mut w = [0u8; 8];
    w[..n].copy_from_slice(s);
    Ok(u64::from_le_bytes(w))
}

pub(super) fn put_lenenc(out: &mut Vec<u8>, v: u64) {
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
pub(super) fn native_password(password: &str, scramble: &[u8]) -> Vec<u8> {
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

/// COM_STMT_EXECUTE's parameter part: the NULL bitmap, the types, the
/// values (integers as LONGLONG, bytes and text as VAR_STRING).
pub(super) fn put_params(out: &mut Vec<u8>, params: &[Val<'_>]) {
    if !params.is_empty() {
        let at = out.len();
        out.resize(at + params.len().div_ceil(8), 0);
        for (k, p) in params.iter().enumerate() {
            if matches!(p, Val::Null) {
                out[at + k / 8] |= 1 << (k % 8);
            }
        }
        out.push(1); // types follow
        for p in params {
            let ty: u8 = match p {
                Val::Null => 6,
                Val::Int(_) => 8,
                Val::Bytes(_) | Val::Text(_) => 253,
            };
            out.extend_from_slice(&[ty, 0]);
        }
        for p in params {
            match p {
                Val::Null => {}
                Val::Int(v) => out.extend_from_slice(&v.to_le_bytes()),
                Val::Bytes(b) => {
                    put_lenenc(out, b.len() as u64);
                    out.extend_from_slice(b);
                }
                Val::Text(t) => {
                    put_lenenc(out, t.len() as u64);
                    out.extend_from_slice(t.as_bytes());
                }
            }
        }
    }
}

/// A column definition packet's type and unsigned flag.
pub(super) fn column_type(p: &[u8]) -> Result<(u8, bool)> {
    let mut pos = 0;
    for _ in 0..6 {
        // catalog, schema, table alias, table, column alias, column
        let l = lenenc(p, &mut pos)?;
        bytes_at(p, &mut pos, l).context("mariadb: short column definition")?;
    }
    // The fixed-length marker, charset and length, then the type and
    // flags.
    let fixed =
        bytes_at(p, &mut pos, 1 + 2 + 4 + 1 + 2).context("mariadb: short column definition")?;
    let ty = fixed[7];
    let flags = u16::from_le_bytes([fixed[8], fixed[9]]);
    Ok((ty, flags & 0x20 != 0))
}

/// A text-protocol row of `n` columns, into `row` (emptied first).
pub(super) fn text_row(p: &[u8], n: usize, row: &mut Vec<Cell>) -> Result<()> {
    let mut pos = 0;
    row.clear();
    row.reserve(n);
    for _ in 0..n {
        if p.get(pos) == Some(&0xfb) {
            pos += 1;
            row.push(Cell::Null);
            continue;
        }
        let l = lenenc(p, &mut pos)?;
        let v = bytes_at(p, &mut pos, l)?;
        row.push(Cell::Bytes(v.to_vec()));
    }
    Ok(())
}

/// A binary-protocol row whose columns have `cols`' types and
/// unsignedness, into `row`, which ends with one cell per column. A
/// string or blob column whose cell already holds bytes (the previous
/// row's, when the caller reuses `row`) is copied into that buffer, so
/// rows after the first allocate nothing for it; an integer is written
/// into the cell in place.
///
/// This is the client's hottest loop (a LinkBench list is read row by
/// row): integers are read as fixed-size arrays and a short length in
/// one step, so a column costs a few instructions, not a general decode.
// Long: one match arm per MySQL column type, on the measured path of every
// row.
pub(super) fn binary_row(p: &[u8], cols: &[(u8, bool)], row: &mut Vec<Cell>) -> Result<()> {
    let n = cols.len();
    let bitmap = 1..1 + (n + 7 + 2) / 8;
    let mut pos = bitmap.end;
    row.resize_with(n, || Cell::Null);
    let nulls = p.get(bitmap).ok_or_else(short_row)?;
    for (i, (&(ty, unsigned), cell)) in cols.iter().zip(row.iter_mut()).enumerate() {
        let bit = i + 2;
        if nulls[bit / 8] & (1 << (bit % 8)) != 0 {
            *cell = Cell::Null;
            continue;
        }
        let v = match ty {
            8 => i64::from_le_bytes(take(p, &mut pos)?),
            3 | 9 => {
                let b = take(p, &mut pos)?;
                if unsigned {
                    i64::from(u32::from_le_bytes(b))
                } else {
                    i64::from(i32::from_le_bytes(b))
                }
            }
            2 | 13 => {
                let b = take(p, &mut pos)?;
                if unsigned {
                    i64::from(u16::from_le_bytes(b))
                } else {
                    i64::from(i16::from_le_bytes(b))
                }
            }
            1 => {
                let [b] = take(p, &mut pos)?;
                if unsigned {
                    i64::from(b)
                } else {
                    i64::from(b as i8)
                }
            }
            4 => {
                let v = f32::from_le_bytes(take(p, &mut pos)?);
                *cell = Cell::Text(v.to_string());
                continue;
            }
            5 => {
                let v = f64::from_le_bytes(take(p, &mut pos)?);
                *cell = Cell::Text(v.to_string());
                continue;
            }
            6 => {
                *cell = Cell::Null;
                continue;
            }
            7 | 10 | 11 | 12 => {
                let [l] = take(p, &mut pos)?;
                let v = bytes_at(p, &mut pos, u64::from(l))?;
                *cell = Cell::Text(temporal(ty, v));
                continue;
            }
            _ => {
                let l = match p.get(pos) {
                    Some(&l) if l < 0xfb => {
                        pos += 1;
                        u64::from(l)
                    }
                    _ => lenenc(p, &mut pos)?,
                };
                let v = bytes_at(p, &mut pos, l)?;
                match cell {
                    Cell::Bytes(b) => {
                        b.clear();
                        b.extend_from_slice(v);
                    }
                    _ => *cell = Cell::Bytes(v.to_vec()),
                }
                continue;
            }
        };
        match cell {
            Cell::Int(x) => *x = v,
            _ => *cell = Cell::Int(v),
        }
    }
    Ok(())
}

/// The `N` bytes at `pos`, which moves past them.
#[inline]
fn take<const N: usize>(p: &[u8], pos: &mut usize) -> Result<[u8; N]> {
    match pos
        .checked_add(N)
        .and_then(|end| p.get(*pos..end))
        .and_then(|s| <[u8; N]>::try_from(s).ok())
    {
        Some(s) => {
            *pos += N;
            Ok(s)
        }
        None => Err(short_row()),
    }
}

#[cold]
fn short_row() -> anyhow::Error {
    anyhow!("mariadb: short row")
}

/// A binary-protocol date, datetime, timestamp or time as text.
fn temporal(ty: u8, v: &[u8]) -> String {
    let g = |i: usize| u64::from(v.get(i).copied().unwrap_or(0));
    if ty == 11 {
        let days = g(1) | g(2) << 8 | g(3) << 16 | g(4) << 24;
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

    /// A binary row of (BIGINT, BLOB): header, NULL bitmap, values.
    fn row_packet(id: i64, blob: Option<&[u8]>) -> Vec<u8> {
        let mut p = vec![0x00, if blob.is_none() { 1 << 3 } else { 0 }];
        p.extend_from_slice(&id.to_le_bytes());
        if let Some(b) = blob {
            put_lenenc(&mut p, b.len() as u64);
            p.extend_from_slice(b);
        }
        p
    }

    /// Rows decoded into one reused vector: each row's values are its own
    /// (a shorter blob after a longer one, a NULL, then bytes again), and
    /// the blob's buffer is the same allocation from row to row.
    #[test]
    fn binary_rows_reuse_the_previous_rows_buffers() {
        let cols = [(8u8, false), (252u8, false)];
        let mut row = Vec::new();
        binary_row(&row_packet(1, Some(b"a longer payload")), &cols, &mut row).unwrap();
        assert_eq!(
            row,
            [Cell::Int(1), Cell::Bytes(b"a longer payload".to_vec())]
        );
        let at = |r: &[Cell]| match &r[1] {
            Cell::Bytes(b) => b.as_ptr(),
            _ => std::ptr::null(),
        };
        let first = at(&row);
        binary_row(&row_packet(-2, Some(b"short")), &cols, &mut row).unwrap();
        assert_eq!(row, [Cell::Int(-2), Cell::Bytes(b"short".to_vec())]);
        assert_eq!(at(&row), first, "the blob's buffer was not reused");
        binary_row(&row_packet(3, None), &cols, &mut row).unwrap();
        assert_eq!(row, [Cell::Int(3), Cell::Null]);
        binary_row(&row_packet(4, Some(b"")), &cols, &mut row).unwrap();
        assert_eq!(row, [Cell::Int(4), Cell::Bytes(Vec::new())]);
        // A row of fewer columns leaves no stale cell behind.
        binary_row(&[0x00, 0, 7, 0, 0, 0, 0, 0, 0, 0], &cols[..1], &mut row).unwrap();
        assert_eq!(row, [Cell::Int(7)]);
    }

    /// Every integer width, signed and unsigned, and a float, from bytes
    /// written by hand.
    #[test]
    fn binary_rows_decode_each_integer_width() {
        let cols = [
            (1u8, false),
            (1, true),
            (2, false),
            (2, true),
            (3, false),
            (3, true),
            (8, false),
            (5, false),
        ];
        let mut p = vec![0x00, 0, 0];
        p.extend_from_slice(&[0xff, 0xff]);
        p.extend_from_slice(&[0xfe, 0xff, 0xfe, 0xff]);
        p.extend_from_slice(&[0xfd, 0xff, 0xff, 0xff, 0xfd, 0xff, 0xff, 0xff]);
        p.extend_from_slice(&(-4i64).to_le_bytes());
        p.extend_from_slice(&2.5f64.to_le_bytes());
        let mut row = vec![Cell::Bytes(b"stale".to_vec()); 3];
        binary_row(&p, &cols, &mut row).unwrap();
        assert_eq!(
            row,
            [
                Cell::Int(-1),
                Cell::Int(255),
                Cell::Int(-2),
                Cell::Int(65534),
                Cell::Int(-3),
                Cell::Int(4_294_967_293),
                Cell::Int(-4),
                Cell::Text("2.5".into()),
            ]
        );
        // A row cut short is an error, not a panic.
        assert!(binary_row(&p[..p.len() - 1], &cols, &mut row).is_err());
    }

    /// NULL bits past the first bytes: 70 TINYINT columns, every third
    /// one NULL.
    #[test]
    fn binary_rows_find_nulls_in_a_long_bitmap() {
        let cols = [(1u8, true); 70];
        let mut p = vec![0x00];
        let mut bitmap = vec![0u8; (70 + 9) / 8];
        for i in (0..70).step_by(3) {
            bitmap[(i + 2) / 8] |= 1 << ((i + 2) % 8);
        }
        p.extend_from_slice(&bitmap);
        p.extend((0..70u8).filter(|i| i % 3 != 0));
        let mut row = Vec::new();
        binary_row(&p, &cols, &mut row).unwrap();
        let want: Vec<Cell> = (0..70)
            .map(|i| match i % 3 {
                0 => Cell::Null,
                _ => Cell::Int(i),
            })
            .collect();
        assert_eq!(row, want);
    }

    /// Lengths from the wire are checked, not trusted: a length past the
    /// packet, or past the address space, is an error; so are the
    /// largest time values (their hours once overflowed).
    #[test]
    fn lengths_from_the_wire_cannot_overflow() {
        let mut p = vec![0x00, 0x00];
        p.push(0xfe);
        p.extend_from_slice(&u64::MAX.to_le_bytes());
        let mut row = Vec::new();
        assert!(binary_row(&p, &[(252, false)], &mut row).is_err());
        assert!(text_row(&p[2..], 1, &mut row).is_err());
        let mut pos = usize::MAX - 1;
        assert!(bytes_at(&p, &mut pos, 4).is_err());
        assert!(le(&p, usize::MAX, 2).is_err());
        let mut col = Vec::new();
        for _ in 0..6 {
            col.push(0xfe);
            col.extend_from_slice(&(u64::MAX - 3).to_le_bytes());
        }
        assert!(column_type(&col).is_err());
        let t = [1u8, 0xff, 0xff, 0xff, 0xff, 23, 59, 59];
        assert_eq!(temporal(11, &t), "-103079215103:59:59");
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
