//! The profile's gRPC sections as written in YAML: `target.grpc` (where the
//! `.proto` files are) and a request's `grpc:` call (method, message,
//! metadata, deadline). Checked against the descriptors by the engine's
//! compile (`engine::grpc`), which reads the `.proto` files.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// `target.grpc`: the `.proto` files the calls' methods and messages come from.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrpcTargetSpec {
    /// `.proto` files (relative paths resolve against the profile's
    /// directory), parsed at start without `protoc`.
    #[serde(default)]
    pub protos: Vec<PathBuf>,
    /// Where their imports are looked up (default: each file's own directory).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub import_paths: Vec<PathBuf>,
}

/// A request's `grpc:` call: a POST of `application/grpc` over HTTP/2.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrpcCallSpec {
    /// `package.Service/Method`, as the `.proto` files declare it.
    pub method: String,
    /// The request message as a YAML/JSON object (protobuf's JSON mapping:
    /// field names as in the `.proto` or in lowerCamelCase); string values
    /// may hold `{{ }}` templates, rendered per send.
    #[serde(default = "empty_message")]
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    pub message: serde_json::Value,
    /// Metadata sent as headers with the call (values may be templated).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// Sent as `grpc-timeout`: the server gives up after it and answers
    /// `DEADLINE_EXCEEDED` (counted as `timeout`).
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<crate::profile::schema::Duration>")]
    pub deadline: Option<Duration>,
}

fn empty_message() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

impl GrpcCallSpec {
    /// The HTTP/2 path the call is posted to: `/package.Service/Method`.
    pub fn path(&self) -> String {
        format!("/{}", self.method.trim_start_matches('/'))
    }
}

impl GrpcCallSpec {
    /// The call's templated text fields (`KEY.message.a.b`, `KEY.metadata.k`)
    /// for the template check.
    pub(super) fn template_fields<'a>(&'a self, key: &str, out: &mut Vec<(String, &'a str)>) {
        fn walk<'a>(v: &'a serde_json::Value, key: String, out: &mut Vec<(String, &'a str)>) {
            match v {
                serde_json::Value::String(s) => out.push((key, s.as_str())),
                serde_json::Value::Array(a) => {
                    for (i, x) in a.iter().enumerate() {
                        walk(x, format!("{key}[{i}]"), out);
                    }
                }
                serde_json::Value::Object(m) => {
                    for (k, x) in m {
                        walk(x, format!("{key}.{k}"), out);
                    }
                }
                _ => {}
            }
        }
        walk(&self.message, format!("{key}.message"), out);
        for (k, v) in &self.metadata {
            out.push((format!("{key}.metadata.{k}"), v.as_str()));
        }
    }
}

/// A request's `grpc:` beside the HTTP fields it replaces; the error's
/// second part is the text to point at.
pub(super) fn check_call(
    which: &str,
    r: &super::RequestSpec,
    g: &GrpcCallSpec,
) -> Result<(), (String, String)> {
    if !r.path.is_empty() || r.body.is_some() {
        return Err((
            format!("{which}: `grpc:` takes no `path` or `body` (the call's method and message are them)"),
            "grpc".into(),
        ));
    }
    let (service, method) = g
        .method
        .trim_start_matches('/')
        .split_once('/')
        .unwrap_or(("", ""));
    if service.is_empty() || method.is_empty() || method.contains('/') {
        return Err((
            format!(
                "{which}: grpc.method `{}`: expected `package.Service/Method`",
                g.method
            ),
            g.method.clone(),
        ));
    }
    if !g.message.is_object() {
        return Err((
            format!("{which}: grpc.message must be an object (the request message's fields)"),
            "message".into(),
        ));
    }
    if !r.expect.status.is_empty()
        || r.expect.body_contains.is_some()
        || r.expect.body_regex.is_some()
    {
        return Err((
            format!("{which}: `expect` does not apply to a gRPC call (its grpc-status decides: OK is ok)"),
            "expect".into(),
        ));
    }
    if !r.extract.is_empty() {
        return Err((
            format!("{which}: `extract` does not read gRPC answers (their messages are protobuf)"),
            "extract".into(),
        ));
    }
    if g.deadline.is_some_and(|d| d.is_zero()) {
        return Err((
            format!("{which}: grpc.deadline must be above 0"),
            "deadline".into(),
        ));
    }
    Ok(())
}
