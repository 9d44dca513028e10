//! The database collector's row (`diagnostics/postgres.jsonl`): one
//! [`DbSample`] per sample, as the `pg-json` parser stores it and the
//! diagnosis reads it back. Statement text in it is already normalised
//! (literals replaced by `?`, length-bounded): a row never holds a
//! parameter value. Reading is lenient like every stream (a missing figure
//! is `None` or empty, never a zero that was not seen).

use serde::{Deserialize, Serialize};

/// One sample of the database's activity.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DbSample {
    /// `max_connections`.
    pub max_connections: Option<u64>,
    /// `superuser_reserved_connections`: slots ordinary roles cannot use.
    pub reserved_connections: Option<u64>,
    /// Client backends, the collector's own left out.
    pub connections: Option<u64>,
    /// Is `pg_stat_statements` installed (in the collector's database)?
    pub pg_stat_statements: Option<bool>,
    /// Age of the oldest open transaction, seconds.
    pub oldest_xact_s: Option<f64>,
    /// Age of the oldest running statement, seconds.
    pub oldest_query_s: Option<f64>,
    /// Client backends grouped by database, application, state and wait.
    pub backends: Vec<DbBackends>,
    /// Backends waiting for a lock, each with the pids blocking it.
    pub lock_waits: Vec<DbLockWait>,
    /// The backends some waiter is blocked by.
    pub blockers: Vec<DbBackend>,
    /// Roles and databases with a connection limit of their own
    /// (`rolconnlimit`, `datconnlimit`) and their connections.
    pub limits: Vec<DbLimit>,
    /// Backends idle inside an open transaction, oldest first.
    pub idle_in_xact: Vec<DbBackend>,
    /// `pg_stat_statements` totals (cumulative since its last reset); `None`
    /// without the extension.
    pub statements: Option<Vec<DbStatement>>,
}

/// A group of client backends alike.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DbBackends {
    pub db: Option<String>,
    pub app: Option<String>,
    /// `active`, `idle`, `idle in transaction`, …
    pub state: Option<String>,
    /// `wait_event_type` (`Lock`, `LWLock`, `IO`, `Client`, …).
    pub wait_type: Option<String>,
    /// `wait_event` (`transactionid`, `tuple`, `ClientRead`, …).
    pub wait: Option<String>,
    pub n: u64,
}

/// One backend waiting for a lock.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DbLockWait {
    pub pid: u32,
    pub db: Option<String>,
    pub app: Option<String>,
    /// `pg_locks.locktype` of the lock waited for (`transactionid` and
    /// `tuple` are row locks, `relation` a table lock).
    pub locktype: Option<String>,
    pub mode: Option<String>,
    /// The table: the lock's own, or one the waiter holds (row locks name none).
    pub relation: Option<String>,
    /// The waiting statement, normalised.
    pub query: Option<String>,
    /// Seconds since the backend's state changed (how long it has waited).
    pub wait_s: Option<f64>,
    /// `pg_blocking_pids()`: holders and waiters ahead in the queue.
    pub blocked_by: Vec<u32>,
}

/// One backend as a blocker or an idle-in-transaction holder.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DbBackend {
    pub pid: u32,
    pub db: Option<String>,
    pub app: Option<String>,
    pub state: Option<String>,
    pub wait_type: Option<String>,
    pub wait: Option<String>,
    /// Age of its transaction, seconds.
    pub xact_s: Option<f64>,
    /// Seconds in its current state.
    pub state_s: Option<f64>,
    /// Its current (active) or last statement, normalised.
    pub query: Option<String>,
}

/// A role's or a database's own connection limit and its use.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DbLimit {
    /// `role` or `database`.
    pub kind: String,
    pub name: String,
    pub conn_limit: u64,
    pub used: u64,
}

/// One statement's `pg_stat_statements` totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DbStatement {
    /// `queryid`.
    pub id: String,
    /// Normalised text (the extension's own, `$1` for parameters).
    pub query: String,
    pub calls: f64,
    pub total_ms: f64,
    pub rows: f64,
}

impl DbSample {
    /// Share of the usable connection slots in use (0–100): reserved
    /// superuser slots are not the application's.
    pub fn connections_used_pct(&self) -> Option<f64> {
        let max = self.max_connections? as f64 - self.reserved_connections.unwrap_or(0) as f64;
        let used = self.connections? as f64;
        (max >= 1.0).then(|| 100.0 * used / max)
    }

    /// Backends waiting for a lock.
    pub fn waiting_lock(&self) -> u64 {
        self.lock_waits.len() as u64
    }
}

/// What the database showed in one phase, as `evidence.json` (`database`),
/// `summary.json` and the report's database section carry it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DbPhase {
    pub phase: String,
    /// Samples taken in the phase.
    pub samples: u64,
    /// Most backends waiting for a lock in one sample.
    pub max_waiting_lock: u64,
    /// Highest share of the usable connections in use (0–100).
    pub max_connections_used_pct: Option<f64>,
    pub max_connections: Option<u64>,
    /// Oldest open transaction seen, seconds.
    pub max_oldest_xact_s: Option<f64>,
    /// Non-idle backends by `wait_event_type:wait_event` (`CPU` when not
    /// waiting), mean per sample, most first.
    pub top_waits: Vec<DbWait>,
    /// The worst blocking chain of the phase, as its finding says it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock_chain: Option<String>,
    /// `pg_stat_statements` in the phase (deltas), most time first; `None`
    /// when the extension is absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub statements: Option<Vec<DbStatementDelta>>,
}

/// Backends in one wait, mean per sample.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DbWait {
    pub wait: String,
    pub backends: f64,
}

/// One statement's work within a phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DbStatementDelta {
    pub query: String,
    pub calls: f64,
    pub total_ms: f64,
    pub mean_ms: f64,
    pub rows: f64,
}
