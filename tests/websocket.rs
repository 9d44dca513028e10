//! WebSocket steps against a Python `websockets` server on 127.0.0.1
//! (`tests/python/ws_server.py`, PyPI `websockets` 17; tests/setup.sh
//! installs it): counts checked at the server, correlated round trips,
//! the intended-start rule through a stalling server, close code 1013 as
//! `shed`, an HTTP login whose token opens the socket, and a bad `ws:` step
//! as a located profile error. Every load is bounded (a few hundred
//! connections over 2–10 s).

#[path = "support/load.rs"]
mod load;

use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;

use brunt::judge::summary::RequestSummary;
use brunt::judge::Summary;
use brunt::profile::{Profile, ProfileError};

#[path = "support/certs.rs"]
mod certs;
#[path = "support/cmd.rs"]
mod cmd;
#[path = "support/python.rs"]
mod python;

const SOURCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/ws_server.py");

/// The test server, killed on drop.
struct WsServer(python::Service);

impl WsServer {
    fn start(args: &[&str]) -> WsServer {
        let ok = Command::new("python3")
            .args(["-c", "import websockets.asyncio.server"])
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "PyPI `websockets` 17 is missing: `python3 -m pip install 'websockets==17.*'` (tests/setup.sh does it)"
        );
        WsServer(python::Service::start_script(SOURCE, args))
    }

    fn url(&self) -> String {
        self.0.url()
    }

    /// The server's counters (`GET /stats`).
    fn stats(&self) -> serde_json::Value {
        let mut c = std::net::TcpStream::connect(&self.0.addr).expect("stats connect");
        let _ = c.set_read_timeout(Some(std::time::Duration::from_secs(5)));
        c.write_all(b"GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .expect("stats request");
        let mut text = String::new();
        let _ = c.read_to_string(&mut text);
        let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
        serde_json::from_str(body).unwrap_or_else(|e| panic!("stats `{text}`: {e}"))
    }

    /// Run `yaml` (its `{url}` this server's) into a scratch directory.
    fn run(&self, yaml: &str) -> Summary {
        let dir = tempfile::tempdir().expect("tmp");
        load::run(&load::profile(yaml, &self.url()), dir.path()).summary
    }
}

/// A profile of one socket request `name` on `path` whose one message
/// `message` awaits the next message as its reply; `load` is the rest
/// (`load:` and `shape:`).
fn one_message(name: &str, path: &str, message: &str, load: &str) -> String {
    format!(
        r#"
name: ws-{name}
target: {{ url: "{{url}}", timeout: 5s }}
requests:
  - name: {name}
    path: "{path}"
    ws: {{ messages: [ {{ name: {message}, send: "{message} {{{{ seq }}}}", correlate: next }} ] }}
{load}
"#
    )
}

fn row<'a>(s: &'a Summary, name: &str) -> &'a RequestSummary {
    s.requests
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| {
            let names: Vec<&str> = s.requests.iter().map(|r| r.name.as_str()).collect();
            panic!("no outcome row `{name}` in {names:?}")
        })
}

fn verdict(s: &Summary, budget: &str) -> brunt::budgets::Status {
    s.budgets
        .iter()
        .find(|v| v.budget == budget)
        .unwrap_or_else(|| panic!("no verdict for `{budget}`"))
        .status
}

#[test]
fn correlated_round_trips_measure_the_servers_delay_and_the_server_counts_every_message() {
    let srv = WsServer::start(&[]);
    let s = &srv.run(
        r#"
name: ws-echo
target: { url: "{url}", timeout: 5s }
requests:
  - name: echo
    path: "/echo?delay_ms=50"
    ws:
      messages:
        - name: first
          send: '{"id":"a{{ seq }}","n":1}'
          correlate: { json: /id }
          expect: { json: /n, equals: 1 }
        - name: second
          send: '{"id":"b{{ seq }}","n":2}'
          correlate: next
          expect: { contains: '"n":2' }
load: { model: open, workers: 1, connections: 50 }
shape: { constant: { rate: 40/s, duration: 3s } }
budgets:
  - step(echo first).p99 < 400ms
  - step(echo connect).p99 < 1ms
"#,
    );
    let steps = 120;
    assert_eq!(s.totals.errors, 0, "{:?}", s.totals);
    for name in ["echo", "echo connect", "echo first", "echo second"] {
        assert_eq!(row(s, name).requests, steps, "{name}: one per connection");
        assert_eq!(row(s, name).ok, steps, "{name}");
    }
    assert_eq!(s.totals.requests, 4 * steps);
    // Each outcome was offered when due: the books close.
    assert_eq!(s.totals.offered, s.totals.requests + s.totals.dropped);
    let stats = srv.stats();
    assert_eq!(stats["connections"], steps, "{stats}");
    assert_eq!(stats["messages"]["/echo"], 2 * steps, "{stats}");
    // The server holds each reply 50 ms: so does the round trip.
    let second = row(s, "echo second").latency.p50;
    assert!((49.0..75.0).contains(&second), "second p50 {second} ms");
    // The first was due when the step was: its connect is in it.
    let first = row(s, "echo first").latency.p50;
    assert!((49.0..90.0).contains(&first), "first p50 {first} ms");
    let connect = row(s, "echo connect").latency.p50;
    assert!(connect < 40.0, "connect p50 {connect} ms");
    // The connection lives through both round trips.
    let life = row(s, "echo").latency.p50;
    assert!(life >= first + 45.0, "lifetime p50 {life} ms");
    assert_eq!(
        verdict(s, "step(echo first).p99 < 400ms"),
        brunt::budgets::Status::Pass
    );
    assert_eq!(
        verdict(s, "step(echo connect).p99 < 1ms"),
        brunt::budgets::Status::Fail,
        "a connect over Python's event loop takes longer than 1 ms"
    );
    assert_eq!(s.meta.protocol.as_deref(), Some("WebSocket"));
}

#[test]
fn a_close_with_code_1013_is_shed_and_a_drop_without_a_close_frame_a_reset() {
    let srv = WsServer::start(&[]);
    let s = &srv.run(&one_message(
        "busy",
        "/shed",
        "work",
        "load: { model: open, workers: 1, connections: 20 }
shape: { constant: { rate: 30/s, duration: 2s } }",
    ));
    let n = 60;
    assert_eq!(row(s, "busy connect").ok, n, "the upgrade itself succeeded");
    assert_eq!(
        row(s, "busy work").shed,
        n,
        "the awaited message was refused"
    );
    assert_eq!(row(s, "busy").shed, n, "the connection closed with 1013");
    assert_eq!(s.totals.shed, 2 * n);
    assert_eq!(
        s.totals.shed_retry_after,
        2 * n,
        "1013 is the socket's Retry-After"
    );
    assert_eq!(s.totals.errors, 0, "{:?}", s.totals);
    assert_eq!(srv.stats()["closed_1013"], n);

    let s = &srv.run(&one_message(
        "gone",
        "/drop",
        "work",
        "load: { model: open, workers: 1, connections: 20 }\nshape: { constant: { rate: 20/s, duration: 1s } }",
    ));
    assert_eq!(row(s, "gone connect").ok, 20);
    assert_eq!(
        row(s, "gone work").errors,
        20,
        "no reply came: {:?}",
        s.totals
    );
    assert_eq!(row(s, "gone").errors, 20);
    assert_eq!(
        s.totals.by_class["reset"].count,
        40,
        "{:?}",
        s.totals.by_class.keys()
    );
}

#[test]
fn a_socket_opened_with_the_token_an_http_login_returned_uses_values_from_its_replies() {
    let srv = WsServer::start(&[]);
    let s = &srv.run(
        r#"
name: ws-chat
target: { url: "{url}", timeout: 5s }
scenarios:
  - name: visit
    steps:
      - name: login
        path: "/login?user=u{{ seq }}"
        extract: { token: { json: /token } }
      - name: chat
        path: /chat
        headers: { Authorization: "Bearer {{ vars.token }}" }
        ws:
          messages:
            - name: hello
              send: '{"type":"hello","id":"h{{ seq }}"}'
              correlate: { json: /id }
              expect: { json: /type, equals: welcome }
              extract: { room: { json: /room } }
            - name: say
              send: '{"type":"say","room":"{{ vars.room }}","id":"s"}'
              correlate: next
              expect: { json: /type, equals: ok }
      - name: again
        path: "/login?user={{ vars.room }}"
load: { model: open, workers: 1, connections: 20 }
shape: { constant: { rate: 25/s, duration: 2s } }
budgets:
  - step(chat hello).p99 < 1s
  - step(visit/chat say).error_rate < 1%
"#,
    );
    let n = 50;
    assert_eq!(s.totals.errors, 0, "{:?}", s.totals);
    for name in [
        "visit/login",
        "visit/chat connect",
        "visit/chat hello",
        "visit/chat say",
        "visit/chat",
        "visit/again",
    ] {
        assert_eq!(row(s, name).ok, n, "{name}");
    }
    assert_eq!(s.iterations[0].ok, n, "{:?}", s.iterations);
    assert_eq!(s.totals.offered, s.totals.requests + s.totals.dropped);
    let stats = srv.stats();
    assert_eq!(
        stats["bad_auth"], 0,
        "every socket carried its login's token"
    );
    assert_eq!(
        stats["wrong_room"], 0,
        "every say carried the room its hello returned"
    );
    assert_eq!(stats["messages"]["/chat"], 2 * n);
    assert_eq!(
        stats["room_logins"], n,
        "a later HTTP step used the socket's value"
    );
    for b in [
        "step(chat hello).p99 < 1s",
        "step(visit/chat say).error_rate < 1%",
    ] {
        assert_eq!(verdict(s, b), brunt::budgets::Status::Pass, "{b}");
    }
}

#[test]
fn a_message_due_while_the_server_stalls_keeps_its_due_time() {
    // 0.5 s stalls every 5 s, over 10 s: P(latency > x) = f·(1 − x/stall)
    // with f = 0.1, so p99 ≈ 0.9 · stall (as for HTTP, tests/engine_load.rs).
    let srv = WsServer::start(&["--stall-every", "5", "--stall-for", "0.5"]);
    let s = &srv.run(&one_message(
        "s",
        "/stall",
        "m",
        "load: { model: open, workers: 1, connections: 2 }
shape: { constant: { rate: 40/s, duration: 10s } }",
    ));
    assert_eq!(s.totals.errors, 0, "{:?}", s.totals);
    assert!(
        srv.stats()["stalled"].as_u64().unwrap_or(0) > 0,
        "the server stalled"
    );
    let m = row(s, "s m");
    assert_eq!(m.ok, 400);
    let expect = 450.0;
    assert!(
        (m.latency.p99 - expect).abs() < 0.15 * expect + 40.0,
        "message p99 {} ms, expected ≈ {expect} ms: a message due in a stall waits it out from its due time",
        m.latency.p99
    );
    assert!(
        m.latency.p50 < 50.0,
        "outside the stalls replies are quick: {:?}",
        m.latency
    );
}

#[test]
fn a_bad_ws_step_is_a_profile_error_with_its_line() {
    let text = r#"name: bad
target: { url: "http://127.0.0.1:9" }
requests:
  - name: chat
    path: /chat
    ws:
      messages:
        - send: hi
          expect: { contains: hello }
shape: { constant: { rate: 1/s, duration: 1s } }
"#;
    match Profile::from_yaml(text, Path::new("bad.yaml")) {
        Err(ProfileError::Syntax { line, message, .. }) => {
            assert_eq!(line, 9, "{message}");
            assert!(message.contains("correlate"), "{message}");
            assert!(message.contains("request chat"), "{message}");
        }
        other => panic!("expected a located error, got {other:?}"),
    }
    let pointer = text.replace("expect: { contains: hello }", "correlate: { json: id }");
    match Profile::from_yaml(&pointer, Path::new("bad.yaml")) {
        Err(ProfileError::Syntax { line, message, .. }) => {
            assert_eq!(line, 9, "{message}");
            assert!(message.contains("JSON pointer"), "{message}");
        }
        other => panic!("expected a located error, got {other:?}"),
    }
    let typo = text.replace("messages:", "mesages:");
    match Profile::from_yaml(&typo, Path::new("bad.yaml")) {
        Err(ProfileError::Syntax { line, message, .. }) => {
            assert_eq!(line, 7, "{message}");
        }
        other => panic!("expected a located error, got {other:?}"),
    }
}

#[test]
fn the_shipped_profile_logs_in_and_talks_to_the_demo_targets_socket() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/profiles/websocket.yaml"
    ))
    .expect("profiles/websocket.yaml");
    // Shortened, nothing else changed.
    let short = text.replace("duration: 10s", "duration: 2s");
    assert_ne!(short, text);
    let p = Profile::from_yaml(&short, Path::new("websocket.yaml")).expect("the shipped profile");
    let dir = tempfile::tempdir().expect("tmp");
    let r = load::run(&p, dir.path());
    let s = &r.summary;
    let n = 100;
    assert_eq!(s.totals.errors, 0, "{:?}", s.totals);
    for name in [
        "chat/login",
        "chat/socket connect",
        "chat/socket hello",
        "chat/socket say",
        "chat/socket",
    ] {
        assert_eq!(row(s, name).ok, n, "{name}");
    }
    // say waits 100 ms after its reply and the socket is held 500 ms.
    assert!(
        row(s, "chat/socket").latency.p50 >= 600.0,
        "{:?}",
        row(s, "chat/socket")
    );
    assert_eq!(s.meta.protocol.as_deref(), Some("HTTP/1.1 + WebSocket"));
    assert!(s.passed, "{:?}", s.budgets);
}

#[test]
fn wss_uses_the_targets_tls_settings() {
    let dir = tempfile::tempdir().expect("tmp");
    certs::make_cert(dir.path());
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let srv = WsServer::start(&[
        "--cert",
        cert.to_str().unwrap_or_default(),
        "--key",
        key.to_str().unwrap_or_default(),
    ]);
    let url = srv.url().replace("http://", "https://");
    let yaml = |tls: &str| {
        format!(
            r#"
name: wss
target: {{ url: "{url}", timeout: 5s, tls: {tls} }}
requests:
  - name: echo
    path: /echo
    ws: {{ messages: [ {{ name: m, send: "hi {{{{ seq }}}}", correlate: next, expect: {{ regex: "^hi [0-9]+$" }} }} ] }}
load: {{ model: open, workers: 1, connections: 10 }}
shape: {{ constant: {{ rate: 20/s, duration: 1s }} }}
"#
        )
    };
    let ca = format!("{{ ca_file: \"{}\" }}", dir.path().join("ca.pem").display());
    let run = tempfile::tempdir().expect("tmp");
    let s = load::run(&load::profile(&yaml(&ca), &url), run.path()).summary;
    assert_eq!(s.totals.errors, 0, "{:?}", s.totals);
    assert_eq!(row(&s, "echo m").ok, 20);
    assert_eq!(s.meta.protocol.as_deref(), Some("WebSocket over TLS"));
}

#[test]
fn virtual_users_of_the_closed_model_run_socket_steps_too() {
    let srv = WsServer::start(&[]);
    let s = &srv.run(&one_message(
        "echo",
        "/echo?delay_ms=20",
        "m",
        "load: { model: closed, workers: 1 }
shape: { constant: { vus: 4, duration: 2s } }",
    ));
    assert_eq!(s.totals.errors, 0, "{:?}", s.totals);
    let n = row(s, "echo").ok;
    assert!(n > 20, "4 users, ~25 ms a visit, 2 s: {n}");
    assert_eq!(row(s, "echo connect").ok, n);
    assert_eq!(row(s, "echo m").ok, n);
    assert_eq!(srv.stats()["messages"]["/echo"], n);
    assert_eq!(s.totals.offered, s.totals.requests + s.totals.dropped);
    let m = row(s, "echo m").latency.p50;
    assert!((19.0..45.0).contains(&m), "round trip p50 {m} ms");
}

#[test]
fn a_stress_run_finds_the_knee_of_a_socket_service() {
    let _g = load::serial();
    // One lock, 10 ms a message: about 100 messages a second, then a queue.
    let srv = WsServer::start(&[]);
    let yaml = one_message(
        "work",
        "/serial?work_ms=10",
        "job",
        "load: { model: open, connections: 256 }
shape:
  stress: { start: 25/s, step: 25/s, step_duration: 2s, max: 200/s, stop_on_breach: true }
budgets: [ \"p99 < 200ms\", \"error_rate < 1%\" ]",
    );
    let (_dir, r, st) = load::stress_judged(&yaml, &srv.url());
    let knee = st.capacity.unwrap_or_else(|| panic!("a knee: {}", st.text));
    assert!((25.0..=100.0).contains(&knee), "{}", st.text);
    assert!(
        st.first_breach.is_some(),
        "the queue broke p99: {}",
        st.text
    );
    // Every message brunt counts ok the server worked; it got none brunt did not send.
    let job = row(&r.summary, "work job");
    let served = srv.stats()["messages"]["/serial"].as_u64().unwrap_or(0);
    assert!(
        job.ok > 0 && job.ok <= served && served <= job.requests,
        "{served} {job:?}"
    );
}

#[test]
fn a_socket_service_that_sheds_with_1013_passes_the_overload_verdict() {
    let _g = load::serial();
    // 2 messages at work, 20 ms each: about 100 a second; past that the
    // connection is closed with 1013 at once.
    let srv = WsServer::start(&[]);
    let yaml = one_message(
        "order",
        "/limited?capacity=2&work_ms=20",
        "buy",
        "load: { model: open, connections: 512 }
shape:
  overload: { baseline: 30/s, baseline_duration: 2s, ramp: 2s, rate: 300/s, duration: 3s, recovery_duration: 2s, fast_fail: 100ms }",
    );
    let dir = tempfile::tempdir().expect("tmp");
    let r = load::run(&load::profile(&yaml, &srv.url()), dir.path());
    let s = &r.summary;
    let stats = srv.stats();
    let buy = row(s, "order buy");
    assert!(buy.shed > 100, "{:?}", s.totals.by_class);
    assert_eq!(buy.shed, stats["limited_refused"], "{stats}");
    assert_eq!(buy.ok, stats["limited_ok"], "{stats}");
    assert_eq!(
        s.totals.errors, 0,
        "shedding is not failing: {:?}",
        s.totals.by_class
    );
    for name in ["shed answers are fast", "Retry-After on shed answers"] {
        let c = load::overload_check(&r, name);
        assert_eq!(c.status, brunt::judge::CheckStatus::Pass, "{c:?}");
    }
}
