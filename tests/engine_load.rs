//! The engine against the built-in demo target, driven through the library:
//! rate accuracy, the coordinated-omission stall test, outcome classes,
//! dropped requests, closed model, phase boundaries and the interval log.

#[path = "support/cmd.rs"]
mod cmd;
#[path = "support/load.rs"]
mod load;

use std::time::Duration;

use brunt::demo::DemoConfig;
use brunt::metrics::hlog;

#[test]
fn open_model_rate_is_accurate_at_thousands_per_second() {
    let _g = load::serial();
    let load::DemoRun { srv, r, .. } = load::demo_run(
        DemoConfig::default(),
        r#"
name: rate
target: { url: "{url}" }
requests: [ { path: /fast } ]
load: { model: open, connections: 64 }
shape: { constant: { rate: 3000/s, duration: 5s } }
"#,
    );
    let t = &r.summary.totals;
    let expected = 15_000.0;
    assert_eq!(
        t.offered, 15_000,
        "the schedule offers exactly rate × duration"
    );
    let achieved = t.ok as f64;
    assert!(
        (achieved - expected).abs() / expected < 0.02,
        "achieved {achieved} ok answers, expected {expected} ±2%"
    );
    assert!(
        (t.throughput - 3000.0).abs() / 3000.0 < 0.02,
        "throughput {}",
        t.throughput
    );
    assert_eq!(t.dropped, 0);
    // The server saw what brunt counted.
    assert_eq!(srv.stats().fast.completed, t.requests);
}

#[test]
fn stalls_show_in_latency_from_intended_start_but_not_in_service_time() {
    let _g = load::serial();
    // Few connections: during a stall later requests wait for a connection,
    // which is exactly where a closed-loop tool stops measuring.
    load::stalled_run(
        r#"
name: stall
target: { url: "{url}", timeout: 5s }
requests: [ { path: /fast } ]
load: { model: open, connections: 2, workers: 1 }
shape: { constant: { rate: 200/s, duration: 20s } }
"#,
    );
}

#[test]
fn shed_and_errors_are_classified_and_counted() {
    let _g = load::serial();
    let load::DemoRun { srv, dir, r } = load::demo_run(
        DemoConfig {
            shed_cap: 4,
            shed_work: Duration::from_millis(20),
            ..Default::default()
        },
        r#"
name: classes
target: { url: "{url}" }
requests:
  - { name: shed, path: /shed, weight: 2 }
  - { name: boom, path: /status/500, weight: 1 }
  - { name: bad-body, path: /fast, weight: 1, expect: { body_contains: "nope", sample: 100% } }
load: { model: open, connections: 100 }
shape: { constant: { rate: 500/s, duration: 3s } }
"#,
    );
    let t = &r.summary.totals;
    let count = |k: &str| t.by_class.get(k).map(|c| c.count).unwrap_or(0);
    let s = srv.stats();
    assert!(s.shed.shed > 0, "the demo target shed some requests");
    assert_eq!(count("shed"), s.shed.shed, "every 503 counted as shed");
    assert_eq!(
        count("http_error"),
        s.status.completed,
        "500s are http errors"
    );
    assert_eq!(
        count("check_failed"),
        s.fast.completed,
        "every sampled body check failed"
    );
    assert_eq!(t.requests, s.total().completed);
    assert!(count("ok") > 0);
    // Per request of the mix, also after a rebuild from the run directory.
    let names: Vec<&str> = r.summary.requests.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(names, ["shed", "boom", "bad-body"]);
    assert_eq!(
        r.summary.requests.iter().map(|q| q.requests).sum::<u64>(),
        t.requests
    );
    assert_eq!(r.summary.requests[1].errors, count("http_error"));
    assert_eq!(r.summary.requests[0].shed, count("shed"));
    let rebuilt = brunt::run::rebuild::rebuild(dir.path()).expect("rebuild");
    assert_eq!(rebuilt.requests, r.summary.requests);
    // shed answers are fast; their histogram is separate from ok's
    // Refusals are immediate; admitted work takes 20 ms.
    let shed = &t.by_class["shed"];
    assert!(shed.latency.p50 < t.by_class["ok"].latency.p50, "{shed:?}");

    // An expected status overrides the default 2xx/3xx rule.
    let dir = tempfile::tempdir().unwrap();
    let p = load::profile(
        r#"
name: teapot
target: { url: "{url}" }
requests: [ { path: /status/418, expect: { status: [418] } } ]
shape: { constant: { rate: 50/s, duration: 1s } }
"#,
        &srv.base_url(),
    );
    let r = load::run(&p, dir.path());
    assert_eq!(r.summary.totals.ok, 50);
    assert_eq!(r.summary.totals.errors, 0);
    assert_eq!(
        t.shed_retry_after, t.shed,
        "the demo's /shed always sends Retry-After"
    );

    // A 503 without Retry-After is shed all the same, and counted apart.
    let dir = tempfile::tempdir().unwrap();
    let p = load::profile(
        r#"
name: retry-after
target: { url: "{url}" }
requests:
  - { path: /status/503 }
  - { path: "/status/429?retry_after=2" }
shape: { constant: { rate: 100/s, duration: 1s } }
"#,
        &srv.base_url(),
    );
    let r = load::run(&p, dir.path());
    let t = &r.summary.totals;
    assert_eq!(t.shed, 100);
    assert!(
        t.shed_retry_after > 20 && t.shed_retry_after < 80,
        "{}",
        t.shed_retry_after
    );
    assert_eq!(r.summary.phases[0].shed_retry_after, t.shed_retry_after);
}

#[test]
fn poisson_arrivals_vary_but_keep_the_rate() {
    let _g = load::serial();
    let srv = load::demo(DemoConfig::default());
    let url = srv.base_url();
    let per_second = |arrival: &str| {
        let dir = tempfile::tempdir().unwrap();
        let yaml = format!(
            "name: arrivals\ntarget: {{ url: \"{{url}}\" }}\nrequests: [ {{ path: /fast }} ]\nload: {{ arrival: {arrival} }}\nshape: {{ constant: {{ rate: 1000/s, duration: 4s }} }}\n"
        );
        let r = load::run(&load::profile(&yaml, &url), dir.path());
        let rows = brunt::metrics::series::read(&dir.path().join("timeseries.csv")).unwrap();
        (
            r.summary.totals.offered,
            rows.iter()
                .filter(|r| r.second < 4)
                .map(|r| r.offered)
                .collect::<Vec<_>>(),
        )
    };
    let (total, rows) = per_second("constant");
    assert_eq!(total, 4000);
    assert!(
        rows.iter().all(|&n| n == 1000),
        "constant spacing: {rows:?}"
    );
    let (total, rows) = per_second("poisson");
    // Poisson count over 4 s: mean 4000, sd ≈ 63; 6 sd is a bound that only a bug crosses.
    assert!((total as f64 - 4000.0).abs() < 380.0, "{total}");
    assert!(
        rows.iter().any(|&n| n != 1000),
        "poisson arrivals vary per second: {rows:?}"
    );
}

#[test]
fn max_in_flight_drops_instead_of_delaying() {
    let _g = load::serial();
    let load::DemoRun { srv: _srv, r, .. } = load::demo_run(
        DemoConfig::default(),
        r#"
name: drops
target: { url: "{url}" }
requests: [ { path: "/slow?ms=500" } ]
load: { model: open, connections: 10, max_in_flight: 10, workers: 1 }
shape: { constant: { rate: 100/s, duration: 3s } }
"#,
    );
    let t = &r.summary.totals;
    assert_eq!(t.offered, 300);
    assert!(
        t.dropped > 200,
        "10 in flight × 2/s ≈ 60 served, the rest dropped: {t:?}"
    );
    assert_eq!(
        t.offered,
        t.requests + t.dropped,
        "every due request is answered or dropped"
    );
    assert!(t.latency.p50 >= 500.0);
    assert!(r.summary.notes.iter().any(|n| n.contains("dropped")));
}

#[test]
fn stress_steps_have_exact_boundaries_and_the_log_reads_back() {
    let _g = load::serial();
    let load::DemoRun { dir, r, .. } = load::demo_run(
        DemoConfig::default(),
        r#"
name: steps
target: { url: "{url}" }
requests: [ { path: /fast } ]
shape: { stress: { start: 100/s, step: 100/s, step_duration: 2s, max: 300/s, stop_on_breach: false } }
budgets: [ "p99 < 1s" ]
"#,
    );
    let s = &r.summary;
    let names: Vec<&str> = s.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["step-1", "step-2", "step-3"]);
    let offered: Vec<u64> = s.phases.iter().map(|p| p.offered).collect();
    assert_eq!(
        offered,
        [200, 400, 600],
        "each step offers level × duration"
    );
    let st = s.stress.as_ref().expect("stress verdict");
    assert_eq!(st.knee.as_deref(), Some("step-3"));
    assert_eq!(st.first_breach, None);

    // The interval log holds every request: untagged lines sum to the total,
    // tagged lines to each phase's count.
    let ivs = hlog::read(&dir.path().join("latency.hlog")).expect("log reads back");
    let untagged: u64 = ivs
        .iter()
        .filter(|i| i.tag.is_none())
        .map(|i| i.hist.len())
        .sum();
    assert_eq!(untagged, s.totals.requests);
    for ph in &s.phases {
        let tag = format!("{}.ok", ph.name);
        let n: u64 = ivs
            .iter()
            .filter(|i| i.tag.as_deref() == Some(tag.as_str()))
            .map(|i| i.hist.len())
            .sum();
        assert_eq!(n, ph.ok, "{tag}");
    }
    // An independent reader (HdrHistogram's Python port) decodes every line.
    let script = r#"
import sys
from hdrh.histogram import HdrHistogram
untagged = tagged = 0
for line in open(sys.argv[1]):
    if line.startswith('#') or line.startswith('"'):
        continue
    tag = None
    if line.startswith('Tag='):
        tag, line = line[4:].split(',', 1)
    start, length, mx, b64 = line.strip().split(',')
    h = HdrHistogram.decode(b64)
    if tag is None:
        untagged += h.get_total_count()
    elif not tag.endswith(('.svc', '.wait')):
        tagged += h.get_total_count()
print(untagged, tagged)
"#;
    let o = cmd::succeeded(
        std::process::Command::new("python3")
            .arg("-c")
            .arg(script)
            .arg(dir.path().join("latency.hlog")),
        "the Python HdrHistogram reader (pip install hdrhistogram; tests/setup.sh does it)",
    );
    let counts = String::from_utf8_lossy(&o.stdout).trim().to_string();
    assert_eq!(counts, format!("{0} {0}", s.totals.requests));
    // And the report rebuilt from the directory agrees with the live one.
    let rebuilt = brunt::run::rebuild::rebuild(dir.path()).expect("rebuild");
    assert_eq!(rebuilt.totals.requests, s.totals.requests);
    assert_eq!(rebuilt.totals.latency.p99, s.totals.latency.p99);
    assert_eq!(rebuilt.stress, s.stress);
}

#[test]
fn stress_stops_at_the_first_breach_and_names_the_knee() {
    let _g = load::serial();
    // /contended holds one lock 5 ms per request: capacity 200/s.
    let load::DemoRun { srv: _srv, r, .. } = load::demo_run(
        DemoConfig {
            contended_hold: Duration::from_millis(5),
            ..Default::default()
        },
        r#"
name: knee
target: { url: "{url}", timeout: 3s }
requests: [ { path: /contended } ]
shape: { stress: { start: 50/s, step: 50/s, step_duration: 2s, max: 500/s } }
budgets: [ "p99 < 100ms" ]
"#,
    );
    let st = r.summary.stress.clone().expect("stress verdict");
    let knee = st.knee_level.expect("a knee below capacity");
    let breach = st.first_breach_level.expect("a breach above capacity");
    assert!(
        (100.0..=200.0).contains(&knee),
        "knee {knee}/s (capacity 200/s)"
    );
    assert_eq!(breach, knee + 50.0);
    // Stopped early at the breach, by design: not an interruption.
    assert!(!r.summary.interrupted, "a designed stop");
    assert_eq!(r.summary.stop_kind, Some(brunt::judge::StopKind::Breach));
    assert!(r
        .summary
        .stopped_reason
        .as_deref()
        .unwrap_or("")
        .contains("p99 < 100ms"));
    assert!(
        r.summary.phases.last().unwrap().requests == 0,
        "later steps never ran"
    );
    assert_eq!(
        r.exit_code(),
        0,
        "a knee was found: the stress run itself passes"
    );
}

#[test]
fn closed_model_holds_the_virtual_users() {
    let _g = load::serial();
    let load::DemoRun { srv: _srv, r, .. } = load::demo_run(
        DemoConfig::default(),
        r#"
name: closed
target: { url: "{url}" }
requests: [ { path: "/slow?ms=100" } ]
load: { model: closed, think_time: 100ms }
shape: { constant: { vus: 10, duration: 3s } }
"#,
    );
    let t = &r.summary.totals;
    // 10 VUs × (100 ms + 100 ms think) → 50/s → ~150 in 3 s.
    assert!((120..=160).contains(&t.requests), "{} requests", t.requests);
    assert!(t.latency.p50 >= 100.0 && t.latency.p50 < 150.0);
    assert!(r.summary.notes.iter().any(|n| n.contains("closed model")));
}

#[test]
fn spike_overload_and_stages_name_their_phases() {
    let _g = load::serial();
    let srv = load::demo(DemoConfig::default());
    let url = srv.base_url();
    let cases = [
        (
            "shape: { spike: { baseline: 20/s, factor: 5, baseline_duration: 1s, spike_duration: 1s, recovery_duration: 1s } }",
            vec![("baseline", 20), ("spike", 100), ("recovery", 20)],
        ),
        (
            "shape: { overload: { baseline: 10/s, rate: 50/s, baseline_duration: 1s, duration: 1s, recovery_duration: 1s } }",
            vec![("baseline", 10), ("overload", 50), ("recovery", 10)],
        ),
        (
            "shape: { stages: { stages: [ { duration: 2s, target: 100/s }, { name: down, duration: 1s, target: 0 } ] } }",
            vec![("stage-1", 100), ("down", 50)],
        ),
    ];
    for (shape, want) in cases {
        let dir = tempfile::tempdir().unwrap();
        let yaml = format!("name: shapes\ntarget: {{ url: \"{{url}}\" }}\nrequests: [ {{ path: /fast }} ]\n{shape}\n");
        let r = load::run(&load::profile(&yaml, &url), dir.path());
        let got: Vec<(&str, u64)> = r
            .summary
            .phases
            .iter()
            .map(|p| (p.name.as_str(), p.offered))
            .collect();
        let want: Vec<(&str, u64)> = want.iter().map(|(n, c)| (*n, *c)).collect();
        assert_eq!(got, want, "{shape}");
    }
}

/// CPU hogs at the highest priority, ended when dropped (and by their own
/// bounded count at the latest).
struct Hogs(Vec<std::process::Child>);

impl Hogs {
    fn start(n: usize, limit_s: u32) -> Hogs {
        let hogs: Vec<_> = (0..n)
            .map(|_| {
                // `nice` execs `sh` itself, so killing the child ends the
                // loop (a `timeout` between them would leave it orphaned);
                // the count bounds it when nothing does.
                let bound = format!(
                    "i=0; while [ $i -lt {} ]; do i=$((i+1)); done",
                    limit_s as u64 * 5_000_000
                );
                std::process::Command::new("nice")
                    .args(["-n", "-20", "sh", "-c", &bound])
                    .spawn()
                    .expect("nice/timeout/sh (coreutils)")
            })
            .collect();
        let hogs = Hogs(hogs);
        std::thread::sleep(Duration::from_millis(300));
        for h in &hogs.0 {
            // Field 19 of /proc/PID/stat (after the `)`): the nice value.
            let stat = std::fs::read_to_string(format!("/proc/{}/stat", h.id())).unwrap();
            let nice = stat.rsplit(')').next().unwrap().split_whitespace().nth(16);
            assert_eq!(
                nice,
                Some("-20"),
                "this test runs CPU hogs at nice -20 and needs root for that (CI runs as root)"
            );
        }
        hogs
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for h in &mut self.0 {
            let _ = h.kill();
            let _ = h.wait();
        }
    }
}

#[test]
fn a_generator_host_busy_with_other_work_is_blamed_not_brunt() {
    let _g = load::serial();
    let yaml = load::fast("busy-host", "{url}", "200/s", "6s");
    // (A busy brunt on a quiet host keeps its own wording: the judge's unit
    // test; a quiet control here would read whatever else this host runs.)
    // Three hogs at nice -20 on this 2-core machine: brunt's scheduler wakes late.
    let hogs = Hogs::start(3, 15);
    let busy = load::demo_run(DemoConfig::default(), &yaml).r.summary;
    drop(hogs);
    assert!(busy.generator.saturated(), "{:?}", busy.generator);
    let note = busy
        .notes
        .iter()
        .find(|n| n.contains("generator"))
        .unwrap_or_else(|| panic!("a note on the generator: {:?}", busy.notes));
    assert!(
        note.contains("busy with other processes") && note.contains("not the service's"),
        "the busy host is named, not brunt: {note}"
    );
    assert!(!note.contains("use more workers"), "{note}");
}
