//! The run spec: a profile validated and compiled once, before anything
//! starts (ripgrep's two stages: raw input → validated, compiled values).
//! Budgets, regexes and collector definitions are compiled here, so a
//! mistake is reported once, with where it is, and nothing downstream
//! parses them again or drops what does not parse.

use std::path::{Path, PathBuf};

use crate::budgets::Budget;
use crate::collectors::definition::Definition;
use crate::diagnosis::PoolPattern;
use crate::profile::{Profile, ProfileError};

/// A profile with everything compiled that the run needs.
#[derive(Clone)]
pub struct RunSpec {
    pub profile: Profile,
    /// Where relative paths of the profile (collector definitions) resolve.
    pub base_dir: Option<PathBuf>,
    pub budgets: Vec<Budget>,
    /// The collector definitions, loaded and checked.
    pub collectors: Vec<Definition>,
    /// The profile's extra pool recognisers.
    pub pool_patterns: Vec<PoolPattern>,
}

impl RunSpec {
    /// Read a profile file and compile it.
    pub fn load(path: &Path) -> Result<RunSpec, ProfileError> {
        RunSpec::load_with(path, &[])
    }

    /// [`RunSpec::load`] with `--set key.path=value` overrides.
    pub fn load_with(path: &Path, sets: &[(String, String)]) -> Result<RunSpec, ProfileError> {
        let profile = Profile::load_with(path, sets)?;
        RunSpec::compile(profile, path.parent().map(Path::to_path_buf), path)
    }

    /// Compile a parsed profile; `path` only names it in errors.
    pub fn compile(
        profile: Profile,
        base_dir: Option<PathBuf>,
        path: &Path,
    ) -> Result<RunSpec, ProfileError> {
        let invalid = |message: String| ProfileError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let budgets = profile.compile_budgets().map_err(invalid)?;
        // Collector definitions may live beside the profile: check them now,
        // not halfway into a run.
        let collectors = crate::collectors::validate(&profile.collectors, base_dir.as_deref())
            .map_err(|e| invalid(format!("collectors: {e}")))?;
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
        Ok(RunSpec {
            profile,
            base_dir,
            budgets,
            collectors,
            pool_patterns,
        })
    }

    /// Compile the profile's templates and open its feeders as a run would
    /// (`brunt validate`): a missing variable, feeder file or column is an error now.
    pub fn check_templates(
        &self,
        env: &std::collections::BTreeMap<String, String>,
        path: &Path,
    ) -> Result<(), ProfileError> {
        let inputs = crate::engine::template::Inputs {
            env: env.clone(),
            base_dir: self.base_dir.clone(),
        };
        let invalid = |message: String| ProfileError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let feeders = crate::engine::template::open_feeders(
            &self.profile,
            &inputs,
            crate::engine::Shard::default(),
        )
        .map_err(|e| invalid(e.to_string()))?;
        crate::engine::client::prepare_mix(&self.profile, "localhost", "", &inputs, &feeders)
            .map_err(|e| invalid(e.to_string()))?;
        Ok(())
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
