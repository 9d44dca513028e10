//! The run spec: a profile validated and compiled once, before anything
//! starts (ripgrep's two stages: raw input → validated, compiled values).
//! Everything the run needs is compiled here — the plan, the engine's part
//! (target and TLS, the mix's requests, templates, feeders), budgets,
//! collector definitions and pool regexes — so a mistake is reported once,
//! with where it is, and nothing downstream parses the profile again.
//! What changes the compile (`--target`, `--env`, the shard, the base
//! directory, the time scale) goes in as [`CompileInputs`]; the spec is never
//! edited afterwards. `brunt validate` is the same compile, its result dropped.
//!
//! It lives in `run` (not `profile`) because it holds the engine's, the
//! collectors' and the diagnosis's compiled types, which `profile` may not import.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use thiserror::Error;

use crate::budgets::Budget;
use crate::collectors::CollectorsSpec;
use crate::diagnosis::PoolPattern;
use crate::engine::{EngineConfig, EngineError, Shard};
use crate::profile::{Plan, Profile, ProfileError};

/// Why a profile does not compile into a run.
#[derive(Debug, Error)]
pub enum SpecError {
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// The engine's part: target URL, TLS, a request, a template or feeder.
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("the shape compiles to no phase (all durations zero?)")]
    NoPhase,
}

/// What the compile takes beside the profile.
#[derive(Debug, Clone, Default)]
pub struct CompileInputs {
    /// `--target`: beats `target.url`.
    pub target: Option<String>,
    /// Where the built-in demo target listens (`target: builtin`): the run
    /// starts it before the compile. `None` (`brunt validate`): a stand-in.
    pub builtin_url: Option<String>,
    /// `--env KEY=VALUE`: template variables that beat the process environment.
    pub env: BTreeMap<String, String>,
    pub shard: Shard,
    /// Where relative paths of the profile (collector definitions, feeders) resolve.
    pub base_dir: Option<PathBuf>,
    /// Multiplies every phase duration (1.0 when not above zero).
    pub time_scale: f64,
}

impl CompileInputs {
    /// The URL `--target` or the profile asks for (`builtin` included).
    pub fn url_of(&self, profile: &Profile) -> String {
        self.target
            .clone()
            .unwrap_or_else(|| profile.target.url.clone())
    }
}

/// A built-in target's address while none runs (`brunt validate`): it
/// compiles as the demo's own `http://127.0.0.1:PORT` would.
const BUILTIN_STAND_IN: &str = "http://127.0.0.1:1";

/// A profile with everything compiled that the run needs; immutable once built.
pub struct RunSpec {
    /// The profile as run: `--set` applied, `target.url` the one asked for
    /// (`--target` included; `builtin` stays `builtin`). It is what the run
    /// directory keeps: templates still read `{{ env.… }}`, never a value.
    pub profile: Profile,
    /// Where relative paths of the profile (collector definitions, feeder files) resolve.
    pub base_dir: Option<PathBuf>,
    /// The phases, time scale applied.
    pub plan: Plan,
    pub time_scale: f64,
    /// The URL the load goes to (the demo's address for `builtin`).
    pub url: String,
    /// The engine's compiled part: target and TLS, requests, mix, feeders.
    pub engine: Arc<EngineConfig>,
    pub budgets: Vec<Budget>,
    /// The collectors' section compiled: definitions loaded and checked,
    /// Prometheus queries filled in. The run starts the collectors from it.
    pub collectors: CollectorsSpec,
    /// The profile's extra pool recognisers.
    pub pool_patterns: Vec<PoolPattern>,
}

/// What the judge needs of a profile: for `brunt report`, which judges a
/// saved profile again without sending anything.
pub struct JudgeSpec {
    pub budgets: Vec<Budget>,
    pub pool_patterns: Vec<PoolPattern>,
}

impl JudgeSpec {
    /// Compile the budgets and pool patterns; `path` only names the profile in errors.
    pub fn compile(profile: &Profile, path: &Path) -> Result<JudgeSpec, ProfileError> {
        let invalid = |message: String| ProfileError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let budgets = profile.compile_budgets().map_err(invalid)?;
        let pool_patterns = profile
            .diagnosis
            .pools
            .iter()
            .map(|p| {
                regex::Regex::new(&p.frame)
                    .map(|frame| PoolPattern {
                        name: p.name.clone(),
                        frame,
                    })
                    .map_err(|e| invalid(format!("diagnosis.pools `{}`: frame: {e}", p.name)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(JudgeSpec {
            budgets,
            pool_patterns,
        })
    }
}

impl RunSpec {
    /// Read a profile file (with `--set key.path=value` overrides) and compile
    /// it; relative paths resolve from the file's directory.
    pub fn load(
        path: &Path,
        sets: &[(String, String)],
        inputs: CompileInputs,
    ) -> Result<RunSpec, SpecError> {
        let profile = Profile::load_with(path, sets)?;
        let inputs = CompileInputs {
            base_dir: path.parent().map(Path::to_path_buf),
            ..inputs
        };
        RunSpec::compile(profile, &inputs, path)
    }

    /// Compile a parsed profile; `path` only names it in errors.
    pub fn compile(
        mut profile: Profile,
        inputs: &CompileInputs,
        path: &Path,
    ) -> Result<RunSpec, SpecError> {
        let invalid = |message: String| ProfileError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let asked = inputs.url_of(&profile);
        if asked != profile.target.url {
            profile.target.url = asked.clone();
            if asked != "builtin" {
                profile.target.builtin = None;
            }
        }
        let time_scale = if inputs.time_scale > 0.0 {
            inputs.time_scale
        } else {
            1.0
        };
        let plan = profile.plan(time_scale);
        if plan.phases.is_empty() {
            return Err(SpecError::NoPhase);
        }
        let JudgeSpec {
            budgets,
            pool_patterns,
        } = JudgeSpec::compile(&profile, path)?;
        // Collector definitions may live beside the profile: check them now,
        // not halfway into a run.
        let collectors =
            crate::collectors::compile(&profile.collectors, inputs.base_dir.as_deref())
                .map_err(|e| invalid(format!("collectors: {e}")))?;
        let url = match (asked.as_str(), &inputs.builtin_url) {
            ("builtin", Some(u)) => u.clone(),
            ("builtin", None) => BUILTIN_STAND_IN.to_string(),
            _ => asked,
        };
        let engine_inputs = crate::engine::template::Inputs {
            env: inputs.env.clone(),
            base_dir: inputs.base_dir.clone(),
        };
        let engine =
            crate::engine::compile(&profile, &url, plan.clone(), inputs.shard, &engine_inputs)
                .map_err(|e| place_grpc(e, path))?;
        Ok(RunSpec {
            profile,
            base_dir: inputs.base_dir.clone(),
            plan,
            time_scale,
            url,
            engine: Arc::new(engine),
            budgets,
            collectors,
            pool_patterns,
        })
    }

    /// The target as the run directory shows it: `builtin` or the URL.
    pub fn shown_url(&self) -> &str {
        if self.profile.target.url == "builtin" {
            "builtin"
        } else {
            &self.url
        }
    }

    /// The p99 limit of the unscoped budgets, if any: collectors fire their
    /// `on_trigger` probes above it.
    pub fn p99_limit(&self) -> Option<std::time::Duration> {
        self.budgets
            .iter()
            .find(|b| {
                b.phase.is_none()
                    && b.on_all_requests()
                    && b.metric == crate::budgets::Metric::Quantile(0.99)
            })
            .map(|b| std::time::Duration::from_secs_f64(b.limit / 1000.0))
    }
}

/// A gRPC call that does not compile, placed in the profile file's text
/// (read again only for this error) when it can be.
fn place_grpc(e: EngineError, path: &Path) -> SpecError {
    let EngineError::Client(crate::engine::client::ClientError::Grpc(g)) = e else {
        return e.into();
    };
    let text = std::fs::read_to_string(path).unwrap_or_default();
    ProfileError::placed(path, &text, &g.anchor, g.needle.as_deref(), g.to_string()).into()
}

/// `target.trace` as `run.json` records it.
pub(super) fn trace_meta(t: &crate::profile::TraceSpec) -> crate::rundir::traces::TraceMeta {
    crate::rundir::traces::TraceMeta {
        header: t.header.trim().to_string(),
        sample: t.sample,
        url: t.url.clone(),
    }
}
