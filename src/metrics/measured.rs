//! What a run measured, per phase and whole, and whether brunt itself kept
//! up while measuring it: the recorder's results, the judge's input.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Stats;
use crate::vocab::PhaseInfo;

/// Per-phase stats in plan order, plus the whole run.
pub struct Measured {
    pub phases: Vec<Stats>,
    pub run: Stats,
}

impl Measured {
    /// Per-phase stats with durations: a phase cut short by a stop counts
    /// only the time it ran.
    pub fn new(plan: &[PhaseInfo], mut phases: Vec<Stats>, elapsed: Duration) -> Self {
        phases.resize_with(plan.len(), Stats::default);
        let mut run = Stats::default();
        for (s, p) in phases.iter_mut().zip(plan) {
            let ran = elapsed.saturating_sub(p.start).min(p.duration);
            s.duration = ran;
            run.merge(s);
        }
        run.duration = elapsed.min(plan.last().map(|p| p.end()).unwrap_or(elapsed));
        Measured { phases, run }
    }
}

/// Did brunt keep up? Two signals per second: the busiest load worker's
/// CPU (a worker near 100% of a core cannot start requests on time, and its
/// queue grows as if the server were slow) and the open-model scheduler's
/// lateness (a few ms is timer granularity; far more means the machine is
/// overloaded). Either makes part of the measured latency brunt's own.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct GeneratorHealth {
    pub max_sched_lag_ms: f64,
    pub max_worker_cpu_pct: f64,
    /// Second of the run where it looked worst.
    pub worst_second: u64,
    /// Seconds in which a worker was busy or the scheduler late beyond the limits.
    pub late_seconds: u64,
}

impl GeneratorHealth {
    pub const LATE_MS: f64 = 20.0;
    pub const BUSY_PCT: f64 = 90.0;

    pub fn observe(&mut self, second: u64, lag_us: u64, busy_pct: f64) {
        let ms = lag_us as f64 / 1000.0;
        if ms > self.max_sched_lag_ms || busy_pct > self.max_worker_cpu_pct {
            self.worst_second = second;
        }
        self.max_sched_lag_ms = self.max_sched_lag_ms.max(ms);
        self.max_worker_cpu_pct = self.max_worker_cpu_pct.max(busy_pct);
        if Self::saturated_at(ms, busy_pct) {
            self.late_seconds += 1;
        }
    }
    /// The one rule for a saturated generator: the scheduler later than
    /// [`Self::LATE_MS`] or a worker at least [`Self::BUSY_PCT`] busy.
    pub fn saturated_at(lag_ms: f64, busy_pct: f64) -> bool {
        lag_ms > Self::LATE_MS || busy_pct >= Self::BUSY_PCT
    }
    pub fn saturated(&self) -> bool {
        self.late_seconds > 0
    }
}

/// Histograms of all answers merged over time windows (seconds since the
/// run start): how the judge asks for "p99 of the first fifth" without
/// knowing where the intervals live. A run directory's latency log answers
/// it by streaming; tests answer from memory with [`InMemoryWindows`].
pub trait LatencyWindows {
    /// One merged histogram per `[from, to)` window, over the 1-s windows that start in it.
    fn merged(&self, windows: &[(f64, f64)]) -> Result<Vec<hdrhistogram::Histogram<u64>>, String>;
}

/// Per-second histograms held in memory (short runs, tests).
#[derive(Default)]
pub struct InMemoryWindows(pub Vec<(f64, hdrhistogram::Histogram<u64>)>);

impl LatencyWindows for InMemoryWindows {
    fn merged(&self, windows: &[(f64, f64)]) -> Result<Vec<hdrhistogram::Histogram<u64>>, String> {
        let mut hs: Vec<_> = windows.iter().map(|_| super::new_hist()).collect();
        for (t, hist) in &self.0 {
            for (h, (a, b)) in hs.iter_mut().zip(windows) {
                if t >= a && t < b {
                    h.add(hist).map_err(|e| format!("{e:?}"))?;
                }
            }
        }
        Ok(hs)
    }
}

#[cfg(test)]
mod tests {
    use super::GeneratorHealth;

    #[test]
    fn saturated_is_one_rule() {
        assert!(!GeneratorHealth::saturated_at(0.0, 0.0));
        assert!(!GeneratorHealth::saturated_at(
            GeneratorHealth::LATE_MS,
            89.9
        ));
        assert!(GeneratorHealth::saturated_at(20.1, 0.0));
        assert!(GeneratorHealth::saturated_at(
            0.0,
            GeneratorHealth::BUSY_PCT
        ));
        let mut h = GeneratorHealth::default();
        h.observe(1, 20_000, 10.0);
        h.observe(2, 25_000, 10.0);
        assert_eq!(h.late_seconds, 1);
    }
}
