//! Server-side evidence as the report reads it: time series sampled on the
//! target (and on the generator) and findings from the diagnosis, all on the
//! run's clock (seconds since the run start, the same clock as
//! `timeseries.csv` and `latency.hlog`).
//!
//! The report depends only on this contract, not on the collectors or the
//! diagnosis themselves, so either can change without touching the verdicts.
//!
//! ## The file: `diagnostics/evidence.json`
//! ```json
//! {
//!   "series": {
//!     "target.cpu_pct":  [[0.0, 12.5], [1.0, 14.0]],
//!     "jvm.threads.blocked": [[5.0, 180]]
//!   },
//!   "findings": [
//!     { "at_s": 31.2, "phase": "step-6", "severity": "critical", "kind": "lock",
//!       "summary": "180 of 200 http-nio threads BLOCKED on com.acme.Inventory …",
//!       "evidence": "diagnostics/dump-031s-step-6.txt" }
//!   ]
//! }
//! ```
//! Both keys are optional; a missing file means "no server-side collectors".
//!
//! Who writes it: at the end of a run, after the collectors' `finished()`
//! and before [`crate::report::verdicts::Inputs::load`] in
//! [`crate::run::execute`], the collectors' samples and the diagnosis'
//! findings are converted to a [`ServerSide`] (use [`ServerSide::merge`] to
//! combine sources) and saved with [`ServerSide::save`]. `brunt report DIR`
//! reads the same file, so a run can also be re-judged after an offline
//! `brunt analyze` adds findings.
//!
//! Series names the verdicts and the report understand (others are charted
//! as they come):
//!
//! | name | unit | used by |
//! |---|---|---|
//! | `target.cpu_pct` | % of the target host's CPU capacity (0–100) | knee cause |
//! | `target.process_cpu_pct` | % of the target host's CPU capacity used by the target process | knee cause (a busy host vs a CPU-bound service) |
//! | `target.mem_used_bytes` | bytes | chart |
//! | `target.rss_bytes` | bytes (target process) | leak trend `rss` |
//! | `target.threads` | count | leak trend `threads` |
//! | `target.fds` | count | leak trend `fds` |
//! | `tcp.established`, `tcp.close_wait`, `tcp.time_wait` | count (service port) | leak trends `established`, `close_wait` |
//! | `jvm.heap_after_gc_bytes` | bytes (heap used right after each GC) | leak trend `heap_after_gc` |
//! | `jvm.heap_used_bytes` | bytes | chart |
//! | `jvm.threads.<state>` (`runnable`, `blocked`, `waiting`, `timed_waiting`) | count per dump | per-step thread states |
//! | `generator.cpu_pct` | busiest load worker's event-loop busy share, % (0–100) | "generator saturated" |
//! | `generator.lag_ms` | scheduler lag, ms | "generator saturated" |
//!
//! Findings: `severity` is one of `critical`, `high`, `warning`, `info`
//! (others rank lowest); `kind` is free text such as `lock`, `pool`,
//! `pinning`, `deadlock`, `cluster`; `phase` may be left out, the report
//! then places the finding by `at_s`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Where the evidence lives inside a run directory.
pub const EVIDENCE_FILE: &str = "diagnostics/evidence.json";

#[derive(Debug, Error)]
pub enum EvidenceError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a valid evidence file: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// Everything seen on the server side during a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ServerSide {
    /// Name → samples `(seconds since run start, value)`, in time order.
    #[serde(default)]
    pub series: BTreeMap<String, Vec<(f64, f64)>>,
    #[serde(default)]
    pub findings: Vec<FindingRef>,
}

/// One diagnosis finding, as far as the report needs it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FindingRef {
    /// Seconds since the run start when it was seen.
    pub at_s: f64,
    #[serde(default)]
    pub phase: Option<String>,
    pub severity: String,
    pub kind: String,
    /// One line a human reads ("180 of 200 … BLOCKED on com.acme.Inventory").
    pub summary: String,
    /// Where it came from (a file under `diagnostics/`, thread names…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

impl FindingRef {
    /// Higher is worse.
    pub fn rank(&self) -> u8 {
        match self.severity.to_ascii_lowercase().as_str() {
            "critical" => 4,
            "high" | "error" => 3,
            "warning" | "medium" | "warn" => 2,
            "info" | "low" => 1,
            _ => 0,
        }
    }
}

impl ServerSide {
    /// Read `diagnostics/evidence.json`; `Ok(None)` when the run has none.
    pub fn load(dir: &Path) -> Result<Option<ServerSide>, EvidenceError> {
        let path = dir.join(EVIDENCE_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(EvidenceError::Read { path, source }),
        };
        let mut s: ServerSide =
            serde_json::from_str(&text).map_err(|source| EvidenceError::Parse { path, source })?;
        s.normalize();
        Ok(Some(s))
    }

    /// Write it where [`ServerSide::load`] finds it (collectors, tests).
    pub fn save(&self, dir: &Path) -> Result<(), EvidenceError> {
        let path = dir.join(EVIDENCE_FILE);
        let text = serde_json::to_string_pretty(self).map_err(|source| EvidenceError::Parse {
            path: path.clone(),
            source,
        })?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| EvidenceError::Read {
                path: path.clone(),
                source,
            })?;
        }
        std::fs::write(&path, text).map_err(|source| EvidenceError::Read { path, source })
    }

    /// Drop non-finite samples and sort by time: collectors append as they
    /// go, possibly out of order after a reconnect.
    pub fn normalize(&mut self) {
        for pts in self.series.values_mut() {
            pts.retain(|(t, v)| t.is_finite() && v.is_finite());
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        self.series.retain(|_, p| !p.is_empty());
    }

    /// Fold another source in (e.g. the collectors' series, then the
    /// diagnosis' findings): samples of the same series are merged in time order.
    pub fn merge(&mut self, other: ServerSide) {
        for (k, pts) in other.series {
            self.series.entry(k).or_default().extend(pts);
        }
        self.findings.extend(other.findings);
        self.normalize();
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty() && self.findings.is_empty()
    }

    /// Anything seen on the target (not only brunt's own `generator.*` figures).
    pub fn has_target_data(&self) -> bool {
        !self.findings.is_empty() || self.series.keys().any(|k| !k.starts_with("generator."))
    }

    /// Mean of a series over `[from, to)`; `None` without samples there.
    pub fn mean_in(&self, name: &str, from: f64, to: f64) -> Option<f64> {
        let pts = self.series.get(name)?;
        let (n, sum) = pts
            .iter()
            .filter(|(t, _)| *t >= from && *t < to)
            .fold((0usize, 0.0), |(n, s), (_, v)| (n + 1, s + v));
        (n > 0).then(|| sum / n as f64)
    }

    /// Max of a series over `[from, to)`.
    pub fn max_in(&self, name: &str, from: f64, to: f64) -> Option<f64> {
        self.series
            .get(name)?
            .iter()
            .filter(|(t, _)| *t >= from && *t < to)
            .map(|(_, v)| *v)
            .reduce(f64::max)
    }

    /// The worst finding seen in a phase (by name, or by time when the
    /// finding carries no phase); the earliest among equals.
    pub fn top_finding(&self, phase: &str, from: f64, to: f64) -> Option<&FindingRef> {
        self.findings
            .iter()
            .filter(|f| match &f.phase {
                Some(p) => p == phase,
                None => f.at_s >= from && f.at_s < to,
            })
            .min_by(|a, b| b.rank().cmp(&a.rank()).then(a.at_s.total_cmp(&b.at_s)))
    }
}

/// Reads the collectors' sample streams (`diagnostics/{host,heap,generator}.jsonl`,
/// rows stamped with `t` seconds since the run start) and the run's own
/// per-second generator figures into the series names above.
pub fn from_collector_streams(dir: &Path) -> ServerSide {
    let mut out = ServerSide::default();
    let diag = dir.join("diagnostics");
    let mut push = |name: &str, t: f64, v: Option<f64>| {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            out.series.entry(name.to_string()).or_default().push((t, v));
        }
    };
    for_rows(&diag.join("host.jsonl"), |t, r| {
        let f = |k: &str| r.get(k).and_then(|v| v.as_f64());
        push("target.cpu_pct", t, f("cpu_busy_pct"));
        push(
            "target.mem_used_bytes",
            t,
            f("mem_used_kb").map(|k| k * 1024.0),
        );
        push("target.load1", t, f("load1"));
        // Connections of the service port when known, else of the whole host.
        let tcp = r.get("port_tcp").or_else(|| r.get("tcp"));
        let state = |s: &str| tcp.and_then(|m| m.get(s)).and_then(|v| v.as_f64());
        push("tcp.established", t, state("ESTABLISHED"));
        push("tcp.close_wait", t, state("CLOSE_WAIT"));
        push("tcp.time_wait", t, state("TIME_WAIT"));
        if let Some(p) = r.get("proc") {
            let g = |k: &str| p.get(k).and_then(|v| v.as_f64());
            push("target.rss_bytes", t, g("rss_kb").map(|k| k * 1024.0));
            push("target.threads", t, g("threads"));
            push("target.fds", t, g("fds"));
            push("target.proc_cpu_pct", t, g("cpu_pct"));
            // The process's share of the host (0–100), comparable with
            // `target.cpu_pct`: tells a CPU-bound service from a busy host.
            let ncpu = f("ncpu").filter(|n| *n >= 1.0);
            push(
                "target.process_cpu_pct",
                t,
                g("cpu_pct").zip(ncpu).map(|(c, n)| c / n),
            );
        }
    });
    for_rows(&diag.join("heap.jsonl"), |t, r| {
        let f = |k: &str| r.get(k).and_then(|v| v.as_f64());
        push(
            "jvm.heap_used_bytes",
            t,
            f("heap_used_kb").map(|k| k * 1024.0),
        );
        push(
            "jvm.heap_committed_bytes",
            t,
            f("heap_committed_kb").map(|k| k * 1024.0),
        );
    });
    for_rows(&diag.join("generator.jsonl"), |t, r| {
        let f = |k: &str| r.get(k).and_then(|v| v.as_f64());
        push("generator.host_cpu_pct", t, f("host_cpu_pct"));
        push("generator.rss_bytes", t, f("rss_bytes"));
        push("generator.probe_lag_ms", t, f("lag_p99_ms"));
    });
    // The engine's own view, per second: scheduler lateness and the busiest
    // worker's event-loop share (a worker near 100% cannot start requests on time).
    if let Ok(rows) = crate::metrics::series::read(&dir.join("timeseries.csv")) {
        let mut per_second: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
        for r in rows {
            let e = per_second.entry(r.second).or_default();
            e.0 = e.0.max(r.sched_lag_us as f64 / 1000.0);
            e.1 = e.1.max(r.busy_pct);
        }
        for (s, (lag, busy)) in per_second {
            push("generator.lag_ms", s as f64 + 0.5, Some(lag));
            // The saturation signal: a worker's event loop that never rests.
            push("generator.cpu_pct", s as f64 + 0.5, Some(busy));
        }
    }
    out
}

/// Call `f(t, row)` for each parseable row of a JSON-lines file; a torn or
/// foreign line is skipped (a killed run may end mid-line).
fn for_rows(path: &Path, mut f: impl FnMut(f64, &serde_json::Value)) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    for line in text.lines() {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
            if let Some(t) = v.get("t").and_then(|t| t.as_f64()) {
                f(t, &v);
            }
        }
    }
}

/// The diagnosis' view as evidence: findings placed on the run's clock
/// (`start_unix` is the run start), thread states per dump as
/// `jvm.threads.<state>`, and heap after each GC (from JFR) as
/// `jvm.heap_after_gc_bytes`.
pub fn from_analysis(a: &crate::diagnosis::Analysis, start_unix: f64) -> ServerSide {
    use crate::diagnosis::Severity;
    let mut out = ServerSide::default();
    for f in &a.findings {
        let Some(at) = f.evidence.time_unix else {
            continue;
        };
        let kind = serde_json::to_value(&f.detail)
            .ok()
            .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_string))
            .unwrap_or_default();
        let kind = match kind.as_str() {
            "lock_contention" | "jfr_contention" => "lock".to_string(),
            "pool_wait" => "pool".to_string(),
            "stack_cluster" => "cluster".to_string(),
            _ => kind,
        };
        out.findings.push(FindingRef {
            at_s: (at - start_unix).max(0.0),
            phase: f.evidence.phase.clone(),
            severity: match f.severity {
                Severity::Critical => "critical",
                Severity::High => "high",
                Severity::Medium => "warning",
                Severity::Low | Severity::Info => "info",
            }
            .to_string(),
            kind,
            summary: f.summary.clone(),
            evidence: Some(f.evidence.file.clone()),
        });
    }
    for d in &a.dumps {
        let Some(at) = d.time_unix else { continue };
        let t = (at - start_unix).max(0.0);
        for (state, n) in &d.states {
            out.series
                .entry(format!("jvm.threads.{}", state.to_ascii_lowercase()))
                .or_default()
                .push((t, *n as f64));
        }
    }
    for h in a.heap.iter().filter(|h| h.when == "After GC") {
        out.series
            .entry("jvm.heap_after_gc_bytes".into())
            .or_default()
            .push(((h.unix - start_unix).max(0.0), h.heap_used as f64));
    }
    out.normalize();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_normalizes() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(ServerSide::load(dir.path())
            .expect("no file is fine")
            .is_none());
        let mut s = ServerSide::default();
        s.series
            .insert("target.cpu_pct".into(), vec![(2.0, 30.0), (1.0, 10.0)]);
        s.findings.push(FindingRef {
            at_s: 1.5,
            phase: None,
            severity: "warning".into(),
            kind: "pool".into(),
            summary: "pool wait".into(),
            evidence: None,
        });
        s.findings.push(FindingRef {
            at_s: 1.8,
            phase: None,
            severity: "critical".into(),
            kind: "lock".into(),
            summary: "lock".into(),
            evidence: None,
        });
        s.save(dir.path()).expect("save");
        let back = ServerSide::load(dir.path())
            .expect("load")
            .expect("present");
        assert_eq!(
            back.series["target.cpu_pct"],
            vec![(1.0, 10.0), (2.0, 30.0)]
        );
        assert_eq!(back.mean_in("target.cpu_pct", 0.0, 5.0), Some(20.0));
        assert_eq!(
            back.top_finding("x", 1.0, 2.0).map(|f| f.kind.as_str()),
            Some("lock")
        );
        assert!(back.top_finding("x", 5.0, 6.0).is_none());
    }

    #[test]
    fn merge_interleaves_samples() {
        let mut a = ServerSide::default();
        a.series.insert("x".into(), vec![(0.0, 1.0), (2.0, 3.0)]);
        let mut b = ServerSide::default();
        b.series.insert("x".into(), vec![(1.0, 2.0)]);
        b.series.insert("y".into(), vec![(1.0, 9.0)]);
        a.merge(b);
        assert_eq!(a.series["x"], vec![(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)]);
        assert_eq!(a.series["y"], vec![(1.0, 9.0)]);
    }

    #[test]
    fn non_finite_samples_are_dropped() {
        let mut s = ServerSide::default();
        s.series
            .insert("a".into(), vec![(1.0, f64::NAN), (f64::INFINITY, 1.0)]);
        s.series
            .insert("b".into(), vec![(1.0, 2.0), (0.5, f64::NAN)]);
        s.normalize();
        assert!(!s.series.contains_key("a"));
        assert_eq!(s.series["b"], vec![(1.0, 2.0)]);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("diagnostics")).expect("mkdir");
        std::fs::write(dir.path().join(EVIDENCE_FILE), "{not json").expect("write");
        assert!(ServerSide::load(dir.path()).is_err());
    }
}
