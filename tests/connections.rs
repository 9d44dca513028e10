//! Connection behaviour against real servers on 127.0.0.1: `keep_alive:
//! false` opens one connection per request (counted by the server), TLS
//! session resumption on and off (nginx's `$ssl_session_reused`), and a
//! server that accepts connections and resets them at once is classified
//! `reset`, every time, whatever the timing (issue 12, item 5).

#[path = "support/load.rs"]
mod load;
#[path = "support/nginx.rs"]
mod nginx;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use brunt::demo::DemoConfig;

#[test]
fn keep_alive_false_opens_one_connection_per_request() {
    let _g = load::serial();
    let load::DemoRun { srv, dir, r } = load::demo_run(
        DemoConfig::default(),
        r#"
name: no-keepalive
target: { url: "{url}" }
requests: [ { path: /fast } ]
load: { model: open, connections: 4, workers: 1, keep_alive: false }
shape: { constant: { rate: 200/s, duration: 3s } }
"#,
    );
    let t = &r.summary.totals;
    assert_eq!(t.errors, 0);
    assert!(t.requests >= 550, "about 600 requests, got {}", t.requests);
    // The preflight's connection, then one per request.
    assert_eq!(srv.stats().connections, t.requests + 1);
    // The time series: a connection rate per second and connect times.
    let rows = brunt::metrics::series::read(&dir.path().join("timeseries.csv")).unwrap();
    let opened: u64 = rows.iter().map(|r| r.connects).sum();
    assert_eq!(opened, t.requests);
    let busy = rows.iter().filter(|r| r.connects >= 150).count();
    assert!(
        busy >= 2,
        "≈ 200 connections/s in the full seconds: {rows:?}"
    );
    assert!(rows.iter().any(|r| r.connect_p99_us > 0));
}

#[test]
fn keep_alive_true_reuses_its_connections() {
    let _g = load::serial();
    let load::DemoRun { srv, r, .. } = load::demo_run(
        DemoConfig::default(),
        r#"
name: keepalive
target: { url: "{url}" }
requests: [ { path: /fast } ]
load: { model: open, connections: 4, workers: 1 }
shape: { constant: { rate: 200/s, duration: 2s } }
"#,
    );
    assert_eq!(r.summary.totals.errors, 0);
    assert!(srv.stats().connections <= 5, "{}", srv.stats().connections);
}

#[test]
fn tls_sessions_are_resumed_unless_resumption_is_off() {
    let _g = load::serial();
    let port = nginx::free_port();
    let ngx = nginx::Nginx::start(
        &format!(
            r#"server {{ listen 127.0.0.1:{port} ssl; location / {{ return 200 "ok\n"; }} }}"#
        ),
        &[port],
    );
    let profile = |resumption: bool, http: &str| {
        load::profile(
            &format!(
                r#"
name: tls-resume
target: {{ url: "https://127.0.0.1:{port}", http: {http}, tls: {{ insecure: true, resumption: {resumption} }} }}
requests: [ {{ path: /fast }} ]
load: {{ model: open, connections: 2, workers: 1, keep_alive: false }}
shape: {{ constant: {{ rate: 100/s, duration: 2s }} }}
"#
            ),
            "",
        )
    };
    for http in ["\"1.1\"", "auto"] {
        let _ = std::fs::write(ngx.dir.path().join("access.log"), "");
        let dir = tempfile::tempdir().unwrap();
        let r = load::run(&profile(true, http), dir.path());
        let t = &r.summary.totals;
        assert_eq!(t.errors, 0);
        let log = ngx.log();
        assert_eq!(log.len() as u64, t.requests);
        let conns: HashSet<u64> = log.iter().map(|l| l.connection).collect();
        assert_eq!(
            conns.len() as u64,
            t.requests,
            "one TLS connection per request"
        );
        let resumed = log.iter().filter(|l| l.reused == "r").count() as u64;
        assert!(
            resumed + 2 >= t.requests,
            "resumption on ({http}): {resumed} of {} resumed",
            t.requests
        );
    }
    let _ = std::fs::write(ngx.dir.path().join("access.log"), "");
    let dir = tempfile::tempdir().unwrap();
    let r = load::run(&profile(false, "\"1.1\""), dir.path());
    let log = ngx.log();
    assert_eq!(log.len() as u64, r.summary.totals.requests);
    assert!(
        log.iter().all(|l| l.reused == "."),
        "resumption off: every connection a full handshake"
    );
}

/// Accepts every connection and resets it at once (SO_LINGER 0, close):
/// a client may see the RST inside `connect()`, or on its first write or
/// read, depending on timing.
fn accept_then_reset(
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicU64>,
) -> (u16, std::thread::JoinHandle<()>) {
    nginx::tcp::serve(stop, move |c| {
        accepted.fetch_add(1, Ordering::Relaxed);
        let s = socket2::Socket::from(c);
        let _ = s.set_linger(Some(Duration::ZERO));
        drop(s);
    })
}

#[test]
fn a_server_that_accepts_then_resets_is_classified_reset_every_time() {
    let _g = load::serial();
    let stop = Arc::new(AtomicBool::new(false));
    let accepted = Arc::new(AtomicU64::new(0));
    let (port, h) = accept_then_reset(stop.clone(), accepted.clone());
    let url = format!("http://127.0.0.1:{port}");
    // Three runs: the split used to move by timing (26–43 % one way).
    for run in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let p = load::profile(
            r#"
name: accept-reset
target: { url: "{url}", timeout: 2s }
requests: [ { path: /fast } ]
load: { model: open, connections: 8, workers: 1 }
shape: { constant: { rate: 300/s, duration: 2s } }
"#,
            &url,
        );
        // The preflight lets it through: the target is there, it resets.
        let r = load::run(&p, dir.path());
        let t = &r.summary.totals;
        let by = |c: &str| t.by_class.get(c).map_or(0, |s| s.count);
        assert!(t.requests >= 550, "run {run}: {} requests", t.requests);
        assert_eq!(by("connect_error"), 0, "run {run}: {:?}", t.by_class.keys());
        assert_eq!(by("reset"), t.requests, "run {run}: every request a reset");
    }
    assert!(
        accepted.load(Ordering::Relaxed) > 1500,
        "the server accepted them"
    );
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
}

#[test]
fn a_refused_connection_is_a_connect_error() {
    let _g = load::serial();
    // A port with nothing listening: the preflight says so.
    let port = nginx::free_port();
    let p = load::profile(
        &load::fast("refused", "{url}", "10/s", "1s"),
        &format!("http://127.0.0.1:{port}"),
    );
    let dir = tempfile::tempdir().unwrap();
    let e = brunt::run::execute(
        &p,
        brunt::run::RunOptions {
            out: Some(dir.path().to_path_buf()),
            progress: brunt::run::Progress::Quiet,
            ..Default::default()
        },
    )
    .err()
    .expect("nothing listens");
    assert!(format!("{e:#}").contains("unreachable"), "{e:#}");
}
