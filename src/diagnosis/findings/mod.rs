//! Findings: what the parsed dumps, recordings and pinning traces mean for
//! the user — thread-state counts per pool, lock contention with its holder,
//! pool-borrow waits, pinning sites, deadlocks, identical-stack clusters, and
//! which contention persists across dumps. Each finding has a severity, a
//! one-line summary and its evidence (file, dump time, thread names).
//!
//! | module | owns |
//! |---|---|
//! | `finding` | [`Finding`], [`Severity`], [`Evidence`], [`Detail`], [`Options`] |
//! | `dump` | [`dump_findings`]: all findings of one dump (states, clusters, and the three below) |
//! | `contention` | lock contention: waiters per lock, holder, pool |
//! | `goroutine` | a Go goroutine dump's findings: mutex and channel waits by site |
//! | `pools` | [`pool_of`], [`pool_wait_kind`] and pool-borrow waits |
//! | `deadlock` | [`wait_cycles`] and reported deadlocks |
//! | `persistence` | [`persistence`] across dumps |
//! | `pin_trace` | [`pinning_findings`] from pinning traces |
//! | `recording` | [`jfr_findings`] from JFR recordings |
//! | `wait_profile` | [`profile_findings`] from Go's mutex and block profiles, per phase and site |

mod contention;
mod deadlock;
mod dump;
mod finding;
mod goroutine;
mod persistence;
mod pin_trace;
mod pools;
mod recording;
mod wait_profile;

pub use deadlock::wait_cycles;
pub use dump::dump_findings;
pub use finding::{Detail, Evidence, Finding, Options, PoolPattern, PoolStates, Severity};
pub use persistence::persistence;
pub use pin_trace::pinning_findings;
pub use pools::{app_frame, pool_of, pool_wait_kind};
pub use recording::jfr_findings;
pub use wait_profile::profile_findings;
