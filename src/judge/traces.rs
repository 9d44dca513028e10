//! `summary.json`'s `traces`: what `target.trace` sent and the slowest
//! traced requests of each phase (their ids, latency, class, when), with
//! the link template the report uses.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::metrics::traces::TraceRow;
use crate::rundir::RunData;
use crate::vocab::Percent;

/// `summary.json`'s `traces` (absent when the run sent no trace context).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TracesSummary {
    /// The header that carried the trace context (`traceparent`).
    pub header: String,
    /// The share of requests that carried one.
    pub sample: Percent,
    /// Traced requests answered (any class).
    pub sent: u64,
    /// Per phase, its slowest traced requests (by brunt's latency from the
    /// intended start), slowest first, at most `metrics::traces::KEEP`.
    pub slowest_by_phase: BTreeMap<String, Vec<TraceRow>>,
    /// The link to one trace, `{trace_id}` in it (`target.trace.url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_url: Option<String>,
}

impl TracesSummary {
    /// From the run's `target.trace` and what `traces.jsonl` holds.
    pub fn of(data: &RunData) -> Option<TracesSummary> {
        let meta = data.meta.trace.as_ref()?;
        let t = data.traces.clone().unwrap_or_default();
        Some(TracesSummary {
            header: meta.header.clone(),
            sample: meta.sample,
            sent: t.sent,
            slowest_by_phase: t.slowest_by_phase,
            trace_url: meta.url.clone(),
        })
    }

    /// The link to `trace_id`, when there is a template.
    pub fn link(&self, trace_id: &str) -> Option<String> {
        link(self.trace_url.as_deref(), trace_id)
    }

    /// The slowest traced request of `phase` (the worst phase by p99, chosen by the caller).
    pub fn slowest_of(&self, phase: &str) -> Option<&TraceRow> {
        self.slowest_by_phase.get(phase).and_then(|v| v.first())
    }
}

/// `template` with `{trace_id}` replaced.
pub fn link(template: Option<&str>, trace_id: &str) -> Option<String> {
    template.map(|t| t.replace("{trace_id}", trace_id))
}
