//! The values SQL statements take and return, as the wire clients (the
//! MySQL protocol's and PostgreSQL's) and the SQL workloads share them.

/// A statement parameter.
#[derive(Clone, Copy, Debug)]
pub enum Val<'a> {
    /// SQL NULL.
    Null,
    /// A 64-bit integer.
    Int(i64),
    /// Bytes (VARBINARY/BLOB/BYTEA).
    Bytes(&'a [u8]),
    /// Text.
    Text(&'a str),
}

/// A result cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cell {
    /// SQL NULL.
    Null,
    /// An integer.
    Int(i64),
    /// Bytes.
    Bytes(Vec<u8>),
    /// Text.
    Text(String),
}

impl Cell {
    /// The cell as an integer (text is parsed).
    pub fn int(&self) -> Option<i64> {
        match self {
            Cell::Int(i) => Some(*i),
            Cell::Text(t) => t.parse().ok(),
            Cell::Bytes(b) => std::str::from_utf8(b).ok()?.parse().ok(),
            Cell::Null => None,
        }
    }
    /// The cell as bytes.
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Cell::Bytes(b) => Some(b),
            Cell::Text(t) => Some(t.as_bytes()),
            _ => None,
        }
    }
    /// The cell as text.
    pub fn text(&self) -> String {
        match self {
            Cell::Null => String::new(),
            Cell::Int(i) => i.to_string(),
            Cell::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
            Cell::Text(t) => t.clone(),
        }
    }
}
