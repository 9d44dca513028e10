//! What the target's threads were doing, as plain data: made by the
//! diagnosis (per thread dump, and from JFR per load phase), carried by the
//! evidence (`evidence.json`'s `threads`) and tabulated per phase by the
//! judge. Here because all three speak it and none of them owns it.

use serde::{Deserialize, Serialize};

/// One dump's application threads, each counted once: parked in a pool
/// borrow first, then BLOCKED, then idle (waiting for work: executor queues,
/// timers, selectors), then by state. Idle waits are not contention.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Activity {
    pub threads: usize,
    pub runnable: usize,
    pub blocked: usize,
    /// Waiting to borrow from a connection/object pool.
    pub in_pool: usize,
    /// Waiting on a channel or queue (Go: `chan send`/`receive`, `select`
    /// outside a worker loop waiting for work).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub in_channel: usize,
    /// WAITING / TIMED_WAITING, not idle and not in a pool (lock parks, sleeps, I/O waits).
    pub waiting: usize,
    pub idle: usize,
    /// NEW, TERMINATED, no state printed, or no Java frame (JVM service
    /// threads such as compiler threads).
    pub other: usize,
    /// The lock with the most waiters in this dump.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_lock: Option<LockTop>,
    /// The pool with the most borrowers waiting in this dump.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_pool: Option<PoolTop>,
}

impl Activity {
    /// Threads held up by other threads: BLOCKED, or parked on a pool, a
    /// channel or a lock (a `monitor` or Go `mutex` waiter is BLOCKED already).
    pub fn contended(&self) -> usize {
        let lock_parked = self
            .top_lock
            .as_ref()
            .filter(|l| !matches!(l.lock_type.as_str(), "monitor" | "mutex"))
            .map_or(0, |l| l.waiters);
        self.blocked + self.in_pool + self.in_channel + lock_parked
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A contended lock: `monitor` (synchronized), `ownable` (ReentrantLock &
/// co) or `mutex` (Go's `sync.Mutex` / `sync.RWMutex`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockTop {
    pub lock_type: String,
    pub class: String,
    pub holder: Option<String>,
    pub waiters: usize,
}

/// A pool borrowers wait for: `hikari`, `commons-pool2`, … or a user pattern's name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolTop {
    pub pool: String,
    pub waiters: usize,
}

/// The JFR waits of one load phase, summed over every recording covering it;
/// idle waits (threads parked waiting for work) left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JfrPhase {
    pub phase: String,
    /// Seconds of the phase some recording covered.
    pub covered_s: f64,
    pub phase_s: f64,
    /// `jdk.JavaMonitorEnter` events (blocked entering a monitor, over JFR's threshold).
    pub monitor_entries: u64,
    pub monitor_ms: f64,
    /// The monitor class with the most time blocked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_monitor: Option<JfrWait>,
    /// Park and `Object.wait` sites by total time, most first (a few).
    #[serde(default)]
    pub waits: Vec<JfrWait>,
}

/// Events of one kind at one site (or on one monitor class).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JfrWait {
    /// `jdk.JavaMonitorEnter`, `jdk.ThreadPark`, `jdk.JavaMonitorWait`.
    pub event: String,
    pub class: Option<String>,
    pub site: String,
    pub count: u64,
    pub total_ms: f64,
}
