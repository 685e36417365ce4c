//! TLS client setup with rustls, following libpq's `sslmode` rules.
//!
//! Owns: choosing the verification policy (`require` behaves like `verify-ca` when
//! a root certificate file exists, as in libpq), loading `sslrootcert` /
//! `sslcert` / `sslkey` (default paths under `~/.postgresql/`), and libpq-style
//! texts for TLS failures, plus the `tls-server-end-point` channel-binding hash.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::conninfo::{ConnConfig, SslMode};

impl ConnConfig {
    /// The TLS client configuration for these parameters (built once per
    /// configuration and its clones).
    pub(crate) fn tls_config(&self) -> Result<Arc<rustls::ClientConfig>, String> {
        self.tls_cache()
            .0
            .get_or_init(|| client_config(self))
            .clone()
    }
}

/// The platform's CA bundle for `sslrootcert=system`: what OpenSSL (and so libpq)
/// would use — `SSL_CERT_FILE` if set, else the distribution's bundle
/// (`/etc/ssl/certs/ca-certificates.crt` on Debian, `/etc/pki/tls/certs/ca-bundle.crt`
/// on Red Hat, …), found by the `openssl-probe` crate.
fn system_ca_file() -> Result<PathBuf, String> {
    openssl_probe::probe().cert_file.ok_or_else(|| {
        "could not find the system's trusted root certificates for sslrootcert=system (set SSL_CERT_FILE to a CA bundle)".to_string()
    })
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Builds the rustls client configuration for `cfg`. Errors are libpq-style texts.
pub(crate) fn client_config(cfg: &ConnConfig) -> Result<Arc<rustls::ClientConfig>, String> {
    let mode = cfg.ssl_mode();
    let root_path: Option<PathBuf> = match cfg.get("sslrootcert").filter(|s| !s.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None => cfg.home_file("root.crt"),
    };
    let root_is_system = root_path.as_deref() == Some(Path::new("system"));
    let root_exists = root_is_system || root_path.as_deref().is_some_and(Path::exists);
    let verify_chain = matches!(mode, SslMode::VerifyCa | SslMode::VerifyFull) || root_exists;
    let verify_name = mode == SslMode::VerifyFull;

    if matches!(mode, SslMode::VerifyCa | SslMode::VerifyFull) && !root_exists {
        let shown = root_path
            .as_deref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "~/.postgresql/root.crt".into());
        return Err(format!(
            "root certificate file \"{shown}\" does not exist\n\
             Either provide the file, use the system's trusted roots with sslrootcert=system, or change sslmode to disable server certificate verification."
        ));
    }

    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| format!("could not create SSL context: {e}"))?;

    let verifier: Arc<dyn ServerCertVerifier> = if verify_chain {
        let mut roots = RootCertStore::empty();
        let file = if root_is_system {
            system_ca_file()?
        } else {
            root_path.clone().unwrap_or_default()
        };
        let certs = CertificateDer::pem_file_iter(&file).map_err(|e| {
            format!(
                "could not read root certificate file \"{}\": {e}",
                file.display()
            )
        })?;
        for c in certs {
            let c = c.map_err(|e| {
                format!(
                    "could not read root certificate file \"{}\": {e}",
                    file.display()
                )
            })?;
            roots.add(c).map_err(|e| {
                format!(
                    "could not read root certificate file \"{}\": {e}",
                    file.display()
                )
            })?;
        }
        let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            provider(),
        )
        .build()
        .map_err(|e| {
            format!(
                "could not read root certificate file \"{}\": {e}",
                file.display()
            )
        })?;
        Arc::new(Verifier {
            inner: Some(inner),
            check_name: verify_name,
        })
    } else {
        Arc::new(Verifier {
            inner: None,
            check_name: false,
        })
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);

    // Client certificate: explicit paths, else the defaults if both files exist.
    let cert_path = match cfg.get("sslcert").filter(|s| !s.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None => cfg.home_file("postgresql.crt"),
    };
    let key_path = match cfg.get("sslkey").filter(|s| !s.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None => cfg.home_file("postgresql.key"),
    };
    let mut config = match cert_path.filter(|p| p.exists()) {
        Some(cert_path) => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert_path)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| {
                    format!(
                        "could not open certificate file \"{}\": {e}",
                        cert_path.display()
                    )
                })?;
            let key_path = key_path.unwrap_or_default();
            if !key_path.exists() {
                return Err(format!(
                    "certificate present, but not private key file \"{}\"",
                    key_path.display()
                ));
            }
            check_key_permissions(&key_path)?;
            let key = PrivateKeyDer::from_pem_file(&key_path).map_err(|e| {
                format!(
                    "could not load private key file \"{}\": {e}",
                    key_path.display()
                )
            })?;
            builder.with_client_auth_cert(certs, key).map_err(|e| {
                format!(
                    "could not load private key file \"{}\": {e}",
                    key_path.display()
                )
            })?
        }
        None => builder.with_no_client_auth(),
    };
    config.enable_sni = cfg.get("sslsni") != Some("0");
    // libpq 17+ always offers ALPN "postgresql" (required by servers for direct
    // TLS negotiation; older servers ignore it).
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(Arc::new(config))
}

fn check_key_permissions(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).map_err(|e| {
        format!(
            "could not open private key file \"{}\": {e}",
            path.display()
        )
    })?;
    if !meta.is_file() {
        return Err(format!(
            "private key file \"{}\" is not a regular file",
            path.display()
        ));
    }
    let mode = meta.mode();
    let too_open = if meta.uid() == 0 {
        mode & 0o137 != 0
    } else {
        mode & 0o077 != 0
    };
    if too_open {
        return Err(format!(
            "private key file \"{}\" has group or world access; file must have permissions u=rw (0600) or less if owned by the current user, or permissions u=rw,g=r (0640) or less if owned by root",
            path.display()
        ));
    }
    Ok(())
}

/// The server name rustls verifies against (and sends as SNI unless it is an IP).
pub(crate) fn server_name(host: &str) -> ServerName<'static> {
    ServerName::try_from(host.to_string()).unwrap_or_else(|_| {
        ServerName::try_from("localhost")
            .expect("valid name")
            .to_owned()
    })
}

/// libpq's policy: no verification, chain only (`verify-ca`, or a root file
/// present), or chain and name (`verify-full`).
#[derive(Debug)]
struct Verifier {
    inner: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    check_name: bool,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(inner) = &self.inner else {
            return Ok(ServerCertVerified::assertion());
        };
        match inner.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Ok(v) => Ok(v),
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_name => Ok(ServerCertVerified::assertion()),
            Err(rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
                expected,
                presented,
            })) => Err(rustls::Error::General(name_mismatch_text(
                end_entity.as_ref(),
                &expected,
                &presented,
            ))),
            Err(e) => Err(e),
        }
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
            &provider().signature_verification_algorithms,
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
            &provider().signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Text for a TLS failure, as libpq (OpenSSL) words it where it matters.
pub(crate) fn describe_error(e: &std::io::Error, host: &str) -> String {
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    match inner {
        Some(rustls::Error::General(text)) if text.contains("host name") => text.clone(),
        Some(rustls::Error::InvalidCertificate(CertificateError::NotValidForName)) => {
            format!("server certificate does not match host name \"{host}\"")
        }
        Some(rustls::Error::InvalidCertificate(_)) => "SSL error: certificate verify failed".into(),
        Some(other) => format!("SSL error: {other}"),
        None => match e.kind() {
            std::io::ErrorKind::UnexpectedEof => "SSL SYSCALL error: EOF detected".into(),
            _ => format!("SSL SYSCALL error: {}", crate::error::strerror(e)),
        },
    }
}

/// libpq's text for a certificate that does not match the host: the names it
/// examined are the DNS and IP subject alternative names, plus the subject CN when
/// there is no SAN of the host's kind (DNS for names, IP for addresses).
fn name_mismatch_text(cert: &[u8], expected: &ServerName<'_>, presented: &[String]) -> String {
    let (host, host_is_ip) = match expected {
        ServerName::IpAddress(ip) => (std::net::IpAddr::from(*ip).to_string(), true),
        other => (other.to_str().into_owned(), false),
    };
    let mut names: Vec<String> = Vec::new();
    let mut has_kind = false;
    for p in presented {
        if p.starts_with("DnsName(") {
            has_kind |= !host_is_ip;
            names.push(clean_name(p));
        } else if p.starts_with("IpAddress(") {
            has_kind |= host_is_ip;
            names.push(clean_name(p));
        }
    }
    if !has_kind {
        if let Some(cn) = subject_common_name(cert) {
            names.push(cn);
        }
    }
    match names.len() {
        0 => "could not get server's host name from server certificate".to_string(),
        1 => format!(
            "server certificate for \"{}\" does not match host name \"{host}\"",
            names[0]
        ),
        n => format!(
            "server certificate for \"{}\" (and {} other name{}) does not match host name \"{host}\"",
            names[0],
            n - 1,
            if n == 2 { "" } else { "s" }
        ),
    }
}

/// The subject's commonName (OID 2.5.4.3) of a DER certificate.
fn subject_common_name(cert: &[u8]) -> Option<String> {
    let (_, cstart, _) = tlv(cert, 0)?;
    let (_, tstart, tend) = tlv(cert, cstart)?; // tbsCertificate
    let mut at = tstart;
    // Optional [0] version, then serial, signature, issuer, validity, subject.
    let (tag, _, end) = tlv(cert, at)?;
    if tag == 0xa0 {
        at = end;
    }
    for _ in 0..4 {
        at = tlv(cert, at)?.2;
    }
    let (tag, sstart, send) = tlv(cert, at)?;
    if tag != 0x30 || send > tend {
        return None;
    }
    let mut rdn = sstart;
    while rdn < send {
        let (_, set_start, set_end) = tlv(cert, rdn)?;
        let mut atv = set_start;
        while atv < set_end {
            let (_, astart, aend) = tlv(cert, atv)?;
            let (otag, ostart, oend) = tlv(cert, astart)?;
            if otag == 0x06 && cert[ostart..oend] == [0x55, 0x04, 0x03] {
                let (_, vstart, vend) = tlv(cert, oend)?;
                return Some(String::from_utf8_lossy(&cert[vstart..vend]).into_owned());
            }
            atv = aend;
        }
        rdn = set_end;
    }
    None
}

/// `DnsName("x")` / `IpAddress(1.2.3.4)` (webpki's rendering) → `x` / `1.2.3.4`.
fn clean_name(p: &str) -> String {
    let inner = p
        .split_once('(')
        .map(|(_, r)| r.trim_end_matches(')'))
        .unwrap_or(p);
    inner.trim_matches('"').to_string()
}

/// The `tls-server-end-point` channel binding data: a hash of the server
/// certificate with the hash of its signature algorithm (SHA-256 for MD5/SHA-1),
/// as RFC 5929 and the PostgreSQL server compute it.
pub(crate) fn server_end_point_hash(cert_der: &[u8]) -> Option<Vec<u8>> {
    use sha2::Digest;
    let alg = signature_algorithm_oid(cert_der)?;
    // DER contents of the algorithm OIDs.
    const SHA384: &[&[u8]] = &[
        &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0c], // sha384WithRSAEncryption
        &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03],       // ecdsa-with-SHA384
    ];
    const SHA512: &[&[u8]] = &[
        &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0d], // sha512WithRSAEncryption
        &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x04],       // ecdsa-with-SHA512
    ];
    const ED25519: &[u8] = &[0x2b, 0x65, 0x70];
    if alg == ED25519 {
        // The server cannot compute a hash for these either.
        return None;
    }
    Some(if SHA384.contains(&alg) {
        sha2::Sha384::digest(cert_der).to_vec()
    } else if SHA512.contains(&alg) {
        sha2::Sha512::digest(cert_der).to_vec()
    } else {
        sha2::Sha256::digest(cert_der).to_vec()
    })
}

/// Reads one DER TLV header at `at`: (tag, content start, content end).
fn tlv(d: &[u8], at: usize) -> Option<(u8, usize, usize)> {
    let tag = *d.get(at)?;
    let l0 = *d.get(at + 1)?;
    let (len, start) = if l0 < 0x80 {
        (l0 as usize, at + 2)
    } else {
        let n = (l0 & 0x7f) as usize;
        if n == 0 || n > 4 {
            return None;
        }
        let mut len = 0usize;
        for i in 0..n {
            len = (len << 8) | *d.get(at + 2 + i)? as usize;
        }
        (len, at + 2 + n)
    };
    let end = start.checked_add(len)?;
    (end <= d.len()).then_some((tag, start, end))
}

/// The OID (content bytes) of a certificate's outer `signatureAlgorithm`.
fn signature_algorithm_oid(cert: &[u8]) -> Option<&[u8]> {
    let (t, cstart, _) = tlv(cert, 0)?;
    if t != 0x30 {
        return None;
    }
    let (_, _, tbs_end) = tlv(cert, cstart)?; // tbsCertificate
    let (t, astart, _) = tlv(cert, tbs_end)?; // signatureAlgorithm
    if t != 0x30 {
        return None;
    }
    let (t, ostart, oend) = tlv(cert, astart)?;
    (t == 0x06).then(|| &cert[ostart..oend])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_names() {
        assert_eq!(clean_name("DnsName(\"localhost\")"), "localhost");
        assert_eq!(clean_name("IpAddress(127.0.0.1)"), "127.0.0.1");
    }

    #[test]
    fn der_walk_rejects_garbage() {
        assert_eq!(signature_algorithm_oid(&[]), None);
        assert_eq!(signature_algorithm_oid(&[0x30, 0x85, 1, 2, 3, 4, 5]), None);
        assert_eq!(server_end_point_hash(&[0x30, 0x03, 0x30, 0x01, 0x00]), None);
    }
}
