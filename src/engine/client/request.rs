//! The request mix compiled once: each request's hyper, HTTP/2 and codec
//! forms, its expected statuses and body checks, and a step's extractors.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue, HOST, USER_AGENT};
use hyper::{Method, Request, Uri};

use super::{ClientError, Target};
use crate::engine::feeder::Feeder;
use crate::engine::grpc;
use crate::engine::h1;
use crate::engine::template::{self, Dynamic, Escape, Inputs};
use crate::profile::{Profile, RequestSpec, Retry};

/// A request of the mix, built once.
pub struct Prepared {
    pub name: String,
    /// Its index in the mix (scenario steps included).
    pub index: usize,
    pub request: Request<Full<Bytes>>,
    /// The same request for HTTP/2: absolute URI (`:scheme`, `:authority`), no Host.
    pub(super) request_h2: Request<Full<Bytes>>,
    /// The same request as HTTP/1.1 bytes for the codec (`Connection:
    /// close` in it without keep-alive).
    pub(super) wire: Bytes,
    /// `ok[status]` says whether a status is expected.
    pub(super) ok: Box<[bool; 600]>,
    pub(super) contains: Option<String>,
    pub(super) regex: Option<regex::Regex>,
    /// Check the body of one response in this many (0 = never).
    pub check_every: u64,
    /// The templated fields, rendered per send; `None`: send `request` as built.
    pub dynamic: Option<Box<Dynamic>>,
    /// Scenario steps: values to take from the answer, by variable index.
    pub extract: Vec<(usize, Extractor)>,
    /// What may be sent again, from the method and `retry` (see [`Resend`]).
    pub(super) resend: Resend,
    /// Largest body read for a check or an extraction (`expect.max_body`).
    pub(super) max_body: usize,
    /// A gRPC call: its answer is read by [`grpc::read`].
    pub grpc: Option<Arc<grpc::Call>>,
    /// A step of a scenario that keeps cookies: its answers' `Set-Cookie`
    /// values are handed out ([`super::Answer::set_cookies`]).
    pub cookies: bool,
    /// A step whose `refresh.body_regex` says its credentials expired: every
    /// answer's body is read (up to `max_body`) and matched
    /// ([`super::Answer::expired`]).
    pub expired: Option<regex::bytes::Regex>,
}

impl Prepared {
    /// This send's message with `extra` headers set (a trace context, a
    /// cookie): the rendered one (`msg`), or a copy of the pre-built one in
    /// the form the target's protocol takes.
    pub fn message_with(
        &self,
        t: &Target,
        msg: Option<Request<Full<Bytes>>>,
        extra: &[(HeaderName, HeaderValue)],
    ) -> Request<Full<Bytes>> {
        let mut req = msg.unwrap_or_else(|| {
            if t.plans_h2() {
                self.request_h2.clone()
            } else {
                self.request.clone()
            }
        });
        for (k, v) in extra {
            req.headers_mut().insert(k.clone(), v.clone());
        }
        req
    }
}

/// Which unanswered sends of a request go out once more on a new connection.
#[derive(Debug, Clone, Copy)]
pub(super) struct Resend {
    /// The server may have processed it (an HTTP/1.1 request written to a
    /// kept-alive connection that closed without a byte of answer).
    pub unknown: bool,
    /// The protocol says it was not processed (never left; HTTP/2 refused).
    pub unprocessed: bool,
}

impl Resend {
    fn of(method: &Method, retry: Retry) -> Resend {
        // RFC 9110 §9.2.2: the idempotent methods.
        let idempotent = matches!(
            *method,
            Method::GET
                | Method::HEAD
                | Method::OPTIONS
                | Method::TRACE
                | Method::PUT
                | Method::DELETE
        );
        match retry {
            Retry::Idempotent => Resend {
                unknown: idempotent,
                unprocessed: true,
            },
            Retry::Never => Resend {
                unknown: false,
                unprocessed: false,
            },
            Retry::Always => Resend {
                unknown: true,
                unprocessed: true,
            },
        }
    }
}

/// Where a scenario step's value comes from.
pub enum Extractor {
    /// A JSON pointer into the body.
    Json(String),
    /// First capture group (or the whole match) of a regex on the body.
    Regex(regex::bytes::Regex),
    Header(HeaderName),
}

/// Largest body read for a check or `extract` unless `expect.max_body`
/// says otherwise; a bigger answer is `body_too_large`.
pub(super) const DEFAULT_MAX_BODY: usize = 1 << 20;

impl Extractor {
    /// As the errors table names an extraction that found nothing.
    pub(crate) fn describe(&self) -> String {
        match self {
            Extractor::Json(p) => format!("extract json {p:?}"),
            Extractor::Regex(r) => format!("extract regex {:?}", r.as_str()),
            Extractor::Header(h) => format!("extract header {h}"),
        }
    }
    pub(crate) fn take(&self, headers: &hyper::HeaderMap, body: &[u8]) -> Option<Bytes> {
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

/// Build the request mix once; templated fields are compiled against
/// `inputs` (environment) and `feeders`, gRPC calls against their `.proto`
/// files ([`grpc::compile`]).
pub fn prepare(
    profile: &Profile,
    target: &Target,
    base: &str,
    inputs: &Inputs,
    feeders: &[Feeder],
) -> Result<Vec<Prepared>, ClientError> {
    let calls = grpc::compile(profile, inputs.base_dir.as_deref())?;
    let mut mix = prepare_mix(profile, &host_header(target), base, inputs, feeders)?;
    for p in &mut mix {
        if let Some(call) = calls.get(p.index).cloned().flatten() {
            call.prebuild(&mut p.request)
                .map_err(|e| ClientError::Request(p.name.clone(), e))?;
            p.grpc = Some(call);
        }
        finish_forms(p, target);
    }
    target.codec.store(
        mix.iter().all(|p| h1::encodable(&p.request)),
        Ordering::Relaxed,
    );
    Ok(mix)
}

/// The Host header: the port only when it is not the scheme's.
fn host_header(target: &Target) -> String {
    if target.port == 80 || target.port == 443 {
        target.host.clone()
    } else {
        format!("{}:{}", target.host, target.port)
    }
}

/// A request's HTTP/2 form and its codec bytes, from the hyper form.
fn finish_forms(p: &mut Prepared, target: &Target) {
    p.request_h2 = to_h2(p.request.clone(), &target.origin);
    let mut wire = Vec::with_capacity(256);
    h1::encode(&p.request, !target.keep_alive, &mut wire);
    p.wire = Bytes::from(wire);
}

/// The `setup:` or `teardown:` steps (`sect`), compiled as a scenario's
/// steps are (their own `{{ vars.NAME }}`), in every protocol's form. A
/// setup step leaves out the `target.headers` that read `{{ setup.… }}`:
/// their values are what the setup is about to take.
pub fn prepare_steps(
    profile: &Profile,
    target: &Target,
    base: &str,
    inputs: &Inputs,
    feeders: &[Feeder],
    sect: &str,
    steps: &[RequestSpec],
) -> Result<Vec<Prepared>, ClientError> {
    let vars = template::scenario_vars(steps);
    let host = host_header(target);
    let mut own;
    let profile = if sect == "setup" {
        own = profile.clone();
        own.target.headers.retain(|_, v| !reads_setup(v));
        &own
    } else {
        profile
    };
    steps
        .iter()
        .enumerate()
        .map(|(index, r)| {
            let key = format!("{sect}[{index}]");
            let step = Step {
                key: &key,
                scenario: None,
                vars: &vars,
            };
            let mut p = prepare_one(&step, r, profile, base, &host, inputs, feeders)?;
            finish_forms(&mut p, target);
            Ok(Prepared { index, ..p })
        })
        .collect()
}

/// Whether a template reads a setup value (`{{ setup.NAME }}`).
fn reads_setup(text: &str) -> bool {
    crate::profile::template::Template::parse(text).is_ok_and(|t| {
        t.exprs()
            .any(|e| matches!(e, crate::profile::template::Expr::Setup(_)))
    })
}

/// A request in HTTP/2's form: an absolute URI (hyper sends its scheme and
/// authority as `:scheme` and `:authority`) and no `Host` header.
pub(super) fn to_h2(mut req: Request<Full<Bytes>>, origin: &str) -> Request<Full<Bytes>> {
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
        .enumerate()
        .map(|(index, (key, scenario, r))| {
            let (label, vars) = match scenario.and_then(|s| profile.scenarios.get(s)) {
                Some(sc) => (
                    Some(sc.name.as_str()),
                    template::scenario_vars(sc.flat_steps()),
                ),
                None => (None, Vec::new()),
            };
            let step = Step {
                key: &key,
                scenario: label,
                vars: &vars,
            };
            let p = prepare_one(&step, r, profile, base, host, inputs, feeders)?;
            Ok(Prepared { index, ..p })
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
    // A gRPC call is built as the HTTP/2 POST it is.
    let grpc_call = r.grpc.is_some();
    let lowered;
    let r = match &r.grpc {
        Some(g) => {
            lowered = grpc::lower(r, g);
            &lowered
        }
        None => r,
    };
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
    let setup = template::scenario_vars(&profile.setup);
    let names = template::Names {
        vars: step.vars,
        setup: &setup,
    };
    let f = template::compile_fields(
        key,
        base,
        &r.path,
        &merged,
        r.body.as_deref(),
        // A gRPC message's JSON: filled-in values inside its strings.
        if grpc_call { Escape::Json } else { Escape::Raw },
        inputs,
        feeders,
        names,
    )?;
    let uri: &[u8] = if f.dynamic_path.is_some() {
        b"/"
    } else {
        f.path.as_ref()
    };
    let body = f.body.clone();
    let resend = Resend::of(&method, r.retry);
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
        index: 0,
        name,
        request_h2: req.clone(),
        wire: Bytes::new(),
        request: req,
        ok,
        contains: r.expect.body_contains.clone(),
        regex,
        check_every,
        dynamic,
        resend,
        max_body: r.expect.max_body.map_or(DEFAULT_MAX_BODY, |b| b.bytes()),
        grpc: None,
        cookies: false,
        expired: None,
    })
}

impl Prepared {
    /// The path and query this send goes to (`msg`: its rendered message).
    pub fn path_of<'a>(&'a self, msg: Option<&'a Request<Full<Bytes>>>) -> &'a str {
        msg.unwrap_or(&self.request)
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
    }
}
