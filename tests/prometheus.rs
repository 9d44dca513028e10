//! Prometheus out, against the real thing on 127.0.0.1 (Debian's
//! `prometheus`, remote-write receiver on, scraping brunt's `/metrics`;
//! `tests/setup.sh` installs it): after a run, Prometheus' HTTP API holds
//! brunt's series, scraped and pushed, with counts equal to `summary.json`'s
//! and quantiles within the histograms' precision; the Grafana dashboard's
//! queries answer; bad addresses are refused, failing pushes counted; the
//! endpoint is promtool-clean. (Prometheus in, as a source: prometheus_source.rs.)

#[path = "support/load.rs"]
mod load;
#[path = "support/nginx.rs"]
mod nginx;
#[path = "support/prometheus.rs"]
mod prometheus;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use brunt::demo::DemoConfig;
use brunt::run::{execute, Progress, RunOptions};
use nginx::{free_port, tcp};
use prometheus::{prometheus, Prom};

#[test]
fn prometheus_holds_brunts_series_scraped_and_pushed_with_the_summarys_counts() {
    let _g = load::serial();
    let srv = load::demo(DemoConfig::default());
    let brunt_port = free_port();
    let prom = prometheus(&[("brunt", format!("127.0.0.1:{brunt_port}"))]);
    let p = load::profile(
        r#"
name: prom-out
target: { url: "{url}", timeout: 2s }
requests:
  - { name: fast, path: "/", weight: 3 }
  - { name: slow, path: "/slow?ms=20", weight: 1 }
load: { model: open, connections: 16 }
shape:
  stress: { start: 100/s, step: 100/s, max: 200/s, step_duration: 3s }
"#,
        &srv.base_url(),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("run-prom-out");
    let t0 = unix_now();
    let r = execute(
        &p,
        RunOptions {
            out: Some(out.clone()),
            progress: Progress::Quiet,
            metrics_listen: Some(format!("127.0.0.1:{brunt_port}").parse().expect("addr")),
            remote_write: Some(format!("{}/api/v1/write", prom.base)),
            metrics_linger: Some(Duration::from_secs(10)),
            ..Default::default()
        },
    )
    .expect("run");
    let s = &r.summary;
    assert!(s.totals.requests > 500, "{}", s.totals.requests);
    // Every push reached Prometheus, the final figures too.
    let x = s.export.as_ref().expect("summary.export");
    assert!(
        x.pushes >= 5 && x.push_failures == 0 && x.final_pushed,
        "{x:?}"
    );
    let run = "run-prom-out";
    // Pulled series carry job="brunt"; pushed ones have no job label. The
    // endpoint is gone now (its series are stale): read the last sample.
    for (how, sel) in [("pull", "job=\"brunt\""), ("push", "job=\"\"")] {
        let last = |m: &str, extra: &str| {
            format!("last_over_time({m}{{{sel},run=\"{run}\"{extra}}}[10m])")
        };
        for ph in &s.phases {
            let phx = format!(",phase=\"{}\"", ph.name);
            assert_eq!(
                prom.one(&last("brunt_offered_total", &phx)) as u64,
                ph.offered,
                "{how} {}: offered",
                ph.name
            );
            assert_eq!(
                prom.one(&last("brunt_dropped_total", &phx)) as u64,
                ph.dropped,
                "{how} {}: dropped",
                ph.name
            );
            for (class, c) in &ph.by_class {
                let q = format!(
                    "sum({})",
                    last("brunt_requests_total", &format!("{phx},class=\"{class}\""))
                );
                assert_eq!(prom.one(&q) as u64, c.count, "{how} {} {class}", ph.name);
            }
            let count = prom.one(&format!(
                "sum({})",
                last("brunt_latency_seconds_count", &phx)
            ));
            assert_eq!(
                count as u64, ph.requests,
                "{how} {}: histogram count",
                ph.name
            );
            // The quantile gauge is the summary's HdrHistogram figure.
            let q99 = prom.one(&last(
                "brunt_latency_quantile_seconds",
                &format!("{phx},q=\"0.99\""),
            )) * 1000.0;
            assert!(
                (q99 - ph.latency.p99).abs() <= 0.002 * ph.latency.p99 + 0.001,
                "{how} {}: p99 gauge {q99} ms vs summary {} ms",
                ph.name,
                ph.latency.p99
            );
            // histogram_quantile over the buckets: within one bucket (×2^(1/3)).
            let hq = prom.one(&format!(
                "histogram_quantile(0.99, sum by (le) ({}))",
                last("brunt_latency_seconds_bucket", &phx)
            )) * 1000.0;
            let w = 2f64.powf(1.0 / 3.0);
            assert!(
                hq <= ph.latency.p99 * w * 1.01 && hq >= ph.latency.p99 / w / 1.01,
                "{how} {}: histogram_quantile p99 {hq} ms vs summary {} ms",
                ph.name,
                ph.latency.p99
            );
        }
        // Per request of the mix, as in summary.json's `requests`.
        for rq in &s.requests {
            let q = format!(
                "sum({})",
                last("brunt_requests_total", &format!(",request=\"{}\"", rq.name))
            );
            assert_eq!(
                prom.one(&q) as u64,
                rq.requests,
                "{how} request {}",
                rq.name
            );
        }
        let failures = prom.one(&last("brunt_remote_write_failures_total", ""));
        assert_eq!(failures, 0.0, "{how}: remote-write failures");
    }
    grafana_dashboard_answers(&prom, run, s, t0, unix_now());
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64()
}

/// Every query of `examples/grafana/brunt.json` answers from Prometheus
/// over the run (the scraped series, `job="brunt"`), and its totals are
/// the summary's.
fn grafana_dashboard_answers(prom: &Prom, run: &str, s: &brunt::judge::Summary, t0: f64, t1: f64) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/grafana/brunt.json");
    let dash: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the dashboard")).expect("JSON");
    let vars: Vec<&str> = dash["templating"]["list"]
        .as_array()
        .expect("variables")
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert_eq!(vars, ["run", "job"], "the dashboard picks a run and a job");
    let range = format!("{}s", (t1 - t0).ceil() as u64 + 60);
    let fill = |e: &str| {
        e.replace("$run", run)
            .replace("$job", "brunt")
            .replace("$__rate_interval", "5s")
            .replace("$__range", &range)
    };
    let panels = dash["panels"].as_array().expect("panels");
    let mut queries = 0;
    for p in panels {
        let title = p["title"].as_str().unwrap_or_default();
        assert_eq!(
            p["datasource"]["uid"], "${DS_PROMETHEUS}",
            "{title}: imported with a chosen datasource"
        );
        for t in p["targets"].as_array().expect("targets") {
            let expr = fill(t["expr"].as_str().expect("expr"));
            assert!(
                !expr.contains('$'),
                "{title}: a variable left unfilled: {expr}"
            );
            let points = prom.range(&expr, t0, t1 + 2.0);
            assert!(
                points > 0,
                "{title}: `{expr}` returned no data over the run"
            );
            queries += 1;
        }
    }
    assert!(queries >= 15, "{queries} queries");
    // The stat panels' totals at the end are the summary's.
    let stat = |title: &str| {
        let p = panels.iter().find(|p| p["title"] == title).expect(title);
        let e = fill(p["targets"][0]["expr"].as_str().expect("expr"));
        prom.query_at(&e, t1 + 2.0)
    };
    assert_eq!(stat("offered") as u64, s.totals.offered, "offered");
    assert_eq!(stat("ok") as u64, s.totals.ok, "ok");
    assert_eq!(stat("dropped") as u64, s.totals.dropped, "dropped");
    assert_eq!(stat("errors") as u64, s.totals.errors, "errors");
}

#[test]
fn a_bad_listen_address_or_remote_write_url_is_refused_before_the_load() {
    let _g = load::serial();
    let srv = load::demo(DemoConfig::default());
    let busy = TcpListener::bind("127.0.0.1:0").expect("bind");
    let p = load::profile(
        "name: x\ntarget: { url: \"{url}\" }\nrequests: [ { path: \"/\" } ]\nshape: { constant: { rate: 10/s, duration: 1s } }\n",
        &srv.base_url(),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let e = execute(
        &p,
        RunOptions {
            out: Some(dir.path().join("a")),
            progress: Progress::Quiet,
            metrics_listen: Some(busy.local_addr().expect("addr")),
            ..Default::default()
        },
    )
    .err()
    .expect("a port in use is an error");
    assert!(e.to_string().contains("--metrics-listen"), "{e}");
    // Bad input (exit 2), refused before the run directory is made.
    assert!(e.is_bad_input(), "{e}");
    assert!(!dir.path().join("a").exists(), "no stub run directory");
    let e = execute(
        &p,
        RunOptions {
            out: Some(dir.path().join("b")),
            progress: Progress::Quiet,
            remote_write: Some("prometheus:9090/api/v1/write".into()),
            ..Default::default()
        },
    )
    .err()
    .expect("a URL without scheme is an error");
    assert!(e.is_bad_input() && e.to_string().contains("http://"), "{e}");
}

#[test]
fn an_unreachable_remote_write_is_counted_never_fatal() {
    let _g = load::serial();
    let dead = free_port(); // nothing listens there
    let dir = tempfile::tempdir().expect("tempdir");
    let t0 = Instant::now();
    let r = run_pushing_to(dead, "3s", dir.path());
    assert_eq!(r.summary.totals.offered, 150);
    assert_eq!(r.summary.totals.ok, 150, "{:?}", r.summary.totals.by_class);
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    // Each failed push is in the run directory, one row a push, the final one marked.
    let rows = push_rows(&r.dir);
    assert!(rows.len() >= 3, "a push a second: {rows:?}");
    assert!(rows.iter().all(|r| !r.ok && r.error.is_some()), "{rows:?}");
    assert_eq!(rows.iter().filter(|r| r.last).count(), 1, "{rows:?}");
    // … and in the summary, with a note; `brunt report` rebuilds the same.
    let x = r.summary.export.as_ref().expect("summary.export");
    assert_eq!(x.pushes, rows.len() as u64, "{x:?}");
    assert_eq!(x.push_failures, x.pushes, "{x:?}");
    assert!(!x.final_pushed && !x.failed_seconds.is_empty(), "{x:?}");
    assert!(
        r.summary
            .notes
            .iter()
            .any(|n| n.starts_with("remote-write: ")),
        "{:?}",
        r.summary.notes
    );
    let rebuilt = brunt::run::rebuild::rebuild(&r.dir).expect("brunt report");
    assert_eq!(rebuilt.export, r.summary.export);
}

/// 50/s against a demo target for `duration`, pushing to 127.0.0.1:`port`.
fn run_pushing_to(port: u16, duration: &str, dir: &Path) -> brunt::run::RunResult {
    let srv = load::demo(DemoConfig::default());
    let p = load::profile(&load::fast("x", "{url}", "50/s", duration), &srv.base_url());
    execute(
        &p,
        RunOptions {
            out: Some(dir.join("run")),
            progress: Progress::Quiet,
            remote_write: Some(format!("http://127.0.0.1:{port}/api/v1/write")),
            ..Default::default()
        },
    )
    .expect("the run completes")
}

fn push_rows(dir: &Path) -> Vec<brunt::vocab::export::PushRow> {
    std::fs::read_to_string(dir.join(brunt::vocab::files::EXPORT_LOG))
        .expect("export.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a push row"))
        .collect()
}

/// A receiver that accepts and never answers holds the end of the run up
/// no longer than FINAL_PUSH_WAIT (before: each push's 2-s timeout, twice).
#[test]
fn a_hanging_remote_write_receiver_delays_the_end_by_a_bounded_time() {
    let _g = load::serial();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = held.clone();
    // Accepts, reads nothing, answers nothing; the sockets stay open.
    let (port, h) = tcp::serve(stop.clone(), move |c| {
        if let Ok(mut k) = keep.lock() {
            k.push(c);
        }
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let t0 = Instant::now();
    let r = run_pushing_to(port, "2s", dir.path());
    let took = t0.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    h.join().expect("server thread");
    assert_eq!(r.summary.totals.ok, 100, "{:?}", r.summary.totals.by_class);
    // 2 s of load, the drain, the summary and report, and at most 1 s more.
    assert!(took < Duration::from_millis(4500), "the run took {took:?}");
    let rows = push_rows(&r.dir);
    assert!(
        rows.iter().any(|r| r
            .error
            .as_deref()
            .is_some_and(|e| e.contains("timeout") || e.contains("timed out"))),
        "pushes timed out: {rows:?}"
    );
}

/// `/metrics` as curl and promtool see it (text format 0.0.4, clean under
/// `promtool check metrics`), and as Prometheus asks for it (OpenMetrics).
#[test]
fn the_metrics_endpoint_is_promtool_clean_and_negotiates_its_format() {
    let _g = load::serial();
    let srv = load::demo(DemoConfig::default());
    let port = free_port();
    let p = load::profile(
        "name: x\ntarget: { url: \"{url}\" }\nrequests: [ { name: a, path: \"/\" }, { name: b, path: \"/slow?ms=2\" } ]\nshape: { constant: { rate: 50/s, duration: 4s } }\n",
        &srv.base_url(),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("run");
    let run = std::thread::spawn(move || {
        execute(
            &p,
            RunOptions {
                out: Some(out),
                progress: Progress::Quiet,
                metrics_listen: Some(format!("127.0.0.1:{port}").parse().expect("addr")),
                metrics_linger: Some(Duration::ZERO),
                ..Default::default()
            },
        )
        .expect("run")
    });
    let url = format!("http://127.0.0.1:{port}/metrics");
    let fetch = |accept: &str| {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(5)))
            .build()
            .into();
        let mut r = agent.get(&url).header("Accept", accept).call().ok()?;
        let ctype = r.headers().get("content-type")?.to_str().ok()?.to_string();
        Some((ctype, r.body_mut().read_to_string().ok()?))
    };
    // Bounded: the run lasts 4 s; its requests counted once a window is in.
    let until = Instant::now() + Duration::from_secs(10);
    let (ctype, text) = loop {
        match fetch("*/*") {
            Some((c, t)) if t.contains("brunt_requests_total{") => break (c, t),
            _ if Instant::now() > until => panic!("no figures at {url}"),
            _ => std::thread::sleep(Duration::from_millis(200)),
        }
    };
    assert!(ctype.starts_with("text/plain; version=0.0.4"), "{ctype}");
    assert!(text.contains("# HELP brunt_requests_total "), "{text}");
    assert!(text.contains(",q=\"0.99\"} "), "{text}");
    assert!(!text.contains("# EOF"), "{text}");
    let mut check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package: run tests/setup.sh)");
    {
        use std::io::Write as _;
        let mut stdin = check.stdin.take().expect("stdin");
        stdin.write_all(text.as_bytes()).expect("to promtool");
    }
    let o = check.wait_with_output().expect("promtool");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        o.status.success() && said.trim().is_empty(),
        "promtool: {said}\n{text}"
    );
    let (ctype, om) =
        fetch("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
            .expect("an OpenMetrics scrape");
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    assert!(
        om.trim_end().ends_with("# EOF") && om.contains("# TYPE brunt_requests counter"),
        "{om}"
    );
    run.join().expect("the run ends");
}
