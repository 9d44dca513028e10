//! The YAML profile: the map of its rooms and the names other modules use.
//! Each job has its file: the section types ([`sections`]), reading a file
//! with file/line/column errors ([`load`], placing them with [`locate`]),
//! the `--set` override language ([`overrides`]) and the checks serde cannot
//! express ([`validate`]); the gRPC sections' types ([`grpc`]); [`shape`]
//! compiles the load shape into named phases.
//!
//! Parsing is `serde-saphyr` (pure Rust, budgets against YAML bombs, line and
//! column in every error); durations use `humantime` (`90s`, `5m`, `1h 30m`).

pub mod collectors;
pub mod grpc;
mod load;
mod locate;
mod overrides;
pub mod schema;
pub mod sections;
pub mod shape;
mod steps;
pub mod template;
mod validate;
pub mod verdicts;
pub mod ws;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use crate::vocab::{Level, Model, PerHour, Percent};
pub use grpc::{GrpcCallSpec, GrpcTargetSpec};
pub use sections::*;
pub use shape::{Hold, Phase, Plan, Shape};
pub use steps::{Loop, RefreshSpec, Repeat};
pub use validate::target_url;

use collectors::CollectorsConfig;

/// Why a profile could not be used. Every variant names the file.
#[derive(Debug, Error)]
pub enum ProfileError {
    #[error("cannot read profile {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: {message}")]
    Syntax {
        path: PathBuf,
        line: u64,
        column: u64,
        message: String,
        /// The parser's rendering with a source snippet.
        snippet: String,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    /// A `--set key.path=value` that does not fit the profile.
    #[error("--set {key}={value}: {message}")]
    Override {
        key: String,
        value: String,
        message: String,
    },
}

/// A whole profile, as written in YAML.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Names the run directory and the report.
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    pub target: TargetSpec,
    /// The request mix: each request (and each scenario) is picked with probability weight / sum.
    #[serde(default)]
    pub requests: Vec<RequestSpec>,
    /// Step sequences in the mix: one pick runs every step in order on one
    /// connection; `extract` takes values from an answer for later steps' `{{ vars.NAME }}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<ScenarioSpec>,
    /// Steps run once before the first phase, not measured in the phases
    /// (their own timings go to the summary); what they `extract` every
    /// request reads as `{{ setup.NAME }}`. A failed setup stops the run
    /// before any load (exit 1). Sharded: shard 1 runs it for all (`--control`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup: Vec<RequestSpec>,
    /// Steps run once after the last phase (after a stop too); a failure is
    /// reported and leaves the load's verdict as it is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub teardown: Vec<RequestSpec>,
    #[serde(default)]
    pub load: LoadSpec,
    pub shape: Shape,
    /// Budget expressions, e.g. `p99 < 500ms`; see [`crate::budgets`].
    #[serde(default)]
    pub budgets: Vec<crate::budgets::BudgetSpec>,
    #[serde(default)]
    pub output: OutputSpec,
    #[serde(default)]
    pub collectors: CollectorsConfig,
    /// How captured diagnostics are read (extra pool recognisers).
    #[serde(default)]
    pub diagnosis: DiagnosisSpec,
    /// Thresholds of the verdicts (soak leak limits), see [`crate::judge`].
    #[serde(default)]
    pub verdicts: verdicts::VerdictsConfig,
    /// Data files whose rows feed templates (`{{ feeder.NAME.COLUMN }}`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feeders: BTreeMap<String, FeederSpec>,
}

impl Profile {
    /// What step and iteration budgets are resolved against, in engine
    /// order: each request's full name (`item`, `shop/login` — what the
    /// reports show) with a scenario step's own name, then the WebSocket
    /// steps' outcome names ([`ws::outcome_names`]), and the scenarios.
    pub fn budget_names(&self) -> crate::budgets::Names<'_> {
        let mut requests: Vec<(String, Option<String>)> = self
            .all_requests()
            .into_iter()
            .map(|(_, sc, r)| match sc.and_then(|k| self.scenarios.get(k)) {
                Some(sc) => (format!("{}/{}", sc.name, r.label()), Some(r.label())),
                None => (r.label(), None),
            })
            .collect();
        requests.extend(self.ws_outcome_names());
        crate::budgets::Names {
            requests,
            scenarios: self.scenarios.iter().map(|s| s.name.as_str()).collect(),
        }
    }

    /// Every budget parsed and its step or scenario name resolved; the first
    /// that fails is the error, naming the budget.
    pub fn compile_budgets(&self) -> Result<Vec<crate::budgets::Budget>, String> {
        let names = self.budget_names();
        let mut out = crate::budgets::compile(&self.budgets).map_err(|e| e.0)?;
        for (b, spec) in out.iter_mut().zip(&self.budgets) {
            b.resolve(&names)
                .map_err(|e| format!("budget `{}`: {}", spec.expr(), e.0))?;
        }
        Ok(out)
    }

    /// Every request the engine sends, in mix order: the `requests`, then each
    /// scenario's steps; with the key naming it in errors (`requests[0]`,
    /// `scenarios[1].steps[0]`, the index counting a block's steps in its
    /// place) and its scenario's index.
    pub fn all_requests(&self) -> Vec<(String, Option<usize>, &RequestSpec)> {
        let mut out: Vec<(String, Option<usize>, &RequestSpec)> = self
            .requests
            .iter()
            .enumerate()
            .map(|(i, r)| (format!("requests[{i}]"), None, r))
            .collect();
        for (s, sc) in self.scenarios.iter().enumerate() {
            for (j, r) in sc.flat_steps().into_iter().enumerate() {
                out.push((format!("scenarios[{s}].steps[{j}]"), Some(s), r));
            }
        }
        out
    }

    /// The `setup:` and `teardown:` steps, each with its key (`setup[0]`,
    /// `teardown[1]`): run once, never in the mix.
    pub fn once_steps(&self) -> Vec<(String, &RequestSpec)> {
        let mut out = Vec::new();
        for (sect, steps) in [("setup", &self.setup), ("teardown", &self.teardown)] {
            for (j, r) in steps.iter().enumerate() {
                out.push((format!("{sect}[{j}]"), r));
            }
        }
        out
    }

    /// Compile the shape into the phases the engine runs. `time_scale`
    /// multiplies every phase duration (e.g. 0.1 for a quick rehearsal).
    pub fn plan(&self, time_scale: f64) -> Plan {
        self.shape.compile(self.load.model, time_scale)
    }
}
