//! Trace context (`target.trace`) against a real server on 127.0.0.1 that
//! answers slowly (300 ms) exactly for the trace ids whose last hex digit
//! is `0` and logs the ids it slowed: the ids brunt names as slowest are
//! those; the sampled share holds (server-counted); the header is W3C's
//! format; without `target.trace` no header goes out. HTTP/1.1 (brunt's
//! codec) and HTTP/2 (h2c, hyper) alike. Every load is a few seconds at a
//! fixed rate.

#[path = "support/load.rs"]
mod load;
#[path = "support/nginx.rs"]
mod nginx;
#[path = "support/prometheus.rs"]
mod prometheus;
#[path = "support/tokio_server.rs"]
mod tokio_server;

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response};

/// What the server saw.
#[derive(Default)]
struct Seen {
    /// Every header value of `traceparent` received.
    traceparents: Vec<String>,
    /// Trace ids it answered slowly.
    slowed: HashSet<String>,
    /// Requests without the header.
    plain: u64,
}

/// An HTTP/1.1 and h2c (prior knowledge) server: hyper-util's `auto`.
struct Server {
    srv: tokio_server::TokioServer,
    seen: Arc<Mutex<Seen>>,
}

const SLOW: Duration = Duration::from_millis(300);

async fn answer(
    req: Request<hyper::body::Incoming>,
    seen: Arc<Mutex<Seen>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let tp = req
        .headers()
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let slow = {
        let mut s = seen.lock().unwrap_or_else(|e| e.into_inner());
        match tp {
            None => {
                s.plain += 1;
                false
            }
            Some(tp) => {
                let id = tp.get(3..35).unwrap_or("").to_string();
                let slow = id.ends_with('0');
                if slow {
                    s.slowed.insert(id);
                }
                s.traceparents.push(tp);
                slow
            }
        }
    };
    if slow {
        tokio::time::sleep(SLOW).await;
    }
    Ok(Response::new(Full::new(Bytes::from_static(b"ok\n"))))
}

impl Server {
    fn start() -> Server {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let s2 = seen.clone();
        let srv = tokio_server::TokioServer::start(move |s| {
            let seen = s2.clone();
            async move {
                let svc = hyper::service::service_fn(move |r| answer(r, seen.clone()));
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(s), svc)
                .await;
            }
        });
        Server { srv, seen }
    }

    fn url(&self) -> String {
        self.srv.url()
    }

    fn take(&self) -> Seen {
        std::mem::take(&mut *self.seen.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

fn profile(url: &str, http: &str, trace: &str, rate: u32, secs: u32) -> brunt::profile::Profile {
    load::profile(
        &format!(
            r#"
name: traces
target: {{ url: "{{url}}", http: "{http}", timeout: 5s{trace} }}
requests:
  - {{ name: plain, path: /a }}
  - {{ name: templated, path: "/b?n={{{{ seq }}}}" }}
load: {{ model: open, connections: 32, streams_per_connection: 32, workers: 1 }}
shape: {{ constant: {{ rate: {rate}/s, duration: {secs}s }} }}
"#
        ),
        url,
    )
}

fn w3c(tp: &str) -> bool {
    let re = regex::Regex::new(r"^00-[0-9a-f]{32}-[0-9a-f]{16}-01$").expect("regex");
    re.is_match(tp)
        && &tp[3..35] != "00000000000000000000000000000000"
        && &tp[36..52] != "0000000000000000"
}

#[test]
fn at_100_percent_the_slowest_ids_brunt_names_are_exactly_those_the_server_slowed() {
    let _g = load::serial();
    let srv = Server::start();
    let dir = tempfile::tempdir().expect("tmp");
    let trace = r#", trace: { sample: 100%, url: "https://tempo.example/trace/{trace_id}" }"#;
    let r = load::run(&profile(&srv.url(), "1.1", trace, 200, 3), dir.path());
    let seen = srv.take();
    let s = &r.summary;
    assert_eq!(s.totals.errors, 0, "{:?}", s.totals);
    assert_eq!(seen.plain, 0, "every request carried a traceparent");
    assert_eq!(seen.traceparents.len() as u64, s.totals.requests);
    assert!(
        seen.traceparents.iter().all(|t| w3c(t)),
        "{:?}",
        seen.traceparents.iter().find(|t| !w3c(t))
    );
    let ids: HashSet<&str> = seen.traceparents.iter().map(|t| &t[3..35]).collect();
    assert_eq!(ids.len(), seen.traceparents.len(), "ids are fresh per send");
    let t = s.traces.as_ref().expect("summary.traces");
    assert_eq!((t.header.as_str(), t.sample.0), ("traceparent", 1.0));
    assert_eq!(t.sent, s.totals.requests);
    // About 600 sends, one in 16 slowed: ~37, more than the 10 kept.
    assert!(seen.slowed.len() > 15, "slowed {}", seen.slowed.len());
    let list = &t.slowest_by_phase["main"];
    assert_eq!(list.len(), brunt::metrics::traces::KEEP);
    for row in list {
        assert!(
            seen.slowed.contains(&row.trace_id),
            "{} named slowest ({} ms) but was not slowed",
            row.trace_id,
            row.latency_ms
        );
        assert!(row.latency_ms >= 300.0, "{row:?}");
        assert_eq!(row.class, brunt::metrics::Class::Ok);
        assert!(row.request == "plain" || row.request == "templated");
        assert!((0.0..4.0).contains(&row.at_s), "{row:?}");
    }
    assert!(list.windows(2).all(|w| w[0].latency_ms >= w[1].latency_ms));
    assert!(
        list.iter().any(|r| r.request == "templated") && list.iter().any(|r| r.request == "plain"),
        "rendered and pre-built requests alike: {list:?}"
    );
    assert_eq!(
        t.trace_url.as_deref(),
        Some("https://tempo.example/trace/{trace_id}")
    );
    let text = brunt::report::terminal::render(s);
    assert!(
        text.contains(&format!(
            "slowest trace of main (worst p99): {}",
            list[0].trace_id
        )) && text.contains(&format!("https://tempo.example/trace/{}", list[0].trace_id)),
        "{text}"
    );
    let json = std::fs::read_to_string(dir.path().join("summary.json")).expect("summary.json");
    assert!(json.contains("\"slowest_by_phase\"") && json.contains(&list[0].trace_id));
    let html = std::fs::read_to_string(dir.path().join("report.html")).expect("report.html");
    for r in list {
        assert!(
            html.contains(&format!(
                "<a href=\"https://tempo.example/trace/{0}\"><code>{0}</code></a>",
                r.trace_id
            )),
            "{} linked in report.html",
            r.trace_id
        );
    }
    assert!(html.contains("Slowest traced requests") && html.contains("slowest traced request"));
    // `brunt report` rebuilds the same list from the directory.
    let again = brunt::run::rebuild::rebuild(dir.path()).expect("report");
    assert_eq!(again.traces.as_ref(), Some(t));
}

#[test]
fn at_10_percent_a_tenth_carries_it_over_http2_and_without_trace_none_does() {
    let _g = load::serial();
    let srv = Server::start();
    let dir = tempfile::tempdir().expect("tmp");
    let r = load::run(
        &profile(&srv.url(), "2", ", trace: { sample: 10% }", 400, 3),
        dir.path(),
    );
    let seen = srv.take();
    let s = &r.summary;
    assert_eq!(s.totals.errors, 0, "{:?}", s.totals);
    let n = s.totals.requests;
    let traced = seen.traceparents.len() as u64;
    assert_eq!(traced + seen.plain, n);
    // 1200 sends at p = 0.1: 120 ± 10.4 (1 sd); ±4 sd.
    assert!((78..=162).contains(&traced), "{traced} of {n} traced");
    assert!(seen.traceparents.iter().all(|t| w3c(t)));
    let t = s.traces.as_ref().expect("summary.traces");
    assert_eq!(t.sent, traced, "brunt counts what the server saw");
    assert!(t.trace_url.is_none());
    let list = &t.slowest_by_phase["main"];
    // The slowest named are the slowed ones, as many of them as fit.
    let k = seen.slowed.len().min(list.len());
    assert!(k > 0, "some traced send was slowed");
    let top: HashSet<String> = list[..k].iter().map(|r| r.trace_id.clone()).collect();
    assert!(top.is_subset(&seen.slowed), "{top:?} vs {:?}", seen.slowed);
    assert!(list[k..]
        .iter()
        .all(|r| !seen.slowed.contains(&r.trace_id) && r.latency_ms < 300.0));

    // No `target.trace`: no header, no traces in the summary or the directory.
    let dir = tempfile::tempdir().expect("tmp");
    let r = load::run(&profile(&srv.url(), "1.1", "", 100, 1), dir.path());
    let seen = srv.take();
    assert!(r.summary.totals.requests > 50);
    assert_eq!(seen.plain, r.summary.totals.requests);
    assert!(seen.traceparents.is_empty());
    assert!(r.summary.traces.is_none());
    assert!(!dir.path().join("traces.jsonl").exists());
}

#[test]
fn merge_keeps_the_slowest_traced_requests_of_every_shard() {
    let _g = load::serial();
    let srv = Server::start();
    let dir = tempfile::tempdir().expect("tmp");
    let p = profile(&srv.url(), "1.1", ", trace: { sample: 100% }", 400, 2);
    let shards: Vec<std::path::PathBuf> = (0..2u32)
        .map(|index| {
            let out = dir.path().join(format!("shard-{}", index + 1));
            brunt::run::execute(
                &p,
                brunt::run::RunOptions {
                    out: Some(out.clone()),
                    progress: brunt::run::Progress::Quiet,
                    shard: brunt::engine::Shard { index, count: 2 },
                    ..Default::default()
                },
            )
            .unwrap_or_else(|e| panic!("shard {index}: {e}"));
            out
        })
        .collect();
    let seen = srv.take();
    let lists: Vec<brunt::judge::traces::TracesSummary> = shards
        .iter()
        .map(|d| {
            let s = brunt::run::rebuild::rebuild(d).expect("shard summary");
            s.traces.expect("shard traces")
        })
        .collect();
    let m = brunt::shard::merge(&shards, &dir.path().join("merged")).expect("merge");
    let t = m.summary.traces.as_ref().expect("merged traces");
    assert_eq!(t.sent, lists.iter().map(|l| l.sent).sum::<u64>());
    assert_eq!(t.sent, seen.traceparents.len() as u64);
    let mut union: Vec<_> = lists
        .iter()
        .flat_map(|l| l.slowest_by_phase["main"].clone())
        .collect();
    union.sort_by(|a, b| b.latency_ms.total_cmp(&a.latency_ms));
    let want: Vec<&str> = union[..brunt::metrics::traces::KEEP]
        .iter()
        .map(|r| r.trace_id.as_str())
        .collect();
    let got: Vec<&str> = t.slowest_by_phase["main"]
        .iter()
        .map(|r| r.trace_id.as_str())
        .collect();
    assert_eq!(got, want);
    assert!(got.iter().all(|id| seen.slowed.contains(*id)));
}

#[test]
fn prometheus_stores_the_traced_requests_as_exemplars_of_brunt_latency_seconds() {
    let _g = load::serial();
    let srv = Server::start();
    let port = nginx::free_port();
    let prom = prometheus::prometheus(&[("brunt", format!("127.0.0.1:{port}"))]);
    let dir = tempfile::tempdir().expect("tmp");
    let t0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();
    let r = brunt::run::execute(
        &profile(&srv.url(), "1.1", ", trace: { sample: 100% }", 200, 3),
        brunt::run::RunOptions {
            out: Some(dir.path().join("run")),
            progress: brunt::run::Progress::Quiet,
            metrics_listen: Some(format!("127.0.0.1:{port}").parse().expect("addr")),
            metrics_linger: Some(Duration::from_secs(10)),
            ..Default::default()
        },
    )
    .expect("run");
    assert_eq!(r.summary.totals.errors, 0);
    let seen = srv.take();
    let sent: HashSet<&str> = seen.traceparents.iter().map(|t| &t[3..35]).collect();
    let url = format!(
        "{}/api/v1/query_exemplars?query=brunt_latency_seconds_bucket&start={:.3}&end={:.3}",
        prom.base,
        t0 - 60.0,
        t0 + 600.0
    );
    let text = prometheus::get(&url).expect("query_exemplars");
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(v["status"], "success", "{text}");
    let series = v["data"].as_array().expect("series");
    let mut all = Vec::new();
    for s in series {
        let le: f64 = match s["seriesLabels"]["le"].as_str() {
            Some("+Inf") => f64::INFINITY,
            Some(x) => x.parse().expect("le"),
            None => panic!("a bucket series: {s}"),
        };
        for e in s["exemplars"].as_array().expect("exemplars") {
            let id = e["labels"]["trace_id"]
                .as_str()
                .expect("trace_id")
                .to_string();
            let value: f64 = e["value"]
                .as_str()
                .and_then(|x| x.parse().ok())
                .expect("value");
            let at = e["timestamp"].as_f64().expect("timestamp");
            assert!(value <= le * 1.000_001, "{value} in the bucket le={le}");
            assert!(
                at >= t0 - 1.0 && at <= t0 + 60.0,
                "timestamp {at} vs start {t0}"
            );
            all.push((id, value));
        }
    }
    assert!(!all.is_empty(), "no exemplar stored: {text}");
    for (id, _) in &all {
        assert!(sent.contains(id.as_str()), "{id} was never sent");
    }
    assert!(
        all.iter()
            .any(|(id, v)| seen.slowed.contains(id) && *v >= 0.3),
        "a slowed request is an exemplar of a slow bucket: {all:?}"
    );
}
