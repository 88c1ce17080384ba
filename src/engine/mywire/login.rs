//! The login: the server's handshake read, the capabilities both ends
//! agree on (MariaDB's metadata caching among them), the password token,
//! and an auth switch to `mysql_native_password`.

use anyhow::{Context, Result, anyhow, bail};

use super::Conn;
use super::codec::{le, native_password};

/// Capability flags the client asks for.
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
    /// MariaDB's extended capability (bit 36, the fifth of the extended
    /// word): prepared statements' column definitions are sent only when
    /// they change, and a column count says whether they follow.
    pub const EXT_CACHE_METADATA: u32 = 0x10;
}

/// utf8mb4_general_ci; workloads set their own with SET NAMES.
const CHARSET: u8 = 45;

impl Conn {
    /// Reads the handshake, answers it and reads the server's verdict.
    pub(super) fn login(&mut self, user: &str, password: &str, db: &str) -> Result<()> {
        self.read_packet()?;
        if self.pkt().first() == Some(&0xff) {
            return Err(self.err_packet().into());
        }
        let p = self.pkt().to_vec();
        let p = p.as_slice();
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
        // Ten reserved bytes; a MariaDB server (LONG_PASSWORD clear, its
        // "CLIENT_MYSQL" bit) puts its extended capabilities in the last four.
        let ext_caps = if server_caps & caps::LONG_PASSWORD == 0 {
            le(p, pos + 1 + 6, 4)? as u32
        } else {
            0
        };
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
        self.out.extend_from_slice(&[0; 19]);
        let ext = ext_caps & caps::EXT_CACHE_METADATA;
        self.out.extend_from_slice(&ext.to_le_bytes());
        self.cache_metadata = ext != 0;
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
            match self.pkt().first() {
                Some(0x00) => return Ok(()),
                Some(0xff) => return Err(self.err_packet().into()),
                Some(0xfe) => {
                    // Auth switch: plugin name, NUL, new scramble.
                    let p = self.pkt()[1..].to_vec();
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
}
