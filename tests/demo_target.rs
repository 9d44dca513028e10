//! The built-in demo target, driven by a plain blocking HTTP/1.1 client over
//! std `TcpStream` on 127.0.0.1 (deliberately not brunt's own client: these
//! tests are what brunt's engine tests stand on).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use brunt::demo::{DemoConfig, DemoError, DemoServer};

/// Generous bound for "answered at once" on a busy 2-core CI machine.
const FAST: Duration = Duration::from_millis(150);

struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One keep-alive connection to the demo target.
struct Conn {
    reader: BufReader<TcpStream>,
}

impl Conn {
    fn open(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        s.set_nodelay(true).expect("nodelay");
        Conn {
            reader: BufReader::new(s),
        }
    }

    fn request(&mut self, method: &str, path: &str, body: &[u8]) -> Resp {
        self.request_with(method, path, "", body)
    }

    /// `extra`: more header lines, each ending in `\r\n`.
    fn request_with(&mut self, method: &str, path: &str, extra: &str, body: &[u8]) -> Resp {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/x-test\r\n{extra}Content-Length: {}\r\n\r\n",
            body.len()
        );
        let s = self.reader.get_mut();
        s.write_all(head.as_bytes()).expect("write head");
        s.write_all(body).expect("write body");
        self.read_response()
    }

    fn get(&mut self, path: &str) -> Resp {
        self.request("GET", path, b"")
    }

    fn read_response(&mut self) -> Resp {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("status line");
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {line:?}"));
        let mut headers = Vec::new();
        for _ in 0..100 {
            line.clear();
            self.reader.read_line(&mut line).expect("header line");
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let (k, v) = l.split_once(':').expect("header has a colon");
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
        let len: usize = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse().ok())
            .expect("content-length");
        let mut body = vec![0; len];
        self.reader.read_exact(&mut body).expect("body");
        Resp {
            status,
            headers,
            body,
        }
    }
}

fn get(addr: SocketAddr, path: &str) -> Resp {
    Conn::open(addr).get(path)
}

fn start(cfg: DemoConfig) -> DemoServer {
    DemoServer::start(cfg).expect("demo target starts")
}

/// Runs `n` requests to `path` at once (one connection each, released by a
/// barrier) and returns each response with its latency.
fn burst(addr: SocketAddr, path: &'static str, n: usize) -> Vec<(Resp, Duration)> {
    let barrier = Arc::new(Barrier::new(n));
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let barrier = barrier.clone();
            thread::spawn(move || {
                let mut c = Conn::open(addr);
                barrier.wait();
                let t = Instant::now();
                let r = c.get(path);
                (r, t.elapsed())
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("client thread"))
        .collect()
}

#[test]
fn fast_root_and_health_answer_ok() {
    let server = start(DemoConfig::default());
    assert!(server.base_url().starts_with("http://127.0.0.1:"));
    let mut c = Conn::open(server.addr());
    for path in ["/", "/fast", "/health", "/fast"] {
        let r = c.get(path);
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.body, b"ok\n", "{path}");
    }
    let s = server.stats();
    assert_eq!(s.fast.requests, 3);
    assert_eq!(s.fast.completed, 3);
    assert_eq!(s.health.requests, 1);
    assert_eq!(s.connections, 1, "keep-alive reuses the connection");
    assert_eq!(s.total().requests, 4);
}

#[test]
fn unknown_path_is_404_and_counted() {
    let server = start(DemoConfig::default());
    assert_eq!(get(server.addr(), "/nope").status, 404);
    assert_eq!(server.stats().not_found.requests, 1);
}

#[test]
fn status_endpoint_returns_the_asked_code() {
    let server = start(DemoConfig::default());
    let mut c = Conn::open(server.addr());
    for code in [200, 201, 404, 418, 429, 500, 503, 599] {
        let r = c.get(&format!("/status/{code}"));
        assert_eq!(r.status, code);
        assert_eq!(r.header("retry-after"), None);
    }
    let r = c.get("/status/503?retry_after=7");
    assert_eq!((r.status, r.header("retry-after")), (503, Some("7")));
    for bad in ["/status/abc", "/status/700", "/status/100", "/status/"] {
        assert_eq!(c.get(bad).status, 400, "{bad}");
    }
    assert_eq!(server.stats().status.requests, 13);
}

#[test]
fn echo_returns_the_body_and_content_type() {
    let server = start(DemoConfig::default());
    let mut c = Conn::open(server.addr());
    let body: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    let r = c.request("POST", "/echo", &body);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, body);
    assert_eq!(r.header("content-type"), Some("text/x-test"));
    let r = c.request("POST", "/echo", b"");
    assert_eq!((r.status, r.body.len()), (200, 0));
}

#[test]
fn echo_refuses_bodies_over_one_mib() {
    let server = start(DemoConfig::default());
    let mut c = Conn::open(server.addr());
    let r = c.request("POST", "/echo", &vec![b'x'; (1 << 20) + 1]);
    assert_eq!(r.status, 413);
}

#[test]
fn slow_waits_the_configured_or_asked_time() {
    let server = start(DemoConfig {
        slow: Duration::from_millis(120),
        ..DemoConfig::default()
    });
    let mut c = Conn::open(server.addr());
    let t = Instant::now();
    assert_eq!(c.get("/slow").status, 200);
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(120), "{took:?}");
    assert!(took < Duration::from_millis(120) + FAST, "{took:?}");

    let t = Instant::now();
    assert_eq!(c.get("/slow?ms=40").status, 200);
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(40), "{took:?}");
    assert!(took < Duration::from_millis(40) + FAST, "{took:?}");

    assert_eq!(c.get("/slow?ms=zzz").status, 400);
    assert_eq!(c.get("/slow?ms=600001").status, 400);
    assert_eq!(server.stats().slow.requests, 4);
}

#[test]
fn contended_serializes_on_one_lock() {
    let hold = Duration::from_millis(10);
    let server = start(DemoConfig {
        contended_hold: hold,
        ..DemoConfig::default()
    });
    let n = 12;
    let t = Instant::now();
    let results = burst(server.addr(), "/contended", n);
    let wall = t.elapsed();
    assert!(results.iter().all(|(r, _)| r.status == 200));
    // One lock: n holds back to back, never overlapping.
    assert!(wall >= hold * n as u32, "{wall:?}");
    // And queueing shows in latency: the last in line waited for all others.
    let max = results.iter().map(|(_, d)| *d).max().expect("results");
    assert!(max >= hold * (n as u32 - 1), "max latency {max:?}");
    // The hold is precise (thread sleep, not the ms-rounding tokio timer):
    // 12 × 10 ms must not take 12 × 11+ ms plus scheduling slack.
    assert!(wall < hold * n as u32 + FAST, "{wall:?}");
    assert_eq!(server.stats().contended.completed, n as u64);
}

#[test]
fn contended_throughput_caps_at_one_per_hold() {
    let hold = Duration::from_millis(5);
    let server = start(DemoConfig {
        contended_hold: hold,
        ..DemoConfig::default()
    });
    let addr = server.addr();
    let run = Duration::from_millis(800);
    let t0 = Instant::now();
    let clients: Vec<_> = (0..8)
        .map(|_| {
            thread::spawn(move || {
                let mut c = Conn::open(addr);
                let mut n = 0u64;
                while t0.elapsed() < run {
                    assert_eq!(c.get("/contended").status, 200);
                    n += 1;
                }
                n
            })
        })
        .collect();
    let total: u64 = clients.into_iter().map(|h| h.join().expect("client")).sum();
    let wall = t0.elapsed();
    // Saturated: one hold after another, so requests ≈ wall / hold.
    let expected = wall.as_secs_f64() / hold.as_secs_f64();
    let ratio = total as f64 / expected;
    assert!(
        (0.85..=1.02).contains(&ratio),
        "{total} requests in {wall:?}: {ratio:.3} of 1/hold"
    );
}

#[test]
fn shed_answers_503_with_retry_after_above_the_cap() {
    let work = Duration::from_millis(400);
    let server = start(DemoConfig {
        shed_cap: 4,
        shed_work: work,
        ..DemoConfig::default()
    });
    let results = burst(server.addr(), "/shed", 12);
    let ok: Vec<_> = results.iter().filter(|(r, _)| r.status == 200).collect();
    let shed: Vec<_> = results.iter().filter(|(r, _)| r.status == 503).collect();
    assert_eq!((ok.len(), shed.len()), (4, 8), "cap 4 of 12 concurrent");
    for (r, d) in &shed {
        assert_eq!(r.header("retry-after"), Some("1"));
        assert!(*d < FAST, "shed must be fast, took {d:?}");
    }
    for (_, d) in &ok {
        assert!(*d >= work, "admitted requests do the work, took {d:?}");
    }
    let s = server.stats().shed;
    assert_eq!((s.requests, s.completed, s.shed), (12, 12, 8));
    // Once the admitted ones finish, the endpoint admits again.
    assert_eq!(get(server.addr(), "/shed").status, 200);
}

#[test]
fn noshed_queues_but_never_sheds() {
    let work = Duration::from_millis(100);
    let server = start(DemoConfig {
        shed_cap: 2,
        shed_work: work,
        ..DemoConfig::default()
    });
    let t = Instant::now();
    let results = burst(server.addr(), "/noshed", 8);
    let wall = t.elapsed();
    assert!(results.iter().all(|(r, _)| r.status == 200), "never 503");
    // 8 requests through 2 permits: 4 waves of work.
    assert!(wall >= work * 4, "{wall:?}");
    let max = results.iter().map(|(_, d)| *d).max().expect("results");
    assert!(max >= work * 4 - Duration::from_millis(5), "{max:?}");
    assert_eq!(server.stats().noshed.shed, 0);
    assert_eq!(server.stats().noshed.completed, 8);
}

#[test]
fn stall_holds_every_response_until_the_window_ends() {
    let server = start(DemoConfig {
        stall_every: Some(Duration::from_millis(1000)),
        stall_for: Duration::from_millis(400),
        ..DemoConfig::default()
    });
    let sched = server.config().stall_schedule().expect("stalls on");
    let t0 = server.started_at();
    let addr = server.addr();
    // One request every 25 ms for 1.5 s, each on its own connection (so a
    // stalled one never delays the next): windows are [600, 1000) ms, …
    let handles: Vec<_> = (0..60u32)
        .map(|i| {
            thread::spawn(move || {
                let due = t0 + Duration::from_millis(25) * i;
                thread::sleep(due.saturating_duration_since(Instant::now()));
                let mut c = Conn::open(addr);
                let sent = t0.elapsed();
                let r = c.get("/fast");
                (r.status, sent, t0.elapsed())
            })
        })
        .collect();
    let mut stalled = 0;
    for h in handles {
        let (status, sent, done) = h.join().expect("client");
        assert_eq!(status, 200);
        match sched.window_at(sent) {
            Some((_, end)) => {
                stalled += 1;
                assert!(
                    done >= end,
                    "sent {sent:?} in a stall, done {done:?} < {end:?}"
                );
                assert!(done < end + FAST, "sent {sent:?}, done {done:?}");
            }
            None => {
                // Received inside a window only if it was answered just
                // before the window opened.
                if let Some((start, end)) = sched.window_at(done) {
                    assert!(done < start + Duration::from_millis(20) || done >= end);
                } else {
                    assert!(done - sent < FAST, "sent {sent:?}, done {done:?}");
                }
            }
        }
    }
    assert!(
        stalled >= 10,
        "about 16 of 60 fall in the window, got {stalled}"
    );
    assert!(server.stats().stalled >= stalled);
}

#[test]
fn stall_also_holds_requests_in_progress() {
    let server = start(DemoConfig {
        stall_every: Some(Duration::from_millis(800)),
        stall_for: Duration::from_millis(400),
        ..DemoConfig::default()
    });
    // Window [400, 800) ms. A 200-ms /slow sent at ~300 ms finishes its work
    // inside the window, so it must come back at 800 ms, not 500.
    let t0 = server.started_at();
    let mut c = Conn::open(server.addr());
    thread::sleep((t0 + Duration::from_millis(300)).saturating_duration_since(Instant::now()));
    let sent = t0.elapsed();
    assert!(sent < Duration::from_millis(390), "test too late: {sent:?}");
    assert_eq!(c.get("/slow?ms=200").status, 200);
    let done = t0.elapsed();
    assert!(done >= Duration::from_millis(800), "{done:?}");
    assert!(done < Duration::from_millis(800) + FAST, "{done:?}");
}

#[test]
fn several_threads_serve_many_connections() {
    let server = start(DemoConfig {
        threads: 2,
        ..DemoConfig::default()
    });
    let results = burst(server.addr(), "/fast", 40);
    assert!(results.iter().all(|(r, _)| r.status == 200));
    let s = server.stats();
    assert_eq!((s.fast.completed, s.connections), (40, 40));
}

#[test]
fn stop_closes_the_listener() {
    let server = start(DemoConfig::default());
    let addr = server.addr();
    assert_eq!(get(addr, "/").status, 200);
    let t = Instant::now();
    server.stop();
    assert!(t.elapsed() < Duration::from_secs(2), "stop is prompt");
    assert!(
        TcpStream::connect(addr).is_err(),
        "nobody listens after stop"
    );
}

#[test]
fn stop_does_not_wait_for_open_connections() {
    let server = start(DemoConfig {
        slow: Duration::from_secs(30),
        ..DemoConfig::default()
    });
    let addr = server.addr();
    let client = thread::spawn(move || {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        s.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
            .expect("write");
        let mut buf = [0u8; 64];
        // The server drops the connection: EOF or reset, not a 10-s timeout.
        let t = Instant::now();
        let _ = s.read(&mut buf);
        t.elapsed()
    });
    thread::sleep(Duration::from_millis(100));
    let t = Instant::now();
    server.stop();
    assert!(t.elapsed() < Duration::from_secs(2));
    assert!(client.join().expect("client") < Duration::from_secs(5));
}

#[test]
fn errors_say_what_is_wrong() {
    let e = DemoServer::start(DemoConfig {
        stall_every: Some(Duration::from_secs(1)),
        stall_for: Duration::from_secs(2),
        ..DemoConfig::default()
    })
    .expect_err("rejected");
    assert!(matches!(e, DemoError::Config(_)));
    assert!(e.to_string().contains("stall_for"), "{e}");
}

/// The engine's tests start the target from inside a tokio runtime: start,
/// use and stop must all work there (no runtime is built or dropped on the
/// caller's thread).
#[tokio::test]
async fn usable_from_inside_an_async_runtime() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = start(DemoConfig::default());
    let mut s = tokio::net::TcpStream::connect(server.addr())
        .await
        .expect("connect");
    s.write_all(b"GET /fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .expect("write");
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf))
        .await
        .expect("answered in time")
        .expect("read");
    let text = String::from_utf8_lossy(&buf);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.ends_with("ok\n"), "{text}");
    server.stop();
}

#[test]
fn cache_memory_grows_with_distinct_ids_only() {
    let server = start(DemoConfig::default());
    let mut c = Conn::open(server.addr());
    for round in 0..3 {
        for id in 0..50 {
            let r = c.get(&format!("/cache/{id}"));
            assert_eq!(r.status, 200, "round {round}");
            assert_eq!(r.body.len(), 10 * 1024);
            assert!(r.body.starts_with(id.to_string().as_bytes()));
        }
    }
    let s = server.stats();
    assert_eq!(s.cache.requests, 150);
    assert_eq!(s.cache_entries, 50, "one entry per distinct id");
    assert_eq!(server.cache_counts().get("7"), Some(&3));
    assert_eq!(c.get("/cache/").status, 400);
}

#[test]
fn items_need_a_bearer_token_from_login() {
    let server = start(DemoConfig::default());
    let mut c = Conn::open(server.addr());
    assert_eq!(c.get("/items/1").status, 401);
    let r = c.request_with("GET", "/items/1", "Authorization: Bearer forged\r\n", b"");
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    assert_eq!(c.get("/login").status, 405, "login is a POST");
    let r = c.request("POST", "/login", b"{\"user\":\"ada\"}");
    assert_eq!(r.status, 200);
    let body = String::from_utf8(r.body).expect("utf8");
    let token = body
        .split('"')
        .nth(3)
        .unwrap_or_else(|| panic!("a token in {body}"))
        .to_string();
    let r = c.request_with(
        "GET",
        "/items/42",
        &format!("Authorization: Bearer {token}\r\n"),
        b"",
    );
    assert_eq!(r.status, 200);
    assert!(String::from_utf8_lossy(&r.body).contains("\"id\":\"42\""));
    let s = server.stats();
    assert_eq!((s.login.requests, s.items.requests), (2, 3));
}
