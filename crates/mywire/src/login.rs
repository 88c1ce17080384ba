//! The login: the server's handshake read, TLS when asked for (the SSL
//! request, then the rest under TLS), the capabilities both ends agree on
//! (MariaDB's metadata caching among them), and the password proved by
//! `mysql_native_password` or MySQL 8's `caching_sha2_password`: its fast
//! path (the server has the password's hash cached), or full
//! authentication, where the password goes in clear under TLS and
//! otherwise encrypted with the server's RSA key (OAEP), asked for on the
//! connection. Any other plugin is a one-line error naming it.

use anyhow::{Context, Result, anyhow, bail};
use sha2::{Digest, Sha256};

use super::codec::{le, native_password};
use super::{Conn, Stream, TlsTo};

/// Capability flags the client asks for.
mod caps {
    pub const LONG_PASSWORD: u32 = 1;
    pub const LONG_FLAG: u32 = 4;
    pub const CONNECT_WITH_DB: u32 = 8;
    pub const PROTOCOL_41: u32 = 0x200;
    pub const SSL: u32 = 0x800;
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

const NATIVE: &str = "mysql_native_password";
const SHA2: &str = "caching_sha2_password";

/// caching_sha2_password's scramble: SHA256(pw) XOR
/// SHA256(SHA256(SHA256(pw)) + nonce); empty for an empty password.
pub(super) fn sha2_password(password: &str, nonce: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let h1 = Sha256::digest(password.as_bytes());
    let h2 = Sha256::digest(h1);
    let mut h = Sha256::new();
    h.update(h2);
    h.update(nonce);
    let h3 = h.finalize();
    h1.iter().zip(h3.iter()).map(|(a, b)| a ^ b).collect()
}

/// The password for full authentication without TLS: NUL-terminated,
/// XORed with the nonce (repeated), encrypted with the server's RSA
/// public key (`pem`, SPKI or PKCS#1) under OAEP with SHA-1, as MySQL's
/// client does.
pub(super) fn rsa_password(password: &str, nonce: &[u8], pem: &[u8]) -> Result<Vec<u8>> {
    use rsa::pkcs1::DecodeRsaPublicKey;
    use rsa::pkcs8::DecodePublicKey;
    let pem = std::str::from_utf8(pem).context("the server's public key is not text")?;
    let pem = pem.trim_end_matches('\0');
    let key = rsa::RsaPublicKey::from_public_key_pem(pem)
        .or_else(|_| rsa::RsaPublicKey::from_pkcs1_pem(pem))
        .map_err(|e| anyhow!("the server's public key cannot be read: {e}"))?;
    let mut clear: Vec<u8> = password.bytes().chain([0]).collect();
    if !nonce.is_empty() {
        for (i, b) in clear.iter_mut().enumerate() {
            *b ^= nonce[i % nonce.len()];
        }
    }
    key.encrypt(
        &mut rsa::rand_core::OsRng,
        rsa::Oaep::new::<sha1::Sha1>(),
        &clear,
    )
    .map_err(|e| anyhow!("encrypting the password with the server's key: {e}"))
}

/// The first answer to a plugin's challenge.
fn token(plugin: &str, password: &str, nonce: &[u8]) -> Result<Vec<u8>> {
    match plugin {
        NATIVE => Ok(native_password(password, nonce)),
        SHA2 => Ok(sha2_password(password, nonce)),
        other => bail!(
            "the server asks for auth plugin {other}, which this client does not speak (it speaks {NATIVE} and {SHA2})"
        ),
    }
}

impl Conn {
    /// Reads the handshake, answers it (under TLS when `tls` is given)
    /// and reads the server's verdict; `key_request`: see
    /// [`Conn::connect`]'s `public_key_request`.
    // Long: the greeting read field by field (scramble, capabilities, plugin),
    // then TLS and the handshake response built from them; the server's
    // answers are verdict()'s.
    pub(super) fn login(
        &mut self,
        user: &str,
        password: &str,
        db: &str,
        tls: Option<&TlsTo>,
        key_request: bool,
    ) -> Result<()> {
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
        let mut plugin = if server_caps & caps::PLUGIN_AUTH != 0 && pos < p.len() {
            let end = nul(pos).unwrap_or(p.len());
            String::from_utf8_lossy(&p[pos..end]).into_owned()
        } else {
            NATIVE.to_string()
        };
        if plugin != NATIVE && plugin != SHA2 {
            // Answered with native's token; the server may switch.
            plugin = NATIVE.to_string();
        }
        let mut want = caps::LONG_PASSWORD
            | caps::LONG_FLAG
            | if db.is_empty() {
                0
            } else {
                caps::CONNECT_WITH_DB
            }
            | caps::PROTOCOL_41
            | caps::TRANSACTIONS
            | caps::SECURE_CONNECTION
            | caps::MULTI_STATEMENTS
            | caps::MULTI_RESULTS
            | caps::PS_MULTI_RESULTS
            | caps::PLUGIN_AUTH;
        let ext = ext_caps & caps::EXT_CACHE_METADATA;
        let mut seq = 1;
        if let Some(tls) = tls {
            if server_caps & caps::SSL == 0 {
                bail!("TLS was asked for (tls=…) but the server does not offer it");
            }
            want |= caps::SSL;
            // Nothing may follow the handshake before TLS: bytes read
            // ahead would be taken as if they came under it.
            if self.start != self.end {
                bail!("the server sent more than its handshake before TLS");
            }
            // The SSL request: the response's fixed part, then TLS.
            self.fixed_part(seq, want & server_caps, ext);
            self.send()?;
            self.start_tls(tls)?;
            seq += 1;
        }
        let token = token(&plugin, password, &scramble)?;
        self.fixed_part(seq, want & server_caps, ext);
        self.cache_metadata = ext != 0;
        self.out.extend_from_slice(user.as_bytes());
        self.out.push(0);
        self.out.push(token.len() as u8);
        self.out.extend_from_slice(&token);
        if !db.is_empty() {
            self.out.extend_from_slice(db.as_bytes());
            self.out.push(0);
        }
        self.out.extend_from_slice(plugin.as_bytes());
        self.out.push(0);
        self.send()?;
        self.verdict(password, plugin, scramble, tls.is_some(), key_request)
    }

    /// Starts packet `seq` with the handshake response's fixed part:
    /// capabilities, maximum packet, charset, filler, MariaDB's extended
    /// capabilities.
    fn fixed_part(&mut self, seq: u8, caps: u32, ext: u32) {
        self.begin_packet(seq);
        self.out.extend_from_slice(&caps.to_le_bytes());
        self.out.extend_from_slice(&(16u32 << 20).to_le_bytes());
        self.out.push(CHARSET);
        self.out.extend_from_slice(&[0; 19]);
        self.out.extend_from_slice(&ext.to_le_bytes());
    }

    /// Wraps the TCP stream in TLS and completes the handshake, so that a
    /// certificate that does not verify is said here.
    fn start_tls(&mut self, tls: &TlsTo) -> Result<()> {
        let Stream::Tcp(mut tcp) = std::mem::replace(&mut self.stream, Stream::Closed) else {
            bail!("TLS is for TCP connections");
        };
        let mut c = rustls::ClientConnection::new(tls.config.clone(), tls.name.clone())
            .context("TLS: starting")?;
        while c.is_handshaking() {
            c.complete_io(&mut tcp).map_err(|e| {
                match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                    Some(r) => anyhow!("TLS: {r}"),
                    None => anyhow!("TLS handshake: {e}"),
                }
            })?;
        }
        self.stream = Stream::Tls(Box::new(rustls::StreamOwned::new(c, tcp)));
        Ok(())
    }

    /// Reads the server's answers to the login until OK or an error:
    /// auth switches, caching_sha2_password's fast-auth result and its
    /// full authentication.
    fn verdict(
        &mut self,
        password: &str,
        mut plugin: String,
        mut nonce: Vec<u8>,
        secure: bool,
        key_request: bool,
    ) -> Result<()> {
        let mut asked_key = false;
        loop {
            self.read_packet()?;
            let p = self.pkt();
            match p.first() {
                Some(0x00) => return Ok(()),
                Some(0xff) => return Err(self.err_packet().into()),
                Some(0xfe) => {
                    // Auth switch: plugin name, NUL, new nonce.
                    let p = p[1..].to_vec();
                    let end = p.iter().position(|&b| b == 0).unwrap_or(p.len());
                    plugin = String::from_utf8_lossy(&p[..end]).into_owned();
                    let data = &p[(end + 1).min(p.len())..];
                    nonce = data[..20.min(data.len())].to_vec();
                    let t = token(&plugin, password, &nonce)?;
                    self.reply(&t)?;
                }
                Some(0x01) if plugin == SHA2 => {
                    let more = p[1..].to_vec();
                    match more.as_slice() {
                        [3] => {} // fast path: OK follows
                        [4] if secure => {
                            let clear: Vec<u8> = password.bytes().chain([0]).collect();
                            self.reply(&clear)?;
                        }
                        [4] if !key_request => bail!(
                            "the server asks for {SHA2} full authentication, which sends the password: use TLS (tls=true), or allow asking the server for its RSA key (get-server-public-key=true; nothing authenticates that key)"
                        ),
                        [4] => {
                            self.reply(&[2])?; // the server's public key, please
                            asked_key = true;
                        }
                        pem if asked_key => {
                            let t = rsa_password(password, &nonce, pem)?;
                            self.reply(&t)?;
                            asked_key = false;
                        }
                        other => {
                            bail!("unexpected {SHA2} message {:?} during login", other.first())
                        }
                    }
                }
                other => bail!("unexpected packet {other:?} during login"),
            }
        }
    }

    /// Sends `data` as the next packet of the login's exchange.
    fn reply(&mut self, data: &[u8]) -> Result<()> {
        let seq = self.seq;
        self.begin_packet(seq);
        self.out.extend_from_slice(data);
        self.send()
    }
}

#[cfg(test)]
mod tests;
