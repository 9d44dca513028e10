//! The request hot path: one connection per lane, pre-built requests, TLS
//! through rustls with the ring provider.
//!
//! Which client carries a connection (one rule, decided per connection):
//! - HTTP/2 (`http: "2"`, or `auto` when ALPN chose `h2`): hyper's
//!   `client::conn::http2` (the `h2` crate).
//! - HTTP/1.1, cleartext or TLS: brunt's own codec ([`super::h1`]: the
//!   request's bytes built once, the answer parsed with `httparse`, inline in
//!   the lane's task), unless a request of the mix is one it does not take
//!   (`CONNECT`, `Upgrade`): then hyper's `client::conn::http1` for the run.
//!
//! HTTP/2: lanes share connections, `load.streams_per_connection` lanes per
//! connection ([`Pool`]), so each lane is one stream and a due request that
//! finds every stream busy waits for one, keeping its due time. Over TLS the
//! protocol is chosen by ALPN (`h2` only for `http: "2"`, `h2` then
//! `http/1.1` for `auto`); over cleartext `"2"` is h2c with prior knowledge.
//!
//! Outcome rules for broken connections (one rule, whatever the timing):
//! - `connect_error`: no connection was made — refused, unreachable, the
//!   TLS handshake rejected (certificate, protocol).
//! - `reset`: the target accepted the connection and then reset or closed it
//!   before a full answer, at whatever point the client notices: inside
//!   `connect()` (ECONNRESET: the SYN was answered, then the RST came), in
//!   the TLS handshake, while writing the request or reading the answer; an
//!   HTTP/2 stream reset (`RST_STREAM`) or a GOAWAY with an error code.
//! - HTTP/2 streams the server says it did not process — `REFUSED_STREAM`,
//!   or above a graceful GOAWAY's last stream id — are sent again once on a
//!   new connection (RFC 9113 §8.7: safe to retry); refused twice, `reset`.
//! - An HTTP/1.1 request on a kept-alive connection the server had closed
//!   (its idle timeout) is sent again once on a new connection: through
//!   hyper when the request never left (any method); through the codec when
//!   not one byte of an answer came back before the close or reset (as curl
//!   does: the close crossed the request) — but then the server may have
//!   processed it, so only idempotent methods go again (RFC 9110 §9.2.2),
//!   unless the request says `retry: always`; `retry: never` sends nothing
//!   twice. A request not sent again is `reset`.
//!
//! Its jobs, a file each: the target and TLS ([`target`]), the requests
//! compiled once ([`request`]), connections and the HTTP/2 pool
//! ([`connect`]), outcome classification ([`classify`]) and the exchanges
//! over the codec, hyper's HTTP/1.1 and HTTP/2 ([`exchange`]).

mod classify;
mod connect;
mod exchange;
mod request;
mod target;

use thiserror::Error;

pub(crate) use classify::is_reset;
pub use connect::{LaneConn, Pool};
pub use exchange::Answer;
pub use request::{prepare, prepare_mix, prepare_steps, Extractor, Prepared};
pub(crate) use target::tls_roots;
pub use target::{target_from, Target};

#[derive(Debug, Error)]
pub enum ClientError {
    #[error("target url `{0}`: {1}")]
    Url(String, String),
    #[error("request {0}: {1}")]
    Request(String, String),
    #[error("TLS setup: {0}")]
    Tls(String),
    #[error(transparent)]
    Template(#[from] super::template::BindError),
    #[error(transparent)]
    Grpc(#[from] super::grpc::GrpcError),
}
