//! TLS to a target: one rustls client configuration made from the URL's
//! mode (`tls=`, `sslmode=`) and CA file (`tlsca=`, `sslrootcert=`), used
//! by the workers' clients (mywire, the postgres crate) alike. The
//! certificate is verified by default: against the CA file when given,
//! else the system's bundle. `verify-ca` checks the chain but not the
//! name; `skip-verify`/`require` check neither (the handshake's
//! signatures still are), as those modes mean in their own clients.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use super::{Target, Tls};

/// The system's CA bundle (Debian's ca-certificates).
const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The client configuration `t` asks for, or None for plain TCP. A CA
/// file that cannot be read or holds no certificate is a one-line error
/// naming it.
pub fn client_config(t: &Target) -> Result<Option<Arc<ClientConfig>>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("TLS: no protocol version")?;
    let config = match t.tls {
        Tls::Off => return Ok(None),
        Tls::Verify { host } => {
            let roots = Arc::new(roots(t.ca.as_deref())?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .context("TLS: building the certificate verifier")?;
            let verifier: Arc<dyn ServerCertVerifier> = if host {
                webpki
            } else {
                Arc::new(ChainOnly(webpki))
            };
            builder
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth()
        }
        Tls::Unverified => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unverified(provider)))
            .with_no_client_auth(),
    };
    Ok(Some(Arc::new(config)))
}

/// The name the certificate must carry: the host as the URL writes it
/// (an address when it is one).
pub fn server_name(host: &str) -> Result<ServerName<'static>> {
    ServerName::try_from(host.to_string())
        .map_err(|e| anyhow!("--target: '{host}' is not a host name TLS can verify: {e}"))
}

/// The trusted roots: the CA file's certificates, or the system's.
fn roots(ca: Option<&str>) -> Result<RootCertStore> {
    let (path, what) = match ca {
        Some(p) => (p, "the target's CA file (tlsca=/sslrootcert=)"),
        None => (SYSTEM_ROOTS, "the system's CA bundle"),
    };
    let mut store = RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(Path::new(path))
        .map_err(|e| anyhow!("--target: cannot read {what} {path}: {e}"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow!("--target: {what} {path}: {e}"))?;
    if ca.is_some() {
        for c in certs {
            store
                .add(c)
                .map_err(|e| anyhow!("--target: {what} {path}: {e}"))?;
        }
    } else {
        // The system's bundle: a certificate rustls cannot use is
        // skipped, not fatal.
        store.add_parsable_certificates(certs);
    }
    if store.is_empty() {
        bail!("--target: {what} {path} holds no certificate");
    }
    Ok(store)
}

/// `verify-ca`: the chain must lead to a trusted root; the name is not
/// checked.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // The chain is checked before the name: a name error means the
        // chain held.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `skip-verify`/`require`: any certificate; the handshake's signatures
/// are still checked, so the session is with the certificate's key.
#[derive(Debug)]
struct Unverified(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
