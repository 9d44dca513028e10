//! Every offered request is accounted for, and `interrupted` tells the truth:
//! a server slower than the run (requests still queued or in flight at the
//! end are `unfinished`, counted as errors and in the percentiles), a stop
//! mid-run, the closed model, a stress run stopped at its first breach by
//! design, and the `brunt` binary stopped by SIGINT and SIGTERM.

#[path = "support/load.rs"]
mod load;

#[path = "support/cmd.rs"]
mod cmd;
use cmd::{kill, out, spawn_run, wait_lines, wait_with_limit, write};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use brunt::demo::DemoConfig;
use brunt::judge::summary::ScopeSummary;
use brunt::judge::{StopKind, Summary};
use brunt::run::{execute, Progress, RunOptions};

/// offered = answered (every class, unfinished included) + dropped, in every
/// phase and over the run; `requests` is the sum of the classes.
fn assert_accounted(s: &Summary) {
    for p in s.phases.iter().chain(std::iter::once(&s.totals)) {
        let classes: u64 = p.by_class.values().map(|c| c.count).sum();
        assert_eq!(p.requests, classes, "{}: requests = Σ classes", p.name);
        assert_eq!(
            p.offered,
            p.requests + p.dropped,
            "{}: offered {} = answered {} + dropped {} ({:?})",
            p.name,
            p.offered,
            p.requests,
            p.dropped,
            class_counts(p)
        );
    }
}

fn class_counts(p: &ScopeSummary) -> Vec<(&str, u64)> {
    p.by_class
        .iter()
        .map(|(c, s)| (c.as_str(), s.count))
        .collect()
}

fn unfinished(s: &Summary) -> u64 {
    s.totals.by_class.get("unfinished").map_or(0, |c| c.count)
}

#[test]
fn a_server_slower_than_the_run_leaves_unfinished_requests_that_fail_the_budget() {
    let _g = load::serial();
    let srv = load::demo(DemoConfig::default());
    let dir = tempfile::tempdir().unwrap();
    // Capacity 8 connections / 2 s = 4/s against 50/s offered: most requests
    // are still queued when the plan ends, and stay so through the drain.
    let p = load::profile(
        r#"
name: slower-than-the-run
target: { url: "{url}", timeout: 3s }
requests: [ { path: "/slow?ms=2000" } ]
load: { model: open, connections: 8, max_in_flight: 10000 }
shape: { constant: { rate: 50/s, duration: 6s } }
budgets: [ "error_rate < 1%" ]
"#,
        &srv.base_url(),
    );
    let t0 = Instant::now();
    let r = load::run(&p, dir.path());
    let took = t0.elapsed();
    let s = &r.summary;
    let t = &s.totals;
    eprintln!(
        "offered {} answered {} dropped {} classes {:?} in {took:?}",
        t.offered,
        t.requests,
        t.dropped,
        class_counts(t)
    );
    assert_eq!(t.offered, 300, "50/s for 6 s");
    assert_accounted(s);
    let n = unfinished(s);
    assert!(n > 200, "{n} unfinished of 300 (capacity ~4/s)");
    assert_eq!(
        t.errors,
        n + t.by_class.get("timeout").map_or(0, |c| c.count)
    );
    assert!(t.error_rate > 0.5, "error rate {}", t.error_rate);
    assert!(!s.passed, "error_rate < 1% must fail");
    assert_ne!(r.exit_code(), 0);
    assert!(!s.interrupted && s.stop_kind.is_none(), "the plan ran out");
    // Given up after the drain (≤ the 3 s timeout after the plan): each had
    // waited at least that long since its intended start.
    let u = &t.by_class["unfinished"].latency;
    assert!(u.p50 >= 2_900.0, "unfinished p50 {} ms", u.p50);
    assert!(
        u.max >= 8_000.0 && u.max <= 10_500.0,
        "unfinished max {} ms",
        u.max
    );
    // They count in the percentiles of the run.
    assert!(t.latency.p50 >= 2_900.0, "run p50 {} ms", t.latency.p50);
    assert!(
        took < Duration::from_secs(6 + 3 + 3),
        "the drain is bounded by the request timeout: {took:?}"
    );
    // The run directory says the same when judged again from its files.
    let again = brunt::run::rebuild::rebuild(dir.path()).expect("rebuild");
    assert_accounted(&again);
    assert_eq!(unfinished(&again), n);
    assert!(!again.interrupted);
    let csv = std::fs::read_to_string(dir.path().join("timeseries.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "unfinished").unwrap();
    let in_csv: u64 = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(col).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(in_csv, n);
}

#[test]
fn a_stop_gives_up_the_queue_at_once_and_accounts_for_it() {
    let _g = load::serial();
    let srv = load::demo(DemoConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let p = load::profile(
        r#"
name: stopped
target: { url: "{url}", timeout: 4s }
requests: [ { path: "/slow?ms=1000" } ]
load: { model: open, connections: 4, max_in_flight: 10000 }
shape: { constant: { rate: 50/s, duration: 30s } }
"#,
        &srv.base_url(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(3));
        s2.store(true, Ordering::Relaxed);
        Instant::now()
    });
    let r = execute(
        &p,
        RunOptions {
            out: Some(dir.path().to_path_buf()),
            progress: Progress::Quiet,
            stop: Some(stop),
            ..Default::default()
        },
    )
    .expect("run");
    let stopped_at = stopper.join().unwrap();
    let after = stopped_at.elapsed();
    let s = &r.summary;
    eprintln!("{:?} after stop {after:?}", class_counts(&s.totals));
    // What was sent gets its answer (1 s); the queue is given up at once.
    assert!(after < Duration::from_secs(3), "stop took {after:?}");
    assert_accounted(s);
    assert!(s.totals.offered >= 140, "{} offered", s.totals.offered);
    assert!(unfinished(s) > 100, "{} unfinished", unfinished(s));
    assert!(s.interrupted);
    assert_eq!(s.stop_kind, Some(StopKind::Interrupted));
}

#[test]
fn the_closed_model_counts_what_is_in_flight_at_the_end() {
    let _g = load::serial();
    let load::DemoRun { srv: _srv, r, .. } = load::demo_run(
        DemoConfig::default(),
        r#"
name: closed-slow
target: { url: "{url}", timeout: 5s }
requests: [ { path: "/slow?ms=1500" } ]
load: { model: closed }
shape: { constant: { vus: 6, duration: 2s } }
"#,
    );
    let t = &r.summary.totals;
    assert_accounted(&r.summary);
    // Each VU sent twice (at 0 s and 1.5 s); the second answer lands in the drain.
    assert_eq!(t.offered, 12, "{:?}", class_counts(t));
    assert_eq!(t.ok, 12);
}

#[test]
fn a_stress_run_stopped_at_its_first_breach_is_not_interrupted() {
    let _g = load::serial();
    // /contended holds one lock 10 ms per request: capacity 100/s.
    let load::DemoRun { srv: _srv, dir, r } = load::demo_run(
        DemoConfig {
            contended_hold: Duration::from_millis(10),
            ..Default::default()
        },
        r#"
name: breach
target: { url: "{url}", timeout: 2s }
requests: [ { path: /contended } ]
shape: { stress: { start: 50/s, step: 100/s, step_duration: 2s, max: 450/s, stop_on_breach: true } }
budgets: [ "p99 < 100ms" ]
"#,
    );
    let s = &r.summary;
    assert!(!s.interrupted, "a designed stop is no interruption");
    assert_eq!(s.stop_kind, Some(StopKind::Breach));
    assert!(
        s.stopped_reason
            .as_deref()
            .unwrap_or("")
            .contains("first breach"),
        "{:?}",
        s.stopped_reason
    );
    assert!(
        s.phases.last().unwrap().requests == 0,
        "later steps never ran"
    );
    assert_accounted(s);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(json["interrupted"], false);
    assert_eq!(json["stop_kind"], "breach");
    // Judged again from its files, it stays a designed stop.
    let again = brunt::run::rebuild::rebuild(dir.path()).expect("rebuild");
    assert!(!again.interrupted);
    assert_eq!(again.stop_kind, Some(StopKind::Breach));
    judges_the_steps_that_ran(s, dir.path());
}

/// A stress run stopped at its breach judges the steps that ran: one breach
/// figure everywhere, the step begun after the breach shown as abandoned
/// (not a failed step of its own), and no chart band for a step that never ran.
fn judges_the_steps_that_ran(s: &Summary, dir: &std::path::Path) {
    let st = s.stress.as_ref().expect("a stress result");
    let breach = st.first_breach.as_deref().expect("a breach");
    let shown = &st.breached.first().expect("a breached budget").shown;
    let why = s.stopped_reason.as_deref().unwrap_or("");
    assert!(
        why.starts_with(breach) && why.contains(shown.as_str()),
        "{why} vs {shown}"
    );
    let term = brunt::report::terminal::render(s);
    // The terminal wraps prose at 80 columns: compare the words.
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words(&term).contains(&words(&format!("stopped: {why}"))),
        "{term}"
    );
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    let verdict = s
        .verdicts
        .as_ref()
        .and_then(|v| v.stress.as_ref())
        .expect("verdict");
    assert!(verdict.text.contains(shown.as_str()), "{}", verdict.text);
    let bi = s
        .phases
        .iter()
        .position(|p| p.name == breach)
        .expect("breach phase");
    // The stop comes once the breaching step's last second is in: by then
    // the next step has begun, and what it sent is given up.
    let next = &s.phases[bi + 1];
    assert!(next.offered > 0, "{next:?}");
    assert!(next.abandoned, "{next:?}");
    assert!(term.contains("abandoned at the breach"), "{term}");
    let row = verdict
        .steps
        .iter()
        .find(|r| r.name == next.name)
        .expect("its row");
    assert!(row.abandoned, "{row:?}");
    assert!(
        html.contains("abandoned at the breach"),
        "report.html shows it as such"
    );
    for p in &s.phases[bi + 1..] {
        assert!(
            !html.contains(&format!(">\n{}\n</text>", p.name)),
            "no band for {} (abandoned or never run)",
            p.name
        );
    }
    assert!(
        html.contains(&format!(">\n{breach}\n</text>")),
        "the breaching step's band is drawn"
    );
}

// ---- the binary, stopped by a signal ----

/// 100/s for 20 s of the built-in target, within budget.
fn twenty_seconds() -> String {
    load::fast("twenty", "builtin", "100/s", "20s") + "budgets: [ \"p99 < 5s\" ]\n"
}

fn stopped_by_signal(sig: &str, reason: &str) {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "twenty.yaml", &twenty_seconds());
    let run = d.path().join("run");
    let child = spawn_run(&p, &run, "--plain");
    // Halfway.
    wait_lines(&run.join("timeseries.csv"), 10, Duration::from_secs(30));
    kill(sig, child.id());
    let t = Instant::now();
    let o = wait_with_limit(child, Duration::from_secs(10));
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "exited {:?} after {sig}",
        t.elapsed()
    );
    assert!(o.status.code().is_some(), "exited, not killed: {}", out(&o));
    let s: Summary =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert!(s.interrupted, "{}", out(&o));
    assert_eq!(s.stop_kind, Some(StopKind::Interrupted));
    assert!(
        s.stopped_reason.as_deref().unwrap_or("").contains(reason),
        "{:?}",
        s.stopped_reason
    );
    assert!(s.totals.requests >= 700, "{} measured", s.totals.requests);
    assert!(s.totals.offered < 2000, "stopped early");
    assert_accounted(&s);
    assert!(run.join("report.html").is_file());
    assert!(out(&o).contains("interrupted"), "{}", out(&o));
}

#[test]
fn sigint_stops_the_binary_gracefully_with_a_complete_run_directory() {
    stopped_by_signal("-INT", "Ctrl-C");
}

#[test]
fn sigterm_stops_the_binary_gracefully_with_a_complete_run_directory() {
    stopped_by_signal("-TERM", "SIGTERM");
}

#[test]
fn a_second_sigterm_during_the_drain_quits_at_once_with_143() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "slow.yaml",
        r#"
name: slow
target: { url: builtin, timeout: 20s }
requests: [ { path: "/slow?ms=15000" } ]
load: { connections: 4 }
shape: { constant: { rate: 10/s, duration: 20s } }
"#,
    );
    let run = d.path().join("run");
    let child = spawn_run(&p, &run, "--plain");
    wait_lines(&run.join("timeseries.csv"), 3, Duration::from_secs(30));
    kill("-TERM", child.id());
    // The first stops the load; the drain waits for the 15-s answers.
    std::thread::sleep(Duration::from_millis(1500));
    kill("-TERM", child.id());
    let t = Instant::now();
    let o = wait_with_limit(child, Duration::from_secs(10));
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(o.status.code(), Some(143), "{}", out(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("stopping on SIGTERM"), "{err}");
    assert!(err.contains("in flight (up to 20s)"), "{err}");
}
