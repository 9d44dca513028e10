//! `brunt merge`: N shard run directories into one, as if one machine had
//! sent the whole load.
//!
//! Interval histograms are added tag by tag and second by second; seconds
//! are aligned by absolute time (each shard's start + the window's offset),
//! so shards whose clocks started a few hundred ms apart still line up.
//! Each shard is read through `rundir` (its latency log and series streamed
//! by `rundir::read::for_each_part`, the loop `brunt report` uses too). The
//! merged directory has the files of a single run, is read back through
//! `RunData::read` and judged by the same code (`judge::judge`), so budgets
//! are judged on the union — a budget no single shard breaks can fail the
//! merged run. The slowest traced requests of every shard go into one
//! `traces.jsonl`, so each phase keeps the slowest of them all.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{MergedFrom, ShardError, ShardStart};
use crate::judge::{Ending, Judging, StopKind, Summary};
use crate::metrics::hlog::{self, HlogWriter};
use crate::metrics::series::{Row, SeriesWriter};
use crate::metrics::{GeneratorHealth, Stats};
use crate::profile::Profile;
use crate::rundir::read::SecondPart;
use crate::rundir::{self, RunData, RunMeta, RundirError};

/// What a merge leaves.
pub struct MergeResult {
    pub dir: PathBuf,
    pub summary: Summary,
    /// The merged directory as read for the judge (what the renderers draw).
    pub data: RunData,
    /// What the shards' reading said (a cut line, a shard that did not
    /// finish), also in the summary's notes: for the caller to show.
    pub warnings: Vec<String>,
}

impl MergeResult {
    /// 0 every merged budget met, 99 one failed.
    pub fn exit_code(&self) -> i32 {
        self.summary.exit_code()
    }
}

/// One shard's run directory: what it planned and how it ended (its
/// windows are streamed from its files when they are added).
struct ShardDir {
    dir: PathBuf,
    meta: RunMeta,
    profile_text: String,
    profile: Profile,
    summary: Option<Summary>,
}

/// A shard's file that cannot be read is bad input (exit 2).
fn unreadable(e: RundirError) -> ShardError {
    match e {
        RundirError::Read { path, message } => ShardError::Read { path, message },
        e => ShardError::Rundir(e),
    }
}

fn load(dir: &Path) -> Result<ShardDir, ShardError> {
    if !dir.is_dir() {
        return Err(ShardError::Read {
            path: dir.to_path_buf(),
            message: "not a run directory".into(),
        });
    }
    let meta = rundir::read_meta(dir).map_err(unreadable)?;
    let profile_text = rundir::read_text(dir, rundir::PROFILE).map_err(unreadable)?;
    let profile = Profile::from_yaml(&profile_text, &dir.join(rundir::PROFILE))?;
    // A killed shard has no summary; it only carries collectors and findings.
    let summary = rundir::read_json(dir, rundir::SUMMARY).ok();
    Ok(ShardDir {
        dir: dir.to_path_buf(),
        meta,
        profile_text,
        profile,
        summary,
    })
}

/// Refuse directories that are not the N shards of one run.
fn check(shards: &[ShardDir]) -> Result<(), ShardError> {
    let first = &shards[0];
    let n = first.meta.shard_count;
    let mut seen = vec![None::<&Path>; n as usize];
    for s in shards {
        let d = s.dir.display();
        if s.meta.name != first.meta.name {
            return Err(ShardError::Mismatch(format!(
                "{d} is a run of profile `{}`, {} of `{}`: shards of different profiles cannot be merged",
                s.meta.name,
                first.dir.display(),
                first.meta.name
            )));
        }
        if s.meta.phases != first.meta.phases {
            return Err(ShardError::Mismatch(format!(
                "{d} has other phases than {} (a different shape or --time-scale): shards must run the same schedule",
                first.dir.display()
            )));
        }
        let budgets = |p: &Profile| serde_json::to_string(&p.budgets).unwrap_or_default();
        if budgets(&s.profile) != budgets(&first.profile) {
            return Err(ShardError::Mismatch(format!(
                "{d} has other budgets than {}: the merged verdict would depend on the order",
                first.dir.display()
            )));
        }
        if s.meta.shard_count != n {
            return Err(ShardError::Mismatch(format!(
                "{d} is shard {}/{} but {} is one of {n}",
                s.meta.shard_index + 1,
                s.meta.shard_count,
                first.dir.display()
            )));
        }
        let i = s.meta.shard_index as usize;
        match seen.get_mut(i) {
            None => {
                return Err(ShardError::Mismatch(format!(
                    "{d}: shard index {} is out of range 1..{n}",
                    i + 1
                )))
            }
            Some(Some(other)) => {
                return Err(ShardError::Mismatch(format!(
                    "{d} and {} are both shard {}/{n}",
                    other.display(),
                    i + 1
                )))
            }
            Some(slot) => *slot = Some(&s.dir),
        }
    }
    let missing: Vec<String> = seen
        .iter()
        .enumerate()
        .filter(|(_, d)| d.is_none())
        .map(|(i, _)| format!("{}/{n}", i + 1))
        .collect();
    if !missing.is_empty() {
        return Err(ShardError::Mismatch(format!(
            "shard {} missing: a merge needs all {n} shard directories of the run",
            missing.join(", ")
        )));
    }
    Ok(())
}

/// Per merged second: per phase index, the summed stats; and the summed in-flight count.
#[derive(Default)]
struct Windows {
    stats: BTreeMap<u64, BTreeMap<usize, Stats>>,
    in_flight: BTreeMap<u64, u64>,
    /// Worst scheduler lag (µs) and busiest worker (%) over the shards.
    generator: BTreeMap<u64, (u64, f64)>,
}

impl Windows {
    fn at(&mut self, second: u64, phase: usize) -> &mut Stats {
        self.stats
            .entry(second)
            .or_default()
            .entry(phase)
            .or_default()
    }

    /// Add a shard's windows, `shift` seconds later; returns what its
    /// files said was cut short and the second after its last one.
    fn add_shard(&mut self, s: &ShardDir, shift: u64) -> Result<(Vec<String>, u64), ShardError> {
        // Tagged lines only: the untagged one is their sum, rebuilt, not added.
        let read = rundir::read::for_each_part(&s.dir, &s.meta, |second, p, part| {
            let second = second + shift;
            part.add_to(self.at(second, p));
            if let SecondPart::Row(r) = part {
                *self.in_flight.entry(second).or_default() += r.in_flight;
                let g = self.generator.entry(second).or_default();
                g.0 = g.0.max(r.sched_lag_us);
                g.1 = g.1.max(r.busy_pct);
            }
        })
        .map_err(|e| match e {
            RundirError::Hlog(e) => ShardError::Read {
                path: s.dir.join(rundir::LATENCY_LOG),
                message: e.to_string(),
            },
            e => unreadable(e),
        })?;
        match read.stray {
            Some((path, message)) => Err(ShardError::Read { path, message }),
            None => Ok((read.warnings, read.last)),
        }
    }
}

fn write_err(path: &Path) -> impl Fn(std::io::Error) -> ShardError + '_ {
    move |source| ShardError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// Merge the shard run directories `dirs` into a new run directory `out`.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<MergeResult, ShardError> {
    if dirs.is_empty() {
        return Err(ShardError::Mismatch(
            "no shard directories given".to_string(),
        ));
    }
    let mut shards = dirs
        .iter()
        .map(|d| load(d))
        .collect::<Result<Vec<_>, _>>()?;
    check(&shards)?;
    shards.sort_by_key(|s| s.meta.shard_index);
    if out.exists()
        && std::fs::read_dir(out)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(ShardError::Mismatch(format!(
            "--out {} exists and is not empty: choose a new directory",
            out.display()
        )));
    }

    // Line up by absolute time: the earliest start is second 0.
    let base = shards
        .iter()
        .map(|s| s.meta.started_at)
        .fold(f64::INFINITY, f64::min);
    let latest = shards
        .iter()
        .map(|s| s.meta.started_at)
        .fold(f64::NEG_INFINITY, f64::max);
    let mut windows = Windows::default();
    let mut starts = Vec::new();
    let mut cut = Vec::new();
    let mut unfinished = Vec::new();
    for s in &shards {
        let shift = (s.meta.started_at - base).round().max(0.0) as u64;
        let (said, last) = windows.add_shard(s, shift)?;
        cut.extend(
            said.into_iter()
                .map(|w| format!("shard {}: {w}", s.meta.shard_index + 1)),
        );
        unfinished.extend(incomplete(s, last));
        starts.push(ShardStart {
            shard: s.meta.shard_index + 1,
            dir: s.dir.display().to_string(),
            started_at: s.meta.started_at,
            start_at: s.meta.start_at,
            shift_s: shift,
        });
    }
    let merged_from = MergedFrom {
        shard_count: shards.len() as u32,
        shards: starts,
        skew_ms: (latest - base) * 1000.0,
    };

    let first = &shards[0];
    std::fs::create_dir_all(out.join(rundir::DIAGNOSTICS)).map_err(write_err(out))?;
    let mut meta = first.meta.clone();
    meta.started_at = base;
    meta.shard_index = 0;
    meta.shard_count = 1;
    meta.workers = shards.iter().map(|s| s.meta.workers).sum();
    meta.start_at = shards.iter().find_map(|s| s.meta.start_at);
    meta.merged = Some(merged_from.clone());
    // A shard's process, not the merge's.
    meta.writer = None;
    let run_json = out.join(rundir::RUN_JSON);
    std::fs::write(
        &run_json,
        serde_json::to_string_pretty(&meta).map_err(|e| ShardError::Write {
            path: run_json.clone(),
            source: std::io::Error::other(e),
        })?,
    )
    .map_err(write_err(&run_json))?;
    let profile_path = out.join(rundir::PROFILE);
    std::fs::write(&profile_path, &first.profile_text).map_err(write_err(&profile_path))?;

    write_windows(out, &meta, &windows)?;
    write_events(out, &shards, &merged_from)?;
    for s in &shards {
        let from = s.dir.join(rundir::DIAGNOSTICS);
        if from.is_dir() {
            let to = out
                .join(rundir::DIAGNOSTICS)
                .join(format!("shard-{}", s.meta.shard_index + 1));
            copy_tree(&from, &to)?;
        }
    }

    carry_evidence(&shards, out, base)?;
    carry_errors(&shards, out)?;
    // Shard 1 ran the setup and the teardown for the whole run.
    let once = rundir::read_setup(&first.dir);
    if once != Default::default() {
        rundir::write_json(&out.join(rundir::SETUP), &once)?;
    }
    carry_traces(&shards, out, base)?;

    // Judge the union with the same code as a single run.
    let (m, elapsed) = rundir::read::measured(out, &meta)?;
    let total = meta.planned();
    // A shard stopped by the user (or killed) interrupts the merged run; a
    // designed stop (a stress breach, an exhausted `unique` feeder) stays one.
    let mut reasons: Vec<String> = shards
        .iter()
        .filter_map(|s| {
            let sum = s.summary.as_ref()?;
            let why = sum.stopped_reason.as_deref();
            (sum.interrupted || sum.stop_kind.is_some()).then(|| {
                format!(
                    "shard {}: {}",
                    s.meta.shard_index + 1,
                    why.unwrap_or("ended early")
                )
            })
        })
        .collect();
    let shard_kind = |k: StopKind| {
        shards.iter().any(|s| {
            s.summary.as_ref().is_some_and(|sum| {
                sum.stop_kind == Some(k) || (k == StopKind::Interrupted && sum.interrupted)
            })
        })
    };
    reasons.extend(unfinished.iter().cloned());
    let kind = if shard_kind(StopKind::Interrupted) || !unfinished.is_empty() {
        Some(StopKind::Interrupted)
    } else if shard_kind(StopKind::Breach) {
        Some(StopKind::Breach)
    } else if shard_kind(StopKind::DataExhausted) {
        // Shards whose share of a `unique` feeder ran out stopped by design.
        Some(StopKind::DataExhausted)
    } else if elapsed + Duration::from_secs(1) < total {
        Some(StopKind::Interrupted)
    } else {
        None
    };
    let reason = (!reasons.is_empty()).then(|| reasons.join("; "));
    let data = RunData::read(out)?;
    let budgets = first.profile.compile_budgets().map_err(|e| {
        ShardError::Mismatch(format!(
            "{}: {e}",
            first.dir.join(rundir::PROFILE).display()
        ))
    })?;
    let mut g = GeneratorHealth::default();
    for (second, (lag, busy)) in &windows.generator {
        g.observe(*second, *lag, *busy);
    }
    let mut carried = carry_collectors(&shards);
    carried.notes.extend(cut.iter().cloned());
    let s = crate::judge::judge(
        Judging {
            budgets: &budgets,
            settings: &first.profile.verdicts,
            measured: &m,
            ending: Ending {
                kind,
                reason,
                early: false,
            },
            generator: g,
            collectors: carried.collectors,
            findings: carried.findings,
            notes: carried.notes,
        },
        &data,
    );
    rundir::write_json(&out.join(rundir::SUMMARY), &s)?;
    Ok(MergeResult {
        dir: out.to_path_buf(),
        summary: s,
        data,
        warnings: cut.into_iter().chain(unfinished).collect(),
    })
}

/// Why a shard did not run its whole plan, judged from its data rather
/// than from its summary alone: a killed shard writes none, and a shard
/// whose files end early saw only part of the load. A designed stop (a
/// stress breach, an exhausted feeder) is the shard's summary's to say.
fn incomplete(s: &ShardDir, last: u64) -> Option<String> {
    let n = s.meta.shard_index + 1;
    let planned = s.meta.planned().as_secs_f64();
    let Some(sum) = &s.summary else {
        return Some(format!(
            "shard {n}: no summary.json (killed?): its data ends at {last} s of a {planned:.0}-s plan"
        ));
    };
    let designed = matches!(
        sum.stop_kind,
        Some(StopKind::Breach) | Some(StopKind::DataExhausted)
    );
    (!designed && !sum.interrupted && (last as f64) + 1.0 < planned).then(|| {
        format!("shard {n}: its data ends at {last} s of a {planned:.0}-s plan, though its summary says it completed")
    })
}

/// `latency.hlog` and `timeseries.csv` of the merged windows, as the recorder writes them.
fn write_windows(out: &Path, meta: &RunMeta, w: &Windows) -> Result<(), ShardError> {
    let hlog_path = out.join(rundir::LATENCY_LOG);
    let hlog_err = |e: hlog::HlogError| ShardError::Write {
        path: hlog_path.clone(),
        source: std::io::Error::other(e),
    };
    let n = meta.merged.as_ref().map(|m| m.shard_count).unwrap_or(1);
    let mut hlog = HlogWriter::create(
        &hlog_path,
        meta.started_at,
        &format!(
            "brunt {} {} (merge of {n} shards)",
            env!("CARGO_PKG_VERSION"),
            meta.name
        ),
    )
    .map_err(hlog_err)?;
    let series_path = out.join(rundir::TIME_SERIES);
    let mut series = SeriesWriter::create(&series_path).map_err(write_err(&series_path))?;
    for (second, phases) in &w.stats {
        let named: Vec<(&str, &Stats)> = phases
            .iter()
            .filter_map(|(p, s)| meta.phases.get(*p).map(|i| (i.name.as_str(), s)))
            .collect();
        hlog.window(*second, &named).map_err(hlog_err)?;
        // In flight is a per-second figure: on the second's first row, as a run writes it.
        let mut in_flight = w.in_flight.get(second).copied().unwrap_or(0);
        let (lag, busy) = w.generator.get(second).copied().unwrap_or_default();
        for (name, s) in &named {
            series
                .row(&Row::from_stats(*second, name, s, in_flight, lag, busy))
                .map_err(write_err(&series_path))?;
            in_flight = 0;
        }
    }
    series.flush().map_err(write_err(&series_path))
}

/// The shards' errors tables added into one line of `errors.jsonl` (the
/// same profile: request indices agree).
fn carry_errors(shards: &[ShardDir], out: &Path) -> Result<(), ShardError> {
    let mut all = crate::metrics::errors::ErrorTally::default();
    for s in shards {
        all.merge(&rundir::errors::read(&s.dir));
    }
    rundir::errors::ErrorsLog::new(out)
        .push(0, "all", &all)
        .map_err(ShardError::Rundir)
}

/// The shards' `traces.jsonl` lines on the merged clock, in one file: read
/// back, each phase keeps the slowest of every shard's.
fn carry_traces(shards: &[ShardDir], out: &Path, base: f64) -> Result<(), ShardError> {
    let mut all = Vec::new();
    for s in shards {
        let late = (s.meta.started_at - base).max(0.0);
        for mut l in rundir::traces::lines(&s.dir) {
            l.second += late.round() as u64;
            for r in &mut l.slowest {
                r.at_s += late;
            }
            all.push(l);
        }
    }
    if all.is_empty() {
        return Ok(());
    }
    all.sort_by_key(|l| l.second);
    rundir::traces::append(out, &all).map_err(ShardError::Rundir)
}

/// Every shard's events, each tagged with its shard, then the merge itself.
fn write_events(out: &Path, shards: &[ShardDir], m: &MergedFrom) -> Result<(), ShardError> {
    let path = out.join(rundir::EVENTS);
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).map_err(write_err(&path))?);
    for s in shards {
        rundir::for_each_event(&s.dir, |mut ev| {
            ev.insert("shard".into(), (s.meta.shard_index + 1).into());
            writeln!(f, "{}", serde_json::Value::Object(ev)).map_err(write_err(&path))
        })?;
    }
    let ev = serde_json::json!({"event": "merge", "shards": m.shard_count, "skew_ms": m.skew_ms});
    writeln!(f, "{ev}").map_err(write_err(&path))?;
    f.flush().map_err(write_err(&path))
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), ShardError> {
    std::fs::create_dir_all(to).map_err(write_err(to))?;
    let entries = std::fs::read_dir(from).map_err(|e| ShardError::Read {
        path: from.to_path_buf(),
        message: e.to_string(),
    })?;
    for e in entries {
        let e = e.map_err(|e| ShardError::Read {
            path: from.to_path_buf(),
            message: e.to_string(),
        })?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        // Follows symlinks on purpose: the merged directory must stand alone.
        if src.is_dir() {
            copy_tree(&src, &dst)?;
        } else if src.is_file() {
            std::fs::copy(&src, &dst).map_err(write_err(&dst))?;
        }
    }
    Ok(())
}

/// The server-side evidence of the shard whose collectors watched the target
/// (shard 1), moved onto the merged clock, where the judge reads it: a merged
/// run keeps its knee cause, leak trends and findings.
fn carry_evidence(shards: &[ShardDir], out: &Path, base: f64) -> Result<(), ShardError> {
    for s in shards {
        let Some(mut ev) = rundir::evidence::load(&s.dir)? else {
            continue;
        };
        if !ev.has_target_data() {
            continue;
        }
        let shift = s.meta.started_at - base;
        for pts in ev.series.values_mut() {
            for p in pts.iter_mut() {
                p.0 += shift;
            }
        }
        for f in &mut ev.findings {
            f.at_s += shift;
            if let Some(file) = &mut f.evidence {
                *file = file.replacen(
                    &format!("{}/", rundir::DIAGNOSTICS),
                    &format!("{}/shard-{}/", rundir::DIAGNOSTICS, s.meta.shard_index + 1),
                    1,
                );
            }
        }
        rundir::evidence::save(out, &ev)?;
        return Ok(());
    }
    Ok(())
}

/// What a merged summary keeps of the shards' collectors.
#[derive(Default)]
struct Carried {
    collectors: Option<crate::vocab::collectors::CollectorsSummary>,
    findings: Option<serde_json::Value>,
    notes: Vec<String>,
}

/// Collectors ran in one shard (so the target was sampled once): keep its
/// `collectors` and `findings`; their files are under `diagnostics/shard-I/`.
fn carry_collectors(shards: &[ShardDir]) -> Carried {
    let with: Vec<(u32, &Summary)> = shards
        .iter()
        .filter_map(|sh| Some((sh.meta.shard_index + 1, sh.summary.as_ref()?)))
        .filter(|(_, sum)| sum.collectors.is_some() || sum.findings.is_some())
        .collect();
    let mut c = Carried::default();
    if let Some((i, sum)) = with.first() {
        c.collectors = sum.collectors.clone();
        c.findings = sum.findings.clone();
        if with.len() > 1 {
            c.notes.push(format!(
                "collectors ran in {} shards; the summary keeps shard {i}'s, every shard's files are under diagnostics/shard-I/",
                with.len()
            ));
        }
    }
    c
}
