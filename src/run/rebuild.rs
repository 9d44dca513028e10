//! `brunt report DIR`: judge a run directory again from what it holds — a
//! finished run after an offline `brunt analyze`, or a killed one.
//!
//! What only the live run knew (why it stopped, the collectors' index,
//! findings) is taken from the old `summary.json`. A run that never wrote
//! one (`kill -9`, a second Ctrl-C, a full disk) gets those parts rebuilt
//! from the files: the collectors' index from `diagnostics/collectors.jsonl`
//! and the sample streams, the server-side evidence and findings from
//! `diagnostics/`. A file whose last line was cut short is read up to it,
//! and the summary says so. The directory is read through
//! [`RunData::read`] and judged by `judge::judge`, as a single run judges
//! its own, so both give the same summary.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::spec::JudgeSpec;
use super::RunError;
use crate::collectors::{
    ArtifactInfo, CollectorsSummary, ErrorInfo, GapInfo, GeneratorSummary, PidInfo, StreamInfo,
};
use crate::judge::{Ending, Judging, StopKind, Summary};
use crate::profile::collectors::CollectorsConfig;
use crate::profile::Profile;
use crate::rundir::{self, RunData};
use crate::vocab::Say;

/// The collectors' own event log inside `diagnostics/`.
const COLLECTOR_EVENTS: &str = rundir::COLLECTOR_EVENTS;

/// A run directory judged again: the summary, and the data it was judged
/// from (what the renderers draw).
pub struct Rebuilt {
    pub summary: Summary,
    pub data: RunData,
}

/// Rebuild `summary.json` (and nothing else) from the run directory's files.
pub fn rebuild(dir: &Path) -> Result<Summary, RunError> {
    rebuild_saying(dir, &Say::default()).map(|r| r.summary)
}

/// [`rebuild`], telling `say` what was cut short or could not be read.
pub fn rebuild_saying(dir: &Path, say: &Say) -> Result<Rebuilt, RunError> {
    let r = judged(dir, say, false)?;
    rundir::write_json(&dir.join(rundir::SUMMARY), &r.summary)?;
    Ok(r)
}

/// The gates of a run still running, as they stand: its directory judged
/// as it is, without writing anything, each phase begun judged on what it
/// has so far (phases not reached are not judged). The thread dumps are not
/// diagnosed here (the live view's newest-dump finding is), so it costs one
/// read of the latency log.
pub fn so_far(dir: &Path) -> Result<Summary, RunError> {
    judged(dir, &Say::default(), true).map(|r| r.summary)
}

fn judged(dir: &Path, say: &Say, so_far: bool) -> Result<Rebuilt, RunError> {
    let meta = rundir::read_meta(dir)?;
    let profile_path = dir.join(rundir::PROFILE);
    let profile = Profile::from_yaml(&rundir::read_text(dir, rundir::PROFILE)?, &profile_path)?;
    let collectors_cfg = profile.collectors.clone();
    // Nothing is sent: only the budgets and patterns the judge needs are compiled.
    let spec = JudgeSpec::compile(&profile, &profile_path)?;
    let (m, elapsed, cut) = rundir::read::measured_noting(dir, &meta)?;
    for w in &cut {
        say.warn(w.clone());
    }
    let ended_early = elapsed + Duration::from_secs(1) < meta.planned();
    // Keep what only the live run knew (why and how it stopped, collectors,
    // findings). A directory without a summary was killed: interrupted.
    let old: Option<Summary> = if so_far {
        None
    } else {
        rundir::read_json(dir, rundir::SUMMARY).ok()
    };
    let reason = old.as_ref().and_then(|o| o.stopped_reason.clone());
    let kind = match &old {
        Some(o) if o.stop_kind.is_some() => o.stop_kind,
        Some(o) if o.interrupted => Some(StopKind::Interrupted),
        _ => (ended_early && !so_far).then_some(StopKind::Interrupted),
    };
    // A run that ended before its summary never saved its evidence either.
    let diag_dir = dir.join(rundir::DIAGNOSTICS);
    let analysis = match rundir::evidence::load(dir) {
        Ok(None) if diag_dir.is_dir() && !so_far => {
            super::gather_evidence(dir, &spec.pool_patterns, &meta, say)
        }
        _ => None,
    };
    let data = RunData::read(dir)?;
    let generator = rundir::read::generator_health(&data.seconds);
    let (mut collectors, mut findings) = match old {
        Some(o) => (o.collectors, o.findings),
        None => (None, None),
    };
    let mut notes = vec![];
    if collectors.is_none() {
        if let Some(c) = collectors_from_files(&diag_dir, &collectors_cfg) {
            collectors = Some(c);
            notes.push(format!(
                "collectors: rebuilt from {}/ (the run ended before writing its summary): errors_total counts the logged errors only",
                rundir::DIAGNOSTICS
            ));
        }
    }
    if findings.is_none() {
        findings = analysis.and_then(|a| serde_json::to_value(&a.findings).ok());
    }
    notes.extend(cut);
    let s = crate::judge::judge(
        Judging {
            budgets: &spec.budgets,
            settings: &profile.verdicts,
            measured: &m,
            ending: Ending {
                kind,
                reason,
                early: ended_early,
            },
            generator,
            collectors,
            findings,
            notes,
        },
        &data,
    );
    Ok(Rebuilt { summary: s, data })
}

/// The collectors' index of `summary.json` from what they left in
/// `diagnostics/`: sample streams (`*.jsonl`), their event log (artifacts,
/// target PIDs, errors, link gaps, triggers) and the generator's samples.
/// `None` when no collector wrote anything.
pub fn collectors_from_files(diag: &Path, cfg: &CollectorsConfig) -> Option<CollectorsSummary> {
    let mut c = CollectorsSummary {
        version: 1,
        transport: describe_transport(cfg),
        ..Default::default()
    };
    let mut found = false;
    let mut names: Vec<String> = std::fs::read_dir(diag)
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in &names {
        let Some(stream) = name.strip_suffix(".jsonl") else {
            continue;
        };
        let text = std::fs::read_to_string(diag.join(name)).unwrap_or_default();
        match name.as_str() {
            COLLECTOR_EVENTS => {
                found = true;
                events_into(&mut c, &text);
            }
            rundir::GENERATOR_SAMPLES => {
                found = true;
                c.generator = GeneratorSummary::from_samples(&text);
            }
            _ => {
                found = true;
                c.streams.push(StreamInfo {
                    name: stream.to_string(),
                    file: format!("{}/{name}", rundir::DIAGNOSTICS),
                    rows: json_rows(&text).count() as u64,
                });
            }
        }
    }
    c.artifacts.sort_by(|a, b| a.t.total_cmp(&b.t));
    c.gaps.sort_by(|a, b| a.from_t.total_cmp(&b.from_t));
    found.then_some(c)
}

/// The rows of a JSON-lines file that parse (a torn last line does not).
fn json_rows(text: &str) -> impl Iterator<Item = Value> + '_ {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
}

/// Fold the collectors' event log into the index.
fn events_into(c: &mut CollectorsSummary, text: &str) {
    use crate::vocab::samples::{CollectorEvent, EventRow, Stamped};
    // Links down and not (yet) back, per lane: (t, reason).
    let mut down: Vec<(String, f64, String)> = vec![];
    let mut last_t = 0.0f64;
    let rows = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Stamped<EventRow>>(l).ok());
    for Stamped { t, phase, row } in rows {
        last_t = last_t.max(t);
        let lane = row.lane;
        match row.event {
            CollectorEvent::Artifact {
                probe,
                file,
                bytes,
                reason,
                artifact,
            } => {
                let a = artifact.unwrap_or_else(|| ArtifactInfo {
                    probe,
                    kind: if reason.starts_with("jfr") {
                        "jfr"
                    } else {
                        "artifact"
                    }
                    .into(),
                    file,
                    t,
                    phase,
                    bytes,
                    reason,
                    ..Default::default()
                });
                c.artifacts.push(a);
            }
            // A JFR window file pruned to bound the disk: no longer listed.
            CollectorEvent::ArtifactPruned { file } => c.artifacts.retain(|a| a.file != file),
            CollectorEvent::TargetPid { pid } if !c.target_pids.iter().any(|p| p.pid == pid) => {
                c.target_pids.push(PidInfo {
                    t,
                    pid,
                    java_major: None,
                });
            }
            CollectorEvent::Error {
                probe,
                message,
                kind,
            } => {
                c.errors_total += 1;
                c.errors.push(ErrorInfo {
                    t,
                    probe,
                    message,
                    kind,
                });
            }
            CollectorEvent::Trigger { .. } => c.triggers += 1,
            CollectorEvent::LinkDown { message } => down.push((lane, t, message)),
            CollectorEvent::Reconnected { from_t, missed } => {
                let at = down.iter().position(|(l, _, _)| *l == lane);
                let (from_t, reason) = match at.map(|i| down.remove(i)) {
                    Some((_, from, why)) => (from, why),
                    None => (from_t.unwrap_or(t), String::new()),
                };
                c.gaps.push(GapInfo {
                    lane,
                    from_t,
                    to_t: t,
                    reason,
                    missed,
                    probe: None,
                });
            }
            // One probe's data lost (a JFR recording with its JVM).
            CollectorEvent::Gap {
                probe,
                from_t,
                to_t,
                reason,
                missed,
            } => c.gaps.push(GapInfo {
                lane,
                from_t: from_t.unwrap_or(t),
                to_t: to_t.unwrap_or(t),
                reason,
                missed,
                probe: Some(probe),
            }),
            _ => {}
        }
    }
    for (lane, from_t, why) in down {
        c.gaps.push(GapInfo {
            lane,
            from_t,
            to_t: last_t.max(from_t),
            reason: format!("{why} (still down when the log ends)"),
            missed: 0,
            probe: None,
        });
    }
}

/// How the live run named its transport (`local`, `ssh app@host:22`), or
/// `none` without collector definitions.
fn describe_transport(cfg: &CollectorsConfig) -> String {
    if cfg.collect.is_empty() {
        return "none".into();
    }
    crate::collectors::transport::from_config(&cfg.transport)
        .map(|t| t.describe())
        .unwrap_or_else(|_| format!("{:?}", cfg.transport.kind).to_lowercase())
}
