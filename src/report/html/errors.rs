//! `report.html`'s errors table (`summary.json`'s `errors`) with every
//! sample body.

use std::fmt::Write as _;

use super::esc;
use crate::judge::errors::ErrorsTable;
use crate::report::table::{html_head, html_row};

/// The table and every sample body, for `report.html`.
pub(super) fn section(o: &mut String, t: &ErrorsTable) {
    o.push_str("<h2 id=\"errors\">Errors</h2><p class=\"meta\">every answer not ok, by class, request and what went wrong: a class's rows add up to its count</p><table>");
    html_head(o, ["class", "request", "what", "count"]);
    for r in &t.rows {
        html_row(
            o,
            &[
                esc(&r.class),
                esc(&r.request),
                esc(&r.what.text()),
                r.count.to_string(),
            ],
        );
    }
    o.push_str("</table>");
    if t.samples.is_empty() {
        return;
    }
    o.push_str("<p class=\"meta\">sample bodies (the first of each kind, up to 512 bytes):</p>");
    for s in &t.samples {
        let _ = writeln!(
            o,
            "<div class=\"meta\">{} · {} · {}</div><pre class=\"sample\">{}</pre>",
            esc(&s.class),
            esc(&s.request),
            esc(&s.what.text()),
            esc(&s.body)
        );
    }
}
