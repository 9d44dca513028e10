//! How bad a finding is and what kind it is: one [`Severity`] and one
//! [`FindingKind`] for the diagnosis, `evidence.json` and every reader.
//! Both read leniently (`evidence.json` may come from another tool).

use serde::{Deserialize, Serialize};

/// A finding's severity. The diagnosis grades `info` … `critical`;
/// `evidence.json` speaks `info`, `warning`, `high`, `critical` (the
/// diagnosis's `medium` becomes `warning` there, `low` becomes `info`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", from = "String")]
pub enum Severity {
    /// A name brunt does not know (ranks lowest).
    Unknown,
    Info,
    Low,
    Medium,
    Warning,
    High,
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Unknown => "unknown",
            Severity::Info => "info",
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::Warning => "warning",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }

    /// Higher is worse; `warning` and `medium` rank alike, as do `info` and `low`.
    pub fn rank(self) -> u8 {
        match self {
            Severity::Critical => 4,
            Severity::High => 3,
            Severity::Warning | Severity::Medium => 2,
            Severity::Info | Severity::Low => 1,
            Severity::Unknown => 0,
        }
    }

    /// The name `evidence.json` uses for this grade.
    pub fn for_evidence(self) -> Severity {
        match self {
            Severity::Medium => Severity::Warning,
            Severity::Low => Severity::Info,
            s => s,
        }
    }
}

impl From<String> for Severity {
    fn from(s: String) -> Self {
        match s.to_ascii_lowercase().as_str() {
            "critical" => Severity::Critical,
            "high" | "error" => Severity::High,
            "warning" | "warn" => Severity::Warning,
            "medium" => Severity::Medium,
            "low" => Severity::Low,
            "info" => Severity::Info,
            _ => Severity::Unknown,
        }
    }
}

impl From<&str> for Severity {
    fn from(s: &str) -> Self {
        Severity::from(s.to_string())
    }
}

impl PartialEq<&str> for Severity {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a finding in `evidence.json` is about; another tool's kind is kept as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum FindingKind {
    /// Threads blocked on a lock (a dump's monitor or a JFR recording's).
    Lock,
    /// Threads waiting for a pooled resource (a connection pool).
    Pool,
    /// Goroutines (or threads) waiting on a channel or queue at one site.
    Channel,
    Pinning,
    Deadlock,
    Contention,
    /// Many threads on one stack.
    Cluster,
    ThreadStates,
    HeapAfterGc,
    HotMethods,
    Persistence,
    Other(String),
}

impl FindingKind {
    pub fn as_str(&self) -> &str {
        match self {
            FindingKind::Lock => "lock",
            FindingKind::Pool => "pool",
            FindingKind::Channel => "channel",
            FindingKind::Pinning => "pinning",
            FindingKind::Deadlock => "deadlock",
            FindingKind::Contention => "contention",
            FindingKind::Cluster => "cluster",
            FindingKind::ThreadStates => "thread_states",
            FindingKind::HeapAfterGc => "heap_after_gc",
            FindingKind::HotMethods => "hot_methods",
            FindingKind::Persistence => "persistence",
            FindingKind::Other(s) => s,
        }
    }

    /// Waiting on something shared: a lock, a pool, a channel, a pinned carrier, a deadlock.
    pub fn is_lock_like(&self) -> bool {
        matches!(
            self,
            FindingKind::Lock
                | FindingKind::Pool
                | FindingKind::Channel
                | FindingKind::Pinning
                | FindingKind::Deadlock
                | FindingKind::Contention
        )
    }
}

impl From<String> for FindingKind {
    fn from(s: String) -> Self {
        let known = match s.as_str() {
            "lock" => Some(FindingKind::Lock),
            "pool" => Some(FindingKind::Pool),
            "channel" => Some(FindingKind::Channel),
            "pinning" => Some(FindingKind::Pinning),
            "deadlock" => Some(FindingKind::Deadlock),
            "contention" => Some(FindingKind::Contention),
            "cluster" => Some(FindingKind::Cluster),
            "thread_states" => Some(FindingKind::ThreadStates),
            "heap_after_gc" => Some(FindingKind::HeapAfterGc),
            "hot_methods" => Some(FindingKind::HotMethods),
            "persistence" => Some(FindingKind::Persistence),
            _ => None,
        };
        known.unwrap_or(FindingKind::Other(s))
    }
}

impl From<&str> for FindingKind {
    fn from(s: &str) -> Self {
        FindingKind::from(s.to_string())
    }
}

impl From<FindingKind> for String {
    fn from(k: FindingKind) -> Self {
        match k {
            FindingKind::Other(s) => s,
            k => k.as_str().to_string(),
        }
    }
}

impl PartialEq<&str> for FindingKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::fmt::Display for FindingKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_unknown_ones_rank_lowest() {
        for s in ["info", "low", "medium", "warning", "high", "critical"] {
            let v: Severity = serde_json::from_value(s.into()).expect("severity");
            assert_eq!(serde_json::to_value(v).expect("json"), s);
        }
        let odd: Severity = serde_json::from_value("bogus".into()).expect("lenient");
        assert_eq!(odd.rank(), 0);
        assert_eq!(Severity::from("ERROR".to_string()).rank(), 3);
        let k: FindingKind = serde_json::from_value("regression".into()).expect("kind");
        assert_eq!(serde_json::to_value(&k).expect("json"), "regression");
        assert!(FindingKind::from("lock".to_string()).is_lock_like());
    }
}
