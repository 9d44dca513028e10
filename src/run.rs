//! One run end to end: compile the profile, start the recorder, the collectors
//! and the engine, then write the report. Also the hooks through which
//! collectors follow a run without ever stalling it.

use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

/// The run's clock: every time series (load windows, collector samples,
/// diagnostics) is stamped as an offset from `start`.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    pub start: Instant,
    pub start_wall: SystemTime,
}

impl RunClock {
    pub fn now() -> Self {
        RunClock {
            start: Instant::now(),
            start_wall: SystemTime::now(),
        }
    }
    /// Time since the run started.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }
    /// Unix time in seconds (fractional) of the run start.
    pub fn start_unix(&self) -> f64 {
        self.start_wall
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
    }
}

/// A phase (or stress step) of the compiled schedule, as seen by observers and reports.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PhaseInfo {
    pub index: usize,
    /// Unique, tag-safe name (`step-3`, `spike`, `stage-2`): no spaces or commas.
    pub name: String,
    /// Human description, e.g. `600/s` or `50 VUs`.
    pub label: String,
    /// Offset of the phase start from the run start.
    #[serde(with = "humantime_serde")]
    pub start: Duration,
    #[serde(with = "humantime_serde")]
    pub duration: Duration,
}

/// What one 1-s window of load looked like (sent to observers once a second).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WindowStats {
    /// Window index = whole seconds since the run start.
    pub second: u64,
    /// Index of the phase that was running at the end of the window.
    pub phase: usize,
    /// Requests due to start in this window (sent + dropped).
    pub offered: u64,
    /// Requests completed in this window, any outcome.
    pub completed: u64,
    pub ok: u64,
    pub shed: u64,
    /// Every non-ok, non-shed outcome, dropped included.
    pub errors: u64,
    pub in_flight: u64,
    /// Latency from the intended start, all completed requests, microseconds.
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

/// Follows a run from outside the load path. Called from the recorder thread
/// (never from a load worker); implementations must return quickly and hand
/// slow work to their own threads.
pub trait RunObserver: Send + Sync {
    fn phase_started(&self, _phase: &PhaseInfo, _clock: &RunClock) {}
    fn window(&self, _stats: &WindowStats) {}
    /// The load has ended (or was interrupted); flush and stop.
    fn finished(&self) {}
}

// ---------------------------------------------------------------------------
// Orchestration

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;

use thiserror::Error;

use crate::budgets::Budget;
use crate::engine::{self, Engine, EngineConfig, EngineError, Shard};
use crate::metrics::hlog::HlogWriter;
use crate::metrics::series::{Row, SeriesWriter};
use crate::metrics::{pct_us, Aggregator, Class, RecorderMsg, Stats};
use crate::profile::shape::ShapeKind;
use crate::profile::{Plan, Profile};
use crate::report::summary::{self, Measured, ReportError};
use crate::report::{RunMeta, Summary};

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
    Report(#[from] ReportError),
    #[error("built-in demo target: {0}")]
    Demo(String),
    #[error("{0}")]
    Invalid(String),
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
    pub progress: Progress,
    /// Set to stop the load early (Ctrl-C); the run still writes its report.
    pub stop: Option<Arc<AtomicBool>>,
    /// Extra observers (collectors are added from the profile).
    pub observers: Vec<Arc<dyn RunObserver>>,
    /// Directory that relative paths of the profile (collector definitions)
    /// are resolved against: the profile's own.
    pub base_dir: Option<PathBuf>,
}

/// What a run leaves.
pub struct RunResult {
    pub dir: PathBuf,
    pub summary: Summary,
}

impl RunResult {
    /// 0 all budgets met, 99 a budget failed.
    pub fn exit_code(&self) -> i32 {
        if self.summary.passed {
            0
        } else {
            99
        }
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

fn sanitize(s: &str) -> String {
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
    let scale = if opts.time_scale > 0.0 {
        opts.time_scale
    } else {
        1.0
    };
    let plan = profile.plan(scale);
    if plan.phases.is_empty() {
        return Err(RunError::Invalid(
            "the shape compiles to no phase (all durations zero?)".into(),
        ));
    }
    let mut profile = profile.clone();
    if let Some(t) = &opts.target {
        profile.target.url = t.clone();
        if t != "builtin" {
            profile.target.builtin = None;
        }
    }
    // The built-in target lives as long as the run.
    let demo = if profile.target.url == "builtin" {
        let cfg = profile.target.builtin.clone().unwrap_or_default();
        Some(crate::demo::DemoServer::start(cfg).map_err(|e| RunError::Demo(e.to_string()))?)
    } else {
        None
    };
    let url = match &demo {
        Some(d) => d.base_url(),
        None => profile.target.url.clone(),
    };
    let cfg = Arc::new(EngineConfig::new(&profile, &url, plan.clone(), opts.shard)?);
    engine::preflight(&cfg)?;

    let dir = opts
        .out
        .clone()
        .unwrap_or_else(|| default_dir(&profile, opts.shard));
    std::fs::create_dir_all(dir.join("diagnostics")).map_err(|source| RunError::Dir {
        path: dir.clone(),
        source,
    })?;
    let mut saved = profile.clone();
    saved.target.url = if demo.is_some() {
        "builtin".into()
    } else {
        url.clone()
    };
    std::fs::write(
        dir.join("profile.yaml"),
        serde_saphyr::to_string(&saved).map_err(|e| RunError::Invalid(e.to_string()))?,
    )?;

    // Shards agree on a wall-clock start; otherwise start now.
    if let Some(at) = opts.start_at {
        if let Ok(wait) = at.duration_since(SystemTime::now()) {
            std::thread::sleep(wait);
        }
    }
    let clock = RunClock::now();
    let meta = RunMeta {
        name: profile.name.clone(),
        target: url.clone(),
        model: plan.model,
        shape: plan.kind.clone(),
        phases: plan.infos(),
        started_at: clock.start_unix(),
        time_scale: scale,
        shard_index: opts.shard.index,
        shard_count: opts.shard.count,
        workers: cfg.workers,
        brunt_version: env!("CARGO_PKG_VERSION").into(),
        requests: cfg.requests.iter().map(|r| r.name.clone()).collect(),
        start_at: opts
            .start_at
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map(|d| d.as_secs_f64()),
        merged: None,
    };
    std::fs::write(
        dir.join("run.json"),
        serde_json::to_string_pretty(&meta).map_err(std::io::Error::other)?,
    )?;

    let stop = opts.stop.clone().unwrap_or_default();
    let budgets: Vec<Budget> = profile
        .budgets
        .iter()
        .filter_map(|b| b.parse().ok())
        .collect();
    // Collectors watch the target from their own threads; in a sharded run
    // only the first shard samples it, so the target is not sampled N times.
    let collectors = if opts.shard.index == 0 {
        let p99 = budgets
            .iter()
            .find(|b| b.phase.is_none() && b.metric == crate::budgets::Metric::Quantile(0.99))
            .map(|b| Duration::from_secs_f64(b.limit / 1000.0));
        Some(
            crate::collectors::start(
                &profile.collectors,
                crate::collectors::CollectorContext {
                    clock,
                    run_dir: dir.clone(),
                    phases: plan.infos(),
                    p99_threshold: p99,
                    base_dir: opts.base_dir.clone(),
                },
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
    let rec = Recording {
        dir: dir.clone(),
        plan: plan.clone(),
        clock,
        workers: cfg.workers,
        budgets,
        stop: stop.clone(),
        observers: observers.clone(),
        progress: resolve_progress(opts.progress),
    };
    let hlog = HlogWriter::create(
        &dir.join("latency.hlog"),
        clock.start_unix(),
        &format!("brunt {} {}", env!("CARGO_PKG_VERSION"), profile.name),
    )?;
    let series = SeriesWriter::create(&dir.join("timeseries.csv"))?;
    let engine = Engine::start(cfg.clone(), clock.start, tx, stop.clone())?;
    let live = engine.live.clone();
    let recorder = std::thread::Builder::new()
        .name("brunt-recorder".into())
        .spawn(move || rec.run(rx, hlog, series, live))
        .map_err(RunError::Io)?;
    engine.join();
    let out = recorder
        .join()
        .map_err(|_| RunError::Invalid("the recorder thread panicked".into()))??;
    for o in &observers {
        o.finished();
    }
    let collected = collectors.map(|c| c.finish());
    drop(demo);
    // Server-side evidence for the verdicts: the collectors' samples and the
    // engine's own generator figures, on the run's clock.
    let mut evidence = crate::report::evidence::from_collector_streams(&dir);
    // Read what the collectors captured (dumps, JFR, pinning traces) into
    // findings, each tagged with the phase it was seen in.
    let analysis = diagnose(&dir, &profile, &meta);
    if let Some(a) = &analysis {
        evidence.merge(crate::report::evidence::from_analysis(a, meta.started_at));
    }
    if let Err(e) = evidence.save(&dir) {
        eprintln!("warning: {e}");
    }

    let elapsed = clock.elapsed().min(plan.total());
    let interrupted = stop.load(Ordering::Relaxed);
    let measured = Measured::new(&meta, out.phases, elapsed);
    let reason = out
        .stopped_reason
        .or_else(|| interrupted.then(|| "stopped by the user (Ctrl-C)".to_string()));
    let inputs = crate::report::verdicts::Inputs::load(&dir);
    let mut summary = summary::build(meta, &profile, &measured, interrupted, reason, &inputs);
    summary.set_generator(out.generator);
    if let Some(c) = collected {
        summary.collectors = serde_json::to_value(c).ok();
    }
    if let Some(a) = &analysis {
        summary.findings = serde_json::to_value(&a.findings).ok();
    }
    summary::write(&dir, &summary)?;
    // The result stands without its HTML view: warn, never fail the run for it.
    if let Err(e) = crate::report::html::write(&dir, &summary) {
        eprintln!("warning: {e}");
    }
    Ok(RunResult { dir, summary })
}

/// Findings from the run's `diagnostics/`, written to `findings.json`; `None`
/// when nothing diagnosable was captured (no JVM collector).
fn diagnose(
    dir: &std::path::Path,
    profile: &Profile,
    meta: &RunMeta,
) -> Option<crate::diagnosis::Analysis> {
    let has_inputs = std::fs::read_dir(dir.join("diagnostics"))
        .ok()?
        .flatten()
        .any(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            !(n.ends_with(".jsonl")
                || n == crate::report::evidence::EVIDENCE_FILE.trim_start_matches("diagnostics/"))
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
                end_unix: meta.started_at + (p.start + p.duration).as_secs_f64(),
            })
            .collect(),
        pool_patterns: profile.diagnosis.pool_patterns(),
        ..Default::default()
    };
    match crate::diagnosis::Analysis::from_run_dir(dir, &opts) {
        Ok(a) => {
            if let Err(e) = a.write_findings_json(dir) {
                eprintln!("warning: findings.json: {e}");
            }
            Some(a)
        }
        Err(e) => {
            eprintln!("warning: diagnosis: {e}");
            None
        }
    }
}

fn resolve_progress(p: Progress) -> Progress {
    match p {
        Progress::Auto if std::io::stderr().is_terminal() => Progress::Auto,
        Progress::Auto => Progress::Plain,
        other => other,
    }
}

/// The recorder thread's state.
struct Recording {
    dir: PathBuf,
    plan: Plan,
    clock: RunClock,
    workers: usize,
    budgets: Vec<Budget>,
    stop: Arc<AtomicBool>,
    observers: Vec<Arc<dyn RunObserver>>,
    progress: Progress,
}

struct Recorded {
    phases: Vec<Stats>,
    stopped_reason: Option<String>,
    generator: summary::GeneratorHealth,
}

impl Recording {
    fn run(
        self,
        rx: Receiver<RecorderMsg>,
        mut hlog: HlogWriter,
        mut series: SeriesWriter,
        live: Arc<engine::Live>,
    ) -> Result<Recorded, RunError> {
        let mut agg = Aggregator::new(self.workers);
        let mut phases: Vec<Stats> = (0..self.plan.phases.len())
            .map(|_| Stats::default())
            .collect();
        let mut announced: Option<usize> = None;
        let mut judged = 0usize; // stress steps judged so far
        let mut stopped_reason = None;
        let mut generator = summary::GeneratorHealth::default();
        let mut events = std::fs::File::create(self.dir.join("events.jsonl"))?;
        let bar = self.make_bar();
        let names: Vec<String> = self
            .plan
            .phases
            .iter()
            .map(|p| p.info.name.clone())
            .collect();
        let stop_on_breach = matches!(
            self.plan.kind,
            ShapeKind::Stress {
                stop_on_breach: true,
                ..
            }
        );
        loop {
            // Announce the phase that is running now.
            let now_t = self.clock.elapsed();
            let cur = self.plan.phase_at(now_t);
            if announced != Some(cur) && now_t < self.plan.total() + Duration::from_secs(1) {
                for i in announced.map(|a| a + 1).unwrap_or(0)..=cur {
                    let info = &self.plan.phases[i].info;
                    for o in &self.observers {
                        o.phase_started(info, &self.clock);
                    }
                    let _ = writeln!(
                        events,
                        "{}",
                        serde_json::json!({"event": "phase_start", "phase": info.name, "label": info.label, "t": info.start.as_secs_f64()})
                    );
                }
                announced = Some(cur);
            }
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(msg) => agg.accept(msg),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {}
            }
            while let Ok(msg) = rx.try_recv() {
                agg.accept(msg);
            }
            let now_window = self.clock.elapsed().as_secs();
            for w in agg.ready(now_window) {
                let mut named: Vec<(&str, &Stats)> = Vec::new();
                for (p, s) in &w.phases {
                    if let Some(total) = phases.get_mut(*p) {
                        total.merge(s);
                    }
                }
                for (p, s) in &w.phases {
                    if let Some(n) = names.get(*p) {
                        named.push((n.as_str(), s));
                    }
                }
                hlog.window(w.second, &named)?;
                let mut rows_in_flight = w.in_flight;
                for (name, s) in &named {
                    series.row(&Row::from_stats(
                        w.second,
                        name,
                        s,
                        rows_in_flight,
                        w.sched_lag_us,
                        w.busy_pct.unwrap_or(0.0),
                    ))?;
                    rows_in_flight = 0;
                }
                series.flush()?;
                generator.observe(w.second, w.sched_lag_us, w.busy_pct.unwrap_or(0.0));
                let total = w.total();
                let lat = total.latency(None);
                let stats = WindowStats {
                    second: w.second,
                    phase: w.phases.last().map(|(p, _)| *p).unwrap_or(0),
                    offered: total.offered,
                    completed: total.completed(),
                    ok: total.count(Class::Ok),
                    shed: total.count(Class::Shed),
                    errors: total.errors() + total.dropped,
                    in_flight: live.in_flight(),
                    p50_us: pct_us(&lat, 0.5),
                    p99_us: pct_us(&lat, 0.99),
                    max_us: if lat.is_empty() { 0 } else { lat.max() / 1000 },
                };
                for o in &self.observers {
                    o.window(&stats);
                }
                self.show(&bar, &stats, &names);
                // Judge stress steps whose every window is in.
                if stop_on_breach && stopped_reason.is_none() {
                    while judged < self.plan.phases.len() {
                        let p = &self.plan.phases[judged];
                        if (w.second + 1) as f64 <= p.end().as_secs_f64() {
                            break;
                        }
                        let mut s = phases[judged].clone();
                        s.duration = p.info.duration;
                        let failed: Vec<String> = summary::step_verdicts(&self.budgets, &s)
                            .into_iter()
                            .filter(|v| !v.pass)
                            .map(|v| format!("{} (measured {})", v.budget, v.shown))
                            .collect();
                        judged += 1;
                        if !failed.is_empty() && s.completed() > 0 {
                            let why = format!(
                                "{} ({}) broke {}; stopped at the first breach",
                                p.info.name,
                                p.info.label,
                                failed.join(", ")
                            );
                            let _ = writeln!(
                                events,
                                "{}",
                                serde_json::json!({"event": "breach", "phase": p.info.name, "why": why})
                            );
                            stopped_reason = Some(why);
                            self.stop.store(true, Ordering::Relaxed);
                            break;
                        }
                    }
                }
            }
            if agg.all_done() && agg.ready(u64::MAX).is_empty() {
                break;
            }
        }
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        let _ = writeln!(
            events,
            "{}",
            serde_json::json!({"event": "end", "t": self.clock.elapsed().as_secs_f64()})
        );
        Ok(Recorded {
            phases,
            stopped_reason,
            generator,
        })
    }

    fn make_bar(&self) -> Option<indicatif::ProgressBar> {
        if self.progress != Progress::Auto {
            return None;
        }
        let b = indicatif::ProgressBar::new(self.plan.total().as_secs().max(1));
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:30.cyan/blue} {pos:>5}/{len}s {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Some(b)
    }

    fn show(&self, bar: &Option<indicatif::ProgressBar>, s: &WindowStats, names: &[String]) {
        let phase = names.get(s.phase).map(String::as_str).unwrap_or("-");
        let label = self
            .plan
            .phases
            .get(s.phase)
            .map(|p| p.info.label.as_str())
            .unwrap_or("");
        let line = format!(
            "{phase} {label} | offered {}/s done {}/s | in flight {} | p99 {:.1}ms | ok {} shed {} err {}",
            s.offered,
            s.completed,
            s.in_flight,
            s.p99_us as f64 / 1000.0,
            s.ok,
            s.shed,
            s.errors
        );
        match (self.progress, bar) {
            (Progress::Auto, Some(b)) => {
                b.set_position(s.second + 1);
                b.set_message(line);
            }
            (Progress::Plain, _) if s.second % 5 == 4 || s.second == 0 => {
                eprintln!("[{:>5}s] {line}", s.second + 1);
            }
            _ => {}
        }
    }
}
