//! The soak verdict: per-hour trends of every server-side series after the
//! warm-up, p99 drift first vs last fifth of the run (merged histograms), and
//! a leak verdict against the profile's `verdicts.leaks` thresholds, led by
//! what grows, named ([`super::growth`]).

use super::rules::*;
use super::trend::{per_hour, trend, MIN_LEAK_POINTS, MIN_LEAK_WINDOW_S};
use super::verdict::{LeakStatus, SoakVerdict, Trend};
use crate::evidence::ServerEvidence;
use crate::metrics::{LatencyWindows, Measured};
use crate::profile::verdicts::LeakThresholds;
use crate::rundir::RunMeta;

/// p99 (ms) of all answers whose 1-s window starts in each `[from, to)`, merged.
fn p99_windows(latency: &dyn LatencyWindows, windows: &[(f64, f64)]) -> Vec<Option<f64>> {
    match latency.merged(windows) {
        Ok(hs) => hs
            .iter()
            .map(|h| (!h.is_empty()).then(|| ms_q(h, 0.99)))
            .collect(),
        Err(_) => vec![None; windows.len()],
    }
}

pub(super) fn soak(
    meta: &RunMeta,
    m: &Measured,
    warmup_s: f64,
    th: &LeakThresholds,
    server: Option<&ServerEvidence>,
    latency: Option<&dyn LatencyWindows>,
) -> Option<SoakVerdict> {
    let si = meta.phase_index("soak")?;
    let (s0, s1) = window(meta, si);
    let from = s0 + warmup_s;
    let to = s1.min(m.run.duration.as_secs_f64()).max(from);
    let trends: Vec<Trend> = server
        .map(|sv| {
            sv.series
                .iter()
                .map(|(k, pts)| trend(k, pts, from, to, th))
                .collect()
        })
        .unwrap_or_default();
    // p99 drift: first fifth vs last fifth of the post-warm-up window.
    let part = ((to - from) / 5.0).max(1.0);
    let (p_first, p_last) = match latency {
        Some(l) if to - from >= 2.0 => {
            let v = p99_windows(l, &[(from, from + part), (to - part, to)]);
            (v[0], v[1])
        }
        _ => (None, None),
    };
    let drift = match (p_first, p_last) {
        (Some(a), Some(b)) if a > 0.0 => Some(b / a - 1.0),
        _ => None,
    };
    let drifted = match (drift, p_first, p_last) {
        (Some(d), Some(a), Some(b)) => d > th.p99_drift.0 && b - a >= 1.0,
        _ => false,
    };
    let leaking: Vec<String> = trends
        .iter()
        .filter(|t| t.flagged)
        .map(|t| {
            format!(
                "{} {} (R² {:.2}, limit {})",
                t.series,
                per_hour(&t.series, t.slope_per_hour),
                t.r2,
                per_hour(&t.series, t.threshold_per_hour.unwrap_or(0.0))
            )
        })
        .collect();
    let drift_text = match (p_first, p_last, drift) {
        (Some(a), Some(b), Some(d)) => format!(
            "p99 {a:.1}ms → {b:.1}ms ({:+.0}%, limit {:.0}%)",
            d * 100.0,
            th.p99_drift.0 * 100.0
        ),
        _ => "p99 drift not measured (too short a window)".into(),
    };
    // What grows, named: leads the text.
    let parts = super::growth::judge(server, &trends, from, to, th);
    let leaking: Vec<String> = parts
        .grows
        .iter()
        .map(|g| g.text.clone())
        .chain(leaking)
        .collect();
    let status = if !leaking.is_empty() {
        LeakStatus::Leak
    } else if drifted {
        LeakStatus::Degrading
    } else if trends
        .iter()
        .any(|t| t.threshold_per_hour.is_some() && t.note.is_none())
    {
        LeakStatus::NoLeak
    } else {
        LeakStatus::Unknown
    };
    let text = match status {
        LeakStatus::Leak => format!("LEAK: {}; {drift_text}", leaking.join("; ")),
        LeakStatus::Degrading => format!("no series leaks, but latency degraded: {drift_text}"),
        LeakStatus::NoLeak => {
            let stepped: Vec<&str> = trends
                .iter()
                .filter(|t| t.reason.is_some())
                .map(|t| t.series.as_str())
                .collect();
            format!(
                "no leak: {} series within thresholds{}; {drift_text}",
                trends
                    .iter()
                    .filter(|t| t.threshold_per_hour.is_some() && t.note.is_none())
                    .count(),
                if stepped.is_empty() {
                    String::new()
                } else {
                    format!(
                        " ({} rose over the window but not steadily through it: a step or a settling, not a leak)",
                        stepped.join(", ")
                    )
                }
            )
        }
        LeakStatus::Unknown => format!(
            "leaks unknown: {}; {drift_text}",
            if !server.is_some_and(|s| s.has_target_data()) {
                "no server-side collectors configured (memory, threads, fds, connections unseen)"
                    .to_string()
            } else if to - from < MIN_LEAK_WINDOW_S
                || trends
                    .iter()
                    .any(|t| t.threshold_per_hour.is_some() && t.note.is_some())
            {
                format!(
                    "inconclusive: {:.0} s of data after the warm-up (a per-hour leak verdict needs ≥ {MIN_LEAK_WINDOW_S:.0} s and ≥ {MIN_LEAK_POINTS} samples of a series)",
                    to - from
                )
            } else {
                "no leak-relevant series with enough samples after the warm-up".to_string()
            }
        ),
    };
    let text = std::iter::once(text)
        .chain(parts.notes)
        .collect::<Vec<_>>()
        .join("; ");
    let rising = rising_jfr(&trends, th, to - from);
    let text = if rising.is_empty() {
        text
    } else {
        format!(
            "{text}; rising steadily through the soak (JFR windows): {}",
            rising.join("; ")
        )
    };
    Some(SoakVerdict {
        status,
        window_start_s: from,
        window_end_s: to,
        trends,
        p99_first_ms: p_first,
        p99_last_ms: p_last,
        p99_drift: drift,
        p99_drift_limit: th.p99_drift.0,
        text,
        grows: parts.grows,
    })
}

/// The JFR window series (`jvm.jfr.*`: blocked entries, park waits,
/// allocation, GC pauses) that rose steadily through a soak window of
/// `span_s` — contention or GC growing through the night. No threshold
/// makes them a leak; the verdict's text says them. Steadily: a conclusive
/// trend (no note), rising in both halves, R² ≥ `min_r2`, the growth over
/// the window above 3σ of the noise.
pub(super) fn rising_jfr(trends: &[Trend], th: &LeakThresholds, span_s: f64) -> Vec<String> {
    trends
        .iter()
        .filter(|t| t.series.starts_with(crate::vocab::series::JFR_PREFIX))
        .filter(|t| t.note.is_none() && t.slope_per_hour > 0.0 && t.r2 >= th.min_r2)
        .filter(|t| t.halves_per_hour.is_some_and(|(a, b)| a > 0.0 && b > 0.0))
        .filter(|t| t.slope_per_hour / 3600.0 * span_s > 3.0 * t.noise.unwrap_or(0.0))
        .map(|t| {
            format!(
                "{} {} (R² {:.2})",
                t.series,
                per_hour(&t.series, t.slope_per_hour),
                t.r2
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::trend::trend;
    use super::*;

    #[test]
    fn steadily_rising_jfr_series_are_said() {
        let th = LeakThresholds::default();
        let rise: Vec<(f64, f64)> = (0..12).map(|i| (i as f64 * 10.0, 1.0 + i as f64)).collect();
        let flat: Vec<(f64, f64)> = (0..12)
            .map(|i| (i as f64 * 10.0, 3.0 + (i % 2) as f64))
            .collect();
        let step: Vec<(f64, f64)> = (0..12)
            .map(|i| (i as f64 * 10.0, if i < 6 { 1.0 } else { 9.0 }))
            .collect();
        let short: Vec<(f64, f64)> = (0..4).map(|i| (i as f64 * 10.0, i as f64)).collect();
        let trends = vec![
            trend("jvm.jfr.monitor_blocked_threads", &rise, 0.0, 120.0, &th),
            trend("jvm.jfr.parked_threads", &flat, 0.0, 120.0, &th),
            trend("jvm.jfr.gc_pause_ms_per_s", &step, 0.0, 120.0, &th),
            trend("jvm.jfr.park_waits_per_s", &short, 0.0, 120.0, &th),
            trend("target.threads", &rise, 0.0, 120.0, &th),
        ];
        let said = rising_jfr(&trends, &th, 120.0);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].starts_with("jvm.jfr.monitor_blocked_threads +360.00/h"),
            "{said:?}"
        );
    }
}
