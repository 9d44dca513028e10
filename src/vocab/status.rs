//! The one vocabulary of gates — a budget, the knee against
//! `expect_capacity`, a shape's check as a gate, a `--fail-if` of
//! `brunt compare`: PASS, FAIL, or NO DATA (nothing in scope to measure,
//! which is not a pass). Serialized as those words in `summary.json`.

use serde::{Deserialize, Serialize};

/// What a budget or a gate came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    #[serde(rename = "PASS")]
    Pass,
    #[serde(rename = "FAIL")]
    Fail,
    /// Nothing in scope to measure: not a pass.
    #[serde(rename = "NO DATA")]
    NoData,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::NoData => "NO DATA",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}
