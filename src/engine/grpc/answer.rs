//! A call's answer: its `grpc-status` (in the trailers, or in the headers
//! of a trailers-only answer) decides the class, and a server stream's
//! messages are counted as they come (the first one's arrival kept).

use std::time::Instant;

use bytes::Buf;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{HeaderMap, Response};

use crate::metrics::errors::{Failure, What};
use crate::metrics::Class;

/// How a call ended: its class, whether a shed answer said when to come
/// back, and what went wrong (the errors table's row).
pub struct Reply {
    pub class: Class,
    pub retry_after: bool,
    pub failure: Option<Failure>,
}

impl Reply {
    fn failed(class: Class, failure: Failure) -> Reply {
        Reply {
            class,
            retry_after: false,
            failure: Some(failure),
        }
    }
}

/// What a stream brought: its messages and when the first one began.
#[derive(Debug, Clone, Copy, Default)]
pub struct Streamed {
    pub messages: u32,
    pub first: Option<Instant>,
}

/// Read the whole answer. `Err`: the stream broke (the caller classifies
/// hyper's error as for any HTTP/2 exchange).
pub async fn read(resp: Response<Incoming>) -> Result<(Reply, Streamed), hyper::Error> {
    let status = resp.status().as_u16();
    let (head, mut body) = resp.into_parts();
    let mut got = Streamed::default();
    let mut frames = Frames::default();
    let mut trailers = None;
    while let Some(f) = body.frame().await {
        let f = f?;
        match f.into_data() {
            Ok(mut d) => {
                if got.first.is_none() && d.has_remaining() {
                    got.first = Some(Instant::now());
                }
                got.messages += frames.feed(&mut d);
            }
            Err(f) => {
                if let Ok(t) = f.into_trailers() {
                    trailers = Some(t);
                }
            }
        }
    }
    if status != 200 {
        // Not a gRPC answer (a proxy's, or an HTTP server's): its HTTP status.
        let class = match status {
            503 | 429 => Class::Shed,
            _ => Class::HttpError,
        };
        let failure = Failure {
            what: What::Status(status),
            body: None,
        };
        return Ok((Reply::failed(class, failure), got));
    }
    // Trailers-only answers carry the status in the headers.
    let meta = trailers
        .as_ref()
        .filter(|t| t.contains_key("grpc-status"))
        .unwrap_or(&head.headers);
    Ok((judge(meta, &head.headers), got))
}

/// The class of a `grpc-status` (<https://grpc.github.io/grpc/core/md_doc_statuscodes.html>):
/// `OK` ok; `UNAVAILABLE` and `RESOURCE_EXHAUSTED` the server refusing work
/// (shed); `DEADLINE_EXCEEDED` timeout; `CANCELLED` a stream given up
/// (reset); any other an error answer (`http_error`).
pub fn class_of(code: u32) -> Class {
    match code {
        0 => Class::Ok,
        8 | 14 => Class::Shed,
        4 => Class::Timeout,
        1 => Class::Reset,
        _ => Class::HttpError,
    }
}

/// The status code's name.
pub fn code_name(code: u32) -> &'static str {
    const NAMES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    NAMES.get(code as usize).copied().unwrap_or("UNKNOWN")
}

/// The answer from its status metadata (`meta`: trailers, or the headers
/// of a trailers-only answer). A shed answer with `grpc-retry-pushback-ms`
/// counts as one that said when to come back (HTTP's `Retry-After`).
fn judge(meta: &HeaderMap, headers: &HeaderMap) -> Reply {
    let Some(code) = meta
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<u32>().ok())
    else {
        let failure = Failure::message("gRPC answer without a grpc-status");
        return Reply::failed(Class::OtherError, failure);
    };
    let class = class_of(code);
    if class == Class::Ok {
        return Reply {
            class,
            retry_after: false,
            failure: None,
        };
    }
    let message = meta
        .get("grpc-message")
        .map(|v| percent_decode(v.as_bytes()))
        .unwrap_or_default();
    let retry_after = class == Class::Shed
        && (meta.contains_key("grpc-retry-pushback-ms")
            || headers.contains_key("grpc-retry-pushback-ms"));
    Reply {
        class,
        retry_after,
        failure: Some(Failure::message(format!(
            "grpc-status {code} ({}): {message}",
            code_name(code)
        ))),
    }
}

/// `grpc-message` is percent-encoded UTF-8.
fn percent_decode(b: &[u8]) -> String {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push(h << 4 | l);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Message boundaries in a stream of DATA frames: each message is a
/// 5-byte prefix (flag, length) then its bytes, split anywhere.
#[derive(Default)]
struct Frames {
    /// Prefix bytes seen of the next message.
    head: [u8; 5],
    have: usize,
    /// Bytes of the current message still to come.
    left: u64,
}

impl Frames {
    /// Take `d`; how many messages began in it.
    fn feed(&mut self, d: &mut impl Buf) -> u32 {
        let mut began = 0;
        while d.has_remaining() {
            if self.left > 0 {
                let n = self.left.min(d.remaining() as u64) as usize;
                d.advance(n);
                self.left -= n as u64;
                continue;
            }
            self.head[self.have] = d.get_u8();
            self.have += 1;
            if self.have == 5 {
                self.have = 0;
                began += 1;
                self.left =
                    u32::from_be_bytes([self.head[1], self.head[2], self.head[3], self.head[4]])
                        as u64;
            }
        }
        began
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_split_across_frames_are_counted_once() {
        let mut wire = Vec::new();
        for body in [&b"abc"[..], b"", b"0123456789"] {
            wire.push(0);
            wire.extend_from_slice(&(body.len() as u32).to_be_bytes());
            wire.extend_from_slice(body);
        }
        for cut in 0..wire.len() {
            let mut f = Frames::default();
            let (a, b) = wire.split_at(cut);
            let n = f.feed(&mut &a[..]) + f.feed(&mut &b[..]);
            assert_eq!(n, 3, "cut at {cut}");
        }
    }

    #[test]
    fn statuses_map_to_classes_and_messages_decode() {
        assert_eq!(class_of(0), Class::Ok);
        assert_eq!(class_of(8), Class::Shed);
        assert_eq!(class_of(14), Class::Shed);
        assert_eq!(class_of(4), Class::Timeout);
        assert_eq!(class_of(13), Class::HttpError);
        assert_eq!(code_name(8), "RESOURCE_EXHAUSTED");
        assert_eq!(percent_decode(b"too%20busy%3A 50%"), "too busy: 50%");
    }
}
