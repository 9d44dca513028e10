//! The run's clock: every time series (load windows, collector samples,
//! diagnostics) is stamped as an offset from its start.

use std::time::{Duration, Instant, SystemTime};

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
