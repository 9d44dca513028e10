//! `brunt report DIR`: judge a run directory again from what it holds — a
//! finished run after an offline `brunt analyze`, or a killed one.

use std::path::Path;
use std::time::Duration;

use super::{RunError, RunSpec};
use crate::judge::{Inputs, StopKind, Summary};
use crate::profile::Profile;
use crate::rundir;

/// Rebuild `summary.json` (and nothing else) from the run directory's files.
pub fn rebuild(dir: &Path) -> Result<Summary, RunError> {
    let meta = rundir::read_meta(dir)?;
    let profile_path = dir.join(rundir::PROFILE);
    let profile = Profile::from_yaml(&rundir::read_text(dir, rundir::PROFILE)?, &profile_path)?;
    // Collector definitions were checked when the run started; only the
    // budgets and patterns the judge needs are compiled again.
    let spec = RunSpec::compile(
        Profile {
            collectors: Default::default(),
            ..profile
        },
        None,
        &profile_path,
    )?;
    let (m, elapsed) = rundir::read::measured(dir, &meta)?;
    let ended_early = elapsed + Duration::from_secs(1) < meta.planned();
    // Keep what only the live run knew (why and how it stopped, collectors,
    // findings). A directory without a summary was killed: interrupted.
    let old: Option<Summary> = rundir::read_json(dir, rundir::SUMMARY).ok();
    let reason = old.as_ref().and_then(|o| o.stopped_reason.clone());
    let kind = match &old {
        Some(o) if o.stop_kind.is_some() => o.stop_kind,
        Some(o) if o.interrupted => Some(StopKind::Interrupted),
        _ => ended_early.then_some(StopKind::Interrupted),
    };
    let inputs = Inputs::load(dir);
    let generator = rundir::read::generator_health(&inputs.seconds);
    let mut s = crate::judge::build(
        meta,
        &spec.budgets,
        &spec.profile.verdicts,
        &m,
        ended_early || kind.is_some(),
        reason,
        &inputs,
    );
    s.set_stop_kind(kind);
    s.set_generator(generator);
    if let Some(o) = old {
        s.set_collectors(o.collectors);
        s.findings = o.findings;
    }
    rundir::write_json(&dir.join(rundir::SUMMARY), &s)?;
    Ok(s)
}
