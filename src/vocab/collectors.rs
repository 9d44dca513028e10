//! The collectors' index (`summary.json`'s `collectors`): what the
//! collectors hand back and the judge and the report read, one type for both.
//! Every field has a default, so an older `summary.json` still reads.

use serde::{Deserialize, Serialize, Serializer};

/// The pseudo-probe a lane's own link errors are filed under.
pub const TRANSPORT_PROBE: &str = "transport";

/// The collectors' index in `summary.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct CollectorsSummary {
    /// Schema version of this section.
    pub version: u32,
    /// e.g. `ssh app@10.0.0.5:22`, `local`; `none` when no transport lane ran.
    pub transport: String,
    /// Sample series: `diagnostics/<name>.jsonl`, one JSON object per line with
    /// `t` (seconds since run start) and `phase`.
    pub streams: Vec<StreamInfo>,
    /// Raw files (thread dumps, JSON dumps, JFR recordings).
    pub artifacts: Vec<ArtifactInfo>,
    /// Periods when the transport was down.
    pub gaps: Vec<GapInfo>,
    /// First errors (capped); `errors_total` counts all.
    pub errors: Vec<ErrorInfo>,
    pub errors_total: u64,
    /// Target process(es) found; more than one = the target restarted.
    pub target_pids: Vec<PidInfo>,
    /// How many p99 triggers fired (after the cool-down).
    pub triggers: u64,
    /// brunt's own health; `generator.saturated` = latencies are suspect.
    pub generator: Option<GeneratorSummary>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct StreamInfo {
    pub name: String,
    /// Relative to the run directory.
    pub file: String,
    pub rows: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct ArtifactInfo {
    pub collector: String,
    pub probe: String,
    /// `artifact` or `jfr`.
    pub kind: String,
    /// Relative to the run directory.
    pub file: String,
    /// Seconds since run start when it was taken (JFR: when recording started).
    pub t: f64,
    pub phase: String,
    pub bytes: u64,
    /// `schedule`, `phase-start`, `trigger` or `jfr`.
    pub reason: String,
    pub pid: Option<u32>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct GapInfo {
    /// Collector thread that saw it: `samples` or `artifacts` (one SSH session
    /// each), `prometheus:<query>` for a failing query.
    pub lane: String,
    pub from_t: f64,
    pub to_t: f64,
    pub reason: String,
    /// Probe runs that could not happen during the gap.
    pub missed: u64,
    /// The probe whose data is missing (a JFR recording lost with its JVM);
    /// absent when the whole lane was down.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<String>,
}

impl GapInfo {
    /// How long the gap lasted, in seconds (never negative).
    pub fn secs(&self) -> f64 {
        (self.to_t - self.from_t).max(0.0)
    }
}

/// What kind of failure a collector error was: what the judge decides on
/// (the message is for people).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CollectorErrorKind {
    /// The link to the target: connect, host key, login, a broken session.
    Transport,
    /// No process matched `target.pid`, `pgrep` or `jcmd_match`.
    TargetNotFound,
    /// A remote command ran past the transport's `command_timeout`.
    Timeout,
    /// A probe's command ran and failed (non-zero exit).
    ProbeFailed,
    /// A probe's output did not parse.
    Parse,
    /// A Prometheus query failed.
    Query,
    /// The profile or a definition file is wrong.
    Config,
    /// A local file could not be written or read.
    Io,
    /// Anything else (and errors logged before kinds existed).
    #[default]
    Other,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct ErrorInfo {
    pub t: f64,
    pub probe: String,
    pub message: String,
    pub kind: CollectorErrorKind,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct PidInfo {
    /// When this PID was first found.
    pub t: f64,
    pub pid: u32,
    pub java_major: Option<u32>,
}

/// What the report needs to say about the generator.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct GeneratorSummary {
    pub samples: u64,
    /// brunt's CPU, % of ONE core (200 = two cores busy).
    pub max_cpu_pct: f64,
    pub mean_cpu_pct: f64,
    pub max_rss_bytes: u64,
    pub max_lag_ms: f64,
    /// Highest per-second p99 of the lag probe.
    pub max_lag_p99_ms: f64,
    pub saturated_seconds: u64,
    /// Run-relative seconds (window index) that were saturated (first 1000).
    pub saturated_at: Vec<u64>,
    /// True when enough seconds were saturated that latencies are suspect.
    pub saturated: bool,
    /// One sentence for the report.
    pub verdict: String,
}

impl CollectorsSummary {
    /// Fold one source's part (a lane, the Prometheus source) into the index.
    /// Each lane finds the PID on its own: one entry per PID is kept.
    pub fn absorb(&mut self, part: CollectorsSummary) {
        self.streams.extend(part.streams);
        self.artifacts.extend(part.artifacts);
        self.gaps.extend(part.gaps);
        self.errors.extend(part.errors);
        self.errors_total += part.errors_total;
        for p in part.target_pids {
            match self.target_pids.iter_mut().find(|x| x.pid == p.pid) {
                Some(x) => {
                    x.t = x.t.min(p.t);
                    x.java_major = x.java_major.or(p.java_major);
                }
                None => self.target_pids.push(p),
            }
        }
        self.triggers = self.triggers.max(part.triggers);
    }

    /// Artifacts, gaps, errors and PIDs in time order.
    pub fn sort(&mut self) {
        self.artifacts.sort_by(|a, b| a.t.total_cmp(&b.t));
        self.gaps.sort_by(|a, b| a.from_t.total_cmp(&b.from_t));
        self.errors.sort_by(|a, b| a.t.total_cmp(&b.t));
        self.target_pids.sort_by(|a, b| a.t.total_cmp(&b.t));
    }

    /// Rows of every sample stream.
    pub fn rows(&self) -> u64 {
        self.streams.iter().map(|s| s.rows).sum()
    }
}

/// Write the index with its keys in alphabetical order, as `summary.json`
/// has always had them (it used to be kept as a JSON value).
pub fn serialize_sorted<S: Serializer>(
    c: &Option<CollectorsSummary>,
    s: S,
) -> Result<S::Ok, S::Error> {
    serde_json::to_value(c)
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}
