//! A request as HTTP/1.1 bytes, built once (or per send when templated),
//! and which requests the codec takes.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Body as _;
use hyper::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use hyper::{Method, Request};

/// Whether the codec sends this request; hyper takes the others.
pub fn encodable(req: &Request<Full<Bytes>>) -> bool {
    req.method() != Method::CONNECT && !req.headers().contains_key(hyper::header::UPGRADE)
}

/// The bytes of a `Full` body (ready at once: no waker is ever used).
fn body_bytes(body: &Full<Bytes>) -> Bytes {
    let mut b = body.clone();
    let mut cx = Context::from_waker(Waker::noop());
    match Pin::new(&mut b).poll_frame(&mut cx) {
        Poll::Ready(Some(Ok(f))) => f.into_data().unwrap_or_default(),
        _ => Bytes::new(),
    }
}

/// Append `req` as HTTP/1.1 bytes to `out`; `close` adds `Connection: close`
/// (replacing the request's own). A body gets a Content-Length unless the
/// request says `Transfer-Encoding` (then the body is sent as one chunk).
pub fn encode(req: &Request<Full<Bytes>>, close: bool, out: &mut Vec<u8>) {
    let body = body_bytes(req.body());
    let pq = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    out.extend_from_slice(req.method().as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(if pq.is_empty() { b"/" } else { pq.as_bytes() });
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let h = req.headers();
    let chunked = h.contains_key(TRANSFER_ENCODING);
    for (k, v) in h {
        if (close && k == CONNECTION) || (chunked && k == CONTENT_LENGTH) {
            continue;
        }
        header(out, k.as_str().as_bytes(), v.as_bytes());
    }
    if close {
        header(out, b"connection", b"close");
    }
    let needs_length =
        !body.is_empty() || matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH);
    if !chunked && needs_length && !h.contains_key(CONTENT_LENGTH) {
        header(out, b"content-length", body.len().to_string().as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    if chunked {
        if !body.is_empty() {
            out.extend_from_slice(format!("{:x}\r\n", body.len()).as_bytes());
            out.extend_from_slice(&body);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
    } else {
        out.extend_from_slice(&body);
    }
}

fn header(out: &mut Vec<u8>, k: &[u8], v: &[u8]) {
    out.extend_from_slice(k);
    out.extend_from_slice(b": ");
    out.extend_from_slice(v);
    out.extend_from_slice(b"\r\n");
}
