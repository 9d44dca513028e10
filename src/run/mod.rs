//! One run end to end: compile the profile into a [`spec::RunSpec`], run
//! its `setup:` once ([`setup`]), start the recorder, the collectors and the
//! engine, run its `teardown:`, then judge and write the run directory. Also `brunt report DIR` ([`rebuild`]), which judges a run
//! directory again from its files.
//!
//! Once the load ends the run writes its files, then reads the directory
//! back through [`rundir::RunData::read`] and judges what it read, exactly
//! as `brunt report` does: `timeseries.csv` rounds its per-second figures,
//! and a summary judged from the seconds still in memory could differ from
//! the one `brunt report` rebuilds on the same directory.

mod builtin;
mod control;
pub mod dashboard;
mod dir;
mod export;
pub mod live;
pub mod rebuild;
mod recorder;
mod setup;
pub mod spec;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, OnceLock};
use std::time::SystemTime;

use thiserror::Error;

use crate::engine::{self, Engine, EngineConfig, EngineError, Shard};
use crate::judge::{Ending, Judging, StopKind, Summary};
use crate::metrics::hlog::HlogWriter;
use crate::metrics::series::SeriesWriter;
use crate::metrics::Measured;
use crate::profile::{Plan, Profile};
use crate::rundir::{self, RunMeta, RundirError};
use crate::vocab::{RunClock, RunObserver, Say};
use recorder::Recording;
pub use spec::RunSpec;

#[derive(Debug, Error)]
pub enum RunError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("cannot create run directory {path}: {source}")]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("writing the run directory: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Hlog(#[from] crate::metrics::hlog::HlogError),
    #[error(transparent)]
    Rundir(#[from] RundirError),
    #[error(transparent)]
    Profile(#[from] crate::profile::ProfileError),
    #[error("built-in demo target: {0}")]
    Demo(String),
    /// Writing a second of the run failed (a full disk): the load was
    /// stopped at once; what reached the disk stays for `brunt report`.
    #[error("cannot write the run directory {dir} at second {second}: {cause}; the load was stopped at once. What reached the disk is kept: free some space and `brunt report {dir}` rebuilds the run up to there", dir = dir.display())]
    Recording {
        dir: PathBuf,
        second: u64,
        /// In the message, not a `source`: the chain would repeat it.
        cause: Box<RunError>,
    },
    /// A bug in brunt, not bad input: the recorder thread panicked.
    #[error("internal error: {0}")]
    Internal(String),
    #[error("{0}")]
    Invalid(String),
    /// Started more than `max_late` after the agreed start: nothing was sent.
    #[error("{0}")]
    LateStart(String),
    /// The `setup:` failed (here or on shard 1): nothing of the load was sent.
    #[error("{0}")]
    Setup(String),
    #[error(transparent)]
    Export(#[from] crate::export::ExportError),
}

impl From<spec::SpecError> for RunError {
    fn from(e: spec::SpecError) -> Self {
        match e {
            spec::SpecError::Profile(e) => RunError::Profile(e),
            spec::SpecError::Engine(e) => RunError::Engine(e),
            e @ spec::SpecError::NoPhase => RunError::Invalid(e.to_string()),
        }
    }
}

impl RunError {
    /// Whether the user's input (profile, flags, target URL) is at fault.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            RunError::Engine(EngineError::Client(_))
                | RunError::Invalid(_)
                | RunError::Profile(_)
                | RunError::Export(crate::export::ExportError::Listen { .. })
        )
    }

    /// Whether writing the run directory failed (a full disk, a read-only
    /// mount): exit [`crate::vocab::exit::WRITE_FAILED`].
    pub fn is_write_failure(&self) -> bool {
        matches!(
            self,
            RunError::Recording { .. }
                | RunError::Dir { .. }
                | RunError::Rundir(RundirError::Write { .. })
                | RunError::Hlog(crate::metrics::hlog::HlogError::Io(_))
        )
    }
}

/// How progress is shown while the load runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Progress {
    /// A live bar on a terminal, plain lines otherwise.
    #[default]
    Auto,
    /// A plain line every few seconds (CI logs).
    Plain,
    Quiet,
}

/// Options of one run beyond the profile.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Overrides `target.url`.
    pub target: Option<String>,
    /// The run directory; default `<output.dir or runs>/<timestamp>-<name>`.
    pub out: Option<PathBuf>,
    /// Multiplies every phase duration (1.0 when zero).
    pub time_scale: f64,
    pub shard: Shard,
    /// Start the load at this wall-clock time (shards stepping together).
    pub start_at: Option<SystemTime>,
    /// With `start_at`: refuse to run ([`RunError::LateStart`]) when this
    /// process is ready more than this long after it (a late shard would
    /// skew the merge).
    pub max_late: Option<std::time::Duration>,
    pub progress: Progress,
    /// Set to stop the load early (Ctrl-C, SIGTERM); the run drains what is
    /// in flight and still writes its report, marked interrupted.
    pub stop: Option<Arc<AtomicBool>>,
    /// What set `stop` (e.g. "SIGTERM"), for `stopped_reason`; Ctrl-C when unset.
    pub stopped_by: Option<Arc<OnceLock<String>>>,
    /// Extra observers (collectors are added from the profile).
    pub observers: Vec<Arc<dyn RunObserver>>,
    /// Directory that relative paths of the profile (collector definitions,
    /// feeder files) are resolved against: the profile's own.
    pub base_dir: Option<PathBuf>,
    /// `--env KEY=VALUE`: template variables that beat the process environment.
    pub env: std::collections::BTreeMap<String, String>,
    /// `--force`: an existing run directory at `out` is emptied first
    /// (without it, a non-empty `out` is refused).
    pub force: bool,
    /// `--metrics-listen`: serve live figures at `/metrics` (Prometheus pull).
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// `--remote-write URL`: push live figures (beats `output.prometheus_remote_write`).
    pub remote_write: Option<String>,
    /// After the run, wait at most this long for a scrape of the final
    /// figures (default 15 s, Prometheus' default scrape interval).
    pub metrics_linger: Option<std::time::Duration>,
    /// `--control ADDR` (sharded runs): shard 1 serves a stop endpoint here
    /// and every shard stops when one does (see `run::control`).
    pub control: Option<String>,
    /// `--dashboard`: the live page, bound by the caller; it follows the run directory.
    pub dashboard: Option<Arc<dashboard::DashboardServer>>,
    /// Where warnings and progress lines go (the CLI prints them; the
    /// default drops them).
    pub say: crate::vocab::Say,
}

/// What a run leaves.
pub struct RunResult {
    pub dir: PathBuf,
    pub summary: Summary,
}

impl RunResult {
    /// 0 every gate met, 99 a gate failed or had no data, 105 interrupted
    /// (see [`Summary::exit_code`]).
    pub fn exit_code(&self) -> i32 {
        self.summary.exit_code()
    }
}

fn default_dir(profile: &Profile, shard: Shard) -> PathBuf {
    let parent = profile
        .output
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("runs"));
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
    let mut name = format!("{stamp}-{}", sanitize(&profile.name));
    if shard.count > 1 {
        name.push_str(&format!("-shard{}of{}", shard.index + 1, shard.count));
    }
    parent.join(name)
}

pub(super) fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Run a profile end to end and write its run directory.
pub fn execute(profile: &Profile, opts: RunOptions) -> Result<RunResult, RunError> {
    let path = opts
        .base_dir
        .clone()
        .unwrap_or_default()
        .join(rundir::PROFILE);
    execute_profile(profile.clone(), &path, opts)
}

/// Compile a profile (`path` names it in errors) and run it: the built-in
/// target is started first, since its address is an input to the compile.
pub fn execute_profile(
    mut profile: Profile,
    path: &Path,
    opts: RunOptions,
) -> Result<RunResult, RunError> {
    let mut inputs = spec::CompileInputs {
        target: opts.target.clone(),
        builtin_url: None,
        env: opts.env.clone(),
        shard: opts.shard,
        base_dir: opts.base_dir.clone(),
        time_scale: opts.time_scale,
    };
    // The built-in target lives as long as the run.
    let demo = if inputs.url_of(&profile) == "builtin" {
        let cfg = profile.target.builtin.clone().unwrap_or_default();
        let d = crate::demo::DemoServer::start(cfg).map_err(|e| RunError::Demo(e.to_string()))?;
        inputs.builtin_url = Some(d.base_url());
        builtin::watch(&mut profile.collectors, d.addr().port());
        Some(d)
    } else {
        None
    };
    let spec = RunSpec::compile(profile, &inputs, path)?;
    execute_spec(&spec, demo, opts)
}

/// Run a compiled spec end to end and write its run directory; `demo` is
/// the built-in target it sends to, stopped when the load ends.
fn execute_spec(
    spec: &RunSpec,
    demo: Option<crate::demo::DemoServer>,
    opts: RunOptions,
) -> Result<RunResult, RunError> {
    let (plan, cfg, url) = (&spec.plan, &spec.engine, spec.url.as_str());
    let scale = spec.time_scale;
    let dir = opts
        .out
        .clone()
        .unwrap_or_else(|| default_dir(&spec.profile, opts.shard));
    // A busy port is bad input, refused before the directory is touched.
    if let Some(a) = opts.metrics_listen {
        crate::export::check_listen(a)?;
    }
    setup::check(spec, &opts)?;
    // Shard 1's endpoint, up before the setup whose values it hands out.
    let server = match (&opts.control, opts.shard.index) {
        (Some(a), 0) => Some(
            control::Server::start(a, &opts.say)
                .map_err(|e| RunError::Invalid(format!("--control {a}: {e}")))?,
        ),
        _ => None,
    };
    dir::claim_dir(&dir, opts.force)?;
    engine::preflight(cfg)?;

    if let (Some(at), Some(max)) = (opts.start_at, opts.max_late) {
        if let Ok(late) = SystemTime::now().duration_since(at) {
            if late > max {
                let at_s = at
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map(|d| d.as_secs_f64())
                    .unwrap_or_default();
                return Err(RunError::LateStart(format!(
                    "started {:.1} s after --start-at {at_s:.0}, more than --max-late {}: refusing to run, since a late shard would skew the merge (nothing was sent; start the shards again with a later --start-at)",
                    late.as_secs_f64(),
                    humantime::format_duration(max)
                )));
            }
        }
    }
    dir::prepare_dir(&dir, &spec.profile, spec.shown_url())?;
    setup::before_load(spec, &opts, &dir, server.as_ref())?;

    // Shards agree on a wall-clock start; otherwise start now.
    if let Some(at) = opts.start_at {
        if let Ok(wait) = at.duration_since(SystemTime::now()) {
            std::thread::sleep(wait);
        }
    }
    let clock = RunClock::now();
    let meta = run_meta(&spec.profile, url, plan, cfg, &clock, scale, &opts);
    rundir::write_json(&dir.join(rundir::RUN_JSON), &meta)?;
    if let Some(d) = &opts.dashboard {
        d.follow(&dir);
    }
    let exporter = export::start(spec, plan, cfg, &dir, &opts, clock.start_unix())?;
    let outcome = load(
        spec,
        plan,
        cfg,
        &dir,
        clock,
        &opts,
        exporter.clone(),
        server,
    );
    // After a stop too; before the built-in target goes.
    let ended = outcome.as_ref().ok().and_then(|o| o.ended.clone());
    setup::after_load(spec, &opts, &dir, ended.as_deref())?;
    let outcome = outcome?;
    drop(demo);
    // The final push before the summary, which counts it (export.jsonl);
    // the last scrape after, so the summary is not held up by it.
    if let Some(e) = &exporter {
        export::push_final(e, &opts);
    }
    let summary = finish(spec, &dir, &meta, plan, clock, outcome, &opts)?;
    if let Some(e) = exporter {
        export::last_scrape(&e, &opts);
    }
    Ok(RunResult { dir, summary })
}

fn run_meta(
    profile: &Profile,
    url: &str,
    plan: &Plan,
    cfg: &EngineConfig,
    clock: &RunClock,
    scale: f64,
    opts: &RunOptions,
) -> RunMeta {
    RunMeta {
        name: profile.name.clone(),
        target: url.to_string(),
        model: plan.model,
        shape: plan.kind.clone(),
        phases: plan.infos(),
        started_at: clock.start_unix(),
        time_scale: scale,
        shard_index: opts.shard.index,
        shard_count: opts.shard.count,
        workers: cfg.workers,
        brunt_version: env!("CARGO_PKG_VERSION").into(),
        requests: cfg.outcome_names(),
        protocol: Some(cfg.protocol()),
        scenarios: profile.scenarios.iter().map(|s| s.name.clone()).collect(),
        start_at: opts
            .start_at
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map(|d| d.as_secs_f64()),
        merged: None,
        writer: crate::rundir::writer::Writer::this(),
        connections: Some(profile.load.connections),
        trace: profile.target.trace.as_ref().map(spec::trace_meta),
    }
}

/// What the load phase leaves for judging.
struct LoadOutcome {
    /// Why the engine stopped the load itself (a unique feeder ran out).
    engine_reason: Option<String>,
    recorded: recorder::Recorded,
    /// The stop flag was set (by the user, a signal, a breach, or another shard).
    stopped: bool,
    /// Another shard's stop that stopped this one.
    peer: Option<control::SharedStop>,
    /// Why the shards' control endpoint could not be reached, if it could not.
    control_lost: Option<String>,
    /// Shard 1 with `--control`: the other shards whose load has ended.
    ended: Option<Arc<control::Ended>>,
    collectors: Option<crate::collectors::CollectorsSummary>,
}

/// Drive the load with the recorder and the collectors alongside, until the
/// plan ends or the run is stopped. `server`: shard 1's control endpoint.
#[allow(clippy::too_many_arguments)]
fn load(
    spec: &RunSpec,
    plan: &Plan,
    cfg: &Arc<EngineConfig>,
    dir: &Path,
    clock: RunClock,
    opts: &RunOptions,
    export: Option<Arc<crate::export::Exporter>>,
    server: Option<control::Server>,
) -> Result<LoadOutcome, RunError> {
    let stop = opts.stop.clone().unwrap_or_default();
    // Collectors watch the target from their own threads; in a sharded run
    // only the first shard samples it, so the target is not sampled N times.
    let collectors = if opts.shard.index == 0 {
        Some(
            crate::collectors::start_with(
                &spec.collectors,
                crate::collectors::CollectorContext {
                    clock,
                    run_dir: dir.to_path_buf(),
                    phases: plan.infos(),
                    p99_threshold: spec.p99_limit(),
                    base_dir: spec.base_dir.clone(),
                },
                read_jfr_window,
            )
            .map_err(|e| RunError::Invalid(format!("collectors: {e}")))?,
        )
    } else {
        None
    };
    let mut observers = opts.observers.clone();
    if let Some(c) = &collectors {
        observers.push(c.observer());
    }
    let (tx, rx) = mpsc::channel();
    let breach_cause: Arc<std::sync::OnceLock<String>> = Arc::default();
    let control = match opts.control {
        Some(ref addr) => {
            let engine_cfg = cfg.clone();
            let causes = control::LocalCauses {
                breach: breach_cause.clone(),
                signal: opts.stopped_by.clone(),
                engine: Some(Arc::new(move || engine_cfg.stopped_reason())),
            };
            let ends = clock.start + plan.total();
            Some(
                control::Control::start(
                    addr,
                    opts.shard.index,
                    server,
                    stop.clone(),
                    causes,
                    ends,
                    opts.say.clone(),
                )
                .map_err(|e| RunError::Invalid(format!("--control {addr}: {e}")))?,
            )
        }
        None => None,
    };
    let rec = Recording {
        breach_cause,
        dir: dir.to_path_buf(),
        plan: plan.clone(),
        clock,
        workers: cfg.workers,
        budgets: spec.budgets.clone(),
        stop: stop.clone(),
        observers: observers.clone(),
        progress: resolve_progress(opts.progress),
        say: opts.say.clone(),
        export,
    };
    let hlog = HlogWriter::create(
        &dir.join(rundir::LATENCY_LOG),
        clock.start_unix(),
        &format!("brunt {} {}", env!("CARGO_PKG_VERSION"), spec.profile.name),
    )?;
    let series = SeriesWriter::create(&dir.join(rundir::TIME_SERIES))?;
    let engine = Engine::start(cfg.clone(), clock.start, tx, stop.clone())?;
    let live = engine.live.clone();
    let recorder = std::thread::Builder::new()
        .name("brunt-recorder".into())
        .spawn(move || rec.run(rx, hlog, series, live))
        .map_err(RunError::Io)?;
    engine.join();
    let engine_reason = cfg.stopped_reason();
    let recorded = recorder
        .join()
        .map_err(|_| RunError::Internal("the recorder thread panicked".into()));
    // Collectors end with the load, also when the recorder failed.
    for o in &observers {
        o.finished();
    }
    let collectors = collectors.map(|c| c.finish());
    let (peer, control_lost, ended) = match control {
        Some(c) => {
            let seen = (
                c.peer.get().cloned(),
                c.unreachable.get().cloned(),
                c.ended.clone(),
            );
            c.finish();
            seen
        }
        None => (None, None, None),
    };
    Ok(LoadOutcome {
        engine_reason,
        recorded: recorded??,
        stopped: stop.load(Ordering::Relaxed),
        peer,
        control_lost,
        ended,
        collectors,
    })
}

/// Gather the server-side evidence, diagnose, judge, and write the results.
fn finish(
    spec: &RunSpec,
    dir: &Path,
    meta: &RunMeta,
    plan: &Plan,
    clock: RunClock,
    out: LoadOutcome,
    opts: &RunOptions,
) -> Result<Summary, RunError> {
    let analysis = gather_evidence(dir, &spec.pool_patterns, meta, &opts.say);

    let elapsed = clock.elapsed().min(plan.total());
    let measured = Measured::new(&meta.phases, out.recorded.phases, elapsed);
    // A breach or an exhausted unique feeder stops the load by design; any
    // other stop is the user's (or a signal's).
    let kind = if out.recorded.breach_stop {
        Some(StopKind::Breach)
    } else if out.engine_reason.is_some() {
        Some(StopKind::DataExhausted)
    } else if let Some(p) = &out.peer {
        // Stopped with another shard: its kind (a breach stays by design).
        Some(p.kind)
    } else if out.stopped {
        Some(StopKind::Interrupted)
    } else {
        None
    };
    let reason = match kind {
        _ if out.peer.is_some() && !out.recorded.breach_stop && out.engine_reason.is_none() => out
            .peer
            .as_ref()
            .map(|p| format!("stopped with shard {}: {}", p.shard, p.reason)),
        Some(StopKind::Interrupted) => Some(match opts.stopped_by.as_ref().and_then(|w| w.get()) {
            Some(by) => format!("stopped by {by}"),
            None => "stopped by the user (Ctrl-C)".to_string(),
        }),
        Some(StopKind::DataExhausted) => out.engine_reason,
        _ => out.recorded.stopped_reason,
    };
    rundir::write_streams(dir, &spec.engine.stream_rows())?;
    // Judged from the files just written, as `brunt report` judges them
    // (see `rundir::data`: the series' rounding must not tell them apart).
    let data = rundir::RunData::read(dir)?;
    let summary = crate::judge::judge(
        Judging {
            budgets: &spec.budgets,
            settings: &spec.profile.verdicts,
            measured: &measured,
            ending: Ending {
                kind,
                reason,
                early: false,
            },
            generator: rundir::read::generator_health(&data.seconds),
            collectors: out.collectors,
            findings: analysis.and_then(|a| serde_json::to_value(&a.findings).ok()),
            notes: out
                .control_lost
                .map(|e| format!("shard control unreachable ({e}): a stop in another shard may not have reached this one"))
                .into_iter()
                .collect(),
        },
        &data,
    );
    rundir::write_json(&dir.join(rundir::SUMMARY), &summary)?;
    // The result stands without its HTML view: warn, never fail the run for it.
    if let Err(e) = crate::report::html::write(dir, &summary, &data) {
        opts.say.warn(e.to_string());
    }
    Ok(summary)
}

/// Server-side evidence for the verdicts — the collectors' samples and the
/// engine's own generator figures, on the run's clock, and the findings read
/// from what the collectors captured (dumps, JFR, pinning traces), each
/// tagged with its phase — saved as `diagnostics/evidence.json`. Returns
/// the diagnosis.
fn gather_evidence(
    dir: &Path,
    pool_patterns: &[crate::diagnosis::PoolPattern],
    meta: &RunMeta,
    say: &Say,
) -> Option<crate::diagnosis::Analysis> {
    let mut evidence = rundir::evidence::from_collector_streams(dir);
    let analysis = diagnose(dir, pool_patterns, meta, say);
    if let Some(a) = &analysis {
        evidence.merge(crate::evidence::from_analysis(a, meta.started_at));
    }
    if let Err(e) = rundir::evidence::save(dir, &evidence) {
        say.warn(e.to_string());
    }
    analysis
}

/// Findings from the run's `diagnostics/`, written to `findings.json`; `None`
/// when nothing diagnosable was captured (no JVM collector).
fn diagnose(
    dir: &Path,
    pool_patterns: &[crate::diagnosis::PoolPattern],
    meta: &RunMeta,
    say: &Say,
) -> Option<crate::diagnosis::Analysis> {
    let has_inputs = std::fs::read_dir(dir.join(rundir::DIAGNOSTICS))
        .ok()?
        .flatten()
        .any(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            !(n.ends_with(".jsonl") || n == rundir::EVIDENCE)
        });
    if !has_inputs {
        return None;
    }
    let opts = crate::diagnosis::Options {
        phases: meta
            .phases
            .iter()
            .map(|p| crate::diagnosis::PhaseWindow {
                name: p.name.clone(),
                start_unix: meta.started_at + p.start.as_secs_f64(),
                end_unix: meta.started_at + p.end().as_secs_f64(),
            })
            .collect(),
        pool_patterns: pool_patterns.to_vec(),
        ..Default::default()
    };
    match crate::diagnosis::Analysis::from_run_dir(dir, &opts) {
        Ok(mut a) => {
            retime_dumps(&mut a, meta.started_at, &opts.phases);
            if let Err(e) = a.write_findings_json(dir) {
                say.warn(format!("{}: {e}", rundir::FINDINGS));
            }
            // Flame graphs per phase beside each recording (report.html embeds them).
            if let Err(e) = crate::diagnosis::flame::write_beside(&a.flames) {
                say.warn(format!("flame graphs: {e}"));
            }
            Some(a)
        }
        Err(e) => {
            say.warn(format!("diagnosis: {e}"));
            None
        }
    }
}

/// The collectors' [`crate::collectors::WindowReader`]: the diagnosis's
/// JFR reader, counting the events after the cut.
fn read_jfr_window(path: &Path, cut_unix: f64) -> Result<crate::collectors::WindowFigures, String> {
    let r = crate::diagnosis::jfr::parse_jfr_window(path, cut_unix).map_err(|e| e.to_string())?;
    Ok(crate::collectors::WindowFigures {
        chunks: r.chunks,
        end_unix: r.start_unix.map(|s| s + r.duration_s),
        warnings: r.warnings,
        totals: r.totals,
    })
}

/// A text dump's header prints whole seconds, so a dump asked for just
/// after a phase began reads as taken in the phase before. The artifact's
/// name says when brunt asked for it (run clock), a lower bound of when it
/// was taken: where that is later than the header's time, it is the better
/// time, and the dump and its findings are tagged with the phase it gives.
fn retime_dumps(
    a: &mut crate::diagnosis::Analysis,
    started_at: f64,
    phases: &[crate::diagnosis::PhaseWindow],
) {
    let asked = |file: &str| {
        let name = Path::new(file).file_name()?.to_str()?;
        crate::vocab::files::artifact_time(name).map(|t| started_at + t)
    };
    let later = |file: &str, header: Option<f64>| {
        let at = asked(file)?;
        // Within the header's second: the same dump, truncated.
        header.filter(|h| at > *h && at - h < 1.0).map(|_| at)
    };
    let mut moved = false;
    for d in &mut a.dumps {
        if let Some(at) = later(&d.file, d.time_unix) {
            d.time_unix = Some(at);
            moved = true;
        }
    }
    for f in &mut a.findings {
        if let Some(at) = later(&f.evidence.file, f.evidence.time_unix) {
            f.evidence.time_unix = Some(at);
            moved = true;
        }
    }
    if moved && !phases.is_empty() {
        a.tag_phases(|t| {
            let u = t
                .duration_since(std::time::SystemTime::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0);
            crate::diagnosis::phase_at(phases, u).map(str::to_string)
        });
    }
}

fn resolve_progress(p: Progress) -> Progress {
    match p {
        Progress::Auto if std::io::stderr().is_terminal() => Progress::Auto,
        Progress::Auto => Progress::Plain,
        other => other,
    }
}

#[cfg(test)]
mod retime_tests {
    use super::*;
    use crate::diagnosis::{Analysis, DumpStates, PhaseWindow};

    fn dump(file: &str, unix: f64) -> DumpStates {
        DumpStates {
            file: file.into(),
            index: 0,
            time: None,
            time_unix: Some(unix),
            phase: None,
            threads: 1,
            states: Default::default(),
            activity: None,
        }
    }

    #[test]
    fn a_dump_asked_for_at_a_phase_start_is_that_phases() {
        let started = 1_000.3;
        let phases = [
            PhaseWindow {
                name: "step-1".into(),
                start_unix: started,
                end_unix: started + 10.0,
            },
            PhaseWindow {
                name: "step-2".into(),
                start_unix: started + 10.0,
                end_unix: started + 20.0,
            },
        ];
        let at_start =
            crate::collectors::store::artifact_name("thread-dump", 10.0, "step-2", 2, "txt");
        let mid = crate::collectors::store::artifact_name("thread-dump", 5.0, "step-1", 1, "txt");
        let mut a = Analysis::default();
        // Headers in whole seconds: 1010 (step-1 by the header) and 1005.
        a.dumps
            .push(dump(&format!("/x/diagnostics/{at_start}"), 1_010.0));
        a.dumps
            .push(dump(&format!("/x/diagnostics/{mid}"), 1_005.0));
        // A header a second or more before the ask is another clock: left alone.
        a.dumps
            .push(dump(&format!("/x/diagnostics/{at_start}"), 1_008.0));
        a.dumps.push(dump("/x/dump.txt", 1_010.0));
        retime_dumps(&mut a, started, &phases);
        let got: Vec<(Option<&str>, Option<f64>)> = a
            .dumps
            .iter()
            .map(|d| (d.phase.as_deref(), d.time_unix))
            .collect();
        assert_eq!(got[0], (Some("step-2"), Some(1_010.3)));
        assert_eq!(got[1], (Some("step-1"), Some(1_005.3)));
        assert_eq!(got[2], (Some("step-1"), Some(1_008.0)));
        assert_eq!(got[3], (Some("step-1"), Some(1_010.0)));
    }
}
