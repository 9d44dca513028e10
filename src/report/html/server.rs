//! The server side of the page: the evidence series charted one chart per
//! machine and unit, and the findings table.

use std::fmt::Write as _;

use super::super::ReportError;
use super::charts::{esc, fmt_num, linear, Band, Chart, Line};
use crate::evidence::ServerEvidence;
use crate::judge::summary::ServerSideStatus;
use crate::judge::Summary;
use crate::vocab::series::{self as names, Side, Unit};

/// The charts of the evidence series: one per machine and unit, so a
/// percentage of one core never shares an axis with a percentage of the host,
/// and brunt's own machine is never drawn as the server's.
/// (id, title, axis caption, divisor)
const SERIES_CHARTS: [(&str, &str, &str, f64); 14] = [
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
    (
        "server-jfr-windows",
        "JVM per JFR window: blocked entries, park waits (per s), GC pause (ms per s)",
        "per second",
        1.0,
    ),
    (
        "server-alloc",
        "JVM allocation rate (JFR windows)",
        "MB/s",
        1e6,
    ),
    (
        "server-database",
        "Database: backends waiting for locks, connections (% of the usable max), oldest transaction (s)",
        "value",
        1.0,
    ),
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
    if name.starts_with(names::DB_PREFIX) {
        return "server-database";
    }
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
        (Side::Target, Unit::Seconds | Unit::PctOfLimit) => "server-database",
        (Side::Target, Unit::PerSecond | Unit::MillisPerSecond) => "server-jfr-windows",
        (Side::Target, Unit::BytesPerSecond) => "server-alloc",
    }
}

/// A series' legend: what it measures and its unit, not its key
/// (`target process RSS (MB)`, `JVM threads BLOCKED (count)`).
fn legend(key: &str, unit: &str) -> String {
    let what = match (
        names::lookup(key),
        key.strip_prefix(names::JVM_THREADS_PREFIX),
    ) {
        (_, Some(state)) => format!("JVM threads {}", state.to_uppercase()),
        (Some(s), None) => s.what.to_string(),
        (None, None) => key.to_string(),
    };
    format!("{what} ({unit})")
}

pub(super) fn server_section(
    o: &mut String,
    s: &Summary,
    server: Option<&ServerEvidence>,
    bands: &[Band],
    total: f64,
) -> Result<(), ReportError> {
    let _ = writeln!(o, "<h2>Server side</h2>");
    let Some(sv) = server.filter(|s| s.has_target_data()) else {
        let ss = s.server_side();
        let text = match ss.status {
            ServerSideStatus::NotConfigured => "no server-side collectors configured".to_string(),
            // Artifacts came back, but no series to chart.
            ServerSideStatus::Ok => "no server-side series".to_string(),
            _ => ss.text,
        };
        let _ = writeln!(
            o,
            "<p class=\"meta\">{} (no target data in <code>diagnostics/evidence.json</code>): target CPU, memory, connections, JVM heap and threads are not shown.</p>",
            esc(&text)
        );
        return Ok(());
    };
    for (g, title, unit, div) in SERIES_CHARTS {
        let keys: Vec<&String> = sv.series.keys().filter(|k| chart_of(k) == g).collect();
        let lines: Vec<Line> = sv
            .series
            .iter()
            .filter(|(k, _)| chart_of(k) == g)
            .map(|(k, pts)| Line {
                name: legend(k, unit),
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
        // The keys, for thresholds and queries: the legend says what they are.
        let keys: Vec<String> = keys
            .iter()
            .map(|k| format!("<code>{}</code>", esc(k)))
            .collect();
        let _ = writeln!(o, "<p class=\"meta\">series: {}</p>", keys.join(", "));
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
                esc(f.severity.as_str()),
                esc(f.kind.as_str()),
                esc(&f.summary),
                esc(f.evidence.as_deref().unwrap_or(""))
            );
        }
        let _ = writeln!(o, "</table>");
    }
    Ok(())
}
