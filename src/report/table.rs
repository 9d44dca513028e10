//! The tables of the terminal summary and of `report.html`, laid out in one
//! place: a row is its name and its cells (the latency columns picked from
//! its percentiles by [`latency`]); [`text_row`] lines it up for a
//! terminal, [`html_row`] and [`html_head`] write it as `<tr>`.

use std::fmt::Write as _;

use crate::judge::summary::Percentiles;

/// A latency column, as a table's header names it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Pct {
    P50,
    P95,
    P99,
    P999,
    Max,
}

/// p50, p95, p99, p99.9, max: the full set.
pub(crate) const FULL: [Pct; 5] = [Pct::P50, Pct::P95, Pct::P99, Pct::P999, Pct::Max];
/// p50, p95, p99, max: the brief set.
pub(crate) const BRIEF: [Pct; 4] = [Pct::P50, Pct::P95, Pct::P99, Pct::Max];

impl Pct {
    pub(crate) fn head(self) -> &'static str {
        match self {
            Pct::P50 => "p50",
            Pct::P95 => "p95",
            Pct::P99 => "p99",
            Pct::P999 => "p99.9",
            Pct::Max => "max",
        }
    }
    fn of(self, p: &Percentiles) -> f64 {
        match self {
            Pct::P50 => p.p50,
            Pct::P95 => p.p95,
            Pct::P99 => p.p99,
            Pct::P999 => p.p999,
            Pct::Max => p.max,
        }
    }
}

/// The cells of `cols`, each shown by `show` (each renderer has its unit style).
pub(crate) fn latency(p: &Percentiles, cols: &[Pct], show: impl Fn(f64) -> String) -> Vec<String> {
    cols.iter().map(|c| show(c.of(p))).collect()
}

/// The headers of `cols`.
pub(crate) fn heads(cols: &[Pct]) -> impl Iterator<Item = &'static str> + '_ {
    cols.iter().map(|c| c.head())
}

/// One line of a text table: `name` left-aligned in `width`, each cell
/// right-aligned in its own width after a space, then `tail` after two.
pub(crate) fn text_row<S: AsRef<str>>(
    o: &mut String,
    (name, width): (&str, usize),
    cells: &[(S, usize)],
    tail: &str,
) {
    let mut line = format!("{name:<width$}");
    for (c, w) in cells {
        let _ = write!(line, " {:>w$}", c.as_ref());
    }
    let _ = write!(line, "  {tail}");
    let _ = writeln!(o, "{}", line.trim_end());
}

/// A header row: the first column (the rows' names) left-aligned.
pub(crate) fn html_head<'a>(o: &mut String, heads: impl IntoIterator<Item = &'a str>) {
    o.push_str("<tr>");
    for (i, h) in heads.into_iter().enumerate() {
        let l = if i == 0 { " class=\"l\"" } else { "" };
        let _ = write!(o, "<th{l}>{h}</th>");
    }
    o.push_str("</tr>");
}

/// A row of cells (already escaped): the first, the row's name, left-aligned.
pub(crate) fn html_row<S: AsRef<str>>(o: &mut String, cells: &[S]) {
    o.push_str("<tr>");
    for (i, c) in cells.iter().enumerate() {
        let l = if i == 0 { " class=\"l\"" } else { "" };
        let _ = write!(o, "<td{l}>{}</td>", c.as_ref());
    }
    let _ = writeln!(o, "</tr>");
}
