//! What a budget or a gate came to: its status and the verdict as
//! `summary.json` keeps it (older runs' form read too).

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a budget or a gate came to: the one gate vocabulary, in `vocab`.
pub use crate::vocab::Status;

/// A budget's result on one scope.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(from = "VerdictWire")]
pub struct Verdict {
    pub budget: String,
    /// `run` or a phase name.
    pub scope: String,
    pub value: f64,
    pub shown: String,
    pub limit: String,
    /// `status == Pass` (kept for readers of `brunt.summary/1` before `status`).
    pub pass: bool,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The budget is on a latency (see [`Budget::measures_time`]).
    #[serde(default)]
    pub latency: bool,
}

/// [`Verdict`] as read: summaries written before `status` existed get it from `pass`.
#[derive(Deserialize)]
struct VerdictWire {
    budget: String,
    scope: String,
    value: f64,
    shown: String,
    limit: String,
    pass: bool,
    #[serde(default)]
    status: Option<Status>,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    latency: bool,
}

impl From<VerdictWire> for Verdict {
    fn from(w: VerdictWire) -> Self {
        let status = w
            .status
            .unwrap_or(if w.pass { Status::Pass } else { Status::Fail });
        Verdict {
            budget: w.budget,
            scope: w.scope,
            value: w.value,
            shown: w.shown,
            limit: w.limit,
            pass: status == Status::Pass,
            status,
            note: w.note,
            latency: w.latency,
        }
    }
}

impl Verdict {
    /// The right-hand side of the budget: `< 500ms` of `p99 < 500ms`.
    pub fn expected(&self) -> String {
        match self.budget.find(['<', '>']) {
            Some(i) => self.budget[i..].trim().to_string(),
            None => self.budget.clone(),
        }
    }

    /// What was measured, or why nothing was.
    pub fn measured(&self) -> String {
        match self.status {
            Status::NoData => self
                .note
                .clone()
                .unwrap_or_else(|| "nothing to measure".into()),
            _ => self.shown.clone(),
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.status {
            Status::NoData => write!(
                f,
                "{} {:<28} [{}] nothing measured",
                self.status, self.budget, self.scope
            ),
            _ => write!(
                f,
                "{} {:<28} [{}] measured {}",
                self.status, self.budget, self.scope, self.shown
            ),
        }
    }
}
