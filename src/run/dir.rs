//! The run directory's claiming and making, before anything is written:
//! an existing `--out` is refused (or, with `--force`, emptied), then the
//! directory is created with the profile as run in it.

use std::path::Path;

use super::RunError;
use crate::profile::Profile;
use crate::rundir;

/// An existing, non-empty `--out` would mix two runs (and diagnose the old
/// run's dumps as the new one's): refuse it, or with `--force` empty it —
/// only if it is a run directory, so a mistyped path never loses other files.
pub(super) fn claim_dir(dir: &Path, force: bool) -> Result<(), RunError> {
    let Ok(mut entries) = std::fs::read_dir(dir) else {
        return Ok(()); // absent: created below
    };
    if entries.next().is_none() {
        return Ok(());
    }
    let shown = dir.display();
    if !force {
        return Err(RunError::Invalid(format!(
            "--out {shown} exists and is not empty: choose a new directory, or pass --force to empty it first"
        )));
    }
    if !dir.join(rundir::RUN_JSON).exists() {
        return Err(RunError::Invalid(format!(
            "--out {shown} is not a run directory (no {}): --force empties run directories only",
            rundir::RUN_JSON
        )));
    }
    for e in std::fs::read_dir(dir)?.flatten() {
        let p = e.path();
        if p.is_dir() {
            std::fs::remove_dir_all(&p)?;
        } else {
            std::fs::remove_file(&p)?;
        }
    }
    Ok(())
}

/// Create the run directory and keep the profile as run in it.
pub(super) fn prepare_dir(dir: &Path, profile: &Profile, url: &str) -> Result<(), RunError> {
    std::fs::create_dir_all(dir.join(rundir::DIAGNOSTICS)).map_err(|source| RunError::Dir {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut saved = profile.clone();
    saved.target.url = url.to_string();
    let text = serde_saphyr::to_string(&saved).map_err(|e| RunError::Invalid(e.to_string()))?;
    rundir::write_atomic(&dir.join(rundir::PROFILE), text.as_bytes())?;
    Ok(())
}
