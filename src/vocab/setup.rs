//! What a run's `setup:` or `teardown:` did, once, outside the load: each
//! step's outcome, status and time, and whether the whole went through.
//! The engine makes it, the run directory keeps it (`setup.json`), the
//! summary shows it (`setup`, `teardown`). It never holds a value a step
//! extracted — those may be secrets — only the names.

use serde::{Deserialize, Serialize};

/// One step as it went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OnceStep {
    pub name: String,
    /// The outcome class (`ok`, `http_error`, `timeout`, `check_failed`, …).
    pub outcome: String,
    /// The answer's status; absent when no answer came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// From the send to the end of the answer.
    pub latency_ms: f64,
    /// What went wrong, when it did (a status, a check or extraction, the
    /// client's message); never a body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A setup's or a teardown's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OnceRecord {
    /// Every step went through (an `optional` step may have failed) and,
    /// for a setup, every name was extracted.
    pub ok: bool,
    /// From the first send to the last answer.
    pub took_ms: f64,
    pub steps: Vec<OnceStep>,
    /// The names the steps extracted (`{{ setup.NAME }}`), never their values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extracted: Vec<String>,
    /// Why it failed, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The shard (1-based) that ran it for the whole sharded run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<u32>,
}

impl OnceRecord {
    /// A record of nothing sent yet (`ok` until a step fails).
    pub fn begun(extracted: Vec<String>) -> OnceRecord {
        OnceRecord {
            ok: true,
            took_ms: 0.0,
            steps: Vec::new(),
            extracted,
            error: None,
            shard: None,
        }
    }

    /// A record of steps that could not run at all, and why.
    pub fn failed(error: String) -> OnceRecord {
        OnceRecord {
            ok: false,
            error: Some(error),
            ..OnceRecord::begun(Vec::new())
        }
    }

    /// One line for the terminal and the report: `setup: 2 step(s) ok in 14 ms`.
    pub fn line(&self, what: &str) -> String {
        let by = self
            .shard
            .map(|s| format!(" (on shard {s})"))
            .unwrap_or_default();
        if self.ok {
            format!(
                "{what}: {} step(s) ok in {:.0} ms{by}",
                self.steps.len(),
                self.took_ms
            )
        } else {
            format!(
                "{what} FAILED{by}: {}",
                self.error.as_deref().unwrap_or("a step failed")
            )
        }
    }
}

/// `setup.json`: the setup's record and, once the load ended, the teardown's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OnceFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<OnceRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teardown: Option<OnceRecord>,
}
