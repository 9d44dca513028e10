//! What a finding is: severity, summary, stable key, evidence and the
//! kind-specific detail; and the options that tune how findings are made.

use std::collections::BTreeMap;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::diagnosis::model::{DeadlockEdge, ThreadDump};
use crate::diagnosis::PhaseWindow;
use crate::vocab::findings::FindingKind;
pub use crate::vocab::findings::Severity;

/// Where a finding was seen: the run correlates `time_unix` with its phases.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub file: String,
    /// Dump index within the file (several SIGQUIT dumps in one log).
    pub dump_index: Option<usize>,
    /// As printed in the source.
    pub time: Option<String>,
    pub time_unix: Option<f64>,
    /// Load phase name, set by [`crate::diagnosis::Analysis::tag_phases`].
    pub phase: Option<String>,
    pub threads: Vec<String>,
}

/// A thread pool's state counts (pool = thread-name prefix).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolStates {
    /// `http-worker-*`, `ForkJoinPool-1-worker-*`, or a single thread's name.
    pub pool: String,
    pub total: usize,
    pub states: BTreeMap<String, usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Detail {
    ThreadStates {
        total: usize,
        states: BTreeMap<String, usize>,
        pools: Vec<PoolStates>,
        /// Threads whose state was inferred from their top frames.
        #[serde(default)]
        inferred: usize,
    },
    LockContention {
        /// `monitor` (synchronized) or `ownable` (ReentrantLock & co).
        lock_type: String,
        address: String,
        class: String,
        holder: Option<String>,
        holder_state: Option<String>,
        holder_stack: Vec<String>,
        waiters: Vec<String>,
        /// Waiters' first application frame → count.
        entry_frames: Vec<(String, usize)>,
        /// The pool most waiters belong to and its size.
        pool: Option<String>,
        pool_size: Option<usize>,
    },
    PoolWait {
        /// `hikari`, `commons-pool2`, `dbcp2`, `c3p0`, `tomcat-jdbc`, `httpclient4`, `httpclient5`, or a user pattern's name.
        pool_kind: String,
        waiters: Vec<String>,
        /// Calling application frame → count.
        app_frames: Vec<(String, usize)>,
    },
    Pinning {
        site: String,
        /// Frame holding the monitor (`<== monitors:N`), when known.
        monitor_frame: Option<String>,
        count: u64,
        total_ms: Option<f64>,
        stack: Vec<String>,
        /// `trace` (tracePinnedThreads: sites only) or `jfr` (counts and time).
        from: String,
    },
    Deadlock {
        cycle: Vec<DeadlockEdge>,
    },
    /// Goroutines waiting on a channel (`chan send`, `chan receive`,
    /// `select`) at one site, outside the idle cases (a worker loop waiting
    /// for work is idle).
    ChannelWait {
        /// The wait reason: `chan send`, `chan receive`, `select`.
        op: String,
        site: String,
        waiters: Vec<String>,
        /// The longest wait the dump printed, in minutes (`[chan send, 3 minutes]`).
        #[serde(default)]
        longest_min: Option<u64>,
    },
    /// Time waited at one site from a runtime's contention profiles (Go's
    /// mutex and block profiles, diffed between consecutive fetches).
    WaitProfile {
        /// `go`.
        runtime: String,
        /// The probe the profiles came from (`mutex`, `block`).
        profile: String,
        /// `lock`, `channel` or `other`.
        wait: String,
        /// `sync.(*Mutex).Lock`, `chan send`, `chan receive`, `select`.
        primitive: String,
        site: String,
        /// The stacks are the holder's (the mutex profile records the unlock).
        held: bool,
        count: i64,
        waited_s: f64,
        /// Seconds the profiles' differences spanned (none: one profile,
        /// counted since the process started).
        span_s: Option<f64>,
        /// `waited_s / span_s`: the mean number of goroutines waiting there.
        per_s: Option<f64>,
        /// The heaviest stack, leaf first.
        stack: Vec<String>,
    },
    StackCluster {
        state: String,
        count: usize,
        stack: Vec<String>,
        idle: bool,
    },
    JfrContention {
        event: String,
        class: Option<String>,
        site: String,
        count: u64,
        total_ms: f64,
        max_ms: f64,
        previous_owners: Vec<(String, u64)>,
        stack: Vec<String>,
    },
    HeapAfterGc {
        samples: usize,
        first_bytes: u64,
        last_bytes: u64,
        max_bytes: u64,
    },
    HotMethods {
        /// Top frames as sampled (JDK frames included).
        methods: Vec<(String, u64)>,
        #[serde(default)]
        samples: u64,
        /// Top application frames (self), with the JDK frame above them.
        #[serde(default)]
        app_self: Vec<crate::diagnosis::jfr::HotFrame>,
        /// Application frames anywhere in the stack (total).
        #[serde(default)]
        app_total: Vec<(String, u64)>,
    },
    Persistence {
        /// The key of the contention followed across dumps.
        subject: String,
        seen_in: usize,
        of_dumps: usize,
        same_holder: bool,
        persistent: bool,
    },
}

impl Detail {
    /// The kind `evidence.json` files a finding with this detail under.
    pub fn kind(&self) -> FindingKind {
        match self {
            Detail::ThreadStates { .. } => FindingKind::ThreadStates,
            Detail::LockContention { .. } | Detail::JfrContention { .. } => FindingKind::Lock,
            Detail::PoolWait { .. } => FindingKind::Pool,
            Detail::ChannelWait { .. } => FindingKind::Channel,
            Detail::WaitProfile { wait, .. } => match wait.as_str() {
                "lock" => FindingKind::Lock,
                "channel" => FindingKind::Channel,
                _ => FindingKind::Contention,
            },
            Detail::Pinning { .. } => FindingKind::Pinning,
            Detail::Deadlock { .. } => FindingKind::Deadlock,
            Detail::StackCluster { .. } => FindingKind::Cluster,
            Detail::HeapAfterGc { .. } => FindingKind::HeapAfterGc,
            Detail::HotMethods { .. } => FindingKind::HotMethods,
            Detail::Persistence { .. } => FindingKind::Persistence,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub severity: Severity,
    pub summary: String,
    /// Stable identity of what was found (same monitor/pool/site across dumps).
    pub key: String,
    pub evidence: Evidence,
    pub detail: Detail,
}

/// A user-supplied pool recogniser: a regex matched against each frame (`pkg.Class.method(Loc)`).
#[derive(Debug, Clone)]
pub struct PoolPattern {
    pub name: String,
    pub frame: Regex,
}

/// Tuning for the findings.
#[derive(Debug, Clone)]
pub struct Options {
    pub pool_patterns: Vec<PoolPattern>,
    /// Smallest identical-stack cluster reported.
    pub cluster_min: usize,
    /// Frames compared for identical stacks.
    pub cluster_depth: usize,
    /// Load phases: findings are tagged with them and JFR sites split by them.
    pub phases: Vec<PhaseWindow>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            pool_patterns: vec![],
            cluster_min: 3,
            cluster_depth: 12,
            phases: vec![],
        }
    }
}

/// How bad `n` threads waiting on one lock or pool is: 10 or more high,
/// 3 or more medium.
pub(super) fn waiting_severity(n: usize) -> Severity {
    if n >= 10 {
        Severity::High
    } else if n >= 3 {
        Severity::Medium
    } else {
        Severity::Low
    }
}

/// `1 thread`, `3 threads`.
pub(super) fn threads(n: usize) -> String {
    format!("{n} thread{}", if n == 1 { "" } else { "s" })
}

/// Evidence from dump `d`, naming `threads`.
pub(super) fn dump_evidence(d: &ThreadDump, threads: Vec<String>) -> Evidence {
    Evidence {
        file: d.source.clone(),
        dump_index: Some(d.index),
        time: d.time.clone(),
        time_unix: d.time_unix,
        phase: None,
        threads,
    }
}
