//! One run end to end: compile the profile, start the recorder, the collectors
//! and the engine, then write the report. Also the hooks through which
//! collectors follow a run without ever stalling it.

use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

/// The run's clock: every time series (load windows, collector samples,
/// diagnostics) is stamped as an offset from `start`.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    pub start: Instant,
    pub start_wall: SystemTime,
}

impl RunClock {
    pub fn now() -> Self {
        RunClock {
            start: Instant::now(),
            start_wall: SystemTime::now(),
        }
    }
    /// Time since the run started.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }
    /// Unix time in seconds (fractional) of the run start.
    pub fn start_unix(&self) -> f64 {
        self.start_wall
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
    }
}

/// A phase (or stress step) of the compiled schedule, as seen by observers and reports.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PhaseInfo {
    pub index: usize,
    /// Unique, tag-safe name (`step-3`, `spike`, `stage-2`): no spaces or commas.
    pub name: String,
    /// Human description, e.g. `600/s` or `50 VUs`.
    pub label: String,
    /// Offset of the phase start from the run start.
    #[serde(with = "humantime_serde")]
    pub start: Duration,
    #[serde(with = "humantime_serde")]
    pub duration: Duration,
}

/// What one 1-s window of load looked like (sent to observers once a second).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WindowStats {
    /// Window index = whole seconds since the run start.
    pub second: u64,
    /// Index of the phase that was running at the end of the window.
    pub phase: usize,
    /// Requests due to start in this window (sent + dropped).
    pub offered: u64,
    /// Requests completed in this window, any outcome.
    pub completed: u64,
    pub ok: u64,
    pub shed: u64,
    /// Every non-ok, non-shed outcome, dropped included.
    pub errors: u64,
    pub in_flight: u64,
    /// Latency from the intended start, all completed requests, microseconds.
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

/// Follows a run from outside the load path. Called from the recorder thread
/// (never from a load worker); implementations must return quickly and hand
/// slow work to their own threads.
pub trait RunObserver: Send + Sync {
    fn phase_started(&self, _phase: &PhaseInfo, _clock: &RunClock) {}
    fn window(&self, _stats: &WindowStats) {}
    /// The load has ended (or was interrupted); flush and stop.
    fn finished(&self) {}
}
