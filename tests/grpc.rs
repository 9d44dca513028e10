//! gRPC calls against a Python `grpcio` service on 127.0.0.1
//! (`tests/grpc/server.py`, serving `profiles/load_test.proto`): unary and
//! server-streaming counts as the server saw them, a deadline as `timeout`,
//! `RESOURCE_EXHAUSTED` as `shed` read by the overload verdict, a stall
//! showing in latency from the intended start, and a bad `.proto` or
//! message as a profile error with its file, line and column.

#[path = "support/grpc.rs"]
mod grpc;
#[path = "support/load.rs"]
mod load;
#[path = "support/nginx.rs"]
mod nginx;
#[path = "support/python.rs"]
mod python;

use std::time::Duration;

use brunt::judge::CheckStatus;
use brunt::run::spec::{CompileInputs, RunSpec};

/// `yaml` against `url`, `{proto}` the test service's `.proto`.
fn run(url: &str, yaml: &str) -> (tempfile::TempDir, brunt::run::RunResult) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = load::profile(&yaml.replace("{proto}", grpc::PROTO), url);
    let r = load::run(&p, dir.path());
    (dir, r)
}

fn request<'a>(
    r: &'a brunt::run::RunResult,
    name: &str,
) -> &'a brunt::judge::summary::RequestSummary {
    r.summary
        .requests
        .iter()
        .find(|q| q.name == name)
        .unwrap_or_else(|| panic!("no request `{name}`: {:#?}", r.summary.requests))
}

#[test]
fn unary_streams_and_deadlines_count_as_the_server_saw_them() {
    let _g = load::serial();
    let srv = grpc::Service::start(&[]);
    let (dir, r) = run(
        &srv.url(),
        r#"
name: grpc-mix
target: { url: "{url}", timeout: 3s, grpc: { protos: ["{proto}"] } }
requests:
  - name: unary
    grpc:
      method: brunt.test.Load/Unary
      message: { name: "u{{ seq }}", count: "{{ random.int(1, 9) }}", kind: LOUD, tags: [a, b], inner: { flag: true } }
      metadata: { x-tenant: t1 }
  - { name: stream, grpc: { method: brunt.test.Load/Stream, message: { name: s, count: 4, delay_ms: 10 } } }
  - { name: slow, grpc: { method: brunt.test.Load/Slow, message: { delay_ms: 400 }, deadline: 100ms } }
shape: { constant: { rate: 60/s, duration: 3s } }
"#,
    );
    let served = srv.stop();
    let got = |k: &str| served.get(k).copied().unwrap_or(0);
    let (unary, stream, slow) = (
        request(&r, "unary"),
        request(&r, "stream"),
        request(&r, "slow"),
    );
    assert!(unary.ok > 30 && unary.errors == 0, "{unary:?}");
    assert_eq!(unary.ok, got("Unary"), "{served:?}");
    // Templated per send: every call carried its own name.
    assert_eq!(got("Unary.names"), got("Unary"), "{served:?}");
    assert!(stream.ok > 30 && stream.errors == 0, "{stream:?}");
    assert_eq!(stream.ok, got("Stream"), "{served:?}");
    assert_eq!(got("Stream.messages"), 4 * got("Stream"), "{served:?}");
    // The deadline ran out at the server: timeouts, each named.
    assert_eq!(slow.ok, 0, "{slow:?}");
    let timeouts = r
        .summary
        .totals
        .by_class
        .get("timeout")
        .map_or(0, |c| c.count);
    assert_eq!(timeouts, slow.requests, "{:?}", r.summary.totals.by_class);
    assert!(
        slow.latency.p50 < 350.0,
        "given up at the deadline: {slow:?}"
    );
    let json = std::fs::read_to_string(dir.path().join("summary.json")).expect("summary.json");
    assert!(
        json.contains("grpc-status 4 (DEADLINE_EXCEEDED)"),
        "errors table names the status"
    );
    // Streams: messages per stream and time to first message, in summary.json.
    let row = r
        .summary
        .streams
        .iter()
        .find(|s| s.request == "stream")
        .unwrap_or_else(|| panic!("no stream row: {:?}", r.summary.streams));
    assert_eq!(row.streams, stream.requests, "{row:?}");
    assert_eq!(row.messages, 4 * row.streams, "{row:?}");
    assert_eq!(row.messages_per_stream, 4.0);
    assert_eq!(row.first_message.count, row.streams, "{row:?}");
    // Three 10-ms pauses after the first message: the whole stream is longer.
    assert!(
        row.first_message.p50_ms + 25.0 < stream.latency.p50,
        "first message {row:?}, whole stream {stream:?}"
    );
    assert!(
        json.contains("\"messages_per_stream\""),
        "summary.json has the streams"
    );
    let proto = r.summary.meta.protocol.clone().unwrap_or_default();
    assert!(proto.starts_with("gRPC"), "{proto}");
}

#[test]
fn grpc_over_tls_speaks_h2_through_alpn() {
    let _g = load::serial();
    let d = tempfile::tempdir().expect("tempdir");
    nginx::make_cert(d.path());
    let dir = d.path().to_string_lossy().into_owned();
    let srv = grpc::Service::start(&["--tls-dir", &dir]);
    let url = srv.url().replace("http://", "https://");
    let yaml = r#"
name: grpc-tls
target: { url: "{url}", tls: { insecure: true }, grpc: { protos: ["{proto}"] }, trace: { sample: 100% } }
requests: [ { name: unary, grpc: { method: brunt.test.Load/Unary, message: { name: t } } } ]
shape: { constant: { rate: 50/s, duration: 1s } }
"#;
    let (_out, r) = run(&url, yaml);
    let served = srv.stop();
    assert_eq!(r.summary.totals.ok, 50, "{:?}", r.summary.totals.by_class);
    assert_eq!(served.get("Unary").copied(), Some(50), "{served:?}");
    let proto = r.summary.meta.protocol.clone().unwrap_or_default();
    assert_eq!(proto, "gRPC over HTTP/2 over TLS");
    // Every call carried a trace context (a static message, framed once).
    let traces = r.summary.traces.as_ref().expect("traced");
    assert_eq!(traces.sent, 50, "{traces:?}");
}

#[test]
fn resource_exhausted_is_shed_and_the_overload_verdict_reads_it() {
    let _g = load::serial();
    // 4 calls at once, 20 ms each: ≈ 200 calls/s; the rest refused at once.
    let srv = grpc::Service::start(&["--capacity", "4", "--work", "0.02"]);
    let (_dir, r) = run(
        &srv.url(),
        r#"
name: grpc-overload
target: { url: "{url}", timeout: 3s, grpc: { protos: ["{proto}"] } }
requests: [ { name: order, grpc: { method: brunt.test.Load/Limited } } ]
shape:
  overload: { baseline: 50/s, baseline_duration: 2s, ramp: 3s, rate: 600/s, duration: 4s, recovery_duration: 3s, fast_fail: 100ms }
budgets: [ "shed.p99 < 100ms" ]
"#,
    );
    let served = srv.stop();
    let t = &r.summary.totals;
    assert!(t.shed > 100, "{:?}", t.by_class);
    let got = |k: &str| served.get(k).copied().unwrap_or(0);
    assert_eq!(t.shed, got("Limited.refused"), "{served:?}");
    assert_eq!(t.ok, got("Limited"), "{served:?}");
    assert_eq!(t.errors, 0, "shedding is not failing: {:?}", t.by_class);
    // grpc-retry-pushback-ms is gRPC's Retry-After.
    for name in ["shed answers are fast", "Retry-After on shed answers"] {
        let c = load::overload_check(&r, name);
        assert_eq!(c.status, CheckStatus::Pass, "{c:?}");
    }
}

#[test]
fn a_stalled_grpc_service_shows_in_latency_from_the_intended_start() {
    let _g = load::serial();
    // Stalls 1 s in every 5 (from its first call): 20 % of the time. One
    // connection, two streams: calls due in a stall wait for a stream and
    // keep their due time, so P(latency > x) = f·(1 − x/stall).
    let srv = grpc::Service::start(&["--stall-every", "5", "--stall-for", "1"]);
    let (_dir, r) = run(
        &srv.url(),
        r#"
name: grpc-stall
target: { url: "{url}", timeout: 5s, grpc: { protos: ["{proto}"] } }
requests: [ { name: stall, grpc: { method: brunt.test.Load/Stall } } ]
load: { model: open, connections: 1, streams_per_connection: 2, workers: 1 }
shape: { constant: { rate: 200/s, duration: 10s } }
"#,
    );
    let served = srv.stop();
    let (stall_for, every) = (Duration::from_secs(1), Duration::from_secs(5));
    load::assert_stall_latency(&r, stall_for, every, 100.0);
    assert!(
        served.get("Stall.stalled").copied().unwrap_or(0) > 0,
        "{served:?}"
    );
}

#[test]
fn a_bad_proto_or_message_is_a_located_profile_error() {
    let d = tempfile::tempdir().expect("tempdir");
    let compile = |name: &str, body: &str| -> String {
        let path = d.path().join(name);
        std::fs::write(&path, body).expect("write");
        match RunSpec::load(&path, &[], CompileInputs::default()) {
            Ok(_) => panic!("{name} must not compile"),
            Err(e) => e.to_string(),
        }
    };
    let profile = |proto: &str, call: &str| {
        format!(
            "name: bad\ntarget:\n  url: http://127.0.0.1:1\n  grpc: {{ protos: [\"{proto}\"] }}\nrequests:\n  - name: first\n    grpc:\n{call}shape: {{ constant: {{ rate: 1/s, duration: 1s }} }}\n"
        )
    };
    let call =
        |method: &str, message: &str| format!("      method: {method}\n      message: {message}\n");
    // Each call's mistake, with where it must point and what it must say.
    let cases = [
        // A field the message does not have: line 9, at the field.
        (
            "field",
            "brunt.test.Load/Unary",
            "{ name: x, cuont: 3 }",
            "9:27:",
            &["no field `cuont`", "count"][..],
        ),
        // A value of the wrong type, nested.
        (
            "type",
            "brunt.test.Load/Unary",
            "{ inner: { flag: 3 } }",
            "9:27:",
            &["expected bool"],
        ),
        // An enum value it does not declare.
        (
            "enum",
            "brunt.test.Load/Unary",
            "{ kind: QUIET }",
            "9:",
            &["PLAIN, LOUD"],
        ),
        // A method the service does not have.
        (
            "method",
            "brunt.test.Load/Unry",
            "{}",
            "8:15:",
            &["no method `Unry`"],
        ),
    ];
    for (name, method, message, at, says) in cases {
        let file = format!("{name}.yaml");
        let e = compile(&file, &profile(grpc::PROTO, &call(method, message)));
        assert!(e.contains(&format!("{file}:{at}")), "{e}");
        assert!(says.iter().all(|s| e.contains(s)), "{e}");
    }
    // A .proto that does not parse: the profile's line, then the .proto's.
    std::fs::write(
        d.path().join("bad.proto"),
        "syntax = \"proto3\";\nmessage A {\n  string x = 1\n}\n",
    )
    .expect("write");
    let e = compile("proto.yaml", &profile("bad.proto", &call("a.B/C", "{}")));
    assert!(
        e.contains("proto.yaml:4:21:") && e.contains("bad.proto:4:1:"),
        "{e}"
    );
    // A .proto that is not there.
    let e = compile("none.yaml", &profile("none.proto", &call("a.B/C", "{}")));
    assert!(
        e.contains("none.yaml:4:") && e.contains("no such file"),
        "{e}"
    );
}
