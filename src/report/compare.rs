//! `brunt compare RUN_A RUN_B`: two run directories side by side, phase by
//! phase (matched by name), so a before/after change can be judged.
//!
//! Percentiles come from each run's `latency.hlog`, merging every class's
//! latency histograms of a phase (never averaging percentiles); request,
//! shed and error counts come from the same histograms. Deltas are B − A.

use super::terminal::fmt_ms as ms;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::ReportError;
use crate::judge::summary::Percentiles;
use crate::metrics::Class;
use crate::rundir;

/// One phase of one run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Side {
    pub requests: u64,
    pub ok: u64,
    pub shed: u64,
    /// Non-ok, non-shed answers.
    pub errors: u64,
    pub latency: Percentiles,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PhaseRow {
    pub phase: String,
    pub a: Option<Side>,
    pub b: Option<Side>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: PathBuf,
    pub b: PathBuf,
    /// Phases in A's order, then those only in B; the whole run last (`run`).
    pub phases: Vec<PhaseRow>,
}

fn load(dir: &Path) -> Result<(Vec<String>, BTreeMap<String, Side>), ReportError> {
    let meta = rundir::read_meta(dir)?;
    let out = rundir::read::latency_by_phase(dir)?
        .into_iter()
        .map(|(phase, (hist, counts))| {
            let n = |c: Class| counts.get(&c).copied().unwrap_or(0);
            let requests: u64 = counts.values().sum();
            let side = Side {
                requests,
                ok: n(Class::Ok),
                shed: n(Class::Shed),
                errors: requests - n(Class::Ok) - n(Class::Shed),
                latency: Percentiles::of(&hist),
            };
            (phase, side)
        })
        .collect();
    let order = meta.phases.iter().map(|p| p.name.clone()).collect();
    Ok((order, out))
}

/// Compare two run directories.
pub fn compare(a: &Path, b: &Path) -> Result<Comparison, ReportError> {
    let (order_a, mut sa) = load(a)?;
    let (order_b, mut sb) = load(b)?;
    let mut phases = Vec::new();
    let mut names: Vec<String> = order_a.clone();
    names.extend(order_b.into_iter().filter(|n| !order_a.contains(n)));
    names.push("run".into());
    for n in names {
        let (x, y) = (sa.remove(&n), sb.remove(&n));
        if x.is_none() && y.is_none() {
            continue;
        }
        phases.push(PhaseRow {
            phase: n,
            a: x,
            b: y,
        });
    }
    Ok(Comparison {
        a: a.to_path_buf(),
        b: b.to_path_buf(),
        phases,
    })
}

fn delta(a: f64, b: f64, show: fn(f64) -> String) -> (String, String) {
    let d = b - a;
    let sign = if d >= 0.0 { "+" } else { "-" };
    let pct = if a.abs() > 0.0 {
        format!("{:+.1}%", d / a * 100.0)
    } else {
        "-".into()
    };
    (format!("{sign}{}", show(d.abs())), pct)
}

/// A row of the table: name, A, B, how to show a value.
type Metric = (&'static str, f64, f64, fn(f64) -> String);

/// The side-by-side table for a terminal.
pub fn render(c: &Comparison) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\nbrunt compare\n  A: {}\n  B: {}",
        c.a.display(),
        c.b.display()
    );
    let _ = writeln!(
        o,
        "\n{:<12} {:<9} {:>12} {:>12} {:>12} {:>9}",
        "phase", "metric", "A", "B", "Δ (B−A)", "Δ%"
    );
    let count = |v: f64| format!("{v:.0}");
    for r in &c.phases {
        let _ = writeln!(o, "{}", "-".repeat(71));
        let (Some(a), Some(b)) = (&r.a, &r.b) else {
            let only = if r.a.is_some() { "A" } else { "B" };
            let _ = writeln!(o, "{:<12} only in {only}", r.phase);
            continue;
        };
        let metrics: [Metric; 9] = [
            ("requests", a.requests as f64, b.requests as f64, count),
            ("errors", a.errors as f64, b.errors as f64, count),
            ("shed", a.shed as f64, b.shed as f64, count),
            ("p50", a.latency.p50, b.latency.p50, ms),
            ("p90", a.latency.p90, b.latency.p90, ms),
            ("p95", a.latency.p95, b.latency.p95, ms),
            ("p99", a.latency.p99, b.latency.p99, ms),
            ("p99.9", a.latency.p999, b.latency.p999, ms),
            ("max", a.latency.max, b.latency.max, ms),
        ];
        for (i, (name, x, y, show)) in metrics.iter().enumerate() {
            let (d, pct) = delta(*x, *y, *show);
            let _ = writeln!(
                o,
                "{:<12} {:<9} {:>12} {:>12} {:>12} {:>9}",
                if i == 0 { r.phase.as_str() } else { "" },
                name,
                show(*x),
                show(*y),
                d,
                pct
            );
        }
    }
    let _ = writeln!(
        o,
        "\npercentiles from merged histograms (latency.hlog) of every outcome; Δ% relative to A"
    );
    o
}
