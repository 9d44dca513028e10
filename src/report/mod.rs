//! Reports: the run directory's `summary.json` (versioned schema), the
//! terminal summary, and rebuilding both from a run directory
//! (`brunt report DIR`), also one left by an interrupted run.
//!
//! Run directory layout:
//! - `run.json`: metadata written at the start (phases, start time, target, shard);
//! - `profile.yaml`: the profile as resolved (overrides applied);
//! - `latency.hlog`: HdrHistogram interval log, one set of lines per second;
//! - `timeseries.csv`: one row per second and phase;
//! - `summary.json`: written at the end;
//! - `diagnostics/`: collector samples and raw artifacts.

pub mod summary;
pub mod terminal;

pub use summary::{RunMeta, Summary, SUMMARY_SCHEMA};
