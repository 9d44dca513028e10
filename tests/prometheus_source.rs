//! Prometheus in, as a server-side source, against the real thing on
//! 127.0.0.1 (Debian's `prometheus` scraping a `prometheus-node-exporter`;
//! `tests/setup.sh` installs both): the source puts node CPU into
//! `evidence.json` and the report, a query mapped to pool waiters is pool
//! evidence for the knee's cause, range mode reads once at the end, bearer
//! tokens reach a guarded Prometheus, and a failing query is a gap while the
//! run completes.

#[path = "support/load.rs"]
mod load;
#[path = "support/nginx.rs"]
mod nginx;
#[path = "support/prometheus.rs"]
mod prometheus;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use brunt::demo::DemoConfig;
use brunt::profile::Profile;
use nginx::{free_port, Nginx};
use prometheus::{binary, prometheus, wait_ready, Proc, Prom};

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
