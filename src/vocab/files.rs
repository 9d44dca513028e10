//! The names of the files in a run directory. `rundir` reads and writes
//! them; the collectors, which write into `diagnostics/` from their own
//! threads, name their files with the same constants.

pub const PROFILE: &str = "profile.yaml";
pub const RUN_JSON: &str = "run.json";
pub const EVENTS: &str = "events.jsonl";
pub const LATENCY_LOG: &str = "latency.hlog";
pub const TIME_SERIES: &str = "timeseries.csv";
pub const SUMMARY: &str = "summary.json";
pub const FINDINGS: &str = "findings.json";
pub const REPORT_HTML: &str = "report.html";
pub const DIAGNOSTICS: &str = "diagnostics";
/// Inside [`DIAGNOSTICS`].
pub const EVIDENCE: &str = "evidence.json";
/// The collectors' sample streams, inside [`DIAGNOSTICS`] (a stream is named
/// after its probe: `host` writes `host.jsonl`).
pub const HOST_SAMPLES: &str = "host.jsonl";
pub const HEAP_SAMPLES: &str = "heap.jsonl";
pub const GENERATOR_SAMPLES: &str = "generator.jsonl";
/// One row per JFR window (`window:` on the jfr probe): its figures, kept
/// even when the window's file is pruned.
pub const JFR_WINDOWS: &str = "jfr-windows.jsonl";
/// The Prometheus source's answers (`collectors.prometheus`).
pub const PROMETHEUS_SAMPLES: &str = "prometheus.jsonl";
