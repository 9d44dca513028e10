//! The answers a run exists for, one per load shape, each with the measured
//! values behind it (stored in full in `summary.json`, shown in brief by the
//! terminal summary and at the top of `report.html`):
//!
//! - **stress**: per step offered/achieved, percentiles, errors and the
//!   server side seen in that step; the capacity, the first breaking step and
//!   the cause at that step: high target CPU = *saturation*; low target CPU
//!   with a rising tail = *contention*; a busy generator = *untrustworthy*;
//!   no server-side data = *unknown*, said plainly.
//! - **overload**: PASS/FAIL checks of load shedding (listed in [`overload`]).
//! - **spike**: how long until the 1-s p99 is back within budget after the
//!   spike starts and after it ends; errors during the spike.
//! - **soak**: per-hour trend (Theil–Sen slope, least-squares R²) of every
//!   server-side series after the warm-up, p99 drift first vs last fifth of
//!   the run (merged histograms from `latency.hlog`), and a leak verdict
//!   against the thresholds of the profile's `verdicts.leaks` section.
//!
//! "Within budget" for a 1-s window means the profile's `p99` budget (one
//! scoped to the phase at hand first, then an unscoped one, class none or
//! `ok`); without one, twice the baseline phase's p99 (at least +5 ms), and
//! the verdict says which bound it used. A recovery counts once the bound
//! holds for 3 seconds in a row (or until the data ends), so one lucky
//! second does not count as recovered.
//!
//! | file | owns |
//! |---|---|
//! | [`summary`] | `summary.json`'s content and [`build`], budgets judged per scope |
//! | [`server_side`] | `server_side`: whether the target's side was seen, judged from the collectors' index |
//! | [`finish`] | the one finishing sequence: a [`Judging`] judged into the complete summary |
//! | [`gates`] | every gate of the result (budgets, knee vs `expect_capacity`, shape checks) |
//! | [`verdict`] | the result types of every shape's verdict |
//! | [`rules`] | the p99 bound of a 1-s window, good and stable seconds, small helpers |
//! | [`knee`] | the unscoped budgets step by step: the knee and the first breach |
//! | [`stress`], [`cause`] | the stress verdict's table and the cause at the first breach |
//! | [`overload`], [`spike`], [`soak`] | one file per shape |
//! | [`trend`] | slopes and fits of server-side series |
//! | [`growth`] | what grows in a soak, named: heap class, thread group, sockets, fd kind, native category |
//! | [`threads`] | the per-phase thread table (dumps and JFR, phase by phase) |
//! | [`traces`] | `traces`: the slowest requests sent with a trace context, per phase |
//! | [`wait`] | brunt's own queue: the wait for a lane apart from service time, and when it makes the tail |
//!
//! Every verdict is computed from data in memory: the measured histograms
//! and a [`RunData`] that [`crate::rundir`] read (the judge opens no file).

pub mod cause;
pub mod errors;
pub mod finish;
pub mod gates;
pub mod growth;
pub mod knee;
pub mod overload;
pub mod rules;
pub mod server_side;
pub mod soak;
pub mod spike;
pub mod stress;
pub mod summary;
pub mod threads;
pub mod traces;
pub mod trend;
pub mod verdict;
pub mod wait;

pub use finish::{judge, Ending, Judging};
pub use gates::Gate;
pub use knee::StressResult;
pub use rules::{p99_bound, Bound};
pub use summary::{build, StopKind, Summary, SUMMARY_SCHEMA};
pub use trend::trend;
pub use verdict::*;

use crate::budgets::Budget;
use crate::metrics::Measured;
use crate::profile::verdicts::LeakThresholds;
use crate::rundir::RunData;
use crate::vocab::ShapeKind;

/// Compute the verdict matching the run's shape.
pub fn compute(
    data: &RunData,
    budgets: &[Budget],
    leaks: &LeakThresholds,
    m: &Measured,
    stress: Option<&StressResult>,
) -> Verdicts {
    let (meta, secs) = (&data.meta, &data.seconds);
    let server = data.server.as_ref();
    let mut v = Verdicts {
        server_side: server.is_some_and(|s| s.has_target_data()),
        ..Default::default()
    };
    match &meta.shape {
        ShapeKind::Stress { .. } => {
            v.stress = stress.map(|st| stress::stress_verdict(meta, budgets, m, st, server));
        }
        ShapeKind::Overload {
            fast_fail,
            expect_capacity,
        } => {
            v.overload = overload::overload(
                meta,
                budgets,
                m,
                secs,
                fast_fail.as_secs_f64() * 1000.0,
                *expect_capacity,
                server,
            );
        }
        ShapeKind::Spike => v.spike = spike::spike(meta, budgets, m, secs),
        ShapeKind::Soak { warmup } => {
            // The warm-up is its own phase now; run directories written
            // before that carved it out of the soak phase.
            let warm = if meta.phases.iter().any(|p| p.is_warmup()) {
                0.0
            } else {
                warmup.map(|w| w.as_secs_f64()).unwrap_or(0.0)
            };
            v.soak = soak::soak(meta, m, warm, leaks, server, data.windows.as_deref());
        }
        _ => {}
    }
    v
}

#[cfg(test)]
mod tests {
    use super::cause::classify;
    use super::rules::first_stable_good;
    use super::trend::{least_squares, theil_sen};
    use super::*;
    use crate::evidence::FindingRef;
    use crate::metrics::series::Second;
    use std::collections::BTreeMap;

    #[test]
    fn least_squares_and_theil_sen_on_a_line() {
        let pts: Vec<(f64, f64)> = (0..100).map(|i| (i as f64, 3.0 * i as f64 + 7.0)).collect();
        let (s, i, r2) = least_squares(&pts).expect("fit");
        assert!((s - 3.0).abs() < 1e-9 && (i - 7.0).abs() < 1e-9 && (r2 - 1.0).abs() < 1e-9);
        assert!((theil_sen(&pts).expect("slope") - 3.0).abs() < 1e-9);
        let flat: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 5.0)).collect();
        let (s, _, r2) = least_squares(&flat).expect("fit");
        assert_eq!((s, r2), (0.0, 0.0));
    }

    #[test]
    fn theil_sen_ignores_outliers() {
        let mut pts: Vec<(f64, f64)> = (0..50).map(|i| (i as f64, i as f64)).collect();
        pts[10].1 = 1e9;
        pts[40].1 = -1e9;
        assert!((theil_sen(&pts).expect("slope") - 1.0).abs() < 0.05);
    }

    #[test]
    fn busy_host_with_an_idle_locked_service_is_contention() {
        let step = |host: f64, process: Option<f64>| StepRow {
            name: "step-4".into(),
            label: "100/s".into(),
            level: Some(100.0),
            offered_rate: 100.0,
            achieved_rate: 100.0,
            p50_ms: 5.0,
            p95_ms: 100.0,
            p99_ms: 250.0,
            max_ms: 300.0,
            errors: 0,
            error_rate: 0.0,
            within_budget: false,
            target_cpu_pct: Some(host),
            target_process_cpu_pct: process,
            generator_cpu_pct: Some(5.0),
            generator_lag_ms: Some(0.5),
            threads: BTreeMap::new(),
            top_finding: Some(FindingRef {
                at_s: 10.0,
                phase: Some("step-4".into()),
                severity: "high".into(),
                kind: "lock".into(),
                summary: "9 of 16 threads BLOCKED on com.acme.Inventory".into(),
                evidence: None,
            }),
            abandoned: false,
            connection_wait: None,
            db_finding: None,
        };
        let prev = StepRow {
            p99_ms: 20.0,
            within_budget: true,
            ..step(30.0, Some(2.0))
        };
        let st = StressResult {
            knee: Some("step-3".into()),
            knee_level: Some(80.0),
            first_breach: Some("step-4".into()),
            first_breach_level: Some(100.0),
            breached: vec![],
            expect_capacity: None,
        };
        // Another process fills the host; the service uses 2% of it.
        let (c, why) = classify(&step(100.0, Some(2.0)), Some(&prev), &st, true);
        assert_eq!(c, Cause::Contention, "{why}");
        assert!(
            why.contains("only 2%") && why.contains("Inventory"),
            "{why}"
        );
        // The service itself burns the CPU: saturation, lock or not.
        let (c, _) = classify(&step(100.0, Some(90.0)), Some(&prev), &st, true);
        assert_eq!(c, Cause::Saturation);
        // Without the process figure the host CPU decides, as before.
        let (c, _) = classify(&step(100.0, None), Some(&prev), &st, true);
        assert_eq!(c, Cause::Saturation);
    }

    #[test]
    fn stable_recovery_needs_three_good_seconds() {
        let sec = |t: u64, p99: f64| Second {
            t,
            offered: 10,
            completed: 10,
            ok: 10,
            p99_ms: p99,
            ..Default::default()
        };
        let s = vec![
            sec(0, 100.0),
            sec(1, 5.0),
            sec(2, 100.0),
            sec(3, 5.0),
            sec(4, 5.0),
            sec(5, 5.0),
        ];
        assert_eq!(first_stable_good(&s, 0.0, 10.0, 10.0, false), Some(3));
        // Near the end of the data, fewer good seconds suffice.
        assert_eq!(first_stable_good(&s[..5], 0.0, 10.0, 10.0, false), Some(3));
        assert_eq!(first_stable_good(&s[..1], 0.0, 10.0, 10.0, false), None);
    }

    fn jitter(i: usize) -> f64 {
        ((i * 7919) % 13) as f64 / 13.0 - 0.5
    }

    #[test]
    fn a_step_then_a_plateau_is_not_a_leak_a_steady_ramp_is() {
        let th = LeakThresholds::default(); // rss 50 MB/h
                                            // 120 s of RSS sampled every second: 300 MB, one 7.6 MB step at 20 s
                                            // (a pool filling, a class loaded), then flat with ±50 kB of noise.
                                            // Over the window that is ≈ +200 MB/h, with a decent R².
        let step: Vec<(f64, f64)> = (0..120)
            .map(|i| {
                let t = i as f64;
                let y = 300e6 + if t >= 20.0 { 7.6e6 } else { 0.0 } + 1e5 * jitter(i);
                (t, y)
            })
            .collect();
        let t = trend("target.rss_bytes", &step, 0.0, 1e9, &th);
        assert!(!t.flagged, "a step is not a leak: {t:?}");
        assert!(t.note.is_none(), "{t:?}");
        let (h1, h2) = t.halves_per_hour.expect("halves");
        assert!(h2.abs() < 5e6, "flat second half: {t:?}");
        assert!(h1 > 0.0, "the step is in the first half: {t:?}");
        // The same step in the middle of the window: the whole window's
        // Theil–Sen slope is steep (≈ +230 MB/h, R² ≈ 0.75: what the old rule
        // flagged), but each half is flat.
        let mid: Vec<(f64, f64)> = (0..120)
            .map(|i| {
                let y = 300e6 + if i >= 60 { 7.6e6 } else { 0.0 } + 1e5 * jitter(i);
                (i as f64, y)
            })
            .collect();
        let t = trend("target.rss_bytes", &mid, 0.0, 1e9, &th);
        assert!(t.slope_per_hour > 100e6 && t.r2 >= th.min_r2, "{t:?}");
        assert!(!t.flagged, "{t:?}");
        let why = t.reason.clone().unwrap_or_default();
        assert!(why.starts_with("not a steady rise"), "{why}");
        // A steady ramp of 0.1 MB/s (360 MB/h) with the same noise: a leak,
        // with the slope near the truth.
        let ramp: Vec<(f64, f64)> = (0..120)
            .map(|i| (i as f64, 300e6 + 1e5 * i as f64 + 1e5 * jitter(i)))
            .collect();
        let t = trend("target.rss_bytes", &ramp, 0.0, 1e9, &th);
        assert!(t.flagged, "{t:?}");
        assert!((t.slope_per_hour - 360e6).abs() < 20e6, "{t:?}");
        let (h1, h2) = t.halves_per_hour.expect("halves");
        assert!(h1 > 50e6 && h2 > 50e6, "{t:?}");
        // A ramp buried in noise far larger than its growth is not flagged.
        let noisy: Vec<(f64, f64)> = (0..120)
            .map(|i| (i as f64, 300e6 + 2e4 * i as f64 + 40e6 * jitter(i)))
            .collect();
        assert!(!trend("target.rss_bytes", &noisy, 0.0, 1e9, &th).flagged);
    }

    #[test]
    fn a_short_window_is_inconclusive_not_extrapolated() {
        let th = LeakThresholds::default();
        // 42 s of a steep rise: far over any per-hour threshold, but too
        // short to claim a per-hour leak.
        let short: Vec<(f64, f64)> = (0..42)
            .map(|i| (i as f64, 300e6 + 1e6 * i as f64))
            .collect();
        let t = trend("target.rss_bytes", &short, 0.0, 1e9, &th);
        assert!(!t.flagged, "{t:?}");
        let note = t.note.clone().unwrap_or_default();
        assert!(note.starts_with("inconclusive: 42 s of data"), "{note}");
        // 60 s but only 6 samples (every 10 s): inconclusive too.
        let sparse: Vec<(f64, f64)> = (0..6)
            .map(|i| ((i * 10) as f64, 300e6 + 1e7 * i as f64))
            .collect();
        let t = trend("target.rss_bytes", &sparse, 0.0, 1e9, &th);
        assert!(!t.flagged && t.note.is_some(), "{t:?}");
        // 60 s sampled every second is enough.
        let enough: Vec<(f64, f64)> = (0..60)
            .map(|i| (i as f64, 300e6 + 1e6 * i as f64))
            .collect();
        let t = trend("target.rss_bytes", &enough, 0.0, 1e9, &th);
        assert!(t.flagged && t.note.is_none(), "{t:?}");
    }
}
