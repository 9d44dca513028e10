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
    Seconds,
    /// Percent of a configured limit (connections of `max_connections`).
    PctOfLimit,
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
            Unit::Seconds => "s",
            Unit::PctOfLimit => "% of the limit",
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

/// Declares each series as a constant and lists them all in [`ALL`] (so no
/// series is left out of it): `NAME = Side("name", Unit, "what it measures");`.
macro_rules! series {
    ($($(#[$doc:meta])* $name:ident = $side:ident($key:literal, $unit:ident, $what:literal);)*) => {
        $(
            $(#[$doc])*
            pub const $name: Series = Series {
                name: $key,
                unit: Unit::$unit,
                side: Side::$side,
                what: $what,
            };
        )*
        /// Every named series (the `jvm.threads.<state>` family aside).
        pub const ALL: &[Series] = &[$($name),*];
    };
}

series! {
    TARGET_HOST_CPU = Target("target.host_cpu_pct", PctOfHost, "target host CPU busy");
    TARGET_PROCESS_CPU_OF_HOST = Target("target.process_cpu_pct_of_host", PctOfHost, "target process CPU, share of the host");
    TARGET_PROCESS_CPU_OF_CORE = Target("target.process_cpu_pct_of_core", PctOfCore, "target process CPU, % of one core");
    TARGET_MEM_USED = Target("target.mem_used_bytes", Bytes, "target host memory used");
    TARGET_LOAD1 = Target("target.load1", Load, "target host load (1 min)");
    TARGET_RSS = Target("target.rss_bytes", Bytes, "target process RSS");
    TARGET_THREADS = Target("target.threads", Count, "target process threads");
    TARGET_FDS = Target("target.fds", Count, "target process open fds");
    TARGET_TCP_ESTABLISHED = Target("target.tcp_established", Count, "ESTABLISHED connections (service port)");
    TARGET_TCP_CLOSE_WAIT = Target("target.tcp_close_wait", Count, "CLOSE_WAIT connections (service port)");
    TARGET_TCP_TIME_WAIT = Target("target.tcp_time_wait", Count, "TIME_WAIT connections (service port)");
    TARGET_POOL_WAITERS = Target("target.pool_waiters", Count, "threads waiting for a pooled connection");
    JVM_HEAP_USED = Target("jvm.heap_used_bytes", Bytes, "JVM heap used");
    JVM_HEAP_COMMITTED = Target("jvm.heap_committed_bytes", Bytes, "JVM heap committed");
    /// After full (or old-generation) collections only, when the recording
    /// says which collector ran; after every GC when it does not.
    JVM_HEAP_AFTER_GC = Target("jvm.heap_after_gc_bytes", Bytes, "JVM heap used right after each full GC");
    /// After young collections: it creeps up while the old generation fills
    /// with garbage the next full GC frees, so no leak is judged on it.
    JVM_HEAP_AFTER_YOUNG_GC = Target("jvm.heap_after_young_gc_bytes", Bytes, "JVM heap used right after each young GC");
    /// The live set: a class histogram's total, taken right after the full
    /// collection `GC.class_histogram` forces.
    JVM_LIVE_SET = Target("jvm.live_set_bytes", Bytes, "JVM live set (class histogram total)");
    /// Native Memory Tracking's committed total.
    JVM_NMT_COMMITTED = Target("jvm.nmt_committed_bytes", Bytes, "JVM native memory committed (NMT)");
    /// `java.nio:type=BufferPool,name=direct` as JFR's
    /// `jdk.DirectBufferStatistics` reads it: native memory the heap does not show.
    JVM_DIRECT_BUFFER_BYTES = Target("jvm.direct_buffer_bytes", Bytes, "direct buffers' memory used (JFR)");
    JVM_DIRECT_BUFFERS = Target("jvm.direct_buffers", Count, "direct buffers alive (JFR)");
    /// After each GC (JFR's `jdk.MetaspaceSummary`): class metadata, outside the heap.
    JVM_METASPACE = Target("jvm.metaspace_used_bytes", Bytes, "Metaspace used after each GC (JFR)");
    /// Loaded minus unloaded (JFR's `jdk.ClassLoadingStatistics`).
    JVM_CLASSES = Target("jvm.classes_loaded", Count, "classes loaded and not unloaded (JFR)");
    JFR_BLOCKED_RATE = Target("jvm.jfr.monitor_blocked_per_s", PerSecond, "monitor entries that blocked (JFR window)");
    JFR_BLOCKED_THREADS = Target("jvm.jfr.monitor_blocked_threads", Count, "threads blocked on monitors, mean over a JFR window");
    JFR_PARK_RATE = Target("jvm.jfr.park_waits_per_s", PerSecond, "park waits outside idle pools: pool, lock, latch (JFR window)");
    JFR_PARKED_THREADS = Target("jvm.jfr.parked_threads", Count, "threads in such park waits, mean over a JFR window");
    JFR_PINNED_THREADS = Target("jvm.jfr.pinned_threads", Count, "virtual threads pinned to their carrier, mean over a JFR window");
    JFR_ALLOC_RATE = Target("jvm.jfr.alloc_bytes_per_s", BytesPerSecond, "allocation rate (JFR allocation samples)");
    JFR_GC_PAUSE = Target("jvm.jfr.gc_pause_ms_per_s", MillisPerSecond, "GC pause time per second (JFR window)");
    DB_BACKENDS_WAITING_LOCK = Target("db.backends_waiting_lock", Count, "database backends waiting for a lock");
    DB_CONNECTIONS_USED_PCT = Target("db.connections_used_pct", PctOfLimit, "database connections in use, % of the usable max_connections");
    DB_OLDEST_XACT_S = Target("db.oldest_xact_s", Seconds, "age of the oldest open database transaction");
    GENERATOR_HOST_CPU = Generator("generator.host_cpu_pct", PctOfHost, "generator host CPU busy");
    GENERATOR_OTHERS_CPU = Generator("generator.others_cpu_pct", PctOfHost, "generator host CPU used by other processes");
    GENERATOR_RSS = Generator("generator.rss_bytes", Bytes, "brunt's RSS");
    GENERATOR_PROBE_LAG = Generator("generator.probe_lag_ms", Millis, "timer probe lateness p99");
    GENERATOR_SCHED_LAG = Generator("generator.sched_lag_ms", Millis, "open-model scheduler lateness");
    GENERATOR_WORKER_BUSY = Generator("generator.worker_busy_pct", PctBusy, "busiest load worker's event-loop busy share");
}

/// `jvm.threads.<state>` (`runnable`, `blocked`, `waiting`, `timed_waiting`), count per dump.
pub const JVM_THREADS_PREFIX: &str = "jvm.threads.";
/// The database collector's series (`collectors/postgres.yaml`).
pub const DB_PREFIX: &str = "db.";
/// Per JFR window (`window:` on the jfr probe), at the window's middle.
pub const JFR_PREFIX: &str = "jvm.jfr.";

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
