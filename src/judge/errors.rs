//! `summary.json`'s `errors`: the errors table of a run — per class, the
//! request and what went wrong (status, failed check, the client's
//! message), most frequent first, with a few sample bodies — laid out
//! from the tally `errors.jsonl` holds. A class's rows add up to its
//! count in `totals.by_class`; `dropped` (due but never sent) has a row
//! of its own.

use serde::{Deserialize, Serialize};

use crate::metrics::errors::{ErrorKey, ErrorTally, What};
use crate::metrics::Stats;

/// The class name of the row for requests dropped at `max_in_flight`.
pub const DROPPED: &str = "dropped";

/// One row: how many answers of `class` to `request` went wrong this way.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ErrorRow {
    pub class: String,
    /// The request's name (empty for `dropped`: no request was picked).
    pub request: String,
    /// `status`, `check` or `message`.
    #[serde(flatten)]
    pub what: What,
    pub count: u64,
}

/// The start of one answer's body (at most 512 bytes), the first of its row.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ErrorSampleRow {
    pub class: String,
    pub request: String,
    #[serde(flatten)]
    pub what: What,
    pub body: String,
}

/// The errors table.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ErrorsTable {
    /// Most frequent first.
    pub rows: Vec<ErrorRow>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<ErrorSampleRow>,
}

impl ErrorsTable {
    /// The table of a run: its tally, names from `requests`, and the run's
    /// dropped requests; `None` when nothing went wrong.
    pub fn of(tally: &ErrorTally, requests: &[String], run: &Stats) -> Option<ErrorsTable> {
        let name = |k: &ErrorKey| requests.get(k.request).cloned().unwrap_or_default();
        let mut rows: Vec<ErrorRow> = tally
            .counts
            .iter()
            .map(|(k, n)| ErrorRow {
                class: k.class.name().into(),
                request: name(k),
                what: k.what.clone(),
                count: *n,
            })
            .collect();
        if run.dropped > 0 {
            rows.push(ErrorRow {
                class: DROPPED.into(),
                request: String::new(),
                what: What::Message("due but not sent: load.max_in_flight reached".into()),
                count: run.dropped,
            });
        }
        if rows.is_empty() {
            return None;
        }
        rows.sort_by_key(|r| std::cmp::Reverse(r.count));
        let samples = tally
            .samples
            .iter()
            .map(|s| ErrorSampleRow {
                class: s.key.class.name().into(),
                request: name(&s.key),
                what: s.key.what.clone(),
                body: s.body.clone(),
            })
            .collect();
        Some(ErrorsTable { rows, samples })
    }

    /// The sum of the rows of `class`.
    pub fn class_total(&self, class: &str) -> u64 {
        self.rows
            .iter()
            .filter(|r| r.class == class)
            .map(|r| r.count)
            .sum()
    }
}
