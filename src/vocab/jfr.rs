//! JFR figures both sides of the collectors speak: a recording's totals
//! (what the diagnosis reads from a window file) and the row of
//! `diagnostics/jfr-windows.jsonl` the collectors write and `rundir` reads back.

use serde::{Deserialize, Serialize};

/// Totals of one recording (or of its part after a cut): the per-window
/// figures of a windowed JFR collector. Counts are events over the
/// settings' thresholds (`profile`: 10 ms monitor entries and parks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct JfrTotals {
    /// `jdk.JavaMonitorEnter`: threads that blocked entering a monitor.
    pub monitor_enter: u64,
    pub monitor_enter_ms: f64,
    /// `jdk.ThreadPark` outside idle executor waits (pool, lock, latch waits).
    pub park: u64,
    pub park_ms: f64,
    /// `jdk.VirtualThreadPinned`.
    pub pinned: u64,
    pub pinned_ms: f64,
    /// Sum of `jdk.ObjectAllocationSample` weights: the bytes allocated.
    pub alloc_bytes: f64,
    pub alloc_samples: u64,
    /// `jdk.GarbageCollection`: collections and their summed pauses.
    pub gc: u64,
    pub gc_pause_ms: f64,
    /// First and last event end counted (target's clock, Unix seconds).
    pub first_unix: Option<f64>,
    pub last_unix: Option<f64>,
}

impl JfrTotals {
    /// Count an event that ended at `end_unix` (target clock) into the span.
    pub fn saw(&mut self, end_unix: f64) {
        self.first_unix = Some(self.first_unix.map_or(end_unix, |f| f.min(end_unix)));
        self.last_unix = Some(self.last_unix.map_or(end_unix, |l| l.max(end_unix)));
    }
}

/// One row of `jfr-windows.jsonl` (beside the `t` and `phase` every row
/// has): a window's span, file and totals. The figures are optional when
/// read: an older row without one has no figure, not a zero.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JfrWindowRow {
    pub from_t: f64,
    pub to_t: f64,
    #[serde(default)]
    pub span_s: f64,
    /// Relative to the run directory (the file may have been pruned since).
    #[serde(default)]
    pub file: String,
    #[serde(default)]
    pub bytes: u64,
    #[serde(default)]
    pub monitor_enter: Option<u64>,
    #[serde(default)]
    pub monitor_enter_ms: Option<f64>,
    #[serde(default)]
    pub park: Option<u64>,
    #[serde(default)]
    pub park_ms: Option<f64>,
    #[serde(default)]
    pub pinned: Option<u64>,
    #[serde(default)]
    pub pinned_ms: Option<f64>,
    #[serde(default)]
    pub alloc_bytes: Option<f64>,
    #[serde(default)]
    pub alloc_samples: Option<u64>,
    #[serde(default)]
    pub gc: Option<u64>,
    #[serde(default)]
    pub gc_pause_ms: Option<f64>,
    /// The window's number (numbers its file).
    #[serde(default)]
    pub n: u32,
    /// The JVM recording it.
    #[serde(default)]
    pub pid: Option<u32>,
    /// Parts of the window file that could not be read.
    #[serde(default)]
    pub warnings: usize,
}

impl JfrWindowRow {
    /// The row for a window from `from_t` to `to_t` (run clock), rounded as stored.
    pub fn new(from_t: f64, to_t: f64, file: String, bytes: u64, t: &JfrTotals) -> Self {
        let r3 = |v: f64| (v * 1000.0).round() / 1000.0;
        JfrWindowRow {
            from_t: r3(from_t),
            to_t: r3(to_t),
            span_s: r3(to_t - from_t),
            file,
            bytes,
            monitor_enter: Some(t.monitor_enter),
            monitor_enter_ms: Some(r3(t.monitor_enter_ms)),
            park: Some(t.park),
            park_ms: Some(r3(t.park_ms)),
            pinned: Some(t.pinned),
            pinned_ms: Some(r3(t.pinned_ms)),
            alloc_bytes: Some(t.alloc_bytes.round()),
            alloc_samples: Some(t.alloc_samples),
            gc: Some(t.gc),
            gc_pause_ms: Some(r3(t.gc_pause_ms)),
            ..Default::default()
        }
    }
}
