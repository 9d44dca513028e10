//! What each shape's verdict says, as stored in `summary.json`: the result
//! types, with no logic beyond their own headlines.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::evidence::FindingRef;

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

/// A shape's check (overload, soak): PASS, FAIL, or N/A when the run gives
/// it nothing to check; not a gate ([`crate::vocab::Status`]) until
/// [`super::gates`] makes it one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CheckStatus {
    #[serde(rename = "PASS")]
    Pass,
    #[serde(rename = "FAIL")]
    Fail,
    #[serde(rename = "N/A")]
    NotApplicable,
}

impl std::fmt::Display for CheckStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CheckStatus::Pass => "PASS",
            CheckStatus::Fail => "FAIL",
            CheckStatus::NotApplicable => "N/A",
        })
    }
}

/// One PASS/FAIL check with what was measured and what was expected.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Check {
    pub name: String,
    pub status: CheckStatus,
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
    /// The tail was requests waiting for one of brunt's own connections
    /// while the service answered quickly: brunt's limit, not the service's.
    ConnectionLimit,
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
    /// Begun after the breaching step and given up when the run stopped at
    /// the breach: not a step that failed (its errors are the requests
    /// given up at the stop).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub abandoned: bool,
    /// The wait for brunt's own connections in this step (open model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_wait: Option<super::wait::ConnectionWait>,
    /// The worst database finding of the step (a lock wait, saturated
    /// connections), when a database collector ran: the cause chains it
    /// behind a pool wait the JVM showed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_finding: Option<FindingRef>,
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
    /// The one capacity every check (goodput held, shed fraction, shed
    /// answers are fast) and the headline use: `expect_capacity`, else the
    /// capacity seen outside `overload` (best 3 s of `ramp`, or the
    /// baseline) raised to the overload's own ok/s when that is higher.
    pub capacity_estimate: f64,
    /// Where `capacity_estimate` comes from.
    #[serde(default)]
    pub capacity_source: String,
    /// ok/s during `overload` (the "goodput held" check).
    #[serde(default)]
    pub goodput: f64,
    /// Admitted (ok) and shed latency during `overload`, apart: fast 503s
    /// must not make the phase's p50 read better than the baseline's.
    #[serde(default)]
    pub ok_latency: Option<LatencySplit>,
    #[serde(default)]
    pub shed_latency: Option<LatencySplit>,
    /// 1 − capacity/offered, at least 0.
    pub expected_shed_fraction: f64,
    /// Shed answers / offered during `overload`.
    pub shed_fraction: f64,
    /// Seconds from the end of `overload` until p99 is within bound and no answer is shed.
    pub recovery_s: Option<f64>,
    pub text: String,
    /// The server side's top finding during `overload` (a pool wait chained
    /// to the database lock behind it), when collectors saw one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_finding: Option<String>,
}

/// p50/p99 (ms) of one outcome class over a phase.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct LatencySplit {
    pub count: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
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
    /// A leak: rising steadily through the window (see [`super::trend::trend`]).
    pub flagged: bool,
    /// Why there is no verdict on this series (e.g. `inconclusive: 42 s of data`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Theil–Sen slope per hour in the first and second half of the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halves_per_hour: Option<(f64, f64)>,
    /// Robust noise (1.4826 × MAD of the residuals), in the series' unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<f64>,
    /// Why a slope over the threshold is still not a leak (a step, noise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
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
    /// What grows, named (a heap class, a thread group, sockets to a peer,
    /// an fd kind, a native category), most of the growth first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grows: Vec<crate::vocab::growth::Growth>,
}
