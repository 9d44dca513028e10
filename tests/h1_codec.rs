//! The HTTP/1.1 codec (engine/h1.rs) against a real TCP server on
//! 127.0.0.1 that writes byte-exact answers in small pieces, so the client
//! reads them split: chunked bodies with extensions and trailers, interim
//! `100 Continue`, close-delimited bodies, `Connection: close`, a kept-alive
//! connection the server closes silently (sent again once), HEAD, and the
//! broken answers (garbage, bad Content-Length, truncated body) that must be
//! classified, never panic. The real servers of the other suites (demo
//! target, nginx) cover the well-formed common case.

#[path = "support/load.rs"]
mod load;
#[path = "support/tcp.rs"]
mod tcp;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// What the scripted server saw.
#[derive(Default)]
struct Seen {
    accepted: AtomicU64,
    /// Request heads (and bodies), in arrival order.
    requests: Mutex<Vec<String>>,
}

/// The answer to a request line, and whether to close after it.
fn answer(line: &str) -> (Vec<u8>, bool) {
    let target = line.split(' ').nth(1).unwrap_or("/");
    let path = target.split('?').next().unwrap_or(target);
    let ok = |extra: &str, body: &str| {
        format!(
            "HTTP/1.1 200 OK\r\n{extra}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    };
    match path {
        "/chunked" => (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
              5;ext=\"a b\"\r\nhello\r\n7\r\n needle\r\nA\r\n0123456789\r\n\
              0\r\nX-Trailer: t\r\n\r\n"
                .to_vec(),
            false,
        ),
        "/continue" => {
            let mut b = b"HTTP/1.1 100 Continue\r\n\r\n".to_vec();
            b.extend(ok("", "needle"));
            (b, false)
        }
        "/close" => (ok("Connection: close\r\n", "needle"), true),
        "/swallow-second" => (ok("", "needle"), false),
        // 2 MiB, the needle at its end: past the default `expect.max_body`.
        "/big" => (ok("", &("x".repeat(2 << 20) + "needle")), false),
        // Keep-alive by the headers, then closed: the idle-timeout race.
        "/idle" => (ok("", "needle"), true),
        "/eof" => (
            b"HTTP/1.1 200 OK\r\n\r\nneedle, until the close".to_vec(),
            true,
        ),
        "/head" => (
            b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".to_vec(),
            false,
        ),
        "/garbage" => (b"HTZP/1.1 200 OK\r\n\r\n".to_vec(), true),
        "/badlen" => (
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n".to_vec(),
            true,
        ),
        "/truncated" => (
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc".to_vec(),
            true,
        ),
        _ => (
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
            false,
        ),
    }
}

/// One connection: read requests (head and Content-Length body), answer
/// each in 1–7 byte writes so the client's reads split everywhere.
fn serve(mut c: TcpStream, seen: Arc<Seen>) {
    let _ = c.set_nodelay(true);
    let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let mut piece = 1;
    let mut served = 0;
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            match c.read(&mut tmp) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&tmp[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_string();
        let len: usize = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0);
        while buf.len() < end + 4 + len {
            match c.read(&mut tmp) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&tmp[..n]),
            }
        }
        let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).to_string();
        seen.requests
            .lock()
            .unwrap()
            .push(format!("{head}\r\n\r\n{body}"));
        buf.drain(..end + 4 + len);
        let line = head.lines().next().unwrap_or("");
        served += 1;
        // Read, then closed without a byte of answer: the request's fate is
        // unknown to the client (the server may have processed it).
        if served == 2 && line.contains(" /swallow-second") {
            return;
        }
        let (bytes, close) = answer(line);
        // Small answers in 1–7 byte writes; a big one whole (it is about
        // the limit, not the split).
        let size = if bytes.len() > 1 << 16 {
            bytes.len()
        } else {
            piece
        };
        for part in bytes.chunks(size) {
            if c.write_all(part).is_err() {
                return;
            }
            thread::sleep(Duration::from_micros(50));
        }
        piece = piece % 7 + 1;
        if close {
            return;
        }
    }
}

fn server(stop: Arc<AtomicBool>) -> (u16, Arc<Seen>, thread::JoinHandle<()>) {
    let seen = Arc::new(Seen::default());
    let s = seen.clone();
    let (port, h) = tcp::serve(stop, move |c| {
        s.accepted.fetch_add(1, Ordering::Relaxed);
        let s = s.clone();
        thread::spawn(move || serve(c, s));
    });
    (port, seen, h)
}

struct Ran {
    notes: Vec<String>,
    requests: u64,
    by: BTreeMap<String, u64>,
    accepted: u64,
    seen: Vec<String>,
}

/// 1 s at 50/s on 2 connections (bounded: ~50 requests) against the
/// scripted server; `request` is the YAML of the one request.
fn run(request: &str, keep_alive: bool) -> Ran {
    let stop = Arc::new(AtomicBool::new(false));
    let (port, seen, h) = server(stop.clone());
    let dir = tempfile::tempdir().unwrap();
    let p = load::profile(
        &format!(
            r#"
name: codec
target: {{ url: "{{url}}", timeout: 2s }}
requests: [ {request} ]
load: {{ model: open, connections: 2, workers: 1, keep_alive: {keep_alive} }}
shape: {{ constant: {{ rate: 50/s, duration: 1s }} }}
"#
        ),
        &format!("http://127.0.0.1:{port}"),
    );
    let r = load::run(&p, dir.path());
    stop.store(true, Ordering::Relaxed);
    h.join().unwrap();
    let t = &r.summary.totals;
    let heads = std::mem::take(&mut *seen.requests.lock().unwrap());
    Ran {
        notes: r.summary.notes.clone(),
        requests: t.requests,
        by: t
            .by_class
            .iter()
            .map(|(k, v)| (k.clone(), v.count))
            .collect(),
        accepted: seen.accepted.load(Ordering::Relaxed),
        seen: heads,
    }
}

fn assert_all(r: &Ran, class: &str, what: &str) {
    assert!(r.requests >= 40, "{what}: {} requests", r.requests);
    assert_eq!(
        r.by.get(class).copied().unwrap_or(0),
        r.requests,
        "{what}: every request {class}: {:?}",
        r.by
    );
}

const CHECKED: &str = "expect: { body_contains: needle, sample: 100% }";

#[test]
fn chunked_bodies_read_split_are_decoded_and_the_connection_kept() {
    let _g = load::serial();
    let r = run(&format!("{{ path: /chunked, {CHECKED} }}"), true);
    assert_all(&r, "ok", "chunked");
    // Two lanes and the preflight: the chunked framing left each connection reusable.
    assert!(r.accepted <= 3, "{} connections", r.accepted);
    let r = run(&format!("{{ path: /continue, {CHECKED} }}"), true);
    assert_all(&r, "ok", "100 Continue then 200");
    assert!(r.accepted <= 3, "{} connections", r.accepted);
}

#[test]
fn close_delimited_and_connection_close_answers_open_new_connections() {
    let _g = load::serial();
    for path in ["/close", "/eof", "/idle"] {
        let r = run(&format!("{{ path: {path}, {CHECKED} }}"), true);
        // `/idle` says keep-alive and closes: the next request finds the
        // connection closed and goes again, once, on a new one.
        assert_all(&r, "ok", path);
        assert!(
            r.accepted >= r.requests,
            "{path}: a connection per request, {} for {}",
            r.accepted,
            r.requests
        );
    }
}

#[test]
fn head_answers_have_no_body_and_requests_go_out_as_built() {
    let _g = load::serial();
    let r = run("{ method: HEAD, path: /head }", true);
    assert_all(&r, "ok", "HEAD");
    assert!(r.accepted <= 3, "{} connections", r.accepted);
    let r = run(
        r#"{ method: POST, path: /close?x=1, headers: { X-A: b }, body: "{\"k\":1}" }"#,
        false,
    );
    assert_all(&r, "ok", "POST");
    let last = r.seen.last().expect("the server saw requests");
    assert!(last.starts_with("POST /close?x=1 HTTP/1.1\r\n"), "{last}");
    let lower = last.to_ascii_lowercase();
    for h in [
        "host: 127.0.0.1:",
        "x-a: b",
        "content-length: 7",
        "connection: close",
    ] {
        assert!(lower.contains(h), "`{h}` in {last}");
    }
    assert!(last.ends_with("\r\n\r\n{\"k\":1}"), "{last}");
}

#[test]
fn broken_answers_are_classified_not_panics() {
    let _g = load::serial();
    for (path, class) in [
        ("/garbage", "other_error"),
        ("/badlen", "other_error"),
        ("/truncated", "reset"),
    ] {
        let r = run(&format!("{{ path: {path} }}"), true);
        assert_all(&r, class, path);
    }
}

/// The rule which client carries HTTP/1.1: the codec, unless a request of
/// the mix is `CONNECT` or carries `Upgrade` — then hyper, which still
/// answers correctly (here: a chunked body, checked).
#[test]
fn the_codec_carries_http1_unless_a_request_upgrades_and_hyper_still_works() {
    use brunt::engine::client::{prepare, target_from};
    use brunt::engine::template::Inputs;
    let _g = load::serial();
    let inputs = Inputs {
        env: Default::default(),
        base_dir: None,
    };
    for (request, codec) in [
        ("{ path: /chunked }", true),
        ("{ method: POST, path: /chunked, body: x }", true),
        ("{ path: /chunked, headers: { Upgrade: websocket } }", false),
        ("{ method: CONNECT, path: /chunked }", false),
    ] {
        let p = load::profile(
            &format!("name: rule\ntarget: {{ url: \"{{url}}\" }}\nrequests: [ {request} ]\nshape: {{ constant: {{ rate: 1/s, duration: 1s }} }}\n"),
            "http://127.0.0.1:1",
        );
        let (t, base) = target_from(&p, "http://127.0.0.1:1").expect("target");
        prepare(&p, &t, &base, &inputs, &[]).expect("prepare");
        assert_eq!(t.uses_codec(), codec, "{request}");
    }
    let r = run(
        &format!("{{ path: /chunked, headers: {{ Upgrade: websocket }}, {CHECKED} }}"),
        true,
    );
    assert_all(&r, "ok", "chunked over hyper");
    assert!(r.accepted <= 3, "{} connections", r.accepted);
}

/// A kept-alive connection that reads a request and closes without
/// answering: only idempotent methods go again (the server counts what it
/// received); `retry` overrides.
#[test]
fn unanswered_requests_are_sent_again_only_when_idempotent() {
    let _g = load::serial();
    // (request, sent again)
    for (request, again) in [
        (
            "{ method: POST, path: /swallow-second, body: order }",
            false,
        ),
        (
            "{ method: PATCH, path: /swallow-second, body: order }",
            false,
        ),
        (
            "{ method: GET, path: /swallow-second, retry: never }",
            false,
        ),
        ("{ method: GET, path: /swallow-second }", true),
        ("{ method: PUT, path: /swallow-second, body: x }", true),
        (
            "{ method: POST, path: /swallow-second, body: order, retry: always }",
            true,
        ),
    ] {
        let r = run(request, true);
        let received = r.seen.len() as u64;
        let reset = r.by.get("reset").copied().unwrap_or(0);
        let ok = r.by.get("ok").copied().unwrap_or(0);
        assert!(r.requests >= 40, "{request}: {} requests", r.requests);
        // Each connection answers its first request and swallows its second.
        assert!(r.accepted >= 10, "{request}: {} connections", r.accepted);
        if again {
            assert_eq!(
                ok, r.requests,
                "{request}: every request answered: {:?}",
                r.by
            );
            assert!(
                received > r.requests,
                "{request}: swallowed requests went again: server got {received} for {}",
                r.requests
            );
        } else {
            assert_eq!(
                received, r.requests,
                "{request}: the server received each request once: {received} for {} ({:?})",
                r.requests, r.by
            );
            assert!(
                reset >= 10,
                "{request}: swallowed requests are reset: {:?}",
                r.by
            );
            assert_eq!(ok + reset, r.requests, "{request}: {:?}", r.by);
        }
    }
}

/// A checked answer past `expect.max_body` is `body_too_large` (brunt's
/// limit, said so in a note), never a failed check; raising the limit
/// checks it.
#[test]
fn bodies_past_max_body_are_said_as_such() {
    let _g = load::serial();
    let r = run(
        "{ path: /big, expect: { body_contains: needle, sample: 100% } }",
        true,
    );
    assert_all(&r, "body_too_large", "2 MiB against the default 1 MiB");
    assert!(
        r.notes.iter().any(|n| n.contains("expect.max_body")),
        "{:?}",
        r.notes
    );
    let r = run(
        "{ path: /big, expect: { body_contains: needle, sample: 100%, max_body: 4MiB } }",
        true,
    );
    assert_all(&r, "ok", "2 MiB under a 4 MiB limit");
}
