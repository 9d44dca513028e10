//! Prometheus out and in, against the real thing on 127.0.0.1: Debian's
//! `prometheus` (remote-write receiver on, scraping brunt's `/metrics` and a
//! `prometheus-node-exporter`), both started here (`tests/setup.sh` installs them).
//!
//! - out: after a run, Prometheus' HTTP API holds brunt's series, scraped
//!   and pushed, with counts equal to `summary.json`'s, and quantiles within
//!   the histograms' precision;
//! - in: the Prometheus source puts node CPU into `evidence.json` and the
//!   report, a query mapped to pool waiters is pool evidence, and a failing
//!   query is a gap while the run completes.

#[path = "support/load.rs"]
mod load;
#[path = "support/nginx.rs"]
mod nginx;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use brunt::demo::DemoConfig;
use brunt::profile::Profile;
use brunt::run::{execute, Progress, RunOptions};
use nginx::{free_port, tcp, Nginx};

fn binary(name: &str) -> PathBuf {
    for dir in ["/usr/bin", "/usr/sbin", "/usr/local/bin"] {
        let p = Path::new(dir).join(name);
        if p.exists() {
            return p;
        }
    }
    panic!("{name} not found: run tests/setup.sh (apt-get install prometheus prometheus-node-exporter)");
}

/// A child process killed when the test ends.
struct Proc(Child, String);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn get(url: &str) -> Result<String, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(5)))
        .http_status_as_error(false)
        .build()
        .into();
    agent
        .get(url)
        .call()
        .map_err(|e| e.to_string())?
        .body_mut()
        .read_to_string()
        .map_err(|e| e.to_string())
}

fn wait_ready(url: &str, what: &str, p: &mut Proc) {
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        if get(url).is_ok() {
            return;
        }
        if let Ok(Some(st)) = p.0.try_wait() {
            panic!("{what} exited at start ({st}); log: {}", p.1);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("{what} not ready at {url} within 30 s");
}

struct Prom {
    base: String,
    _p: Proc,
    _dir: tempfile::TempDir,
}

/// Prometheus scraping `targets` (job → host:port) every second, remote-write receiver on.
fn prometheus(targets: &[(&str, String)]) -> Prom {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let mut cfg =
        String::from("global: { scrape_interval: 1s, evaluation_interval: 1s }\nscrape_configs:\n");
    for (job, t) in targets {
        cfg.push_str(&format!(
            "  - job_name: {job}\n    static_configs: [ {{ targets: [\"{t}\"] }} ]\n"
        ));
    }
    let cfg_path = dir.path().join("prometheus.yml");
    std::fs::write(&cfg_path, cfg).expect("write config");
    let log = dir.path().join("prometheus.log");
    let child = Command::new(binary("prometheus"))
        .arg(format!("--config.file={}", cfg_path.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--web.enable-remote-write-receiver")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("start prometheus");
    let mut p = Proc(child, log.display().to_string());
    let base = format!("http://127.0.0.1:{port}");
    wait_ready(&format!("{base}/-/ready"), "prometheus", &mut p);
    Prom {
        base,
        _p: p,
        _dir: dir,
    }
}

/// A sample's number (`[time, "value"]`).
fn value(v: &serde_json::Value) -> f64 {
    v[1].as_str()
        .and_then(|s| s.parse().ok())
        .expect("a number")
}

impl Prom {
    /// `data.result` of an API query (`query` or `query_range`), which must succeed.
    fn api(&self, endpoint: &str, params: &[(&str, &str)]) -> Vec<serde_json::Value> {
        let url = url::Url::parse_with_params(&format!("{}/api/v1/{endpoint}", self.base), params)
            .expect("url");
        let promql = params.first().map_or("", |p| p.1);
        let text = get(url.as_str()).unwrap_or_else(|e| panic!("query {promql}: {e}"));
        let v: serde_json::Value = serde_json::from_str(&text).expect("json answer");
        assert_eq!(v["status"], "success", "{promql}: {text}");
        v["data"]["result"].as_array().expect("a result").clone()
    }

    /// An instant query's vector: (labels, value) per series.
    fn query(&self, promql: &str) -> Vec<(serde_json::Value, f64)> {
        self.api("query", &[("query", promql)])
            .iter()
            .map(|r| (r["metric"].clone(), value(&r["value"])))
            .collect()
    }

    /// How many points a range query returns over `[from, to]` (1-s steps), all series.
    fn range(&self, promql: &str, from: f64, to: f64) -> usize {
        let (from, to) = (format!("{from:.3}"), format!("{to:.3}"));
        let params = [
            ("query", promql),
            ("start", &from),
            ("end", &to),
            ("step", "1"),
        ];
        self.api("query_range", &params)
            .iter()
            .map(|r| r["values"].as_array().map_or(0, Vec::len))
            .sum()
    }

    /// An instant query's single value at time `at`.
    fn query_at(&self, promql: &str, at: f64) -> f64 {
        let r = self.api("query", &[("query", promql), ("time", &format!("{at:.3}"))]);
        assert_eq!(r.len(), 1, "{promql}: {r:?}");
        value(&r[0]["value"])
    }

    fn one(&self, promql: &str) -> f64 {
        let r = self.query(promql);
        assert_eq!(r.len(), 1, "{promql}: {r:?}");
        r[0].1
    }
}

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

/// Wait until Prometheus has two scrapes of the node (rate needs two).
fn wait_for_node_rate(prom: &Prom) {
    let until = Instant::now() + Duration::from_secs(20);
    while prom
        .query(r#"count(rate(node_cpu_seconds_total{mode="idle"}[3s]))"#)
        .is_empty()
    {
        assert!(
            Instant::now() < until,
            "no node_exporter data in Prometheus"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// A node exporter, and a Prometheus scraping it that already has a rate.
fn node_scraped() -> (Proc, String, Prom) {
    let (node, node_addr) = node_exporter();
    let prom = prometheus(&[("node", node_addr.clone())]);
    wait_for_node_rate(&prom);
    (node, node_addr, prom)
}

fn node_exporter() -> (Proc, String) {
    let port = free_port();
    let log = std::env::temp_dir().join(format!("brunt-node-exporter-{port}.log"));
    let child = Command::new(binary("prometheus-node-exporter"))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("start node exporter");
    let mut p = Proc(child, log.display().to_string());
    let addr = format!("127.0.0.1:{port}");
    wait_ready(&format!("http://{addr}/metrics"), "node exporter", &mut p);
    (p, addr)
}

/// A constant load (`rate`, `duration`) on `url` whose one collector is the
/// Prometheus source: `prometheus` is that section's YAML; `more`, any
/// other top-level sections.
fn prom_profile(
    name: &str,
    (rate, duration): (&str, &str),
    prometheus: &str,
    more: &str,
    url: &str,
) -> Profile {
    load::profile(
        &format!(
            r#"
name: {name}
target: {{ url: "{{url}}" }}
requests: [ {{ path: "/" }} ]
shape: {{ constant: {{ rate: {rate}, duration: {duration} }} }}
{more}
collectors:
  generator: {{ enabled: false }}
  prometheus: {prometheus}
"#
        ),
        url,
    )
}

#[test]
fn the_prometheus_source_puts_node_cpu_and_pool_waiters_into_evidence_and_the_report() {
    let _g = load::serial();
    let (_node, node_addr, prom) = node_scraped();
    let srv = load::demo(DemoConfig::default());
    let p = prom_profile(
        "prom-in",
        ("50/s", "5s"),
        &format!(
            r#"
    url: {base}
    every: 1s
    instance: "{node_addr}"
    window: 5s
    use: [prometheus-node]
    queries:
      - {{ name: waiters, series: target.pool_waiters, query: "vector(7)" }}
      - {{ name: broken, query: "sum(rate(" }}
"#,
            base = prom.base
        ),
        "",
        &srv.base_url(),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let t0 = Instant::now();
    let r = load::run(&p, dir.path());
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    assert_eq!(r.summary.totals.offered, 250);
    let ev: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("diagnostics/evidence.json")).expect("evidence"),
    )
    .expect("json");
    let cpu = ev["series"]["target.host_cpu_pct"]
        .as_array()
        .expect("node CPU from Prometheus in evidence.json");
    assert!(cpu.len() >= 3, "{cpu:?}");
    for pt in cpu {
        let (t, v) = (pt[0].as_f64().expect("t"), pt[1].as_f64().expect("v"));
        assert!((-1.0..8.0).contains(&t), "t {t} on the run clock");
        assert!((0.0..=100.0).contains(&v), "cpu {v}");
    }
    assert!(
        ev["series"]["target.mem_used_bytes"][0][1]
            .as_f64()
            .expect("mem")
            > 1e6
    );
    assert_eq!(
        ev["series"]["target.pool_waiters"][0][1].as_f64(),
        Some(7.0)
    );
    let findings = ev["findings"].as_array().expect("findings");
    assert!(
        findings.iter().any(|f| f["kind"] == "pool"
            && f["summary"]
                .as_str()
                .is_some_and(|s| s.contains("7 threads waiting"))),
        "{findings:?}"
    );
    // The failing query is an error and a gap; the others kept going.
    let c = &serde_json::to_value(&r.summary.collectors).expect("json");
    assert!(!c.is_null(), "collectors summary");
    assert!(
        c["gaps"]
            .as_array()
            .expect("gaps")
            .iter()
            .any(|g| g["lane"] == "prometheus:broken"),
        "{c}"
    );
    assert!(
        c["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("parse error")),
        "{c}"
    );
    let html = std::fs::read_to_string(dir.path().join("report.html")).expect("report");
    assert!(
        html.contains("Target CPU (% of the host)"),
        "the report charts node CPU"
    );
}

#[test]
fn pool_waiters_read_from_prometheus_make_the_knee_cause_contention() {
    let _g = load::serial();
    // No host CPU query: the waiters alone are the server-side evidence.
    let prom = prometheus(&[]);
    let srv = load::demo(DemoConfig::default());
    let p = load::profile(
        &format!(
            r#"
name: prom-pool
target: {{ url: "{{url}}", timeout: 2s }}
requests: [ {{ path: "/slow?ms=5" }} ]
load: {{ model: open, connections: 32 }}
shape: {{ stress: {{ start: 20/s, step: 20/s, max: 40/s, step_duration: 3s }} }}
budgets: [ "p99 < 2ms" ]
collectors:
  generator: {{ enabled: false }}
  prometheus:
    url: {base}
    every: 1s
    queries: [ {{ name: hikari-pending, series: target.pool_waiters, query: "vector(12)" }} ]
"#,
            base = prom.base
        ),
        &srv.base_url(),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let r = load::run(&p, dir.path());
    let st = load::stress_verdict(&r);
    assert_eq!(st.first_breach.as_deref(), Some("step-1"), "{}", st.text);
    // The breaking step's top finding is the waiters read from Prometheus.
    let top = st.steps[0]
        .top_finding
        .as_ref()
        .expect("a finding in step-1");
    assert_eq!(top.kind, "pool", "{top:?}");
    // A saturated generator outranks every server-side cause by design (its
    // latencies are not trustworthy); on a quiet machine the waiters decide.
    if st.cause == brunt::judge::Cause::GeneratorSaturated {
        eprintln!("generator saturated on this loaded machine: {}", st.text);
        assert!(st.text.contains("generator was saturated"), "{}", st.text);
        return;
    }
    assert_eq!(st.cause, brunt::judge::Cause::Contention, "{}", st.text);
    assert!(
        st.text
            .contains("12 threads waiting for a pooled connection"),
        "{}",
        st.text
    );
}

#[test]
fn range_mode_reads_node_cpu_once_at_the_end_on_the_run_clock() {
    let _g = load::serial();
    let (_node, node_addr, prom) = node_scraped();
    let srv = load::demo(DemoConfig::default());
    let p = prom_profile(
        "prom-range",
        ("50/s", "6s"),
        &format!(
            r#"{{ url: {base}, mode: range, every: 1s, instance: "{node_addr}", window: 3s, use: [prometheus-node] }}"#,
            base = prom.base
        ),
        "",
        &srv.base_url(),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let r = load::run(&p, dir.path());
    assert_eq!(r.summary.totals.offered, 300);
    let rows = std::fs::read_to_string(dir.path().join("diagnostics/prometheus.jsonl"))
        .expect("the source's stream");
    let cpu: Vec<serde_json::Value> = rows
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["query"] == "host-cpu")
        .collect();
    // Prometheus scraped the node since before the run: a point per second of it.
    assert!(cpu.len() >= 4, "{rows}");
    for v in &cpu {
        let t = v["t"].as_f64().expect("t");
        assert!((-0.5..8.0).contains(&t), "{v}");
        if (0.5..5.5).contains(&t) {
            assert_eq!(v["phase"], "main", "{v}");
        }
    }
    let ev = std::fs::read_to_string(dir.path().join("diagnostics/evidence.json")).expect("ev");
    assert!(ev.contains("target.host_cpu_pct"), "{ev}");
}

/// nginx in front of Prometheus, answering 401 unless `Authorization: Bearer <token>`.
fn nginx_guard(upstream: &str, token: &str) -> (Nginx, String) {
    let port = free_port();
    let ngx = Nginx::start(
        &format!(
            r#"server {{ listen 127.0.0.1:{port};
    location / {{
      if ($http_authorization != "Bearer {token}") {{ return 401 "no\n"; }}
      proxy_pass {upstream};
    }} }}"#
        ),
        &[port],
    );
    (ngx, format!("http://127.0.0.1:{port}"))
}

#[test]
fn bearer_tokens_from_the_environment_reach_prometheus_behind_a_guard() {
    let _g = load::serial();
    let prom = prometheus(&[]);
    let (_nginx, guarded) = nginx_guard(&prom.base, "s3cret-token");
    // Read by this test only.
    std::env::set_var("BRUNT_TEST_PROM_TOKEN", "s3cret-token");
    std::env::set_var("BRUNT_TEST_PROM_WRONG", "wrong");
    let srv = load::demo(DemoConfig::default());
    let profile = |name: &str, var: &str| {
        prom_profile(
            name,
            ("20/s", "3s"),
            &format!(
                r#"{{ url: "{guarded}", bearer_token_env: {var}, every: 1s, queries: [ {{ name: one, query: "vector(1)" }} ] }}"#
            ),
            &format!(
                r#"output: {{ prometheus_remote_write: "{guarded}/api/v1/write", prometheus_remote_write_token_env: {var} }}"#
            ),
            &srv.base_url(),
        )
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let ok = load::run(
        &profile("guard-ok", "BRUNT_TEST_PROM_TOKEN"),
        &dir.path().join("ok"),
    );
    let c = &serde_json::to_value(&ok.summary.collectors).expect("json");
    assert!(!c.is_null(), "collectors");
    assert_eq!(c["errors_total"], 0, "{c}");
    let ev = std::fs::read_to_string(dir.path().join("ok/diagnostics/evidence.json")).expect("ev");
    assert!(ev.contains("prometheus.one"), "{ev}");
    let pushed = prom.one(r#"last_over_time(brunt_offered_total{run="ok"}[10m])"#);
    assert_eq!(pushed as u64, ok.summary.totals.offered);
    // The wrong token: every query is a 401 gap, every push a counted failure; the run completes.
    let bad = load::run(
        &profile("guard-bad", "BRUNT_TEST_PROM_WRONG"),
        &dir.path().join("bad"),
    );
    assert_eq!(bad.summary.totals.offered, 60);
    let c = &serde_json::to_value(&bad.summary.collectors).expect("json");
    assert!(!c.is_null(), "collectors");
    assert!(
        c["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("401")),
        "{c}"
    );
    assert!(prom.query(r#"brunt_offered_total{run="bad"}"#).is_empty());
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
