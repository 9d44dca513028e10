//! `report.html`'s traced requests (`target.trace`): the slowest of each
//! phase listed right under the latency chart, their ids linked through
//! `trace_url` when the profile gives one, and the slowest traced request
//! of each second as a line on that chart.

use super::charts::fmt_ms;
use super::charts::Line;
use super::esc;
use crate::judge::traces::TracesSummary;
use crate::judge::Summary;
use crate::report::table::{html_head, html_row};
use crate::rundir::RunData;

/// The latency chart's line of the slowest traced request per second.
pub(super) fn worst_line(data: &RunData) -> Option<Line> {
    let t = data.traces.as_ref()?;
    (!t.worst_by_second.is_empty()).then(|| Line {
        name: "slowest traced request".into(),
        pts: t
            .worst_by_second
            .iter()
            .map(|(s, r)| (*s as f64 + 0.5, r.latency_ms))
            .collect(),
    })
}

/// The table of each phase's slowest traced requests, in plan order.
pub(super) fn section(o: &mut String, s: &Summary) {
    let Some(t) = &s.traces else { return };
    o.push_str(&format!(
        "<h2 id=\"traces\">Slowest traced requests</h2><p class=\"meta\">{} requests carried a <code>{}</code> header ({} of the requests); the slowest of each phase by latency from the intended start, to look up in the tracing backend</p>",
        t.sent,
        esc(&t.header),
        esc(&t.sample.to_string())
    ));
    if t.slowest_by_phase.is_empty() {
        return;
    }
    o.push_str("<table>");
    html_head(
        o,
        [
            "phase", "trace id", "latency", "class", "sent at", "request",
        ],
    );
    let phases = s.phases.iter().map(|p| p.name.as_str());
    // Plan order first; a phase the summary does not list (none today) after.
    let known: Vec<&str> = phases.collect();
    let rest = t
        .slowest_by_phase
        .keys()
        .map(String::as_str)
        .filter(|p| !known.contains(p));
    for phase in known.iter().copied().chain(rest) {
        for r in t.slowest_by_phase.get(phase).into_iter().flatten() {
            html_row(
                o,
                &[
                    esc(phase),
                    id_cell(t, &r.trace_id),
                    fmt_ms(&r.latency_ms),
                    esc(r.class.name()),
                    format!("{:.1} s", r.at_s),
                    esc(&r.request),
                ],
            );
        }
    }
    o.push_str("</table>");
}

/// The id, linked when there is a `trace_url`.
fn id_cell(t: &TracesSummary, id: &str) -> String {
    match t.link(id) {
        Some(url) => format!("<a href=\"{}\"><code>{}</code></a>", esc(&url), esc(id)),
        None => format!("<code>{}</code>", esc(id)),
    }
}
