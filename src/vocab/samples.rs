//! The rows of the collectors' JSON-lines files under `diagnostics/`: one
//! type per stream, which the collectors serialize and `rundir` and `run`
//! deserialize, so no key is spelled on both sides. Every row is a
//! [`Stamped`] row: `t` and `phase` beside the stream's own fields.
//!
//! Reading is lenient, as old run directories need: a figure missing from a
//! row is `None` (no figure, not a zero), and a row that does not parse (a
//! line cut short by a killed run) is skipped by the reader, never a panic.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::collectors::{ArtifactInfo, CollectorErrorKind};

/// A row as stored: seconds since the run start on the run clock, the phase
/// it was taken in, and the stream's own fields beside them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stamped<R> {
    pub t: f64,
    #[serde(default)]
    pub phase: String,
    #[serde(flatten)]
    pub row: R,
}

/// A row of a `sample` probe's stream (`host.jsonl`, `heap.jsonl`, …): what
/// its parser read, the target PID the probe ran against and how long the
/// command took.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeRow<S> {
    #[serde(flatten)]
    pub sample: S,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default)]
    pub took_ms: f64,
}

/// The `proc-host` parser's sample (`host.jsonl`): `/proc` of the target's
/// host and, when found, of the target process.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostSample {
    pub ncpu: Option<u64>,
    /// CPU % of the whole host since the previous sample (`null` on the first).
    pub cpu_user_pct: Option<f64>,
    pub cpu_system_pct: Option<f64>,
    pub cpu_iowait_pct: Option<f64>,
    pub cpu_steal_pct: Option<f64>,
    pub cpu_busy_pct: Option<f64>,
    pub mem_total_kb: Option<u64>,
    pub mem_available_kb: Option<u64>,
    pub mem_used_kb: Option<u64>,
    pub load1: Option<f64>,
    pub load5: Option<f64>,
    pub load15: Option<f64>,
    /// Connections per TCP state name, the whole host.
    pub tcp: BTreeMap<String, u64>,
    /// `target.port`, when set; `port_tcp` counts its connections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port_tcp: Option<BTreeMap<String, u64>>,
    /// The target process; absent when it was not found.
    #[serde(rename = "proc", skip_serializing_if = "Option::is_none")]
    pub process: Option<ProcessSample>,
}

impl HostSample {
    /// Connections in `state`: of the service port when known, else of the host.
    pub fn connections(&self, state: &str) -> Option<u64> {
        self.port_tcp
            .as_ref()
            .unwrap_or(&self.tcp)
            .get(state)
            .copied()
    }
}

/// The target process in a host sample (`/proc/PID/{status,stat,fd}`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessSample {
    pub pid: Option<u32>,
    pub rss_kb: Option<u64>,
    pub hwm_kb: Option<u64>,
    pub threads: Option<u64>,
    pub fds: Option<u64>,
    /// % of ONE core since the previous sample of the same PID.
    pub cpu_pct: Option<f64>,
}

/// The `gc-heap-info` parser's sample (`heap.jsonl`, `jcmd PID GC.heap_info`), in kB.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HeapInfoSample {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metaspace_used_kb: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metaspace_committed_kb: Option<u64>,
    pub heap_used_kb: Option<u64>,
    pub heap_committed_kb: Option<u64>,
    /// Per space or generation as the collector names it (`garbage-first heap`, `PSYoungGen`).
    pub spaces: BTreeMap<String, HeapSpace>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HeapSpace {
    pub total_kb: u64,
    pub used_kb: u64,
}

/// The `lines` parser's sample: the command's output, line by line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LinesSample {
    pub lines: Vec<String>,
}

/// A probe without a parser: nothing beside the probe row's own fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct NoSample {}

/// brunt's own health, one row a second (`generator.jsonl`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GeneratorSample {
    /// brunt's CPU, % of ONE core.
    pub cpu_pct: Option<f64>,
    /// The generator's host, % of all cores.
    pub host_cpu_pct: Option<f64>,
    /// The generator host's CPU used by everything but brunt, % of all
    /// cores: tells a host busy with other work from a busy brunt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_cpu_pct: Option<f64>,
    pub rss_bytes: Option<u64>,
    /// The lag probe's p99 and max in this second.
    pub lag_p99_ms: Option<f64>,
    pub lag_max_ms: Option<f64>,
    pub saturated: bool,
}

/// One answer of the Prometheus source (`prometheus.jsonl`): the query's
/// name, the evidence series it feeds, its number.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PromSample {
    #[serde(default)]
    pub query: String,
    pub series: String,
    pub value: f64,
}

/// A row of the collectors' event log (`collectors.jsonl`): which lane
/// wrote it and what happened. `brunt report` rebuilds the collectors'
/// index from it when a run ended before its summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRow {
    #[serde(flatten)]
    pub event: CollectorEvent,
    /// `samples` or `artifacts`; `unknown` in logs from before lanes had names.
    #[serde(default = "unknown_lane")]
    pub lane: String,
}

fn unknown_lane() -> String {
    "unknown".into()
}

/// What a lane logged. Fields an older log may lack have defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum CollectorEvent {
    /// The target process was found.
    TargetPid { pid: u32 },
    /// The target JVM is older than a probe needs: the probe is off.
    ProbeDisabled {
        probe: String,
        java_major: Option<u32>,
        min_java: u32,
    },
    /// A file brought back; `artifact` is the whole index entry (older logs lack it).
    Artifact {
        #[serde(default)]
        probe: String,
        #[serde(default)]
        file: String,
        #[serde(default)]
        bytes: u64,
        #[serde(default)]
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        artifact: Option<ArtifactInfo>,
    },
    /// A JFR window file removed to bound the disk.
    ArtifactPruned { file: String },
    /// New lines of a followed file appended under `diagnostics/`.
    Tail {
        probe: String,
        file: String,
        bytes: u64,
    },
    Error {
        #[serde(default)]
        probe: String,
        #[serde(default)]
        message: String,
        /// Absent in logs from before kinds existed.
        #[serde(default)]
        kind: CollectorErrorKind,
    },
    /// A 1-s p99 over the threshold fired the `on_trigger` probes.
    Trigger {
        #[serde(default)]
        second: u64,
        #[serde(default)]
        p99_us: u64,
    },
    JfrStart {
        remote: String,
        pid: Option<u32>,
        window_s: Option<f64>,
    },
    /// A recording's JVM went away before its stop.
    JfrLost { pid: Option<u32>, from_t: f64 },
    /// One probe's data lost (a JFR recording with its JVM); `from_t`,
    /// `to_t` default to the row's `t`.
    Gap {
        #[serde(default)]
        probe: String,
        #[serde(default)]
        from_t: Option<f64>,
        #[serde(default)]
        to_t: Option<f64>,
        #[serde(default)]
        reason: String,
        #[serde(default)]
        missed: u64,
    },
    /// The link is back after a gap.
    Reconnected {
        #[serde(default)]
        from_t: Option<f64>,
        #[serde(default)]
        missed: u64,
    },
    LinkDown {
        #[serde(default)]
        message: String,
    },
    /// An event this brunt does not know (a newer one's): read, not used.
    #[serde(other)]
    Other,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line<R: Serialize>(t: f64, phase: &str, row: R) -> String {
        serde_json::to_value(Stamped {
            t,
            phase: phase.into(),
            row,
        })
        .expect("a row serializes")
        .to_string()
    }

    #[test]
    fn host_rows_keep_their_keys_and_read_old_rows() {
        let mut h = HostSample {
            ncpu: Some(2),
            cpu_busy_pct: None,
            mem_used_kb: Some(10),
            tcp: [("ESTABLISHED".to_string(), 2)].into(),
            process: Some(ProcessSample {
                threads: Some(42),
                ..Default::default()
            }),
            ..Default::default()
        };
        let row = ProbeRow {
            sample: h.clone(),
            pid: Some(7),
            took_ms: 3.0,
        };
        let text = line(1.5, "main", &row);
        // Unknown figures are null, as they always were; no port, no port_tcp.
        assert!(text.contains(r#""cpu_busy_pct":null"#), "{text}");
        assert!(text.contains(r#""proc":{"cpu_pct":null"#), "{text}");
        assert!(!text.contains("port"), "{text}");
        let back: Stamped<ProbeRow<HostSample>> = serde_json::from_str(&text).expect("reads");
        assert_eq!((back.t, back.phase.as_str()), (1.5, "main"));
        assert_eq!(back.row, row);
        assert_eq!(back.row.sample.connections("ESTABLISHED"), Some(2));
        h.port_tcp = Some(BTreeMap::new());
        assert_eq!(h.connections("ESTABLISHED"), None, "the port's, when known");
        // A row of a few figures reads; what it lacks is no figure.
        let old: Stamped<HostSample> =
            serde_json::from_str(r#"{"t":2.0,"cpu_busy_pct":43.0}"#).expect("reads");
        assert_eq!(old.row.cpu_busy_pct, Some(43.0));
        assert_eq!(old.row.mem_used_kb, None);
        assert!(serde_json::from_str::<Stamped<HostSample>>(r#"{"t":3.0,"cpu_bu"#).is_err());
    }

    #[test]
    fn events_read_old_logs_and_unknown_kinds() {
        let e: Stamped<EventRow> =
            serde_json::from_str(r#"{"t":4.0,"event":"error","probe":"p","message":"m"}"#)
                .expect("an error without kind");
        assert_eq!(e.row.lane, "unknown");
        assert_eq!(
            e.row.event,
            CollectorEvent::Error {
                probe: "p".into(),
                message: "m".into(),
                kind: CollectorErrorKind::Other
            }
        );
        let e: Stamped<EventRow> =
            serde_json::from_str(r#"{"t":5.0,"event":"from-the-future","x":1,"lane":"samples"}"#)
                .expect("an unknown event");
        assert_eq!(e.row.event, CollectorEvent::Other);
        let text = line(
            6.0,
            "main",
            EventRow {
                event: CollectorEvent::TargetPid { pid: 42 },
                lane: "samples".into(),
            },
        );
        assert_eq!(
            text,
            r#"{"event":"target-pid","lane":"samples","phase":"main","pid":42,"t":6.0}"#
        );
    }
}
