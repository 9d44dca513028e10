//! The Prometheus source (`collectors.prometheus`): named PromQL instant
//! queries against a Prometheus server every `every`, on a thread of its
//! own (or, `mode: range`, one range query per query once the load has
//! ended, at `every` steps), each answer one row of `diagnostics/prometheus.jsonl`
//! (a [`PromSample`]: query, series, value; `t` on the run clock from
//! the answer's own timestamp). `rundir::evidence` turns the rows into
//! evidence series under each query's `series` name, so the knee's cause,
//! the leak trends and the report read them like the SSH-sampled ones.
//!
//! Query sets ship as data (`collectors/prometheus-*.yaml`, compiled in like
//! the command definitions). A failed query (unreachable server, bad
//! PromQL, no data, several series) is an error and a gap in the
//! collectors' summary, never a stall: each request is bounded by a timeout
//! shorter than the interval. HTTP: `ureq` (blocking, rustls with ring),
//! which the exporter already uses; a few requests a second need no async client.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::error::CollectorError;
use super::store::{Jsonl, PhaseTracker};
use super::{CollectorErrorKind, CollectorsSummary, ErrorInfo, GapInfo, StreamInfo};
use crate::profile::collectors::{PromMode, PromQuery, PrometheusSource};
use crate::vocab::samples::PromSample;
use crate::vocab::series;

/// Built-in query sets: name → YAML text (the files in `collectors/`).
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "prometheus-node",
        include_str!("../../collectors/prometheus-node.yaml"),
    ),
    (
        "prometheus-jvm",
        include_str!("../../collectors/prometheus-jvm.yaml"),
    ),
];

/// The stream's file under `diagnostics/`.
pub const STREAM: &str = crate::vocab::files::PROMETHEUS_SAMPLES;

/// A query set file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuerySet {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub queries: Vec<PromQuery>,
}

/// A query ready to run: placeholders filled, series chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct FilledQuery {
    pub name: String,
    pub promql: String,
    pub series: String,
}

impl FilledQuery {
    /// Its row in `prometheus.jsonl` for an answer `value`.
    fn sample(&self, value: f64) -> PromSample {
        PromSample {
            query: self.name.clone(),
            series: self.series.clone(),
            value,
        }
    }
}

/// Errors kept in the summary per query source (the total counts all).
const MAX_ERRORS: usize = 20;

/// Load the query sets, add the profile's own queries, check names and
/// series, fill `{instance}` and `{window}`, and check the token variable.
pub fn compile(
    src: &PrometheusSource,
    base_dir: Option<&Path>,
) -> Result<Vec<FilledQuery>, CollectorError> {
    let cfg = |msg: String| CollectorError::Config(format!("collectors.prometheus: {msg}"));
    let ok_url = url::Url::parse(&src.url)
        .ok()
        .is_some_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
    if !ok_url {
        return Err(cfg(format!(
            "url `{}`: expected http://HOST:PORT or https://…",
            src.url
        )));
    }
    if src.every < Duration::from_millis(200) {
        return Err(cfg("every below 200ms".into()));
    }
    if let Some(var) = &src.bearer_token_env {
        if std::env::var(var).map_or(true, |v| v.trim().is_empty()) {
            return Err(cfg(format!(
                "bearer_token_env: environment variable {var} is not set"
            )));
        }
    }
    let mut queries = Vec::new();
    for u in &src.use_ {
        queries.extend(load_set(u, base_dir)?.queries);
    }
    queries.extend(src.queries.iter().cloned());
    if queries.is_empty() {
        return Err(cfg(
            "no queries: add `queries:` or `use: [prometheus-node]`".into(),
        ));
    }
    let mut out: Vec<FilledQuery> = Vec::new();
    for q in queries {
        let ok_name = !q.name.is_empty()
            && q.name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !ok_name {
            return Err(cfg(format!(
                "query name `{}`: letters, digits, `-` or `_`",
                q.name
            )));
        }
        if out.iter().any(|c| c.name == q.name) {
            return Err(cfg(format!("query `{}` is defined twice", q.name)));
        }
        let name = q.series.unwrap_or_else(|| format!("prometheus.{}", q.name));
        if series::lookup(&name).is_none() && !name.starts_with("prometheus.") {
            return Err(cfg(format!(
                "query `{}`: unknown series `{name}` (a brunt series such as {} or {}, or `prometheus.<name>`)",
                q.name,
                series::TARGET_HOST_CPU.name,
                series::TARGET_POOL_WAITERS.name
            )));
        }
        out.push(FilledQuery {
            promql: q
                .query
                .replace("{instance}", &src.instance)
                .replace("{window}", &src.window),
            name: q.name,
            series: name,
        });
    }
    Ok(out)
}

fn load_set(name: &str, base_dir: Option<&Path>) -> Result<QuerySet, CollectorError> {
    let (text, shown) = match BUILTIN.iter().find(|(n, _)| *n == name) {
        Some((_, t)) => (t.to_string(), name.to_string()),
        None => {
            let p = PathBuf::from(name);
            let p = match base_dir {
                Some(b) if p.is_relative() => b.join(p),
                _ => p,
            };
            let t = std::fs::read_to_string(&p).map_err(|e| {
                CollectorError::Config(format!(
                    "collectors.prometheus.use: `{name}` is neither a built-in query set ({}) nor a readable file: {e}",
                    BUILTIN.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ))
            })?;
            (t, p.display().to_string())
        }
    };
    serde_saphyr::from_str(&text).map_err(|e| CollectorError::Definition {
        source_name: shown,
        msg: e.to_string(),
    })
}

/// The running source's settings.
pub struct Source {
    pub mode: PromMode,
    pub url: String,
    pub token: Option<String>,
    pub every: Duration,
    pub queries: Vec<FilledQuery>,
    pub tracker: Arc<PhaseTracker>,
    pub diag_dir: PathBuf,
}

impl Source {
    /// Query every `every` until `rx` says stop (or closes).
    /// What the source did is its part of the collectors' index.
    pub fn run(self, rx: Receiver<()>) -> CollectorsSummary {
        let mut rep = CollectorsSummary::default();
        let path = self.diag_dir.join(STREAM);
        let mut out = match Jsonl::open(&path) {
            Ok(j) => j,
            Err(e) => {
                rep.errors_total += 1;
                rep.errors.push(ErrorInfo {
                    t: self.tracker.t(),
                    probe: "prometheus".into(),
                    message: e.to_string(),
                    kind: e.kind(),
                });
                return rep;
            }
        };
        // A request never outlasts the interval (the next round starts on time).
        let timeout = self
            .every
            .mul_f64(0.8)
            .clamp(Duration::from_millis(150), Duration::from_secs(5));
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        let endpoint = format!("{}/api/v1/query", self.url.trim_end_matches('/'));
        let start_unix = self.tracker.clock().start_unix();
        if self.mode == PromMode::Range {
            // Nothing during the load: wait for its end, then ask once per query.
            let _ = rx.recv();
            self.range(&mut out, &mut rep, start_unix);
            rep.streams.push(self.stream_info(out.rows));
            return rep;
        }
        let mut next = Instant::now();
        loop {
            match rx.recv_timeout(next.saturating_duration_since(Instant::now())) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {}
            }
            for q in &self.queries {
                let t = self.tracker.t();
                match query(&agent, &endpoint, self.token.as_deref(), &q.promql) {
                    Ok((ts, v)) => {
                        let at = if ts > 0.0 { ts - start_unix } else { t };
                        if let Err(e) = out.row(at, &self.tracker.name(), q.sample(v)) {
                            note(&mut rep, t, &q.name, e.to_string(), self.every);
                        }
                    }
                    Err(e) => note(&mut rep, t, &q.name, e, self.every),
                }
            }
            next += self.every;
            // Behind (a slow server): skip the missed rounds, no burst.
            if next < Instant::now() {
                next = Instant::now() + self.every;
            }
        }
        rep.streams.push(self.stream_info(out.rows));
        rep
    }

    fn stream_info(&self, rows: u64) -> StreamInfo {
        StreamInfo {
            name: "prometheus".into(),
            file: format!("{}/{STREAM}", crate::vocab::files::DIAGNOSTICS),
            rows,
        }
    }

    /// One range query per query over the whole run, at `every` steps.
    fn range(&self, out: &mut Jsonl, rep: &mut CollectorsSummary, start_unix: f64) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(10)))
            .http_status_as_error(false)
            .build()
            .into();
        let endpoint = format!("{}/api/v1/query_range", self.url.trim_end_matches('/'));
        let end_unix = start_unix + self.tracker.t();
        let step = format!("{}", self.every.as_secs_f64());
        for q in &self.queries {
            let t = self.tracker.t();
            let mut req = agent
                .get(&endpoint)
                .query("query", &q.promql)
                .query("start", format!("{start_unix:.3}"))
                .query("end", format!("{end_unix:.3}"))
                .query("step", &step);
            if let Some(tok) = &self.token {
                req = req.header("Authorization", format!("Bearer {tok}"));
            }
            let answer = req
                .call()
                .map_err(|e| format!("{endpoint}: {e}"))
                .and_then(|mut r| {
                    let code = r.status().as_u16();
                    r.body_mut()
                        .with_config()
                        .limit(16 << 20)
                        .read_to_string()
                        .map_err(|e| format!("{endpoint}: reading the answer: {e}"))
                        .and_then(|text| parse_range(code, &text))
                });
            match answer {
                Ok(points) => {
                    for (ts, v) in points {
                        let at = ts - start_unix;
                        let phase = phase_at(self.tracker.phases(), at);
                        if let Err(e) = out.row(at, &phase, q.sample(v)) {
                            note(rep, t, &q.name, e.to_string(), self.every);
                            break;
                        }
                    }
                }
                Err(e) => note(rep, t, &q.name, e, self.every),
            }
        }
    }
}

/// The phase running `t` s after the run start (`pre`, `post` outside).
fn phase_at(phases: &[crate::vocab::PhaseInfo], t: f64) -> String {
    if phases.first().is_some_and(|p| t < p.start.as_secs_f64()) || t < 0.0 {
        return "pre".into();
    }
    phases
        .iter()
        .find(|p| p.start.as_secs_f64() <= t && t < p.end().as_secs_f64())
        .map(|p| p.name.clone())
        .unwrap_or_else(|| "post".into())
}

/// The points of a range query's one series (non-finite values dropped).
pub fn parse_range(code: u16, text: &str) -> Result<Vec<(f64, f64)>, String> {
    let data = api_data(code, text)?;
    let r = data
        .get("result")
        .and_then(|r| r.as_array())
        .ok_or("answer without a result")?;
    let series = match r.len() {
        0 => return Err("no data (the query matched no series)".into()),
        1 => &r[0],
        n => {
            return Err(format!(
                "{n} series: aggregate the query (sum, avg, max) so it gives one number"
            ))
        }
    };
    let values = series
        .get("values")
        .and_then(|v| v.as_array())
        .ok_or("a matrix without values")?;
    Ok(values
        .iter()
        .filter_map(|p| {
            let ts = p.get(0)?.as_f64()?;
            let v = p.get(1)?.as_str()?.parse::<f64>().ok()?;
            v.is_finite().then_some((ts, v))
        })
        .collect())
}

/// A failed query: an error, and a gap for it (joined to the last one
/// of the same query when they touch).
fn note(rep: &mut CollectorsSummary, t: f64, name: &str, message: String, every: Duration) {
    rep.errors_total += 1;
    if rep.errors.len() < MAX_ERRORS {
        rep.errors.push(ErrorInfo {
            t,
            probe: format!("prometheus:{name}"),
            message: message.clone(),
            kind: CollectorErrorKind::Query,
        });
    }
    let lane = format!("prometheus:{name}");
    let to_t = t + every.as_secs_f64();
    if let Some(g) = rep
        .gaps
        .iter_mut()
        .rev()
        .find(|g| g.lane == lane && g.to_t + 1e-6 >= t)
    {
        g.to_t = to_t;
        g.missed += 1;
        return;
    }
    rep.gaps.push(GapInfo {
        lane,
        from_t: t,
        to_t,
        reason: message,
        missed: 1,
        probe: None,
    });
}

/// One instant query: the answer's timestamp (Unix s) and its one number.
fn query(
    agent: &ureq::Agent,
    endpoint: &str,
    token: Option<&str>,
    promql: &str,
) -> Result<(f64, f64), String> {
    let mut req = agent.get(endpoint).query("query", promql);
    if let Some(t) = token {
        req = req.header("Authorization", format!("Bearer {t}"));
    }
    let mut resp = req.call().map_err(|e| format!("{endpoint}: {e}"))?;
    let code = resp.status().as_u16();
    let text = resp
        .body_mut()
        .with_config()
        .limit(4 << 20)
        .read_to_string()
        .map_err(|e| format!("{endpoint}: reading the answer: {e}"))?;
    parse_answer(code, &text)
}

/// The envelope of a Prometheus HTTP API answer.
#[derive(Deserialize)]
struct ApiAnswer {
    #[serde(default)]
    status: String,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    data: Option<serde_json::Value>,
}

/// The `data` of a successful API answer; what went wrong otherwise.
fn api_data(code: u16, text: &str) -> Result<serde_json::Value, String> {
    let a: ApiAnswer = serde_json::from_str(text).map_err(|_| {
        format!(
            "HTTP {code}: not a Prometheus API answer: {}",
            text.chars().take(120).collect::<String>()
        )
    })?;
    if a.status != "success" {
        let err = a.error.as_deref().unwrap_or("unknown error");
        return Err(format!("HTTP {code}: {err}"));
    }
    a.data.ok_or_else(|| "answer without data".into())
}

/// The one number of a Prometheus API answer.
pub fn parse_answer(code: u16, text: &str) -> Result<(f64, f64), String> {
    let data = api_data(code, text)?;
    let pair = match data.get("resultType").and_then(|t| t.as_str()) {
        Some("scalar") => data.get("result"),
        Some("vector") => {
            let r = data
                .get("result")
                .and_then(|r| r.as_array())
                .ok_or("vector without result")?;
            match r.len() {
                0 => return Err("no data (the query matched no series)".into()),
                1 => r[0].get("value"),
                n => {
                    return Err(format!(
                        "{n} series: aggregate the query (sum, avg, max) so it gives one number"
                    ))
                }
            }
        }
        other => return Err(format!("result type {other:?}: need a scalar or a vector")),
    };
    let pair = pair
        .and_then(|p| p.as_array())
        .ok_or("a sample without [time, value]")?;
    let ts = pair.first().and_then(|t| t.as_f64()).unwrap_or(0.0);
    let val = pair
        .get(1)
        .and_then(|v| v.as_str())
        .and_then(|s| s.parse::<f64>().ok())
        .ok_or("a sample value that is not a number")?;
    if !val.is_finite() {
        return Err(format!("value {val} (NaN or infinite)"));
    }
    Ok((ts, val))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(queries: Vec<PromQuery>, use_: Vec<String>) -> PrometheusSource {
        PrometheusSource {
            url: "http://127.0.0.1:9090".into(),
            bearer_token_env: None,
            mode: PromMode::Instant,
            every: Duration::from_secs(1),
            instance: "app:9100".into(),
            window: "10s".into(),
            use_,
            queries,
        }
    }

    #[test]
    fn builtin_sets_compile_and_placeholders_fill() {
        let c = compile(
            &src(
                vec![],
                vec!["prometheus-node".into(), "prometheus-jvm".into()],
            ),
            None,
        )
        .expect("built-in sets compile");
        let cpu = c.iter().find(|q| q.name == "host-cpu").expect("host-cpu");
        assert_eq!(cpu.series, series::TARGET_HOST_CPU.name);
        assert!(cpu.promql.contains(r#"instance=~"app:9100""#) && cpu.promql.contains("[10s]"));
        assert!(c
            .iter()
            .any(|q| q.series == series::TARGET_POOL_WAITERS.name));
    }

    #[test]
    fn bad_config_is_a_clear_error() {
        let q = |name: &str, series: Option<&str>| PromQuery {
            name: name.into(),
            query: "up".into(),
            series: series.map(String::from),
        };
        for (s, want) in [
            (src(vec![], vec![]), "no queries"),
            (src(vec![q("a b", None)], vec![]), "letters, digits"),
            (src(vec![q("a", None), q("a", None)], vec![]), "twice"),
            (
                src(vec![q("a", Some("target.nope"))], vec![]),
                "unknown series",
            ),
            (src(vec![], vec!["nope.yaml".into()]), "neither a built-in"),
            (
                PrometheusSource {
                    url: "prometheus:9090".into(),
                    ..src(vec![q("a", None)], vec![])
                },
                "expected http",
            ),
            (
                PrometheusSource {
                    bearer_token_env: Some("BRUNT_TEST_SURELY_UNSET_TOKEN".into()),
                    ..src(vec![q("a", None)], vec![])
                },
                "is not set",
            ),
        ] {
            let e = compile(&s, None).expect_err(want).to_string();
            assert!(e.contains(want), "{e} should say {want}");
        }
    }

    #[test]
    fn answers_parse_to_one_number_or_say_why_not() {
        let vec1 = r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000.5,"42.5"]}]}}"#;
        assert_eq!(parse_answer(200, vec1), Ok((1700000000.5, 42.5)));
        let scalar =
            r#"{"status":"success","data":{"resultType":"scalar","result":[1700000000,"3"]}}"#;
        assert_eq!(parse_answer(200, scalar), Ok((1700000000.0, 3.0)));
        let empty = r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;
        assert!(parse_answer(200, empty).unwrap_err().contains("no data"));
        let two = r#"{"status":"success","data":{"resultType":"vector","result":[{"value":[1,"1"]},{"value":[1,"2"]}]}}"#;
        assert!(parse_answer(200, two).unwrap_err().contains("aggregate"));
        let bad = r#"{"status":"error","errorType":"bad_data","error":"parse error at char 3"}"#;
        assert!(parse_answer(400, bad).unwrap_err().contains("parse error"));
        assert!(parse_answer(502, "<html>bad gateway")
            .unwrap_err()
            .contains("HTTP 502"));
        let nan = r#"{"status":"success","data":{"resultType":"scalar","result":[1,"NaN"]}}"#;
        assert!(parse_answer(200, nan).is_err());
        let matrix = r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[10,"1"],[11,"NaN"],[12,"3.5"]]}]}}"#;
        assert_eq!(parse_range(200, matrix), Ok(vec![(10.0, 1.0), (12.0, 3.5)]));
        let none = r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#;
        assert!(parse_range(200, none).unwrap_err().contains("no data"));
    }
}
