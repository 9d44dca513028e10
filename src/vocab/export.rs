//! The live export's record in the run directory: one row per remote-write
//! push in `export.jsonl` ([`crate::vocab::files::EXPORT_LOG`]), written by
//! the exporter's push thread, so failed pushes are counted per second
//! where the run's other evidence is, not only on stderr; and their tally
//! ([`ExportTally`], `summary.json`'s `export`).

use serde::{Deserialize, Serialize};

/// One remote-write push.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PushRow {
    /// When it ended, Unix seconds.
    pub t: f64,
    pub ok: bool,
    /// Why it failed (HTTP status and body, timeout, refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The push of the final figures, after the last window.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub last: bool,
}

/// What the remote-write pushes did, tallied from `export.jsonl`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExportTally {
    pub pushes: u64,
    pub push_failures: u64,
    /// Run seconds (from the run's start) in which a push failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_seconds: Vec<u64>,
    /// The first failure's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// The push of the final figures reached the receiver (`false`: it
    /// failed, or the run ended before it came back).
    pub final_pushed: bool,
}

impl ExportTally {
    /// The rows of a run that started at `started_at` (Unix seconds).
    pub fn of(rows: &[PushRow], started_at: f64) -> ExportTally {
        let mut t = ExportTally::default();
        for r in rows {
            t.pushes += 1;
            if r.ok {
                t.final_pushed |= r.last;
                continue;
            }
            t.push_failures += 1;
            let second = (r.t - started_at).max(0.0) as u64;
            if t.failed_seconds.last() != Some(&second) {
                t.failed_seconds.push(second);
            }
            if t.first_error.is_none() {
                t.first_error = r.error.clone();
            }
        }
        t
    }
}
