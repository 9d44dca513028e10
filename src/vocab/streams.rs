//! What a run's server-streaming gRPC calls brought, per request of the
//! mix: the engine tallies, `run` writes `streams.json`
//! ([`crate::vocab::files::STREAMS`]), `rundir` reads it and the judge
//! copies it into `summary.json`'s `streams`. The whole stream's latency is
//! the request's own (its outcome's).

use serde::{Deserialize, Serialize};

/// One server-streaming request of the mix over the whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamRow {
    /// The request's name, as the mix names it.
    pub request: String,
    /// Streams answered (any status).
    pub streams: u64,
    /// Messages they brought, in all.
    pub messages: u64,
    /// `messages / streams`.
    pub messages_per_stream: f64,
    /// From the send to the first message's first byte, over the streams that had one.
    pub first_message: FirstMessage,
}

/// Time to first message, milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FirstMessage {
    pub count: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}
