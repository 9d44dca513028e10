//! `report.html`: one self-contained page (inline SVG charts drawn with
//! `plotters`' SVG backend, inline CSS, no script, no network) written at
//! the end of every run and by `brunt report DIR`.
//!
//! Top to bottom: the verdicts; latency percentiles per second with phase
//! bands, the service time, the p99 budgets and the slowest traced request
//! as lines, and the slowest traced requests' ids under it ([`traces`]); for a stress run
//! the knee chart (p99 and throughput against the offered rate, `knee`);
//! offered vs achieved rate; outcomes per second; ok and shed p99 apart per
//! second when anything was shed (with the other things kept apart so they
//! read right: [`apart`]); the latency
//! distribution per phase (merged histograms from `latency.hlog`); the
//! per-phase (and per-step) table; the errors table; budgets; the server side (CPU, memory,
//! connections, threads, findings) when `diagnostics/evidence.json` exists;
//! threads by phase (dumps and JFR, phase by phase) when there were any;
//! flame graphs when the run left JFR stacks (`flame`).
//!
//! Rendering only: the page is drawn from the [`Summary`] and the run
//! directory as [`crate::rundir::RunData`] read it; nothing here opens a
//! file ([`write`] hands the page to `rundir` to write).
//!
//! Every chart is an `<svg>` inside `<figure id="chart-…">`, so a test can
//! check each one is there. Charts keep a wide right margin: plotters
//! centres tick labels on their tick, and the last one would be clipped.

mod apart;
mod charts;
mod database;
mod errors;
mod flame;
mod growth;
mod knee;
mod server;
mod threads;
mod traces;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::table::{self, html_head, html_row, Pct, BRIEF, FULL};
use super::ReportError;
use crate::judge::summary::{Percentiles, ScopeSummary, ServerSideStatus};
use crate::judge::trend::per_hour;
use crate::judge::{
    CheckStatus, LatencySplit, OverloadVerdict, SoakVerdict, SpikeVerdict, StressVerdict, Summary,
    Verdicts,
};
use crate::metrics::series::Second;
use crate::metrics::CLASSES;
use crate::rundir::{self, data::Distributions, RunData};
use crate::vocab::Status;
use crate::vocab::{ShapeKind, WARMUP};
pub use charts::esc;
use charts::*;
use hdrhistogram::Histogram;
use server::server_section;

pub const REPORT_FILE: &str = rundir::REPORT_HTML;

/// Write `report.html` into the run directory (the one file this module
/// touches, written through `rundir`).
pub fn write(dir: &Path, s: &Summary, data: &RunData) -> Result<(), ReportError> {
    let html = render(s, data)?;
    rundir::write_atomic(&dir.join(REPORT_FILE), html.as_bytes())?;
    Ok(())
}

/// The latency lines of the distribution chart: per phase in plan order
/// (ok and shed answers apart when anything was shed: fast 503s would pull
/// a merged line below the baseline's; a step abandoned at a breach left
/// out), then the whole run.
fn distributions<'a>(s: &Summary, d: &'a Distributions) -> Vec<(String, &'a Histogram<u64>)> {
    let split = s.totals.shed > 0 || matches!(s.meta.shape, ShapeKind::Overload { .. });
    let mut out: Vec<(String, &Histogram<u64>)> = Vec::new();
    for p in s.phases.iter().filter(|p| !p.abandoned) {
        let Some(l) = d.phases.get(&p.name) else {
            continue;
        };
        match l.shed.as_ref().filter(|sh| split && !sh.is_empty()) {
            Some(sh) => {
                if let Some(ok) = &l.ok {
                    out.push((format!("{} ok", p.name), ok));
                }
                out.push((format!("{} shed", p.name), sh));
            }
            None => out.push((p.name.clone(), &l.all)),
        }
    }
    out.retain(|(_, h)| !h.is_empty());
    // Too many steps make an unreadable chart: the last six.
    if out.len() > 7 {
        out = out.split_off(out.len() - 6);
    }
    if !d.run.is_empty() {
        out.push(("all".into(), &d.run));
    }
    out
}

fn percentile_line(name: &str, h: &hdrhistogram::Histogram<u64>) -> Line {
    // Up to the resolution the sample count supports.
    let x_max = (h.len() as f64).log10().clamp(1.0, 5.0);
    let n = 120;
    let pts = (0..=n)
        .map(|k| {
            let x = x_max * k as f64 / n as f64;
            let q = 1.0 - 10f64.powf(-x);
            (x, h.value_at_quantile(q) as f64 / 1e6)
        })
        .collect();
    Line {
        name: name.into(),
        pts,
    }
}

const CSS: &str = "body{font-family:sans-serif;margin:24px;color:#222;max-width:1180px}
h1{margin-bottom:4px}h2{margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{color:#666}table{border-collapse:collapse;margin:8px 0;font-size:13px}
td,th{border:1px solid #ddd;padding:4px 8px;text-align:right}th{background:#f4f4f4}
td.l,th.l{text-align:left}td:first-child{white-space:nowrap}.pass{color:#1a7f37;font-weight:bold}.fail{color:#c62828;font-weight:bold}
.na{color:#888}.verdict{font-size:15px;margin:6px 0;padding:8px 12px;background:#f7f7fa;border-left:4px solid #3a5ba0}
.verdict.bad{border-left-color:#c62828}.verdict.good{border-left-color:#1a7f37}
figure{margin:12px 0}.note{color:#8a5a00}pre.sample{background:#f7f7f7;padding:6px;white-space:pre-wrap;max-width:1100px;font-size:12px}";

fn status_cell(st: CheckStatus) -> String {
    let cls = match st {
        CheckStatus::Pass => "pass",
        CheckStatus::Fail => "fail",
        CheckStatus::NotApplicable => "na",
    };
    format!("<td class=\"l {cls}\">{st}</td>")
}

/// A gate's or a budget's result; in an interrupted run a pass is only
/// "met up to the stop", never PASS.
fn gate_cell(st: Status, advisory: bool, interrupted: bool) -> String {
    let (cls, word) = match st {
        Status::Pass if interrupted => ("na", "met up to the stop"),
        Status::Pass => ("pass", "PASS"),
        Status::Fail => ("fail", "FAIL"),
        Status::NoData => ("fail", "NO DATA"),
    };
    format!(
        "<td class=\"l {cls}\">{word}{}</td>",
        if advisory { " (advisory)" } else { "" }
    )
}

/// Every gate the result depends on, failed ones first.
fn gate_table(o: &mut String, s: &Summary) {
    if s.gates.is_empty() {
        return;
    }
    let _ = writeln!(o, "<table id=\"gates\"><tr><th class=\"l\">gate</th><th class=\"l\">measured</th><th class=\"l\">expected</th><th class=\"l\">result</th></tr>");
    let failed = s.gates.iter().filter(|g| !g.holds());
    let held = s.gates.iter().filter(|g| g.holds());
    for g in failed.chain(held) {
        let _ = writeln!(
            o,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>{}</tr>",
            esc(&g.name),
            esc(&g.measured),
            esc(&g.expected),
            gate_cell(g.status, g.advisory, s.interrupted)
        );
    }
    let _ = writeln!(o, "</table>");
}

fn pass_cell(p: bool) -> String {
    status_cell(if p {
        CheckStatus::Pass
    } else {
        CheckStatus::Fail
    })
}

/// The page as a string, from the summary and the run directory as read.
pub fn render(s: &Summary, data: &RunData) -> Result<String, ReportError> {
    let (secs, total) = timeline(&data.seconds, s);
    let bands = phase_bands(s);
    let mut o = String::new();
    header(&mut o, s);
    verdict_section(&mut o, s);
    let mut list = String::new();
    traces::section(&mut list, s);
    let traced = (traces::worst_line(data), list);
    time_charts(&mut o, &secs, total, &bands, &knee::p99_budgets(s), traced)?;
    apart::ok_shed_chart(&mut o, &secs, total, &bands)?;
    if let Some(st) = s.verdicts.as_ref().and_then(|v| v.stress.as_ref()) {
        knee::section(&mut o, s, st, &secs)?;
    }
    distribution_chart(&mut o, s, &data.latency)?;
    phase_table(&mut o, s);
    step_tables(&mut o, s);
    if let Some(t) = &s.errors {
        errors::section(&mut o, t);
    }
    budget_table(&mut o, s);
    server_section(&mut o, s, data.server.as_ref(), &bands, total)?;
    threads::section(&mut o, s);
    database::section(&mut o, s);
    flame::section(&mut o, s, &data.flames);
    notes(&mut o, s);
    footer(&mut o);
    Ok(o)
}

/// The per-second rows to draw and the time axis' end (seconds).
fn timeline(seconds: &[Second], s: &Summary) -> (BTreeMap<u64, Second>, f64) {
    let mut secs: BTreeMap<u64, Second> = seconds.iter().map(|s| (s.t, s.clone())).collect();
    let total = s
        .meta
        .phases
        .last()
        .map(|p| (p.start + p.duration).as_secs_f64())
        .unwrap_or(1.0)
        .max(1.0);
    // Stragglers answered after the plan's end would draw a false drop to zero.
    secs.retain(|t, _| (*t as f64) < total);
    // A run stopped early (stress breach, Ctrl-C) is drawn as far as it ran;
    // a stress run stopped at its breach, as far as the breaching step.
    let total = if let Some(end) = apart::drawn_until(s) {
        secs.retain(|t, _| (*t as f64) < end);
        end.min(total)
    } else if s.interrupted {
        secs.keys()
            .last()
            .map(|t| (*t as f64 + 1.0).min(total))
            .unwrap_or(total)
    } else {
        total
    };
    (secs, total)
}

/// One band per phase of the plan that ran.
fn phase_bands(s: &Summary) -> Vec<Band> {
    s.meta
        .phases
        .iter()
        .filter(|p| apart::drawn(s, &p.name))
        .map(|p| Band {
            from: p.start.as_secs_f64(),
            to: (p.start + p.duration).as_secs_f64(),
            name: p.name.clone(),
        })
        .collect()
}

/// The document's head and the run's title line.
fn header(o: &mut String, s: &Summary) {
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>brunt · {}</title><style>{CSS}</style></head><body>\n",
        esc(&s.meta.name)
    );
    let _ = writeln!(
        o,
        "<h1>brunt · {}</h1><div class=\"meta\">{} · {:?} model{} · {} · started {} · brunt {}{}</div>",
        esc(&s.meta.name),
        esc(&s.meta.target),
        s.meta.model,
        s.meta
            .protocol
            .as_ref()
            .map(|p| format!(" · {}", esc(p)))
            .unwrap_or_default(),
        shape_name(s),
        chrono::DateTime::from_timestamp(s.meta.started_at as i64, 0)
            .map(|d| d.to_rfc3339())
            .unwrap_or_default(),
        esc(&s.meta.brunt_version),
        match (&s.stopped_reason, s.interrupted) {
            (why, true) => format!(
                " · <b>interrupted</b>: {}",
                esc(why.as_deref().unwrap_or("the load ended early"))
            ),
            (Some(why), false) => format!(" · <b>stopped</b>: {}", esc(why)),
            (None, false) => String::new(),
        }
    );
    for (what, r) in [("setup", &s.setup), ("teardown", &s.teardown)] {
        if let Some(r) = r {
            let _ = writeln!(o, "<div class=\"meta\">{}</div>", esc(&r.line(what)));
        }
    }
}

/// One line of a chart over time: its name and its value in a second.
type Pick = (&'static str, fn(&Second) -> f64);

/// A chart over time: id, title, y axis, log scale, its lines.
type TimeChart = (
    &'static str,
    &'static str,
    &'static str,
    bool,
    &'static [Pick],
);

/// "Over time": latency percentiles, offered vs achieved rate, outcomes per second.
const TIME_CHARTS: [TimeChart; 3] = [
    (
        "chart-latency",
        "Latency per second, every answer together (from each request's intended start), service time beside it",
        "latency (log)",
        true,
        &[
            ("p50", |r| r.p50_us as f64 / 1000.0),
            ("p90", |r| r.p90_us as f64 / 1000.0),
            ("p99", |r| r.p99_us as f64 / 1000.0),
            ("max", |r| r.max_us as f64 / 1000.0),
            ("service p99 (from the send)", |r| {
                r.svc_p99_us as f64 / 1000.0
            }),
        ],
    ),
    (
        "chart-rate",
        "Offered vs achieved rate",
        "requests/s",
        false,
        &[
            ("offered/s", |r| r.offered as f64),
            ("answered/s", |r| r.completed as f64),
            ("ok/s", |r| r.ok as f64),
        ],
    ),
    (
        "chart-outcomes",
        "Outcomes per second",
        "answers/s",
        false,
        &[
            ("ok", |r| r.ok as f64),
            ("shed (503/429)", |r| r.shed as f64),
            ("errors", |r| r.errors as f64),
            ("dropped", |r| r.dropped as f64),
        ],
    ),
];

fn time_charts(
    o: &mut String,
    secs: &BTreeMap<u64, Second>,
    total: f64,
    bands: &[Band],
    budgets: &[(String, f64)],
    // The slowest traced request per second, and the list under the latency chart.
    (mut traced, list): (Option<Line>, String),
) -> Result<(), ReportError> {
    let _ = writeln!(o, "<h2>Over time</h2>");
    for (id, title, y_desc, is_log, picks) in TIME_CHARTS {
        let mut lines: Vec<Line> = picks
            .iter()
            .map(|(name, f)| Line {
                name: (*name).into(),
                pts: secs.iter().map(|(t, r)| (*t as f64 + 0.5, f(r))).collect(),
            })
            .collect();
        if id == "chart-latency" {
            lines.extend(knee::budget_lines(budgets, (0.0, total)));
            lines.extend(traced.take());
        }
        let y_fmt: &dyn Fn(&f64) -> String = if is_log { &fmt_ms } else { &fmt_num };
        let chart = time_chart(id, title, y_desc, lines, y_fmt, total, bands);
        o.push_str(&if is_log { log(&chart) } else { linear(&chart) }?);
        if id == "chart-latency" {
            o.push_str(&list);
        }
    }
    Ok(())
}

/// A chart over the run's seconds, with the phase bands behind it.
fn time_chart<'a>(
    id: &'a str,
    title: &str,
    y_desc: &str,
    lines: Vec<Line>,
    y_fmt: &'a dyn Fn(&f64) -> String,
    total: f64,
    bands: &'a [Band],
) -> Chart<'a> {
    Chart {
        id,
        title: title.into(),
        x_desc: "seconds since start",
        y_desc: y_desc.into(),
        x: (0.0, total),
        lines,
        bands,
        x_fmt: None,
        x_labels: 12,
        y_labels: 8,
        y_fmt,
    }
}

/// The latency distribution per phase, from the merged histograms.
fn distribution_chart(o: &mut String, s: &Summary, d: &Distributions) -> Result<(), ReportError> {
    let dists = distributions(s, d);
    let dlines: Vec<Line> = dists.iter().map(|(n, h)| percentile_line(n, h)).collect();
    let x_max = dlines
        .iter()
        .flat_map(|l| l.pts.last().map(|p| p.0))
        .fold(1.0f64, f64::max);
    o.push_str(&log(&Chart {
        id: "chart-distribution",
        title: "Latency distribution by phase (merged histograms)".into(),
        x_desc: "percentile",
        y_desc: "latency (log)".into(),
        x: (0.0, x_max),
        lines: dlines,
        bands: &[],
        x_fmt: Some(&fmt_pct_axis),
        x_labels: x_max.ceil() as usize + 1,
        y_labels: 8,
        y_fmt: &fmt_ms,
    })?);
    Ok(())
}

fn notes(o: &mut String, s: &Summary) {
    if s.notes.is_empty() {
        return;
    }
    let _ = writeln!(o, "<h2>Notes</h2><ul>");
    for n in &s.notes {
        let _ = writeln!(o, "<li class=\"note\">{}</li>", esc(n));
    }
    let _ = writeln!(o, "</ul>");
}

fn footer(o: &mut String) {
    let _ = writeln!(
        o,
        "<p class=\"meta\">Latency counts from each request's intended start (open model); percentiles of a phase come from merged HdrHistograms, never averaged. Raw data: <code>latency.hlog</code>, <code>timeseries.csv</code>, <code>summary.json</code>.</p></body></html>"
    );
}

fn shape_name(s: &Summary) -> &'static str {
    s.meta.shape.name()
}

fn verdict_section(o: &mut String, s: &Summary) {
    let _ = writeln!(o, "<h2>Verdict</h2>");
    let failed = s.failed_gates().count();
    let (cls, word) = if s.interrupted {
        ("fail", "INTERRUPTED — budgets as measured up to the stop")
    } else if s.passed {
        ("pass", "PASS")
    } else {
        ("fail", "FAIL")
    };
    let _ = writeln!(
        o,
        "<div class=\"verdict {}\">result: <span class=\"{cls}\">{}</span> — {} gate(s), {} failed</div>",
        if s.passed { "good" } else { "bad" },
        esc(word),
        s.gates.len(),
        failed
    );
    for g in s.failed_gates() {
        let _ = writeln!(
            o,
            "<div class=\"verdict bad\"><span class=\"fail\">{}</span> {}</div>",
            g.status,
            esc(&g.text)
        );
    }
    // Before the verdicts: their causes and leaks rest on the server side.
    let ss = s.server_side();
    if ss.status != ServerSideStatus::Ok {
        let cls = match ss.status {
            ServerSideStatus::Missing | ServerSideStatus::Partial => " bad",
            _ => "",
        };
        let _ = writeln!(
            o,
            "<div class=\"verdict{cls}\" id=\"server-side\">{}</div>",
            esc(&ss.text)
        );
    }
    gate_table(o, s);
    let Some(v) = &s.verdicts else { return };
    for h in v.headlines() {
        let h = if s.interrupted {
            super::terminal::met_not_pass(&h)
        } else {
            h
        };
        let _ = writeln!(o, "<div class=\"verdict\">{}</div>", esc(&h));
    }
    verdict_details(o, v);
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

fn verdict_details(o: &mut String, v: &Verdicts) {
    if let Some(st) = &v.stress {
        stress_steps(o, st);
    }
    if let Some(ov) = &v.overload {
        overload_checks(o, ov);
    }
    if let Some(sp) = &v.spike {
        spike_table(o, sp);
    }
    if let Some(so) = &v.soak {
        soak_trends(o, so);
        growth::section(o, so);
    }
}

/// The stress steps: one row per step run.
fn stress_steps(o: &mut String, st: &StressVerdict) {
    let _ = writeln!(o, "<h3>Stress steps</h3><table><tr><th class=\"l\">step</th><th>level</th><th>offered/s</th><th>achieved/s</th><th>p50</th><th>p95</th><th>p99</th><th>max</th><th>errors</th><th class=\"l\">budgets</th><th>target CPU</th><th>generator CPU</th><th class=\"l\">threads</th><th class=\"l\">top finding</th></tr>");
    for r in &st.steps {
        let threads: Vec<String> = r
            .threads
            .iter()
            .map(|(k, v)| format!("{v:.0} {k}"))
            .collect();
        let _ = writeln!(
            o,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} ({:.2}%)</td>{}<td>{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            esc(&r.name),
            esc(&r.label),
            r.offered_rate,
            r.achieved_rate,
            fmt_ms(&r.p50_ms),
            fmt_ms(&r.p95_ms),
            fmt_ms(&r.p99_ms),
            fmt_ms(&r.max_ms),
            r.errors,
            r.error_rate * 100.0,
            apart::step_cell(r, pass_cell),
            opt(r.target_cpu_pct, |c| format!("{c:.0}%")),
            opt(r.generator_cpu_pct, |c| format!("{c:.0}%")),
            esc(&threads.join(", ")),
            r.top_finding
                .as_ref()
                .map(|f| esc(&format!("[{} {}] {}", f.severity, f.kind, f.summary)))
                .unwrap_or_default()
        );
    }
    let _ = writeln!(o, "</table>");
}

/// The overload checks, one row each.
/// The overload phase's latency apart and its capacity; its checks are
/// gates, listed once in the gates table above.
fn overload_checks(o: &mut String, ov: &OverloadVerdict) {
    let _ = writeln!(
        o,
        "<h3>Overload</h3><p class=\"meta\">its {} checks are gates: see the table above</p>",
        ov.checks.len()
    );
    let split = |l: Option<LatencySplit>| {
        l.map(|l| {
            format!(
                "p50 {} · p99 {} ({})",
                fmt_ms(&l.p50_ms),
                fmt_ms(&l.p99_ms),
                l.count
            )
        })
        .unwrap_or_else(|| "none".into())
    };
    let _ = writeln!(
        o,
        "<p class=\"meta\">overload phase: ok {} — shed {}; goodput {:.0} ok/s, capacity ≈ {:.0}/s ({})</p>",
        esc(&split(ov.ok_latency)),
        esc(&split(ov.shed_latency)),
        ov.goodput,
        ov.capacity_estimate,
        esc(&ov.capacity_source)
    );
}

/// The spike: the bound, when p99 came back, the errors.
fn spike_table(o: &mut String, sp: &SpikeVerdict) {
    let _ = writeln!(
        o,
        "<h3>Spike</h3><table><tr><th class=\"l\">1-s p99 bound</th><th>back after the spike started</th><th>back after it ended</th><th>errors during the spike</th></tr><tr><td class=\"l\">{:.1}ms ({})</td><td>{}</td><td>{}</td><td>{} ({:.2}%)</td></tr></table>",
        sp.bound_ms,
        esc(&sp.bound_source),
        if sp.left_budget {
            sp.back_after_start_s
                .map(|t| format!("{t:.0}s"))
                .unwrap_or_else(|| "not before it ended".into())
        } else {
            "never left".into()
        },
        sp.back_after_end_s
            .map(|t| format!("{t:.0}s"))
            .unwrap_or_else(|| "never, within the data".into()),
        sp.spike_errors,
        sp.spike_error_rate * 100.0
    );
}

/// The soak trends, one row per series, and the p99 drift.
fn soak_trends(o: &mut String, so: &SoakVerdict) {
    let _ = writeln!(
        o,
        "<h3>Soak trends</h3><p class=\"meta\">samples from {:.0}s to {:.0}s (after the warm-up); slope = Theil–Sen per hour, fit = least-squares R²</p><table><tr><th class=\"l\">series</th><th>points</th><th>slope</th><th>R²</th><th>limit</th><th class=\"l\">verdict</th></tr>",
        so.window_start_s, so.window_end_s
    );
    for t in &so.trends {
        let _ = writeln!(
            o,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{}</td>{}</tr>",
            esc(&t.series),
            t.points,
            per_hour(&t.series, t.slope_per_hour),
            t.r2,
            opt(t.threshold_per_hour, |v| per_hour(&t.series, v)),
            match (&t.note, t.threshold_per_hour) {
                (Some(n), _) => format!("<td class=\"l na\">{}</td>", esc(n)),
                (None, None) => "<td class=\"l na\">no threshold</td>".into(),
                (None, Some(_)) => match &t.reason {
                    Some(r) => format!("<td class=\"l pass\">PASS — {}</td>", esc(r)),
                    None => pass_cell(!t.flagged),
                },
            }
        );
    }
    let _ = writeln!(
        o,
        "<tr><td class=\"l\">p99 (first vs last fifth)</td><td></td><td>{} → {}</td><td></td><td>{:.0}%</td><td class=\"l\">{}</td></tr></table>",
        opt(so.p99_first_ms, |v| fmt_ms(&v)),
        opt(so.p99_last_ms, |v| fmt_ms(&v)),
        so.p99_drift_limit * 100.0,
        opt(so.p99_drift, |d| format!("{:+.0}%", d * 100.0))
    );
}

fn phase_table(o: &mut String, s: &Summary) {
    o.push_str("<h2>Phases</h2><table>");
    let heads = [
        "phase",
        "target",
        "offered/s",
        "achieved (ok)/s",
        "requests",
    ];
    let tail = ["service p99", "shed", "errors", "dropped"];
    html_head(o, heads.into_iter().chain(table::heads(&FULL)).chain(tail));
    o.push('\n');
    let row = |o: &mut String, p: &ScopeSummary| {
        let name = if p.name == WARMUP {
            "warm-up (not judged)".to_string()
        } else {
            apart::phase_cell(p, esc(&p.name))
        };
        let mut cells = vec![
            name,
            esc(&p.label),
            format!("{:.1}", p.offered_rate),
            format!("{:.1}", p.throughput),
            p.requests.to_string(),
        ];
        cells.extend(ms_cells(&p.latency, &FULL));
        cells.extend([fmt_ms(&p.service.p99), p.shed.to_string()]);
        cells.extend([p.errors, p.dropped].map(|n| n.to_string()));
        html_row(o, &cells);
    };
    for p in &s.phases {
        if p.requests + p.dropped > 0 {
            row(o, p);
        }
    }
    row(o, &s.totals);
    let _ = writeln!(o, "</table>");
    apart::connection_wait(o, s);
    if s.totals.shed > 0 || matches!(s.meta.shape, ShapeKind::Overload { .. }) {
        apart::ok_vs_shed(o, s);
    }
    // Errors by kind, so none is lost.
    let mut kinds = Vec::new();
    for c in CLASSES.iter().skip(1) {
        if let Some(k) = s.totals.by_class.get(c.name()) {
            kinds.push(format!("{} {}", c.name(), k.count));
        }
    }
    if !kinds.is_empty() {
        let _ = writeln!(
            o,
            "<p class=\"meta\">non-ok answers by kind: {}</p>",
            esc(&kinds.join(" · "))
        );
    }
    if let Some(line) = crate::report::terminal::refreshes(s) {
        let _ = writeln!(o, "<p class=\"meta\">{}</p>", esc(&line));
    }
}

/// Per request (scenario steps as `scenario/step`) and per scenario's whole
/// iterations, over the run: what step and iteration budgets judge.
fn step_tables(o: &mut String, s: &Summary) {
    if !s.requests.is_empty() {
        o.push_str("<h2>Requests and steps</h2><table>");
        let heads = ["request", "requests", "ok", "shed", "errors"];
        html_head(o, heads.into_iter().chain(table::heads(&FULL)));
        o.push('\n');
        for r in &s.requests {
            let mut cells = vec![esc(&r.name)];
            cells.extend([r.requests, r.ok, r.shed, r.errors].map(|n| n.to_string()));
            cells.extend(ms_cells(&r.latency, &FULL));
            html_row(o, &cells);
        }
        let _ = writeln!(o, "</table>");
    }
    if !s.iterations.is_empty() {
        o.push_str("<h2>Scenario iterations</h2><p class=\"meta\">a whole iteration, from its intended start to its last answer, think times included</p><table>");
        let heads = ["scenario", "iterations", "ok", "failed"];
        html_head(
            o,
            heads
                .into_iter()
                .chain(table::heads(&BRIEF))
                .chain(["ok p99"]),
        );
        o.push('\n');
        for it in &s.iterations {
            let mut cells = vec![esc(&it.scenario)];
            cells.extend([it.iterations, it.ok, it.failed].map(|n| n.to_string()));
            cells.extend(ms_cells(&it.latency, &BRIEF));
            cells.push(fmt_ms(&it.ok_latency.p99));
            html_row(o, &cells);
        }
        let _ = writeln!(o, "</table>");
    }
}

/// A row's latency cells in the page's unit style.
fn ms_cells(p: &Percentiles, cols: &[Pct]) -> Vec<String> {
    table::latency(p, cols, |v| fmt_ms(&v))
}

fn budget_table(o: &mut String, s: &Summary) {
    let _ = writeln!(o, "<h2>Budgets</h2>");
    // A stress run's budgets on every request are judged per step: said
    // here, with what the first breach broke, so none goes unlisted.
    if let Some(st) = &s.stress {
        let broke: Vec<String> = st
            .breached
            .iter()
            .map(|v| format!("{} (measured {})", v.budget, v.shown))
            .collect();
        let _ = writeln!(
            o,
            "<p class=\"meta\">unscoped budgets are judged step by step (see the stress steps){}</p>",
            match &st.first_breach {
                Some(b) if !broke.is_empty() =>
                    esc(&format!("; the first breach, {b}, broke {}", broke.join(", "))),
                _ => String::new(),
            }
        );
    }
    if s.budgets.is_empty() {
        if s.stress.is_none() {
            let _ = writeln!(o, "<p class=\"meta\">no budgets in the profile</p>");
        }
        return;
    }
    let _ = writeln!(o, "<table><tr><th class=\"l\">budget</th><th class=\"l\">scope</th><th>measured</th><th>limit</th><th class=\"l\">result</th></tr>");
    for v in &s.budgets {
        let _ = writeln!(
            o,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td>{}</tr>",
            esc(&v.budget),
            esc(&v.scope),
            esc(&v.shown),
            esc(&v.limit),
            gate_cell(v.status, false, s.interrupted)
        );
    }
    let _ = writeln!(o, "</table>");
}
