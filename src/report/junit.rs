//! `--junit FILE`: the run's gates as JUnit XML, the format Jenkins, GitLab
//! and most CI systems read. XML through `quick-junit` (escaping and the
//! schema's element order are its job, not ours).
//!
//! One test suite per run, one test case per gate of `summary.json`
//! (budgets, the knee against `expect_capacity`, the shape's checks), each
//! with what was measured and expected (as properties and in its message),
//! and one case `run completed` for how the load ended, timed with the
//! load (the gates' cases take no time: they are judged, not run). A case's
//! classname is `brunt.<run>.<kind>`, its name the gate's, plain. Nothing passes on
//! missing evidence:
//! - FAIL is a `<failure>`; NO DATA an `<error>` (nothing was measured);
//! - an advisory gate that does not hold is `<skipped>` (shown, not deciding);
//! - in an interrupted run, every gate met up to the stop is `<skipped>`
//!   ("met up to the stop"), and `run completed` is an `<error>`.

use std::path::Path;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::ReportError;
use crate::budgets::Status;
use crate::judge::{Gate, Summary};
use crate::rundir;

/// The JUnit report of a judged run, as XML text.
pub fn render(s: &Summary) -> Result<String, ReportError> {
    let name = format!("brunt.{}", s.meta.name);
    let mut suite = TestSuite::new(name.as_str());
    if let Some(t) = chrono::DateTime::from_timestamp(
        s.meta.started_at.trunc() as i64,
        (s.meta.started_at.fract() * 1e9) as u32,
    ) {
        suite.set_timestamp(t.fixed_offset());
    }
    let secs = s.totals.duration_s;
    if secs.is_finite() && secs >= 0.0 {
        suite.set_time(Duration::from_secs_f64(secs));
    }
    suite.add_property(Property::new("target", s.meta.target.as_str()));
    suite.add_property(Property::new("result", super::terminal::result(s)));
    for g in &s.gates {
        suite.add_test_case(case(g, s.interrupted, &name));
    }
    suite.add_test_case(completed(s, &name));
    let mut report = Report::new(name.as_str());
    report.add_test_suite(suite);
    report
        .to_string()
        .map_err(|e| ReportError::Junit(e.to_string()))
}

/// Write [`render`] to `path` (through a temporary file and a rename).
pub fn write(path: &Path, s: &Summary) -> Result<(), ReportError> {
    let xml = render(s)?;
    rundir::write_atomic(path, xml.as_bytes())?;
    Ok(())
}

fn case(g: &Gate, interrupted: bool, suite: &str) -> TestCase {
    let message = format!(
        "{}: measured {}, expected {}",
        g.status.label(),
        g.measured,
        g.expected
    );
    let status = match (g.status, g.advisory, interrupted) {
        (Status::Pass, _, false) => TestCaseStatus::success(),
        (Status::Pass, _, true) => skipped(format!(
            "met up to the stop (the run was interrupted): {message}"
        )),
        (_, true, _) => skipped(format!("advisory, not deciding: {message}")),
        (Status::Fail, false, _) => non_success(NonSuccessKind::Failure, "FAIL", message, g),
        (Status::NoData, false, _) => non_success(NonSuccessKind::Error, "NO DATA", message, g),
    };
    // The classname carries the kind; the name says it no second time
    // (an overload gate is named `overload: …` in summary.json).
    let plain = g
        .name
        .strip_prefix(g.kind.as_str())
        .and_then(|r| r.strip_prefix(": "))
        .unwrap_or(&g.name);
    let mut c = TestCase::new(plain, status);
    c.set_classname(format!("{suite}.{}", g.kind));
    // Judged at the end, not run: the load's time is the `run` case's.
    c.set_time(Duration::ZERO);
    c.add_property(Property::new("kind", g.kind.as_str()));
    c.add_property(Property::new("measured", g.measured.as_str()));
    c.add_property(Property::new("expected", g.expected.as_str()));
    c.add_property(Property::new("status", g.status.label()));
    c.add_property(Property::new("advisory", g.advisory.to_string()));
    c.set_system_out(g.line());
    c
}

fn non_success(kind: NonSuccessKind, ty: &str, message: String, g: &Gate) -> TestCaseStatus {
    let mut st = TestCaseStatus::non_success(kind);
    st.set_type(ty);
    st.set_message(message);
    st.set_description(g.text.as_str());
    st
}

fn skipped(message: String) -> TestCaseStatus {
    let mut st = TestCaseStatus::skipped();
    st.set_message(message);
    st
}

/// How the load ended: an interrupted run is an error (its gates saw only
/// part of the plan); a designed stop (a stress breach) is judged by its gates.
fn completed(s: &Summary, suite: &str) -> TestCase {
    let status = if s.interrupted {
        let mut st = TestCaseStatus::non_success(NonSuccessKind::Error);
        st.set_type("INTERRUPTED");
        st.set_message(format!(
            "interrupted: {}",
            s.stopped_reason
                .as_deref()
                .unwrap_or("the load ended before its plan")
        ));
        st
    } else {
        TestCaseStatus::success()
    };
    let mut c = TestCase::new("run completed", status);
    c.set_classname(format!("{suite}.run"));
    let secs = s.totals.duration_s;
    if secs.is_finite() && secs >= 0.0 {
        c.set_time(Duration::from_secs_f64(secs));
    }
    c.add_property(Property::new("kind", "run"));
    if let Some(why) = &s.stopped_reason {
        c.set_system_out(why.as_str());
    }
    c
}

/// Refuse a `--junit` path that cannot be written before the load starts,
/// not hours later: its folder must exist.
pub fn check_path(path: &Path) -> Result<(), String> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if path.is_dir() {
        return Err(format!("--junit {}: is a directory", path.display()));
    }
    if !parent.is_dir() {
        return Err(format!(
            "--junit {}: folder {} does not exist",
            path.display(),
            parent.display()
        ));
    }
    Ok(())
}
