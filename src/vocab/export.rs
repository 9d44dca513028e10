//! The live export's record in the run directory: one row per remote-write
//! push in `export.jsonl` ([`crate::vocab::files::EXPORT_LOG`]), written by
//! the exporter's push thread, so failed pushes are counted per second
//! where the run's other evidence is, not only on stderr.

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
