//! The answers a run exists for, one per load shape, each with the measured
//! values behind it (stored in full in `summary.json`, shown in brief by the
//! terminal summary and at the top of `report.html`):
//!
//! - **stress**: per step offered/achieved, percentiles, errors and the
//!   server side seen in that step; the capacity, the first breaking step and
//!   the cause at that step: high target CPU = *saturation*; low target CPU
//!   with a rising tail = *contention*; a busy generator = *untrustworthy*;
//!   no server-side data = *unknown*, said plainly.
//! - **overload**: PASS/FAIL checks of load shedding (listed on `fn overload` below).
//! - **spike**: how long until the 1-s p99 is back within budget after the
//!   spike starts and after it ends; errors during the spike.
//! - **soak**: per-hour trend (Theil–Sen slope, least-squares R²) of every
//!   server-side series after the warm-up, p99 drift first vs last fifth of
//!   the run (merged histograms from `latency.hlog`), and a leak verdict
//!   against the thresholds of the profile's `verdicts.leaks` section.
//!
//! "Within budget" for a 1-s window means the profile's `p99` budget (one
//! scoped to the phase at hand first, then an unscoped one, class none or
//! `ok`); without one, twice the baseline phase's p99 (at least +5 ms), and
//! the verdict says which bound it used. A recovery counts once the bound
//! holds for 3 seconds in a row (or until the data ends), so one lucky
//! second does not count as recovered.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::evidence::{FindingRef, ServerSide};
use super::summary::{RunMeta, StressResult};
use crate::budgets::{Budget, Metric, Op};
use crate::metrics::series::Row;
use crate::metrics::{hlog, new_hist, pct_us, Class, Stats};
use crate::profile::shape::ShapeKind;
use crate::profile::units::{PerHour, Percent};
use crate::profile::Profile;

use super::summary::{step_verdicts, Measured};

// ---------------------------------------------------------------------------
// Profile section

/// The profile's optional `verdicts:` section.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerdictsConfig {
    #[serde(default)]
    pub leaks: LeakThresholds,
}

/// Soak leak thresholds: a series whose slope exceeds its threshold with a
/// fit of at least `min_r2` is flagged as leaking.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LeakThresholds {
    /// `target.rss_bytes`.
    pub rss: PerHour,
    /// `jvm.heap_after_gc_bytes`.
    pub heap_after_gc: PerHour,
    /// `target.threads`.
    pub threads: PerHour,
    /// `target.fds`.
    pub fds: PerHour,
    /// `tcp.established`.
    pub established: PerHour,
    /// `tcp.close_wait`.
    pub close_wait: PerHour,
    /// Largest tolerated growth of p99, last fifth vs first fifth of the run.
    pub p99_drift: Percent,
    /// Least-squares R² a trend needs before its slope counts (noise guard).
    pub min_r2: f64,
}

impl Default for LeakThresholds {
    fn default() -> Self {
        LeakThresholds {
            rss: PerHour(50e6),
            heap_after_gc: PerHour(10e6),
            threads: PerHour(5.0),
            fds: PerHour(10.0),
            established: PerHour(20.0),
            close_wait: PerHour(5.0),
            p99_drift: Percent(0.5),
            min_r2: 0.5,
        }
    }
}

impl LeakThresholds {
    /// The threshold (name, per hour) that applies to a series, if any.
    pub fn for_series(&self, series: &str) -> Option<(&'static str, f64)> {
        Some(match series {
            "target.rss_bytes" => ("rss", self.rss.0),
            "jvm.heap_after_gc_bytes" => ("heap_after_gc", self.heap_after_gc.0),
            "target.threads" => ("threads", self.threads.0),
            "target.fds" => ("fds", self.fds.0),
            "tcp.established" => ("established", self.established.0),
            "tcp.close_wait" => ("close_wait", self.close_wait.0),
            _ => return None,
        })
    }
}

// ---------------------------------------------------------------------------
// Results

/// All verdicts of a run; only the one matching the shape is set.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Verdicts {
    /// Whether server-side evidence (`diagnostics/evidence.json`) was available.
    pub server_side: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stress: Option<StressVerdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overload: Option<OverloadVerdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spike: Option<SpikeVerdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak: Option<SoakVerdict>,
}

impl Verdicts {
    /// One line per verdict, for the terminal and the top of the report.
    pub fn headlines(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(s) = &self.stress {
            v.push(format!("knee: {}", s.text));
        }
        if let Some(o) = &self.overload {
            v.push(format!(
                "overload: {} — {}",
                if o.pass { "PASS" } else { "FAIL" },
                o.text
            ));
        }
        if let Some(s) = &self.spike {
            v.push(format!("spike: {}", s.text));
        }
        if let Some(s) = &self.soak {
            v.push(format!("soak: {}", s.text));
        }
        v
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    #[serde(rename = "PASS")]
    Pass,
    #[serde(rename = "FAIL")]
    Fail,
    #[serde(rename = "N/A")]
    NotApplicable,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::NotApplicable => "N/A",
        })
    }
}

/// One PASS/FAIL check with what was measured and what was expected.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Check {
    pub name: String,
    pub status: Status,
    pub measured: String,
    pub expected: String,
}

/// What limited the service at the first breaking step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// No step broke a budget.
    NoBreach,
    /// Target CPU high: the service ran out of CPU.
    Saturation,
    /// Target CPU low while the tail rose: waiting (locks, pools, I/O), not working.
    Contention,
    /// The generator itself was saturated: the latencies are not trustworthy.
    GeneratorSaturated,
    /// Server-side data present but not conclusive.
    Inconclusive,
    /// No server-side data.
    Unknown,
}

/// One stress step as the knee table shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StepRow {
    pub name: String,
    pub label: String,
    pub level: Option<f64>,
    pub offered_rate: f64,
    /// Ok answers per second.
    pub achieved_rate: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Non-ok, non-shed answers plus dropped requests.
    pub errors: u64,
    pub error_rate: f64,
    pub within_budget: bool,
    pub target_cpu_pct: Option<f64>,
    /// The target process's own share of the host's CPU (0–100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_process_cpu_pct: Option<f64>,
    pub generator_cpu_pct: Option<f64>,
    pub generator_lag_ms: Option<f64>,
    /// Mean `jvm.threads.<state>` over the step, by state.
    pub threads: BTreeMap<String, f64>,
    pub top_finding: Option<FindingRef>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StressVerdict {
    pub steps: Vec<StepRow>,
    /// The level of the last step within budget.
    pub capacity: Option<f64>,
    pub capacity_step: Option<String>,
    pub first_breach: Option<String>,
    pub cause: Cause,
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OverloadVerdict {
    pub pass: bool,
    pub checks: Vec<Check>,
    /// Offered per second during the `overload` phase.
    pub offered_rate: f64,
    /// max(ok/s in `baseline`, ok/s in `overload`): what the service showed it can serve.
    pub capacity_estimate: f64,
    /// 1 − capacity/offered, at least 0.
    pub expected_shed_fraction: f64,
    /// Shed answers / offered during `overload`.
    pub shed_fraction: f64,
    /// Seconds from the end of `overload` until p99 is within bound and no answer is shed.
    pub recovery_s: Option<f64>,
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SpikeVerdict {
    /// The 1-s p99 bound (ms) and where it came from.
    pub bound_ms: f64,
    pub bound_source: String,
    /// Some 1-s p99 during the spike went over the bound.
    pub left_budget: bool,
    /// Seconds from the spike's start until p99 is back (and stays) within bound;
    /// `None`: not before the spike ended. 0 when it never left.
    pub back_after_start_s: Option<f64>,
    /// Seconds from the spike's end until p99 is back within bound; `None`: never in the data.
    pub back_after_end_s: Option<f64>,
    pub spike_errors: u64,
    pub spike_error_rate: f64,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeakStatus {
    Leak,
    /// No series leaks but p99 drifted beyond the limit.
    Degrading,
    NoLeak,
    /// No server-side data and no latency drift: cannot tell.
    Unknown,
}

/// The trend of one series after the warm-up.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Trend {
    pub series: String,
    pub points: usize,
    /// Theil–Sen slope (median of pairwise slopes), per hour: robust to outliers and GC sawtooth.
    pub slope_per_hour: f64,
    /// Least-squares slope per hour and its R² (fit quality).
    pub ols_slope_per_hour: f64,
    pub r2: f64,
    pub threshold_per_hour: Option<f64>,
    pub flagged: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SoakVerdict {
    pub status: LeakStatus,
    /// Trends use samples from here on (soak start + warm-up), seconds.
    pub window_start_s: f64,
    pub window_end_s: f64,
    pub trends: Vec<Trend>,
    pub p99_first_ms: Option<f64>,
    pub p99_last_ms: Option<f64>,
    /// last/first − 1.
    pub p99_drift: Option<f64>,
    pub p99_drift_limit: f64,
    pub text: String,
}

// ---------------------------------------------------------------------------
// Inputs

/// What the verdicts read beyond the per-phase histograms.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// `timeseries.csv`.
    pub rows: Vec<Row>,
    /// `latency.hlog`, streamed when a verdict needs windows of it.
    pub hlog: Option<PathBuf>,
    pub server: Option<ServerSide>,
    /// What could not be read (shown as notes, never fatal).
    pub warnings: Vec<String>,
}

impl Inputs {
    /// Read a run directory's series, log path and evidence. Missing or
    /// broken pieces become warnings: verdicts then say what they lack.
    pub fn load(dir: &Path) -> Inputs {
        let mut inp = Inputs::default();
        match crate::metrics::series::read(&dir.join("timeseries.csv")) {
            Ok(r) => inp.rows = r,
            Err(e) => inp.warnings.push(format!("timeseries.csv: {e}")),
        }
        let h = dir.join("latency.hlog");
        if h.exists() {
            inp.hlog = Some(h);
        }
        match ServerSide::load(dir) {
            Ok(s) => inp.server = s.filter(|s| !s.is_empty()),
            Err(e) => inp.warnings.push(e.to_string()),
        }
        inp
    }
}

/// One second of the run, all phases merged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Second {
    pub t: u64,
    pub offered: u64,
    pub dropped: u64,
    pub ok: u64,
    pub shed: u64,
    /// Non-ok, non-shed answers (dropped not included).
    pub errors: u64,
    pub completed: u64,
    /// Highest p99 of the phases in this second (ms): a boundary second keeps the worse.
    pub p99_ms: f64,
}

/// Merge rows by second (a second at a phase boundary has one row per phase).
pub fn seconds(rows: &[Row]) -> Vec<Second> {
    let mut by: BTreeMap<u64, Second> = BTreeMap::new();
    for r in rows {
        let s = by.entry(r.second).or_insert_with(|| Second {
            t: r.second,
            ..Default::default()
        });
        s.offered += r.offered;
        s.dropped += r.dropped;
        s.ok += r.count(Class::Ok);
        s.shed += r.count(Class::Shed);
        s.completed += r.completed();
        s.errors += r.completed() - r.count(Class::Ok) - r.count(Class::Shed);
        s.p99_ms = s.p99_ms.max(r.p99_us as f64 / 1000.0);
    }
    by.into_values().collect()
}

// ---------------------------------------------------------------------------
// Computing

/// Compute the verdict matching the run's shape.
pub fn compute(
    meta: &RunMeta,
    profile: &Profile,
    m: &Measured,
    stress: Option<&StressResult>,
    inputs: &Inputs,
) -> Verdicts {
    let budgets: Vec<Budget> = profile
        .budgets
        .iter()
        .filter_map(|b| b.parse().ok())
        .collect();
    let secs = seconds(&inputs.rows);
    let server = inputs.server.as_ref();
    let mut v = Verdicts {
        server_side: server.is_some_and(|s| s.has_target_data()),
        ..Default::default()
    };
    match &meta.shape {
        ShapeKind::Stress { .. } => {
            v.stress = stress.map(|st| stress_verdict(meta, &budgets, m, st, server));
        }
        ShapeKind::Overload { fast_fail } => {
            v.overload = overload(meta, &budgets, m, &secs, fast_fail.as_secs_f64() * 1000.0);
        }
        ShapeKind::Spike => v.spike = spike(meta, &budgets, m, &secs),
        ShapeKind::Soak { warmup } => {
            let warm = warmup.map(|w| w.as_secs_f64()).unwrap_or(0.0);
            v.soak = soak(
                meta,
                m,
                warm,
                &profile.verdicts.leaks,
                server,
                inputs.hlog.as_deref(),
            );
        }
        _ => {}
    }
    v
}

fn phase_idx(meta: &RunMeta, name: &str) -> Option<usize> {
    meta.phases.iter().position(|p| p.name == name)
}

fn window(meta: &RunMeta, i: usize) -> (f64, f64) {
    let p = &meta.phases[i];
    let s = p.start.as_secs_f64();
    (s, s + p.duration.as_secs_f64())
}

fn ms_q(h: &hdrhistogram::Histogram<u64>, q: f64) -> f64 {
    pct_us(h, q) as f64 / 1000.0
}

/// The p99 bound for 1-s windows (see the module doc).
#[derive(Debug, Clone, PartialEq)]
pub struct Bound {
    pub ms: f64,
    pub source: String,
}

pub fn p99_bound(budgets: &[Budget], phases: &[&str]) -> Option<Bound> {
    let fits = |b: &&Budget| {
        matches!(b.metric, Metric::Quantile(q) if (q - 0.99).abs() < 1e-9)
            && matches!(b.op, Op::Lt | Op::Le)
            && matches!(b.class, None | Some(Class::Ok))
    };
    let scoped = budgets
        .iter()
        .filter(fits)
        .find(|b| b.phase.as_deref().is_some_and(|p| phases.contains(&p)));
    let any = budgets.iter().filter(fits).find(|b| b.phase.is_none());
    scoped.or(any).map(|b| Bound {
        ms: b.limit,
        source: format!("budget `{}`", b.text),
    })
}

fn fallback_bound(meta: &RunMeta, m: &Measured, base: &str) -> Option<Bound> {
    let i = phase_idx(meta, base)?;
    let h = m.phases.get(i)?.latency(None);
    if h.is_empty() {
        return None;
    }
    let p = ms_q(&h, 0.99);
    Some(Bound {
        ms: (2.0 * p).max(p + 5.0),
        source: format!("no p99 budget: 2× the {base} p99 ({p:.1}ms)"),
    })
}

/// Seconds a window must stay good to count as recovered.
const STABLE_S: usize = 3;

fn good(s: &Second, bound: f64, no_shed: bool) -> bool {
    let answered = s.completed > 0 || s.offered == 0;
    answered && s.p99_ms <= bound && (!no_shed || s.shed == 0)
}

/// First second in `[from, to)` from which the bound holds for
/// [`STABLE_S`] seconds in a row (or until the data ends).
fn first_stable_good(
    secs: &[Second],
    from: f64,
    to: f64,
    bound: f64,
    no_shed: bool,
) -> Option<u64> {
    let w: Vec<&Second> = secs
        .iter()
        .filter(|s| s.t as f64 >= from && (s.t as f64) < to)
        .collect();
    (0..w.len()).find_map(|i| {
        let end = (i + STABLE_S).min(w.len());
        w[i..end]
            .iter()
            .all(|s| good(s, bound, no_shed))
            .then_some(w[i].t)
    })
}

fn level_of(label: &str) -> Option<f64> {
    label
        .trim_end_matches("/s")
        .trim_end_matches(" VUs")
        .parse::<f64>()
        .ok()
}

fn stress_verdict(
    meta: &RunMeta,
    budgets: &[Budget],
    m: &Measured,
    st: &StressResult,
    server: Option<&ServerSide>,
) -> StressVerdict {
    let mut steps = Vec::new();
    for (i, (p, s)) in meta.phases.iter().zip(&m.phases).enumerate() {
        if s.completed() + s.dropped == 0 {
            break;
        }
        let (from, to) = window(meta, i);
        let secs = s.duration.as_secs_f64().max(1e-9);
        let lat = s.latency(None);
        let mut threads = BTreeMap::new();
        if let Some(sv) = server {
            for k in sv.series.keys() {
                if let Some(state) = k.strip_prefix("jvm.threads.") {
                    if let Some(v) = sv.mean_in(k, from, to) {
                        threads.insert(state.to_string(), v);
                    }
                }
            }
        }
        steps.push(StepRow {
            name: p.name.clone(),
            label: p.label.clone(),
            level: level_of(&p.label),
            offered_rate: s.offered as f64 / secs,
            achieved_rate: s.count(Class::Ok) as f64 / secs,
            p50_ms: ms_q(&lat, 0.50),
            p95_ms: ms_q(&lat, 0.95),
            p99_ms: ms_q(&lat, 0.99),
            max_ms: if lat.is_empty() {
                0.0
            } else {
                lat.max() as f64 / 1e6
            },
            errors: s.errors() + s.dropped,
            error_rate: s.error_rate(),
            within_budget: step_verdicts(budgets, s).iter().all(|v| v.pass),
            target_cpu_pct: server.and_then(|sv| sv.mean_in("target.cpu_pct", from, to)),
            target_process_cpu_pct: server
                .and_then(|sv| sv.mean_in("target.process_cpu_pct", from, to)),
            generator_cpu_pct: server.and_then(|sv| sv.mean_in("generator.cpu_pct", from, to)),
            generator_lag_ms: server.and_then(|sv| sv.mean_in("generator.lag_ms", from, to)),
            threads,
            top_finding: server.and_then(|sv| sv.top_finding(&p.name, from, to).cloned()),
        });
    }
    let breach = st
        .first_breach
        .as_ref()
        .and_then(|b| steps.iter().position(|r| &r.name == b));
    let (cause, why) = match breach {
        None => (Cause::NoBreach, String::new()),
        Some(bi) => {
            let prev = bi.checked_sub(1).map(|k| &steps[k]);
            classify(
                &steps[bi],
                prev,
                st,
                server.is_some_and(|s| s.has_target_data()),
            )
        }
    };
    let broke: Vec<String> = st
        .breached
        .iter()
        .map(|v| format!("{} (measured {})", v.budget, v.shown))
        .collect();
    let lvl = |l: Option<f64>| l.map(|v| format!("{v}/s")).unwrap_or_else(|| "?".into());
    let text = match (&st.knee, &st.first_breach) {
        (Some(k), Some(b)) => format!(
            "capacity {} ({k}, the last step within budget); {b} ({}) broke {}{why}",
            lvl(st.knee_level),
            lvl(st.first_breach_level),
            broke.join(", ")
        ),
        (None, Some(b)) => format!(
            "capacity below the first step: {b} ({}) already broke {}{why}",
            lvl(st.first_breach_level),
            broke.join(", ")
        ),
        (Some(k), None) => format!(
            "no step broke the budgets: capacity at least {} ({k}, the last step run)",
            lvl(st.knee_level)
        ),
        (None, None) => "no step completed".into(),
    };
    StressVerdict {
        steps,
        capacity: st.knee_level,
        capacity_step: st.knee.clone(),
        first_breach: st.first_breach.clone(),
        cause,
        text,
    }
}

/// Target CPU at or above this is saturation.
const CPU_SATURATED: f64 = 80.0;
/// Target CPU below this with a rising tail is contention.
const CPU_IDLE: f64 = 60.0;
/// Generator CPU at or above this (or lag above [`GEN_LAG_MS`]) makes latencies untrustworthy.
const GEN_CPU_SATURATED: f64 = super::summary::GeneratorHealth::BUSY_PCT;
const GEN_LAG_MS: f64 = super::summary::GeneratorHealth::LATE_MS;

fn classify(
    step: &StepRow,
    prev: Option<&StepRow>,
    st: &StressResult,
    have_server: bool,
) -> (Cause, String) {
    let finding = step
        .top_finding
        .as_ref()
        .map(|f| format!("; top finding ({} {}): {}", f.severity, f.kind, f.summary))
        .unwrap_or_default();
    let threads = if step.threads.is_empty() {
        String::new()
    } else {
        let parts: Vec<String> = step
            .threads
            .iter()
            .map(|(k, v)| format!("{v:.0} {k}"))
            .collect();
        format!("; threads: {}", parts.join(", "))
    };
    if !have_server {
        return (
            Cause::Unknown,
            ". Cause unknown: no server-side data (configure collectors to see the target's CPU, threads and locks)".into(),
        );
    }
    let gen_busy = step
        .generator_cpu_pct
        .is_some_and(|c| c >= GEN_CPU_SATURATED)
        || step.generator_lag_ms.is_some_and(|l| l >= GEN_LAG_MS);
    if gen_busy {
        return (
            Cause::GeneratorSaturated,
            format!(
                ". The generator was saturated (CPU {}, lag {}): these latencies are not trustworthy — add generator capacity or shards",
                opt_pct(step.generator_cpu_pct),
                step.generator_lag_ms
                    .map(|l| format!("{l:.1}ms"))
                    .unwrap_or_else(|| "-".into())
            ),
        );
    }
    // Latency budgets show their value in ms.
    let latency_broke = st.breached.iter().any(|v| v.shown.ends_with("ms"));
    let rising = latency_broke || prev.is_some_and(|p| step.p99_ms > 1.5 * p.p99_ms.max(0.001));
    let lock_like = step.top_finding.as_ref().is_some_and(|f| {
        matches!(
            f.kind.as_str(),
            "lock" | "pool" | "pinning" | "deadlock" | "contention"
        )
    });
    // A host busy with other processes (a noisy neighbour, or the generator
    // on the same box) while the service itself barely uses CPU and its
    // threads wait on a lock: the waiting is the cause, not the CPU.
    if let (Some(c), Some(p)) = (step.target_cpu_pct, step.target_process_cpu_pct) {
        if c >= CPU_IDLE && p < CPU_IDLE && lock_like && rising {
            return (
                Cause::Contention,
                format!(": target host CPU {c:.0}%, but the target process used only {p:.0}% of it (the rest is other processes) — not CPU bound while the tail rose: contention (waiting on locks, pools or I/O){threads}{finding}"),
            );
        }
    }
    match step.target_cpu_pct {
        Some(c) if c >= CPU_SATURATED => (
            Cause::Saturation,
            format!(": target CPU {c:.0}% — saturation (the service ran out of CPU){threads}{finding}"),
        ),
        Some(c) if c < CPU_IDLE && rising => (
            Cause::Contention,
            format!(": target CPU {c:.0}% — not CPU bound while the tail rose: contention (waiting on locks, pools or I/O){threads}{finding}"),
        ),
        Some(c) => (
            Cause::Inconclusive,
            format!(": target CPU {c:.0}% — neither idle nor saturated; inconclusive{threads}{finding}"),
        ),
        None if lock_like && rising => (
            Cause::Contention,
            format!(": no target CPU samples, but waiting was seen: contention{threads}{finding}"),
        ),
        None => (
            Cause::Inconclusive,
            format!(": no target CPU samples in this step; inconclusive{threads}{finding}"),
        ),
    }
}

fn opt_pct(v: Option<f64>) -> String {
    v.map(|c| format!("{c:.0}%")).unwrap_or_else(|| "-".into())
}

fn check(name: &str, status: Status, measured: String, expected: String) -> Check {
    Check {
        name: name.into(),
        status,
        measured,
        expected,
    }
}

fn rate(s: &Stats, c: Class) -> f64 {
    s.count(c) as f64 / s.duration.as_secs_f64().max(1e-9)
}

/// Tolerance (absolute fraction of offered) of the shed-fraction check.
const SHED_TOLERANCE: f64 = 0.10;

/// The overload checks:
/// 1. shed p99 ≤ `fast_fail`;
/// 2. every shed answer carried `Retry-After`;
/// 3. admitted (ok) p99 within the p99 budget during `overload`;
/// 4. shed fraction consistent with the excess: capacity C = max(ok/s in
///    `baseline`, ok/s in `overload`), expected shed = 1 − C/offered; the
///    measured shed/offered must be within ±10 points. Too little shedding
///    means the excess went to queues, timeouts or drops; too much means
///    admitted throughput collapsed below what the baseline showed;
/// 5. no timeouts, resets or connect errors from `ramp` to the end;
/// 6. recovery: seconds after `overload` ends until the 1-s p99 is within
///    bound and nothing is shed (stable 3 s), within the `recovery` phase.
fn overload(
    meta: &RunMeta,
    budgets: &[Budget],
    m: &Measured,
    secs: &[Second],
    fast_fail_ms: f64,
) -> Option<OverloadVerdict> {
    let oi = phase_idx(meta, "overload")?;
    let ov = m.phases.get(oi)?;
    let base = phase_idx(meta, "baseline").and_then(|i| m.phases.get(i));
    let shed = ov.count(Class::Shed);
    let offered_rate = ov.offered as f64 / ov.duration.as_secs_f64().max(1e-9);
    let capacity = rate(ov, Class::Ok).max(base.map(|b| rate(b, Class::Ok)).unwrap_or(0.0));
    let expected = if offered_rate > 0.0 {
        (1.0 - capacity / offered_rate).max(0.0)
    } else {
        0.0
    };
    let measured = if ov.offered > 0 {
        shed as f64 / ov.offered as f64
    } else {
        0.0
    };
    let mut checks = Vec::new();
    let shed_h = ov.latency(Some(Class::Shed));
    checks.push(if shed > 0 {
        let p = ms_q(&shed_h, 0.99);
        check(
            "shed answers are fast",
            if p <= fast_fail_ms { Status::Pass } else { Status::Fail },
            format!("shed p99 {p:.1}ms over {shed} answers"),
            format!("≤ {fast_fail_ms:.0}ms (fast_fail)"),
        )
    } else if expected > 0.05 {
        check(
            "shed answers are fast",
            Status::Fail,
            format!("no 503/429 at {offered_rate:.0}/s offered, above a capacity of ≈ {capacity:.0}/s: the service does not shed"),
            format!("shed answers with p99 ≤ {fast_fail_ms:.0}ms"),
        )
    } else {
        check(
            "shed answers are fast",
            Status::NotApplicable,
            "no shed answers: the load stayed within capacity".into(),
            format!("≤ {fast_fail_ms:.0}ms"),
        )
    });
    checks.push(if shed > 0 {
        let with = ov.shed_retry_after;
        check(
            "Retry-After on shed answers",
            if with >= shed {
                Status::Pass
            } else {
                Status::Fail
            },
            format!(
                "{with} of {shed} ({:.1}%)",
                100.0 * with as f64 / shed as f64
            ),
            "every shed answer".into(),
        )
    } else {
        check(
            "Retry-After on shed answers",
            Status::NotApplicable,
            "no shed answers".into(),
            "every shed answer".into(),
        )
    });
    let bound = p99_bound(budgets, &["overload"]);
    let ok_h = ov.latency(Some(Class::Ok));
    checks.push(match &bound {
        Some(b) if !ok_h.is_empty() => {
            let p = ms_q(&ok_h, 0.99);
            check(
                "admitted p99 within budget",
                if p <= b.ms {
                    Status::Pass
                } else {
                    Status::Fail
                },
                format!("ok p99 {p:.1}ms over {} answers", ok_h.len()),
                format!("≤ {:.1}ms ({})", b.ms, b.source),
            )
        }
        Some(b) => check(
            "admitted p99 within budget",
            Status::Fail,
            "no request was admitted (no ok answer)".into(),
            format!("≤ {:.1}ms ({})", b.ms, b.source),
        ),
        None => check(
            "admitted p99 within budget",
            Status::NotApplicable,
            if ok_h.is_empty() {
                "no ok answers".into()
            } else {
                format!("ok p99 {:.1}ms", ms_q(&ok_h, 0.99))
            },
            "a `p99 < …` budget in the profile".into(),
        ),
    });
    checks.push(check(
        "shed fraction matches the excess",
        if (measured - expected).abs() <= SHED_TOLERANCE {
            Status::Pass
        } else {
            Status::Fail
        },
        format!(
            "{:.1}% shed of {offered_rate:.0}/s offered",
            measured * 100.0
        ),
        format!(
            "≈ {:.1}% ± {:.0} points (1 − capacity {capacity:.0}/s ÷ offered)",
            expected * 100.0,
            SHED_TOLERANCE * 100.0
        ),
    ));
    let mut bad = [0u64; 3];
    let mut dropped = 0;
    for name in ["ramp", "overload", "recovery"] {
        if let Some(s) = phase_idx(meta, name).and_then(|i| m.phases.get(i)) {
            bad[0] += s.count(Class::Timeout);
            bad[1] += s.count(Class::Reset);
            bad[2] += s.count(Class::ConnectError);
            dropped += s.dropped;
        }
    }
    checks.push(check(
        "no timeouts, resets or refused connections",
        if bad.iter().sum::<u64>() == 0 {
            Status::Pass
        } else {
            Status::Fail
        },
        format!(
            "timeout={} reset={} connect_error={}{}",
            bad[0],
            bad[1],
            bad[2],
            if dropped > 0 {
                format!(" (and {dropped} dropped by the generator's max_in_flight)")
            } else {
                String::new()
            }
        ),
        "none".into(),
    ));
    let rb = bound
        .clone()
        .or_else(|| p99_bound(budgets, &["recovery"]))
        .or_else(|| fallback_bound(meta, m, "baseline"));
    let (_, ov_end) = window(meta, oi);
    let rec = phase_idx(meta, "recovery").map(|ri| window(meta, ri));
    let mut recovery_s = None;
    checks.push(match (&rb, rec) {
        (Some(b), Some((_, rend))) => {
            let at = first_stable_good(secs, ov_end, rend, b.ms, true);
            recovery_s = at.map(|t| (t as f64 - ov_end).max(0.0));
            match recovery_s {
                Some(r) => check(
                    "recovers after the overload",
                    Status::Pass,
                    format!("p99 within bound and no shedding {r:.0}s after the overload ended"),
                    format!(
                        "within the recovery phase ({:.0}s); p99 ≤ {:.1}ms ({})",
                        rend - ov_end,
                        b.ms,
                        b.source
                    ),
                ),
                None => check(
                    "recovers after the overload",
                    Status::Fail,
                    "not recovered by the end of the recovery phase".into(),
                    format!(
                        "within {:.0}s; p99 ≤ {:.1}ms ({})",
                        rend - ov_end,
                        b.ms,
                        b.source
                    ),
                ),
            }
        }
        (None, Some(_)) => check(
            "recovers after the overload",
            Status::NotApplicable,
            "no p99 bound (no budget, no baseline answers)".into(),
            "-".into(),
        ),
        (_, None) => check(
            "recovers after the overload",
            Status::NotApplicable,
            "no recovery phase".into(),
            "-".into(),
        ),
    });
    let pass = checks.iter().all(|c| c.status != Status::Fail);
    let failed: Vec<&str> = checks
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| c.name.as_str())
        .collect();
    let text = if pass {
        format!(
            "shedding works: {:.0}% shed at {offered_rate:.0}/s offered (capacity ≈ {capacity:.0}/s){}",
            measured * 100.0,
            recovery_s
                .map(|r| format!(", recovered {r:.0}s after the overload"))
                .unwrap_or_default()
        )
    } else {
        format!("failed: {}", failed.join("; "))
    };
    Some(OverloadVerdict {
        pass,
        checks,
        offered_rate,
        capacity_estimate: capacity,
        expected_shed_fraction: expected,
        shed_fraction: measured,
        recovery_s,
        text,
    })
}

fn spike(
    meta: &RunMeta,
    budgets: &[Budget],
    m: &Measured,
    secs: &[Second],
) -> Option<SpikeVerdict> {
    let si = phase_idx(meta, "spike")?;
    let sp = m.phases.get(si)?;
    let b = p99_bound(budgets, &["recovery", "baseline"])
        .or_else(|| fallback_bound(meta, m, "baseline"))?;
    let (s0, s1) = window(meta, si);
    let end = meta
        .phases
        .last()
        .map(|p| (p.start + p.duration).as_secs_f64())
        .unwrap_or(s1)
        .min(m.run.duration.as_secs_f64().max(s1));
    let in_spike: Vec<&Second> = secs
        .iter()
        .filter(|s| s.t as f64 >= s0 && (s.t as f64) < s1)
        .collect();
    let first_bad = in_spike.iter().find(|s| !good(s, b.ms, false)).map(|s| s.t);
    let back_after_start_s = match first_bad {
        None => Some(0.0),
        Some(t) => first_stable_good(secs, t as f64, s1, b.ms, false).map(|g| g as f64 - s0),
    };
    let back_after_end_s =
        first_stable_good(secs, s1, end.max(s1 + 1.0), b.ms, false).map(|g| g as f64 - s1);
    let errors = sp.errors() + sp.dropped;
    let text = format!(
        "{}; after the spike ended p99 was back within {:.1}ms {}; {} error(s) during the spike ({:.2}%)",
        match (first_bad, back_after_start_s) {
            (None, _) => "p99 stayed within bound during the spike".to_string(),
            (Some(_), Some(t)) => format!("p99 went over the bound and was back {t:.0}s after the spike started"),
            (Some(_), None) => "p99 went over the bound and stayed over until the spike ended".to_string(),
        },
        b.ms,
        back_after_end_s
            .map(|t| format!("after {t:.0}s"))
            .unwrap_or_else(|| "— never, within the data".into()),
        errors,
        sp.error_rate() * 100.0
    );
    Some(SpikeVerdict {
        bound_ms: b.ms,
        bound_source: b.source,
        left_budget: first_bad.is_some(),
        back_after_start_s,
        back_after_end_s,
        spike_errors: errors,
        spike_error_rate: sp.error_rate(),
        text,
    })
}

// ---------------------------------------------------------------------------
// Trends

/// Least-squares slope (per second), intercept and R² of `pts`.
pub fn least_squares(pts: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let n = pts.len() as f64;
    if pts.len() < 2 {
        return None;
    }
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let syy: f64 = pts.iter().map(|p| (p.1 - my).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    // A flat series explains nothing: R² 0, not NaN.
    let r2 = if syy <= 0.0 {
        0.0
    } else {
        (sxy * sxy / (sxx * syy)).clamp(0.0, 1.0)
    };
    Some((slope, intercept, r2))
}

/// Theil–Sen slope (per second): the median of all pairwise slopes, on at
/// most 400 evenly spaced points (≤ 80k pairs) so an 8-hour series stays cheap.
pub fn theil_sen(pts: &[(f64, f64)]) -> Option<f64> {
    const MAX: usize = 400;
    let sample: Vec<(f64, f64)> = if pts.len() > MAX {
        (0..MAX)
            .map(|i| pts[i * (pts.len() - 1) / (MAX - 1)])
            .collect()
    } else {
        pts.to_vec()
    };
    let mut slopes = Vec::with_capacity(sample.len() * sample.len() / 2);
    for i in 0..sample.len() {
        for j in i + 1..sample.len() {
            let dt = sample[j].0 - sample[i].0;
            if dt > 0.0 {
                slopes.push((sample[j].1 - sample[i].1) / dt);
            }
        }
    }
    if slopes.is_empty() {
        return None;
    }
    slopes.sort_by(f64::total_cmp);
    let n = slopes.len();
    Some(if n % 2 == 1 {
        slopes[n / 2]
    } else {
        (slopes[n / 2 - 1] + slopes[n / 2]) / 2.0
    })
}

/// Fewer samples or a shorter span than this gives no verdict.
const MIN_POINTS: usize = 5;
const MIN_SPAN_S: f64 = 5.0;

/// The trend of one series over `[from, to)` against its threshold.
pub fn trend(name: &str, pts: &[(f64, f64)], from: f64, to: f64, th: &LeakThresholds) -> Trend {
    let w: Vec<(f64, f64)> = pts
        .iter()
        .copied()
        .filter(|(t, _)| *t >= from && *t < to)
        .collect();
    let threshold = th.for_series(name).map(|(_, v)| v);
    let span = match (w.first(), w.last()) {
        (Some(a), Some(b)) => b.0 - a.0,
        _ => 0.0,
    };
    let mut t = Trend {
        series: name.into(),
        points: w.len(),
        slope_per_hour: 0.0,
        ols_slope_per_hour: 0.0,
        r2: 0.0,
        threshold_per_hour: threshold,
        flagged: false,
        note: None,
    };
    if w.len() < MIN_POINTS || span < MIN_SPAN_S {
        t.note = Some(format!(
            "too few samples after the warm-up ({} over {span:.0}s)",
            w.len()
        ));
        return t;
    }
    if let Some((slope, _, r2)) = least_squares(&w) {
        t.ols_slope_per_hour = slope * 3600.0;
        t.r2 = r2;
    }
    t.slope_per_hour = theil_sen(&w).unwrap_or(0.0) * 3600.0;
    t.flagged = threshold.is_some_and(|lim| t.slope_per_hour > lim && t.r2 >= th.min_r2);
    t
}

/// Show a per-hour value in the series' unit.
pub fn per_hour(series: &str, v: f64) -> String {
    if series.ends_with("_bytes") {
        format!("{:+.2}MB/h", v / 1e6)
    } else {
        format!("{v:+.2}/h")
    }
}

/// p99 (ms) of all answers whose 1-s window starts in `[from, to)`, merged.
fn p99_window(
    hlog_path: &Path,
    windows: &[(f64, f64)],
) -> Result<Vec<Option<f64>>, hlog::HlogError> {
    let mut hs: Vec<_> = windows.iter().map(|_| new_hist()).collect();
    hlog::for_each(hlog_path, |iv| {
        // The untagged line of each second holds every answer.
        if iv.tag.is_some() {
            return;
        }
        let t = iv.start.as_secs_f64();
        for (h, (a, b)) in hs.iter_mut().zip(windows) {
            if t >= *a && t < *b {
                let _ = h.add(&iv.hist);
            }
        }
    })?;
    Ok(hs
        .iter()
        .map(|h| (!h.is_empty()).then(|| ms_q(h, 0.99)))
        .collect())
}

fn soak(
    meta: &RunMeta,
    m: &Measured,
    warmup_s: f64,
    th: &LeakThresholds,
    server: Option<&ServerSide>,
    hlog_path: Option<&Path>,
) -> Option<SoakVerdict> {
    let si = phase_idx(meta, "soak")?;
    let (s0, s1) = window(meta, si);
    let from = s0 + warmup_s;
    let to = s1.min(m.run.duration.as_secs_f64()).max(from);
    let trends: Vec<Trend> = server
        .map(|sv| {
            sv.series
                .iter()
                .map(|(k, pts)| trend(k, pts, from, to, th))
                .collect()
        })
        .unwrap_or_default();
    // p99 drift: first fifth vs last fifth of the post-warm-up window.
    let part = ((to - from) / 5.0).max(1.0);
    let (p_first, p_last) = match hlog_path {
        Some(h) if to - from >= 2.0 => match p99_window(h, &[(from, from + part), (to - part, to)])
        {
            Ok(v) => (v[0], v[1]),
            Err(_) => (None, None),
        },
        _ => (None, None),
    };
    let drift = match (p_first, p_last) {
        (Some(a), Some(b)) if a > 0.0 => Some(b / a - 1.0),
        _ => None,
    };
    let drifted = match (drift, p_first, p_last) {
        (Some(d), Some(a), Some(b)) => d > th.p99_drift.0 && b - a >= 1.0,
        _ => false,
    };
    let leaking: Vec<String> = trends
        .iter()
        .filter(|t| t.flagged)
        .map(|t| {
            format!(
                "{} {} (R² {:.2}, limit {})",
                t.series,
                per_hour(&t.series, t.slope_per_hour),
                t.r2,
                per_hour(&t.series, t.threshold_per_hour.unwrap_or(0.0))
            )
        })
        .collect();
    let drift_text = match (p_first, p_last, drift) {
        (Some(a), Some(b), Some(d)) => format!(
            "p99 {a:.1}ms → {b:.1}ms ({:+.0}%, limit {:.0}%)",
            d * 100.0,
            th.p99_drift.0 * 100.0
        ),
        _ => "p99 drift not measured (too short a window)".into(),
    };
    let status = if !leaking.is_empty() {
        LeakStatus::Leak
    } else if drifted {
        LeakStatus::Degrading
    } else if trends
        .iter()
        .any(|t| t.threshold_per_hour.is_some() && t.note.is_none())
    {
        LeakStatus::NoLeak
    } else {
        LeakStatus::Unknown
    };
    let text = match status {
        LeakStatus::Leak => format!("LEAK: {}; {drift_text}", leaking.join("; ")),
        LeakStatus::Degrading => format!("no series leaks, but latency degraded: {drift_text}"),
        LeakStatus::NoLeak => format!(
            "no leak: {} series flat within thresholds; {drift_text}",
            trends
                .iter()
                .filter(|t| t.threshold_per_hour.is_some())
                .count()
        ),
        LeakStatus::Unknown => format!(
            "leaks unknown: {}; {drift_text}",
            if !server.is_some_and(|s| s.has_target_data()) {
                "no server-side collectors configured (memory, threads, fds, connections unseen)"
            } else {
                "no leak-relevant series with enough samples after the warm-up"
            }
        ),
    };
    Some(SoakVerdict {
        status,
        window_start_s: from,
        window_end_s: to,
        trends,
        p99_first_ms: p_first,
        p99_last_ms: p_last,
        p99_drift: drift,
        p99_drift_limit: th.p99_drift.0,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_squares_and_theil_sen_on_a_line() {
        let pts: Vec<(f64, f64)> = (0..100).map(|i| (i as f64, 3.0 * i as f64 + 7.0)).collect();
        let (s, i, r2) = least_squares(&pts).expect("fit");
        assert!((s - 3.0).abs() < 1e-9 && (i - 7.0).abs() < 1e-9 && (r2 - 1.0).abs() < 1e-9);
        assert!((theil_sen(&pts).expect("slope") - 3.0).abs() < 1e-9);
        let flat: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 5.0)).collect();
        let (s, _, r2) = least_squares(&flat).expect("fit");
        assert_eq!((s, r2), (0.0, 0.0));
    }

    #[test]
    fn theil_sen_ignores_outliers() {
        let mut pts: Vec<(f64, f64)> = (0..50).map(|i| (i as f64, i as f64)).collect();
        pts[10].1 = 1e9;
        pts[40].1 = -1e9;
        assert!((theil_sen(&pts).expect("slope") - 1.0).abs() < 0.05);
    }

    #[test]
    fn busy_host_with_an_idle_locked_service_is_contention() {
        let step = |host: f64, process: Option<f64>| StepRow {
            name: "step-4".into(),
            label: "100/s".into(),
            level: Some(100.0),
            offered_rate: 100.0,
            achieved_rate: 100.0,
            p50_ms: 5.0,
            p95_ms: 100.0,
            p99_ms: 250.0,
            max_ms: 300.0,
            errors: 0,
            error_rate: 0.0,
            within_budget: false,
            target_cpu_pct: Some(host),
            target_process_cpu_pct: process,
            generator_cpu_pct: Some(5.0),
            generator_lag_ms: Some(0.5),
            threads: BTreeMap::new(),
            top_finding: Some(FindingRef {
                at_s: 10.0,
                phase: Some("step-4".into()),
                severity: "high".into(),
                kind: "lock".into(),
                summary: "9 of 16 threads BLOCKED on com.acme.Inventory".into(),
                evidence: None,
            }),
        };
        let prev = StepRow {
            p99_ms: 20.0,
            within_budget: true,
            ..step(30.0, Some(2.0))
        };
        let st = StressResult {
            knee: Some("step-3".into()),
            knee_level: Some(80.0),
            first_breach: Some("step-4".into()),
            first_breach_level: Some(100.0),
            breached: vec![],
            expect_capacity: None,
        };
        // Another process fills the host; the service uses 2% of it.
        let (c, why) = classify(&step(100.0, Some(2.0)), Some(&prev), &st, true);
        assert_eq!(c, Cause::Contention, "{why}");
        assert!(
            why.contains("only 2%") && why.contains("Inventory"),
            "{why}"
        );
        // The service itself burns the CPU: saturation, lock or not.
        let (c, _) = classify(&step(100.0, Some(90.0)), Some(&prev), &st, true);
        assert_eq!(c, Cause::Saturation);
        // Without the process figure the host CPU decides, as before.
        let (c, _) = classify(&step(100.0, None), Some(&prev), &st, true);
        assert_eq!(c, Cause::Saturation);
    }

    #[test]
    fn stable_recovery_needs_three_good_seconds() {
        let sec = |t: u64, p99: f64| Second {
            t,
            offered: 10,
            completed: 10,
            ok: 10,
            p99_ms: p99,
            ..Default::default()
        };
        let s = vec![
            sec(0, 100.0),
            sec(1, 5.0),
            sec(2, 100.0),
            sec(3, 5.0),
            sec(4, 5.0),
            sec(5, 5.0),
        ];
        assert_eq!(first_stable_good(&s, 0.0, 10.0, 10.0, false), Some(3));
        // Near the end of the data, fewer good seconds suffice.
        assert_eq!(first_stable_good(&s[..5], 0.0, 10.0, 10.0, false), Some(3));
        assert_eq!(first_stable_good(&s[..1], 0.0, 10.0, 10.0, false), None);
    }
}
