//! `brunt compare BASE NEW --fail-if COND` (issue 15), on real runs against
//! the built-in demo target on 127.0.0.1: a run made slower on purpose
//! (`/slow?ms=` doubled) exits 99 with the condition shown as a FAIL gate;
//! a repeat of the base exits 0; a condition on a phase neither run has is
//! NO DATA and fails; a condition that does not parse is exit 2.

#[path = "support/cmd.rs"]
mod cmd;
use cmd::{brunt, out};

use std::path::{Path, PathBuf};
use std::process::Output;

use brunt::vocab::exit;

/// 3 s at 10/s of `/slow?ms={ms}`: latency is the demo's sleep (at 500 ms,
/// 10 % is 50 ms, well above a loaded machine's jitter), and the open model
/// keeps throughput at 10/s.
fn run(dir: &Path, name: &str, ms: u32) -> PathBuf {
    let profile = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &profile,
        format!(
            "name: {name}\ntarget: {{ url: builtin }}\nrequests: [ {{ path: \"/slow?ms={ms}\" }} ]\nshape: {{ constant: {{ rate: 10/s, duration: 3s }} }}\n"
        ),
    )
    .expect("write profile");
    let out_dir = dir.join(name);
    let o = brunt()
        .arg("run")
        .arg(&profile)
        .arg("--out")
        .arg(&out_dir)
        .arg("--quiet")
        .output()
        .expect("brunt runs");
    assert_eq!(o.status.code(), Some(exit::PASS), "{}", out(&o));
    out_dir
}

fn compare(a: &Path, b: &Path, conds: &[&str]) -> Output {
    let mut c = brunt();
    c.arg("compare").arg(a).arg(b);
    for k in conds {
        c.arg("--fail-if").arg(k);
    }
    c.output().expect("brunt compare runs")
}

const GATE: [&str; 2] = ["p99 > +10%", "throughput < -5%"];

#[test]
fn a_slower_run_fails_the_gate_and_a_repeat_passes() {
    let d = tempfile::tempdir().expect("tempdir");
    let base = run(d.path(), "base", 500);
    let slower = run(d.path(), "slower", 1000);
    let repeat = run(d.path(), "repeat", 500);

    let o = compare(&base, &slower, &GATE);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(exit::BUDGET_FAILED), "{text}");
    assert!(text.contains("gates:"), "{text}");
    let line = |t: &str, cond: &str| {
        t.lines()
            .find(|l| l.contains(cond) && (l.contains("PASS") || l.contains("FAIL")))
            .unwrap_or_else(|| panic!("no gate line for {cond}:\n{t}"))
            .to_string()
    };
    let p99 = line(&text, "p99 > +10%");
    assert!(p99.trim_start().starts_with("FAIL"), "{p99}");
    assert!(
        p99.contains("A ") && p99.contains("→ B "),
        "measured A and B: {p99}"
    );
    let tput = line(&text, "throughput < -5%");
    assert!(tput.trim_start().starts_with("PASS"), "{tput}");
    assert!(text.contains("result: FAIL — p99 > +10%"), "{text}");
    // Two profiles (each run here has its own), other requests: said first.
    assert!(
        text.contains("warning: A is a run of profile `base`, B of `slower`")
            && text.contains("warning: the runs sent other request mixes"),
        "{text}"
    );
    assert!(!text.contains("other phases"), "{text}");

    // The same gate as JSON, with the merged-histogram p99 of each run.
    let mut c = brunt();
    c.arg("compare")
        .arg(&base)
        .arg(&slower)
        .arg("--json")
        .args(["--fail-if", GATE[0]]);
    let o = c.output().expect("brunt compare --json");
    assert_eq!(o.status.code(), Some(exit::BUDGET_FAILED), "{}", out(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(j["gates"][0]["kind"], "regression");
    assert_eq!(j["gates"][0]["status"], "FAIL");
    let run_row = j["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .find(|p| p["phase"] == "run")
        .expect("run row");
    let (a99, b99) = (
        run_row["a"]["latency"]["p99"].as_f64().unwrap(),
        run_row["b"]["latency"]["p99"].as_f64().unwrap(),
    );
    assert!(a99 >= 500.0 && b99 >= 1000.0, "p99 A {a99} B {b99}");

    let o = compare(&base, &repeat, &GATE);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(exit::PASS), "{text}");
    assert!(
        line(&text, "p99 > +10%").trim_start().starts_with("PASS"),
        "{text}"
    );
    assert!(text.contains("result: PASS"), "{text}");

    // A phase neither run has: nothing to judge, so the gate fails.
    let o = compare(&base, &repeat, &["p99 > +10% in step-9"]);
    let text = out(&o);
    assert_eq!(o.status.code(), Some(exit::BUDGET_FAILED), "{text}");
    assert!(text.contains("NO DATA"), "{text}");

    // Without --fail-if, compare only shows: exit 0 whatever moved.
    let o = compare(&base, &slower, &[]);
    assert_eq!(o.status.code(), Some(exit::PASS), "{}", out(&o));
}

#[test]
fn a_condition_that_does_not_parse_is_bad_input() {
    let d = tempfile::tempdir().expect("tempdir");
    for (cond, says) in [
        ("p99 >> 10%", "not a change"),
        (
            "p99 > +10",
            "p99 takes a percentage (+10%) or a time (+50ms), not no unit",
        ),
        ("p42 > +10%", "unknown metric `p42`"),
        ("p99 +10%", "expected METRIC > CHANGE"),
        ("throughput < -5ms", "not `ms`"),
    ] {
        let o = compare(d.path(), d.path(), &[cond]);
        let text = out(&o);
        assert_eq!(o.status.code(), Some(exit::BAD_INPUT), "{cond}: {text}");
        assert!(
            text.contains("--fail-if") && text.contains(says),
            "{cond}: {text}"
        );
    }
}
