//! The parsed form of a thread dump, shared by the text and JSON parsers and
//! read by the findings: threads, frames, lock lines, deadlock cycles.

use serde::{Deserialize, Serialize};

/// `java.lang.Thread.State`, plus `Unknown` for threads printed without one
/// (JVM-internal threads, JDK 21 JSON dumps).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ThreadState {
    New,
    Runnable,
    Blocked,
    Waiting,
    TimedWaiting,
    Terminated,
    Unknown,
}

impl ThreadState {
    pub fn parse(word: &str) -> ThreadState {
        match word {
            "NEW" => ThreadState::New,
            "RUNNABLE" => ThreadState::Runnable,
            "BLOCKED" => ThreadState::Blocked,
            "WAITING" => ThreadState::Waiting,
            "TIMED_WAITING" => ThreadState::TimedWaiting,
            "TERMINATED" => ThreadState::Terminated,
            _ => ThreadState::Unknown,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            ThreadState::New => "NEW",
            ThreadState::Runnable => "RUNNABLE",
            ThreadState::Blocked => "BLOCKED",
            ThreadState::Waiting => "WAITING",
            ThreadState::TimedWaiting => "TIMED_WAITING",
            ThreadState::Terminated => "TERMINATED",
            ThreadState::Unknown => "UNKNOWN",
        }
    }
    /// Waiting of any kind: the states a pool borrower or lock waiter can be in.
    pub fn is_waiting(self) -> bool {
        matches!(
            self,
            ThreadState::Blocked | ThreadState::Waiting | ThreadState::TimedWaiting
        )
    }
}

/// The kind of a `- …` line under a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LockKind {
    /// `- waiting to lock <a>`: BLOCKED on monitor entry.
    WaitingToLock,
    /// `- waiting to re-lock in wait() <a>`: woken from wait, re-entering.
    WaitingToRelock,
    /// `- locked <a>`
    Locked,
    /// `- waiting on <a>`: inside Object.wait, the monitor is released.
    WaitingOn,
    /// `- parking to wait for  <a>`: LockSupport.park on a j.u.c object.
    ParkingFor,
    /// `- eliminated <a>`: lock elided by the JIT.
    Eliminated,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockLine {
    pub kind: LockKind,
    /// `0x…` or None (`<no object reference available>`, `<owner is scalar replaced>`).
    pub addr: Option<String>,
    pub class: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    /// `pkg.Class.method`, module prefix (`java.base@21/`, `app//`) removed.
    pub method: String,
    /// What stood in parentheses: `Inventory.java:14`, `Native Method`, `Unknown Source`.
    pub location: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locks: Vec<LockLine>,
}

impl Frame {
    pub fn display(&self) -> String {
        if self.location.is_empty() {
            self.method.clone()
        } else {
            format!("{}({})", self.method, self.location)
        }
    }
    /// `Inventory.reserve(Inventory.java:14)`: class simple name, method, location.
    pub fn short(&self) -> String {
        let mut parts = self.method.rsplitn(3, '.');
        let m = parts.next().unwrap_or_default();
        let c = parts.next().unwrap_or_default();
        let name = if c.is_empty() {
            m.to_string()
        } else {
            format!("{c}.{m}")
        };
        if self.location.is_empty() {
            name
        } else {
            format!("{name}({})", self.location)
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadInfo {
    pub name: String,
    /// Java thread id (`#12`); None for JVM-internal threads.
    pub id: Option<u64>,
    pub daemon: bool,
    pub state: Option<ThreadState>,
    /// True when `state` was inferred from the top frames (JDK 21 JSON dumps
    /// print none): parked, sleeping, in `Object.wait`, or in a native method.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub state_inferred: bool,
    /// What follows the state: `on object monitor`, `parking`, `sleeping`.
    pub state_detail: Option<String>,
    /// The header's trailing words: `waiting for monitor entry`, `runnable`, `in Object.wait()`.
    pub header_state: String,
    /// True for a virtual thread (JSON dumps only).
    #[serde(default)]
    pub is_virtual: bool,
    /// `Carrying virtual thread #N` (JDK 21 text dumps) or the carrier of a virtual thread.
    pub carrying: Option<u64>,
    pub carrier: Option<u64>,
    /// JVM-internal thread: no `#id`, no stack.
    #[serde(default)]
    pub internal: bool,
    /// Waiting for work, as the runtime's own parser decided (a goroutine
    /// reading an idle keep-alive connection, a worker on an empty channel):
    /// idle, never contention. JVM dumps leave it false (their idle stacks
    /// are told by frame, see `jfr::is_idle_stack`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub idle: bool,
    pub frames: Vec<Frame>,
    /// `Locked ownable synchronizers` (ReentrantLock owners appear only here).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ownable_synchronizers: Vec<LockLine>,
}

impl ThreadInfo {
    pub fn state(&self) -> ThreadState {
        self.state.unwrap_or(ThreadState::Unknown)
    }
    pub fn locks(&self) -> impl Iterator<Item = &LockLine> {
        self.frames.iter().flat_map(|f| f.locks.iter())
    }
    /// Monitors this thread holds: `- locked <a>` minus those it released
    /// by `Object.wait` (`- waiting on <a>` for the same address).
    pub fn held_monitors(&self) -> Vec<&LockLine> {
        let released: Vec<&str> = self
            .locks()
            .filter(|l| l.kind == LockKind::WaitingOn)
            .filter_map(|l| l.addr.as_deref())
            .collect();
        self.locks()
            .filter(|l| l.kind == LockKind::Locked)
            .filter(|l| l.addr.as_deref().is_some_and(|a| !released.contains(&a)))
            .collect()
    }
    /// The monitor this thread is blocked entering, if any.
    pub fn waiting_to_lock(&self) -> Option<&LockLine> {
        self.locks()
            .find(|l| matches!(l.kind, LockKind::WaitingToLock | LockKind::WaitingToRelock))
    }
    pub fn parked_on(&self) -> Option<&LockLine> {
        self.locks().find(|l| l.kind == LockKind::ParkingFor)
    }
}

/// One edge of a deadlock cycle as the JVM reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeadlockEdge {
    pub thread: String,
    /// Object address (`0x…`) of the monitor or synchronizer it waits for.
    pub waiting_for: Option<String>,
    pub lock_class: Option<String>,
    pub held_by: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deadlock {
    pub edges: Vec<DeadlockEdge>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DumpFormat {
    Text,
    Json,
    /// A Go goroutine dump (`/debug/pprof/goroutine?debug=2`).
    Goroutine,
    /// A CPython `py-spy dump --native`.
    PySpy,
}

/// One thread dump (a file can hold several).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadDump {
    pub source: String,
    /// Position within its file (0-based).
    pub index: usize,
    pub format: DumpFormat,
    /// The dump time as printed (`2026-11-30 11:33:55`, or ISO-8601 in JSON).
    pub time: Option<String>,
    /// The same as Unix seconds; text-dump times (no zone) are read as this machine's local time.
    pub time_unix: Option<f64>,
    /// `Full thread dump OpenJDK 64-Bit Server VM (21.0.8+9-LTS …)` or JSON `runtimeVersion`.
    pub jvm: Option<String>,
    pub pid: Option<u32>,
    pub threads: Vec<ThreadInfo>,
    pub deadlocks: Vec<Deadlock>,
    /// Lines that could not be read, truncation: the dump is partial.
    pub warnings: Vec<String>,
}

impl ThreadDump {
    pub fn new(source: &str, index: usize, format: DumpFormat) -> Self {
        ThreadDump {
            source: source.to_string(),
            index,
            format,
            time: None,
            time_unix: None,
            jvm: None,
            pid: None,
            threads: vec![],
            deadlocks: vec![],
            warnings: vec![],
        }
    }
}

/// Removes a module prefix (`java.base@21.0.8/`, `app//`, `java.base/`) from
/// a frame's method or location. A hidden class (`Foo$$Lambda/0x…`) keeps its
/// slash: module names never contain `$`.
pub fn strip_module(text: &str) -> &str {
    match text.find('/') {
        Some(i) if !text.get(..i).unwrap_or("").contains('$') => {
            text.get(i + 1..).unwrap_or(text).trim_start_matches('/')
        }
        _ => text,
    }
}

/// Splits `pkg.Class.method(Loc)` into method and location.
pub fn split_frame(text: &str) -> Frame {
    let text = text.trim();
    let (m, loc) = match text.find('(') {
        Some(i) => (
            text.get(..i).unwrap_or(text),
            text.get(i + 1..)
                .map(|r| r.strip_suffix(')').unwrap_or(r))
                .unwrap_or(""),
        ),
        None => (text, ""),
    };
    // Module/location info like `java.base@21.0.8/Native Method` also lands in parentheses.
    let loc = strip_module(loc);
    Frame {
        method: strip_module(m).to_string(),
        location: loc.to_string(),
        locks: vec![],
    }
}
