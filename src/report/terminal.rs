//! The end-of-run summary as plain text: per phase, the budgets, the
//! shape's verdict in brief (knee and cause, overload checks, spike
//! recovery, leak trends), then every gate and the result.

use std::fmt::Write as _;

use super::table::{self, text_row, Pct, BRIEF};
use super::width::{fit, wrap, COLUMNS};
use crate::budgets::Status;
use crate::judge::summary::{Percentiles, ScopeSummary, ServerSideStatus};
use crate::judge::trend::per_hour;
use crate::judge::{LatencySplit, StressResult, Summary, Verdicts};
use crate::vocab::{ShapeKind, WindowStats, WARMUP};

/// A latency in ms, in the unit that reads best.
pub(crate) fn fmt_ms(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.1}s", v / 1000.0)
    } else if v >= 100.0 {
        format!("{v:.0}ms")
    } else {
        format!("{v:.2}ms")
    }
}

/// Render the summary for a terminal or a log.
pub fn render(s: &Summary) -> String {
    let mut o = String::new();
    header(&mut o, s);
    phase_table(&mut o, s);
    request_table(&mut o, s);
    iteration_table(&mut o, s);
    if let Some(t) = &s.errors {
        super::errors::terminal(&mut o, t);
    }
    service_time(&mut o, s);
    slowest_trace(&mut o, s);
    threads_by_phase(&mut o, s);
    database_by_phase(&mut o, s);
    let mut judged = String::new();
    knee(&mut judged, s);
    if let Some(v) = &s.verdicts {
        verdicts(&mut judged, v);
    }
    budgets(&mut judged, s);
    for n in &s.notes {
        let _ = writeln!(judged, "note: {n}");
    }
    server_side(&mut judged, s);
    gates(&mut judged, s);
    // What an interrupted run met, it met only up to the stop: not a PASS.
    if s.interrupted {
        judged = met_not_pass(&judged);
    }
    o.push_str(&judged);
    let _ = writeln!(o, "\nresult: {}", result(s));
    // Tables fit by design; prose (notes, verdicts, gates) wraps here.
    wrap(&o, COLUMNS)
}

/// Every whole word `PASS` as `met` (an interrupted run passes nothing).
pub(crate) fn met_not_pass(text: &str) -> String {
    super::width::replace_words(text, "PASS", "met ")
}

/// A stress run's knee and first breaking step, marked at the end of a phase's line.
fn phase_mark(s: &Summary, phase: &str) -> &'static str {
    let st = s.stress.as_ref();
    if st.and_then(|st| st.first_breach.as_deref()) == Some(phase) {
        "  ← first breach"
    } else if st.and_then(|st| st.knee.as_deref()) == Some(phase) {
        "  ← knee"
    } else {
        ""
    }
}

/// One line per phase of the thread table, only with thread evidence.
fn threads_by_phase(o: &mut String, s: &Summary) {
    if s.threads_by_phase.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "\nthreads by phase (each phase's most contended dump; JFR where recorded):"
    );
    let w = s
        .threads_by_phase
        .iter()
        .map(|r| r.phase.len())
        .max()
        .unwrap_or(0);
    for r in &s.threads_by_phase {
        let mark = phase_mark(s, &r.phase);
        let _ = writeln!(
            o,
            "  {:w$}  {} · {}{mark}",
            r.phase,
            r.dump_text(),
            r.jfr_text()
        );
    }
}

/// One line per phase of the database table, only with a database collector:
/// lock waiters, connections in use, the oldest transaction, the top wait,
/// and the blocking chain where there was one.
fn database_by_phase(o: &mut String, s: &Summary) {
    if s.database_by_phase.is_empty() {
        return;
    }
    let _ = writeln!(o, "\ndatabase by phase (postgres collector):");
    let w = s
        .database_by_phase
        .iter()
        .map(|r| r.phase.len())
        .max()
        .unwrap_or(0);
    for r in &s.database_by_phase {
        let mark = phase_mark(s, &r.phase);
        let pct = r
            .max_connections_used_pct
            .map(|p| format!("{p:.0}%"))
            .unwrap_or_else(|| "-".into());
        let top = r
            .top_waits
            .first()
            .map(|w| format!(" · top wait {} {:.1}", w.wait, w.backends))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "  {:w$}  {} waiting for a lock · connections {pct} · oldest xact {:.1} s{top}{mark}",
            r.phase,
            r.max_waiting_lock,
            r.max_oldest_xact_s.unwrap_or(0.0),
        );
        if let Some(c) = &r.lock_chain {
            let _ = writeln!(o, "  {:w$}  └ {c}", "");
        }
    }
}

/// Said whenever the server side was not fully seen: the causes and leak
/// verdicts above rest on it.
fn server_side(o: &mut String, s: &Summary) {
    let ss = s.server_side();
    if ss.status != ServerSideStatus::Ok {
        let _ = writeln!(o, "{}", ss.text);
    }
}

/// The result in words: never PASS for an interrupted run, and a FAIL names
/// the gates behind it.
pub fn result(s: &Summary) -> String {
    let failed: Vec<String> = s
        .failed_gates()
        .map(|g| match g.status {
            Status::NoData => format!("NO DATA {}", g.text),
            _ => g.text.clone(),
        })
        .collect();
    if s.interrupted {
        format!(
            "INTERRUPTED — budgets as measured up to the stop{}",
            if failed.is_empty() {
                String::new()
            } else {
                format!(" ({} gate(s) failed)", failed.len())
            }
        )
    } else if s.passed {
        "PASS".into()
    } else if failed.is_empty() {
        "FAIL".into()
    } else {
        format!("FAIL — {}", failed.join("; "))
    }
}

/// Every gate the result depends on, one line each.
/// The gates beyond the budgets (listed just above): the knee against
/// `expect_capacity` and the shape's verdict checks.
fn gates(o: &mut String, s: &Summary) {
    let others: Vec<_> = s.gates.iter().filter(|g| g.kind != "budget").collect();
    if others.is_empty() {
        return;
    }
    let _ = writeln!(o, "\ngates:");
    for g in others {
        let _ = writeln!(o, "  {}", g.line());
    }
}

/// The run's name, target and model; why it stopped early, if it did;
/// how its setup and teardown went, when it has them.
fn header(o: &mut String, s: &Summary) {
    let m = &s.meta;
    let _ = writeln!(
        o,
        "\nbrunt · {} · {} · {:?} model{}{}",
        m.name,
        m.target,
        m.model,
        m.protocol
            .as_ref()
            .map(|p| format!(" · {p}"))
            .unwrap_or_default(),
        if m.shard_count > 1 {
            format!(" · shard {}/{}", m.shard_index + 1, m.shard_count)
        } else {
            String::new()
        }
    );
    if s.interrupted {
        let _ = writeln!(
            o,
            "interrupted: {}",
            s.stopped_reason
                .as_deref()
                .unwrap_or("the load ended early")
        );
    } else if let Some(why) = &s.stopped_reason {
        // A designed stop (stress stop_on_breach) is not an interruption.
        let _ = writeln!(o, "stopped: {why}");
    }
    for (what, r) in [("setup", &s.setup), ("teardown", &s.teardown)] {
        if let Some(r) = r {
            let _ = writeln!(o, "{}", r.line(what));
        }
    }
}

/// One row per phase that saw traffic, then the whole run.
/// Within 80 columns: the brief latency set (p99.9 is in `summary.json`
/// and the page), errors (dropped included) and shed as counts; what the
/// errors were is the errors table's.
fn phase_table(o: &mut String, s: &Summary) {
    o.push('\n');
    let mut heads = vec![("target", 7), ("requests", 8), ("rate/s", 7)];
    heads.extend(table::heads(&BRIEF).map(|h| (h, 7)));
    heads.extend([("errors", 6), ("shed", 6)]);
    text_row(o, ("phase", 9), &heads, "");
    for p in &s.phases {
        if p.requests + p.dropped > 0 {
            phase_row(o, p);
        }
    }
    phase_row(o, &s.totals);
    if s.phases.iter().any(|p| p.name == WARMUP && p.requests > 0) {
        let _ = writeln!(
            o,
            "warm-up (not judged): sent, but no budget or verdict reads it"
        );
    }
    if let Some(line) = refreshes(s) {
        let _ = writeln!(o, "{line}");
    }
    for p in s.phases.iter().filter(|p| p.abandoned) {
        let _ = writeln!(
            o,
            "{}: begun, then abandoned at the breach (not judged)",
            p.name
        );
    }
    if s.totals.shed > 0 || matches!(s.meta.shape, ShapeKind::Overload { .. }) {
        ok_vs_shed(o, s);
    }
}

/// Runs with shed answers (and every overload run): admitted and shed
/// latency apart, phase by phase and for the run, so fast 503s do not make
/// a phase's p50 read better than the baseline's; the table above is said
/// to be both together.
fn ok_vs_shed(o: &mut String, s: &Summary) {
    if s.totals.shed > 0 {
        let _ = writeln!(
            o,
            "(latency above: every answer, ok and shed together; apart below)"
        );
    }
    let _ = writeln!(
        o,
        "
{:<12} {:>9} {:>9} {:>9}   {:>9} {:>9} {:>9}",
        "phase", "ok", "ok p50", "ok p99", "shed", "shed p50", "shed p99"
    );
    let cell = |p: &ScopeSummary, class: &str| match p.by_class.get(class) {
        Some(c) if c.count > 0 => (
            c.count.to_string(),
            fmt_ms(c.latency.p50),
            fmt_ms(c.latency.p99),
        ),
        _ => ("0".into(), "-".into(), "-".into()),
    };
    for p in s
        .phases
        .iter()
        .filter(|p| p.requests > 0)
        .chain([&s.totals])
    {
        let (ok, ok50, ok99) = cell(p, "ok");
        let (sh, sh50, sh99) = cell(p, "shed");
        let _ = writeln!(
            o,
            "{:<12} {ok:>9} {ok50:>9} {ok99:>9}   {sh:>9} {sh50:>9} {sh99:>9}",
            phase_name(&p.name)
        );
    }
}

/// Credentials refreshed and answers sent again after one (`retried`, not
/// errors), per phase; `None` when no step refreshed.
pub fn refreshes(s: &Summary) -> Option<String> {
    let t = &s.totals;
    if t.refreshes == 0 && t.retried == 0 {
        return None;
    }
    let per: Vec<String> = s
        .phases
        .iter()
        .filter(|p| p.refreshes + p.retried > 0)
        .map(|p| format!("{} {}", phase_name(&p.name), p.refreshes))
        .collect();
    Some(format!(
        "credentials refreshed {} times ({}); {} answers were `retried` (sent again once after a refresh, not errors)",
        t.refreshes,
        per.join(", "),
        t.retried
    ))
}

/// `warm-up` for the warm-up phase (sent, judged by nothing).
fn phase_name(name: &str) -> &str {
    if name == WARMUP {
        "warm-up"
    } else {
        name
    }
}

fn phase_row(o: &mut String, p: &ScopeSummary) {
    let count = |n: u64| if n == 0 { "-".into() } else { n.to_string() };
    let mut cells = vec![
        (fit(&p.label, 7), 7),
        (p.requests.to_string(), 8),
        (format!("{:.1}", p.rps), 7),
    ];
    cells.extend(ms_cells(&p.latency, &BRIEF));
    cells.extend([(count(p.errors + p.dropped), 6), (count(p.shed), 6)]);
    text_row(o, (&fit(phase_name(&p.name), 9), 9), &cells, "");
}

/// A row's latency cells, 7 wide (`fmt_ms` writes at most 7), in the
/// terminal's unit style.
fn ms_cells(p: &Percentiles, cols: &[Pct]) -> Vec<(String, usize)> {
    let cells = table::latency(p, cols, fmt_ms);
    cells.into_iter().map(|c| (c, 7)).collect()
}

/// A table of one row per request or scenario: its name (20 wide, longer
/// ones cut), a count, the brief latency columns, and what went wrong.
fn brief_table<'a>(
    o: &mut String,
    (name, count, tail): (&str, &str, &str),
    rows: impl Iterator<Item = (&'a str, u64, &'a Percentiles, String)>,
) {
    o.push('\n');
    let mut heads = vec![(count, 8)];
    heads.extend(table::heads(&BRIEF).map(|h| (h, 7)));
    text_row(o, (name, 20), &heads, tail);
    for (name, n, l, tail) in rows {
        let mut cells = vec![(n.to_string(), 8)];
        cells.extend(ms_cells(l, &BRIEF));
        text_row(o, (&fit(name, 20), 20), &cells, &tail);
    }
}

/// One row per named request, when the profile names them.
fn request_table(o: &mut String, s: &Summary) {
    if s.requests.is_empty() {
        return;
    }
    let rows = s.requests.iter().map(|r| {
        let shed = if r.shed > 0 {
            format!(" (+{} shed)", r.shed)
        } else {
            String::new()
        };
        (
            r.name.as_str(),
            r.requests,
            &r.latency,
            format!("{}{shed}", r.errors),
        )
    });
    brief_table(o, ("request", "requests", "errors"), rows);
}

/// One row per scenario: its whole iterations, from the intended start.
fn iteration_table(o: &mut String, s: &Summary) {
    if s.iterations.is_empty() {
        return;
    }
    let rows = s.iterations.iter().map(|it| {
        let failed = it.failed.to_string();
        (it.scenario.as_str(), it.iterations, &it.latency, failed)
    });
    brief_table(o, ("iterations", "count", "failed"), rows);
}

/// Where latency counts from, and the service time and the wait for one
/// of brunt's connections beside it.
fn service_time(o: &mut String, s: &Summary) {
    let t = &s.totals;
    if t.requests > 0 {
        let _ = writeln!(
            o,
            "\nlatency counts from each request's intended start;\nservice time (from the actual send) p99 = {}",
            fmt_ms(t.service.p99)
        );
    }
    if let Some(w) = s.connection_wait.as_ref().filter(|w| w.notable()) {
        let _ = writeln!(
            o,
            "wait for one of brunt's connections before the send: p99 = {} ({:.0} % of the time requests took)",
            fmt_ms(w.wait_p99_ms),
            w.share * 100.0
        );
    }
}

/// The slowest traced request of the worst phase (highest p99 among the
/// phases that traced any), to look up in the tracing backend.
fn slowest_trace(o: &mut String, s: &Summary) {
    let Some(t) = &s.traces else { return };
    let worst = s
        .phases
        .iter()
        .filter(|p| t.slowest_of(&p.name).is_some())
        .max_by(|a, b| a.latency.p99.total_cmp(&b.latency.p99));
    let Some((p, r)) = worst.and_then(|p| Some((p, t.slowest_of(&p.name)?))) else {
        let _ = writeln!(
            o,
            "traces: {} requests sent with {}, none answered",
            t.sent, t.header
        );
        return;
    };
    let _ = writeln!(
        o,
        "slowest trace of {} (worst p99): {} ({}, {}, at {:.1}s){}",
        p.name,
        r.trace_id,
        fmt_ms(r.latency_ms),
        r.class.name(),
        r.at_s,
        t.link(&r.trace_id)
            .map(|l| format!(" {l}"))
            .unwrap_or_default()
    );
}

/// The knee of a stress run and the expected capacity. The shape's verdict
/// repeats the knee with its cause: then only the expectation is printed here.
fn knee(o: &mut String, s: &Summary) {
    let Some(st) = &s.stress else { return };
    let knee_in_verdict = s.verdicts.as_ref().is_some_and(|v| v.stress.is_some());
    let unit = s.meta.model.unit();
    if !knee_in_verdict {
        let _ = writeln!(o);
        knee_line(o, st, unit);
    }
    if let Some(want) = st.expect_capacity {
        let _ = writeln!(
            o,
            "expected capacity {want}{unit}: {}",
            if st.knee_level.is_some_and(|k| k >= want) {
                "PASS"
            } else {
                "FAIL"
            }
        );
    }
}

fn knee_line(o: &mut String, st: &StressResult, unit: &str) {
    match (&st.knee, &st.first_breach) {
        (Some(k), Some(b)) => {
            let why: Vec<String> = st
                .breached
                .iter()
                .map(|v| format!("{} (measured {})", v.budget, v.shown))
                .collect();
            let _ = writeln!(
                o,
                "knee: {k} ({}) is the last step within budget; {b} ({}) broke {}",
                level(st.knee_level, unit),
                level(st.first_breach_level, unit),
                why.join(", ")
            );
        }
        (Some(k), None) => {
            let _ = writeln!(
                o,
                "knee: not reached — every step up to {k} ({}) met the budgets",
                level(st.knee_level, unit)
            );
        }
        (None, Some(b)) => {
            let _ = writeln!(
                o,
                "knee: below the first step — {b} already broke the budgets"
            );
        }
        (None, None) => {
            let _ = writeln!(o, "knee: no step completed");
        }
    }
}

/// Every budget, PASS, FAIL or NO DATA, with its note.
fn budgets(o: &mut String, s: &Summary) {
    if s.budgets.is_empty() {
        return;
    }
    let _ = writeln!(o, "\nbudgets:");
    for v in &s.budgets {
        let _ = writeln!(
            o,
            "  {v}{}",
            v.note
                .as_ref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default()
        );
    }
}

/// The shape's verdict in brief; `summary.json` and `report.html` carry it in full.
fn verdicts(o: &mut String, v: &Verdicts) {
    let heads = v.headlines();
    if heads.is_empty() {
        return;
    }
    let _ = writeln!(o, "\nverdict:");
    for h in heads {
        let _ = writeln!(o, "  {h}");
    }
    // Its checks are gates: listed once, under `gates:`.
    if let Some(ov) = &v.overload {
        let split = |l: Option<LatencySplit>| {
            l.map(|l| {
                format!(
                    "p50 {} p99 {} ({})",
                    fmt_ms(l.p50_ms),
                    fmt_ms(l.p99_ms),
                    l.count
                )
            })
            .unwrap_or_else(|| "none".into())
        };
        let _ = writeln!(
            o,
            "    overload latency: ok {} · shed {}",
            split(ov.ok_latency),
            split(ov.shed_latency)
        );
    }
    if let Some(so) = &v.soak {
        // What grows, named, before the series it shows in.
        for g in &so.grows {
            let _ = writeln!(o, "    GROWS {}", g.text);
        }
        for t in so.trends.iter().filter(|t| t.note.is_none()) {
            let _ = writeln!(
                o,
                "    {:<4} {:<28} {} (R² {:.2}){}",
                if t.flagged { "LEAK" } else { "ok" },
                t.series,
                per_hour(&t.series, t.slope_per_hour),
                t.r2,
                t.threshold_per_hour
                    .map(|l| format!(", limit {}", per_hour(&t.series, l)))
                    .unwrap_or_default()
                    + &t.reason
                        .as_ref()
                        .map(|r| format!(" — {r}"))
                        .unwrap_or_default()
            );
        }
    }
}

/// `m:ss` (or `h:mm:ss`).
pub(crate) fn clock(s: u64) -> String {
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// A plain progress line's start: `[0:05/0:20  25%]`, the time run of the
/// time planned and the share done.
pub fn progress_prefix(elapsed_s: u64, planned_s: u64) -> String {
    let pct = (elapsed_s * 100)
        .checked_div(planned_s)
        .unwrap_or(100)
        .min(100);
    format!("[{}/{} {pct:>3}%]", clock(elapsed_s), clock(planned_s))
}

/// The plain progress line of one second, as `brunt run` prints it when
/// stderr is not a terminal (CI logs) and `brunt watch` when piped.
/// One second in a line: counts that are zero are left out (a calm second
/// fits 80 columns with the `[0:05/0:20  25%]` prefix), and with shed
/// answers the ok and shed p99 are apart (fast 503s are not fast service).
pub fn progress_line(phase: &str, label: &str, s: &WindowStats) -> String {
    let mut line = format!(
        "{phase} {label} | offered {}/s done {}/s | ",
        s.offered, s.completed
    );
    let ms = |us: u64| fmt_ms(us as f64 / 1000.0);
    if s.shed > 0 && s.completed > 0 {
        line.push_str(&format!(
            "p99 ok {} shed {}",
            if s.ok > 0 {
                ms(s.ok_p99_us)
            } else {
                "—".into()
            },
            ms(s.shed_p99_us)
        ));
    } else {
        line.push_str(&format!("p99 {}", p99_shown(s)));
    }
    line.push_str(&format!(" | ok {}", s.ok));
    for (n, what) in [(s.shed, "shed"), (s.errors, "err")] {
        if n > 0 {
            line.push_str(&format!(" {what} {n}"));
        }
    }
    if s.in_flight > 0 {
        line.push_str(&format!(" | {} in flight", s.in_flight));
    }
    line
}

/// The window's p99 for the progress line: a dash when nothing was answered
/// in it (a stalled server is not a fast one).
fn p99_shown(s: &WindowStats) -> String {
    if s.completed == 0 {
        "—".to_string()
    } else {
        format!("{:.1}ms", s.p99_us as f64 / 1000.0)
    }
}

fn level(l: Option<f64>, unit: &str) -> String {
    l.map(|v| format!("{v}{unit}"))
        .unwrap_or_else(|| "-".into())
}

#[cfg(test)]
mod tests {
    use super::p99_shown;
    use crate::vocab::WindowStats;

    #[test]
    fn progress_p99_is_a_dash_without_answers() {
        let mut s = WindowStats {
            second: 3,
            phase: 0,
            offered: 50,
            completed: 0,
            ok: 0,
            shed: 0,
            errors: 0,
            in_flight: 50,
            p50_us: 0,
            p99_us: 0,
            max_us: 0,
            ..Default::default()
        };
        assert_eq!(p99_shown(&s), "—");
        s.completed = 10;
        s.p99_us = 2_012_345;
        assert_eq!(p99_shown(&s), "2012.3ms");
    }

    #[test]
    fn the_progress_line_leaves_zeros_out_and_keeps_ok_and_shed_apart() {
        let s = WindowStats {
            offered: 12_000,
            completed: 11_950,
            ok: 6_000,
            shed: 5_900,
            errors: 50,
            in_flight: 1_234,
            p99_us: 40_000,
            ok_p99_us: 41_500,
            shed_p99_us: 1_200,
            ..Default::default()
        };
        let line = super::progress_line("overload", "12000/s", &s);
        assert!(line.contains("p99 ok 41.50ms shed 1.20ms"), "{line}");
        assert!(line.contains("| offered 12000/s"), "{line}");
        assert!(
            line.ends_with("shed 5900 err 50 | 1234 in flight"),
            "{line}"
        );
        let calm = WindowStats {
            offered: 800,
            completed: 800,
            ok: 800,
            p99_us: 2_500,
            ..Default::default()
        };
        let line = format!(
            "[10:05/20:00  50%] {}",
            super::progress_line("step-10", "800/s", &calm)
        );
        assert!(
            line.ends_with("p99 2.5ms | ok 800"),
            "zeros left out: {line}"
        );
        let n = line.chars().count();
        assert!(n <= 80, "a calm second fits 80 columns: {n}: {line}");
    }
}
