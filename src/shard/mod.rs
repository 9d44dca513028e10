//! Beyond one machine: putting sharded runs back together and running shards
//! on Kubernetes.
//!
//! A sharded run is N processes (`brunt run --shard i/N --start-at T`), each
//! taking 1/N of the load and writing its own run directory. This module owns
//! what happens around them, not the load itself (the engine owns `Shard`):
//! - [`merge`]: `brunt merge DIR… --out DIR` — checks the directories belong
//!   together, adds their interval histograms second by second (HdrHistogram
//!   `add`, never averaged percentiles), sums the time series, measures the
//!   clock skew between shards and re-judges the budgets on the union;
//! - [`k8s`]: `brunt k8s PROFILE --shards N --image IMAGE` — a ready-to-apply
//!   manifest (ConfigMap + Indexed Job) and the commands to gather and merge.

pub mod k8s;
pub mod merge;

use std::path::PathBuf;

use thiserror::Error;

pub use crate::judge::summary::SKEW_WARN_MS;
pub use crate::rundir::{MergedFrom, ShardStart};
pub use merge::{merge, MergeResult};

#[derive(Debug, Error)]
pub enum ShardError {
    /// The directories do not belong to one sharded run (bad input).
    #[error("{0}")]
    Mismatch(String),
    /// A shard's file is missing or unreadable (bad input).
    #[error("{path}: {message}")]
    Read { path: PathBuf, message: String },
    /// An argument of `brunt k8s` is unusable (bad input).
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Profile(#[from] crate::profile::ProfileError),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Rundir(#[from] crate::rundir::RundirError),
}

impl ShardError {
    /// Exit 2 (bad input) rather than 1.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            ShardError::Mismatch(_)
                | ShardError::Read { .. }
                | ShardError::Invalid(_)
                | ShardError::Profile(_)
        )
    }
}
