//! The errors table (`summary.json`'s `errors`) rendered: for the terminal
//! within 80 columns (a long request name or message abbreviated with `…`)
//! and as the live view's one line of the most frequent errors so far
//! (`report.html`'s table with every sample body is `html::errors`).

use std::fmt::Write as _;

use super::width::fit;
use crate::judge::errors::ErrorsTable;
use crate::metrics::errors::{ErrorKey, ErrorTally};

/// Sample bodies shown in the terminal (all of them go to the page).
const TERMINAL_SAMPLES: usize = 3;

/// The table for a terminal: every line at most 80 columns.
pub fn terminal(o: &mut String, t: &ErrorsTable) {
    let _ = writeln!(o, "\nerrors (by what went wrong):");
    let _ = writeln!(
        o,
        "  {:>8}  {:<13} {:<16} what",
        "count", "class", "request"
    );
    for r in &t.rows {
        let _ = writeln!(
            o,
            "  {:>8}  {:<13} {:<16} {}",
            r.count,
            fit(&r.class, 13),
            fit(&r.request, 16),
            fit(&r.what.text(), 80 - 43)
        );
    }
    for s in t.samples.iter().take(TERMINAL_SAMPLES) {
        let head = format!("  sample {} · {}: ", fit(&s.request, 16), s.what.text());
        let head = fit(&head, 50);
        let room = 80 - head.chars().count();
        let _ = writeln!(o, "{head}{}", fit(s.body.trim(), room));
    }
}

/// The live view's line: the most frequent errors so far, as many as fit
/// in `width` columns after `errors   ` (`None` when there are none).
pub fn live_line(t: &ErrorTally, requests: &[String], width: usize) -> Option<String> {
    let mut rows: Vec<(&ErrorKey, u64)> = t.counts.iter().map(|(k, n)| (k, *n)).collect();
    if rows.is_empty() {
        return None;
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.1));
    let several = requests.len() > 1;
    let mut line = String::new();
    for (k, n) in rows {
        let mut part = format!("{} ×{n}", k.what.text());
        if several {
            if let Some(r) = requests.get(k.request) {
                part = format!("{} {part}", fit(r, 12));
            }
        }
        let sep = if line.is_empty() { "" } else { " · " };
        if line.chars().count() + sep.len() + part.chars().count() > width {
            if line.is_empty() {
                line = fit(&part, width);
            }
            break;
        }
        line.push_str(sep);
        line.push_str(&part);
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::errors::{ErrorRow, ErrorSampleRow};
    use crate::metrics::errors::What;

    #[test]
    fn the_terminal_table_fits_80_columns_whatever_it_holds() {
        let long = "x".repeat(200);
        let t = ErrorsTable {
            rows: vec![ErrorRow {
                class: "connect_error".into(),
                request: long.clone(),
                what: What::Message(long.clone().into()),
                count: 12_345_678,
            }],
            samples: vec![ErrorSampleRow {
                class: "http_error".into(),
                request: long.clone(),
                what: What::Status(500),
                body: format!("line one\n{long}"),
            }],
        };
        let mut o = String::new();
        terminal(&mut o, &t);
        for l in o.lines() {
            assert!(
                l.chars().count() <= 80,
                "{} columns: {l}",
                l.chars().count()
            );
        }
        assert!(o.contains("12345678"), "{o}");
        assert!(o.contains("line one x"), "newlines flattened: {o}");
        assert_eq!(fit("abc", 2), "a…");
    }
}
