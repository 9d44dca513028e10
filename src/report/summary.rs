//! `summary.json`: the machine-readable result of a run, and the functions
//! that build it from per-phase histograms, both live and from a run directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::budgets::{Budget, Verdict};
use crate::metrics::{hlog, pct_us, series, Class, Stats, CLASSES};
use crate::profile::shape::ShapeKind;
use crate::profile::Profile;
use crate::run::PhaseInfo;

/// Bumped when a field changes meaning or disappears.
pub const SUMMARY_SCHEMA: &str = "brunt.summary/1";

#[derive(Debug, Error)]
pub enum ReportError {
    #[error("{path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error(transparent)]
    Hlog(#[from] hlog::HlogError),
    #[error(transparent)]
    Profile(#[from] crate::profile::ProfileError),
    #[error("report.html: {0}")]
    Html(String),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What `run.json` records at the start of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunMeta {
    pub name: String,
    pub target: String,
    pub model: crate::profile::Model,
    pub shape: ShapeKind,
    pub phases: Vec<PhaseInfo>,
    /// Unix seconds.
    pub started_at: f64,
    pub time_scale: f64,
    pub shard_index: u32,
    pub shard_count: u32,
    pub workers: usize,
    pub brunt_version: String,
    /// Names of the requests of the mix, in profile order.
    #[serde(default)]
    pub requests: Vec<String>,
    /// The `--start-at` the shards agreed on (Unix seconds); `started_at` is
    /// when this process actually started, so the two give its lateness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<f64>,
    /// Set on a run directory written by `brunt merge`: which shards it adds up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<crate::shard::MergedFrom>,
}

/// One request of the mix over the whole run (only with several requests).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RequestSummary {
    pub name: String,
    pub requests: u64,
    pub ok: u64,
    pub shed: u64,
    pub errors: u64,
    /// All answers of this request, from the intended start.
    pub latency: Percentiles,
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Percentiles {
    pub count: u64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
}

impl Percentiles {
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> Self {
        let ms = |us: u64| us as f64 / 1000.0;
        Percentiles {
            count: h.len(),
            p50: ms(pct_us(h, 0.50)),
            p90: ms(pct_us(h, 0.90)),
            p95: ms(pct_us(h, 0.95)),
            p99: ms(pct_us(h, 0.99)),
            p999: ms(pct_us(h, 0.999)),
            max: if h.is_empty() {
                0.0
            } else {
                h.max() as f64 / 1e6
            },
            mean: if h.is_empty() { 0.0 } else { h.mean() / 1e6 },
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ClassSummary {
    pub count: u64,
    /// From the intended start (what a user waits in the open model).
    pub latency: Percentiles,
    /// From the actual send (what the server took once asked).
    pub service: Percentiles,
}

/// Stats of one scope: a phase or the whole run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScopeSummary {
    pub name: String,
    pub label: String,
    pub start_s: f64,
    pub duration_s: f64,
    pub offered: u64,
    /// Completed requests, any outcome.
    pub requests: u64,
    pub dropped: u64,
    pub ok: u64,
    pub errors: u64,
    pub shed: u64,
    /// Shed answers that carried `Retry-After`.
    pub shed_retry_after: u64,
    pub error_rate: f64,
    /// Offered per second.
    pub offered_rate: f64,
    /// Completed per second.
    pub rps: f64,
    /// Ok per second.
    pub throughput: f64,
    pub latency: Percentiles,
    pub service: Percentiles,
    pub by_class: BTreeMap<String, ClassSummary>,
}

impl ScopeSummary {
    pub fn of(name: &str, label: &str, start_s: f64, s: &Stats) -> Self {
        let secs = s.duration.as_secs_f64().max(1e-9);
        let mut by_class = BTreeMap::new();
        for c in CLASSES {
            if let Some(h) = s.classes.get(&c) {
                by_class.insert(
                    c.name().to_string(),
                    ClassSummary {
                        count: h.latency.len(),
                        latency: Percentiles::of(&h.latency),
                        service: Percentiles::of(&h.service),
                    },
                );
            }
        }
        ScopeSummary {
            name: name.into(),
            label: label.into(),
            start_s,
            duration_s: s.duration.as_secs_f64(),
            offered: s.offered,
            requests: s.completed(),
            dropped: s.dropped,
            ok: s.count(Class::Ok),
            errors: s.errors(),
            shed: s.count(Class::Shed),
            shed_retry_after: s.shed_retry_after,
            error_rate: s.error_rate(),
            offered_rate: s.offered as f64 / secs,
            rps: s.completed() as f64 / secs,
            throughput: s.count(Class::Ok) as f64 / secs,
            latency: Percentiles::of(&s.latency(None)),
            service: Percentiles::of(&s.service(None)),
            by_class,
        }
    }
}

/// The stress verdict: where the knee is.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StressResult {
    /// Highest step that met every budget (`None`: even the first step broke one).
    pub knee: Option<String>,
    pub knee_level: Option<f64>,
    /// First step that broke a budget (`None`: no step did).
    pub first_breach: Option<String>,
    pub first_breach_level: Option<f64>,
    /// The budgets the first breaching step failed.
    pub breached: Vec<Verdict>,
    pub expect_capacity: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub schema: String,
    pub meta: RunMeta,
    /// The load ended before the plan did (Ctrl-C, stop on breach, error).
    pub interrupted: bool,
    pub stopped_reason: Option<String>,
    pub totals: ScopeSummary,
    pub phases: Vec<ScopeSummary>,
    /// Per request of the mix (empty for a single-request mix).
    #[serde(default)]
    pub requests: Vec<RequestSummary>,
    pub budgets: Vec<Verdict>,
    pub stress: Option<StressResult>,
    pub passed: bool,
    /// Plain-language warnings (closed-model latency, drops, saturated generator…).
    pub notes: Vec<String>,
    /// Whether brunt itself kept up with its schedule.
    #[serde(default)]
    pub generator: GeneratorHealth,
    #[serde(default)]
    pub collectors: Option<serde_json::Value>,
    #[serde(default)]
    pub findings: Option<serde_json::Value>,
    /// The shape's verdict (knee and cause, overload checks, spike recovery, leaks).
    #[serde(default)]
    pub verdicts: Option<super::verdicts::Verdicts>,
}

/// Per-phase stats in plan order, plus the whole run.
pub struct Measured {
    pub phases: Vec<Stats>,
    pub run: Stats,
}

impl Measured {
    /// Per-phase stats with durations: a phase cut short by a stop counts
    /// only the time it ran.
    pub fn new(meta: &RunMeta, mut phases: Vec<Stats>, elapsed: Duration) -> Self {
        phases.resize_with(meta.phases.len(), Stats::default);
        let mut run = Stats::default();
        for (s, p) in phases.iter_mut().zip(&meta.phases) {
            let ran = elapsed.saturating_sub(p.start).min(p.duration);
            s.duration = ran;
            run.merge(s);
        }
        run.duration = elapsed.min(
            meta.phases
                .last()
                .map(|p| p.start + p.duration)
                .unwrap_or(elapsed),
        );
        Measured { phases, run }
    }
}

/// Evaluate budgets and assemble the summary.
pub fn build(
    meta: RunMeta,
    profile: &Profile,
    m: &Measured,
    interrupted: bool,
    stopped_reason: Option<String>,
    inputs: &super::verdicts::Inputs,
) -> Summary {
    let budgets: Vec<Budget> = profile
        .budgets
        .iter()
        .filter_map(|b| b.parse().ok())
        .collect();
    let phase_idx = |name: &str| meta.phases.iter().position(|p| p.name == name);
    let is_stress = matches!(meta.shape, ShapeKind::Stress { .. });
    let mut verdicts = Vec::new();
    for b in &budgets {
        match &b.phase {
            Some(p) => {
                if let Some(i) = phase_idx(p) {
                    if let Some(s) = m.phases.get(i) {
                        if s.completed() + s.dropped > 0 || !interrupted {
                            verdicts.push(b.evaluate(s));
                        }
                    }
                }
            }
            // In a stress run the unscoped budgets find the knee step by step.
            None if is_stress => {}
            None => verdicts.push(b.evaluate(&m.run)),
        }
    }
    let stress = if let ShapeKind::Stress {
        expect_capacity, ..
    } = &meta.shape
    {
        Some(stress_result(&meta, &budgets, m, *expect_capacity))
    } else {
        None
    };
    let mut passed = verdicts.iter().all(|v| v.pass);
    if let Some(s) = &stress {
        if s.knee.is_none() && !m.phases.is_empty() && m.phases[0].completed() > 0 {
            passed = false;
        }
        if let (Some(want), Some(got)) = (s.expect_capacity, s.knee_level) {
            if got < want {
                passed = false;
            }
        } else if s.expect_capacity.is_some() && s.knee_level.is_none() {
            passed = false;
        }
    }
    let mut notes = Vec::new();
    if meta.model == crate::profile::Model::Closed {
        notes.push("closed model: each virtual user waits for its answer, so a slow server lowers the offered load and latency hides queueing; use the open model to measure what users would wait".into());
    }
    if m.run.dropped > 0 {
        notes.push(format!(
            "{} requests were due but dropped because max_in_flight was reached: the target could not keep up (or raise load.max_in_flight)",
            m.run.dropped
        ));
    }
    if let Some(merged) = &meta.merged {
        notes.extend(crate::shard::merge::notes(merged));
    }
    notes.extend(inputs.warnings.iter().cloned());
    let shape_verdicts = Some(super::verdicts::compute(
        &meta,
        profile,
        m,
        stress.as_ref(),
        inputs,
    ));
    let phases = meta
        .phases
        .iter()
        .zip(&m.phases)
        .map(|(p, s)| ScopeSummary::of(&p.name, &p.label, p.start.as_secs_f64(), s))
        .collect();
    let requests = if meta.requests.len() > 1 {
        meta.requests
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let (h, counts) = m.run.request(i);
                let get = |c: Class| counts.get(&c).copied().unwrap_or(0);
                RequestSummary {
                    name: name.clone(),
                    requests: h.len(),
                    ok: get(Class::Ok),
                    shed: get(Class::Shed),
                    errors: counts
                        .iter()
                        .filter(|(c, _)| c.is_error())
                        .map(|(_, n)| n)
                        .sum(),
                    latency: Percentiles::of(&h),
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    Summary {
        schema: SUMMARY_SCHEMA.into(),
        requests,
        totals: ScopeSummary::of("run", "", 0.0, &m.run),
        phases,
        budgets: verdicts,
        stress,
        passed,
        interrupted,
        stopped_reason,
        notes,
        meta,
        collectors: None,
        findings: None,
        verdicts: shape_verdicts,
        generator: GeneratorHealth::default(),
    }
}

/// Did brunt keep up? Two signals per second: the busiest load worker's
/// CPU (a worker near 100% of a core cannot start requests on time, and its
/// queue grows as if the server were slow) and the open-model scheduler's
/// lateness (a few ms is timer granularity; far more means the machine is
/// overloaded). Either makes part of the measured latency brunt's own.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct GeneratorHealth {
    pub max_sched_lag_ms: f64,
    pub max_worker_cpu_pct: f64,
    /// Second of the run where it looked worst.
    pub worst_second: u64,
    /// Seconds in which a worker was busy or the scheduler late beyond the limits.
    pub late_seconds: u64,
}

impl GeneratorHealth {
    pub const LATE_MS: f64 = 20.0;
    pub const BUSY_PCT: f64 = 90.0;

    pub fn observe(&mut self, second: u64, lag_us: u64, busy_pct: f64) {
        let ms = lag_us as f64 / 1000.0;
        if ms > self.max_sched_lag_ms || busy_pct > self.max_worker_cpu_pct {
            self.worst_second = second;
        }
        self.max_sched_lag_ms = self.max_sched_lag_ms.max(ms);
        self.max_worker_cpu_pct = self.max_worker_cpu_pct.max(busy_pct);
        if ms > Self::LATE_MS || busy_pct >= Self::BUSY_PCT {
            self.late_seconds += 1;
        }
    }
    pub fn saturated(&self) -> bool {
        self.late_seconds > 0
    }
}

impl Summary {
    /// Attach the generator's health and say plainly when it fell behind.
    pub fn set_generator(&mut self, g: GeneratorHealth) {
        if g.saturated() {
            self.notes.push(format!(
                "the generator was saturated in {} second(s) (worst at {} s: a load worker at {:.0}% of a core, scheduler up to {:.0} ms late): latencies there include brunt's own delay — use more workers, a bigger machine or shards",
                g.late_seconds, g.worst_second, g.max_worker_cpu_pct, g.max_sched_lag_ms
            ));
        }
        self.generator = g;
    }
}

/// Per-step evaluation of the unscoped budgets.
pub fn step_verdicts(budgets: &[Budget], s: &Stats) -> Vec<Verdict> {
    budgets
        .iter()
        .filter(|b| b.phase.is_none())
        .map(|b| {
            let mut v = b.evaluate(s);
            v.scope = String::new();
            v
        })
        .collect()
}

fn stress_result(
    meta: &RunMeta,
    budgets: &[Budget],
    m: &Measured,
    expect: Option<f64>,
) -> StressResult {
    let mut knee = None;
    let mut first = None;
    let mut breached = Vec::new();
    for (p, s) in meta.phases.iter().zip(&m.phases) {
        if s.completed() + s.dropped == 0 {
            break; // not reached (stopped before)
        }
        let mut vs = step_verdicts(budgets, s);
        for v in &mut vs {
            v.scope = p.name.clone();
        }
        if vs.iter().all(|v| v.pass) {
            knee = Some(p);
        } else {
            first = Some(p);
            breached = vs.into_iter().filter(|v| !v.pass).collect();
            break;
        }
    }
    let level = |p: &PhaseInfo| {
        p.label
            .trim_end_matches("/s")
            .trim_end_matches(" VUs")
            .parse::<f64>()
            .ok()
    };
    StressResult {
        knee_level: knee.and_then(level),
        knee: knee.map(|p| p.name.clone()),
        first_breach_level: first.and_then(level),
        first_breach: first.map(|p| p.name.clone()),
        breached,
        expect_capacity: expect,
    }
}

/// Rebuild per-phase stats from a run directory's interval log and time series.
pub fn measured_from_dir(dir: &Path, meta: &RunMeta) -> Result<(Measured, Duration), ReportError> {
    let mut phases: Vec<Stats> = (0..meta.phases.len()).map(|_| Stats::default()).collect();
    let idx = |name: &str| meta.phases.iter().position(|p| p.name == name);
    let mut last = 0u64;
    // Streamed: a long soak's log does not fit in memory once decoded.
    hlog::for_each(&dir.join("latency.hlog"), |iv| {
        last = last.max(iv.start.as_secs() + 1);
        let Some(tag) = iv.tag.as_deref() else {
            return;
        };
        let Some((phase, class, svc)) = hlog::parse_tag(tag) else {
            return;
        };
        let Some(i) = idx(phase) else { return };
        let mut one = Stats::default();
        one.add_hist(class, &iv.hist, svc);
        phases[i].merge(&one);
    })?;
    let rows = series::read(&dir.join("timeseries.csv")).map_err(|e| ReportError::Read {
        path: dir.join("timeseries.csv"),
        message: e.to_string(),
    })?;
    for r in &rows {
        last = last.max(r.second + 1);
        if let Some(i) = idx(&r.phase) {
            phases[i].offered += r.offered;
            phases[i].dropped += r.dropped;
            phases[i].shed_retry_after += r.shed_retry_after;
        }
    }
    let total = meta
        .phases
        .last()
        .map(|p| p.start + p.duration)
        .unwrap_or_default();
    let elapsed = Duration::from_secs(last).min(total);
    Ok((Measured::new(meta, phases, elapsed), elapsed))
}

/// `brunt report DIR`: rebuild `summary.json` from what the run left.
pub fn rebuild(dir: &Path) -> Result<Summary, ReportError> {
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name)).map_err(|e| ReportError::Read {
            path: dir.join(name),
            message: e.to_string(),
        })
    };
    let meta: RunMeta =
        serde_json::from_str(&read("run.json")?).map_err(|e| ReportError::Read {
            path: dir.join("run.json"),
            message: e.to_string(),
        })?;
    let profile = Profile::from_yaml(&read("profile.yaml")?, &dir.join("profile.yaml"))?;
    let (m, elapsed) = measured_from_dir(dir, &meta)?;
    let total = meta
        .phases
        .last()
        .map(|p| p.start + p.duration)
        .unwrap_or_default();
    let interrupted = elapsed + Duration::from_secs(1) < total;
    // Keep what only the live run knew (why it stopped, collectors, findings).
    let old: Option<Summary> = read("summary.json")
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let reason = old.as_ref().and_then(|o| o.stopped_reason.clone());
    let mut s = build(
        meta,
        &profile,
        &m,
        interrupted || old.as_ref().is_some_and(|o| o.interrupted),
        reason,
        &super::verdicts::Inputs::load(dir),
    );
    let mut g = GeneratorHealth::default();
    let mut seconds: BTreeMap<u64, (u64, f64)> = BTreeMap::new();
    if let Ok(rows) = series::read(&dir.join("timeseries.csv")) {
        for r in rows {
            let e = seconds.entry(r.second).or_default();
            e.0 = e.0.max(r.sched_lag_us);
            e.1 = e.1.max(r.busy_pct);
        }
    }
    for (sec, (lag, busy)) in seconds {
        g.observe(sec, lag, busy);
    }
    s.set_generator(g);
    if let Some(o) = old {
        s.collectors = o.collectors;
        s.findings = o.findings;
    }
    write(dir, &s)?;
    Ok(s)
}

pub fn write(dir: &Path, s: &Summary) -> Result<(), ReportError> {
    let path = dir.join("summary.json");
    let text = serde_json::to_string_pretty(s).map_err(|e| ReportError::Write {
        path: path.clone(),
        source: std::io::Error::other(e),
    })?;
    let tmp = dir.join("summary.json.tmp");
    std::fs::write(&tmp, text + "\n")
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|source| ReportError::Write { path, source })
}
