//! The login against scripted servers on 127.0.0.1 that speak the
//! published exchange of each path (no MySQL 8 server is packaged
//! here): the scramble is checked against vectors computed elsewhere.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::thread::JoinHandle;

use super::super::{Addr, Conn, TlsTo};
use super::*;

/// The nonce every scripted handshake sends: bytes 1 to 20.
fn nonce() -> Vec<u8> {
    (1..=20).collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn sha2_scramble_matches_vectors_computed_elsewhere() {
    // Python: h1 = sha256(b"secret"); h3 = sha256(sha256(h1) + nonce);
    // bytes(a ^ b for a, b in zip(h1, h3)).hex()
    assert_eq!(
        hex(&sha2_password("secret", &nonce())),
        "746ebe205d56a0707acb3e796e834e0dd7b1d61743b26bd5202c7a623230c7c9"
    );
    let other: Vec<u8> = (101..=120).collect();
    assert_eq!(
        hex(&sha2_password("secret", &other)),
        "2c1a320fc6146cf1498e533518f46a9f768afe92573087f4bbe5d156c9dcfe76"
    );
    assert!(sha2_password("", &other).is_empty());
}

/// A server's side of one connection, plain or under TLS.
trait Wire: Read + Write {}
impl<T: Read + Write> Wire for T {}

struct Peer {
    s: Box<dyn Wire>,
    seq: u8,
}

impl Peer {
    fn read(&mut self) -> Vec<u8> {
        let mut h = [0u8; 4];
        self.s.read_exact(&mut h).unwrap();
        let n = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
        let mut p = vec![0; n];
        self.s.read_exact(&mut p).unwrap();
        self.seq = h[3].wrapping_add(1);
        p
    }
    fn write(&mut self, p: &[u8]) {
        let mut h = (p.len() as u32).to_le_bytes();
        h[3] = self.seq;
        self.seq = self.seq.wrapping_add(1);
        self.s.write_all(&h).unwrap();
        self.s.write_all(p).unwrap();
        self.s.flush().unwrap();
    }
    fn ok(&mut self) {
        self.write(&[0, 0, 0, 2, 0, 0, 0]);
    }
}

/// A MySQL 8 handshake: `plugin` and the nonce, TLS offered or not.
fn handshake(plugin: &str, tls: bool) -> Vec<u8> {
    let mut p = vec![10];
    p.extend_from_slice(b"8.0.36\0");
    p.extend_from_slice(&7u32.to_le_bytes());
    p.extend_from_slice(&nonce()[..8]);
    p.push(0);
    let caps: u32 = 0x000f_ffff & if tls { !0 } else { !caps::SSL };
    p.extend_from_slice(&(caps as u16).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&2u16.to_le_bytes());
    p.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
    p.push(21);
    p.extend_from_slice(&[0; 10]);
    p.extend_from_slice(&nonce()[8..]);
    p.push(0);
    p.extend_from_slice(plugin.as_bytes());
    p.push(0);
    p
}

/// The response's token and plugin name (after user, before db).
fn token_and_plugin(p: &[u8]) -> (Vec<u8>, String) {
    let mut at = 32;
    at += p[at..].iter().position(|&b| b == 0).unwrap() + 1; // user
    let n = usize::from(p[at]);
    let token = p[at + 1..at + 1 + n].to_vec();
    at += 1 + n;
    at += p[at..].iter().position(|&b| b == 0).unwrap() + 1; // db
    let end = at + p[at..].iter().position(|&b| b == 0).unwrap();
    (token, String::from_utf8_lossy(&p[at..end]).into_owned())
}

/// A server on 127.0.0.1 that runs `script` on its one connection.
fn serve(script: impl FnOnce(&mut Peer) + Send + 'static) -> (u16, JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let h = std::thread::spawn(move || {
        let (s, _) = l.accept().unwrap();
        let mut p = Peer {
            s: Box::new(s),
            seq: 0,
        };
        script(&mut p);
    });
    (port, h)
}

fn connect(port: u16, tls: Option<&TlsTo>) -> Result<Conn> {
    connect_with(port, tls, false)
}

fn connect_with(port: u16, tls: Option<&TlsTo>, key_request: bool) -> Result<Conn> {
    let to = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    Conn::connect(Addr::Tcp(to), "u", "secret", "db", None, tls, key_request)
}

#[test]
fn caching_sha2_fast_path() {
    let (port, h) = serve(|p| {
        p.write(&handshake(SHA2, false));
        let (token, plugin) = token_and_plugin(&p.read());
        assert_eq!(plugin, SHA2);
        assert_eq!(hex(&token), hex(&sha2_password("secret", &nonce())));
        p.write(&[1, 3]); // fast auth: the hash was cached
        p.ok();
    });
    connect(port, None).expect("fast path");
    h.join().unwrap();
}

#[test]
fn caching_sha2_full_auth_with_the_servers_rsa_key() {
    use rsa::pkcs8::EncodePublicKey;
    let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 1024).unwrap();
    let pem = key
        .to_public_key()
        .to_public_key_pem(rsa::pkcs8::LineEnding::LF)
        .unwrap();
    let (port, h) = serve(move |p| {
        p.write(&handshake(SHA2, false));
        p.read();
        p.write(&[1, 4]); // not cached: full authentication
        assert_eq!(p.read(), vec![2], "the client asks for the key");
        let mut m = vec![1];
        m.extend_from_slice(pem.as_bytes());
        p.write(&m);
        let sealed = p.read();
        let clear = key
            .decrypt(rsa::Oaep::new::<sha1::Sha1>(), &sealed)
            .unwrap();
        let n = nonce();
        let pw: Vec<u8> = clear
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ n[i % n.len()])
            .collect();
        assert_eq!(pw, b"secret\0");
        p.ok();
    });
    connect_with(port, None, true).expect("full authentication over RSA");
    h.join().unwrap();
}

#[test]
fn full_auth_without_tls_does_not_ask_for_the_key_unless_allowed() {
    let (port, h) = serve(|p| {
        p.write(&handshake(SHA2, false));
        p.read();
        p.write(&[1, 4]);
        let mut rest = Vec::new();
        let _ = p.s.read_to_end(&mut rest);
        assert!(rest.is_empty(), "the client went on: {rest:?}");
    });
    let e = connect(port, None).err().expect("refused");
    assert!(
        format!("{e:#}").contains("get-server-public-key=true"),
        "{e:#}"
    );
    h.join().unwrap();
}

/// A TLS server configuration for 127.0.0.1 and the client's for it.
fn tls_pair() -> (Arc<rustls::ServerConfig>, TlsTo) {
    let c = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    let der = c.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(c.key_pair.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![der.clone()], key)
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let to = TlsTo {
        config: Arc::new(client),
        name: rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap(),
    };
    (Arc::new(server), to)
}

/// Switches a scripted connection to TLS after the SSL request.
fn accept_tls(p: &mut Peer, config: Arc<rustls::ServerConfig>) {
    let req = p.read();
    assert_eq!(req.len(), 32, "the SSL request is the fixed part only");
    let caps = u32::from_le_bytes(req[..4].try_into().unwrap());
    assert_ne!(caps & caps::SSL, 0);
    let plain: Box<dyn Wire> =
        std::mem::replace(&mut p.s, Box::new(std::io::Cursor::new(Vec::new())));
    let conn = rustls::ServerConnection::new(config).unwrap();
    p.s = Box::new(rustls::StreamOwned::new(conn, plain));
}

#[test]
fn caching_sha2_full_auth_under_tls_sends_the_password() {
    let (server, to) = tls_pair();
    let (port, h) = serve(move |p| {
        p.write(&handshake(SHA2, true));
        accept_tls(p, server);
        let (_, plugin) = token_and_plugin(&p.read());
        assert_eq!(plugin, SHA2);
        p.write(&[1, 4]);
        assert_eq!(p.read(), b"secret\0", "in clear, under TLS");
        p.ok();
    });
    let c = connect(port, Some(&to)).expect("full authentication under TLS");
    assert!(matches!(c.stream, Stream::Tls(_)));
    h.join().unwrap();
}

#[test]
fn tls_asked_of_a_server_without_it_is_refused() {
    let (_, to) = tls_pair();
    let (port, h) = serve(|p| {
        p.write(&handshake(NATIVE, false));
        // The client hangs up rather than answer in clear.
        let mut rest = Vec::new();
        let _ = p.s.read_to_end(&mut rest);
        assert!(rest.is_empty(), "the client answered in clear");
    });
    let e = connect(port, Some(&to)).err().expect("refused");
    assert!(
        format!("{e:#}").contains("the server does not offer it"),
        "{e:#}"
    );
    h.join().unwrap();
}

#[test]
fn a_certificate_of_another_ca_does_not_verify() {
    let (server, _) = tls_pair();
    let (_, other) = tls_pair();
    let (port, h) = serve(move |p| {
        p.write(&handshake(NATIVE, true));
        accept_tls(p, server);
        let mut b = [0u8; 1];
        let _ = p.s.read(&mut b); // the client's alert, then nothing
    });
    let e = connect(port, Some(&other)).err().expect("refused");
    assert!(format!("{e:#}").contains("certificate"), "{e:#}");
    h.join().unwrap();
}

#[test]
fn an_auth_switch_to_caching_sha2_uses_the_new_nonce() {
    let (port, h) = serve(|p| {
        p.write(&handshake(NATIVE, false));
        p.read();
        let mut m = vec![0xfe];
        m.extend_from_slice(SHA2.as_bytes());
        m.push(0);
        m.extend(101..=120u8);
        m.push(0);
        p.write(&m);
        let token = p.read();
        assert_eq!(
            hex(&token),
            "2c1a320fc6146cf1498e533518f46a9f768afe92573087f4bbe5d156c9dcfe76"
        );
        p.write(&[1, 3]);
        p.ok();
    });
    connect(port, None).expect("switched");
    h.join().unwrap();
}

#[test]
fn an_unknown_plugin_is_named() {
    let (port, h) = serve(|p| {
        p.write(&handshake(NATIVE, false));
        p.read();
        p.write(b"\xfeclient_ed25519\0abcdefghijklmnopqrst\0");
        let mut rest = Vec::new();
        let _ = p.s.read_to_end(&mut rest);
    });
    let e = connect(port, None).err().expect("refused");
    assert!(format!("{e:#}").contains("client_ed25519"), "{e:#}");
    h.join().unwrap();
}
