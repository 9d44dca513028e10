//! The profile's `verdicts:` section: thresholds the judge applies (soak leak
//! limits), and whether the shape's verdicts gate the run.

use serde::{Deserialize, Serialize};

use crate::vocab::series;
use crate::vocab::{PerHour, Percent};

/// The profile's optional `verdicts:` section.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerdictsConfig {
    #[serde(default)]
    pub leaks: LeakThresholds,
    /// The overload checks, the spike recovery and the soak leak verdict are
    /// reported but do not fail the run (budgets and `expect_capacity` still do).
    #[serde(default)]
    pub advisory: bool,
}

/// Soak leak thresholds: a series whose slope exceeds its threshold with a
/// fit of at least `min_r2` is flagged as leaking.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// `target.tcp_established`.
    pub established: PerHour,
    /// `target.tcp_close_wait`.
    pub close_wait: PerHour,
    /// `jvm.metaspace_used_bytes` (class metadata: a class-loader leak).
    pub metaspace: PerHour,
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
            metaspace: PerHour(10e6),
            p99_drift: Percent(0.5),
            min_r2: 0.5,
        }
    }
}

impl LeakThresholds {
    /// The threshold (name, per hour) that applies to a series, if any.
    pub fn for_series(&self, name: &str) -> Option<(&'static str, f64)> {
        Some(match series::current_name(name) {
            s if s == series::TARGET_RSS.name => ("rss", self.rss.0),
            s if s == series::JVM_HEAP_AFTER_GC.name || s == series::JVM_LIVE_SET.name => {
                ("heap_after_gc", self.heap_after_gc.0)
            }
            s if s == series::TARGET_THREADS.name => ("threads", self.threads.0),
            s if s == series::TARGET_FDS.name => ("fds", self.fds.0),
            s if s == series::TARGET_TCP_ESTABLISHED.name => ("established", self.established.0),
            s if s == series::TARGET_TCP_CLOSE_WAIT.name => ("close_wait", self.close_wait.0),
            s if s == series::JVM_METASPACE.name => ("metaspace", self.metaspace.0),
            _ => return None,
        })
    }
}
