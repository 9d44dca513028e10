//! Scenario measurement against the built-in demo target on 127.0.0.1:
//! budgets scoped to one step, whole-iteration durations with think times,
//! and `brunt report` rebuilding both from the run directory. Every load is
//! bounded in count and time (a few hundred iterations over 2–3 s).

#[path = "support/load.rs"]
mod load;

#[path = "support/cmd.rs"]
mod cmd;
use cmd::{brunt, out as text, write};

use std::path::Path;

use brunt::budgets::Status;
use brunt::demo::DemoConfig;
use brunt::judge::Summary;
use brunt::profile::{Profile, ProfileError};

/// The status of the budget whose text is `budget`.
fn status(s: &Summary, budget: &str) -> Status {
    s.budgets
        .iter()
        .find(|v| v.budget == budget)
        .unwrap_or_else(|| panic!("no verdict for `{budget}` in {:?}", s.budgets))
        .status
}

/// Login, then an item page that takes `ms` at the server.
fn shop(url: &str, ms: u64) -> Profile {
    load::profile(
        &format!(
            r#"
name: shop
target: {{ url: "{{url}}" }}
scenarios:
  - name: shop
    steps:
      - {{ name: login, method: POST, path: /login, extract: {{ token: {{ json: /token }} }} }}
      - name: browse
        path: "/slow?ms={ms}"
load: {{ model: open, workers: 1, connections: 64 }}
shape: {{ constant: {{ rate: 40/s, duration: 2s }} }}
budgets:
  - step(browse).p99 < 150ms
  - step(shop/login).p99 < 150ms
  - {{ expr: "p99 < 150ms", step: login }}
  - step(browse).error_rate < 1%
"#
        ),
        url,
    )
}

#[test]
fn a_step_budget_fails_when_that_step_is_slow_and_passes_when_not() {
    let _g = load::serial();
    let server = load::demo(DemoConfig::default());
    let tmp = tempfile::tempdir().expect("tmp");

    let slow = load::run(&shop(&server.base_url(), 300), &tmp.path().join("slow"));
    let s = &slow.summary;
    assert_eq!(s.totals.errors, 0, "{:?}", s.totals);
    assert_eq!(status(s, "step(browse).p99 < 150ms"), Status::Fail);
    assert_eq!(status(s, "step(shop/login).p99 < 150ms"), Status::Pass);
    assert_eq!(
        status(s, "step(login).p99 < 150ms"),
        Status::Pass,
        "the YAML step: form"
    );
    assert_eq!(status(s, "step(browse).error_rate < 1%"), Status::Pass);
    let browse = s
        .budgets
        .iter()
        .find(|v| v.budget.starts_with("step(browse).p99"));
    let value = browse.map(|v| v.value).unwrap_or_default();
    assert!((290.0..1000.0).contains(&value), "browse p99 {value} ms");
    assert_eq!(slow.exit_code(), 99, "a failed step budget fails the run");
    assert!(
        s.gates
            .iter()
            .any(|g| !g.holds() && g.name.starts_with("step(browse).p99")),
        "{:?}",
        s.gates
    );

    let fast = load::run(&shop(&server.base_url(), 5), &tmp.path().join("fast"));
    let s = &fast.summary;
    assert_eq!(
        status(s, "step(browse).p99 < 150ms"),
        Status::Pass,
        "{:?}",
        s.budgets
    );
    assert_eq!(status(s, "step(shop/login).p99 < 150ms"), Status::Pass);
    assert_eq!(fast.exit_code(), 0, "{:?}", s.gates);
    // The step rows: every iteration ran both steps.
    let names: Vec<&str> = s.requests.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["shop/login", "shop/browse"]);
    assert_eq!(s.requests[0].requests, s.requests[1].requests);
    assert_eq!(s.iterations.len(), 1);
    assert_eq!(s.iterations[0].ok, s.requests[1].ok);
}

#[test]
fn a_step_that_never_ran_is_no_data_not_a_pass() {
    let _g = load::serial();
    // The first step always fails, so `after` never runs.
    let load::DemoRun { r, .. } = load::demo_run(
        DemoConfig::default(),
        r#"
name: never
target: { url: "{url}" }
scenarios:
  - name: broken
    steps:
      - { name: first, path: /status/500 }
      - { name: after, path: /fast }
load: { model: open, workers: 1, connections: 8 }
shape: { constant: { rate: 20/s, duration: 1s } }
budgets:
  - step(after).p99 < 1s
  - iteration.ok.p99 < 1s
  - iteration.error_rate <= 100%
"#,
    );
    let s = &r.summary;
    assert_eq!(status(s, "step(after).p99 < 1s"), Status::NoData);
    let v = s
        .budgets
        .iter()
        .find(|v| v.budget.starts_with("step(after)"));
    let note = v.and_then(|v| v.note.clone()).unwrap_or_default();
    assert_eq!(note, "step after never ran in the run");
    assert_eq!(status(s, "iteration.ok.p99 < 1s"), Status::NoData);
    assert_eq!(status(s, "iteration.error_rate <= 100%"), Status::Pass);
    assert_eq!(r.exit_code(), 99);
    let it = &s.iterations[0];
    assert!(
        it.iterations >= 15 && it.ok == 0 && it.failed == it.iterations,
        "{it:?}"
    );
}

#[test]
fn iteration_duration_is_bounded_below_by_the_think_times() {
    let _g = load::serial();
    // 3 fast steps with 200 ms + 300 ms of think time: an iteration takes
    // at least 500 ms, while each step answers in a few ms.
    let load::DemoRun { r, .. } = load::demo_run(
        DemoConfig::default(),
        r#"
name: think
target: { url: "{url}" }
requests:
  - { name: plain, path: /fast, weight: 1 }
scenarios:
  - name: visit
    weight: 3
    steps:
      - { name: home, path: /fast, think_time: 200ms }
      - { name: list, path: /fast, think_time: 300ms }
      - { name: item, path: /fast }
load: { model: open, workers: 1, connections: 64 }
shape: { constant: { rate: 50/s, duration: 2s } }
budgets:
  - iteration.p99 < 2s
  - iteration(visit).p50 < 450ms
  - step(list).p99 < 100ms
"#,
    );
    let s = &r.summary;
    assert_eq!(s.totals.errors, 0, "{:?}", s.totals);
    let it = &s.iterations[0];
    assert_eq!(it.scenario, "visit");
    assert!(it.iterations >= 50, "{it:?}");
    assert_eq!(it.failed, 0, "{it:?}");
    assert!(
        it.latency.p50 >= 500.0,
        "iteration p50 {} ms",
        it.latency.p50
    );
    assert!(it.latency.p99 >= 500.0 && it.latency.p99 < 1000.0, "{it:?}");
    assert_eq!(status(s, "iteration.p99 < 2s"), Status::Pass);
    assert_eq!(status(s, "iteration(visit).p50 < 450ms"), Status::Fail);
    // Think time is not a step's latency: `list` is due when home answered + 200 ms.
    assert_eq!(
        status(s, "step(list).p99 < 100ms"),
        Status::Pass,
        "{:?}",
        s.budgets
    );
    // Every arrival of the scenario was one iteration: offered counts them once.
    let visit_steps: u64 = s
        .requests
        .iter()
        .filter(|r| r.name.starts_with("visit/"))
        .map(|r| r.requests)
        .sum();
    assert_eq!(visit_steps, 3 * it.iterations);
    assert_eq!(s.totals.offered, s.totals.requests + s.totals.dropped);
}

#[test]
fn closed_model_iterations_include_think_times() {
    let _g = load::serial();
    let load::DemoRun { r, .. } = load::demo_run(
        DemoConfig::default(),
        r#"
name: closed-think
target: { url: "{url}" }
scenarios:
  - name: visit
    steps:
      - { name: a, path: /fast, think_time: 100ms }
      - { name: b, path: /fast }
load: { model: closed, workers: 1 }
shape: { constant: { vus: 4, duration: 2s } }
budgets: [ "iteration.p50 >= 100ms" ]
"#,
    );
    let it = &r.summary.iterations[0];
    // 4 VUs × 2 s / ~100 ms per iteration: dozens, never hundreds.
    assert!((20..=120).contains(&it.iterations), "{it:?}");
    assert!(it.latency.p50 >= 100.0, "{it:?}");
    assert_eq!(status(&r.summary, "iteration.p50 >= 100ms"), Status::Pass);
}

#[test]
fn brunt_report_rebuilds_step_and_iteration_rows_and_budgets() {
    let _g = load::serial();
    let server = load::demo(DemoConfig::default());
    let tmp = tempfile::tempdir().expect("tmp");
    let live = load::run(&shop(&server.base_url(), 200), tmp.path());
    let again = brunt::run::rebuild::rebuild(tmp.path()).expect("rebuild");
    assert_eq!(again.requests, live.summary.requests);
    assert_eq!(again.iterations, live.summary.iterations);
    assert!(!again.iterations.is_empty() && again.iterations[0].iterations > 0);
    assert_eq!(again.budgets, live.summary.budgets);
    assert_eq!(again.passed, live.summary.passed);
}

#[test]
fn unknown_step_or_scenario_names_are_errors_with_line_and_column() {
    let base = r#"name: bad
target: { url: "http://127.0.0.1:9" }
scenarios:
  - name: shop
    steps:
      - { name: login, method: POST, path: /login }
      - { name: item, path: /fast }
shape: { constant: { rate: 10/s, duration: 1s } }
budgets:
  - p99 < 1s
  - BUDGET
"#;
    for (budget, want) in [
        (
            "step(checkout).p99 < 300ms",
            "no step or request named `checkout`; the profile has shop/login, shop/item",
        ),
        (
            "iteration(cart).p99 < 2s",
            "no scenario named `cart`; the profile has shop",
        ),
        (
            "step(login).svc.p99 < 2s",
            "service time is kept for all requests only",
        ),
        (
            "step(login).drop_rate < 1%",
            "drops happen before a request or scenario is picked",
        ),
        ("step(login).iteration.p99 < 1s", "two subjects"),
        ("step().p99 < 1s", "name the step inside the parentheses"),
    ] {
        let yaml = base.replace("BUDGET", budget);
        match Profile::from_yaml(&yaml, Path::new("bad.yaml")) {
            Err(ProfileError::Syntax {
                line,
                column,
                message,
                ..
            }) => {
                assert_eq!((line, column), (11, 5), "{budget}: {message}");
                assert!(message.contains(want), "{budget}: {message}");
            }
            other => panic!("{budget}: expected a located error, got {other:?}"),
        }
    }
    // Iterations need scenarios.
    let yaml = base
        .replace("BUDGET", "iteration.p99 < 1s")
        .replace(
            "scenarios:\n  - name: shop\n    steps:\n      - { name: login, method: POST, path: /login }\n      - { name: item, path: /fast }\n",
            "requests: [ { path: /fast } ]\n",
        );
    let e = Profile::from_yaml(&yaml, Path::new("bad.yaml")).expect_err("no scenarios");
    assert!(
        e.to_string()
            .contains("iterations are measured for `scenarios:` only"),
        "{e}"
    );
    // Think time only between steps.
    let yaml = base
        .replace("BUDGET", "p99 < 2s")
        .replace("path: /fast }", "path: /fast, think_time: 1s }");
    let e = Profile::from_yaml(&yaml, Path::new("bad.yaml")).expect_err("last step");
    assert!(e.to_string().contains("the last step has none"), "{e}");
    // And the CLI exits 2 with file:line:col.
    let tmp = tempfile::tempdir().expect("tmp");
    let p = write(
        tmp.path(),
        "bad.yaml",
        &base.replace("BUDGET", "step(checkout).p99 < 300ms"),
    );
    let o = brunt()
        .arg("validate")
        .arg(&p)
        .output()
        .expect("brunt runs");
    let out = self::text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("bad.yaml:11:5:"), "{out}");
}

#[test]
fn validate_lists_scenarios_and_their_steps() {
    let tmp = tempfile::tempdir().expect("tmp");
    let p = write(
        tmp.path(),
        "ok.yaml",
        r#"name: ok
target: { url: "http://127.0.0.1:9" }
requests: [ { name: plain, path: /fast } ]
scenarios:
  - name: shop
    weight: 2
    steps:
      - { name: login, method: POST, path: /login, think_time: 1s }
      - { path: /fast }
shape: { constant: { rate: 10/s, duration: 1s } }
budgets: [ "step(login).p99 < 300ms", "iteration.p99 < 2s" ]
"#,
    );
    let o = brunt()
        .arg("validate")
        .arg(&p)
        .output()
        .expect("brunt runs");
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("1 request(s) and 1 scenario(s) (2 step(s)) in the mix, 2 budget(s)"),
        "{out}"
    );
    assert!(
        out.contains("scenario shop (weight 2): login (+1s) → GET /fast"),
        "{out}"
    );
}

#[test]
fn an_optional_step_that_fails_does_not_end_its_iteration() {
    let _g = load::serial();
    let load::DemoRun { r, .. } = load::demo_run(
        DemoConfig::default(),
        r#"
name: optional
target: { url: "{url}" }
scenarios:
  - name: visit
    steps:
      - { name: banner, path: /status/500, optional: true }
      - { name: page, path: /fast }
      - { name: broken, path: /status/503 }
      - { name: never, path: /fast }
load: { model: open, workers: 1, connections: 8 }
shape: { constant: { rate: 20/s, duration: 1s } }
"#,
    );
    let s = &r.summary;
    let count = |name: &str| {
        s.requests
            .iter()
            .find(|q| q.name == name)
            .map(|q| (q.requests, q.ok))
            .unwrap_or_default()
    };
    let (banner, banner_ok) = count("visit/banner");
    assert!(banner >= 15 && banner_ok == 0, "{:?}", s.requests);
    // The optional failure went on to the next step; the required one ended it.
    assert_eq!(count("visit/page"), (banner, banner));
    assert_eq!(count("visit/broken"), (banner, 0));
    assert_eq!(count("visit/never"), (0, 0));
    let it = &s.iterations[0];
    assert_eq!(
        (it.iterations, it.ok, it.failed),
        (banner, 0, banner),
        "{it:?}"
    );
    // `optional` belongs to scenario steps.
    let e = Profile::from_yaml(
        "name: x\ntarget: { url: \"http://127.0.0.1:9\" }\nrequests: [ { path: /a, optional: true } ]\nshape: { constant: { rate: 1/s, duration: 1s } }\n",
        Path::new("x.yaml"),
    )
    .expect_err("optional on a request");
    assert!(
        e.to_string()
            .contains("`optional` works in scenario steps only"),
        "{e}"
    );
}

#[test]
fn an_iteration_still_thinking_when_the_drain_ends_is_unfinished() {
    let _g = load::serial();
    let server = load::demo(DemoConfig::default());
    let tmp = tempfile::tempdir().expect("tmp");
    // Every iteration is in its 3-s think time when the 1-s plan ends, and
    // the drain waits at most the 1-s request timeout.
    let p = load::profile(
        r#"
name: drain
target: { url: "{url}", timeout: 1s }
scenarios:
  - name: visit
    steps:
      - { name: a, path: /fast, think_time: 3s }
      - { name: b, path: /fast }
load: { model: open, workers: 1, connections: 64 }
shape: { constant: { rate: 20/s, duration: 1s } }
budgets: [ "iteration.ok.p99 < 10s" ]
"#,
        &server.base_url(),
    );
    let started = std::time::Instant::now();
    let r = load::run(&p, tmp.path());
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3) + std::time::Duration::from_secs(2)
    );
    let s = &r.summary;
    let it = &s.iterations[0];
    assert!(it.iterations >= 15, "{it:?}");
    assert_eq!((it.ok, it.failed), (0, it.iterations), "{it:?}");
    // Step b was never due: not offered, not counted; every a answered.
    let b = s
        .requests
        .iter()
        .find(|q| q.name == "visit/b")
        .map(|q| q.requests);
    assert_eq!(b, Some(0), "{:?}", s.requests);
    assert_eq!(s.totals.offered, s.totals.requests + s.totals.dropped);
    assert_eq!(s.totals.errors, 0, "no step failed: {:?}", s.totals);
    // No iteration completed: NO DATA, never a pass.
    assert_eq!(status(s, "iteration.ok.p99 < 10s"), Status::NoData);
}

/// A scenario holding its connection through a 250 ms think time, 30
/// arrivals a second, on `connections` connections.
fn held_connections(connections: usize) -> String {
    format!(
        r#"
name: held
target: {{ url: "{{url}}", timeout: 5s }}
scenarios:
  - name: shop
    steps:
      - {{ name: login, method: POST, path: /login, extract: {{ token: {{ json: /token }} }}, think_time: 250ms }}
      - {{ name: item, path: /fast }}
load: {{ model: open, workers: 1, connections: {connections} }}
shape: {{ constant: {{ rate: 30/s, duration: 3s }} }}
budgets: [ "p99 < 100ms" ]
"#
    )
}

#[test]
fn brunts_own_connection_limit_is_said_apart_from_the_service() {
    let _g = load::serial();
    // 4 connections each held ~250 ms per iteration serve ~16 arrivals a
    // second of the 30 due: the rest wait in brunt's own queue, while the
    // demo answers each step in well under a millisecond.
    let load::DemoRun { r, dir, .. } = load::demo_run(DemoConfig::default(), &held_connections(4));
    let s = &r.summary;
    assert_eq!(s.totals.errors, 0, "{:?}", s.totals);
    let w = s.connection_wait.as_ref().expect("the wait is measured");
    assert!(w.dominates, "{w:?}");
    assert_eq!(w.connections, Some(4));
    assert!(w.wait_p99_ms >= 0.5 * s.totals.latency.p99, "{w:?}");
    assert!(w.service_p99_ms < 0.1 * w.wait_p99_ms, "{w:?}");
    assert!((s.totals.wait.p99 - w.wait_p99_ms).abs() < 1e-9);
    let said = "is brunt's own connection limit";
    assert!(
        s.notes
            .iter()
            .any(|n| n.contains(said) && n.contains("one of brunt's 4 connections")),
        "{:?}",
        s.notes
    );
    let gate = s
        .gates
        .iter()
        .find(|g| g.name.starts_with("p99 < 100ms"))
        .expect("the p99 gate");
    assert!(!gate.holds(), "{gate:?}");
    assert!(gate.text.contains("raise `load.connections`"), "{gate:?}");
    let term = brunt::report::terminal::render(s);
    assert!(term.contains(said), "{term}");
    assert!(
        term.contains("wait for one of brunt's connections before the send"),
        "{term}"
    );
    let html = std::fs::read_to_string(dir.path().join("report.html")).expect("report.html");
    // (Its apostrophes escaped.)
    assert!(
        html.contains("own connection limit") && html.contains("raise `load.connections`"),
        "report.html says it too"
    );
    // Read back from its files, the run says the same.
    let again = brunt::run::rebuild::rebuild(dir.path()).expect("rebuild");
    assert_eq!(again.connection_wait, s.connection_wait);

    // With enough connections nothing waits, and nothing is said.
    let load::DemoRun { r, .. } = load::demo_run(DemoConfig::default(), &held_connections(64));
    let s = &r.summary;
    let w = s.connection_wait.as_ref().expect("the wait is measured");
    assert!(!w.dominates, "{w:?}");
    assert!(!s.notes.iter().any(|n| n.contains(said)), "{:?}", s.notes);
    assert!(s.gates.iter().all(|g| !g.text.contains("load.connections")));
}
