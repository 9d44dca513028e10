//! Diagnosis: thread dumps, JFR recordings and pinning traces into findings (placeholder until issue 4).

use serde::{Deserialize, Serialize};

/// Findings read from a set of diagnostic files.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Analysis {}
