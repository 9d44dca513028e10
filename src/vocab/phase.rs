//! Phases of a compiled schedule, the kinds of model and shape, and what
//! observers of a run see of it once a second.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::clock::RunClock;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Model {
    /// Requests start on a schedule whatever the server does (arrival rate).
    #[default]
    Open,
    /// A fixed number of virtual users, each waiting for its answer.
    Closed,
}

impl Model {
    /// The unit of a level in this model, as printed after the number.
    pub fn unit(self) -> &'static str {
        match self {
            Model::Open => "/s",
            Model::Closed => " VUs",
        }
    }
}

/// What the shape asks of the run beyond its phases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ShapeKind {
    Constant,
    Stress {
        stop_on_breach: bool,
        expect_capacity: Option<f64>,
    },
    Soak {
        #[serde(with = "humantime_serde")]
        warmup: Option<Duration>,
    },
    Spike,
    Overload {
        #[serde(with = "humantime_serde")]
        fast_fail: Duration,
        /// `shape.overload.expect_capacity`: the capacity the shed checks
        /// measure against instead of the one seen on the way up.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expect_capacity: Option<f64>,
    },
    Stages,
}

impl ShapeKind {
    pub fn name(&self) -> &'static str {
        match self {
            ShapeKind::Constant => "constant",
            ShapeKind::Stress { .. } => "stress",
            ShapeKind::Soak { .. } => "soak",
            ShapeKind::Spike => "spike",
            ShapeKind::Overload { .. } => "overload",
            ShapeKind::Stages => "stages",
        }
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
    /// The level the phase ends at (requests/s or VUs, see the run's model):
    /// the number behind `label`, so nothing parses labels back.
    /// `None` only in run directories written before levels were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<f64>,
}

/// The name of the warm-up phase (`shape.<kind>.warmup`): sent, recorded and
/// shown, but judged by nothing (budgets, the knee, verdicts, gates, leak trends).
pub const WARMUP: &str = "warmup";

impl PhaseInfo {
    pub fn end(&self) -> Duration {
        self.start + self.duration
    }
    /// The warm-up phase, left out of every judgement.
    pub fn is_warmup(&self) -> bool {
        self.name == WARMUP
    }
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
    /// p99 of the ok answers alone and of the shed ones (0: none).
    #[serde(default)]
    pub ok_p99_us: u64,
    #[serde(default)]
    pub shed_p99_us: u64,
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
