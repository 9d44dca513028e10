//! The names and units of every evidence series, as code: collectors, the
//! run, the judge and the report spell a series through these constants, never
//! as a string of their own (the way Vector keeps its telemetry names).
//!
//! `target.*` and `jvm.*` are measured on the server side; `generator.*` is
//! brunt's own machine, named and charted apart so the two are never read as one.

use serde::{Deserialize, Serialize};

/// What a series' values are, so charts put only like with like on one axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Percent of the whole host's CPU capacity (0–100).
    PctOfHost,
    /// Percent of one core (0–100 × cores).
    PctOfCore,
    /// Percent of the time a load worker's event loop was busy (0–100).
    PctBusy,
    Bytes,
    Count,
    Millis,
    /// The kernel's run-queue load average.
    Load,
    /// Events per second (a JFR window's count over its length).
    PerSecond,
    /// Milliseconds per second of wall time (GC pause time over a JFR window).
    MillisPerSecond,
    BytesPerSecond,
}

impl Unit {
    /// Axis caption.
    pub fn caption(self) -> &'static str {
        match self {
            Unit::PctOfHost => "% of host CPU",
            Unit::PctOfCore => "% of one core",
            Unit::PctBusy => "% busy",
            Unit::Bytes => "bytes",
            Unit::Count => "count",
            Unit::Millis => "ms",
            Unit::Load => "load average",
            Unit::PerSecond => "per second",
            Unit::MillisPerSecond => "ms per second",
            Unit::BytesPerSecond => "bytes per second",
        }
    }
}

/// Which machine a series describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Target,
    Generator,
}

/// One named series of `evidence.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Series {
    pub name: &'static str,
    pub unit: Unit,
    pub side: Side,
    /// What it measures, in a few words.
    pub what: &'static str,
}

const fn target(name: &'static str, unit: Unit, what: &'static str) -> Series {
    Series {
        name,
        unit,
        side: Side::Target,
        what,
    }
}
const fn generator(name: &'static str, unit: Unit, what: &'static str) -> Series {
    Series {
        name,
        unit,
        side: Side::Generator,
        what,
    }
}

pub const TARGET_HOST_CPU: Series = target(
    "target.host_cpu_pct",
    Unit::PctOfHost,
    "target host CPU busy",
);
pub const TARGET_PROCESS_CPU_OF_HOST: Series = target(
    "target.process_cpu_pct_of_host",
    Unit::PctOfHost,
    "target process CPU, share of the host",
);
pub const TARGET_PROCESS_CPU_OF_CORE: Series = target(
    "target.process_cpu_pct_of_core",
    Unit::PctOfCore,
    "target process CPU, % of one core",
);
pub const TARGET_MEM_USED: Series = target(
    "target.mem_used_bytes",
    Unit::Bytes,
    "target host memory used",
);
pub const TARGET_LOAD1: Series = target("target.load1", Unit::Load, "target host load (1 min)");
pub const TARGET_RSS: Series = target("target.rss_bytes", Unit::Bytes, "target process RSS");
pub const TARGET_THREADS: Series = target("target.threads", Unit::Count, "target process threads");
pub const TARGET_FDS: Series = target("target.fds", Unit::Count, "target process open fds");
pub const TARGET_TCP_ESTABLISHED: Series = target(
    "target.tcp_established",
    Unit::Count,
    "ESTABLISHED connections (service port)",
);
pub const TARGET_TCP_CLOSE_WAIT: Series = target(
    "target.tcp_close_wait",
    Unit::Count,
    "CLOSE_WAIT connections (service port)",
);
pub const TARGET_TCP_TIME_WAIT: Series = target(
    "target.tcp_time_wait",
    Unit::Count,
    "TIME_WAIT connections (service port)",
);
pub const TARGET_POOL_WAITERS: Series = target(
    "target.pool_waiters",
    Unit::Count,
    "threads waiting for a pooled connection",
);
pub const JVM_HEAP_USED: Series = target("jvm.heap_used_bytes", Unit::Bytes, "JVM heap used");
pub const JVM_HEAP_COMMITTED: Series = target(
    "jvm.heap_committed_bytes",
    Unit::Bytes,
    "JVM heap committed",
);
/// After full (or old-generation) collections only, when the recording
/// says which collector ran; after every GC when it does not.
pub const JVM_HEAP_AFTER_GC: Series = target(
    "jvm.heap_after_gc_bytes",
    Unit::Bytes,
    "JVM heap used right after each full GC",
);
/// After young collections: it creeps up while the old generation fills
/// with garbage the next full GC frees, so no leak is judged on it.
pub const JVM_HEAP_AFTER_YOUNG_GC: Series = target(
    "jvm.heap_after_young_gc_bytes",
    Unit::Bytes,
    "JVM heap used right after each young GC",
);
/// The live set: a class histogram's total, taken right after the full
/// collection `GC.class_histogram` forces.
pub const JVM_LIVE_SET: Series = target(
    "jvm.live_set_bytes",
    Unit::Bytes,
    "JVM live set (class histogram total)",
);
/// Native Memory Tracking's committed total.
pub const JVM_NMT_COMMITTED: Series = target(
    "jvm.nmt_committed_bytes",
    Unit::Bytes,
    "JVM native memory committed (NMT)",
);
/// `jvm.threads.<state>` (`runnable`, `blocked`, `waiting`, `timed_waiting`), count per dump.
pub const JVM_THREADS_PREFIX: &str = "jvm.threads.";
/// Per JFR window (`window:` on the jfr probe), at the window's middle.
pub const JFR_PREFIX: &str = "jvm.jfr.";
pub const JFR_BLOCKED_RATE: Series = target(
    "jvm.jfr.monitor_blocked_per_s",
    Unit::PerSecond,
    "monitor entries that blocked (JFR window)",
);
pub const JFR_BLOCKED_THREADS: Series = target(
    "jvm.jfr.monitor_blocked_threads",
    Unit::Count,
    "threads blocked on monitors, mean over a JFR window",
);
pub const JFR_PARK_RATE: Series = target(
    "jvm.jfr.park_waits_per_s",
    Unit::PerSecond,
    "park waits outside idle pools: pool, lock, latch (JFR window)",
);
pub const JFR_PARKED_THREADS: Series = target(
    "jvm.jfr.parked_threads",
    Unit::Count,
    "threads in such park waits, mean over a JFR window",
);
pub const JFR_PINNED_THREADS: Series = target(
    "jvm.jfr.pinned_threads",
    Unit::Count,
    "virtual threads pinned to their carrier, mean over a JFR window",
);
pub const JFR_ALLOC_RATE: Series = target(
    "jvm.jfr.alloc_bytes_per_s",
    Unit::BytesPerSecond,
    "allocation rate (JFR allocation samples)",
);
pub const JFR_GC_PAUSE: Series = target(
    "jvm.jfr.gc_pause_ms_per_s",
    Unit::MillisPerSecond,
    "GC pause time per second (JFR window)",
);
pub const GENERATOR_HOST_CPU: Series = generator(
    "generator.host_cpu_pct",
    Unit::PctOfHost,
    "generator host CPU busy",
);
pub const GENERATOR_RSS: Series = generator("generator.rss_bytes", Unit::Bytes, "brunt's RSS");
pub const GENERATOR_PROBE_LAG: Series = generator(
    "generator.probe_lag_ms",
    Unit::Millis,
    "timer probe lateness p99",
);
pub const GENERATOR_SCHED_LAG: Series = generator(
    "generator.sched_lag_ms",
    Unit::Millis,
    "open-model scheduler lateness",
);
pub const GENERATOR_WORKER_BUSY: Series = generator(
    "generator.worker_busy_pct",
    Unit::PctBusy,
    "busiest load worker's event-loop busy share",
);

/// Every named series (the `jvm.threads.<state>` family aside).
pub const ALL: &[Series] = &[
    TARGET_HOST_CPU,
    TARGET_PROCESS_CPU_OF_HOST,
    TARGET_PROCESS_CPU_OF_CORE,
    TARGET_MEM_USED,
    TARGET_LOAD1,
    TARGET_RSS,
    TARGET_THREADS,
    TARGET_FDS,
    TARGET_TCP_ESTABLISHED,
    TARGET_TCP_CLOSE_WAIT,
    TARGET_TCP_TIME_WAIT,
    TARGET_POOL_WAITERS,
    JVM_HEAP_USED,
    JVM_HEAP_COMMITTED,
    JVM_HEAP_AFTER_GC,
    JVM_HEAP_AFTER_YOUNG_GC,
    JVM_LIVE_SET,
    JVM_NMT_COMMITTED,
    JFR_BLOCKED_RATE,
    JFR_BLOCKED_THREADS,
    JFR_PARK_RATE,
    JFR_PARKED_THREADS,
    JFR_PINNED_THREADS,
    JFR_ALLOC_RATE,
    JFR_GC_PAUSE,
    GENERATOR_HOST_CPU,
    GENERATOR_RSS,
    GENERATOR_PROBE_LAG,
    GENERATOR_SCHED_LAG,
    GENERATOR_WORKER_BUSY,
];

/// The series of that name, with `jvm.threads.<state>` as a count on the target.
pub fn lookup(name: &str) -> Option<Series> {
    if let Some(s) = ALL.iter().find(|s| s.name == name) {
        return Some(*s);
    }
    name.starts_with(JVM_THREADS_PREFIX).then_some(Series {
        name: JVM_THREADS_PREFIX,
        unit: Unit::Count,
        side: Side::Target,
        what: "JVM threads in a state, per dump",
    })
}

/// Names used by earlier run directories, and what they are called now:
/// an old `evidence.json` still reads.
pub const RENAMED: &[(&str, &str)] = &[
    ("target.cpu_pct", TARGET_HOST_CPU.name),
    ("target.process_cpu_pct", TARGET_PROCESS_CPU_OF_HOST.name),
    ("target.proc_cpu_pct", TARGET_PROCESS_CPU_OF_CORE.name),
    ("tcp.established", TARGET_TCP_ESTABLISHED.name),
    ("tcp.close_wait", TARGET_TCP_CLOSE_WAIT.name),
    ("tcp.time_wait", TARGET_TCP_TIME_WAIT.name),
    ("generator.cpu_pct", GENERATOR_WORKER_BUSY.name),
    ("generator.lag_ms", GENERATOR_SCHED_LAG.name),
];

/// Today's name of a series possibly written under an older one.
pub fn current_name(name: &str) -> &str {
    RENAMED
        .iter()
        .find(|(old, _)| *old == name)
        .map(|(_, new)| *new)
        .unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_renames_point_at_known_series() {
        let mut names: Vec<_> = ALL.iter().map(|s| s.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        for (old, new) in RENAMED {
            assert!(lookup(new).is_some(), "{old} → {new}");
            assert!(lookup(old).is_none(), "{old} is still a current name");
        }
        assert_eq!(
            lookup("jvm.threads.blocked").map(|s| s.unit),
            Some(Unit::Count)
        );
        assert_eq!(current_name("target.cpu_pct"), "target.host_cpu_pct");
    }
}
