//! The names of the files in a run directory. `rundir` reads and writes
//! them; the collectors, which write into `diagnostics/` from their own
//! threads, name their files with the same constants, and artifacts with
//! [`artifact_name`] (whose time [`artifact_time`] reads back).

pub const PROFILE: &str = "profile.yaml";
pub const RUN_JSON: &str = "run.json";
pub const EVENTS: &str = "events.jsonl";
pub const LATENCY_LOG: &str = "latency.hlog";
pub const TIME_SERIES: &str = "timeseries.csv";
pub const SUMMARY: &str = "summary.json";
pub const FINDINGS: &str = "findings.json";
pub const REPORT_HTML: &str = "report.html";
/// The errors table's tally, one line per phase and second with errors.
pub const ERRORS_LOG: &str = "errors.jsonl";
/// The slowest requests sent with a trace context, one line per phase and second with any.
pub const TRACES_LOG: &str = "traces.jsonl";
/// One row per remote-write push ([`super::export::PushRow`]).
pub const EXPORT_LOG: &str = "export.jsonl";
/// What `setup:` and `teardown:` did ([`super::setup::OnceFile`]; names, never values).
pub const SETUP: &str = "setup.json";
/// Server-streaming gRPC calls per request ([`super::streams::StreamRow`]).
pub const STREAMS: &str = "streams.json";
pub const DIAGNOSTICS: &str = "diagnostics";
/// Inside [`DIAGNOSTICS`].
pub const EVIDENCE: &str = "evidence.json";
/// The collectors' event log inside [`DIAGNOSTICS`] (artifacts, target
/// PIDs, errors, link gaps).
pub const COLLECTOR_EVENTS: &str = "collectors.jsonl";
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
/// How a flame graph's collapsed stacks file ends, inside [`DIAGNOSTICS`]
/// beside its recording (`<recording>.<phase>.<cpu|wait>.folded`).
pub const FLAME_STACKS: &str = ".folded";
/// The database collector's samples (`postgres`'s `postgres` probe).
pub const DB_SAMPLES: &str = "postgres.jsonl";
/// The target's descriptors by kind and sockets by state and peer (`linux-host`'s `fds`).
pub const FD_SAMPLES: &str = "fds.jsonl";

/// Keep file-name parts to `[A-Za-z0-9._-]`.
pub fn safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `thread-dump-t0012.3-step-2-003.txt`: time, phase and sequence in the name.
pub fn artifact_name(probe: &str, t: f64, phase: &str, n: u32, ext: &str) -> String {
    format!(
        "{}-t{:06.1}-{}-{:03}.{}",
        safe(probe),
        t,
        safe(phase),
        n,
        safe(ext)
    )
}

/// The run-clock time an [`artifact_name`] says its artifact was asked
/// for; `None` for any other name. Finer than a text dump's own header,
/// which prints whole seconds.
pub fn artifact_time(name: &str) -> Option<f64> {
    static RE: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    let re = RE
        .get_or_init(|| regex::Regex::new(r"^.+?-t(\d{4,}\.\d)-.+-\d{3,}\.[A-Za-z0-9._-]+$").ok())
        .as_ref()?;
    re.captures(name)?.get(1)?.as_str().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifact_time_reads_back_what_artifact_name_wrote() {
        let n = artifact_name("thread-dump", 12.34, "step-2", 3, "txt");
        assert_eq!(n, "thread-dump-t0012.3-step-2-003.txt");
        assert_eq!(artifact_time(&n), Some(12.3));
        let n = artifact_name("jfr", 3600.0, "warmup", 1, "jfr");
        assert_eq!(artifact_time(&n), Some(3600.0));
        assert_eq!(artifact_time("dump.txt"), None);
        assert_eq!(artifact_time("jstack-t12-x.txt"), None);
    }
}
