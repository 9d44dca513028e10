//! Verdicts and exit codes that never lie (issue 11), against the built-in
//! demo target on 127.0.0.1: ambiguous units and levels that send nothing
//! are refused with file:line:col (exit 2); a budget with no answers in its
//! scope is NO DATA and fails (exit 99); a stress run below
//! `expect_capacity` names that gate in the terminal, `summary.json` and
//! `report.html`; an interrupted run never passes (exit 105).

#[path = "support/load.rs"]
mod load;

#[path = "support/cmd.rs"]
mod cmd;
use cmd::{brunt, out, run_quiet, write};

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use brunt::budgets::Status;
use brunt::demo::DemoConfig;
use brunt::run::{execute, Progress, RunOptions};
use brunt::vocab::exit;

fn summary_json(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).expect("summary.json"))
        .expect("summary.json is JSON")
}

#[test]
fn ambiguous_units_and_silent_levels_are_refused_with_file_line_and_column() {
    let d = tempfile::tempdir().expect("tempdir");
    let cases = [
        (
            "zero.yaml",
            "name: zero\ntarget: { url: builtin }\nrequests: [ { path: /fast } ]\nshape:\n  constant:\n    rate: 0/s\n    duration: 2s\n",
            ":6:11: ",
            "would send nothing",
        ),
        (
            "flow.yaml",
            "name: zero\ntarget: { url: builtin }\nrequests: [ { path: /fast } ]\nshape: { stress: { start: 0/s, step: 50/s, step_duration: 1s, max: 100/s } }\n",
            ":4:27: ",
            "would send nothing",
        ),
        (
            "stages.yaml",
            "name: pause\ntarget: { url: builtin }\nrequests: [ { path: /fast } ]\nshape:\n  stages:\n    stages:\n      - { duration: 1s, target: 0 }\n",
            ":7:33: ",
            "would send nothing",
        ),
        (
            "rate.yaml",
            "name: rate\ntarget: { url: builtin }\nrequests: [ { path: /fast } ]\nshape: { constant: { rate: 10/s, duration: 1s } }\nbudgets:\n  - p99 < 5s\n  - error_rate < 1\n",
            ":7:5: ",
            "write 1% (a bare number is ambiguous)",
        ),
        (
            "latency.yaml",
            "name: latency\ntarget: { url: builtin }\nrequests: [ { path: /fast } ]\nshape: { constant: { rate: 10/s, duration: 1s } }\nbudgets: [ \"error_rate < 1%\", \"p99 < 500\" ]\n",
            ":5:32: ",
            "expected a unit: 500ms",
        ),
    ];
    for (name, text, at, says) in cases {
        let p = write(d.path(), name, text);
        for cmd in ["validate", "run"] {
            let mut c = brunt();
            c.arg(cmd).arg(&p);
            if cmd == "run" {
                c.arg("--out").arg(d.path().join(format!("run-{name}")));
            }
            let o = c.output().expect("brunt runs");
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(
                o.status.code(),
                Some(exit::BAD_INPUT),
                "{name} {cmd}: {}",
                out(&o)
            );
            assert!(
                err.contains(&format!("{}{at}", p.display())),
                "{name} {cmd}: wanted {at} in {err}"
            );
            assert!(err.contains(says), "{name} {cmd}: {err}");
        }
        assert!(
            !d.path().join(format!("run-{name}")).exists(),
            "{name}: refused before any load"
        );
    }
}

#[test]
fn a_budget_without_answers_in_scope_is_no_data_and_fails_the_run() {
    let d = tempfile::tempdir().expect("tempdir");
    let p = write(
        d.path(),
        "nodata.yaml",
        "name: nodata\ntarget: { url: builtin }\nrequests: [ { path: /fast } ]\nshape: { constant: { rate: 50/s, duration: 1s } }\nbudgets:\n  - p99 < 5s\n  - timeout.p99 < 1s\n",
    );
    let run = d.path().join("r");
    let o = run_quiet(&p, &run);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(exit::BUDGET_FAILED), "{text}");
    assert!(text.contains("PASS p99 < 5s"), "{text}");
    assert!(text.contains("NO DATA timeout.p99 < 1s"), "{text}");
    assert!(!text.contains("result: PASS"), "{text}");
    let s = summary_json(&run);
    assert_eq!(s["schema"], "brunt.summary/1");
    assert_eq!(s["passed"], false);
    assert_eq!(s["budgets"][0]["status"], "PASS");
    assert_eq!(s["budgets"][1]["status"], "NO DATA");
    assert_eq!(s["budgets"][1]["pass"], false);
    let gates = s["gates"].as_array().expect("gates");
    assert_eq!(gates.len(), 2, "{gates:?}");
    assert_eq!(gates[1]["kind"], "budget");
    assert_eq!(gates[1]["status"], "NO DATA");
    assert_eq!(gates[1]["name"], "timeout.p99 < 1s [run]");
    let html = std::fs::read_to_string(run.join("report.html")).expect("report.html");
    assert!(html.contains("NO DATA"), "report.html names the gate");
}

#[test]
fn a_stress_run_below_expect_capacity_names_the_knee_gate() {
    // Every step meets the budget, so the knee is the last step (60/s) and the
    // run ends as planned: the only failing gate is the expected capacity.
    let d = tempfile::tempdir().expect("tempdir");
    let p = write(
        d.path(),
        "stress.yaml",
        "name: small\ntarget: { url: builtin }\nrequests: [ { path: /fast } ]\nshape: { stress: { start: 20/s, step: 20/s, step_duration: 1s, max: 60/s, expect_capacity: 200/s } }\nbudgets: [ \"p99 < 2s\" ]\n",
    );
    let run = d.path().join("r");
    let o = run_quiet(&p, &run);
    let text = out(&o);
    let said = "knee 60/s < expected capacity 200/s";
    assert_eq!(o.status.code(), Some(exit::BUDGET_FAILED), "{text}");
    assert!(text.contains(&format!("result: FAIL — {said}")), "{text}");
    let s = summary_json(&run);
    assert_eq!(s["interrupted"], false, "ran as planned");
    assert_eq!(s["passed"], false);
    let knee: Vec<&serde_json::Value> = s["gates"]
        .as_array()
        .expect("gates")
        .iter()
        .filter(|g| g["kind"] == "knee")
        .collect();
    assert_eq!(knee.len(), 1, "{}", s["gates"]);
    assert_eq!(knee[0]["status"], "FAIL");
    assert_eq!(knee[0]["name"], "knee vs expect_capacity");
    assert!(knee[0]["text"].as_str().unwrap_or("").contains(said));
    let html = std::fs::read_to_string(run.join("report.html")).expect("report.html");
    let at = html.find("<h2>Verdict</h2>").expect("verdict") + "<h2>Verdict</h2>".len();
    let rest = &html[at..];
    let top = &rest[..rest.find("<h2>").unwrap_or(rest.len())];
    assert!(
        top.contains("knee 60/s &lt; expected capacity 200/s"),
        "{top}"
    );
    assert!(!html.contains("0 budget(s), 0 failed"));
    assert!(top.contains("1 gate(s), 1 failed"), "{top}");
}

#[test]
fn an_interrupted_run_never_passes() {
    let _g = load::serial();
    let srv = load::demo(DemoConfig::default());
    let d = tempfile::tempdir().expect("tempdir");
    let p = load::profile(
        &(load::fast("stopped", "{url}", "100/s", "20s")
            + r#"budgets: [ "p99 < 5s", "error_rate < 1%" ]"#),
        &srv.base_url(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(2500));
        flag.store(true, Ordering::Relaxed);
    });
    let t = Instant::now();
    let r = execute(
        &p,
        RunOptions {
            out: Some(d.path().to_path_buf()),
            progress: Progress::Quiet,
            stop: Some(stop),
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("run failed: {e}"));
    stopper.join().expect("stopper");
    assert!(t.elapsed() < Duration::from_secs(15), "stopped early");
    let s = &r.summary;
    assert!(s.interrupted);
    assert!(!s.passed, "an interrupted run never passes");
    assert_eq!(r.exit_code(), exit::INTERRUPTED);
    assert_eq!(exit::INTERRUPTED, 105);
    // The budgets are still judged as measured up to the stop.
    assert!(s.totals.requests >= 100, "{} requests", s.totals.requests);
    assert_eq!(s.budgets.len(), 2);
    assert!(s.budgets.iter().all(|v| v.status == Status::Pass));
    let term = brunt::report::terminal::render(s);
    assert!(!term.contains("PASS"), "{term}");
    assert!(
        term.contains("result: INTERRUPTED — budgets as measured up to the stop"),
        "{term}"
    );
    assert!(term.contains("p99 < 5s"), "{term}");
    let html = std::fs::read_to_string(d.path().join("report.html")).expect("report.html");
    assert!(html.contains("INTERRUPTED — budgets as measured up to the stop"));
    let verdict = &html[html.find("<h2>Verdict</h2>").expect("verdict")..];
    assert!(!verdict.contains(">PASS<"), "no PASS in the verdict");
    let json = summary_json(d.path());
    assert_eq!(json["passed"], false);
    assert_eq!(json["interrupted"], true);
}

#[test]
fn a_failed_overload_check_fails_the_run_unless_the_verdicts_are_advisory() {
    let _g = load::serial();
    // /noshed queues rather than answer 503: 4 in flight × 20 ms = 200/s, so
    // at 600/s with a 300 ms client timeout the excess times out, unshed.
    let load::DemoRun { srv, dir: d, r } = load::demo_run(
        DemoConfig {
            shed_cap: 4,
            shed_work: Duration::from_millis(20),
            ..Default::default()
        },
        r#"
name: noshed
target: { url: "{url}", timeout: 300ms }
requests: [ { path: /noshed } ]
load: { connections: 512, max_in_flight: 5000 }
shape:
  overload: { baseline: 50/s, baseline_duration: 1s, rate: 600/s, duration: 2s, recovery_duration: 2s, fast_fail: 100ms }
"#,
    );
    drop(srv);
    let s = &r.summary;
    assert!(!s.interrupted);
    assert!(s.budgets.is_empty(), "no budgets: only the verdict gates");
    let fast = s
        .gates
        .iter()
        .find(|g| g.name == "overload: shed answers are fast")
        .unwrap_or_else(|| panic!("no gate for the fast-503 check: {:#?}", s.gates));
    assert_eq!(
        (fast.kind.as_str(), fast.status),
        ("overload", Status::Fail)
    );
    assert!(!fast.advisory);
    assert!(!s.passed);
    assert_eq!(r.exit_code(), exit::BUDGET_FAILED);
    let term = brunt::report::terminal::render(s);
    assert!(
        term.contains("result: FAIL — overload: shed answers are fast"),
        "{term}"
    );

    // The same run judged with `verdicts.advisory: true`: shown, not failing.
    let saved = d.path().join("profile.yaml");
    let text = std::fs::read_to_string(&saved).expect("profile.yaml");
    assert!(text.contains("advisory: false"), "{text}");
    std::fs::write(&saved, text.replace("advisory: false", "advisory: true")).expect("write");
    let again = brunt::run::rebuild::rebuild(d.path()).expect("rebuild");
    let fast = again
        .gates
        .iter()
        .find(|g| g.name == "overload: shed answers are fast")
        .expect("the gate is still shown");
    assert_eq!(fast.status, Status::Fail);
    assert!(fast.advisory);
    assert!(again.passed, "{:#?}", again.gates);
    assert_eq!(again.exit_code(), exit::PASS);
    assert!(brunt::report::terminal::render(&again).contains("(advisory)"));
}
