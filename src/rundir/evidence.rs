//! `diagnostics/evidence.json`: the one loader and writer, and the
//! conversion of the collectors' sample streams (`diagnostics/*.jsonl`) and
//! the engine's own per-second figures into evidence series.

use std::path::{Path, PathBuf};

use super::{
    RundirError, DB_SAMPLES, DIAGNOSTICS, EVIDENCE, GENERATOR_SAMPLES, HEAP_SAMPLES, HOST_SAMPLES,
    JFR_WINDOWS, PROMETHEUS_SAMPLES,
};
use crate::evidence::ServerEvidence;
use crate::vocab::findings::{FindingKind, Severity};
use crate::vocab::jfr::JfrWindowRow;
use crate::vocab::samples::{GeneratorSample, HeapInfoSample, HostSample, PromSample, Stamped};
use crate::vocab::samples_db::DbSample;
use crate::vocab::series::{self, Series};
use serde::de::DeserializeOwned;

fn path(dir: &Path) -> PathBuf {
    dir.join(DIAGNOSTICS).join(EVIDENCE)
}

/// Read `diagnostics/evidence.json`; `Ok(None)` when the run has none.
pub fn load(dir: &Path) -> Result<Option<ServerEvidence>, RundirError> {
    let path = path(dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(RundirError::Read {
                path,
                message: e.to_string(),
            })
        }
    };
    let mut s: ServerEvidence = serde_json::from_str(&text).map_err(|e| RundirError::Read {
        path,
        message: format!("not a valid evidence file: {e}"),
    })?;
    s.normalize();
    Ok(Some(s))
}

/// Write it where [`load`] finds it.
pub fn save(dir: &Path, ev: &ServerEvidence) -> Result<(), RundirError> {
    let path = path(dir);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| RundirError::Write {
            path: path.clone(),
            source,
        })?;
    }
    super::write_json(&path, ev)
}

/// Reads the collectors' sample streams (`diagnostics/{host,heap,generator,jfr-windows,postgres}.jsonl`,
/// rows stamped with `t` seconds since the run start) and the run's own
/// per-second generator figures into the series names above.
pub fn from_collector_streams(dir: &Path) -> ServerEvidence {
    let mut out = ServerEvidence::default();
    let diag = dir.join(DIAGNOSTICS);
    let mut push = |s: Series, t: f64, v: Option<f64>| {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            out.series
                .entry(s.name.to_string())
                .or_default()
                .push((t, v));
        }
    };
    for_rows(&diag.join(HOST_SAMPLES), |t, h: HostSample| {
        let kb = |k: Option<u64>| k.map(|k| k as f64 * 1024.0);
        let n = |v: Option<u64>| v.map(|v| v as f64);
        push(series::TARGET_HOST_CPU, t, h.cpu_busy_pct);
        push(series::TARGET_MEM_USED, t, kb(h.mem_used_kb));
        push(series::TARGET_LOAD1, t, h.load1);
        // Connections of the service port when known, else of the whole host.
        push(
            series::TARGET_TCP_ESTABLISHED,
            t,
            n(h.connections("ESTABLISHED")),
        );
        push(
            series::TARGET_TCP_CLOSE_WAIT,
            t,
            n(h.connections("CLOSE_WAIT")),
        );
        push(
            series::TARGET_TCP_TIME_WAIT,
            t,
            n(h.connections("TIME_WAIT")),
        );
        if let Some(p) = h.process {
            push(series::TARGET_RSS, t, kb(p.rss_kb));
            push(series::TARGET_THREADS, t, n(p.threads));
            push(series::TARGET_FDS, t, n(p.fds));
            push(series::TARGET_PROCESS_CPU_OF_CORE, t, p.cpu_pct);
            // The process's share of the host (0–100), comparable with
            // `target.host_cpu_pct`: tells a CPU-bound service from a busy host.
            let ncpu = h.ncpu.filter(|n| *n >= 1);
            push(
                series::TARGET_PROCESS_CPU_OF_HOST,
                t,
                p.cpu_pct.zip(ncpu).map(|(c, n)| c / n as f64),
            );
        }
    });
    for_rows(&diag.join(HEAP_SAMPLES), |t, h: HeapInfoSample| {
        let kb = |k: Option<u64>| k.map(|k| k as f64 * 1024.0);
        push(series::JVM_HEAP_USED, t, kb(h.heap_used_kb));
        push(series::JVM_HEAP_COMMITTED, t, kb(h.heap_committed_kb));
    });
    for_rows(&diag.join(GENERATOR_SAMPLES), |t, g: GeneratorSample| {
        push(series::GENERATOR_HOST_CPU, t, g.host_cpu_pct);
        push(series::GENERATOR_OTHERS_CPU, t, g.others_cpu_pct);
        push(series::GENERATOR_RSS, t, g.rss_bytes.map(|b| b as f64));
        push(series::GENERATOR_PROBE_LAG, t, g.lag_p99_ms);
    });
    // JFR windows: each window's totals over its length, at its middle.
    for_rows(&diag.join(JFR_WINDOWS), |_, w: JfrWindowRow| {
        let (from, to) = (w.from_t, w.to_t);
        let span = to - from;
        if !span.is_finite() || span < 1.0 {
            return;
        }
        let t = (from + to) / 2.0;
        let rate = |v: Option<f64>| v.filter(|v| v.is_finite()).map(|v| v / span);
        let count = |v: Option<u64>| rate(v.map(|n| n as f64));
        push(series::JFR_BLOCKED_RATE, t, count(w.monitor_enter));
        // ms blocked per ms of wall time: how many threads were blocked, on average.
        push(
            series::JFR_BLOCKED_THREADS,
            t,
            rate(w.monitor_enter_ms).map(|v| v / 1e3),
        );
        push(series::JFR_PARK_RATE, t, count(w.park));
        push(
            series::JFR_PARKED_THREADS,
            t,
            rate(w.park_ms).map(|v| v / 1e3),
        );
        push(
            series::JFR_PINNED_THREADS,
            t,
            rate(w.pinned_ms).map(|v| v / 1e3),
        );
        // No allocation samples (settings without them): no figure, not zero.
        if w.alloc_samples.is_some_and(|n| n > 0) {
            push(series::JFR_ALLOC_RATE, t, rate(w.alloc_bytes));
        }
        push(series::JFR_GC_PAUSE, t, rate(w.gc_pause_ms));
    });
    out.parts.extend(super::fds::parts(dir));
    // The engine's own view, per second: scheduler lateness and the busiest
    // worker's event-loop share (a worker near 100% cannot start requests on time).
    if let Ok(rows) = super::read::rows(dir) {
        for s in super::read::seconds(&rows) {
            let t = s.t as f64 + 0.5;
            push(
                series::GENERATOR_SCHED_LAG,
                t,
                Some(s.sched_lag_us as f64 / 1000.0),
            );
            // The saturation signal: a worker's event loop that never rests.
            push(series::GENERATOR_WORKER_BUSY, t, Some(s.busy_pct));
        }
    }
    // The Prometheus source: each row names the series it feeds.
    let mut waiting = Vec::new();
    for_rows(&diag.join(PROMETHEUS_SAMPLES), |t, p: PromSample| {
        let v = p.value;
        if !v.is_finite() {
            return;
        }
        if p.series == series::TARGET_POOL_WAITERS.name && v >= 1.0 {
            let q = if p.query.is_empty() { "?" } else { &p.query };
            waiting.push((t, v, q.to_string()));
        }
        out.series
            .entry(series::current_name(&p.series).to_string())
            .or_default()
            .push((t, v));
    });
    // Threads waiting for a pooled connection are pool evidence for the
    // knee's cause, as a thread dump's pool-borrow stacks are.
    for (t, v, q) in waiting {
        out.findings.push(crate::evidence::FindingRef {
            at_s: t,
            phase: None,
            severity: Severity::Warning,
            kind: FindingKind::Pool,
            summary: format!(
                "{v:.0} threads waiting for a pooled connection (Prometheus query `{q}`)"
            ),
            evidence: Some(format!("{DIAGNOSTICS}/{PROMETHEUS_SAMPLES}")),
        });
    }
    // The database samples keep their phase: its findings are per phase.
    let db_rows: Vec<Stamped<DbSample>> = std::fs::read_to_string(diag.join(DB_SAMPLES))
        .map(|text| {
            text.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        })
        .unwrap_or_default();
    if !db_rows.is_empty() {
        out.merge(crate::evidence::from_database(
            &db_rows,
            &format!("{DIAGNOSTICS}/{DB_SAMPLES}"),
        ));
    }
    out
}

/// Call `f(t, row)` for each row of a JSON-lines file that reads as a
/// stamped `R`; a torn or foreign line is skipped (a killed run may end mid-line).
fn for_rows<R: DeserializeOwned>(path: &Path, mut f: impl FnMut(f64, R)) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    for line in text.lines() {
        if let Ok(r) = serde_json::from_str::<Stamped<R>>(line) {
            f(r.t, r.row);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::FindingRef;

    #[test]
    fn jfr_windows_become_rates_at_their_middle() {
        let dir = tempfile::tempdir().expect("tempdir");
        let diag = dir.path().join(DIAGNOSTICS);
        std::fs::create_dir_all(&diag).expect("mkdir");
        let rows = [
            // 10 s: 50 blocked entries, 20 s blocked in all: 2 threads on average.
            r#"{"t":10.0,"from_t":0.0,"to_t":10.0,"monitor_enter":50,"monitor_enter_ms":20000,"park":10,"park_ms":5000,"pinned_ms":2500,"alloc_bytes":1e9,"alloc_samples":40,"gc":2,"gc_pause_ms":30}"#,
            // No allocation samples: no allocation figure, not a zero.
            r#"{"t":15.0,"from_t":10.0,"to_t":15.0,"monitor_enter":5,"monitor_enter_ms":0,"park":0,"park_ms":0,"alloc_bytes":0,"alloc_samples":0,"gc":0,"gc_pause_ms":0}"#,
            // Too short to be a rate, and a garbled row: skipped.
            r#"{"t":15.5,"from_t":15.0,"to_t":15.5,"monitor_enter":5}"#,
            r#"{"t":16.0,"from_t":"x"}"#,
        ];
        std::fs::write(diag.join(JFR_WINDOWS), rows.join("\n")).expect("write");
        let s = from_collector_streams(dir.path());
        assert_eq!(
            s.series[series::JFR_BLOCKED_RATE.name],
            vec![(5.0, 5.0), (12.5, 1.0)]
        );
        assert_eq!(s.series[series::JFR_BLOCKED_THREADS.name][0], (5.0, 2.0));
        assert_eq!(s.series[series::JFR_PARKED_THREADS.name][0], (5.0, 0.5));
        // Only the row with the field has the figure.
        assert_eq!(s.series[series::JFR_PINNED_THREADS.name], vec![(5.0, 0.25)]);
        assert_eq!(s.series[series::JFR_ALLOC_RATE.name], vec![(5.0, 1e8)]);
        assert_eq!(s.series[series::JFR_GC_PAUSE.name][0], (5.0, 3.0));
    }

    #[test]
    fn round_trips_and_normalizes() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(load(dir.path()).expect("no file is fine").is_none());
        let mut s = ServerEvidence::default();
        s.series.insert(
            series::TARGET_HOST_CPU.name.into(),
            vec![(2.0, 30.0), (1.0, 10.0)],
        );
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
        save(dir.path(), &s).expect("save");
        let back = load(dir.path()).expect("load").expect("present");
        assert_eq!(
            back.series[series::TARGET_HOST_CPU.name],
            vec![(1.0, 10.0), (2.0, 30.0)]
        );
        assert_eq!(
            back.mean_in(series::TARGET_HOST_CPU.name, 0.0, 5.0),
            Some(20.0)
        );
        assert_eq!(
            back.top_finding("x", 1.0, 2.0).map(|f| f.kind.as_str()),
            Some("lock")
        );
        assert!(back.top_finding("x", 5.0, 6.0).is_none());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("diagnostics")).expect("mkdir");
        std::fs::write(path(dir.path()), "{not json").expect("write");
        assert!(load(dir.path()).is_err());
    }
}
