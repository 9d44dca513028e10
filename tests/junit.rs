//! `--junit FILE` (issue 15): a real run against the built-in demo target on
//! 127.0.0.1 writes JUnit XML that a JUnit reader (Python's `junitparser`,
//! installed by tests/setup.sh) parses into one test case per gate of
//! `summary.json`, with the same statuses: PASS passes, FAIL is a failure,
//! NO DATA an error — never a pass.

#[path = "support/cmd.rs"]
mod cmd;
use cmd::{brunt, out};

use std::path::{Path, PathBuf};
use std::process::Command;

use brunt::vocab::exit;

/// The file as `junitparser` reads it: one `[name, status, message]` per case.
fn read_with_junitparser(path: &Path) -> Vec<(String, String, String)> {
    const SCRIPT: &str = r#"
import json, sys
try:
    from junitparser import JUnitXml
except ImportError:
    sys.exit("junitparser is missing: run tests/setup.sh (pip install 'junitparser==5.*')")
xml = JUnitXml.fromfile(sys.argv[1])
cases = []
for suite in xml:
    for case in suite:
        if case.is_passed:
            cases.append([case.name, "passed", ""])
        else:
            r = case.result[0]
            cases.append([case.name, r._tag, r.message or ""])
print(json.dumps(cases))
"#;
    let o = Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(path)
        .output()
        .expect("python3 runs (install it with tests/setup.sh)");
    assert!(o.status.success(), "junitparser: {}", out(&o));
    serde_json::from_slice(&o.stdout).expect("the script prints JSON")
}

/// What a gate's status must read as in JUnit.
fn junit_status(status: &str) -> &'static str {
    match status {
        "PASS" => "passed",
        "FAIL" => "failure",
        "NO DATA" => "error",
        other => panic!("unknown gate status {other}"),
    }
}

/// Run `yaml` with `--junit`, check the file against `summary.json`'s gates,
/// and return the run directory and the cases as `(name, status)`.
fn run_and_check(dir: &Path, yaml: &str) -> (PathBuf, Vec<(String, String)>, Vec<String>) {
    let profile = dir.join("profile.yaml");
    std::fs::write(&profile, yaml).expect("write profile");
    let run = dir.join("run");
    let xml = dir.join("junit.xml");
    let o = brunt()
        .arg("run")
        .arg(&profile)
        .arg("--out")
        .arg(&run)
        .arg("--plain")
        .arg("--junit")
        .arg(&xml)
        .output()
        .expect("brunt runs");
    let text = out(&o);
    assert_eq!(o.status.code(), Some(exit::BUDGET_FAILED), "{text}");
    assert!(text.contains("junit: "), "{text}");

    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).expect("summary"))
            .expect("summary.json is JSON");
    let gates = summary["gates"].as_array().expect("gates");
    let cases = read_with_junitparser(&xml);
    // Every case is timed: the gates 0 (judged, not run), the run its load.
    let text = std::fs::read_to_string(&xml).expect("junit xml");
    let timed: Vec<&str> = text
        .split("<testcase ")
        .skip(1)
        .map(|c| c.split('>').next().unwrap_or(""))
        .collect();
    assert_eq!(timed.len(), gates.len() + 1, "{text}");
    for c in &timed[..gates.len()] {
        assert!(c.contains("time=\"0"), "a gate's case takes no time: {c}");
    }
    let duration = summary["totals"]["duration_s"].as_f64().expect("duration");
    let run_time: f64 = timed[gates.len()]
        .split("time=\"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .and_then(|t| t.parse().ok())
        .expect("the run case's time");
    assert!(
        (run_time - duration).abs() < 0.01,
        "{run_time} vs {duration}"
    );
    assert_eq!(
        cases.len(),
        gates.len() + 1,
        "one case per gate + run completed: {cases:?}"
    );
    for (g, (name, status, message)) in gates.iter().zip(&cases) {
        let kind = g["kind"].as_str().unwrap();
        let gname = g["name"].as_str().unwrap();
        // Plain: the kind is the classname's, never said twice in the name.
        let plain = gname.strip_prefix(&format!("{kind}: ")).unwrap_or(gname);
        assert_eq!(name, plain);
        assert_eq!(
            status,
            junit_status(g["status"].as_str().unwrap()),
            "{name}"
        );
        if status != "passed" {
            let measured = g["measured"].as_str().unwrap();
            let expected = g["expected"].as_str().unwrap();
            assert!(
                message.contains(measured) && message.contains(expected),
                "{name}: the message gives measured and expected: {message}"
            );
        }
    }
    let last = cases.last().unwrap();
    assert_eq!(
        (last.0.as_str(), last.1.as_str()),
        ("run completed", "passed")
    );
    let statuses = gates
        .iter()
        .map(|g| {
            format!(
                "{} {}",
                g["kind"].as_str().unwrap(),
                g["status"].as_str().unwrap()
            )
        })
        .collect();
    let cases = cases.into_iter().map(|(n, s, _)| (n, s)).collect();
    (run, cases, statuses)
}

#[test]
fn junit_lists_every_budget_with_its_status_and_no_data_never_passes() {
    let d = tempfile::tempdir().expect("tempdir");
    // A pass (p99 < 2s), a failure (p99 < 1ms against a 5 ms endpoint) and
    // NO DATA (no timeouts to measure).
    let (run, cases, statuses) = run_and_check(
        d.path(),
        "name: ci-budgets\ntarget: { url: builtin }\nrequests: [ { path: \"/slow?ms=5\" } ]\nshape: { constant: { rate: 20/s, duration: 2s } }\nbudgets: [ \"p99 < 2s\", \"p99 < 1ms\", \"timeout.p99 < 1s\" ]\n",
    );
    assert_eq!(
        statuses,
        ["budget PASS", "budget FAIL", "budget NO DATA"],
        "the profile exercises every status"
    );

    // `brunt report DIR --junit` rebuilds the same cases from the run directory.
    let again = d.path().join("again.xml");
    let o = brunt()
        .arg("report")
        .arg(&run)
        .arg("--junit")
        .arg(&again)
        .output()
        .expect("brunt report runs");
    assert_eq!(o.status.code(), Some(exit::BUDGET_FAILED), "{}", out(&o));
    let rebuilt: Vec<(String, String)> = read_with_junitparser(&again)
        .into_iter()
        .map(|(n, s, _)| (n, s))
        .collect();
    assert_eq!(rebuilt, cases);
}

#[test]
fn junit_has_the_knee_against_expect_capacity() {
    let d = tempfile::tempdir().expect("tempdir");
    let (_, cases, statuses) = run_and_check(
        d.path(),
        "name: ci-knee\ntarget: { url: builtin }\nrequests: [ { path: /fast } ]\nshape: { stress: { start: 20/s, step: 20/s, step_duration: 1s, max: 60/s, expect_capacity: 200/s } }\nbudgets: [ \"p99 < 2s\" ]\n",
    );
    assert_eq!(statuses, ["knee FAIL"]);
    assert_eq!(cases[0].0, "knee vs expect_capacity");
}

#[test]
fn a_junit_path_that_cannot_be_written_is_refused_before_the_load() {
    let d = tempfile::tempdir().expect("tempdir");
    let profile = d.path().join("p.yaml");
    std::fs::write(
        &profile,
        "name: p\ntarget: { url: builtin }\nrequests: [ { path: /fast } ]\nshape: { constant: { rate: 10/s, duration: 1s } }\n",
    )
    .expect("write profile");
    let run = d.path().join("run");
    let o = brunt()
        .arg("run")
        .arg(&profile)
        .arg("--out")
        .arg(&run)
        .arg("--junit")
        .arg(d.path().join("no/such/folder/junit.xml"))
        .output()
        .expect("brunt runs");
    let text = out(&o);
    assert_eq!(o.status.code(), Some(exit::BAD_INPUT), "{text}");
    assert!(
        text.contains("--junit") && text.contains("does not exist"),
        "{text}"
    );
    assert!(!run.exists(), "nothing was run");
}

#[test]
fn an_interrupted_run_passes_nothing_in_junit() {
    let d = tempfile::tempdir().expect("tempdir");
    let profile = d.path().join("long.yaml");
    std::fs::write(
        &profile,
        "name: long\ntarget: { url: builtin }\nrequests: [ { path: /fast } ]\nshape: { constant: { rate: 20/s, duration: 60s } }\nbudgets: [ \"p99 < 5s\" ]\n",
    )
    .expect("write profile");
    let run = d.path().join("run");
    let xml = d.path().join("junit.xml");
    let child = brunt()
        .arg("run")
        .arg(&profile)
        .arg("--out")
        .arg(&run)
        .arg("--quiet")
        .arg("--junit")
        .arg(&xml)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("brunt runs");
    // Stop it once it has measured a few seconds (as a cancelled CI job would).
    let t0 = std::time::Instant::now();
    while !std::fs::read_to_string(run.join("timeseries.csv")).is_ok_and(|t| t.lines().count() > 3)
    {
        assert!(t0.elapsed().as_secs() < 30, "the run never started");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let o = child.wait_with_output().expect("brunt ends");
    assert_eq!(o.status.code(), Some(exit::INTERRUPTED), "{}", out(&o));
    let cases = read_with_junitparser(&xml);
    assert_eq!(cases.len(), 2, "{cases:?}");
    assert_eq!(cases[0].0, "p99 < 5s [run]");
    assert_eq!(cases[0].1, "skipped", "met only up to the stop: {cases:?}");
    assert!(cases[0].2.contains("interrupted"), "{cases:?}");
    assert_eq!(
        (cases[1].0.as_str(), cases[1].1.as_str()),
        ("run completed", "error")
    );
    assert!(cases[1].2.contains("SIGTERM"), "{cases:?}");
}
