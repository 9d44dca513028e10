//! Reports: the run directory's `summary.json` (versioned schema), the
//! terminal summary, and rebuilding both from a run directory
//! (`brunt report DIR`), also one left by an interrupted run.
//!
//! Run directory layout:
//! - `run.json`: metadata written at the start (phases, start time, target, shard);
//! - `profile.yaml`: the profile as resolved (overrides applied);
//! - `latency.hlog`: HdrHistogram interval log, one set of lines per second;
//! - `timeseries.csv`: one row per second and phase;
//! - `summary.json`: written at the end, with the shape's [`verdicts`];
//! - `report.html`: the same as a self-contained page with charts ([`html`]);
//! - `diagnostics/`: collector samples and raw artifacts; `diagnostics/evidence.json`
//!   is the server-side evidence the verdicts read ([`evidence`]).
//!
//! `brunt compare A B` puts two run directories side by side ([`compare`]).

pub mod analysis;
pub mod compare;
pub mod evidence;
pub mod html;
pub mod summary;
pub mod terminal;
pub mod verdicts;

pub use summary::{RunMeta, Summary, SUMMARY_SCHEMA};
