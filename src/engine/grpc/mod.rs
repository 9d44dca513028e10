//! gRPC calls on the HTTP/2 hot path: a call is a POST of
//! `application/grpc` (`te: trailers`, `grpc-timeout` from its deadline)
//! whose body is the length-prefixed request message, sent through the same
//! lanes, pool and scheduler as any HTTP/2 request; its `grpc-status`
//! decides the class ([`answer::class_of`]).
//!
//! The compile reads the `.proto` files (`target.grpc.protos`, parsed by
//! `protox`, no `protoc`), resolves each call's method and checks its
//! message against the input type, so a wrong method, field or value is an
//! error before any load ([`GrpcError`] says which field and where to point).
//! The request is then lowered into the HTTP fields the client builds
//! ([`lower`]); a static message is encoded once ([`Call::prebuild`]), a
//! templated one per send ([`Call::encode`]). Its files: the message
//! ([`message`]) and the answer ([`answer`]).

mod answer;
mod message;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, CONTENT_LENGTH};
use hyper::Request;
use prost_reflect::{DescriptorPool, MessageDescriptor};
use thiserror::Error;

pub use answer::{class_of, code_name, read, Reply, Streamed};

use crate::metrics::errors::Failure;
use crate::metrics::new_hist;
use crate::profile::{GrpcCallSpec, Profile, RequestSpec};
use crate::vocab::streams::{FirstMessage, StreamRow};

/// A gRPC part of the profile that does not compile: `key` names the
/// field; `anchor` is text of the profile near it and `needle` (if any) the
/// text to point at from there, for the caller to place it in the file.
#[derive(Debug, Error)]
#[error("{key}: {message}")]
pub struct GrpcError {
    pub key: String,
    pub anchor: String,
    pub needle: Option<String>,
    pub message: String,
}

/// One call of the mix, resolved against the descriptors.
#[derive(Debug)]
pub struct Call {
    input: MessageDescriptor,
    /// The method answers with a stream of messages.
    pub server_streaming: bool,
    /// Its streams so far, all workers (a lock per stream's end: streams
    /// are long next to it).
    tally: Mutex<Tally>,
}

#[derive(Debug)]
struct Tally {
    streams: u64,
    messages: u64,
    /// Time to first message (ns).
    first: Histogram<u64>,
}

impl Call {
    /// The pre-built request's body (the message's JSON, static) encoded
    /// once; an empty body is a templated message, encoded per send.
    pub fn prebuild(&self, req: &mut Request<Full<Bytes>>) -> Result<(), String> {
        let json = body_bytes(req);
        if json.is_empty() {
            return Ok(());
        }
        let framed = message::encode_json(&self.input, &json)?;
        set_body(req, framed);
        Ok(())
    }

    /// A rendered request (its body the message's JSON, templates filled
    /// in) encoded for this send. `Err`: the rendered text is not a message
    /// of the input type (a feeder value that is not a number, say).
    pub async fn encode(&self, req: &mut Request<Full<Bytes>>) -> Result<(), Failure> {
        let json = match req.body().clone().collect().await {
            Ok(b) => b.to_bytes(),
            Err(never) => match never {},
        };
        let framed = message::encode_json(&self.input, &json)
            .map_err(|e| Failure::message(format!("the templated message did not encode: {e}")))?;
        set_body(req, framed);
        Ok(())
    }
}

impl Call {
    /// A server-streaming call's tally so far, as request `request`'s row
    /// (`None` for a unary call).
    pub fn stream_row(&self, request: &str) -> Option<StreamRow> {
        if !self.server_streaming {
            return None;
        }
        let t = self.tally.lock().ok()?;
        let ms = |q: f64| t.first.value_at_quantile(q) as f64 / 1e6;
        Some(StreamRow {
            request: request.to_string(),
            streams: t.streams,
            messages: t.messages,
            messages_per_stream: if t.streams == 0 {
                0.0
            } else {
                t.messages as f64 / t.streams as f64
            },
            first_message: FirstMessage {
                count: t.first.len(),
                p50_ms: ms(0.5),
                p99_ms: ms(0.99),
                max_ms: t.first.max() as f64 / 1e6,
            },
        })
    }

    /// A server stream ended (sent at `sent`): count it.
    pub fn streamed(&self, sent: Instant, got: Streamed) {
        if !self.server_streaming {
            return;
        }
        if let Ok(mut t) = self.tally.lock() {
            t.streams += 1;
            t.messages += u64::from(got.messages);
            if let Some(first) = got.first {
                let ns = first.saturating_duration_since(sent).as_nanos() as u64;
                t.first.saturating_record(ns);
            }
        }
    }
}

/// A `Full` body's bytes: it holds one frame, ready at once.
fn body_bytes(req: &Request<Full<Bytes>>) -> Bytes {
    use std::task::{Context, Poll};
    let mut body = req.body().clone();
    let mut cx = Context::from_waker(std::task::Waker::noop());
    match hyper::body::Body::poll_frame(std::pin::Pin::new(&mut body), &mut cx) {
        Poll::Ready(Some(Ok(f))) => f.into_data().unwrap_or_default(),
        _ => Bytes::new(),
    }
}

fn set_body(req: &mut Request<Full<Bytes>>, framed: Bytes) {
    req.headers_mut()
        .insert(CONTENT_LENGTH, HeaderValue::from(framed.len()));
    *req.body_mut() = Full::new(framed);
}

/// The request as the HTTP client builds it: `POST /pkg.Service/Method`,
/// the message's JSON as its body (templates as written), the metadata and
/// gRPC's headers. Its name stays the call's label.
pub fn lower(r: &RequestSpec, g: &GrpcCallSpec) -> RequestSpec {
    let mut headers = r.headers.clone();
    headers.extend(g.metadata.clone());
    headers.insert("content-type".into(), "application/grpc".into());
    headers.insert("te".into(), "trailers".into());
    if let Some(d) = g.deadline {
        headers.insert("grpc-timeout".into(), timeout_header(d));
    }
    RequestSpec {
        name: Some(r.label()),
        method: "POST".into(),
        path: g.path(),
        headers,
        body: Some(template_json(&g.message)),
        grpc: None,
        ..r.clone()
    }
}

/// The message as JSON text whose strings keep their `{{ }}` templates as
/// written (quotes inside an expression unescaped, for the template
/// parser); the values filled in are JSON-escaped when rendered.
fn template_json(v: &serde_json::Value) -> String {
    fn string(s: &str, out: &mut String) {
        let esc = |t: &str, out: &mut String| {
            let q = serde_json::Value::from(t).to_string();
            out.push_str(&q[1..q.len() - 1]);
        };
        out.push('"');
        let mut rest = s;
        while let Some(at) = rest.find("{{") {
            let Some(end) = rest[at..].find("}}").map(|e| at + e + 2) else {
                break;
            };
            esc(&rest[..at], out);
            out.push_str(&rest[at..end]);
            rest = &rest[end..];
        }
        esc(rest, out);
        out.push('"');
    }
    fn walk(v: &serde_json::Value, out: &mut String) {
        match v {
            serde_json::Value::String(s) => string(s, out),
            serde_json::Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    walk(x, out);
                }
                out.push(']');
            }
            serde_json::Value::Object(m) => {
                out.push('{');
                for (i, (k, x)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    string(k, out);
                    out.push(':');
                    walk(x, out);
                }
                out.push('}');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    walk(v, &mut out);
    out
}

/// `grpc-timeout`: at most 8 digits and a unit.
fn timeout_header(d: std::time::Duration) -> String {
    let ms = d.as_millis().max(1);
    if ms < 100_000_000 {
        format!("{ms}m")
    } else {
        format!("{}S", (d.as_secs()).min(99_999_999))
    }
}

/// Every request's call (`None`: an HTTP request), indexed as
/// [`Profile::all_requests`]; relative `.proto` paths resolve from `base_dir`.
pub fn compile(
    profile: &Profile,
    base_dir: Option<&Path>,
) -> Result<Vec<Option<Arc<Call>>>, GrpcError> {
    let all = profile.all_requests();
    if all.iter().all(|(_, _, r)| r.grpc.is_none()) {
        return Ok(vec![None; all.len()]);
    }
    let spec = profile.target.grpc.clone().unwrap_or_default();
    let pool = load_protos(&spec, base_dir)?;
    all.iter()
        .map(|(key, _, r)| {
            let Some(g) = &r.grpc else { return Ok(None) };
            resolve(&pool, key, g).map(|c| Some(Arc::new(c)))
        })
        .collect()
}

fn resolve(pool: &DescriptorPool, key: &str, g: &GrpcCallSpec) -> Result<Call, GrpcError> {
    let fail = |message: String| GrpcError {
        key: format!("{key}.grpc.method"),
        anchor: g.method.clone(),
        needle: None,
        message,
    };
    let (service, method) = g
        .method
        .trim_start_matches('/')
        .split_once('/')
        .unwrap_or((&g.method, ""));
    let Some(s) = pool.get_service_by_name(service) else {
        let known: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
        return Err(fail(format!(
            "no service `{service}` in the .proto files (they declare: {})",
            if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            }
        )));
    };
    let Some(m) = s.methods().find(|m| m.name() == method) else {
        let known: Vec<String> = s.methods().map(|m| m.name().to_string()).collect();
        return Err(fail(format!(
            "service `{service}` has no method `{method}` (its methods: {})",
            known.join(", ")
        )));
    };
    if m.is_client_streaming() {
        return Err(fail(format!(
            "`{}` streams requests from the client: brunt sends unary and server-streaming calls only",
            g.method
        )));
    }
    message::check(&m.input(), &g.message, &format!("{key}.grpc.message")).map_err(|b| {
        GrpcError {
            key: b.key,
            anchor: g.method.clone(),
            needle: Some(format!("{}:", b.field)),
            message: b.why,
        }
    })?;
    let call = Call {
        input: m.input(),
        server_streaming: m.is_server_streaming(),
        tally: Mutex::new(Tally {
            streams: 0,
            messages: 0,
            first: new_hist(),
        }),
    };
    // A static message must encode now, not on every send.
    if !crate::profile::template::Template::has_template(&g.message.to_string()) {
        message::encode_json(&call.input, g.message.to_string().as_bytes()).map_err(|e| {
            GrpcError {
                key: format!("{key}.grpc.message"),
                anchor: g.method.clone(),
                needle: Some("message:".into()),
                message: format!("not a `{}`: {e}", call.input.full_name()),
            }
        })?;
    }
    Ok(call)
}

/// Parse the `.proto` files; an error names the file, and its line and
/// column when the parser has them.
fn load_protos(
    spec: &crate::profile::GrpcTargetSpec,
    base_dir: Option<&Path>,
) -> Result<DescriptorPool, GrpcError> {
    let resolve = |p: &Path| -> PathBuf {
        match base_dir {
            Some(b) if p.is_relative() => b.join(p),
            _ => p.to_path_buf(),
        }
    };
    let first = spec.protos.first().map(|p| p.display().to_string());
    let fail = |anchor: Option<String>, message: String| GrpcError {
        key: "target.grpc.protos".into(),
        anchor: anchor.unwrap_or_else(|| "grpc".into()),
        needle: None,
        message,
    };
    if spec.protos.is_empty() {
        return Err(fail(None, "no .proto file listed".into()));
    }
    let files: Vec<PathBuf> = spec.protos.iter().map(|p| resolve(p)).collect();
    let mut includes: Vec<PathBuf> = spec.import_paths.iter().map(|p| resolve(p)).collect();
    for f in &files {
        if !f.is_file() {
            return Err(fail(
                Some(
                    f.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                ),
                format!("{}: no such file", f.display()),
            ));
        }
        if let Some(dir) = f.parent() {
            if !includes.iter().any(|i| i == dir) {
                includes.push(dir.to_path_buf());
            }
        }
    }
    let mut c = protox::Compiler::new(&includes).map_err(|e| fail(first.clone(), e.to_string()))?;
    c.include_imports(true);
    c.open_files(&files).map_err(|e| {
        let which = e.file().map(str::to_string);
        let anchor = which
            .as_deref()
            .and_then(|w| spec.protos.iter().find(|p| p.ends_with(w)))
            .map(|p| p.display().to_string())
            .or(first.clone());
        fail(anchor, proto_error(&e))
    })?;
    Ok(c.descriptor_pool())
}

/// A parse error as `file.proto:LINE:COLUMN: what`.
fn proto_error(e: &protox::Error) -> String {
    use miette::Diagnostic;
    let at = e.labels().and_then(|mut l| l.next()).and_then(|label| {
        let src = e.source_code()?;
        let span = src.read_span(label.inner(), 0, 0).ok()?;
        Some((span.line() + 1, span.column() + 1))
    });
    match (e.file(), at) {
        (Some(f), Some((line, col))) => format!("{f}:{line}:{col}: {e}"),
        (Some(f), None) if !e.to_string().contains(f) => format!("{f}: {e}"),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn templates_keep_their_quotes_and_literals_are_escaped() {
        let v = serde_json::json!({"a": "x\"{{ env.A | default(\"d\") }}y", "b": [1, true, null]});
        assert_eq!(
            super::template_json(&v),
            r#"{"a":"x\"{{ env.A | default("d") }}y","b":[1,true,null]}"#
        );
    }
}
