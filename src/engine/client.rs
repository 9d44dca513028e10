//! The request hot path: one HTTP/1.1 connection per lane on hyper's
//! `client::conn::http1` (measured ~2× cheaper per request than reqwest),
//! pre-built requests, TLS through rustls with the ring provider.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderName, HeaderValue, HOST, USER_AGENT};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use thiserror::Error;
use tokio::net::TcpStream;

use super::feeder::Feeder;
use super::template::{self, Dynamic, Inputs};
use crate::metrics::Class;
use crate::profile::{Profile, RequestSpec};

#[derive(Debug, Error)]
pub enum ClientError {
    #[error("target url `{0}`: {1}")]
    Url(String, String),
    #[error("request {0}: {1}")]
    Request(String, String),
    #[error("TLS setup: {0}")]
    Tls(String),
    #[error(transparent)]
    Template(#[from] super::template::TemplateError),
}

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
}

/// A request of the mix, built once.
pub struct Prepared {
    pub name: String,
    pub request: Request<Full<Bytes>>,
    /// `ok[status]` says whether a status is expected.
    ok: Box<[bool; 600]>,
    contains: Option<String>,
    regex: Option<regex::Regex>,
    /// Check the body of one response in this many (0 = never).
    pub check_every: u64,
    /// The templated fields, rendered per send; `None`: send `request` as built.
    pub dynamic: Option<Box<Dynamic>>,
    /// Scenario steps: values to take from the answer, by variable index.
    pub extract: Vec<(usize, Extractor)>,
}

/// Where a scenario step's value comes from.
pub enum Extractor {
    /// A JSON pointer into the body.
    Json(String),
    /// First capture group (or the whole match) of a regex on the body.
    Regex(regex::bytes::Regex),
    Header(HeaderName),
}

/// Largest body read for `extract` (a bigger answer counts as `check_failed`).
const EXTRACT_LIMIT: usize = 1 << 20;

impl Extractor {
    fn take(&self, headers: &hyper::HeaderMap, body: &[u8]) -> Option<Bytes> {
        match self {
            Extractor::Header(h) => headers.get(h).map(|v| Bytes::copy_from_slice(v.as_bytes())),
            Extractor::Regex(re) => {
                let c = re.captures(body)?;
                let m = c.get(1).or_else(|| c.get(0))?;
                Some(Bytes::copy_from_slice(m.as_bytes()))
            }
            Extractor::Json(ptr) => {
                let v: serde_json::Value = serde_json::from_slice(body).ok()?;
                match v.pointer(ptr)? {
                    serde_json::Value::String(s) => Some(Bytes::from(s.clone())),
                    serde_json::Value::Null => None,
                    other => Some(Bytes::from(other.to_string())),
                }
            }
        }
    }
}

impl Prepared {
    pub fn classify_status(&self, s: StatusCode) -> Class {
        let code = s.as_u16() as usize;
        if self.ok.get(code).copied().unwrap_or(false) {
            Class::Ok
        } else if code == 503 || code == 429 {
            Class::Shed
        } else {
            Class::HttpError
        }
    }
    pub fn has_check(&self) -> bool {
        self.check_every > 0 && (self.contains.is_some() || self.regex.is_some())
    }
    pub fn body_ok(&self, body: &[u8]) -> bool {
        let text = String::from_utf8_lossy(body);
        self.contains.as_deref().is_none_or(|c| text.contains(c))
            && self.regex.as_ref().is_none_or(|r| r.is_match(&text))
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
    let tls = if https {
        let cfg = tls_config(&profile.target.tls)?;
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
        },
        base,
    ))
}

fn tls_config(spec: &crate::profile::TlsSpec) -> Result<rustls::ClientConfig, ClientError> {
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
        for c in certs {
            let c = c.map_err(|e| ClientError::Tls(format!("{}: {e}", path.display())))?;
            roots
                .add(c)
                .map_err(|e| ClientError::Tls(format!("{}: {e}", path.display())))?;
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

/// Build the request mix once; templated fields are compiled against
/// `inputs` (environment) and `feeders`.
pub fn prepare(
    profile: &Profile,
    target: &Target,
    base: &str,
    inputs: &Inputs,
    feeders: &[Feeder],
) -> Result<Vec<Prepared>, ClientError> {
    let host_header = if target.port == 80 || target.port == 443 {
        target.host.clone()
    } else {
        format!("{}:{}", target.host, target.port)
    };
    prepare_mix(profile, &host_header, base, inputs, feeders)
}

/// Every request of the mix (scenario steps included, in
/// [`Profile::all_requests`] order), compiled; `host` is the Host header.
pub fn prepare_mix(
    profile: &Profile,
    host: &str,
    base: &str,
    inputs: &Inputs,
    feeders: &[Feeder],
) -> Result<Vec<Prepared>, ClientError> {
    profile
        .all_requests()
        .into_iter()
        .map(|(key, scenario, r)| {
            let (label, vars) = match scenario.and_then(|s| profile.scenarios.get(s)) {
                Some(sc) => (Some(sc.name.as_str()), template::scenario_vars(&sc.steps)),
                None => (None, Vec::new()),
            };
            let step = Step {
                key: &key,
                scenario: label,
                vars: &vars,
            };
            prepare_one(&step, r, profile, base, host, inputs, feeders)
        })
        .collect()
}

/// Where a request sits in the mix.
struct Step<'a> {
    /// `requests[0]`, `scenarios[1].steps[2]`: names fields in errors.
    key: &'a str,
    scenario: Option<&'a str>,
    /// The scenario's variables (see [`template::scenario_vars`]).
    vars: &'a [String],
}

fn prepare_one(
    step: &Step<'_>,
    r: &RequestSpec,
    profile: &Profile,
    base: &str,
    host: &str,
    inputs: &Inputs,
    feeders: &[Feeder],
) -> Result<Prepared, ClientError> {
    let name = r.label();
    let name = match step.scenario {
        Some(sc) => format!("{sc}/{name}"),
        None => name,
    };
    let key = step.key;
    let bad = |m: String| ClientError::Request(name.clone(), m);
    let method = Method::from_bytes(r.method.as_bytes()).map_err(|e| bad(e.to_string()))?;
    // Target headers first; a request header of the same name replaces one.
    let mut merged: Vec<(&str, &str, String)> = profile
        .target
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str(), format!("target.headers.{k}")))
        .collect();
    for (k, v) in &r.headers {
        merged.retain(|(n, _, _)| !n.eq_ignore_ascii_case(k));
        merged.push((k.as_str(), v.as_str(), format!("{key}.headers.{k}")));
    }
    let f = template::compile_fields(
        key,
        base,
        &r.path,
        &merged,
        r.body.as_deref(),
        inputs,
        feeders,
        step.vars,
    )?;
    let uri: &[u8] = if f.dynamic_path.is_some() {
        b"/"
    } else {
        f.path.as_ref()
    };
    let body = f.body.clone();
    let mut req = Request::builder()
        .method(method)
        .uri(uri)
        .body(Full::new(body.clone()))
        .map_err(|e| bad(e.to_string()))?;
    let h = req.headers_mut();
    h.insert(
        HOST,
        HeaderValue::from_str(host).map_err(|e| bad(e.to_string()))?,
    );
    h.insert(
        USER_AGENT,
        HeaderValue::from_static(concat!("brunt/", env!("CARGO_PKG_VERSION"))),
    );
    for (k, v) in &f.headers {
        let k =
            HeaderName::from_bytes(k.as_bytes()).map_err(|e| bad(format!("header `{k}`: {e}")))?;
        let v = HeaderValue::from_maybe_shared(v.clone())
            .map_err(|e| bad(format!("header `{k}` value: {e}")))?;
        h.insert(k, v);
    }
    if !body.is_empty() && !h.contains_key(hyper::header::CONTENT_LENGTH) {
        h.insert(hyper::header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    }
    let mut dyn_headers = Vec::new();
    for (k, c) in f.dynamic_headers {
        let k =
            HeaderName::from_bytes(k.as_bytes()).map_err(|e| bad(format!("header `{k}`: {e}")))?;
        dyn_headers.push((k, c));
    }
    let dynamic =
        Dynamic::new(req.clone(), f.dynamic_path, dyn_headers, f.dynamic_body).map(Box::new);
    let mut ok = Box::new([false; 600]);
    if r.expect.status.is_empty() {
        for s in ok.iter_mut().take(400).skip(200) {
            *s = true;
        }
    } else {
        for s in &r.expect.status {
            if let Some(slot) = ok.get_mut(*s as usize) {
                *slot = true;
            }
        }
    }
    let regex = match &r.expect.body_regex {
        Some(re) => Some(regex::Regex::new(re).map_err(|e| bad(e.to_string()))?),
        None => None,
    };
    let p = r.expect.sample.0;
    let check_every = if p <= 0.0 {
        0
    } else {
        (1.0 / p).round().max(1.0) as u64
    };
    let mut extract = Vec::new();
    for (var, x) in &r.extract {
        let idx = step.vars.iter().position(|v| v == var).unwrap_or(0);
        let e = if let Some(p) = &x.json {
            Extractor::Json(p.clone())
        } else if let Some(re) = &x.regex {
            Extractor::Regex(
                regex::bytes::Regex::new(re)
                    .map_err(|e| bad(format!("extract.{var}.regex: {e}")))?,
            )
        } else if let Some(h) = &x.header {
            Extractor::Header(
                HeaderName::from_bytes(h.as_bytes())
                    .map_err(|e| bad(format!("extract.{var}.header: {e}")))?,
            )
        } else {
            return Err(bad(format!("extract.{var}: give json, regex or header")));
        };
        extract.push((idx, e));
    }
    Ok(Prepared {
        extract,
        name,
        request: req,
        ok,
        contains: r.expect.body_contains.clone(),
        regex,
        check_every,
        dynamic,
    })
}

/// How one exchange went.
pub struct Answer {
    pub class: Class,
    /// A shed answer carried `Retry-After`.
    pub retry_after: bool,
    /// Scenario steps: the values `extract` took, by variable index.
    pub extracted: Vec<(usize, Bytes)>,
}

impl From<Class> for Answer {
    fn from(class: Class) -> Self {
        Answer {
            class,
            retry_after: false,
            extracted: Vec::new(),
        }
    }
}

/// A lane's connection: opened lazily, reopened when the server closes it.
#[derive(Default)]
pub struct Conn {
    sender: Option<SendRequest<Full<Bytes>>>,
}

#[derive(Debug)]
enum Fail {
    Connect(Class),
}

async fn connect(t: &Target) -> Result<SendRequest<Full<Bytes>>, Fail> {
    let tcp = match tokio::time::timeout(
        t.connect_timeout,
        TcpStream::connect((t.host.as_str(), t.port)),
    )
    .await
    {
        Err(_) => return Err(Fail::Connect(Class::Timeout)),
        Ok(Err(_)) => return Err(Fail::Connect(Class::ConnectError)),
        Ok(Ok(s)) => s,
    };
    let _ = tcp.set_nodelay(true);
    match &t.tls {
        None => {
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
                .await
                .map_err(|_| Fail::Connect(Class::ConnectError))?;
            tokio::task::spawn_local(async move {
                let _ = conn.await;
            });
            Ok(sender)
        }
        Some((connector, name)) => {
            let tls = connector
                .connect(name.clone(), tcp)
                .await
                .map_err(|_| Fail::Connect(Class::ConnectError))?;
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
                .await
                .map_err(|_| Fail::Connect(Class::ConnectError))?;
            tokio::task::spawn_local(async move {
                let _ = conn.await;
            });
            Ok(sender)
        }
    }
}

fn classify_error(e: &hyper::Error) -> Class {
    if e.is_timeout() {
        return Class::Timeout;
    }
    if e.is_incomplete_message() || e.is_canceled() || e.is_closed() {
        return Class::Reset;
    }
    let mut src: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            return match io.kind() {
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => Class::Reset,
                TimedOut => Class::Timeout,
                _ => Class::OtherError,
            };
        }
        src = s.source();
    }
    Class::OtherError
}

impl Conn {
    /// Send one request and read its whole answer. The caller applies the
    /// request timeout around this future (dropping it drops the connection).
    /// `msg`: this send's rendered request (templated), or `None` to send
    /// the pre-built one.
    pub async fn exchange(
        &mut self,
        t: &Target,
        p: &Prepared,
        mut msg: Option<Request<Full<Bytes>>>,
        check: bool,
    ) -> Answer {
        // One retry when a kept-alive connection turns out closed before the
        // request went out: that is the server's idle timeout, not an error.
        for attempt in 0..2 {
            let reused = self.sender.is_some();
            let sender = match self.sender.as_mut() {
                Some(s) if !s.is_closed() => s,
                _ => match connect(t).await {
                    Ok(s) => self.sender.insert(s),
                    Err(Fail::Connect(c)) => {
                        self.sender = None;
                        return c.into();
                    }
                },
            };
            if sender.ready().await.is_err() {
                self.sender = None;
                if attempt == 0 {
                    continue;
                }
                return Class::Reset.into();
            }
            let req = msg.take().unwrap_or_else(|| p.request.clone());
            let resp = match sender.try_send_request(req).await {
                Ok(r) => r,
                Err(mut e) => {
                    // An unsent request comes back, to be retried as it was.
                    msg = e.take_message();
                    let unsent = msg.is_some();
                    let class = classify_error(e.error());
                    self.sender = None;
                    if unsent && reused && attempt == 0 {
                        continue;
                    }
                    return class.into();
                }
            };
            let mut class = p.classify_status(resp.status());
            let retry_after =
                class == Class::Shed && resp.headers().contains_key(hyper::header::RETRY_AFTER);
            let want = !p.extract.is_empty() && class == Class::Ok;
            let headers = if want {
                resp.headers().clone()
            } else {
                hyper::HeaderMap::new()
            };
            let mut body = resp.into_body();
            let mut extracted = Vec::new();
            if (check || want) && class == Class::Ok {
                match http_body_util::Limited::new(body, EXTRACT_LIMIT)
                    .collect()
                    .await
                {
                    Ok(b) => {
                        let b = b.to_bytes();
                        if check && !p.body_ok(&b) {
                            class = Class::CheckFailed;
                        }
                        for (i, x) in &p.extract {
                            match x.take(&headers, &b) {
                                Some(v) => extracted.push((*i, v)),
                                // Later steps would go out without it.
                                None => class = Class::CheckFailed,
                            }
                        }
                    }
                    Err(e) => {
                        self.sender = None;
                        return match e.downcast_ref::<hyper::Error>() {
                            Some(e) => classify_error(e).into(),
                            None => Class::CheckFailed.into(),
                        };
                    }
                }
            } else {
                while let Some(f) = body.frame().await {
                    if let Err(e) = f {
                        self.sender = None;
                        return classify_error(&e).into();
                    }
                }
            }
            return Answer {
                class,
                retry_after,
                extracted,
            };
        }
        Class::Reset.into()
    }

    /// Forget the connection (after a timeout the stream is in an unknown state).
    pub fn reset(&mut self) {
        self.sender = None;
    }
}
