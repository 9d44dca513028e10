//! Collectors: sample the target's host and JVM while the load runs (placeholder until issue 3).
//!
//! The engine never waits on a collector: collectors see the run only through
//! [`crate::run::RunObserver`] callbacks made off the load workers.

use serde::{Deserialize, Serialize};

/// The `collectors:` section of a profile.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectorsConfig {}

/// What the collectors captured, as indexed in `summary.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CollectorsSummary {}
