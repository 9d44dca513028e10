//! Verdicts and the report, end to end against the built-in demo target on
//! 127.0.0.1: the stress knee and its cause (with server-side evidence
//! written into the run directory the way collectors will), load shedding
//! that passes and a queueing endpoint that fails the fast-503 check, spike
//! recovery, soak leak trends, `brunt compare`, and `report.html` rendered
//! by headless Chromium (Debian package `chromium`).

#[path = "support/chromium.rs"]
mod chromium;
#[path = "support/load.rs"]
mod load;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use brunt::demo::DemoConfig;
use brunt::evidence::{FindingRef, ServerEvidence};
use brunt::judge::Summary;
use brunt::judge::{trend, Cause, CheckStatus, LeakStatus, OverloadVerdict};
use brunt::profile::verdicts::LeakThresholds;
use brunt::run::rebuild::rebuild;

fn finding(
    at_s: f64,
    phase: Option<&str>,
    severity: &str,
    kind: &str,
    summary: &str,
) -> FindingRef {
    FindingRef {
        at_s,
        phase: phase.map(str::to_string),
        severity: severity.into(),
        kind: kind.into(),
        summary: summary.into(),
        evidence: Some("diagnostics/dump-1.txt".into()),
    }
}

/// A flat series at `v` sampled every second over `[0, secs)`.
fn flat(secs: u32, v: f64) -> Vec<(f64, f64)> {
    (0..secs).map(|t| (t as f64, v)).collect()
}

const STRESS: &str = r#"
name: knee
target: { url: "{url}", timeout: 3s }
requests: [ { path: /contended } ]
load: { connections: 256 }
shape: { stress: { start: 50/s, step: 50/s, step_duration: 2s, max: 500/s } }
budgets: [ "p99 < 100ms" ]
"#;

#[test]
fn stress_knee_is_found_and_its_cause_read_from_server_side_evidence() {
    let _g = load::serial();
    // /contended holds one lock 5 ms per request: capacity 200/s.
    let load::DemoRun { srv: _srv, dir, r } = load::demo_run(
        DemoConfig {
            contended_hold: Duration::from_millis(5),
            ..Default::default()
        },
        STRESS,
    );
    let v = r.summary.verdicts.clone().expect("verdicts");
    let st = v.stress.expect("a stress verdict");
    let cap = st.capacity.expect("a capacity below 200/s");
    assert!(
        (100.0..=200.0).contains(&cap),
        "capacity {cap}/s, built for 200/s"
    );
    let breach = st.first_breach.clone().expect("a breaking step");
    let bi = st
        .steps
        .iter()
        .position(|s| s.name == breach)
        .expect("the breaking step is in the table");
    assert!(!st.steps[bi].within_budget);
    assert!(st.steps[..bi].iter().all(|s| s.within_budget));
    assert!(
        st.steps[bi].p99_ms > 100.0,
        "breaking step p99 {}",
        st.steps[bi].p99_ms
    );
    // Offered and achieved are both in the table and agree below the knee.
    let first = &st.steps[0];
    assert!((first.offered_rate - 50.0).abs() < 3.0, "{first:?}");
    assert!((first.achieved_rate - 50.0).abs() < 5.0, "{first:?}");
    // Without collectors the cause is unknown, and the verdict says so.
    assert!(!v.server_side);
    assert_eq!(st.cause, Cause::Unknown);
    assert!(st.text.contains("no server-side data"), "{}", st.text);
    assert!(st.text.contains(&breach), "{}", st.text);
    let term = brunt::report::terminal::render(&r.summary);
    assert!(term.contains("knee: capacity"), "{term}");
    // The page draws the knee: p99 and ok/s against the offered rate, one
    // point per step, the p99 budget as a line; the latency chart has the
    // service time and the budget beside it; the protocol is said.
    let html = std::fs::read_to_string(dir.path().join("report.html")).expect("report.html");
    for id in ["chart-knee", "chart-knee-throughput", "chart-latency"] {
        let at = html
            .find(&format!("<figure id=\"{id}\">"))
            .unwrap_or_else(|| panic!("{id} missing"));
        let fig = &html[at..at + html[at..].find("</figure>").expect("closed figure")];
        assert!(fig.contains("<polyline"), "{id} draws no line");
        if id != "chart-knee-throughput" {
            assert!(
                fig.contains("budget p99 &lt; 100ms"),
                "{id}: no budget line"
            );
        }
    }
    assert!(html.contains("service p99 (from the send)"));
    assert!(
        html.contains("Open model · HTTP/1.1 ·"),
        "the protocol used"
    );
    assert_eq!(r.summary.meta.protocol.as_deref(), Some("HTTP/1.1"));

    // Evidence as collectors and diagnosis will leave it: low target CPU,
    // threads piling up BLOCKED, a lock finding in the breaking step.
    let step = &r.summary.meta.phases[bi];
    let (b0, b1) = (
        step.start.as_secs_f64(),
        (step.start + step.duration).as_secs_f64(),
    );
    let end = b1.ceil() as u32 + 1;
    let mut ev = ServerEvidence::default();
    ev.series.insert("target.cpu_pct".into(), flat(end, 22.0));
    ev.series.insert(
        "jvm.threads.blocked".into(),
        (0..end)
            .map(|t| (t as f64, if (t as f64) >= b0 { 180.0 } else { 2.0 }))
            .collect(),
    );
    ev.series
        .insert("generator.cpu_pct".into(), flat(end, 35.0));
    ev.findings.push(finding(
        b0 + 0.5,
        None,
        "critical",
        "lock",
        "180 of 200 workers BLOCKED on demo::Contended (0x1), held by worker-7",
    ));
    ev.findings.push(finding(
        b0 + 0.7,
        None,
        "warning",
        "pool",
        "3 threads waiting on a pool",
    ));
    brunt::rundir::evidence::save(dir.path(), &ev).expect("write evidence");
    let s = rebuild(dir.path()).expect("rebuild with evidence");
    let st = s
        .verdicts
        .clone()
        .and_then(|v| v.stress)
        .expect("stress verdict");
    assert_eq!(st.cause, Cause::Contention, "{}", st.text);
    assert!(st.text.contains("target CPU 22%"), "{}", st.text);
    assert!(st.text.contains("contention"), "{}", st.text);
    assert!(st.text.contains("demo::Contended"), "{}", st.text);
    let row = &st.steps[bi];
    assert_eq!(row.target_cpu_pct, Some(22.0));
    assert_eq!(row.threads.get("blocked"), Some(&180.0));
    assert_eq!(
        row.top_finding.as_ref().map(|f| f.kind.as_str()),
        Some("lock"),
        "the worst finding of the step wins"
    );

    // The same rise with the target's CPU pegged is saturation…
    ev.series.insert("target.cpu_pct".into(), flat(end, 97.0));
    ev.findings.clear();
    brunt::rundir::evidence::save(dir.path(), &ev).expect("write evidence");
    let st = rebuild(dir.path())
        .expect("rebuild")
        .verdicts
        .and_then(|v| v.stress)
        .expect("stress verdict");
    assert_eq!(st.cause, Cause::Saturation, "{}", st.text);
    // …and with the generator pegged the latencies are not trustworthy.
    ev.series
        .insert("generator.cpu_pct".into(), flat(end, 99.0));
    brunt::rundir::evidence::save(dir.path(), &ev).expect("write evidence");
    let st = rebuild(dir.path())
        .expect("rebuild")
        .verdicts
        .and_then(|v| v.stress)
        .expect("stress verdict");
    assert_eq!(st.cause, Cause::GeneratorSaturated, "{}", st.text);
    assert!(st.text.contains("not trustworthy"), "{}", st.text);
}

/// A demo target whose /shed and /noshed take 4 requests at once, 20 ms of
/// work each: a capacity of 200/s for both.
fn two_hundred_per_second() -> DemoConfig {
    DemoConfig {
        shed_cap: 4,
        shed_work: Duration::from_millis(20),
        ..Default::default()
    }
}

/// An overload run of `path` against a demo target of its own (stopped
/// after the run), with `load` as its `load:` section: its directory,
/// result and overload verdict.
fn overload_run(
    cfg: DemoConfig,
    path: &str,
    timeout: &str,
    load: &str,
) -> (tempfile::TempDir, brunt::run::RunResult, OverloadVerdict) {
    let load::DemoRun { dir, r, .. } = load::demo_run(
        cfg,
        &format!(
            r#"
name: overload
target: {{ url: "{{url}}", timeout: {timeout} }}
requests: [ {{ path: {path} }} ]
load: {load}
shape:
  overload: {{ baseline: 50/s, baseline_duration: 2s, rate: 600/s, duration: 4s, recovery_duration: 4s, fast_fail: 100ms }}
budgets: [ "p99 < 300ms" ]
"#
        ),
    );
    let ov = load::overload_verdict(&r);
    (dir, r, ov)
}

/// Room for every request in flight: nothing dropped by brunt's own queue.
const WIDE: &str = "{ connections: 512, max_in_flight: 5000 }";

fn check<'a>(s: &'a Summary, name: &str) -> &'a brunt::judge::Check {
    s.verdicts
        .as_ref()
        .and_then(|v| v.overload.as_ref())
        .and_then(|o| o.checks.iter().find(|c| c.name == name))
        .unwrap_or_else(|| panic!("no overload check `{name}`"))
}

#[test]
fn shedding_endpoint_passes_queueing_endpoint_fails_and_compare_shows_both() {
    let _g = load::serial();
    // 4 in flight × 20 ms each: capacity 200/s for /shed and /noshed alike.
    // fast_fail is 100 ms, not the default 50: a 503 takes microseconds, and
    // the margin is for a CI machine busy with other builds, while /noshed
    // fails the check for never shedding at all.
    let cfg = two_hundred_per_second();
    let (shed_dir, r, ov) = overload_run(cfg.clone(), "/shed", "3s", WIDE);
    assert!(ov.pass, "{:#?}", ov.checks);
    for name in [
        "shed answers are fast",
        "Retry-After on shed answers",
        "admitted p99 within budget",
        "shed fraction matches the excess",
        "no timeouts, resets or refused connections",
        "recovers after the overload",
    ] {
        assert_eq!(
            check(&r.summary, name).status,
            CheckStatus::Pass,
            "{name}: {:#?}",
            ov.checks
        );
    }
    assert!(
        (120.0..=230.0).contains(&ov.capacity_estimate),
        "capacity estimate {} (built for 200/s)",
        ov.capacity_estimate
    );
    assert!(
        (ov.shed_fraction - (1.0 - 200.0 / 600.0)).abs() < 0.12,
        "shed {:.2}",
        ov.shed_fraction
    );
    assert!(
        ov.recovery_s.is_some_and(|t| t <= 4.0),
        "{:?}",
        ov.recovery_s
    );
    ok_and_shed_apart(&r.summary, shed_dir.path());

    // /noshed queues instead: with a short client timeout the excess turns
    // into timeouts and no 503 ever comes back.
    let (noshed_dir, r2, ov2) = overload_run(cfg, "/noshed", "300ms", WIDE);
    assert!(!ov2.pass, "{:#?}", ov2.checks);
    let fast = check(&r2.summary, "shed answers are fast");
    assert_eq!(fast.status, CheckStatus::Fail, "{fast:?}");
    assert!(fast.measured.contains("does not shed"), "{fast:?}");
    let to = check(&r2.summary, "no timeouts, resets or refused connections");
    assert_eq!(to.status, CheckStatus::Fail, "{to:?}");
    let term = brunt::report::terminal::render(&r2.summary);
    assert!(term.contains("overload: FAIL"), "{term}");

    // Side by side through the CLI: exit 0, every phase, deltas.
    let out = Command::new(env!("CARGO_BIN_EXE_brunt"))
        .arg("compare")
        .arg(shed_dir.path())
        .arg(noshed_dir.path())
        .output()
        .expect("run brunt compare");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for phase in ["baseline", "overload", "recovery", "run"] {
        assert!(text.contains(phase), "{phase} missing:\n{text}");
    }
    assert!(text.contains("p99") && text.contains("Δ"), "{text}");
    let read = |d: &Path| brunt::rundir::RunData::read(d).expect("read the run");
    let (da, db) = (read(shed_dir.path()), read(noshed_dir.path()));
    let c = brunt::report::compare::compare((shed_dir.path(), &da), (noshed_dir.path(), &db));
    let ovr = c
        .phases
        .iter()
        .find(|p| p.phase == "overload")
        .expect("overload phase");
    let (a, b) = (ovr.a.as_ref().expect("A"), ovr.b.as_ref().expect("B"));
    let live = r
        .summary
        .phases
        .iter()
        .find(|p| p.name == "overload")
        .expect("overload phase in the summary");
    assert_eq!(a.requests, live.requests);
    assert!(a.shed > 0 && b.shed == 0, "{a:?} {b:?}");
    assert!(b.errors > 0, "timeouts in B: {b:?}");
    // Ok and shed apart: A's shed p99 is its fast refusals', its ok p99 the admitted ones'.
    let live_ok = live.by_class.get("ok").expect("ok answers").latency.p99;
    let ok_a = a.ok_latency.as_ref().expect("A's ok latency").p99;
    assert!(
        (ok_a - live_ok).abs() <= 0.01 * live_ok + 0.01,
        "{ok_a} vs {live_ok}"
    );
    assert!(
        a.shed_latency.is_some() && b.shed_latency.is_none(),
        "{a:?} {b:?}"
    );
    assert!(
        text.contains("ok p99") && text.contains("shed p99"),
        "{text}"
    );
}

/// A run with shed answers shows ok and shed latency apart wherever a
/// latency is shown, the combined figure said to be combined: the terminal's
/// tables (the run row too), the per-second series and chart, the live view.
fn ok_and_shed_apart(s: &Summary, dir: &Path) {
    let term = brunt::report::terminal::render(s);
    assert!(
        term.contains("(latency above: every answer, ok and shed together; apart below)"),
        "{term}"
    );
    let apart = &term[term.find("shed p99").expect("the ok/shed table")..];
    let run_row = apart
        .lines()
        .find(|l| l.starts_with("run "))
        .unwrap_or_else(|| panic!("a run row apart:\n{term}"));
    assert!(run_row.contains(&s.totals.shed.to_string()), "{run_row}");
    let data = brunt::rundir::RunData::read(dir).expect("read the run");
    let over: Vec<_> = data
        .seconds
        .iter()
        .filter(|t| t.phase == "overload" && t.shed > 0 && t.ok > 0)
        .collect();
    assert!(
        !over.is_empty(),
        "overload seconds with ok and shed answers"
    );
    for t in &over {
        // A fast 503 is quicker than an admitted answer of 20 ms of work.
        assert!(t.shed_p99_us < t.ok_p99_us, "{t:?}");
        assert!(t.ok_p99_us >= 20_000, "{t:?}");
    }
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    assert!(
        html.contains("id=\"chart-ok-shed\""),
        "the per-second chart apart"
    );
    assert!(html.contains("every answer, ok and shed together"));
    let mut view = brunt::report::live::LiveView::new(data.meta.clone());
    let rows = brunt::metrics::series::read(&dir.join("timeseries.csv")).expect("series");
    let second = over[0].t;
    view.push(
        &rows
            .iter()
            .filter(|r| r.second == second)
            .cloned()
            .collect::<Vec<_>>(),
    );
    let shown = view.render();
    assert!(
        shown.contains("apart    ok p99 ") && shown.contains("ok and shed together"),
        "{shown}"
    );
}

#[test]
fn a_queueing_endpoint_never_passes_no_timeouts_beside_unanswered_requests() {
    let _g = load::serial();
    // /noshed queues: 4 in flight × 20 ms = 200/s. A long client timeout and
    // a small max_in_flight: the excess is dropped by brunt's queue rather
    // than timed out, and nothing is ever shed.
    let load = "{ connections: 64, max_in_flight: 100 }";
    let (_dir, r, ov) = overload_run(two_hundred_per_second(), "/noshed", "3s", load);
    let s = &r.summary;
    assert!(!ov.pass, "{:#?}", ov.checks);
    let overload = s
        .phases
        .iter()
        .find(|p| p.name == "overload")
        .expect("phase");
    assert!(overload.dropped > 0, "{overload:?}");
    let clean = check(s, "no timeouts, resets or refused connections");
    assert_eq!(clean.status, CheckStatus::Fail, "{clean:?}");
    assert!(clean.measured.contains("dropped="), "{clean:?}");
    // One capacity throughout: the goodput check, the shed fraction and the
    // verdict's figure are the same number.
    let cap = format!("{:.0}/s", ov.capacity_estimate);
    let held = check(s, "goodput held");
    let shed = check(s, "shed fraction matches the excess");
    assert!(
        held.expected.contains(&format!("≈ {cap}")),
        "{held:?} vs {cap}"
    );
    assert!(
        held.measured.contains(&format!("≈{cap}")),
        "{held:?} vs {cap}"
    );
    assert!(
        shed.expected.contains(&format!("capacity {cap}")),
        "{shed:?} vs {cap}"
    );
    let share: f64 = held
        .measured
        .rsplit('(')
        .next()
        .and_then(|t| t.strip_suffix("%)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a share of the capacity: {held:?}"));
    assert!(share <= 100.0, "goodput above its own capacity: {held:?}");
    let term = brunt::report::terminal::render(s);
    assert!(term.contains("overload: FAIL"), "{term}");
    assert!(
        !term.contains("PASS no timeouts"),
        "no timeouts must not pass beside dropped requests:\n{term}"
    );
}

const SPIKE: &str = r#"
name: spike
target: { url: "{url}", timeout: 5s }
requests: [ { path: /noshed } ]
load: { connections: 512 }
shape: { spike: { baseline: 40/s, factor: 15, baseline_duration: 3s, spike_duration: 2s, recovery_duration: 6s } }
budgets: [ "p99 < 100ms" ]
"#;

#[test]
fn spike_recovery_time_is_measured() {
    let _g = load::serial();
    // Capacity 4 / 10 ms = 400/s; the spike offers 600/s for 2 s, so a
    // queue of ~400 builds and drains after the spike at ~360/s.
    let load::DemoRun { srv: _srv, dir, r } = load::demo_run(
        DemoConfig {
            shed_cap: 4,
            shed_work: Duration::from_millis(10),
            ..Default::default()
        },
        SPIKE,
    );
    let sp = r
        .summary
        .verdicts
        .as_ref()
        .and_then(|v| v.spike.clone())
        .expect("spike verdict");
    assert_eq!(sp.bound_ms, 100.0);
    assert!(sp.left_budget, "{}", sp.text);
    assert_eq!(
        sp.back_after_start_s, None,
        "the queue only grows while the spike lasts: {}",
        sp.text
    );
    let back = sp
        .back_after_end_s
        .unwrap_or_else(|| panic!("recovers within the recovery phase: {}", sp.text));
    assert!(
        (0.0..=5.0).contains(&back),
        "back after {back}s: {}",
        sp.text
    );
    assert_eq!(sp.spike_errors, 0, "{}", sp.text);
    // The per-second series agrees: over the bound just before the end of the spike.
    let rows = brunt::metrics::series::read(&dir.path().join("timeseries.csv")).expect("series");
    assert!(rows
        .iter()
        .any(|r| r.phase == "spike" && r.p99_us as f64 / 1000.0 > 100.0));
}

#[test]
fn leak_trends_flag_a_rising_series_and_not_a_flat_sawtooth() {
    let th = LeakThresholds::default();
    let secs = 1800u32; // half an hour, a sample every 10 s
    let noise = |i: u32| ((i * 7919) % 13) as f64 / 13.0 - 0.5;
    // Heap after GC rising 40 MB/h with ±2 MB noise: a leak (limit 10 MB/h).
    let rising: Vec<(f64, f64)> = (0..secs / 10)
        .map(|i| {
            let t = (i * 10) as f64;
            (t, 300e6 + 40e6 * t / 3600.0 + 4e6 * noise(i))
        })
        .collect();
    let t = trend("jvm.heap_after_gc_bytes", &rising, 0.0, 1e9, &th);
    assert!(t.flagged, "{t:?}");
    assert!((t.slope_per_hour - 40e6).abs() < 4e6, "{t:?}");
    assert!(t.r2 > 0.9, "{t:?}");
    // Heap *used*: a GC sawtooth (fills 50 MB in 60 s, drops back), flat underneath.
    let saw: Vec<(f64, f64)> = (0..secs / 5)
        .map(|i| {
            let t = (i * 5) as f64;
            (t, 200e6 + 50e6 * ((t % 60.0) / 60.0))
        })
        .collect();
    let t = trend("jvm.heap_after_gc_bytes", &saw, 0.0, 1e9, &th);
    assert!(!t.flagged, "a sawtooth is not a leak: {t:?}");
    assert!(t.slope_per_hour.abs() < 5e6, "{t:?}");
    // Threads creeping up by one every 5 minutes (12/h > 5/h): flagged.
    let threads: Vec<(f64, f64)> = (0..secs / 10)
        .map(|i| ((i * 10) as f64, 50.0 + ((i * 10) / 300) as f64))
        .collect();
    assert!(trend("target.threads", &threads, 0.0, 1e9, &th).flagged);
    // Warm-up excluded: a series that only rises during warm-up is flat after it.
    let warm: Vec<(f64, f64)> = (0..secs / 10)
        .map(|i| {
            let t = (i * 10) as f64;
            (
                t,
                if t < 600.0 {
                    t * 1e5
                } else {
                    60e6 + 1e6 * noise(i)
                },
            )
        })
        .collect();
    // Judged with the warm-up in, it rises in the first third and is flat
    // for the rest: not a steady rise through the window, so no longer a
    // leak (issue 11: a rise then a plateau is not a leak); the steep
    // whole-window slope that used to flag it is still measured.
    let with_warm = trend("target.rss_bytes", &warm, 0.0, 1e9, &th);
    assert!(
        !with_warm.flagged && with_warm.slope_per_hour > th.rss.0,
        "{with_warm:?}"
    );
    assert!(with_warm.reason.is_some(), "{with_warm:?}");
    assert!(!trend("target.rss_bytes", &warm, 600.0, 1e9, &th).flagged);
    // Too few samples: no verdict either way, and it says why.
    let t = trend("target.fds", &rising[..3], 0.0, 1e9, &th);
    assert!(!t.flagged && t.note.is_some(), "{t:?}");
}

#[test]
fn soak_verdict_reads_evidence_skips_warmup_and_measures_p99_drift() {
    let _g = load::serial();
    let load::DemoRun { srv: _srv, dir, r } = load::demo_run(
        DemoConfig::default(),
        r#"
name: soak
target: { url: "{url}" }
requests: [ { path: /fast } ]
shape: { soak: { rate: 100/s, duration: 62s, warmup: 2s } }
verdicts: { leaks: { rss: 20MB/h, p99_drift: 90% } }
"#,
    );
    let so = r
        .summary
        .verdicts
        .as_ref()
        .and_then(|v| v.soak.clone())
        .expect("soak verdict");
    assert_eq!(so.status, LeakStatus::Unknown, "{}", so.text);
    assert!(so.text.contains("no server-side collectors"), "{}", so.text);
    assert!(
        so.p99_first_ms.is_some() && so.p99_last_ms.is_some(),
        "{so:?}"
    );
    assert_eq!(so.window_start_s, 2.0);
    // RSS leaking 0.5 MB/s (1.8 GB/h) after a warm-up spike; heap after GC
    // flat. 60 s after the warm-up: the least a per-hour leak verdict takes.
    let mut ev = ServerEvidence::default();
    ev.series.insert(
        "target.rss_bytes".into(),
        (0..124)
            .map(|i| {
                let t = i as f64 * 0.5;
                (t, if t < 2.0 { 900e6 } else { 100e6 + 0.5e6 * t })
            })
            .collect(),
    );
    ev.series.insert(
        "jvm.heap_after_gc_bytes".into(),
        (0..124)
            .map(|i| (i as f64 * 0.5, 80e6 + ((i % 3) as f64) * 1e5))
            .collect(),
    );
    brunt::rundir::evidence::save(dir.path(), &ev).expect("evidence");
    let s = rebuild(dir.path()).expect("rebuild");
    let so = s.verdicts.and_then(|v| v.soak).expect("soak verdict");
    assert_eq!(so.status, LeakStatus::Leak, "{}", so.text);
    let rss = so
        .trends
        .iter()
        .find(|t| t.series == "target.rss_bytes")
        .expect("rss trend");
    assert!(
        rss.flagged && (rss.slope_per_hour - 1.8e9).abs() < 0.1e9,
        "{rss:?}"
    );
    assert_eq!(
        rss.threshold_per_hour,
        Some(20e6),
        "the profile's threshold"
    );
    let heap = so
        .trends
        .iter()
        .find(|t| t.series == "jvm.heap_after_gc_bytes")
        .expect("heap trend");
    assert!(!heap.flagged, "{heap:?}");
    assert!(so.text.starts_with("LEAK: target.rss_bytes"), "{}", so.text);
}

/// Run Chromium with a deadline; it must not hang the suite.
fn screenshot(html: &Path, png: &Path) -> std::process::ExitStatus {
    let profile = png.with_extension("chromium-profile");
    let mut child = Command::new(chromium::path())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg("--window-size=1400,3000")
        .arg(format!("file://{}", html.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Some(st) = child.try_wait().expect("wait for chromium") {
            let _ = std::fs::remove_dir_all(&profile);
            return st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn html_report_renders_in_headless_chromium() {
    let _g = load::serial();
    let srv = load::demo(DemoConfig {
        shed_cap: 4,
        shed_work: Duration::from_millis(10),
        ..Default::default()
    });
    // Kept after the test (under target/tmp) as a CI artifact.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-html-run");
    let _ = std::fs::remove_dir_all(&dir);
    let r = load::run(&load::profile(SPIKE, &srv.base_url()), &dir);
    drop(srv);
    let html_path = dir.join("report.html");
    let html =
        std::fs::read_to_string(&html_path).expect("report.html written at the end of the run");
    assert!(html.contains("no server-side collectors configured"));
    // With evidence, `brunt report DIR` adds the server-side charts and findings.
    let end = r
        .summary
        .meta
        .phases
        .iter()
        .map(|p| (p.start + p.duration).as_secs())
        .max()
        .unwrap_or(10) as u32;
    let mut ev = ServerEvidence::default();
    ev.series.insert(
        "target.cpu_pct".into(),
        (0..end)
            .map(|t| (t as f64, if (3..5).contains(&t) { 85.0 } else { 20.0 }))
            .collect(),
    );
    ev.series
        .insert("generator.cpu_pct".into(), flat(end, 30.0));
    ev.series
        .insert("target.rss_bytes".into(), flat(end, 250e6));
    ev.series
        .insert("jvm.heap_after_gc_bytes".into(), flat(end, 120e6));
    ev.series.insert("tcp.established".into(), flat(end, 64.0));
    ev.series.insert("tcp.close_wait".into(), flat(end, 1.0));
    ev.series.insert(
        "jvm.threads.blocked".into(),
        (0..end)
            .map(|t| (t as f64, if (3..5).contains(&t) { 150.0 } else { 3.0 }))
            .collect(),
    );
    ev.series
        .insert("jvm.threads.runnable".into(), flat(end, 12.0));
    ev.findings.push(finding(
        3.5,
        Some("spike"),
        "critical",
        "lock",
        "150 of 200 workers BLOCKED on <com.acme.Inventory> & held by exec-7",
    ));
    brunt::rundir::evidence::save(&dir, &ev).expect("evidence");
    let out = Command::new(env!("CARGO_BIN_EXE_brunt"))
        .arg("report")
        .arg(&dir)
        .output()
        .expect("brunt report");
    assert!(
        out.status.code().is_some_and(|c| c == 0 || c == 99),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&html_path).expect("report.html rebuilt");
    assert!(!html.contains("<script"), "no script needed");
    assert!(
        !html.contains("src=\"http"),
        "nothing fetched from the network"
    );
    for id in [
        "chart-latency",
        "chart-rate",
        "chart-outcomes",
        "chart-distribution",
        "chart-server-cpu",
        "chart-server-memory",
        "chart-server-heap",
        "chart-server-connections",
        "chart-server-threads",
    ] {
        let at = html
            .find(&format!("<figure id=\"{id}\">"))
            .unwrap_or_else(|| panic!("{id} missing"));
        let fig = &html[at..at + html[at..].find("</figure>").expect("closed figure")];
        assert!(fig.contains("<svg"), "{id} has no SVG");
        assert!(fig.contains("<polyline"), "{id} draws no line");
    }
    // Server-side legends say what a series is, in its unit; the keys are listed under the chart.
    assert!(html.contains("target process RSS (MB)"), "a human legend");
    assert!(
        html.contains("JVM threads BLOCKED (count)"),
        "a human legend"
    );
    assert!(
        html.contains("<code>target.rss_bytes</code>"),
        "the key under the chart"
    );
    // Verdicts come first, findings are escaped.
    let verdict_at = html.find("<h2>Verdict</h2>").expect("verdict section");
    assert!(verdict_at < html.find("chart-latency").expect("chart"));
    assert!(html.contains("spike: p99 went over the bound"));
    assert!(html.contains("&lt;com.acme.Inventory&gt; &amp; held by exec-7"));
    let png = dir.join("report-screenshot.png");
    let _ = std::fs::remove_file(&png);
    let st = screenshot(&html_path, &png);
    assert!(st.success(), "chromium exited with {st}");
    let bytes = std::fs::read(&png).expect("screenshot written");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    assert!(
        bytes.len() > 50_000,
        "a rendered page, not a blank one: {} bytes",
        bytes.len()
    );
    eprintln!("screenshot kept at {}", png.display());
}
