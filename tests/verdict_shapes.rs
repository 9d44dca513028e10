//! Shape verdicts that hold up (issue 11, items 6–8), against tiny HTTP
//! servers written here on 127.0.0.1:
//!
//! - a service whose goodput collapses under overload (≈140 ok/s on the way
//!   up, 16 ok/s once overloaded, every other answer a fast 503 with
//!   `Retry-After`) fails the overload verdict on "goodput held", against a
//!   capacity measured on the ramp rather than in the overload itself;
//! - a service that is slow until warmed up: a stress run with `warmup:`
//!   sends that warm-up as its own phase, which breaks the budget and yet
//!   judges nothing — the knee is found on the real steps, and a constant
//!   run's budgets leave it out too.
//!
//! Every server stops by itself (a deadline) and every run is bounded by its
//! profile's shape.

#[path = "support/load.rs"]
mod load;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use brunt::budgets::Status as GateStatus;
use brunt::judge::CheckStatus;

/// What the server answers to one request: status, extra headers, delay.
type Answer = (u16, &'static str, Duration);

/// A thread-per-connection HTTP/1.1 server with keep-alive; `answer` decides
/// each response. It stops when dropped or after `DEADLINE`.
struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

const DEADLINE: Duration = Duration::from_secs(120);

impl Server {
    fn start(answer: impl Fn() -> Answer + Send + Sync + 'static) -> Server {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        l.set_nonblocking(true).expect("nonblocking");
        let addr = l.local_addr().expect("addr");
        let stop = Arc::new(AtomicBool::new(false));
        let answer = Arc::new(answer);
        let s = stop.clone();
        std::thread::spawn(move || {
            let t0 = Instant::now();
            while !s.load(Ordering::Relaxed) && t0.elapsed() < DEADLINE {
                match l.accept() {
                    Ok((c, _)) => {
                        let (a, s) = (answer.clone(), s.clone());
                        std::thread::spawn(move || serve(c, &*a, &s, t0));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
        });
        Server { addr, stop }
    }
    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// Runs `yaml` (its `{url}` a [`Server`] answering with `answer`, stopped
/// after the run) into a temp dir: the directory and the result.
fn run_against(
    answer: impl Fn() -> Answer + Send + Sync + 'static,
    yaml: &str,
) -> (tempfile::TempDir, brunt::run::RunResult) {
    let srv = Server::start(answer);
    let dir = tempfile::tempdir().expect("tempdir");
    let r = load::run(&load::profile(yaml, &srv.url()), dir.path());
    (dir, r)
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(mut c: TcpStream, answer: &dyn Fn() -> Answer, stop: &AtomicBool, t0: Instant) {
    let _ = c.set_nonblocking(false);
    let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = c.set_nodelay(true);
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !stop.load(Ordering::Relaxed) && t0.elapsed() < DEADLINE {
        // One request head (GETs only: no body).
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break Some(i + 4);
            }
            match c.read(&mut chunk) {
                Ok(0) | Err(_) => break None,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let Some(end) = end else { return };
        buf.drain(..end);
        let (status, headers, delay) = answer();
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        let reason = if status == 200 {
            "OK"
        } else {
            "Service Unavailable"
        };
        let resp = format!("HTTP/1.1 {status} {reason}\r\nContent-Length: 2\r\n{headers}\r\nok");
        if c.write_all(resp.as_bytes()).is_err() {
            return;
        }
    }
}

/// Admission by the second: 140 ok/s while the arrivals stay at or under
/// 250/s; once a second (this one or the last) sees more, only 16 ok/s get
/// in — the collapse. Everything over the quota is a fast 503 + Retry-After.
fn collapsing() -> impl Fn() -> Answer + Send + Sync + 'static {
    struct Sec {
        at: u64,
        arrivals: u32,
        prev: u32,
        ok: u32,
    }
    let t0 = Instant::now();
    let st = Mutex::new(Sec {
        at: 0,
        arrivals: 0,
        prev: 0,
        ok: 0,
    });
    move || {
        let now = t0.elapsed().as_secs();
        let mut s = st.lock().unwrap_or_else(|e| e.into_inner());
        if now != s.at {
            s.prev = if now == s.at + 1 { s.arrivals } else { 0 };
            s.at = now;
            s.arrivals = 0;
            s.ok = 0;
        }
        s.arrivals += 1;
        let quota = if s.prev > 250 || s.arrivals > 250 {
            16
        } else {
            140
        };
        if s.ok < quota {
            s.ok += 1;
            (200, "", Duration::from_millis(2))
        } else {
            (503, "Retry-After: 1\r\n", Duration::ZERO)
        }
    }
}

#[test]
fn goodput_that_collapses_under_overload_fails_the_verdict() {
    let _g = load::serial();
    let (dir, r) = run_against(
        collapsing(),
        r#"
name: collapse
target: { url: "{url}", timeout: 2s }
requests: [ { path: / } ]
load: { connections: 64 }
shape:
  overload: { baseline: 50/s, baseline_duration: 3s, ramp: 12s, rate: 400/s, duration: 5s, recovery_duration: 5s, fast_fail: 100ms }
budgets: [ "p99 < 500ms" ]
"#,
    );
    let s = &r.summary;
    let ov = s
        .verdicts
        .as_ref()
        .and_then(|v| v.overload.clone())
        .expect("overload verdict");
    let check = |name: &str| {
        ov.checks
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no check `{name}`: {:#?}", ov.checks))
            .clone()
    };
    // The fast, labelled 503s pass their own checks…
    assert_eq!(
        check("shed answers are fast").status,
        CheckStatus::Pass,
        "{:#?}",
        ov.checks
    );
    assert_eq!(
        check("Retry-After on shed answers").status,
        CheckStatus::Pass
    );
    // …but admitted throughput collapsed against the capacity the ramp showed.
    let g = check("goodput held");
    assert_eq!(g.status, CheckStatus::Fail, "{g:?}");
    assert!(g.measured.starts_with("goodput collapsed: "), "{g:?}");
    assert!(g.measured.contains("against a capacity of ≈"), "{g:?}");
    assert!(
        (100.0..=160.0).contains(&ov.capacity_estimate),
        "capacity {} from {} (built for 140/s)",
        ov.capacity_estimate,
        ov.capacity_source
    );
    assert_eq!(ov.capacity_source, "best 3 s of ramp");
    assert!(ov.goodput < 30.0, "goodput {} (built for 16/s)", ov.goodput);
    assert!(!ov.pass);
    assert!(ov.text.contains("goodput held"), "{}", ov.text);
    // The gate fails the run, named.
    let gate = s
        .gates
        .iter()
        .find(|g| g.name == "overload: goodput held")
        .unwrap_or_else(|| panic!("no goodput gate: {:#?}", s.gates));
    assert_eq!(gate.status, GateStatus::Fail);
    assert!(!s.passed);
    // Ok and shed latency apart, in the verdict, the terminal and the HTML.
    let (ok, shed) = (
        ov.ok_latency.expect("ok latency"),
        ov.shed_latency.expect("shed latency"),
    );
    assert!(ok.count > 0 && shed.count > ok.count, "{ok:?} {shed:?}");
    assert!(ok.p50_ms >= 1.5, "admitted answers take ≥ 2 ms: {ok:?}");
    let term = brunt::report::terminal::render(s);
    assert!(term.contains("overload latency: ok p50 "), "{term}");
    assert!(term.contains("shed p99"), "{term}");
    let html = std::fs::read_to_string(dir.path().join("report.html")).expect("report.html");
    assert!(
        html.contains("Admitted vs shed latency"),
        "no ok/shed table"
    );
    assert!(html.contains("overload shed") && html.contains("overload ok"));
}

/// Slow (150 ms) for the first 2.5 s after its first request, then fast.
fn slow_until_warm() -> impl Fn() -> Answer + Send + Sync + 'static {
    let first: Mutex<Option<Instant>> = Mutex::new(None);
    move || {
        let t = *first
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(Instant::now);
        if t.elapsed() < Duration::from_millis(2500) {
            (200, "", Duration::from_millis(150))
        } else {
            (200, "", Duration::from_millis(1))
        }
    }
}

/// `shape` with a warm-up, run against [`slow_until_warm`] under `p99 < 100ms`.
fn warm_run(name: &str, shape: &str) -> (tempfile::TempDir, brunt::run::RunResult) {
    run_against(
        slow_until_warm(),
        &format!(
            r#"
name: {name}
target: {{ url: "{{url}}", timeout: 2s }}
requests: [ {{ path: / }} ]
load: {{ connections: 16 }}
shape: {shape}
budgets: [ "p99 < 100ms" ]
"#
        ),
    )
}

#[test]
fn a_warmup_phase_is_sent_but_judged_by_nothing() {
    let _g = load::serial();
    let (_dir, r) = warm_run(
        "warm-stress",
        "{ stress: { start: 20/s, step: 20/s, step_duration: 2s, max: 60/s, warmup: 3s } }",
    );
    let s = &r.summary;
    let names: Vec<&str> = s.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["warmup", "step-1", "step-2", "step-3"]);
    let warm = &s.phases[0];
    assert!(warm.requests > 30, "{warm:?}");
    assert!(
        warm.latency.p99 >= 100.0,
        "the warm-up breaks the budget: p99 {}",
        warm.latency.p99
    );
    // Stop on breach did not stop at it, and the knee is on the real steps.
    assert!(s.stopped_reason.is_none(), "{:?}", s.stopped_reason);
    let st = s.stress.as_ref().expect("stress result");
    assert_eq!(st.knee.as_deref(), Some("step-3"), "{st:?}");
    assert_eq!(st.first_breach, None, "{st:?}");
    let sv = s
        .verdicts
        .as_ref()
        .and_then(|v| v.stress.as_ref())
        .expect("stress verdict");
    assert!(
        sv.steps.iter().all(|r| r.name != "warmup"),
        "{:?}",
        sv.steps
    );
    assert!(
        s.gates.iter().all(|g| !g.text.contains("warmup")),
        "{:#?}",
        s.gates
    );
    assert!(s.passed, "{:#?}", s.gates);
    let term = brunt::report::terminal::render(s);
    assert!(term.contains("warm-up"), "{term}");
    assert!(term.contains("(not judged)"), "{term}");

    // A constant run's unscoped budgets leave the warm-up out too.
    let (_dir, r) = warm_run(
        "warm-constant",
        "{ constant: { rate: 20/s, duration: 3s, warmup: { duration: 3s, rate: 20/s } } }",
    );
    let s = &r.summary;
    assert_eq!(s.phases[0].name, "warmup");
    assert!(s.phases[0].latency.p99 >= 100.0, "{:?}", s.phases[0]);
    assert!(
        s.totals.latency.p99 >= 100.0,
        "totals still count every request"
    );
    let b = &s.budgets[0];
    assert!(b.pass, "the budget judges `main` only: {b:?}");
    assert_eq!(b.scope, "run less warm-up");
    assert!(s.passed, "{:#?}", s.gates);
}
