//! HTTP/2 against real servers on 127.0.0.1: nginx (apt) over TLS with ALPN
//! `h2`, an h2c server with prior knowledge, `auto` falling back to 1.1, a
//! server demanding 1.1 refused when 2 is asked, GOAWAY mid-run, and the
//! coordinated-omission stall test over HTTP/2.

#[path = "support/load.rs"]
mod load;
#[path = "support/nginx.rs"]
mod nginx;
#[path = "support/tokio_server.rs"]
mod tokio_server;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use brunt::metrics::Class;

fn tls_servers(h2_port: u16, h1_port: u16) -> String {
    format!(
        r#"
    server {{
        listen 127.0.0.1:{h2_port} ssl http2;
        location / {{ default_type text/plain; return 200 "ok\n"; }}
    }}
    server {{
        listen 127.0.0.1:{h1_port} ssl;
        location / {{ default_type text/plain; return 200 "ok\n"; }}
    }}
"#
    )
}

fn count(r: &brunt::run::RunResult, c: Class) -> u64 {
    r.summary
        .totals
        .by_class
        .get(c.name())
        .map_or(0, |s| s.count)
}

#[test]
fn nginx_over_tls_sees_http2_for_every_request_and_auto_falls_back_to_1_1() {
    let _g = load::serial();
    let (p2, p1) = (nginx::free_port(), nginx::free_port());
    let ngx = nginx::Nginx::start(&tls_servers(p2, p1), &[p2, p1]);
    let profile = |port: u16, http: &str| {
        load::profile(
            &format!(
                r#"
name: h2-nginx
target: {{ url: "https://127.0.0.1:{port}", http: {http}, tls: {{ insecure: true }} }}
requests: [ {{ path: /fast }} ]
load: {{ model: open, connections: 2, streams_per_connection: 8, workers: 1 }}
shape: {{ constant: {{ rate: 400/s, duration: 3s }} }}
"#
            ),
            "",
        )
    };
    // http: "2": every request is HTTP/2 on nginx's side, on at most 2 connections.
    let dir = tempfile::tempdir().unwrap();
    let r = load::run(&profile(p2, "\"2\""), dir.path());
    let t = &r.summary.totals;
    assert_eq!(t.errors, 0, "{:?}", t);
    assert!(
        t.requests >= 1100,
        "about 1200 requests, got {}",
        t.requests
    );
    let log = ngx.log();
    assert_eq!(log.len() as u64, t.requests, "nginx logged every request");
    assert!(
        log.iter().all(|l| l.protocol == "HTTP/2.0"),
        "every request over HTTP/2: {:?}",
        log.iter().find(|l| l.protocol != "HTTP/2.0")
    );
    let conns: HashSet<u64> = log.iter().map(|l| l.connection).collect();
    assert!(
        conns.len() <= 2,
        "2 connections at most, nginx saw {}",
        conns.len()
    );

    // auto against the same server: ALPN picks h2.
    let _ = std::fs::write(ngx.dir.path().join("access.log"), "");
    let dir = tempfile::tempdir().unwrap();
    let r = load::run(&profile(p2, "auto"), dir.path());
    let log = ngx.log();
    assert_eq!(log.len() as u64, r.summary.totals.requests);
    assert!(log.iter().all(|l| l.protocol == "HTTP/2.0"));

    // auto against a server without h2: HTTP/1.1, and nothing fails.
    let _ = std::fs::write(ngx.dir.path().join("access.log"), "");
    let dir = tempfile::tempdir().unwrap();
    let r = load::run(&profile(p1, "auto"), dir.path());
    assert_eq!(r.summary.totals.errors, 0);
    let log = ngx.log();
    assert_eq!(log.len() as u64, r.summary.totals.requests);
    assert!(
        log.iter().all(|l| l.protocol == "HTTP/1.1"),
        "fell back to 1.1"
    );

    // "2" demanded of a 1.1-only server: refused before any load, saying why.
    let dir = tempfile::tempdir().unwrap();
    let e = brunt::run::execute(
        &profile(p1, "\"2\""),
        brunt::run::RunOptions {
            out: Some(dir.path().to_path_buf()),
            progress: brunt::run::Progress::Quiet,
            ..Default::default()
        },
    )
    .err()
    .expect("a 1.1-only server is refused when HTTP/2 is demanded");
    let msg = format!("{e:#}");
    assert!(
        msg.contains("does not speak HTTP/2") && msg.contains("ALPN"),
        "{msg}"
    );
}

/// An h2c (prior knowledge) server from the `h2` crate that counts
/// connections and requests, and after every `goaway_every` requests on a
/// connection sends GOAWAY: graceful (NO_ERROR) or, with `abrupt`, an
/// INTERNAL_ERROR that kills the streams in flight.
struct H2c {
    srv: tokio_server::TokioServer,
    connections: Arc<AtomicU64>,
    requests: Arc<AtomicU64>,
}

impl H2c {
    fn start(goaway_every: Option<u64>, abrupt: bool) -> H2c {
        let connections = Arc::new(AtomicU64::new(0));
        let requests = Arc::new(AtomicU64::new(0));
        let (c2, r2) = (connections.clone(), requests.clone());
        let srv = tokio_server::TokioServer::start(move |s| {
            c2.fetch_add(1, Ordering::Relaxed);
            serve(s, r2.clone(), goaway_every, abrupt)
        });
        H2c {
            srv,
            connections,
            requests,
        }
    }
    fn url(&self) -> String {
        self.srv.url()
    }
}

async fn serve(
    s: tokio::net::TcpStream,
    requests: Arc<AtomicU64>,
    goaway_every: Option<u64>,
    abrupt: bool,
) {
    let _ = s.set_nodelay(true);
    let Ok(mut conn) = h2::server::handshake(s).await else {
        return;
    };
    let mut n = 0u64;
    while let Some(Ok((_req, mut respond))) = conn.accept().await {
        n += 1;
        requests.fetch_add(1, Ordering::Relaxed);
        let resp = http::Response::builder().status(200).body(()).unwrap();
        if goaway_every.is_some_and(|k| n.is_multiple_of(k)) {
            if abrupt {
                conn.abrupt_shutdown(h2::Reason::INTERNAL_ERROR);
            } else {
                if let Ok(mut body) = respond.send_response(resp, false) {
                    let _ = body.send_data(bytes::Bytes::from_static(b"ok\n"), true);
                }
                conn.graceful_shutdown();
            }
            continue;
        }
        if let Ok(mut body) = respond.send_response(resp, false) {
            let _ = body.send_data(bytes::Bytes::from_static(b"ok\n"), true);
        }
    }
    // Drive the shutdown to its end (streams in flight finish first).
    let _ = std::future::poll_fn(|cx| conn.poll_closed(cx)).await;
}

fn h2c_profile(url: &str, rate: u32) -> brunt::profile::Profile {
    load::profile(
        &format!(
            r#"
name: h2c
target: {{ url: "{{url}}", http: "2", timeout: 5s }}
requests: [ {{ path: /fast }} ]
load: {{ model: open, connections: 2, streams_per_connection: 16, workers: 1 }}
shape: {{ constant: {{ rate: {rate}/s, duration: 3s }} }}
"#
        ),
        url,
    )
}

#[test]
fn h2c_with_prior_knowledge_multiplexes_streams_on_few_connections() {
    let _g = load::serial();
    let srv = H2c::start(None, false);
    let dir = tempfile::tempdir().unwrap();
    let r = load::run(&h2c_profile(&srv.url(), 1000), dir.path());
    let t = &r.summary.totals;
    assert_eq!(t.errors, 0);
    assert!(
        t.requests >= 2800,
        "about 3000 requests, got {}",
        t.requests
    );
    assert_eq!(srv.requests.load(Ordering::Relaxed), t.requests);
    // The preflight's own connection, plus at most 2 for the load.
    let c = srv.connections.load(Ordering::Relaxed);
    assert!(
        (2..=3).contains(&c),
        "1 preflight + ≤ 2 load connections, got {c}"
    );
    // The time series counts the connections brunt opened.
    let rows = brunt::metrics::series::read(&dir.path().join("timeseries.csv")).unwrap();
    let opened: u64 = rows.iter().map(|r| r.connects).sum();
    assert_eq!(opened, c - 1, "connections in timeseries.csv");
}

#[test]
fn a_graceful_goaway_mid_run_is_survived_without_errors() {
    let _g = load::serial();
    // GOAWAY after every 100 requests on a connection.
    let srv = H2c::start(Some(100), false);
    let dir = tempfile::tempdir().unwrap();
    let r = load::run(&h2c_profile(&srv.url(), 500), dir.path());
    let t = &r.summary.totals;
    // Streams the server did not process were sent again on a new connection.
    assert_eq!(t.errors, 0, "graceful GOAWAY: nothing lost ({:?})", t);
    assert!(t.requests >= 1400);
    let c = srv.connections.load(Ordering::Relaxed);
    assert!(
        c >= t.requests / 100,
        "a new connection after each GOAWAY: {c} connections for {} requests",
        t.requests
    );
}

#[test]
fn an_abrupt_goaway_is_classified_as_reset_and_the_run_goes_on() {
    let _g = load::serial();
    let srv = H2c::start(Some(100), true);
    let dir = tempfile::tempdir().unwrap();
    let r = load::run(&h2c_profile(&srv.url(), 500), dir.path());
    let t = &r.summary.totals;
    let (ok, reset) = (count(&r, Class::Ok), count(&r, Class::Reset));
    assert!(
        reset > 0,
        "streams killed by GOAWAY(INTERNAL_ERROR) are resets"
    );
    assert!(
        ok > t.requests / 2,
        "the run went on: {ok} ok of {}",
        t.requests
    );
    assert_eq!(ok + reset, t.requests, "nothing else: {:?}", t);
}

#[test]
fn h2_demanded_of_a_cleartext_1_1_server_is_refused_at_start() {
    let _g = load::serial();
    // The demo target speaks h2c; nginx without `http2` on a plain listener does not.
    let port = nginx::free_port();
    let _ngx = nginx::Nginx::start(
        &format!(r#"server {{ listen 127.0.0.1:{port}; location / {{ return 200 "ok\n"; }} }}"#),
        &[port],
    );
    let dir = tempfile::tempdir().unwrap();
    let e = brunt::run::execute(
        &h2c_profile(&format!("http://127.0.0.1:{port}"), 100),
        brunt::run::RunOptions {
            out: Some(dir.path().to_path_buf()),
            progress: brunt::run::Progress::Quiet,
            ..Default::default()
        },
    )
    .err()
    .expect("refused");
    let msg = format!("{e:#}");
    assert!(
        msg.contains("does not speak HTTP/2") && msg.contains("preface"),
        "{msg}"
    );
}

#[test]
fn stalls_show_in_latency_from_intended_start_over_http2() {
    let _g = load::serial();
    // One connection, two streams: during a stall later requests wait for a
    // stream, keeping their due time.
    let srv = load::stalled_run(
        r#"
name: stall-h2
target: { url: "{url}", timeout: 5s, http: "2" }
requests: [ { path: /fast } ]
load: { model: open, connections: 1, streams_per_connection: 2, workers: 1 }
shape: { constant: { rate: 200/s, duration: 20s } }
"#,
    );
    // One connection carried it all (plus the preflight's).
    assert!(srv.stats().connections <= 2, "{}", srv.stats().connections);
}

#[test]
fn target_http_reads_1_1_2_and_auto_quoted_or_not_and_refuses_others() {
    use brunt::profile::{HttpVersion, Profile};
    let parse = |v: &str| {
        Profile::from_yaml(
            &format!(
                "name: v\ntarget: {{ url: \"http://127.0.0.1:1\", http: {v} }}\nrequests: [ {{ path: / }} ]\nshape: {{ constant: {{ rate: 1/s, duration: 1s }} }}\n"
            ),
            std::path::Path::new("v.yaml"),
        )
    };
    for (v, want) in [
        ("\"1.1\"", HttpVersion::Http1),
        ("1.1", HttpVersion::Http1),
        ("\"2\"", HttpVersion::Http2),
        ("2", HttpVersion::Http2),
        ("auto", HttpVersion::Auto),
    ] {
        assert_eq!(
            parse(v).unwrap_or_else(|e| panic!("{v}: {e}")).target.http,
            want,
            "{v}"
        );
    }
    for bad in ["3", "\"http/3\"", "1.0.1"] {
        let e = parse(bad)
            .err()
            .unwrap_or_else(|| panic!("{bad} must be refused"));
        assert!(e.to_string().contains("HTTP version"), "{bad}: {e}");
    }
    let Err(e) = Profile::from_yaml(
        "name: v\ntarget: { url: \"http://127.0.0.1:1\" }\nrequests: [ { path: / } ]\nload: { streams_per_connection: 0 }\nshape: { constant: { rate: 1/s, duration: 1s } }\n",
        std::path::Path::new("v.yaml"),
    ) else {
        panic!("0 streams must be refused");
    };
    assert!(e.to_string().contains("streams_per_connection"), "{e}");
}
