//! The YAML profile: its types, loading with file/line/column errors, and
//! validation. [`shape`] compiles the load shape into named phases.
//!
//! Parsing is `serde-saphyr` (pure Rust, budgets against YAML bombs, line and
//! column in every error); durations use `humantime` (`90s`, `5m`, `1h 30m`).

pub mod collectors;
pub mod shape;
pub mod template;
pub mod verdicts;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use crate::vocab::{Level, Model, PerHour, Percent};
pub use shape::{Phase, Plan, Shape};

use crate::demo::DemoConfig;
use collectors::CollectorsConfig;

/// Why a profile could not be used. Every variant names the file.
#[derive(Debug, Error)]
pub enum ProfileError {
    #[error("cannot read profile {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: {message}")]
    Syntax {
        path: PathBuf,
        line: u64,
        column: u64,
        message: String,
        /// The parser's rendering with a source snippet.
        snippet: String,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    /// A `--set key.path=value` that does not fit the profile.
    #[error("--set {key}={value}: {message}")]
    Override {
        key: String,
        value: String,
        message: String,
    },
}

/// A whole profile, as written in YAML.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Names the run directory and the report.
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    pub target: TargetSpec,
    /// The request mix: each request (and each scenario) is picked with probability weight / sum.
    #[serde(default)]
    pub requests: Vec<RequestSpec>,
    /// Step sequences in the mix: one pick runs every step in order on one
    /// connection; `extract` takes values from an answer for later steps' `{{ vars.NAME }}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<ScenarioSpec>,
    #[serde(default)]
    pub load: LoadSpec,
    pub shape: Shape,
    /// Budget expressions, e.g. `p99 < 500ms`; see [`crate::budgets`].
    #[serde(default)]
    pub budgets: Vec<crate::budgets::BudgetSpec>,
    #[serde(default)]
    pub output: OutputSpec,
    #[serde(default)]
    pub collectors: CollectorsConfig,
    /// How captured diagnostics are read (extra pool recognisers).
    #[serde(default)]
    pub diagnosis: DiagnosisSpec,
    /// Thresholds of the verdicts (soak leak limits), see [`crate::judge`].
    #[serde(default)]
    pub verdicts: verdicts::VerdictsConfig,
    /// Data files whose rows feed templates (`{{ feeder.NAME.COLUMN }}`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feeders: BTreeMap<String, FeederSpec>,
}

/// One feeder: a CSV file with a header row, or JSON Lines (one object a line).
#[derive(Debug, Clone, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FeederFormat {
    Csv,
    Jsonl,
}

/// Where the load goes.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    pub connect_timeout: Duration,
    /// Whole-request timeout (connect included), from the actual send.
    #[serde(default = "default_timeout", with = "humantime_serde")]
    pub timeout: Duration,
    #[serde(default)]
    pub tls: TlsSpec,
    /// Which HTTP to speak: `"1.1"` (default), `"2"` (ALPN `h2` over TLS,
    /// prior knowledge — h2c — over cleartext) or `auto` (ALPN over TLS,
    /// falling back to 1.1; cleartext stays 1.1).
    #[serde(default)]
    pub http: HttpVersion,
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

#[derive(Debug, Clone, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestSpec {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default = "default_method")]
    pub method: String,
    /// Path and query, e.g. `/api/items?id=7`.
    pub path: String,
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
    pub think_time: Option<Duration>,
    /// Scenario steps only: a failure of this step does not end the
    /// iteration (it is counted on the step; the iteration goes on).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
}

/// A weighted sequence of requests run in order (a user's visit).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    pub name: String,
    #[serde(default = "default_weight")]
    pub weight: f64,
    pub steps: Vec<RequestSpec>,
}

/// Where an extracted value comes from: exactly one of the three.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
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
    /// The request's own name: `name`, else `METHOD path`.
    pub fn label(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("{} {}", self.method, self.path))
    }
}

impl Profile {
    /// What step and iteration budgets are resolved against, in engine
    /// order: each request's full name (`item`, `shop/login` — what the
    /// reports show) with a scenario step's own name, and the scenarios.
    pub fn budget_names(&self) -> crate::budgets::Names<'_> {
        let requests = self
            .all_requests()
            .into_iter()
            .map(|(_, sc, r)| match sc.and_then(|k| self.scenarios.get(k)) {
                Some(sc) => (format!("{}/{}", sc.name, r.label()), Some(r.label())),
                None => (r.label(), None),
            })
            .collect();
        crate::budgets::Names {
            requests,
            scenarios: self.scenarios.iter().map(|s| s.name.as_str()).collect(),
        }
    }

    /// Every budget parsed and its step or scenario name resolved; the first
    /// that fails is the error, naming the budget.
    pub fn compile_budgets(&self) -> Result<Vec<crate::budgets::Budget>, String> {
        let names = self.budget_names();
        let mut out = crate::budgets::compile(&self.budgets).map_err(|e| e.0)?;
        for (b, spec) in out.iter_mut().zip(&self.budgets) {
            b.resolve(&names)
                .map_err(|e| format!("budget `{}`: {}", spec.expr(), e.0))?;
        }
        Ok(out)
    }

    /// Every request the engine sends, in mix order: the `requests`, then each
    /// scenario's steps; with the key naming it in errors (`requests[0]`,
    /// `scenarios[1].steps[0]`) and its scenario's index.
    pub fn all_requests(&self) -> Vec<(String, Option<usize>, &RequestSpec)> {
        let mut out: Vec<(String, Option<usize>, &RequestSpec)> = self
            .requests
            .iter()
            .enumerate()
            .map(|(i, r)| (format!("requests[{i}]"), None, r))
            .collect();
        for (s, sc) in self.scenarios.iter().enumerate() {
            for (j, r) in sc.steps.iter().enumerate() {
                out.push((format!("scenarios[{s}].steps[{j}]"), Some(s), r));
            }
        }
        out
    }
}

fn default_method() -> String {
    "GET".into()
}
fn default_weight() -> f64 {
    1.0
}

/// What counts as a good answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Evenly spaced starts.
    #[default]
    Constant,
    /// Exponentially distributed gaps (a Poisson process): bursts like real traffic.
    Poisson,
}

/// How the load is generated.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiagnosisSpec {
    /// Extra connection pools to recognise in thread dumps: a thread whose
    /// stack has a frame matching `frame` (`pkg.Class.method`) waits to borrow from `name`.
    #[serde(default)]
    pub pools: Vec<PoolSpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolSpec {
    pub name: String,
    /// Regex matched against each frame.
    pub frame: String,
}

/// Where and how results are written.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
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

/// The dotted key path of a block-style YAML line (`shape.constant.duration`),
/// found from indentation: serde's messages name neither the field nor its parents.
fn key_path(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let key_of = |l: &str| -> Option<(usize, String)> {
        let body = l.trim_start();
        let indent = l.len() - body.len();
        let body = body.strip_prefix("- ").unwrap_or(body);
        if body.starts_with('#') || body.starts_with('{') {
            return None;
        }
        let (k, _) = body.split_once(':')?;
        let k = k.trim().trim_matches('"');
        (!k.is_empty() && !k.contains(' ')).then(|| (indent, k.to_string()))
    };
    let (mut indent, first) = key_of(lines.get(line.checked_sub(1)?)?)?;
    let mut path = vec![first];
    for l in lines[..line - 1].iter().rev() {
        if l.trim().is_empty() {
            continue;
        }
        if let Some((i, k)) = key_of(l) {
            if i < indent {
                path.push(k);
                indent = i;
                if i == 0 {
                    break;
                }
            }
        }
    }
    path.reverse();
    Some(path.join("."))
}

/// Set `key` (dotted; a number indexes a list: `requests.0.weight`) in a
/// YAML tree. Only keys that lead through existing mappings or lists are
/// accepted, except the last, which may be new (the profile check then says
/// whether it is a field).
fn set_path(tree: &mut serde_json::Value, key: &str, v: serde_json::Value) -> Result<(), String> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err("expected a dotted key such as shape.constant.rate".into());
    }
    let mut node = tree;
    for (i, p) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let so_far = parts[..=i].join(".");
        node = match node {
            serde_json::Value::Object(m) => {
                if last {
                    m.insert(p.to_string(), v);
                    return Ok(());
                }
                m.get_mut(*p)
                    .ok_or_else(|| format!("the profile has no `{so_far}`"))?
            }
            serde_json::Value::Array(a) => {
                let idx: usize = p
                    .parse()
                    .map_err(|_| format!("`{so_far}`: a list, index it with a number"))?;
                let len = a.len();
                let slot = a
                    .get_mut(idx)
                    .ok_or_else(|| format!("`{so_far}`: the list has {len} entries"))?;
                if last {
                    *slot = v;
                    return Ok(());
                }
                slot
            }
            _ => {
                return Err(format!(
                    "`{}` is a value, not a section",
                    parts[..i].join(".")
                ))
            }
        };
    }
    Ok(())
}

/// The checks every request (of the mix or a scenario step) must pass.
fn check_request(which: &str, r: &RequestSpec) -> Result<(), String> {
    if !r.path.starts_with('/') {
        return Err(format!("{which}: path `{}` must start with `/`", r.path));
    }
    if !(r.weight.is_finite() && r.weight > 0.0) {
        return Err(format!("{which}: weight must be above 0"));
    }
    if hyper::Method::from_bytes(r.method.as_bytes()).is_err() {
        return Err(format!("{which}: `{}` is not an HTTP method", r.method));
    }
    if let Some(re) = &r.expect.body_regex {
        regex::Regex::new(re).map_err(|e| format!("{which}: expect.body_regex: {e}"))?;
    }
    for s in &r.expect.status {
        if !(100..=599).contains(s) {
            return Err(format!("{which}: expect.status {s} is not an HTTP status"));
        }
    }
    Ok(())
}

/// 1-based line and column (in characters) of the first occurrence of `needle` in `text`.
fn locate(text: &str, needle: &str) -> Option<(u64, u64)> {
    let needle = needle.lines().next().filter(|n| !n.is_empty())?;
    text.lines().enumerate().find_map(|(i, l)| {
        l.find(needle)
            .map(|at| (i as u64 + 1, l[..at].chars().count() as u64 + 1))
    })
}

/// The `{{ … }}` of `value` holding `pat`, as written.
fn t_fragment(value: &str, pat: &str) -> String {
    let pat = pat.to_string();
    value
        .find(&pat)
        .and_then(|at| {
            let start = value[..at].rfind("{{")?;
            let end = value[at..].find("}}").map(|e| at + e + 2)?;
            Some(value[start..end].to_string())
        })
        .unwrap_or(pat)
}

/// The lines of a top-level section (`shape:` … up to the next top-level key),
/// 1-based line numbers with their text.
fn section<'a>(text: &'a str, name: &str) -> Vec<(usize, &'a str)> {
    let mut out = Vec::new();
    let mut inside = false;
    for (i, l) in text.lines().enumerate() {
        let top = !l.starts_with([' ', '\t', '#', '-']) && !l.trim().is_empty();
        if top {
            inside = l
                .strip_prefix(name)
                .is_some_and(|r| r.trim_start().starts_with(':'));
        }
        if inside {
            out.push((i + 1, l));
        }
    }
    out
}

/// A line without its comment (a `#` at the start or after a blank).
fn code(l: &str) -> &str {
    let b = l.as_bytes();
    for i in 0..b.len() {
        if b[i] == b'#' && (i == 0 || b[i - 1] == b' ' || b[i - 1] == b'\t') {
            return &l[..i];
        }
    }
    l
}

/// Line and column (1-based, in characters) of the value of the `nth`
/// occurrence of any of `keys` within a top-level section, block or flow style.
fn locate_key(text: &str, sect: &str, keys: &[&str], nth: usize) -> Option<(usize, usize)> {
    let mut found = Vec::new();
    for (n, l) in section(text, sect) {
        let c = code(l);
        for (i, _) in c.char_indices() {
            let before = c[..i].chars().next_back();
            if !before.is_none_or(|b| matches!(b, ' ' | '\t' | '{' | ',' | '-')) {
                continue;
            }
            let rest = &c[i..];
            if keys
                .iter()
                .any(|k| rest.strip_prefix(k).is_some_and(|r| r.starts_with(':')))
            {
                let colon = rest.find(':').unwrap_or(0);
                let after = &rest[colon + 1..];
                let value_at = i + colon + 1 + (after.len() - after.trim_start().len());
                found.push((n, c[..value_at].chars().count() + 1));
            }
        }
    }
    found.get(nth).copied()
}

/// Line and column of the first occurrence of `needle` in a top-level section.
fn locate_in_section(text: &str, sect: &str, needle: &str) -> Option<(usize, usize)> {
    let needle = needle.trim();
    if needle.is_empty() {
        return None;
    }
    // Not inside a longer expression: `p99 < 5s` is not `recovery.p99 < 5s`.
    let starts_here = |c: &str, i: usize| {
        !c[..i]
            .chars()
            .next_back()
            .is_some_and(|b| b.is_alphanumeric() || b == '.' || b == '_')
    };
    section(text, sect).into_iter().find_map(|(n, l)| {
        let c = code(l);
        c.match_indices(needle)
            .map(|(i, _)| i)
            .find(|&i| starts_here(c, i))
            .map(|i| (n, c[..i].chars().count() + 1))
    })
}

/// The offending line with a caret under the column, as the parser shows its own.
fn snippet(text: &str, line: usize, column: usize) -> String {
    let Some(l) = text.lines().nth(line.saturating_sub(1)) else {
        return String::new();
    };
    let num = line.to_string();
    format!(
        " {num} | {l}\n {} | {}^",
        " ".repeat(num.len()),
        " ".repeat(column.saturating_sub(1))
    )
}

/// A target URL, parsed once the way the engine will use it: `http(s)://`
/// only, a host, and a port that is a number in range — an unparsable port is
/// an error, never the scheme's default (the load would go elsewhere).
pub fn target_url(text: &str) -> Result<url::Url, String> {
    let bad = |why: &str| why.to_string();
    if !text.starts_with("http://") && !text.starts_with("https://") {
        return Err(bad("expected `http://…`, `https://…` or `builtin`"));
    }
    let u = url::Url::parse(text).map_err(|e| bad(&e.to_string()))?;
    if u.host_str().is_none_or(str::is_empty) {
        return Err(bad("no host"));
    }
    // WHATWG accepts `host:` with no port and means the default: refuse it.
    let authority = text.split("://").nth(1).unwrap_or("");
    let authority = authority.split(['/', '?', '#']).next().unwrap_or("");
    if authority.ends_with(':') {
        return Err(bad("a `:` with no port after it"));
    }
    Ok(u)
}

/// Limits that stop hostile YAML (deep nesting, alias bombs) quickly.
fn parse_options() -> serde_saphyr::Options {
    serde_saphyr::Options::default()
}

impl Profile {
    /// Read and validate a profile file (its own sections; the collector
    /// definitions it names are checked by `run::spec::RunSpec`).
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Profile::from_yaml(&text, path)
    }

    /// [`Profile::load`] with `--set key.path=value` overrides applied to the
    /// YAML tree before it is read into a profile, so an override is checked
    /// exactly like the same value written in the file.
    pub fn load_with(path: &Path, sets: &[(String, String)]) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Profile::from_yaml_with(&text, path, sets)
    }

    /// [`Profile::from_yaml`] with overrides (see [`Profile::load_with`]).
    pub fn from_yaml_with(
        text: &str,
        path: &Path,
        sets: &[(String, String)],
    ) -> Result<Profile, ProfileError> {
        // The file on its own first: its errors keep their line and column.
        let profile = Profile::from_yaml(text, path)?;
        if sets.is_empty() {
            return Ok(profile);
        }
        let mut tree: serde_json::Value =
            serde_saphyr::from_str_with_options(text, parse_options()).map_err(|e| {
                ProfileError::Invalid {
                    path: path.to_path_buf(),
                    message: e.to_string(),
                }
            })?;
        for (key, value) in sets {
            let fail = |message: String| ProfileError::Override {
                key: key.clone(),
                value: value.clone(),
                message,
            };
            // The value is read as YAML would read it: `500` a number, `500/s` text.
            let v: serde_json::Value = serde_saphyr::from_str(value)
                .unwrap_or_else(|_| serde_json::Value::String(value.clone()));
            set_path(&mut tree, key, v).map_err(fail)?;
        }
        let patched = serde_saphyr::to_string(&tree).map_err(|e| ProfileError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Profile::from_yaml(&patched, path).map_err(|e| {
            let message = match e {
                ProfileError::Syntax { message, .. } | ProfileError::Invalid { message, .. } => {
                    message
                }
                other => other.to_string(),
            };
            let (key, value) = sets
                .iter()
                .find(|(k, _)| message.contains(k.as_str()))
                .or(sets.last())
                .cloned()
                .unwrap_or_default();
            ProfileError::Override {
                key,
                value,
                message,
            }
        })
    }

    /// Parse and validate profile text; `path` only names it in errors.
    pub fn from_yaml(text: &str, path: &Path) -> Result<Profile, ProfileError> {
        let profile: Profile =
            serde_saphyr::from_str_with_options(text, parse_options()).map_err(|e| {
                let (line, column) = e
                    .location()
                    .map(|l| (l.line(), l.column()))
                    .unwrap_or((0, 0));
                let full = e.to_string();
                // First line of the rendering is "error: line L column C: message".
                let first = full.lines().next().unwrap_or("").to_string();
                let message = match first.split_once(": ") {
                    Some((_, rest)) => match rest.split_once(": ") {
                        Some((loc, msg)) if loc.starts_with("line ") => msg.to_string(),
                        _ => rest.to_string(),
                    },
                    None => first,
                };
                let snippet = full
                    .replace("<input>", &path.display().to_string())
                    .lines()
                    .skip(1)
                    .collect::<Vec<_>>()
                    .join("\n");
                // "invalid u64" names neither what was wanted nor what was found.
                let message = if ["invalid u", "invalid i", "invalid f"]
                    .iter()
                    .any(|p| message.starts_with(p))
                {
                    let found = text
                        .lines()
                        .nth((line as usize).saturating_sub(1))
                        .and_then(|l| l.get((column as usize).saturating_sub(1)..))
                        .map(|v| {
                            v.split(" #")
                                .next()
                                .unwrap_or(v)
                                .trim()
                                .trim_end_matches([',', '}', ']'])
                                .trim()
                        })
                        .unwrap_or("");
                    format!("expected a number, found `{found}`")
                } else {
                    message
                };
                let message = match key_path(text, line as usize) {
                    Some(k) if !message.contains(&k) => format!("{message} (at `{k}`)"),
                    _ => message,
                };
                ProfileError::Syntax {
                    path: path.to_path_buf(),
                    line,
                    column,
                    message,
                    snippet,
                }
            })?;
        profile
            .validate_at(text)
            .map_err(|(message, at)| match at {
                Some((line, column)) => ProfileError::Syntax {
                    path: path.to_path_buf(),
                    line: line as u64,
                    column: column as u64,
                    snippet: snippet(text, line, column),
                    message,
                },
                None => ProfileError::Invalid {
                    path: path.to_path_buf(),
                    message,
                },
            })?;
        profile.check_templates(text, path)?;
        Ok(profile)
    }

    /// [`Profile::validate`], then the checks whose error points at a place
    /// in the text: budgets and levels that send nothing, with line and column.
    fn validate_at(&self, text: &str) -> Result<(), (String, Option<(usize, usize)>)> {
        self.validate().map_err(|m| (m, None))?;
        if let Some(z) = self.shape.silent_level(self.load.model) {
            let at = locate_key(text, "shape", z.keys, z.nth);
            return Err((z.message, at));
        }
        let plan = self.shape.compile(self.load.model, 1.0);
        let names = self.budget_names();
        for b in &self.budgets {
            let at = || locate_in_section(text, "budgets", b.expr());
            let mut parsed = b
                .parse()
                .map_err(|e| (format!("budget `{}`: {e}", b.expr()), at()))?;
            parsed
                .resolve(&names)
                .map_err(|e| (format!("budget `{}`: {e}", b.expr()), at()))?;
            if let Some(p) = &parsed.phase {
                if !plan.phases.iter().any(|ph| &ph.info.name == p) {
                    let names: Vec<&str> =
                        plan.phases.iter().map(|ph| ph.info.name.as_str()).collect();
                    return Err((
                        format!(
                            "budget `{}`: no phase named `{p}`; this shape's phases are {}",
                            b.expr(),
                            names.join(", ")
                        ),
                        at(),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Every templated field of the profile, as (key, text): `requests[0].path`, …
    pub fn template_fields(&self) -> Vec<(String, &str)> {
        let mut out: Vec<(String, &str)> = Vec::new();
        for (k, v) in &self.target.headers {
            out.push((format!("target.headers.{k}"), v.as_str()));
        }
        for (key, _, r) in self.all_requests() {
            out.push((format!("{key}.path"), r.path.as_str()));
            for (k, v) in &r.headers {
                out.push((format!("{key}.headers.{k}"), v.as_str()));
            }
            if let Some(b) = &r.body {
                out.push((format!("{key}.body"), b.as_str()));
            }
        }
        out
    }

    /// Whether `var` is extracted by a step before the one `field` belongs to
    /// (`scenarios[S].steps[J]…`).
    fn var_known(&self, field: &str, var: &str) -> bool {
        let Some(rest) = field.strip_prefix("scenarios[") else {
            return false;
        };
        let num = |s: &str| -> Option<(usize, String)> {
            let (n, r) = s.split_once(']')?;
            Some((n.parse().ok()?, r.to_string()))
        };
        let Some((s, rest)) = num(rest) else {
            return false;
        };
        let Some((j, _)) = rest.strip_prefix(".steps[").and_then(num) else {
            return false;
        };
        self.scenarios.get(s).is_some_and(|sc| {
            sc.steps
                .iter()
                .take(j)
                .any(|st| st.extract.contains_key(var))
        })
    }

    /// Parse every `{{ }}` of the profile; an error names its file, line and
    /// column (found in `text`, the profile as written) and the field.
    fn check_templates(&self, text: &str, path: &Path) -> Result<(), ProfileError> {
        for (name, _) in self.feeders.iter() {
            if !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                || name.is_empty()
            {
                return Err(ProfileError::Invalid {
                    path: path.to_path_buf(),
                    message: format!(
                        "feeders.{name}: a feeder name is letters, digits, `_` and `-`"
                    ),
                });
            }
        }
        for (key, value) in self.template_fields() {
            if !template::Template::has_template(value) {
                continue;
            }
            let fail = |fragment: &str, message: String| {
                let message = format!("{message} (in `{key}`)");
                match locate(text, fragment).or_else(|| locate(text, "{{")) {
                    Some((line, column)) => ProfileError::Syntax {
                        path: path.to_path_buf(),
                        line,
                        column,
                        snippet: text
                            .lines()
                            .nth(line as usize - 1)
                            .map(|l| format!("  {line} | {l}"))
                            .unwrap_or_default(),
                        message,
                    },
                    None => ProfileError::Invalid {
                        path: path.to_path_buf(),
                        message,
                    },
                }
            };
            let t = template::Template::parse(value).map_err(|e| fail(&e.fragment, e.message))?;
            for e in t.exprs() {
                if let template::Expr::Var(var) = e {
                    if !self.var_known(&key, var) {
                        let frag = t_fragment(value, &format!("vars.{var}"));
                        return Err(fail(
                            &frag,
                            format!(
                                "`vars.{var}` is not extracted by an earlier step of this scenario"
                            ),
                        ));
                    }
                }
                if let template::Expr::Feeder { feeder, .. } = e {
                    if !self.feeders.contains_key(feeder) {
                        let frag = t_fragment(value, &format!("feeder.{feeder}."));
                        return Err(fail(
                            &frag,
                            format!("no feeder named `{feeder}` under `feeders:`"),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Checks serde cannot express: cross-field rules and value ranges.
    fn validate(&self) -> Result<(), String> {
        if self.name.trim().is_empty() {
            return Err("`name` must not be empty".into());
        }
        if self.requests.is_empty() && self.scenarios.is_empty() {
            return Err("`requests` needs at least one request (or give `scenarios`)".into());
        }
        let url = self.target.url.trim();
        if url != "builtin" {
            target_url(url).map_err(|e| format!("target.url `{url}`: {e}"))?;
        }
        if self.target.builtin.is_some() && url != "builtin" {
            return Err("target.builtin is only read with `url: builtin`".into());
        }
        for (i, r) in self.requests.iter().enumerate() {
            let which = r.name.clone().unwrap_or_else(|| format!("#{}", i + 1));
            check_request(&format!("request {which}"), r)?;
            if !r.extract.is_empty() {
                return Err(format!(
                    "request {which}: `extract` works in scenario steps only"
                ));
            }
            if r.think_time.is_some() {
                return Err(format!(
                    "request {which}: `think_time` works in scenario steps only (the pause before the next step)"
                ));
            }
            if r.optional {
                return Err(format!(
                    "request {which}: `optional` works in scenario steps only"
                ));
            }
        }
        for sc in &self.scenarios {
            if sc.steps.is_empty() {
                return Err(format!(
                    "scenario `{}`: `steps` needs at least one step",
                    sc.name
                ));
            }
            if !(sc.weight.is_finite() && sc.weight > 0.0) {
                return Err(format!("scenario `{}`: weight must be above 0", sc.name));
            }
            for (j, r) in sc.steps.iter().enumerate() {
                let which = r.name.clone().unwrap_or_else(|| format!("#{}", j + 1));
                let what = format!("scenario `{}` step {which}", sc.name);
                check_request(&what, r)?;
                if j + 1 == sc.steps.len() && r.think_time.is_some() {
                    return Err(format!(
                        "{what}: `think_time` is the pause before the next step, and the last step has none{}",
                        if self.load.model == Model::Closed {
                            " (load.think_time pauses between a virtual user's iterations)"
                        } else {
                            ""
                        }
                    ));
                }
                for (var, x) in &r.extract {
                    let n = [x.json.is_some(), x.regex.is_some(), x.header.is_some()]
                        .iter()
                        .filter(|b| **b)
                        .count();
                    if n != 1 {
                        return Err(format!(
                            "{what}: extract.{var}: give exactly one of json, regex, header"
                        ));
                    }
                    if let Some(re) = &x.regex {
                        regex::Regex::new(re)
                            .map_err(|e| format!("{what}: extract.{var}.regex: {e}"))?;
                    }
                    if let Some(p) = &x.json {
                        if !(p.is_empty() || p.starts_with('/')) {
                            return Err(format!(
                                "{what}: extract.{var}.json `{p}`: a JSON pointer starts with `/`"
                            ));
                        }
                    }
                    if let Some(h) = &x.header {
                        hyper::header::HeaderName::from_bytes(h.as_bytes()).map_err(|_| {
                            format!("{what}: extract.{var}.header `{h}` is not a header name")
                        })?;
                    }
                }
            }
        }
        for pool in &self.diagnosis.pools {
            regex::Regex::new(&pool.frame)
                .map_err(|e| format!("diagnosis.pools `{}`: frame: {e}", pool.name))?;
        }
        if self.load.streams_per_connection == 0 {
            return Err("load.streams_per_connection must be at least 1".into());
        }
        if self.load.max_in_flight == 0 || self.load.connections == 0 {
            return Err("load.max_in_flight and load.connections must be at least 1".into());
        }
        if self.load.workers == Some(0) {
            return Err("load.workers must be at least 1".into());
        }
        if self.load.model == Model::Open && self.load.think_time.is_some() {
            return Err("load.think_time applies to the closed model only".into());
        }
        self.shape.validate(self.load.model)?;
        Ok(())
    }

    /// Compile the shape into the phases the engine runs. `time_scale`
    /// multiplies every phase duration (e.g. 0.1 for a quick rehearsal).
    pub fn plan(&self, time_scale: f64) -> Plan {
        self.shape.compile(self.load.model, time_scale)
    }
}
