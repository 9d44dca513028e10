//! Collectors: watch the target's host and JVM (and brunt's own health) while
//! the load runs, and store what they see in the run directory.
//!
//! | module | owns |
//! |---|---|
//! | [`definition`] | collector definitions as data (`collectors/*.yaml`), placeholders |
//! | [`quote`] | shell quoting of every value that reaches a remote shell |
//! | [`transport`] | `local`, `ssh` (libssh2), `openssh`, command prefix: one file each |
//! | [`host`] | the `proc-host` parser (`/proc` in one command per sample) |
//! | [`jvm`] | target PID discovery, JVM version, `gc-heap-info` parser |
//! | [`postgres`] | the `pg-json` parser (the `postgres` collector's one JSON document per sample) and statement normalisation |
//! | [`prometheus`] | the Prometheus source: named PromQL queries on a thread of their own |
//! | [`generator`] | brunt's own CPU/RSS and scheduler lag; the "saturated" verdict |
//! | [`store`] | `diagnostics/*.jsonl` streams, artifact names, phase tracking |
//! | `lanes` | the collector threads (a `samples` and an `artifacts` lane): scheduling, triggers, JFR, reconnects, gaps; the database probes' password on standard input and their check before the load |
//!
//! The engine never waits on a collector: the run sees collectors only through
//! [`crate::vocab::RunObserver`] callbacks, which just send a message to the
//! collector thread. Blocking SSH calls happen on that thread only.
//!
//! Its settings are the profile's `collectors:` section ([`crate::profile::collectors`]).
//!
//! Use: [`compile`] when the run spec is compiled, [`start_with`] before the load, hand
//! [`CollectorSet::observer`] to the run,
//! [`CollectorSet::finish`] after it for the [`CollectorsSummary`].

pub mod definition;
pub mod error;
pub mod fds;
pub mod generator;
pub mod host;
pub mod jvm;
mod lanes;
pub mod postgres;
pub mod prometheus;
pub mod quote;
pub mod store;
pub mod transport;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crate::profile::collectors::{self as config, CollectorsConfig};
pub use error::CollectorError;

pub use crate::vocab::collectors::{
    ArtifactInfo, CollectorErrorKind, CollectorsSummary, ErrorInfo, GapInfo, GeneratorSummary,
    PidInfo, StreamInfo,
};
use crate::vocab::{PhaseInfo, RunClock, RunObserver, WindowStats};
use definition::ProbeKind;
use lanes::{Event, Lane, LaneSetup};
pub use lanes::{WindowFigures, WindowReader};
use store::PhaseTracker;

/// What the run gives the collectors when it starts them.
#[derive(Debug, Clone)]
pub struct CollectorContext {
    /// The run's clock: every sample is stamped with seconds since its start.
    pub clock: RunClock,
    /// The run directory; collectors write under `diagnostics/` in it.
    pub run_dir: PathBuf,
    /// The compiled schedule's phases (for phase tags and JFR phase selection).
    pub phases: Vec<PhaseInfo>,
    /// The budgets' p99 threshold: a 1-s p99 above it fires `on_trigger` probes
    /// (the profile's `collectors.trigger_p99` wins when set).
    pub p99_threshold: Option<Duration>,
    /// Directory that relative definition paths are resolved against (the
    /// profile's) when [`start`] compiles the section; a compiled
    /// [`CollectorsSpec`] has resolved them already.
    pub base_dir: Option<PathBuf>,
}

/// The running collectors. Hand [`CollectorSet::observer`] (or the set
/// itself) to the run; call [`CollectorSet::finish`] after the load.
pub struct CollectorSet {
    observer: Arc<CollectorObserver>,
    lanes: Vec<JoinHandle<CollectorsSummary>>,
    prometheus: Option<(Sender<()>, JoinHandle<CollectorsSummary>)>,
    generator: Option<generator::Generator>,
    transport: String,
}

/// The cheap half of a [`CollectorSet`] that the run calls: each callback
/// only stores a number or sends a message to the collector thread.
pub struct CollectorObserver {
    tx: Vec<Sender<Event>>,
    tracker: Arc<PhaseTracker>,
    threshold_us: Option<u64>,
    saturated: Option<Arc<AtomicBool>>,
}

impl CollectorObserver {
    fn send(&self, ev: impl Fn() -> Event) {
        for tx in &self.tx {
            // A collector thread may have ended; the load does not care.
            let _ = tx.send(ev());
        }
    }
}

impl RunObserver for CollectorObserver {
    fn phase_started(&self, phase: &PhaseInfo, _clock: &RunClock) {
        self.tracker.set_current(phase.index);
        self.send(|| Event::Phase(phase.index));
    }
    fn window(&self, stats: &WindowStats) {
        if self.threshold_us.is_some_and(|t| stats.p99_us > t) {
            self.send(|| Event::Trigger {
                second: stats.second,
                p99_us: stats.p99_us,
            });
        }
    }
    fn finished(&self) {
        self.tracker.set_finished();
        self.send(|| Event::Finish);
    }
}

/// A `collectors:` section compiled: checked, its definitions loaded (the
/// profile's overrides applied), its Prometheus queries filled in. The run
/// spec holds one; [`start_with`] runs it.
#[derive(Debug, Clone)]
pub struct CollectorsSpec {
    /// The section as written (transport, target, timings).
    pub config: CollectorsConfig,
    pub definitions: Vec<definition::Definition>,
    /// Empty without a `prometheus:` source.
    pub prometheus: Vec<prometheus::FilledQuery>,
}

/// Compile a `collectors:` section without starting anything or touching the
/// network: definitions load, overrides name real probes, placeholders are
/// known, the transport has what it needs (key file, passphrase variable),
/// and probes that need the target process have a way to find it. Every
/// error here satisfies [`CollectorError::is_bad_input`] (exit code 2).
pub fn compile(
    cfg: &CollectorsConfig,
    base_dir: Option<&Path>,
) -> Result<CollectorsSpec, CollectorError> {
    let definitions = cfg
        .collect
        .iter()
        .map(|e| definition::load(e, base_dir))
        .collect::<Result<Vec<_>, _>>()?;
    if cfg.generator.every < Duration::from_millis(100) {
        return Err(CollectorError::Config("generator.every below 100ms".into()));
    }
    if !cfg.remote_dir.starts_with('/') {
        return Err(CollectorError::Config(format!(
            "remote_dir must be an absolute path on the target, not `{}`",
            cfg.remote_dir
        )));
    }
    let prometheus = match &cfg.prometheus {
        Some(p) => prometheus::compile(p, base_dir)?,
        None => Vec::new(),
    };
    if let Some(pat) = &cfg.target.jcmd_match {
        regex::Regex::new(pat)
            .map_err(|e| CollectorError::Config(format!("target.jcmd_match: {e}")))?;
    }
    let t = &cfg.target;
    let findable = t.pid.is_some() || t.pgrep.is_some() || t.jcmd_match.is_some();
    for d in &definitions {
        for p in d.probes.iter().filter(|p| p.enabled()) {
            if p.uses_database() && cfg.database.is_none() {
                return Err(CollectorError::Config(format!(
                    "collector {} probe {} talks to a database: set `collectors.database` (host, port, user, dbname, password_env)",
                    d.name, p.name
                )));
            }
            if p.uses("pid") && p.pid == definition::PidUse::Required && !findable {
                return Err(CollectorError::Config(format!(
                    "collector {} probe {} needs the target process: set target.pid, target.pgrep or target.jcmd_match",
                    d.name, p.name
                )));
            }
        }
    }
    match cfg.transport.kind {
        config::TransportKind::Local => {}
        config::TransportKind::Ssh => {
            transport::SshTransport::new(cfg.transport.clone())?;
        }
        config::TransportKind::Openssh => {
            if cfg.transport.host.is_none() {
                return Err(CollectorError::Config(
                    "transport openssh needs `host`".into(),
                ));
            }
        }
    }
    Ok(CollectorsSpec {
        config: cfg.clone(),
        definitions,
        prometheus,
    })
}

/// `collectors.database` with its password read from the variable it
/// names, checked against the database before the load (see
/// `lanes::preflight`) when some enabled probe talks to it.
fn database_check(
    spec: &CollectorsSpec,
    definitions: &[definition::Definition],
) -> Result<Option<(config::DatabaseConfig, String)>, CollectorError> {
    let Some(db) = &spec.config.database else {
        return Ok(None);
    };
    let password = match &db.password_env {
        Some(var) => std::env::var(var).map_err(|_| {
            CollectorError::Config(format!(
                "collectors.database.password_env: the environment variable `{var}` is not set"
            ))
        })?,
        None => String::new(),
    };
    if definitions
        .iter()
        .flat_map(|d| &d.probes)
        .any(|p| p.enabled() && p.uses_database())
    {
        let mut t = transport::from_config(&spec.config.transport)?;
        lanes::preflight(t.as_mut(), definitions, Some(db), &password)?;
    }
    Ok(Some((db.clone(), password)))
}

/// A JFR recording of an hour or more would grow with the run (≈ 200 MB per
/// hour with `profile` settings under load) and come back only at its end:
/// such a jfr probe records in windows of [`definition::AUTO_WINDOW`]
/// unless the profile set its `window` (`0s` keeps one recording).
fn auto_windows(defs: &mut [definition::Definition], phases: &[PhaseInfo]) {
    let run = phases
        .iter()
        .map(|p| p.start + p.duration)
        .max()
        .unwrap_or_default();
    for p in defs.iter_mut().flat_map(|d| d.probes.iter_mut()) {
        if p.kind != ProbeKind::Jfr || p.tune.window.is_some() || p.windows.is_none() {
            continue;
        }
        let span = match p.tune.phase.as_deref().unwrap_or("run") {
            "run" => run,
            name => phases
                .iter()
                .find(|x| x.name == name)
                .map(|x| x.duration)
                .unwrap_or_default(),
        };
        if span >= definition::AUTO_WINDOW_FROM {
            p.tune.window = Some(definition::AUTO_WINDOW);
        }
    }
}

/// Start the collectors of a section no run spec compiled (examples, tests):
/// [`compile`] it against `ctx.base_dir`, then [`start_with`] without a JFR
/// window reader.
pub fn start(
    cfg: &CollectorsConfig,
    ctx: CollectorContext,
) -> Result<CollectorSet, CollectorError> {
    let spec = compile(cfg, ctx.base_dir.as_deref())?;
    start_with(&spec, ctx, lanes::no_window_reader)
}

/// Start the collector threads of a compiled section, with the reader that
/// turns each JFR window (`window:`) into its figures as it arrives (a run
/// passes the diagnosis's JFR reader). Transports connect on those threads,
/// so this never blocks on the network; an unreachable target shows up as a
/// gap, not as an error here.
pub fn start_with(
    spec: &CollectorsSpec,
    ctx: CollectorContext,
    window_reader: lanes::WindowReader,
) -> Result<CollectorSet, CollectorError> {
    let cfg = &spec.config;
    let mut definitions = spec.definitions.clone();
    auto_windows(&mut definitions, &ctx.phases);
    let diag = ctx.run_dir.join(crate::vocab::files::DIAGNOSTICS);
    std::fs::create_dir_all(&diag).map_err(|e| CollectorError::io(&diag, e))?;
    let tracker = PhaseTracker::new(ctx.clock, ctx.phases.clone());
    let database = database_check(spec, &definitions)?;

    // Split probes into the two lanes (see `lanes`); an empty lane is not started.
    let mut lanes_tx = Vec::new();
    let mut lanes = Vec::new();
    let mut transport = "none".to_string();
    for lane in ["samples", "artifacts"] {
        let defs: Vec<definition::Definition> = definitions
            .iter()
            .map(|d| {
                let mut d = d.clone();
                d.probes.retain(|p| {
                    p.enabled()
                        && matches!(p.kind, ProbeKind::Sample | ProbeKind::Tail)
                            == (lane == "samples")
                });
                d
            })
            .filter(|d| !d.probes.is_empty())
            .collect();
        if defs.is_empty() {
            continue;
        }
        let t = transport::from_config(&cfg.transport)?;
        transport = t.describe();
        let lane_thread = Lane::new(LaneSetup {
            lane,
            transport: t,
            tracker: tracker.clone(),
            diag_dir: diag.clone(),
            target: cfg.target.clone(),
            remote_dir: cfg.remote_dir.clone(),
            definitions: defs,
            trigger_cooldown: cfg.trigger_cooldown,
            max_backoff: cfg.transport.max_backoff,
            window_reader,
            database: database.clone(),
        })?;
        let (tx, rx) = channel();
        let h = thread::Builder::new()
            .name(format!("brunt-{lane}"))
            .spawn(move || lane_thread.run(rx))
            .map_err(|e| CollectorError::Other(format!("spawning collector thread: {e}")))?;
        lanes_tx.push(tx);
        lanes.push(h);
    }

    let prometheus = match &cfg.prometheus {
        Some(p) => {
            let src = prometheus::Source {
                mode: p.mode,
                url: p.url.clone(),
                token: p
                    .bearer_token_env
                    .as_ref()
                    .and_then(|v| std::env::var(v).ok()),
                every: p.every,
                queries: spec.prometheus.clone(),
                tracker: tracker.clone(),
                diag_dir: diag.clone(),
            };
            let (tx, rx) = channel();
            let h = thread::Builder::new()
                .name("brunt-prometheus".into())
                .spawn(move || src.run(rx))
                .map_err(|e| {
                    CollectorError::Other(format!("spawning the prometheus source: {e}"))
                })?;
            Some((tx, h))
        }
        None => None,
    };
    let generator = if cfg.generator.enabled {
        Some(generator::Generator::start(
            &cfg.generator,
            &diag,
            tracker.clone(),
        )?)
    } else {
        None
    };
    let threshold_us = cfg
        .trigger_p99
        .or(ctx.p99_threshold)
        .map(|d| d.as_micros().min(u128::from(u64::MAX)) as u64);
    Ok(CollectorSet {
        observer: Arc::new(CollectorObserver {
            tx: lanes_tx,
            tracker,
            threshold_us,
            saturated: generator.as_ref().map(|g| g.saturated_now()),
        }),
        lanes,
        prometheus,
        generator,
        transport,
    })
}

impl CollectorSet {
    /// The observer to register with the run.
    pub fn observer(&self) -> Arc<dyn RunObserver> {
        self.observer.clone()
    }

    /// Was brunt saturated in the last second (CPU or scheduler lag)?
    pub fn generator_saturated(&self) -> bool {
        self.observer
            .saturated
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
    }

    /// Stop collecting (stopping and downloading a running JFR recording
    /// first) and return the summary. Blocks for at most the remaining
    /// downloads, each bounded by the transport's `command_timeout`.
    pub fn finish(mut self) -> CollectorsSummary {
        self.observer.finished();
        let mut rep = CollectorsSummary {
            version: 1,
            transport: self.transport.clone(),
            ..Default::default()
        };
        for h in self.lanes.drain(..) {
            if let Ok(lane) = h.join() {
                rep.absorb(lane);
            }
        }
        if let Some((stop, h)) = self.prometheus.take() {
            let _ = stop.send(());
            if let Ok(part) = h.join() {
                rep.absorb(part);
            }
        }
        if let Some((g, write_error)) = self.generator.take().map(|g| g.finish()) {
            rep.generator = Some(g);
            if let Some(e) = write_error {
                rep.errors_total += 1;
                rep.errors.push(e);
            }
        }
        rep.sort();
        rep
    }
}

impl RunObserver for CollectorSet {
    fn phase_started(&self, phase: &PhaseInfo, clock: &RunClock) {
        self.observer.phase_started(phase, clock)
    }
    fn window(&self, stats: &WindowStats) {
        self.observer.window(stats)
    }
    fn finished(&self) {
        self.observer.finished()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(index: usize, name: &str, start_s: u64, dur_s: u64) -> PhaseInfo {
        PhaseInfo {
            index,
            name: name.into(),
            label: String::new(),
            start: Duration::from_secs(start_s),
            duration: Duration::from_secs(dur_s),
            level: None,
        }
    }

    fn jfr(window: Option<Duration>, phase: &str) -> Vec<definition::Definition> {
        let mut d = definition::parse(definition::BUILTIN[1].1, "jvm").expect("jvm.yaml");
        for p in &mut d.probes {
            p.tune.window = window;
            p.tune.phase = Some(phase.into());
        }
        vec![d]
    }

    fn window_of(d: &[definition::Definition]) -> Option<Duration> {
        d[0].probes
            .iter()
            .find(|p| p.name == "jfr")
            .and_then(|p| p.tune.window)
    }

    #[test]
    fn long_recordings_get_windows_unless_set() {
        let phases = [phase(0, "warmup", 0, 600), phase(1, "soak", 600, 8 * 3600)];
        let mut d = jfr(None, "run");
        auto_windows(&mut d, &phases);
        assert_eq!(window_of(&d), Some(definition::AUTO_WINDOW));
        // Set by the profile (here: off) is kept.
        let mut d = jfr(Some(Duration::ZERO), "run");
        auto_windows(&mut d, &phases);
        assert_eq!(window_of(&d), Some(Duration::ZERO));
        assert!(d[0].probes.iter().all(|p| p.window_s().is_none()));
        // A short phase's recording stays one recording.
        let mut d = jfr(None, "warmup");
        auto_windows(&mut d, &phases);
        assert_eq!(window_of(&d), None);
        let short = [phase(0, "soak", 0, 1800)];
        let mut d = jfr(None, "run");
        auto_windows(&mut d, &short);
        assert_eq!(window_of(&d), None);
    }
}
