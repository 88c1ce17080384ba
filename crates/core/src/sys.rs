//! Small facts about this process and machine that every layer uses,
//! at the bottom of the pipeline: how many malloc arenas a run uses, and
//! random credentials and names from the kernel's random source.

use anyhow::{Context, Result};

/// glibc malloc arenas a run uses: one per CPU, at least 2.
pub fn arenas() -> i32 {
    std::thread::available_parallelism().map_or(2, |n| n.get().max(2)) as i32
}

/// A password for one run's benchmark user: 16 bytes from the kernel's
/// random source, as hex. No credential is fixed in the code, so a server
/// of ours admits nobody who did not read its process's memory.
pub fn random_password() -> Result<String> {
    use std::io::Read;
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .context("reading /dev/urandom for a password")?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// `s` safe to print on a terminal: line breaks and tabs become blanks,
/// other control characters (C0, DEL, C1: the ones that start escape
/// sequences) become `?`. Text from a server or a log (an error, a
/// version) passes through here before it is printed.
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(
        s.chars()
            .map(|c| match c {
                '\n' | '\r' | '\t' => ' ',
                c if c.is_control() => '?',
                c => c,
            })
            .collect(),
    )
}

/// A writer that passes text on without control characters but line
/// breaks and tabs (C0, DEL and UTF-8-encoded C1 become `?`): what
/// ampbench prints on standard output, where server text (errors, notes,
/// versions, stored results) must not reach the terminal as escape
/// sequences.
pub struct Printable<W: std::io::Write> {
    inner: W,
    /// The last byte written was 0xC2, the lead of a C1 character.
    lead: bool,
    buf: Vec<u8>,
}

impl<W: std::io::Write> Printable<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Printable<W> {
        Printable {
            inner,
            lead: false,
            buf: Vec::new(),
        }
    }
}

impl<W: std::io::Write> std::io::Write for Printable<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let clean = |x: u8| x >= 0x20 && x != 0x7f || x == b'\n' || x == b'\t';
        if !self.lead && b.iter().all(|&x| clean(x) && x != 0xc2) {
            self.inner.write_all(b)?;
            return Ok(b.len());
        }
        self.buf.clear();
        for &x in b {
            if self.lead {
                self.lead = false;
                if (0x80..=0x9f).contains(&x) {
                    self.buf.push(b'?');
                    continue;
                }
                self.buf.push(0xc2);
            }
            if x == 0xc2 {
                self.lead = true;
            } else if clean(x) {
                self.buf.push(x);
            } else {
                self.buf.push(b'?');
            }
        }
        self.inner.write_all(&self.buf)?;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        if self.lead {
            self.lead = false;
            self.inner.write_all(&[0xc2])?;
        }
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn escape_sequences_do_not_pass() {
        assert_eq!(printable("a\x1b[2Jb\nc"), "a?[2Jb c");
        assert_eq!(printable("plain"), "plain");
        assert_eq!(printable("x\u{9b}31m"), "x?31m");
        let mut out = Printable::new(Vec::new());
        out.write_all(b"ok \x1b]0;title\x07 \xc2").unwrap();
        // A C1 character split over two writes.
        out.write_all(b"\x9b1m caf\xc3\xa9 \xc2\xa0\n\ttab")
            .unwrap();
        out.flush().unwrap();
        assert_eq!(
            String::from_utf8(out.inner).unwrap(),
            "ok ?]0;title? ?1m café \u{a0}\n\ttab"
        );
    }
}
