//! The profile's section types as written in YAML (target, requests and
//! scenarios, load, feeders, diagnosis, output) with their defaults.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Model, Percent};
use crate::demo::DemoConfig;
use crate::vocab::ByteSize;

/// One feeder: a CSV file with a header row, or JSON Lines (one object a line).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FeederSpec {
    /// Relative paths resolve against the profile's directory.
    pub file: PathBuf,
    #[serde(default)]
    pub mode: FeederMode,
    /// Default: `jsonl` for `.jsonl`/`.ndjson` files, else `csv`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<FeederFormat>,
}

impl FeederSpec {
    pub fn format(&self) -> FeederFormat {
        self.format
            .unwrap_or_else(|| match self.file.extension().and_then(|e| e.to_str()) {
                Some("jsonl") | Some("ndjson") => FeederFormat::Jsonl,
                _ => FeederFormat::Csv,
            })
    }
}

/// How a feeder hands out its rows.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum FeederMode {
    /// In order, starting over after the last row.
    #[default]
    Circular,
    /// A uniformly random row each time.
    Random,
    /// Each row once across all workers and shards; the run stops when they run out.
    Unique,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FeederFormat {
    Csv,
    Jsonl,
}

/// Where the load goes.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    /// `http://host:port`, `https://…`, or `builtin` for the embedded demo target.
    pub url: String,
    /// Settings of the built-in demo target (only with `url: builtin`).
    #[serde(default)]
    pub builtin: Option<DemoConfig>,
    /// Headers sent with every request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default = "default_connect_timeout", with = "humantime_serde")]
    #[schemars(with = "crate::profile::schema::Duration")]
    pub connect_timeout: Duration,
    /// Whole-request timeout (connect included), from the actual send.
    #[serde(default = "default_timeout", with = "humantime_serde")]
    #[schemars(with = "crate::profile::schema::Duration")]
    pub timeout: Duration,
    #[serde(default)]
    pub tls: TlsSpec,
    /// Which HTTP to speak: `"1.1"` (default), `"2"` (ALPN `h2` over TLS,
    /// prior knowledge — h2c — over cleartext) or `auto` (ALPN over TLS,
    /// falling back to 1.1; cleartext stays 1.1).
    #[serde(default)]
    pub http: HttpVersion,
    /// gRPC: the `.proto` files the `grpc:` requests are checked and
    /// encoded against. A profile with gRPC calls speaks HTTP/2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<super::GrpcTargetSpec>,
    /// W3C trace context on a share of the requests (`traceparent`), so the
    /// slowest ones can be looked up in a tracing backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceSpec>,
}

/// `target.trace`: which requests carry a W3C `traceparent` and where their
/// traces can be looked at.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// The header carrying the trace context. Default `traceparent`.
    #[serde(default = "default_trace_header")]
    pub header: String,
    /// Share of the requests that carry one, e.g. `1%` (up to `100%`). Default 1%.
    #[serde(default = "default_sample")]
    pub sample: Percent,
    /// A link to one trace, `{trace_id}` replaced by its id, e.g.
    /// `https://tempo.example/trace/{trace_id}`: the report links the slowest ids through it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

fn default_trace_header() -> String {
    "traceparent".into()
}

/// `target.http`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub enum HttpVersion {
    #[default]
    #[serde(rename = "1.1")]
    Http1,
    #[serde(rename = "2")]
    Http2,
    #[serde(rename = "auto")]
    Auto,
}

impl<'de> Deserialize<'de> for HttpVersion {
    // By hand: YAML reads `http: 2` as a number and `http: 1.1` as a float.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = HttpVersion;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an HTTP version: \"1.1\", \"2\" or auto")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<HttpVersion, E> {
                match v.trim() {
                    "1.1" | "1" | "http/1.1" => Ok(HttpVersion::Http1),
                    "2" | "2.0" | "h2" | "h2c" => Ok(HttpVersion::Http2),
                    "auto" => Ok(HttpVersion::Auto),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
                }
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<HttpVersion, E> {
                match v {
                    1 => Ok(HttpVersion::Http1),
                    2 => Ok(HttpVersion::Http2),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Unsigned(v), &self)),
                }
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<HttpVersion, E> {
                self.visit_u64(u64::try_from(v).unwrap_or(0))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<HttpVersion, E> {
                if (v - 1.1).abs() < 1e-9 || v == 1.0 {
                    Ok(HttpVersion::Http1)
                } else if v == 2.0 {
                    Ok(HttpVersion::Http2)
                } else {
                    Err(E::invalid_value(serde::de::Unexpected::Float(v), &self))
                }
            }
        }
        d.deserialize_any(V)
    }
}

fn default_connect_timeout() -> Duration {
    Duration::from_secs(3)
}
fn default_timeout() -> Duration {
    Duration::from_secs(10)
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TlsSpec {
    /// PEM file with extra CA certificates to trust (beside the web PKI roots).
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// Skip certificate verification. For test rigs only.
    #[serde(default)]
    pub insecure: bool,
    /// Resume TLS sessions on new connections (default true); `false`
    /// makes every connection pay a full handshake.
    #[serde(default = "yes")]
    pub resumption: bool,
}

fn yes() -> bool {
    true
}

impl Default for TlsSpec {
    fn default() -> Self {
        TlsSpec {
            ca_file: None,
            insecure: false,
            resumption: true,
        }
    }
}

/// One entry of the request mix.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestSpec {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default = "default_method")]
    pub method: String,
    /// Path and query, e.g. `/api/items?id=7` (not with `grpc`; a block of steps has none).
    #[serde(default)]
    pub path: String,
    /// A gRPC call instead of an HTTP request (`target.grpc` names the
    /// `.proto` files); `method`, `path` and `body` are then the call's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<super::GrpcCallSpec>,
    #[serde(default = "default_weight")]
    pub weight: f64,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub expect: ExpectSpec,
    /// Scenario steps only: values taken from the answer, `{{ vars.NAME }}` in later steps.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extract: BTreeMap<String, ExtractSpec>,
    /// Scenario steps only: the pause after this step's answer before the
    /// next step is due (not on the last step).
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<crate::profile::schema::Duration>")]
    pub think_time: Option<Duration>,
    /// Scenario steps only: a failure of this step does not end the
    /// iteration (it is counted on the step; the iteration goes on).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// When a request that got no answer may be sent again (see [`Retry`]).
    #[serde(default, skip_serializing_if = "Retry::is_default")]
    pub retry: Retry,
    /// A WebSocket step: `path` and `headers` make the upgrade request,
    /// this says what is sent on the socket (see [`super::ws`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws: Option<super::ws::WsSpec>,
    /// Scenario steps only: send this step (or this block's `steps`) a
    /// count of times, or a count drawn per iteration from `LO..HI`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<super::Repeat>,
    /// Scenario steps only: a block of steps `repeat` runs together, in
    /// place of a request (its entry holds only `repeat` and `steps`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<RequestSpec>,
    /// Scenario steps only: how this step's credentials are renewed
    /// (see [`super::RefreshSpec`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh: Option<super::RefreshSpec>,
}

/// When brunt may send a request again by itself, once, on a new
/// connection. A kept-alive HTTP/1.1 connection the server closes as the
/// request crosses it leaves the request's fate unknown: the server may
/// have processed it. RFC 9110 §9.2.2 lets a client resend automatically
/// only idempotent methods; a load test that double-submits orders
/// corrupts the system under test.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Retry {
    /// The default: GET, HEAD, OPTIONS, TRACE, PUT and DELETE are sent
    /// again when their fate is unknown; any method is sent again when the
    /// protocol guarantees the server did not process it (the request never
    /// left, HTTP/2 `REFUSED_STREAM` or above a GOAWAY's last stream id).
    #[default]
    Idempotent,
    /// Never sent again: every unanswered request is counted as `reset`.
    Never,
    /// Any method, whenever its fate is unknown (for a server that makes
    /// its POSTs idempotent, e.g. by an idempotency key).
    Always,
}

impl Retry {
    pub fn is_default(&self) -> bool {
        *self == Retry::Idempotent
    }
}

/// A weighted sequence of requests run in order (a user's visit).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    pub name: String,
    #[serde(default = "default_weight")]
    pub weight: f64,
    pub steps: Vec<RequestSpec>,
    /// Keep cookies (default `true`): a jar per virtual user (closed
    /// model) or per iteration (open model); `per_lane` keeps one per
    /// lane across iterations; `false` sends and keeps none.
    #[serde(default, skip_serializing_if = "Cookies::is_default")]
    pub cookies: Cookies,
}

/// A scenario's `cookies:` — `true`, `false` or `per_lane`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Cookies {
    Keep(bool),
    Lane(PerLane),
}

/// `cookies: per_lane`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PerLane {
    PerLane,
}

/// How long a scenario's cookie jar lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CookieMode {
    Off,
    /// Per virtual user (closed model), per iteration (open model).
    Session,
    PerLane,
}

impl Default for Cookies {
    fn default() -> Self {
        Cookies::Keep(true)
    }
}

impl Cookies {
    pub fn is_default(&self) -> bool {
        *self == Cookies::default()
    }
    pub fn mode(&self) -> CookieMode {
        match self {
            Cookies::Keep(false) => CookieMode::Off,
            Cookies::Keep(true) => CookieMode::Session,
            Cookies::Lane(_) => CookieMode::PerLane,
        }
    }
}

/// Where an extracted value comes from: exactly one of the three.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtractSpec {
    /// A JSON pointer into the body (`/token`, `/items/0/id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json: Option<String>,
    /// A regex on the body: its first capture group, or the whole match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// A response header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
}

impl RequestSpec {
    /// The request's own name: `name`, else `METHOD path` (`WS path`; a
    /// gRPC call's method, `pkg.Service/Method`).
    pub fn label(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| match (&self.grpc, &self.ws) {
                (Some(g), _) => g.method.clone(),
                (None, Some(_)) => format!("WS {}", self.path),
                (None, None) => format!("{} {}", self.method, self.path),
            })
    }
}

fn default_method() -> String {
    "GET".into()
}
fn default_weight() -> f64 {
    1.0
}

/// What counts as a good answer.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpectSpec {
    /// Statuses that count as `ok`. Default: 200–399. 503 and 429 not listed here are `shed`.
    #[serde(default)]
    pub status: Vec<u16>,
    /// The body must contain this text (checked on a sample of responses).
    #[serde(default)]
    pub body_contains: Option<String>,
    /// The body must match this regex (checked on a sample of responses).
    #[serde(default)]
    pub body_regex: Option<String>,
    /// Share of responses whose body is checked, e.g. `1%`. Default 1%.
    #[serde(default = "default_sample")]
    pub sample: Percent,
    /// The largest body read for a check or an extraction (default 1 MiB):
    /// a larger one is `body_too_large`, not a failed check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_body: Option<ByteSize>,
}

fn default_sample() -> Percent {
    Percent(0.01)
}

impl Default for ExpectSpec {
    fn default() -> Self {
        ExpectSpec {
            status: Vec::new(),
            body_contains: None,
            body_regex: None,
            sample: default_sample(),
            max_body: None,
        }
    }
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Evenly spaced starts.
    #[default]
    Constant,
    /// Exponentially distributed gaps (a Poisson process): bursts like real traffic.
    Poisson,
}

/// How the load is generated.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    #[serde(default)]
    pub model: Model,
    /// Open model: spacing of request starts.
    #[serde(default)]
    pub arrival: Arrival,
    /// Open model: requests queued or running at once; beyond it a due request is counted as `dropped`.
    #[serde(default = "default_max_in_flight")]
    pub max_in_flight: usize,
    /// Open model: connections at most. Requests beyond wait for a free one
    /// (their latency still counts from the intended start).
    #[serde(default = "default_connections")]
    pub connections: usize,
    /// Load worker threads (one current-thread runtime each). Default: CPU count.
    #[serde(default)]
    pub workers: Option<usize>,
    /// Closed model: pause of each virtual user between its requests.
    #[serde(default, with = "humantime_serde")]
    #[schemars(with = "crate::profile::schema::Duration")]
    pub think_time: Option<Duration>,
    /// `false`: a new connection for every request (handshake and accept
    /// cost measured each time; HTTP/1.1 sends `Connection: close`).
    #[serde(default = "yes")]
    pub keep_alive: bool,
    /// HTTP/2: requests in flight at once on one connection. Open model:
    /// up to `connections` × this many run at once; closed model: this
    /// many virtual users share a connection.
    #[serde(default = "default_streams")]
    pub streams_per_connection: usize,
}

fn default_streams() -> usize {
    100
}

fn default_max_in_flight() -> usize {
    10_000
}
fn default_connections() -> usize {
    512
}

impl Default for LoadSpec {
    fn default() -> Self {
        LoadSpec {
            model: Model::Open,
            arrival: Arrival::Constant,
            max_in_flight: default_max_in_flight(),
            connections: default_connections(),
            workers: None,
            think_time: None,
            keep_alive: true,
            streams_per_connection: default_streams(),
        }
    }
}

/// The `diagnosis:` section.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiagnosisSpec {
    /// Extra connection pools to recognise in thread dumps: a thread whose
    /// stack has a frame matching `frame` (`pkg.Class.method`) waits to borrow from `name`.
    #[serde(default)]
    pub pools: Vec<PoolSpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PoolSpec {
    pub name: String,
    /// Regex matched against each frame.
    pub frame: String,
}

/// Where and how results are written.
#[derive(Debug, Clone, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Parent folder of run directories (default `runs/`).
    #[serde(default)]
    pub dir: Option<PathBuf>,
    /// Push live figures to this Prometheus remote-write URL every second
    /// (e.g. `http://prometheus:9090/api/v1/write`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus_remote_write: Option<String>,
    /// Environment variable holding a bearer token for remote-write
    /// (sent as `Authorization: Bearer …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus_remote_write_token_env: Option<String>,
}
