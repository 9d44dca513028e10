//! Helpers for tests that drive brunt's library against the built-in demo
//! target on 127.0.0.1. Load tests in one binary share the machine's two
//! cores: `serial()` makes them take turns so rates stay honest.

#![allow(dead_code)]

use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use brunt::demo::{DemoConfig, DemoServer};
use brunt::profile::Profile;
use brunt::run::{execute, Progress, RunOptions, RunResult};

static SERIAL: Mutex<()> = Mutex::new(());

pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn demo(cfg: DemoConfig) -> DemoServer {
    DemoServer::start(cfg).expect("demo target starts on 127.0.0.1")
}

/// The plainest profile: `/fast` at a constant `rate` for `duration` against
/// `url` (`builtin`, or `{url}` for [`profile`] to fill in). Append any other
/// section (budgets, collectors) to it.
pub fn fast(name: &str, url: &str, rate: &str, duration: &str) -> String {
    format!(
        "
name: {name}
target: {{ url: \"{url}\" }}
requests: [ {{ path: /fast }} ]
shape: {{ constant: {{ rate: {rate}, duration: {duration} }} }}
"
    )
}

/// A profile's `collectors:` section sampling this host's `/proc` every
/// second (transport local): append it to a profile that has none.
pub const HOST_EVERY_SECOND: &str = "collectors:
  transport: { kind: local }
  collect:
    - use: linux-host
      probes: { host: { every: 1s } }
";

/// Parse a profile written inline; `{url}` is replaced by `url`.
pub fn profile(yaml: &str, url: &str) -> Profile {
    let text = yaml.replace("{url}", url);
    Profile::from_yaml(&text, Path::new("test.yaml"))
        .unwrap_or_else(|e| panic!("test profile: {e}"))
}

pub fn run(p: &Profile, dir: &Path) -> RunResult {
    execute(
        p,
        RunOptions {
            out: Some(dir.to_path_buf()),
            progress: Progress::Quiet,
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("run failed: {e}"))
}

/// One run against a demo target of its own: the target (kept up so the
/// test can read its stats), the run directory and the result.
pub struct DemoRun {
    pub srv: DemoServer,
    pub dir: tempfile::TempDir,
    pub r: RunResult,
}

/// Starts a demo target with `cfg`, then runs `yaml` (its `{url}` the
/// target's) into a temp dir.
pub fn demo_run(cfg: DemoConfig, yaml: &str) -> DemoRun {
    let srv = demo(cfg);
    let dir = tempfile::tempdir().expect("tempdir");
    let r = run(&profile(yaml, &srv.base_url()), dir.path());
    DemoRun { srv, dir, r }
}

/// Runs `yaml` against a demo target that stalls for 1 s every 10 s, and
/// checks [`assert_stalls_in_latency_only`]; the target stays up for more checks.
pub fn stalled_run(yaml: &str) -> DemoServer {
    let (stall_every, stall_for) = (Duration::from_secs(10), Duration::from_secs(1));
    let DemoRun { srv, r, .. } = demo_run(
        DemoConfig {
            stall_every: Some(stall_every),
            stall_for,
            ..Default::default()
        },
        yaml,
    );
    assert_stalls_in_latency_only(&r, &srv, stall_for, stall_every);
    srv
}

/// A stall of `stall_for` every `stall_every` shows in latency from the
/// intended start, not in service time, and costs no errors. A request due
/// at a uniform point in a stall waits out the rest of it:
/// P(latency > x) = f·(1 − x/stall) with f = stall/every, so
/// p(q) = stall·(1 − (1−q)/f).
pub fn assert_stalls_in_latency_only(
    r: &RunResult,
    srv: &DemoServer,
    stall_for: Duration,
    stall_every: Duration,
) {
    assert_stall_latency(r, stall_for, stall_every, 50.0);
    assert!(srv.stats().stalled > 0, "the server did stall");
}

/// The latency part of [`assert_stalls_in_latency_only`], whatever the
/// server: p99 and p99.9 as the stall parameters say, service time p99
/// under `service_ms`, no errors.
pub fn assert_stall_latency(
    r: &RunResult,
    stall_for: Duration,
    stall_every: Duration,
    service_ms: f64,
) {
    let t = &r.summary.totals;
    let f = stall_for.as_secs_f64() / stall_every.as_secs_f64();
    let expect = |q: f64| stall_for.as_secs_f64() * 1000.0 * (1.0 - (1.0 - q) / f);
    let (p99, p999) = (expect(0.99), expect(0.999));
    assert!(
        (t.latency.p99 - p99).abs() < 0.1 * p99 + 20.0,
        "p99 {} ms, expected ≈ {p99} ms from the stall parameters",
        t.latency.p99
    );
    assert!(
        (t.latency.p999 - p999).abs() < 0.1 * p999 + 20.0,
        "p99.9 {} ms, expected ≈ {p999} ms",
        t.latency.p999
    );
    assert!(
        t.service.p99 < service_ms,
        "service time p99 {} ms must not show the stalls (only requests on busy connections wait)",
        t.service.p99
    );
    assert_eq!(t.errors, 0);
}

/// The run's overload verdict (the test fails without one).
pub fn overload_verdict(r: &RunResult) -> brunt::judge::OverloadVerdict {
    r.summary
        .verdicts
        .as_ref()
        .and_then(|v| v.overload.clone())
        .expect("overload verdict")
}

/// The overload verdict's check `name` (the test fails without it).
pub fn overload_check(r: &RunResult, name: &str) -> brunt::judge::Check {
    let ov = overload_verdict(r);
    ov.checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check `{name}`: {:#?}", ov.checks))
        .clone()
}

/// The run's stress verdict (the test fails without one).
pub fn stress_verdict(r: &RunResult) -> brunt::judge::StressVerdict {
    r.summary
        .verdicts
        .clone()
        .and_then(|v| v.stress)
        .expect("a stress verdict")
}

/// A stress run of `yaml` against `url`, tried again (up to 3 runs in all)
/// while its verdict blames a saturated generator: on a machine busy with
/// other processes the scheduler runs late and that verdict says nothing
/// about the target. Returns the run directory, the result and its verdict.
pub fn stress_judged(
    yaml: &str,
    url: &str,
) -> (tempfile::TempDir, RunResult, brunt::judge::StressVerdict) {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let dir = tempfile::tempdir().expect("tempdir");
        let t0 = std::time::Instant::now();
        let r = run(&profile(yaml, url), dir.path());
        let st = stress_verdict(&r);
        eprintln!(
            "run {attempt} took {:.1} s: {}",
            t0.elapsed().as_secs_f64(),
            st.text
        );
        if st.cause != brunt::judge::Cause::GeneratorSaturated || attempt == 3 {
            return (dir, r, st);
        }
    }
}
