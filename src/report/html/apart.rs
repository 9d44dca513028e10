//! What the page keeps apart so it reads right: ok and shed latency (a
//! table per phase and for the run, and a chart per second — fast 503s are
//! not fast service), the wait for brunt's own connections beside service
//! time, and a stress run stopped at its breach (drawn as far as the
//! breaching step, no band for a step that never ran, the step begun after
//! the breach shown as abandoned, not failed).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::charts::{esc, fmt_ms, log, Band, Line};
use super::{time_chart, ReportError};
use crate::judge::summary::ScopeSummary;
use crate::judge::{StepRow, StopKind, Summary};
use crate::metrics::series::Second;

/// Admitted and shed latency apart, phase by phase and for the run; the
/// phase table's latency is said to be both together.
pub(super) fn ok_vs_shed(o: &mut String, s: &Summary) {
    let _ = writeln!(o, "<h3>Admitted vs shed latency</h3><p class=\"meta\">fast 503s are not fast service: ok and shed answers apart (the phase table's latency is every answer, ok and shed together)</p><table><tr><th class=\"l\">phase</th><th>ok</th><th>ok p50</th><th>ok p99</th><th>shed</th><th>shed p50</th><th>shed p99</th></tr>");
    let cell = |p: &ScopeSummary, class: &str| match p.by_class.get(class) {
        Some(c) if c.count > 0 => format!(
            "<td>{}</td><td>{}</td><td>{}</td>",
            c.count,
            fmt_ms(&c.latency.p50),
            fmt_ms(&c.latency.p99)
        ),
        _ => "<td>0</td><td>-</td><td>-</td>".into(),
    };
    let phases = s.phases.iter().filter(|p| p.requests > 0);
    for p in phases.chain([&s.totals]) {
        let _ = writeln!(
            o,
            "<tr><td class=\"l\">{}</td>{}{}</tr>",
            esc(&p.name),
            cell(p, "ok"),
            cell(p, "shed")
        );
    }
    let _ = writeln!(o, "</table>");
}

/// The wait for one of brunt's connections before the send, beside the
/// service time (and, when it makes the tail, said so).
pub(super) fn connection_wait(o: &mut String, s: &Summary) {
    let Some(w) = &s.connection_wait else { return };
    let _ = writeln!(
        o,
        "<p class=\"meta\">wait for one of brunt's connections before the send: p99 {} ({:.0} % of the time requests took); service time p99 {}{}</p>",
        fmt_ms(&w.wait_p99_ms),
        w.share * 100.0,
        fmt_ms(&w.service_p99_ms),
        if w.dominates {
            format!(" — <b>{}</b>", esc(&w.text))
        } else {
            String::new()
        }
    );
}

/// Per second: ok p99 and shed p99 apart, when anything was shed.
pub(super) fn ok_shed_chart(
    o: &mut String,
    secs: &BTreeMap<u64, Second>,
    total: f64,
    bands: &[Band],
) -> Result<(), ReportError> {
    if secs.values().all(|r| r.shed == 0) {
        return Ok(());
    }
    let line = |name: &str, f: fn(&Second) -> Option<u64>| Line {
        name: name.into(),
        pts: secs
            .iter()
            .filter_map(|(t, r)| f(r).map(|us| (*t as f64 + 0.5, us as f64 / 1000.0)))
            .collect(),
    };
    let lines = vec![
        line("ok p99", |r| (r.ok > 0).then_some(r.ok_p99_us)),
        line("shed p99", |r| (r.shed > 0).then_some(r.shed_p99_us)),
        line("all answers p99 (combined)", |r| {
            (r.completed > 0).then_some(r.p99_us)
        }),
    ];
    let y_fmt = |v: &f64| fmt_ms(v);
    let chart = time_chart(
        "chart-ok-shed",
        "Admitted (ok) vs shed latency per second, p99 apart",
        "latency (log)",
        lines,
        &y_fmt,
        total,
        bands,
    );
    o.push_str(&log(&chart)?);
    Ok(())
}

/// Where the time charts end: at the end of the breaching step when a
/// stress run stopped there (what the stop gave up after it is no error
/// spike to draw), else `None`.
pub(super) fn drawn_until(s: &Summary) -> Option<f64> {
    if s.stop_kind != Some(StopKind::Breach) {
        return None;
    }
    let b = s.stress.as_ref()?.first_breach.as_ref()?;
    let p = s.meta.phases.iter().find(|p| &p.name == b)?;
    Some((p.start + p.duration).as_secs_f64())
}

/// Whether a phase of the plan gets a band: it ran (a stop leaves later
/// phases unreached) and was not abandoned at a breach.
pub(super) fn drawn(s: &Summary, phase: &str) -> bool {
    s.phases
        .iter()
        .find(|p| p.name == phase)
        .is_none_or(|p| p.duration_s > 0.0 && !p.abandoned)
}

/// A phase's name in the phase table.
pub(super) fn phase_cell(p: &ScopeSummary, name: String) -> String {
    if p.abandoned {
        format!("{name} (abandoned at the breach, not judged)")
    } else {
        name
    }
}

/// The budgets cell of a stress step.
pub(super) fn step_cell(r: &StepRow, pass_cell: impl Fn(bool) -> String) -> String {
    if r.abandoned {
        "<td class=\"l\">abandoned at the breach</td>".into()
    } else {
        pass_cell(r.within_budget)
    }
}
