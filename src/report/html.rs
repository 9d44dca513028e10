//! `report.html`: one self-contained page (inline SVG charts drawn with
//! `plotters`' SVG backend, inline CSS, no script, no network) written at
//! the end of every run and by `brunt report DIR`.
//!
//! Top to bottom: the verdicts; latency percentiles per second with phase
//! bands; offered vs achieved rate; outcomes per second; the latency
//! distribution per phase (merged histograms from `latency.hlog`); the
//! per-phase (and per-step) table; budgets; the server side (CPU, memory,
//! connections, threads, findings) when `diagnostics/evidence.json` exists.
//!
//! Every chart is an `<svg>` inside `<figure id="chart-…">`, so a test can
//! check each one is there. Charts keep a wide right margin: plotters
//! centres tick labels on their tick, and the last one would be clipped.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::prelude::*;

use super::ReportError;
use crate::budgets::Status as GateStatus;
use crate::evidence::ServerSide;
use crate::judge::summary::ScopeSummary;
use crate::judge::trend::per_hour;
use crate::judge::{
    OverloadVerdict, SoakVerdict, SpikeVerdict, Status, StressVerdict, Summary, Verdicts,
};
use crate::metrics::series::Row;
use crate::metrics::{hlog, new_hist, CLASSES};
use crate::rundir;
use crate::vocab::series::{self as names, Side, Unit};

pub const REPORT_FILE: &str = rundir::REPORT_HTML;

const W: u32 = 1100;
const H: u32 = 330;

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

fn err<E: std::fmt::Display>(e: E) -> ReportError {
    ReportError::Html(e.to_string())
}

/// Write `report.html` into the run directory.
pub fn write(dir: &Path, s: &Summary) -> Result<(), ReportError> {
    let html = render(dir, s)?;
    rundir::write_atomic(&dir.join(REPORT_FILE), html.as_bytes())?;
    Ok(())
}

/// A phase drawn as a shaded band behind time charts.
struct Band {
    from: f64,
    to: f64,
    name: String,
}

struct Line {
    name: String,
    pts: Vec<(f64, f64)>,
}

struct Chart<'a> {
    id: &'a str,
    title: String,
    x_desc: &'a str,
    y_desc: String,
    x: (f64, f64),
    lines: Vec<Line>,
    bands: &'a [Band],
    /// Formats x tick labels (the distribution chart's percentile axis).
    x_fmt: Option<&'a dyn Fn(&f64) -> String>,
    /// How many x ticks plotters should aim for.
    x_labels: usize,
    /// Set by [`linear`] and [`log`].
    y_labels: usize,
    y_fmt: &'a dyn Fn(&f64) -> String,
}

/// Draw a chart with a linear or a log y axis.
fn draw<Y>(c: &Chart, y: Y, y_lo: f64, y_hi: f64) -> Result<String, ReportError>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut ch = ChartBuilder::on(&root)
            .caption(&c.title, ("sans-serif", 17))
            .margin(8)
            .margin_right(48)
            .x_label_area_size(40)
            .y_label_area_size(72)
            .build_cartesian_2d(c.x.0..c.x.1, y)
            .map_err(err)?;
        // Bands first, so lines draw over them.
        for (i, b) in c.bands.iter().enumerate() {
            let shade = if i % 2 == 0 {
                RGBColor(230, 236, 245)
            } else {
                RGBColor(245, 240, 228)
            };
            let (a, z) = (b.from.max(c.x.0), b.to.min(c.x.1));
            if z <= a {
                continue;
            }
            ch.draw_series(std::iter::once(Rectangle::new(
                [(a, y_lo), (z, y_hi)],
                shade.filled(),
            )))
            .map_err(err)?;
        }
        let mut mesh = ch.configure_mesh();
        mesh.x_desc(c.x_desc)
            .y_desc(c.y_desc.as_str())
            .light_line_style(RGBColor(238, 238, 238))
            .label_style(("sans-serif", 12))
            .x_labels(c.x_labels)
            .y_labels(c.y_labels)
            .y_label_formatter(c.y_fmt)
            .x_label_formatter(c.x_fmt.unwrap_or(&fmt_secs));
        mesh.draw().map_err(err)?;
        // Phase names over the mesh, a few pixels inside the band's top-left corner.
        let area = ch.plotting_area();
        for b in c.bands {
            if b.to <= c.x.0 || b.from >= c.x.1 {
                continue;
            }
            let (px, py) = area.map_coordinate(&(b.from.max(c.x.0), y_hi));
            root.draw(&Text::new(
                b.name.clone(),
                (px + 4, py + 4),
                ("sans-serif", 12).into_font().color(&RGBColor(60, 60, 60)),
            ))
            .map_err(err)?;
        }
        for (i, l) in c.lines.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            ch.draw_series(LineSeries::new(thin(l.pts.clone()), color.stroke_width(2)))
                .map_err(err)?
                .label(l.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
                });
        }
        if c.lines.len() > 1 || c.lines.iter().any(|l| !l.name.is_empty()) {
            ch.configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(180, 180, 180))
                .label_font(("sans-serif", 12))
                .draw()
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(format!("<figure id=\"{}\">{svg}</figure>\n", c.id))
}

/// At most this many points per line: an 8-hour soak has 28,800 seconds,
/// more than a chart has pixels.
const MAX_POINTS: usize = 1500;

/// Thin a line to [`MAX_POINTS`] buckets, keeping each bucket's peak so
/// spikes stay visible.
fn thin(pts: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    if pts.len() <= MAX_POINTS {
        return pts;
    }
    let per = pts.len().div_ceil(MAX_POINTS);
    pts.chunks(per)
        .filter_map(|c| {
            let x = c.iter().map(|p| p.0).sum::<f64>() / c.len() as f64;
            c.iter().map(|p| p.1).reduce(f64::max).map(|y| (x, y))
        })
        .collect()
}

fn y_extent(lines: &[Line]) -> (f64, f64, f64) {
    let vals = lines.iter().flat_map(|l| l.pts.iter().map(|p| p.1));
    let max = vals.clone().fold(0.0f64, f64::max);
    let min_pos = vals.filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    (0.0, max, min_pos)
}

fn linear(c: &Chart) -> Result<String, ReportError> {
    let (_, max, _) = y_extent(&c.lines);
    let hi = if max > 0.0 { max * 1.15 } else { 1.0 };
    draw(c, 0.0..hi, 0.0, hi)
}

/// Log y axis: latency spans µs to seconds.
fn log(c: &Chart) -> Result<String, ReportError> {
    let (_, max, min_pos) = y_extent(&c.lines);
    // From the decade below the smallest value, so the axis has a label under the data.
    let lo = if min_pos.is_finite() {
        10f64.powf(min_pos.log10().floor())
    } else {
        0.01
    };
    let hi = if max > lo { max * 2.0 } else { lo * 10.0 };
    // Zeros (no answers in a second) cannot sit on a log axis.
    let lines: Vec<Line> = c
        .lines
        .iter()
        .map(|l| Line {
            name: l.name.clone(),
            pts: l.pts.iter().copied().filter(|p| p.1 > 0.0).collect(),
        })
        .collect();
    // Ask for every 1..9×10^k tick; `fmt_log_ms` labels only 1, 2 and 5.
    let c2 = Chart {
        lines,
        title: c.title.clone(),
        y_desc: c.y_desc.clone(),
        y_labels: 40,
        y_fmt: &fmt_log_ms,
        ..*c
    };
    draw(&c2, (lo..hi).log_scale(), lo, hi)
}

fn fmt_ms(v: &f64) -> String {
    let v = *v;
    if v >= 1000.0 {
        format!("{:.1}s", v / 1000.0)
    } else if v >= 1.0 {
        format!("{v:.0}ms")
    } else {
        format!("{v:.2}ms")
    }
}

/// Log-axis labels at 1, 2 and 5 × 10^k only; the other ticks keep their grid line.
fn fmt_log_ms(v: &f64) -> String {
    if *v <= 0.0 {
        return String::new();
    }
    let mant = *v / 10f64.powf(v.log10().floor());
    if [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|m| (mant - m).abs() < 0.05)
    {
        fmt_ms(v)
    } else {
        String::new()
    }
}

/// Axis labels in run time: `2.5s`, `45s`, `12m30s`, `2h05m`.
fn fmt_secs(v: &f64) -> String {
    let v = *v;
    if v.abs() < 60.0 {
        if (v - v.round()).abs() > 0.01 {
            format!("{v:.1}s")
        } else {
            format!("{v:.0}s")
        }
    } else if v.abs() < 3600.0 {
        let s = v.round() as i64;
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        let m = (v / 60.0).round() as i64;
        format!("{}h{:02}m", m / 60, m % 60)
    }
}

fn fmt_num(v: &f64) -> String {
    let v = *v;
    if v.abs() >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if v.abs() >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v.abs() >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v.fract() == 0.0 || v.abs() >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// x = log10(1/(1−q)) → "99%".
fn fmt_pct_axis(x: &f64) -> String {
    let q = 1.0 - 10f64.powf(-*x);
    let p = q * 100.0;
    if p < 99.0 {
        format!("{p:.0}%")
    } else {
        let digits = (*x - 2.0).ceil().max(0.0) as usize;
        format!("{p:.digits$}%")
    }
}

pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Per-second latency percentiles, all phases merged (a boundary second keeps the worse).
struct SecondRow {
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
    offered: f64,
    completed: f64,
    ok: f64,
    shed: f64,
    errors: f64,
    dropped: f64,
}

fn per_second(rows: &[Row]) -> BTreeMap<u64, SecondRow> {
    let mut by: BTreeMap<u64, SecondRow> = BTreeMap::new();
    for r in rows {
        let e = by.entry(r.second).or_insert(SecondRow {
            p50: 0.0,
            p90: 0.0,
            p99: 0.0,
            max: 0.0,
            offered: 0.0,
            completed: 0.0,
            ok: 0.0,
            shed: 0.0,
            errors: 0.0,
            dropped: 0.0,
        });
        let ms = |us: u64| us as f64 / 1000.0;
        e.p50 = e.p50.max(ms(r.p50_us));
        e.p90 = e.p90.max(ms(r.p90_us));
        e.p99 = e.p99.max(ms(r.p99_us));
        e.max = e.max.max(ms(r.max_us));
        e.offered += r.offered as f64;
        e.completed += r.completed() as f64;
        let ok = r.counts[0] as f64;
        let shed = r.counts[1] as f64;
        e.ok += ok;
        e.shed += shed;
        e.errors += r.completed() as f64 - ok - shed;
        e.dropped += r.dropped as f64;
    }
    by
}

/// Merged latency histograms per phase (every class) and for the whole run.
fn distributions(
    dir: &Path,
    s: &Summary,
) -> Result<Vec<(String, hdrhistogram::Histogram<u64>)>, ReportError> {
    let mut per: BTreeMap<String, hdrhistogram::Histogram<u64>> = BTreeMap::new();
    let mut all = new_hist();
    hlog::for_each(&dir.join(rundir::LATENCY_LOG), |iv| {
        match iv.tag.as_deref() {
            None => {
                let _ = all.add(&iv.hist);
            }
            Some(t) => {
                if let Some((phase, _, hlog::TagKind::Latency)) = hlog::parse_tag(t) {
                    let _ = per
                        .entry(phase.to_string())
                        .or_insert_with(new_hist)
                        .add(&iv.hist);
                }
            }
        }
    })?;
    // Plan order, then the run; too many steps make an unreadable chart.
    let mut out: Vec<(String, hdrhistogram::Histogram<u64>)> = s
        .phases
        .iter()
        .filter_map(|p| per.remove(&p.name).map(|h| (p.name.clone(), h)))
        .filter(|(_, h)| !h.is_empty())
        .collect();
    if out.len() > 7 {
        let keep = out.split_off(out.len() - 6);
        out = keep;
    }
    if !all.is_empty() {
        out.push(("all".into(), all));
    }
    Ok(out)
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
figure{margin:12px 0}.note{color:#8a5a00}";

fn status_cell(st: Status) -> String {
    let cls = match st {
        Status::Pass => "pass",
        Status::Fail => "fail",
        Status::NotApplicable => "na",
    };
    format!("<td class=\"l {cls}\">{st}</td>")
}

/// A gate's or a budget's result; in an interrupted run a pass is only
/// "met up to the stop", never PASS.
fn gate_cell(st: GateStatus, advisory: bool, interrupted: bool) -> String {
    let (cls, word) = match st {
        GateStatus::Pass if interrupted => ("na", "met up to the stop"),
        GateStatus::Pass => ("pass", "PASS"),
        GateStatus::Fail => ("fail", "FAIL"),
        GateStatus::NoData => ("fail", "NO DATA"),
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
    status_cell(if p { Status::Pass } else { Status::Fail })
}

/// The page as a string.
pub fn render(dir: &Path, s: &Summary) -> Result<String, ReportError> {
    let rows = rundir::read::rows(dir).unwrap_or_default();
    let server = rundir::evidence::load(dir).ok().flatten();
    let (secs, total) = timeline(&rows, s);
    let bands = phase_bands(s);
    let mut o = String::new();
    header(&mut o, s);
    verdict_section(&mut o, s);
    time_charts(&mut o, &secs, total, &bands)?;
    distribution_chart(&mut o, dir, s)?;
    phase_table(&mut o, s);
    budget_table(&mut o, s);
    server_section(&mut o, s, server.as_ref(), &bands, total)?;
    notes(&mut o, s);
    footer(&mut o);
    Ok(o)
}

/// The per-second rows to draw and the time axis' end (seconds).
fn timeline(rows: &[Row], s: &Summary) -> (BTreeMap<u64, SecondRow>, f64) {
    let mut secs = per_second(rows);
    let total = s
        .meta
        .phases
        .last()
        .map(|p| (p.start + p.duration).as_secs_f64())
        .unwrap_or(1.0)
        .max(1.0);
    // Stragglers answered after the plan's end would draw a false drop to zero.
    secs.retain(|t, _| (*t as f64) < total);
    // A run stopped early (stress breach, Ctrl-C) is drawn as far as it ran.
    let total = if s.interrupted {
        secs.keys()
            .last()
            .map(|t| (*t as f64 + 1.0).min(total))
            .unwrap_or(total)
    } else {
        total
    };
    (secs, total)
}

/// One band per phase of the plan.
fn phase_bands(s: &Summary) -> Vec<Band> {
    s.meta
        .phases
        .iter()
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
        "<h1>brunt · {}</h1><div class=\"meta\">{} · {:?} model · {} · started {} · brunt {}{}</div>",
        esc(&s.meta.name),
        esc(&s.meta.target),
        s.meta.model,
        shape_name(s),
        chrono::DateTime::from_timestamp(s.meta.started_at as i64, 0)
            .map(|d| d.to_rfc3339())
            .unwrap_or_default(),
        esc(&s.meta.brunt_version),
        if s.interrupted {
            format!(
                " · <b>interrupted</b>: {}",
                esc(s.stopped_reason.as_deref().unwrap_or("the load ended early"))
            )
        } else {
            String::new()
        }
    );
}

/// "Over time": latency percentiles, offered vs achieved rate, outcomes per second.
fn time_charts(
    o: &mut String,
    secs: &BTreeMap<u64, SecondRow>,
    total: f64,
    bands: &[Band],
) -> Result<(), ReportError> {
    let _ = writeln!(o, "<h2>Over time</h2>");
    let line = |name: &str, f: &dyn Fn(&SecondRow) -> f64| Line {
        name: name.into(),
        pts: secs.iter().map(|(t, r)| (*t as f64 + 0.5, f(r))).collect(),
    };
    o.push_str(&log(&time_chart(
        "chart-latency",
        "Latency per second (from each request's intended start)",
        "latency (log)",
        vec![
            line("p50", &|r| r.p50),
            line("p90", &|r| r.p90),
            line("p99", &|r| r.p99),
            line("max", &|r| r.max),
        ],
        &fmt_ms,
        total,
        bands,
    ))?);
    o.push_str(&linear(&time_chart(
        "chart-rate",
        "Offered vs achieved rate",
        "requests/s",
        vec![
            line("offered/s", &|r| r.offered),
            line("answered/s", &|r| r.completed),
            line("ok/s", &|r| r.ok),
        ],
        &fmt_num,
        total,
        bands,
    ))?);
    o.push_str(&linear(&time_chart(
        "chart-outcomes",
        "Outcomes per second",
        "answers/s",
        vec![
            line("ok", &|r| r.ok),
            line("shed (503/429)", &|r| r.shed),
            line("errors", &|r| r.errors),
            line("dropped", &|r| r.dropped),
        ],
        &fmt_num,
        total,
        bands,
    ))?);
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
fn distribution_chart(o: &mut String, dir: &Path, s: &Summary) -> Result<(), ReportError> {
    let dists = distributions(dir, s).unwrap_or_default();
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
    if !v.server_side {
        let _ = writeln!(
            o,
            "<div class=\"verdict\">no server-side collectors configured: causes (CPU, locks, pools) and leaks cannot be attributed</div>"
        );
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
            pass_cell(r.within_budget),
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
fn overload_checks(o: &mut String, ov: &OverloadVerdict) {
    let _ = writeln!(o, "<h3>Overload checks</h3><table><tr><th class=\"l\">check</th><th class=\"l\">result</th><th class=\"l\">measured</th><th class=\"l\">expected</th></tr>");
    for c in &ov.checks {
        let _ = writeln!(
            o,
            "<tr><td class=\"l\">{}</td>{}<td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            esc(&c.name),
            status_cell(c.status),
            esc(&c.measured),
            esc(&c.expected)
        );
    }
    let _ = writeln!(o, "</table>");
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
                (None, Some(_)) => pass_cell(!t.flagged),
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
    let _ = writeln!(o, "<h2>Phases</h2><table><tr><th class=\"l\">phase</th><th>target</th><th>offered/s</th><th>achieved (ok)/s</th><th>requests</th><th>p50</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th><th>service p99</th><th>shed</th><th>errors</th><th>dropped</th></tr>");
    let row = |o: &mut String, p: &ScopeSummary| {
        let _ = writeln!(
            o,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&p.name),
            esc(&p.label),
            p.offered_rate,
            p.throughput,
            p.requests,
            fmt_ms(&p.latency.p50),
            fmt_ms(&p.latency.p95),
            fmt_ms(&p.latency.p99),
            fmt_ms(&p.latency.p999),
            fmt_ms(&p.latency.max),
            fmt_ms(&p.service.p99),
            p.shed,
            p.errors,
            p.dropped
        );
    };
    for p in &s.phases {
        if p.requests + p.dropped > 0 {
            row(o, p);
        }
    }
    row(o, &s.totals);
    let _ = writeln!(o, "</table>");
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
}

fn budget_table(o: &mut String, s: &Summary) {
    let _ = writeln!(o, "<h2>Budgets</h2>");
    if s.budgets.is_empty() {
        let _ = writeln!(
            o,
            "<p class=\"meta\">{}</p>",
            if s.stress.is_some() {
                "unscoped budgets are judged step by step (see the stress steps)"
            } else {
                "no budgets in the profile"
            }
        );
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

/// The charts of the evidence series: one per machine and unit, so a
/// percentage of one core never shares an axis with a percentage of the host,
/// and brunt's own machine is never drawn as the server's.
/// (id, title, axis caption, divisor)
const SERIES_CHARTS: [(&str, &str, &str, f64); 11] = [
    (
        "server-cpu",
        "Target CPU (% of the host)",
        "% of host CPU",
        1.0,
    ),
    (
        "server-cpu-core",
        "Target process CPU (% of one core)",
        "% of one core",
        1.0,
    ),
    ("server-memory", "Target memory", "MB", 1e6),
    ("server-heap", "JVM heap", "MB", 1e6),
    (
        "server-connections",
        "TCP connections (service port)",
        "connections",
        1.0,
    ),
    (
        "server-threads",
        "Threads and file descriptors",
        "count",
        1.0,
    ),
    ("server-load", "Target load average", "load", 1.0),
    ("server-other", "Other server-side series", "value", 1.0),
    (
        "generator-cpu",
        "Generator (brunt's own machine): CPU and worker busy share",
        "%",
        1.0,
    ),
    (
        "generator-memory",
        "Generator (brunt's own machine): memory",
        "MB",
        1e6,
    ),
    (
        "generator-lateness",
        "Generator (brunt's own machine): lateness",
        "ms",
        1.0,
    ),
];

/// Which chart of [`SERIES_CHARTS`] a series belongs to.
fn chart_of(name: &str) -> &'static str {
    let Some(s) = names::lookup(name) else {
        return "server-other";
    };
    match (s.side, s.unit) {
        (Side::Generator, Unit::Bytes) => "generator-memory",
        (Side::Generator, Unit::Millis) => "generator-lateness",
        (Side::Generator, _) => "generator-cpu",
        (Side::Target, Unit::PctOfHost | Unit::PctBusy) => "server-cpu",
        (Side::Target, Unit::PctOfCore) => "server-cpu-core",
        (Side::Target, Unit::Bytes) if name.starts_with("jvm.heap_") => "server-heap",
        (Side::Target, Unit::Bytes) => "server-memory",
        (Side::Target, Unit::Count)
            if name == names::TARGET_TCP_ESTABLISHED.name
                || name == names::TARGET_TCP_CLOSE_WAIT.name
                || name == names::TARGET_TCP_TIME_WAIT.name =>
        {
            "server-connections"
        }
        (Side::Target, Unit::Count) => "server-threads",
        (Side::Target, Unit::Load) => "server-load",
        (Side::Target, Unit::Millis) => "server-other",
    }
}

fn server_section(
    o: &mut String,
    s: &Summary,
    server: Option<&ServerSide>,
    bands: &[Band],
    total: f64,
) -> Result<(), ReportError> {
    let _ = writeln!(o, "<h2>Server side</h2>");
    let Some(sv) = server.filter(|s| s.has_target_data()) else {
        let _ = writeln!(
            o,
            "<p class=\"meta\">no server-side collectors configured (no <code>diagnostics/evidence.json</code>): target CPU, memory, connections, JVM heap and threads are not shown.</p>"
        );
        return Ok(());
    };
    for (g, title, unit, div) in SERIES_CHARTS {
        let lines: Vec<Line> = sv
            .series
            .iter()
            .filter(|(k, _)| chart_of(k) == g)
            .map(|(k, pts)| Line {
                name: k.clone(),
                pts: pts.iter().map(|(t, v)| (*t, v / div)).collect(),
            })
            .collect();
        if lines.is_empty() {
            continue;
        }
        let x_hi = lines
            .iter()
            .flat_map(|l| l.pts.last().map(|p| p.0))
            .fold(total, f64::max);
        let id = format!("chart-{g}");
        o.push_str(&linear(&Chart {
            id: &id,
            title: title.into(),
            x_desc: "seconds since start",
            y_desc: unit.into(),
            x: (0.0, x_hi),
            lines,
            bands,
            x_fmt: None,
            x_labels: 12,
            y_labels: 8,
            y_fmt: &fmt_num,
        })?);
    }
    let _ = writeln!(o, "<h3>Findings</h3>");
    if sv.findings.is_empty() {
        let _ = writeln!(o, "<p class=\"meta\">no findings</p>");
    } else {
        let _ = writeln!(o, "<table><tr><th>at</th><th class=\"l\">phase</th><th class=\"l\">severity</th><th class=\"l\">kind</th><th class=\"l\">finding</th><th class=\"l\">evidence</th></tr>");
        let mut fs: Vec<_> = sv.findings.iter().collect();
        fs.sort_by(|a, b| b.rank().cmp(&a.rank()).then(a.at_s.total_cmp(&b.at_s)));
        for f in fs {
            let phase = f.phase.clone().or_else(|| {
                s.meta
                    .phases
                    .iter()
                    .find(|p| {
                        f.at_s >= p.start.as_secs_f64()
                            && f.at_s < (p.start + p.duration).as_secs_f64()
                    })
                    .map(|p| p.name.clone())
            });
            let _ = writeln!(
                o,
                "<tr><td>{:.1}s</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
                f.at_s,
                esc(phase.as_deref().unwrap_or("-")),
                esc(&f.severity),
                esc(&f.kind),
                esc(&f.summary),
                esc(f.evidence.as_deref().unwrap_or(""))
            );
        }
        let _ = writeln!(o, "</table>");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
    }

    #[test]
    fn thinning_keeps_peaks() {
        let mut pts: Vec<(f64, f64)> = (0..30_000).map(|i| (i as f64, 1.0)).collect();
        pts[12_345].1 = 99.0;
        let t = thin(pts);
        assert!(t.len() <= MAX_POINTS);
        assert!(t.iter().any(|p| p.1 == 99.0));
    }

    #[test]
    fn percentile_axis_labels() {
        assert_eq!(fmt_pct_axis(&0.0), "0%");
        assert_eq!(fmt_pct_axis(&1.0), "90%");
        assert_eq!(fmt_pct_axis(&2.0), "99%");
        assert_eq!(fmt_pct_axis(&3.0), "99.9%");
    }
}
