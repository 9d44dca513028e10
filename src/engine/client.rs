//! The request hot path: one connection per lane, pre-built requests, TLS
//! through rustls with the ring provider.
//!
//! Which client carries a connection (one rule, decided per connection):
//! - HTTP/2 (`http: "2"`, or `auto` when ALPN chose `h2`): hyper's
//!   `client::conn::http2` (the `h2` crate).
//! - HTTP/1.1, cleartext or TLS: brunt's own codec ([`super::h1`]: the
//!   request's bytes built once, the answer parsed with `httparse`, inline in
//!   the lane's task), unless a request of the mix is one it does not take
//!   (`CONNECT`, `Upgrade`): then hyper's `client::conn::http1` for the run.
//!
//! HTTP/2: lanes share connections, `load.streams_per_connection` lanes per
//! connection ([`Pool`]), so each lane is one stream and a due request that
//! finds every stream busy waits for one, keeping its due time. Over TLS the
//! protocol is chosen by ALPN (`h2` only for `http: "2"`, `h2` then
//! `http/1.1` for `auto`); over cleartext `"2"` is h2c with prior knowledge.
//!
//! Outcome rules for broken connections (one rule, whatever the timing):
//! - `connect_error`: no connection was made — refused, unreachable, the
//!   TLS handshake rejected (certificate, protocol).
//! - `reset`: the target accepted the connection and then reset or closed it
//!   before a full answer, at whatever point the client notices: inside
//!   `connect()` (ECONNRESET: the SYN was answered, then the RST came), in
//!   the TLS handshake, while writing the request or reading the answer; an
//!   HTTP/2 stream reset (`RST_STREAM`) or a GOAWAY with an error code.
//! - HTTP/2 streams the server says it did not process — `REFUSED_STREAM`,
//!   or above a graceful GOAWAY's last stream id — are sent again once on a
//!   new connection (RFC 9113 §8.7: safe to retry); refused twice, `reset`.
//! - An HTTP/1.1 request on a kept-alive connection the server had closed
//!   (its idle timeout) is sent again once on a new connection: through the
//!   codec when not one byte of an answer came back before the close or
//!   reset (as curl does: the close crossed the request), through hyper
//!   when the request never left.

use std::cell::RefCell;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper::header::{HeaderName, HeaderValue, CONNECTION, HOST, USER_AGENT};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use thiserror::Error;
use tokio::net::TcpStream;

use super::feeder::Feeder;
use super::h1;
use super::template::{self, Dynamic, Inputs};
use crate::metrics::Class;
use crate::profile::{HttpVersion, Profile, RequestSpec};

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
    /// What the profile asked for (`target.http`).
    pub http: HttpVersion,
    /// Lanes plan for HTTP/2 (share connections): `http: "2"`, or `auto`
    /// when the preflight's TLS handshake chose `h2`.
    h2: AtomicBool,
    /// `load.keep_alive`.
    pub keep_alive: bool,
    /// HTTP/1.1 connections use the codec ([`super::h1`]); set by [`prepare`].
    codec: AtomicBool,
    /// `http://host:port` or `https://…`: HTTP/2 requests carry it as
    /// `:scheme` and `:authority`.
    origin: String,
}

impl Target {
    /// Lanes share HTTP/2 connections.
    pub fn plans_h2(&self) -> bool {
        self.h2.load(Ordering::Relaxed)
    }
    /// The preflight's ALPN answer for `auto` over TLS.
    pub(crate) fn set_h2(&self, on: bool) {
        self.h2.store(on, Ordering::Relaxed);
    }
    /// HTTP/1.1 connections go through the codec, not hyper.
    pub fn uses_codec(&self) -> bool {
        self.codec.load(Ordering::Relaxed)
    }
}

/// A request of the mix, built once.
pub struct Prepared {
    pub name: String,
    pub request: Request<Full<Bytes>>,
    /// The same request for HTTP/2: absolute URI (`:scheme`, `:authority`), no Host.
    request_h2: Request<Full<Bytes>>,
    /// The same request as HTTP/1.1 bytes for the codec (`Connection:
    /// close` in it without keep-alive).
    wire: Bytes,
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
        self.classify_code(s.as_u16())
    }
    pub fn classify_code(&self, code: u16) -> Class {
        let code = code as usize;
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
    let http = profile.target.http;
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

fn tls_roots(spec: &crate::profile::TlsSpec) -> Result<rustls::ClientConfig, ClientError> {
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
    let mut mix = prepare_mix(profile, &host_header, base, inputs, feeders)?;
    for p in &mut mix {
        p.request_h2 = to_h2(p.request.clone(), &target.origin);
        let mut wire = Vec::with_capacity(256);
        h1::encode(&p.request, !target.keep_alive, &mut wire);
        p.wire = Bytes::from(wire);
    }
    target.codec.store(
        mix.iter().all(|p| h1::encodable(&p.request)),
        Ordering::Relaxed,
    );
    Ok(mix)
}

/// A request in HTTP/2's form: an absolute URI (hyper sends its scheme and
/// authority as `:scheme` and `:authority`) and no `Host` header.
fn to_h2(mut req: Request<Full<Bytes>>, origin: &str) -> Request<Full<Bytes>> {
    let pq = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    if let Ok(uri) = format!("{origin}{pq}").parse::<Uri>() {
        *req.uri_mut() = uri;
    }
    req.headers_mut().remove(HOST);
    req
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
        request_h2: req.clone(),
        wire: Bytes::new(),
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
    /// This exchange opened a connection, taking this long (TCP + TLS).
    pub connected: Option<Duration>,
}

impl From<Class> for Answer {
    fn from(class: Class) -> Self {
        Answer {
            class,
            retry_after: false,
            extracted: Vec::new(),
            connected: None,
        }
    }
}

/// One connection's request side.
enum Sender {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
    /// The HTTP/1.1 codec: the connection itself, driven by the lane.
    Codec(h1::Conn),
}

impl Sender {
    fn is_closed(&self) -> bool {
        match self {
            Sender::H1(s) => s.is_closed(),
            Sender::H2(s) => s.is_closed(),
            // Found out by the next exchange (and then sent again once).
            Sender::Codec(_) => false,
        }
    }
    async fn ready(&mut self) -> Result<(), hyper::Error> {
        match self {
            Sender::H1(s) => s.ready().await,
            Sender::H2(s) => s.ready().await,
            Sender::Codec(_) => Ok(()),
        }
    }
}

/// HTTP/2 connections of one worker, shared by its lanes: lane `i` uses
/// connection `i / streams_per_connection`. HTTP/1.1: every lane its own.
pub struct Pool {
    h2: bool,
    streams: usize,
    slots: RefCell<Vec<Rc<Slot>>>,
}

/// One shared HTTP/2 connection; the lock makes the lanes that find it
/// closed open one new connection, not one each.
#[derive(Default)]
struct Slot {
    sender: RefCell<Option<http2::SendRequest<Full<Bytes>>>>,
    opening: tokio::sync::Mutex<()>,
}

impl Pool {
    pub fn new(t: &Target, streams_per_connection: usize) -> Pool {
        Pool {
            // Without keep-alive every request opens its own connection.
            h2: t.plans_h2() && t.keep_alive,
            streams: streams_per_connection.max(1),
            slots: RefCell::new(Vec::new()),
        }
    }
    /// Lanes (open model) per connection: 1 for HTTP/1.1.
    pub fn streams(&self) -> usize {
        if self.h2 {
            self.streams
        } else {
            1
        }
    }
    /// The connection of lane (or virtual user) `lane`.
    pub fn conn(&self, lane: usize) -> Conn {
        if !self.h2 {
            return Conn::default();
        }
        let k = lane / self.streams;
        let mut slots = self.slots.borrow_mut();
        while slots.len() <= k {
            slots.push(Rc::new(Slot::default()));
        }
        Conn {
            slot: Some(slots[k].clone()),
            ..Conn::default()
        }
    }
}

/// A lane's connection: opened lazily, reopened when the server closes it.
#[derive(Default)]
pub struct Conn {
    sender: Option<Sender>,
    /// HTTP/2: the connection this lane shares.
    slot: Option<Rc<Slot>>,
    /// The codec: a templated request's bytes, a checked body (reused).
    wire: Vec<u8>,
    body: Vec<u8>,
    /// The request timeout, reset per exchange rather than armed anew:
    /// a later deadline on a registered timer is one store, no wheel work.
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// Runs hyper's HTTP/2 connection tasks on the worker's own thread.
#[derive(Clone, Copy)]
struct LocalExec;

impl<F> hyper::rt::Executor<F> for LocalExec
where
    F: std::future::Future + 'static,
{
    fn execute(&self, fut: F) {
        tokio::task::spawn_local(fut);
    }
}

/// A TCP connect or TLS handshake error: `reset` when the target had
/// accepted the connection and then broke it (see the module doc),
/// `connect_error` otherwise.
fn connect_class(e: &std::io::Error) -> Class {
    match e.kind() {
        k if is_reset(k) => Class::Reset,
        std::io::ErrorKind::TimedOut => Class::Timeout,
        _ => Class::ConnectError,
    }
}

/// The I/O errors that mean the target broke a connection it had accepted:
/// the one rule behind `reset` (the module doc), wherever it is noticed.
pub(crate) fn is_reset(kind: std::io::ErrorKind) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        kind,
        ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof
    )
}

/// Open a connection: TCP, TLS (ALPN picks the protocol), the HTTP
/// handshake. Returns the time it took with the sender.
async fn connect(t: &Target) -> Result<(Sender, Duration), Class> {
    let began = Instant::now();
    let tcp = match tokio::time::timeout(
        t.connect_timeout,
        TcpStream::connect((t.host.as_str(), t.port)),
    )
    .await
    {
        Err(_) => return Err(Class::Timeout),
        Ok(Err(e)) => return Err(connect_class(&e)),
        Ok(Ok(s)) => s,
    };
    let _ = tcp.set_nodelay(true);
    let codec = t.uses_codec();
    let sender = match &t.tls {
        None if codec && t.http != HttpVersion::Http2 => {
            Sender::Codec(h1::Conn::new(h1::Io::Tcp(tcp)))
        }
        None => handshake(TokioIo::new(tcp), t.http == HttpVersion::Http2).await?,
        Some((connector, name)) => {
            let tls =
                match tokio::time::timeout(t.connect_timeout, connector.connect(name.clone(), tcp))
                    .await
                {
                    Err(_) => return Err(Class::Timeout),
                    Ok(Err(e)) => return Err(connect_class(&e)),
                    Ok(Ok(s)) => s,
                };
            let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
            if t.http == HttpVersion::Http2 && !h2 {
                // The preflight refuses such a target; a server that changed mid-run.
                return Err(Class::ConnectError);
            }
            if codec && !h2 {
                Sender::Codec(h1::Conn::new(h1::Io::Tls(Box::new(tls))))
            } else {
                handshake(TokioIo::new(tls), h2).await?
            }
        }
    };
    Ok((sender, began.elapsed()))
}

async fn handshake<IO>(io: TokioIo<IO>, h2: bool) -> Result<Sender, Class>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + 'static,
{
    if h2 {
        let (sender, conn) = http2::Builder::new(LocalExec)
            .handshake(io)
            .await
            .map_err(|e| classify_error(&e))?;
        tokio::task::spawn_local(async move {
            let _ = conn.await;
        });
        Ok(Sender::H2(sender))
    } else {
        let (sender, conn) = http1::handshake(io).await.map_err(|e| classify_error(&e))?;
        tokio::task::spawn_local(async move {
            let _ = conn.await;
        });
        Ok(Sender::H1(sender))
    }
}

/// The server did not process this request and says so (HTTP/2
/// `REFUSED_STREAM`, or a stream above a graceful GOAWAY's last id).
fn unprocessed(e: &hyper::Error) -> bool {
    h2_error(e).is_some_and(|h| {
        h.reason() == Some(h2::Reason::REFUSED_STREAM)
            || (h.is_go_away() && h.reason() == Some(h2::Reason::NO_ERROR))
    })
}

fn h2_error(e: &hyper::Error) -> Option<&h2::Error> {
    let mut src: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = src {
        if let Some(h) = s.downcast_ref::<h2::Error>() {
            return Some(h);
        }
        src = s.source();
    }
    None
}

/// A failed codec exchange's class (the same rules as hyper's errors get),
/// and whether it may be sent again: nothing came back and the connection
/// was closed or reset under it.
fn codec_failed(f: h1::Failed) -> (Class, bool) {
    let class = match &f {
        h1::Failed::Io(e, _) => match e.kind() {
            k if is_reset(k) => Class::Reset,
            std::io::ErrorKind::TimedOut => Class::Timeout,
            _ => Class::OtherError,
        },
        h1::Failed::Closed(_) => Class::Reset,
        // A response the codec cannot frame: a protocol error.
        h1::Failed::Protocol(_) => Class::OtherError,
        h1::Failed::TooLarge => Class::CheckFailed,
    };
    (class, class == Class::Reset && f.unanswered())
}

fn classify_error(e: &hyper::Error) -> Class {
    if e.is_timeout() {
        return Class::Timeout;
    }
    if e.is_incomplete_message() || e.is_canceled() || e.is_closed() {
        return Class::Reset;
    }
    if let Some(h) = h2_error(e) {
        if h.is_reset() || h.is_go_away() {
            return Class::Reset;
        }
        return match h.get_io().map(connect_class) {
            Some(Class::ConnectError) | None => Class::OtherError,
            Some(c) => c,
        };
    }
    let mut src: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                k if is_reset(k) => Class::Reset,
                std::io::ErrorKind::TimedOut => Class::Timeout,
                _ => Class::OtherError,
            };
        }
        src = s.source();
    }
    Class::OtherError
}

impl Conn {
    /// Make sure the lane has a live sender: its own, the shared HTTP/2
    /// connection's, or a new connection (its connect time goes to `connected`).
    async fn open(&mut self, t: &Target, connected: &mut Option<Duration>) -> Result<(), Class> {
        if self.sender.as_ref().is_some_and(|s| !s.is_closed()) {
            return Ok(());
        }
        self.sender = None;
        let Some(slot) = self.slot.clone() else {
            let (s, took) = connect(t).await?;
            *connected = Some(took);
            self.sender = Some(s);
            return Ok(());
        };
        let _guard = slot.opening.lock().await;
        let live = slot
            .sender
            .borrow()
            .as_ref()
            .filter(|s| !s.is_closed())
            .cloned();
        if let Some(s) = live {
            self.sender = Some(Sender::H2(s));
            return Ok(());
        }
        let (s, took) = connect(t).await?;
        *connected = Some(took);
        if let Sender::H2(h) = &s {
            *slot.sender.borrow_mut() = Some(h.clone());
        }
        self.sender = Some(s);
        Ok(())
    }

    /// [`Conn::exchange`] within the request timeout; `None`: it ran out
    /// (the connection is then dropped: its state is unknown).
    pub async fn exchange_within(
        &mut self,
        t: &Target,
        p: &Prepared,
        msg: Option<Request<Full<Bytes>>>,
        check: bool,
    ) -> Option<Answer> {
        let now = tokio::time::Instant::now();
        // A timeout too large for the clock: a year is never reached.
        let deadline = now
            .checked_add(t.timeout)
            .unwrap_or_else(|| now + Duration::from_secs(365 * 86_400));
        let mut timer = match self.timer.take() {
            Some(mut s) => {
                s.as_mut().reset(deadline);
                s
            }
            None => Box::pin(tokio::time::sleep_until(deadline)),
        };
        let a = tokio::select! {
            biased;
            a = self.exchange(t, p, msg, check) => Some(a),
            _ = timer.as_mut() => None,
        };
        self.timer = Some(timer);
        if a.is_none() {
            self.reset();
        }
        a
    }

    /// Send one request and read its whole answer. Dropping this future
    /// mid-way leaves the connection unusable: call [`Conn::reset`].
    /// `msg`: this send's rendered request (templated), or `None` to send
    /// the pre-built one.
    pub async fn exchange(
        &mut self,
        t: &Target,
        p: &Prepared,
        mut msg: Option<Request<Full<Bytes>>>,
        check: bool,
    ) -> Answer {
        let mut connected = None;
        let mut a = self
            .exchange_inner(t, p, &mut msg, check, &mut connected)
            .await;
        a.connected = connected;
        if !t.keep_alive {
            // One connection per request: dropping the sender closes it.
            self.sender = None;
        }
        a
    }

    async fn exchange_inner(
        &mut self,
        t: &Target,
        p: &Prepared,
        msg: &mut Option<Request<Full<Bytes>>>,
        check: bool,
        connected: &mut Option<Duration>,
    ) -> Answer {
        // One retry when a kept-alive connection turns out closed before the
        // request went out (the server's idle timeout), or when an HTTP/2
        // server says it did not process the request.
        for attempt in 0..2 {
            let reused = self.sender.is_some();
            if let Err(c) = self.open(t, connected).await {
                self.sender = None;
                return c.into();
            }
            if let Some(Sender::Codec(_)) = self.sender {
                match self.exchange_codec(t, p, msg.as_ref(), check).await {
                    Ok(a) => return a,
                    Err((class, retry)) => {
                        self.sender = None;
                        if retry && reused && attempt == 0 {
                            continue;
                        }
                        return class.into();
                    }
                }
            }
            let Some(sender) = self.sender.as_mut() else {
                return Class::OtherError.into();
            };
            if sender.ready().await.is_err() {
                self.sender = None;
                if attempt == 0 {
                    continue;
                }
                return Class::Reset.into();
            }
            let sent = match sender {
                Sender::H1(s) => {
                    let mut req = msg.take().unwrap_or_else(|| p.request.clone());
                    if !t.keep_alive {
                        req.headers_mut()
                            .insert(CONNECTION, HeaderValue::from_static("close"));
                    }
                    s.try_send_request(req).await.map_err(|mut e| {
                        // An unsent request comes back, to be retried as it was.
                        *msg = e.take_message();
                        let retry = msg.is_some() && reused;
                        (classify_error(e.error()), retry)
                    })
                }
                Sender::Codec(_) => return Class::OtherError.into(),
                Sender::H2(s) => {
                    let req = match msg.as_ref() {
                        Some(m) => to_h2(m.clone(), &t.origin),
                        None => p.request_h2.clone(),
                    };
                    s.try_send_request(req).await.map_err(|mut e| {
                        let unsent = e.take_message().is_some();
                        let retry = (unsent && reused) || unprocessed(e.error());
                        (classify_error(e.error()), retry)
                    })
                }
            };
            let resp = match sent {
                Ok(r) => r,
                Err((class, retry)) => {
                    self.sender = None;
                    if retry && attempt == 0 {
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
                connected: None,
            };
        }
        Class::Reset.into()
    }

    /// One exchange on the codec's connection; `Err`: its class, and
    /// whether the request may be sent again (not one byte of an answer
    /// came back: a kept-alive connection the server had closed).
    async fn exchange_codec(
        &mut self,
        t: &Target,
        p: &Prepared,
        msg: Option<&Request<Full<Bytes>>>,
        check: bool,
    ) -> Result<Answer, (Class, bool)> {
        let Conn {
            sender, wire, body, ..
        } = self;
        let Some(Sender::Codec(c)) = sender.as_mut() else {
            return Err((Class::OtherError, false));
        };
        let bytes: &[u8] = match msg {
            Some(m) => {
                wire.clear();
                h1::encode(m, !t.keep_alive, wire);
                wire
            }
            None => &p.wire,
        };
        let head_request = p.request.method() == Method::HEAD;
        let mut headers = (!p.extract.is_empty()).then(hyper::HeaderMap::new);
        let head = c
            .send(bytes, head_request, headers.as_mut())
            .await
            .map_err(codec_failed)?;
        let mut class = p.classify_code(head.status);
        let retry_after = class == Class::Shed && head.retry_after;
        let want = !p.extract.is_empty() && class == Class::Ok;
        let keep = (check || want) && class == Class::Ok;
        body.clear();
        let reusable = c
            .body(&head, keep.then_some(&mut *body), EXTRACT_LIMIT)
            .await
            .map_err(codec_failed)?;
        let mut extracted = Vec::new();
        if keep {
            if check && !p.body_ok(body) {
                class = Class::CheckFailed;
            }
            let none = hyper::HeaderMap::new();
            for (i, x) in &p.extract {
                match x.take(headers.as_ref().unwrap_or(&none), body) {
                    Some(v) => extracted.push((*i, v)),
                    // Later steps would go out without it.
                    None => class = Class::CheckFailed,
                }
            }
            // A lane keeps no more than a small answer's room between checks.
            body.clear();
            body.shrink_to(64 * 1024);
        }
        if !reusable {
            *sender = None;
        }
        Ok(Answer {
            class,
            retry_after,
            extracted,
            connected: None,
        })
    }

    /// Forget the connection (after a timeout the stream is in an unknown state).
    pub fn reset(&mut self) {
        self.sender = None;
    }
}
