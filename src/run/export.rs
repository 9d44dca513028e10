//! The run's side of the live export (`crate::export`): its configuration
//! from the spec and the options, the `run` label, and its two-stage end —
//! the final push before the summary (which counts the pushes from
//! `export.jsonl`), the last scrape after it.

use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use super::{sanitize, Progress, RunError, RunOptions, RunSpec};
use crate::engine::EngineConfig;
use crate::export::{ExportConfig, ExportError, Exporter, Labels, FINAL_PUSH_WAIT};
use crate::profile::Plan;
use crate::rundir;

/// The live exporter, when `--metrics-listen` or a remote-write URL asks for one.
pub(super) fn start(
    spec: &RunSpec,
    plan: &Plan,
    cfg: &EngineConfig,
    dir: &Path,
    opts: &RunOptions,
    started_at: f64,
) -> Result<Option<Arc<Exporter>>, RunError> {
    let remote_write = opts
        .remote_write
        .clone()
        .or_else(|| spec.profile.output.prometheus_remote_write.clone());
    if opts.metrics_listen.is_none() && remote_write.is_none() {
        return Ok(None);
    }
    let remote_write_token = match &spec.profile.output.prometheus_remote_write_token_env {
        Some(var) => Some(
            std::env::var(var)
                .ok()
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| {
                    RunError::Invalid(format!(
                        "output.prometheus_remote_write_token_env: environment variable {var} is not set"
                    ))
                })?,
        ),
        None => None,
    };
    let export = ExportConfig {
        listen: opts.metrics_listen,
        remote_write,
        remote_write_token,
        labels: Labels {
            run: run_label(&spec.profile.name, dir, opts),
            shard: format!("{}/{}", opts.shard.index + 1, opts.shard.count.max(1)),
            phases: plan.phases.iter().map(|p| p.info.name.clone()).collect(),
            requests: cfg.outcome_names(),
            started_at,
        },
        linger: opts
            .metrics_linger
            .unwrap_or(std::time::Duration::from_secs(15)),
        say: opts.progress != Progress::Quiet,
        notices: opts.say.clone(),
        push_log: Some(dir.join(rundir::EXPORT_LOG)),
    };
    let e = Exporter::start(export).map_err(|e| match e {
        ExportError::BadUrl(_) => RunError::Invalid(e.to_string()),
        other => RunError::Export(other),
    })?;
    if let (Some(a), true) = (e.local_addr(), opts.progress != Progress::Quiet) {
        opts.say.line(format!("metrics: http://{a}/metrics"));
    }
    Ok(Some(Arc::new(e)))
}

/// The `run` label: the run directory's name; for shards stepping together
/// (`--start-at`), the profile's name and that start, so every shard's
/// series carry the same value and Grafana sums them.
fn run_label(profile: &str, dir: &Path, opts: &RunOptions) -> String {
    let start = opts
        .start_at
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok());
    match start {
        Some(t) if opts.shard.count > 1 => format!("{}-{}", sanitize(profile), t.as_secs()),
        _ => dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| sanitize(profile)),
    }
}

/// Push the final figures (bounded: a hanging receiver is given up) and
/// say what the pushes did.
pub(super) fn push_final(e: &Exporter, opts: &RunOptions) {
    let r = e.push_final();
    if r.push_failures > 0 {
        opts.say.warn(format!(
            "remote-write: {} of {} pushes failed (each in {})",
            r.push_failures,
            r.pushes,
            rundir::EXPORT_LOG
        ));
    }
    if r.final_push_abandoned {
        opts.say.warn(format!(
            "remote-write: the receiver did not take the final figures within {:?}; the run ended without them",
            FINAL_PUSH_WAIT
        ));
    }
}

/// Give a scraping Prometheus its last look at the final figures, then stop.
pub(super) fn last_scrape(e: &Exporter, opts: &RunOptions) {
    let r = e.finish();
    if e.local_addr().is_some() && !r.final_scraped && opts.progress != Progress::Quiet {
        opts.say
            .line("metrics: the final figures were not scraped before the endpoint closed");
    }
}
