//! Where the load goes and how: the target parsed from its URL, and its TLS
//! client configuration (roots, `ca_file`, ALPN, the `insecure` opt-in).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::ClientError;
use crate::profile::{HttpVersion, Profile};

/// Where to connect and how.
pub struct Target {
    pub host: String,
    pub port: u16,
    pub tls: Option<(
        tokio_rustls::TlsConnector,
        rustls::pki_types::ServerName<'static>,
    )>,
    pub connect_timeout: Duration,
    pub timeout: Duration,
    /// What the profile asked for (`target.http`).
    pub http: HttpVersion,
    /// Lanes plan for HTTP/2 (share connections): `http: "2"`, or `auto`
    /// when the preflight's TLS handshake chose `h2`.
    pub(super) h2: AtomicBool,
    /// `load.keep_alive`.
    pub keep_alive: bool,
    /// HTTP/1.1 connections use the codec ([`super::h1`]); set by [`prepare`].
    pub(super) codec: AtomicBool,
    /// `http://host:port` or `https://…`: HTTP/2 requests carry it as
    /// `:scheme` and `:authority`.
    pub(super) origin: String,
    /// The profile's requests are gRPC calls (`target.grpc`): HTTP/2 only.
    pub grpc: bool,
}

impl Target {
    /// `http://host:port` or `https://…`.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Lanes share HTTP/2 connections.
    pub fn plans_h2(&self) -> bool {
        self.h2.load(Ordering::Relaxed)
    }
    /// The preflight's ALPN answer for `auto` over TLS.
    pub(crate) fn set_h2(&self, on: bool) {
        self.h2.store(on, Ordering::Relaxed);
    }
    /// HTTP/1.1 connections go through the codec, not hyper.
    /// The protocol the run speaks, as settled by the preflight (`auto`
    /// over TLS takes what ALPN chose): `HTTP/2 over TLS`, `HTTP/1.1`, ….
    pub fn protocol(&self) -> &'static str {
        match (self.plans_h2(), self.tls.is_some()) {
            (true, true) if self.grpc => "gRPC over HTTP/2 over TLS",
            (true, false) if self.grpc => "gRPC over HTTP/2 cleartext (h2c)",
            (true, true) => "HTTP/2 over TLS",
            (true, false) => "HTTP/2 cleartext (h2c)",
            (false, true) => "HTTP/1.1 over TLS",
            (false, false) => "HTTP/1.1",
        }
    }
    pub fn uses_codec(&self) -> bool {
        self.codec.load(Ordering::Relaxed)
    }
}

/// Parse `http(s)://host[:port][/base]` into a target and the path prefix.
pub fn target_from(profile: &Profile, url: &str) -> Result<(Target, String), ClientError> {
    let uri = crate::profile::target_url(url).map_err(|e| ClientError::Url(url.into(), e))?;
    let https = uri.scheme() == "https";
    let host = uri
        .host_str()
        .ok_or_else(|| ClientError::Url(url.into(), "no host".into()))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri
        .port_or_known_default()
        .ok_or_else(|| ClientError::Url(url.into(), "no port".into()))?;
    let base = uri.path().trim_end_matches('/').to_string();
    // gRPC is HTTP/2 (h2c with prior knowledge, or ALPN h2 over TLS).
    let grpc = profile.target.grpc.is_some();
    let http = if grpc {
        HttpVersion::Http2
    } else {
        profile.target.http
    };
    let origin = format!("{}://{}", uri.scheme(), authority(&host, port, https));
    let tls = if https {
        let cfg = tls_config(&profile.target.tls, http)?;
        let name = rustls::pki_types::ServerName::try_from(host.clone())
            .map_err(|e| ClientError::Tls(format!("server name `{host}`: {e}")))?;
        Some((tokio_rustls::TlsConnector::from(Arc::new(cfg)), name))
    } else {
        None
    };
    Ok((
        Target {
            host,
            port,
            tls,
            connect_timeout: profile.target.connect_timeout,
            timeout: profile.target.timeout,
            http,
            h2: AtomicBool::new(http == HttpVersion::Http2),
            keep_alive: profile.load.keep_alive,
            codec: AtomicBool::new(true),
            origin,
            grpc,
        },
        base,
    ))
}

/// `host[:port]`, the port left out when it is the scheme's default.
fn authority(host: &str, port: u16, https: bool) -> String {
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    if (https && port == 443) || (!https && port == 80) {
        host
    } else {
        format!("{host}:{port}")
    }
}

fn tls_config(
    spec: &crate::profile::TlsSpec,
    http: HttpVersion,
) -> Result<rustls::ClientConfig, ClientError> {
    let mut cfg = tls_roots(spec)?;
    cfg.alpn_protocols = match http {
        // As before HTTP/2 existed here: no ALPN, the server assumes 1.1.
        HttpVersion::Http1 => Vec::new(),
        HttpVersion::Http2 => vec![b"h2".to_vec()],
        HttpVersion::Auto => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
    };
    if !spec.resumption {
        cfg.resumption = rustls::client::Resumption::disabled();
    }
    Ok(cfg)
}

pub(crate) fn tls_roots(
    spec: &crate::profile::TlsSpec,
) -> Result<rustls::ClientConfig, ClientError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ClientError::Tls(e.to_string()))?;
    if spec.insecure {
        return Ok(builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(insecure::NoVerify))
            .with_no_client_auth());
    }
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = &spec.ca_file {
        use rustls::pki_types::pem::PemObject;
        let certs = rustls::pki_types::CertificateDer::pem_file_iter(path)
            .map_err(|e| ClientError::Tls(format!("{}: {e}", path.display())))?;
        let mut added = 0;
        for c in certs {
            let c = c.map_err(|e| ClientError::Tls(format!("{}: {e}", path.display())))?;
            roots
                .add(c)
                .map_err(|e| ClientError::Tls(format!("{}: {e}", path.display())))?;
            added += 1;
        }
        // An empty or wrong file would otherwise pass and fail every handshake.
        if added == 0 {
            return Err(ClientError::Tls(format!(
                "{}: no certificate in it (expected PEM blocks `-----BEGIN CERTIFICATE-----`)",
                path.display()
            )));
        }
    }
    Ok(builder.with_root_certificates(roots).with_no_client_auth())
}

mod insecure {
    use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    use rustls::{DigitallySignedStruct, SignatureScheme};

    /// `tls.insecure: true`: accept any certificate (explicit opt-in only).
    #[derive(Debug)]
    pub struct NoVerify;

    impl ServerCertVerifier for NoVerify {
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
            _: &[u8],
            _: &CertificateDer<'_>,
            _: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            Ok(HandshakeSignatureValid::assertion())
        }
        fn verify_tls13_signature(
            &self,
            _: &[u8],
            _: &CertificateDer<'_>,
            _: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            Ok(HandshakeSignatureValid::assertion())
        }
        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            rustls::crypto::ring::default_provider()
                .signature_verification_algorithms
                .supported_schemes()
        }
    }
}
