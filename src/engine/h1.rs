//! A minimal HTTP/1.1 client codec for the lanes' keep-alive path: the
//! request goes out as pre-built bytes in one write, the answer is read into
//! a reused buffer, its head parsed by `httparse` (the parser hyper uses)
//! and its body framed by Content-Length, chunked coding or the close.
//!
//! Why not hyper's `client::conn::http1` here: every request there crosses a
//! channel from the `SendRequest` handle to a spawned connection task (two
//! wake-ups), builds a `HeaderMap` and a `Response`, and polls large futures;
//! profiled, that user-space work was the gap to wrk. This codec runs inline
//! in the lane's task and builds headers only when a scenario extracts one.
//! Hyper still carries HTTP/2 and the requests this codec does not take
//! (`CONNECT`, `Upgrade`: see [`encodable`]).
//!
//! What it does not do: pipelining, upgrades (a `101` is a protocol error),
//! request bodies of unknown length (every body here is pre-built).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Body as _;
use hyper::header::{HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use hyper::{HeaderMap, Method, Request};
use thiserror::Error;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response the codec cannot frame: the connection is given up.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum H1Error {
    #[error("response head: {0}")]
    Head(#[from] httparse::Error),
    #[error("response head larger than {MAX_HEAD} bytes")]
    HeadTooLarge,
    #[error("bad Content-Length")]
    BadLength,
    #[error("bad chunked body: {0}")]
    Chunk(&'static str),
    #[error("101 Switching Protocols: upgrades are not supported")]
    Upgrade,
}

/// The largest response head read (hyper's default is ~400 KiB; 64 KiB
/// is more than any server's own limit on what it sends).
pub const MAX_HEAD: usize = 64 * 1024;
const MAX_HEADERS: usize = 128;
/// Bytes of chunk extensions and trailers skipped per response.
const MAX_SKIPPED: u64 = 64 * 1024;
/// Read buffer: a typical answer (head and small body) in one read.
const READ_BUF: usize = 16 * 1024;

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

/// How a response body ends (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Length(u64),
    Chunked,
    /// Neither length nor chunked: the body ends when the server closes.
    UntilClose,
}

/// A parsed response head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    /// Bytes the head took in the buffer.
    pub len: usize,
    pub framing: Framing,
    /// The connection ends after this response.
    pub close: bool,
    pub retry_after: bool,
}

/// Parse a response head from the start of `buf`: `Ok(None)` when more
/// bytes are needed. `head_request`: the answer to a HEAD has no body.
/// `headers`: filled with the response headers when given (extracts).
pub fn parse_head(
    buf: &[u8],
    head_request: bool,
    mut headers: Option<&mut HeaderMap>,
) -> Result<Option<Head>, H1Error> {
    // Uninitialised slots: zeroing 128 headers cost more than the parse.
    let mut slots =
        [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut r = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default()
        .parse_response_with_uninit_headers(&mut r, buf, &mut slots)?;
    let len = match parsed {
        httparse::Status::Complete(n) => n,
        httparse::Status::Partial if buf.len() >= MAX_HEAD => return Err(H1Error::HeadTooLarge),
        httparse::Status::Partial => return Ok(None),
    };
    let status = r.code.unwrap_or(0);
    let http10 = r.version == Some(0);
    let mut close = http10;
    let mut length: Option<u64> = None;
    let mut coding: Option<bool> = None; // Some(last coding is chunked)
    let mut retry_after = false;
    for h in r.headers.iter() {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            for v in h.value.split(|b| *b == b',') {
                let n = parse_length(v)?;
                if length.is_some_and(|l| l != n) {
                    return Err(H1Error::BadLength);
                }
                length = Some(n);
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            let last = h.value.rsplit(|b| *b == b',').next().unwrap_or(b"");
            coding = Some(trim(last).eq_ignore_ascii_case(b"chunked"));
        } else if name.eq_ignore_ascii_case(b"connection") {
            for t in h.value.split(|b| *b == b',') {
                let t = trim(t);
                if t.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if http10 && t.eq_ignore_ascii_case(b"keep-alive") {
                    close = false;
                }
            }
        } else if name.eq_ignore_ascii_case(b"retry-after") {
            retry_after = true;
        }
        if let Some(map) = headers.as_deref_mut() {
            if let (Ok(k), Ok(v)) = (
                HeaderName::from_bytes(name),
                HeaderValue::from_bytes(h.value),
            ) {
                map.append(k, v);
            }
        }
    }
    let framing = if status == 101 {
        return Err(H1Error::Upgrade);
    } else if (100..200).contains(&status) || status == 204 || status == 304 || head_request {
        Framing::Length(0)
    } else {
        match (coding, length) {
            (Some(true), _) => Framing::Chunked,
            (Some(false), _) => Framing::UntilClose,
            (None, Some(n)) => Framing::Length(n),
            (None, None) => Framing::UntilClose,
        }
    };
    // A body that ends with the close; a length beside a coding (RFC 9112
    // §6.3: a smuggling sign) — the connection is not reused after either.
    if framing == Framing::UntilClose || (coding.is_some() && length.is_some()) {
        close = true;
    }
    Ok(Some(Head {
        status,
        len,
        framing,
        close,
        retry_after,
    }))
}

fn trim(v: &[u8]) -> &[u8] {
    let start = v.iter().position(|b| !matches!(b, b' ' | b'\t'));
    let end = v.iter().rposition(|b| !matches!(b, b' ' | b'\t'));
    match (start, end) {
        (Some(s), Some(e)) => &v[s..=e],
        _ => &[],
    }
}

/// Digits only (no sign, no spaces inside), at most 19 of them.
fn parse_length(v: &[u8]) -> Result<u64, H1Error> {
    let v = trim(v);
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return Err(H1Error::BadLength);
    }
    Ok(v.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')))
}

/// Where a chunked body's decoder stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Hex digits of a chunk size (`digits` read so far).
    Size {
        n: u64,
        digits: u8,
    },
    /// A chunk extension, skipped up to its CR.
    Ext(u64),
    /// The LF after a size line.
    SizeLf(u64),
    Data(u64),
    DataCr,
    DataLf,
    /// At the start of a trailer line (or of the final CRLF).
    Trailer,
    /// Inside a trailer field line, skipped up to its CR.
    TrailerLine,
    TrailerLf,
    EndLf,
}

/// A response body being consumed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body {
    state: State,
    /// Extension and trailer bytes skipped so far (bounded).
    skipped: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Length(u64),
    Chunked(Chunk),
    UntilClose,
    Done,
}

impl Body {
    pub fn new(f: Framing) -> Body {
        let state = match f {
            Framing::Length(0) => State::Done,
            Framing::Length(n) => State::Length(n),
            Framing::Chunked => State::Chunked(Chunk::Size { n: 0, digits: 0 }),
            Framing::UntilClose => State::UntilClose,
        };
        Body { state, skipped: 0 }
    }

    pub fn done(&self) -> bool {
        self.state == State::Done
    }

    /// The server closed the connection: whether that ends the body
    /// (a close-delimited body) rather than truncating it.
    pub fn eof(&mut self) -> bool {
        match self.state {
            State::UntilClose | State::Done => {
                self.state = State::Done;
                true
            }
            _ => false,
        }
    }

    /// Consume body bytes from the start of `input`, appending the payload
    /// to `keep` when given; returns how many bytes were consumed (fewer
    /// than `input.len()` only when the body ended).
    pub fn feed(&mut self, input: &[u8], mut keep: Option<&mut Vec<u8>>) -> Result<usize, H1Error> {
        let mut i = 0;
        while i < input.len() {
            match self.state {
                State::Done => break,
                State::UntilClose => {
                    if let Some(k) = keep.as_deref_mut() {
                        k.extend_from_slice(&input[i..]);
                    }
                    i = input.len();
                }
                State::Length(n) => {
                    let take = n.min((input.len() - i) as u64) as usize;
                    if let Some(k) = keep.as_deref_mut() {
                        k.extend_from_slice(&input[i..i + take]);
                    }
                    i += take;
                    let left = n - take as u64;
                    self.state = if left == 0 {
                        State::Done
                    } else {
                        State::Length(left)
                    };
                }
                State::Chunked(Chunk::Data(n)) => {
                    let take = n.min((input.len() - i) as u64) as usize;
                    if let Some(k) = keep.as_deref_mut() {
                        k.extend_from_slice(&input[i..i + take]);
                    }
                    i += take;
                    let left = n - take as u64;
                    self.state = State::Chunked(if left == 0 {
                        Chunk::DataCr
                    } else {
                        Chunk::Data(left)
                    });
                }
                State::Chunked(c) => {
                    let b = input[i];
                    i += 1;
                    self.state = self.chunk_byte(c, b)?;
                }
            }
        }
        Ok(i)
    }

    /// One byte of chunk framing (sizes, CRLFs, extensions, trailers).
    fn chunk_byte(&mut self, c: Chunk, b: u8) -> Result<State, H1Error> {
        let next = match c {
            Chunk::Size { n, digits } => match b {
                b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                    if digits >= 15 {
                        return Err(H1Error::Chunk("chunk size too large"));
                    }
                    let d = (b as char).to_digit(16).unwrap_or(0) as u64;
                    Chunk::Size {
                        n: n * 16 + d,
                        digits: digits + 1,
                    }
                }
                _ if digits == 0 => return Err(H1Error::Chunk("no chunk size")),
                b';' | b' ' | b'\t' => Chunk::Ext(n),
                b'\r' => Chunk::SizeLf(n),
                _ => return Err(H1Error::Chunk("bad chunk size")),
            },
            Chunk::Ext(n) => match b {
                b'\r' => Chunk::SizeLf(n),
                b'\n' => return Err(H1Error::Chunk("bare LF in chunk extension")),
                _ => {
                    self.skip()?;
                    Chunk::Ext(n)
                }
            },
            Chunk::SizeLf(n) => match (b, n) {
                (b'\n', 0) => Chunk::Trailer,
                (b'\n', n) => Chunk::Data(n),
                _ => return Err(H1Error::Chunk("no LF after chunk size")),
            },
            // Data is taken in bulk by `feed`, never through here.
            Chunk::Data(_) => return Err(H1Error::Chunk("data byte out of place")),
            Chunk::DataCr => match b {
                b'\r' => Chunk::DataLf,
                _ => return Err(H1Error::Chunk("chunk longer than its size")),
            },
            Chunk::DataLf => match b {
                b'\n' => Chunk::Size { n: 0, digits: 0 },
                _ => return Err(H1Error::Chunk("no LF after chunk data")),
            },
            Chunk::Trailer => match b {
                b'\r' => Chunk::EndLf,
                b'\n' => return Err(H1Error::Chunk("bare LF in trailer")),
                _ => {
                    self.skip()?;
                    Chunk::TrailerLine
                }
            },
            Chunk::TrailerLine => match b {
                b'\r' => Chunk::TrailerLf,
                b'\n' => return Err(H1Error::Chunk("bare LF in trailer")),
                _ => {
                    self.skip()?;
                    Chunk::TrailerLine
                }
            },
            Chunk::TrailerLf => match b {
                b'\n' => Chunk::Trailer,
                _ => return Err(H1Error::Chunk("no LF after trailer")),
            },
            Chunk::EndLf => match b {
                b'\n' => return Ok(State::Done),
                _ => return Err(H1Error::Chunk("no LF at the end")),
            },
        };
        Ok(State::Chunked(next))
    }

    fn skip(&mut self) -> Result<(), H1Error> {
        self.skipped += 1;
        if self.skipped > MAX_SKIPPED {
            return Err(H1Error::Chunk("extensions or trailers too large"));
        }
        Ok(())
    }
}

/// A connection's byte stream: cleartext or TLS.
pub enum Io {
    Tcp(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl Io {
    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Io::Tcp(s) => s.read(buf).await,
            Io::Tls(s) => s.read(buf).await,
        }
    }
    async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Io::Tcp(s) => s.write_all(buf).await,
            Io::Tls(s) => {
                s.write_all(buf).await?;
                s.flush().await
            }
        }
    }
}

/// Why an exchange failed; `unanswered` says not one byte of an answer
/// came back (with a reused connection: the server closed it idle).
#[derive(Debug, Error)]
pub enum Failed {
    #[error("{0}")]
    Io(io::Error, bool),
    #[error("connection closed before a complete answer")]
    Closed(bool),
    #[error(transparent)]
    Protocol(#[from] H1Error),
    /// The kept body would exceed the limit asked for.
    #[error("body larger than the limit")]
    TooLarge,
}

impl Failed {
    /// Nothing of an answer arrived.
    pub fn unanswered(&self) -> bool {
        matches!(self, Failed::Io(_, true) | Failed::Closed(true))
    }
}

/// An HTTP/1.1 connection driven by the codec.
pub struct Conn {
    io: Io,
    buf: Box<[u8]>,
    /// Unparsed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// Exchanges completed on this connection.
    pub served: u64,
}

impl Conn {
    pub fn new(io: Io) -> Conn {
        Conn {
            io,
            buf: vec![0; READ_BUF].into_boxed_slice(),
            start: 0,
            end: 0,
            served: 0,
        }
    }

    /// Read more bytes after `buf[..end]`, growing the buffer for a large
    /// head. `Ok(0)`: the server closed the connection.
    async fn fill(&mut self) -> io::Result<usize> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            let mut b = vec![0; (self.buf.len() * 2).min(MAX_HEAD + READ_BUF)];
            b[..self.end].copy_from_slice(&self.buf[..self.end]);
            self.buf = b.into_boxed_slice();
        }
        let n = self.io.read(&mut self.buf[self.end..]).await?;
        self.end += n;
        Ok(n)
    }

    /// Send `wire` (one whole request) and read the final response's head
    /// (interim 1xx answers skipped); `headers`: filled with its headers.
    /// Read its body next with [`Conn::body`].
    pub async fn send(
        &mut self,
        wire: &[u8],
        head_request: bool,
        mut headers: Option<&mut HeaderMap>,
    ) -> Result<Head, Failed> {
        self.start = 0;
        self.end = 0;
        self.io
            .write_all(wire)
            .await
            .map_err(|e| Failed::Io(e, true))?;
        let mut got = false;
        loop {
            match parse_head(
                &self.buf[self.start..self.end],
                head_request,
                headers.as_deref_mut(),
            )? {
                Some(h) if (100..200).contains(&h.status) => {
                    // Interim (100 Continue, 103 Early Hints): the answer follows.
                    self.start += h.len;
                    if let Some(m) = headers.as_deref_mut() {
                        m.clear();
                    }
                }
                Some(h) => {
                    self.start += h.len;
                    return Ok(h);
                }
                None => match self.fill().await {
                    Ok(0) => return Err(Failed::Closed(!got)),
                    Ok(_) => got = true,
                    Err(e) => return Err(Failed::Io(e, !got)),
                },
            }
        }
    }

    /// Consume the body of the response `head` is of; `keep`: collect it
    /// there, up to `limit` bytes. `Ok(true)`: the connection can carry
    /// another request.
    pub async fn body(
        &mut self,
        head: &Head,
        mut keep: Option<&mut Vec<u8>>,
        limit: usize,
    ) -> Result<bool, Failed> {
        let mut body = Body::new(head.framing);
        loop {
            let n = body.feed(&self.buf[self.start..self.end], keep.as_deref_mut())?;
            self.start += n;
            if keep.as_ref().is_some_and(|k| k.len() > limit) {
                return Err(Failed::TooLarge);
            }
            if body.done() {
                break;
            }
            self.start = 0;
            self.end = 0;
            match self.fill().await {
                Ok(0) if body.eof() => break,
                Ok(0) => return Err(Failed::Closed(false)),
                Ok(_) => {}
                Err(e) => return Err(Failed::Io(e, false)),
            }
        }
        self.served += 1;
        // Bytes past the answer: nothing was asked for them.
        Ok(!head.close && self.start == self.end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(s: &str) -> Result<Option<Head>, H1Error> {
        parse_head(s.as_bytes(), false, None)
    }

    /// Decode `input` fed in pieces cut at `cuts`; the payload and the bytes consumed.
    fn decode(f: Framing, input: &[u8], cuts: &[usize]) -> Result<(Vec<u8>, usize, bool), H1Error> {
        let mut b = Body::new(f);
        let mut out = Vec::new();
        let mut used = 0;
        let mut at = 0;
        for &c in cuts.iter().chain(std::iter::once(&input.len())) {
            let c = c.clamp(at, input.len());
            let n = b.feed(&input[at..c], Some(&mut out))?;
            used += n;
            if b.done() {
                return Ok((out, used, true));
            }
            at = c;
        }
        Ok((out, used, b.done()))
    }

    #[test]
    fn encodes_a_request_with_length_and_close() {
        let req = Request::builder()
            .method("POST")
            .uri("/a?b=1")
            .header("host", "h:1")
            .body(Full::new(Bytes::from_static(b"xyz")))
            .unwrap();
        let mut out = Vec::new();
        encode(&req, true, &mut out);
        assert_eq!(
            out,
            b"POST /a?b=1 HTTP/1.1\r\nhost: h:1\r\nconnection: close\r\ncontent-length: 3\r\n\r\nxyz"
        );
        let get = Request::builder().uri("/").body(Full::default()).unwrap();
        out.clear();
        encode(&get, false, &mut out);
        assert_eq!(out, b"GET / HTTP/1.1\r\n\r\n");
        let te = Request::builder()
            .method("PUT")
            .uri("/t")
            .header("transfer-encoding", "chunked")
            .header("content-length", "5")
            .body(Full::new(Bytes::from_static(b"hello")))
            .unwrap();
        out.clear();
        encode(&te, false, &mut out);
        assert_eq!(
            out,
            b"PUT /t HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
        );
    }

    #[test]
    fn frames_by_length_chunked_or_close() {
        let h = head("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .unwrap()
            .unwrap();
        assert_eq!(
            (h.status, h.framing, h.close),
            (200, Framing::Length(2), false)
        );
        assert_eq!(h.len, 38);
        let h = head(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 9\r\n\r\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!((h.framing, h.close), (Framing::Chunked, true));
        let h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!((h.framing, h.close), (Framing::UntilClose, true));
        let h = head("HTTP/1.1 200 OK\r\n\r\n").unwrap().unwrap();
        assert_eq!((h.framing, h.close), (Framing::UntilClose, true));
        let h = head("HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(h.framing, Framing::Length(0));
        let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n", true, None)
            .unwrap()
            .unwrap();
        assert_eq!(h.framing, Framing::Length(0));
        let h = head("HTTP/1.1 503 x\r\nRetry-After: 1\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(h.retry_after && h.close);
        let h = head("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(h.close);
        let h = head("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(!h.close);
        assert_eq!(head("HTTP/1.1 200 OK\r\nContent-Le"), Ok(None));
        assert_eq!(
            head("HTTP/1.1 101 Switching\r\n\r\n"),
            Err(H1Error::Upgrade)
        );
    }

    #[test]
    fn bad_lengths_are_errors() {
        for v in [
            "-1",
            "+1",
            "1 2",
            "",
            "0x10",
            "99999999999999999999",
            "1,2",
            "abc",
        ] {
            let s = format!("HTTP/1.1 200 OK\r\nContent-Length: {v}\r\n\r\n");
            assert_eq!(head(&s), Err(H1Error::BadLength), "Content-Length: {v}");
        }
        let two = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n";
        assert_eq!(head(two), Err(H1Error::BadLength));
        let same = "HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\nContent-Length: 3\r\n\r\n";
        assert_eq!(head(same).unwrap().unwrap().framing, Framing::Length(3));
        let huge = "HTTP/1.1 200 OK\r\nContent-Length: 9999999999999999999\r\n\r\n";
        assert_eq!(
            head(huge).unwrap().unwrap().framing,
            Framing::Length(9_999_999_999_999_999_999)
        );
    }

    #[test]
    fn headers_are_handed_out_when_asked() {
        let mut m = HeaderMap::new();
        let s = b"HTTP/1.1 200 OK\r\nX-Token: abc\r\nContent-Length: 0\r\n\r\n";
        parse_head(s, false, Some(&mut m)).unwrap().unwrap();
        assert_eq!(m.get("x-token").unwrap(), "abc");
    }

    #[test]
    fn garbage_and_huge_heads_are_errors() {
        assert!(head("HTTP/1.1 2000 OK\r\n\r\n").is_err());
        assert!(head("SSH-2.0-OpenSSH\r\n\r\n").is_err());
        assert!(head("HTTP/1.1 200 OK\r\nBad Header\r\n\r\n").is_err());
        let big = format!("HTTP/1.1 200 OK\r\nX: {}", "a".repeat(MAX_HEAD));
        assert_eq!(head(&big), Err(H1Error::HeadTooLarge));
        let many: String = (0..MAX_HEADERS + 1)
            .map(|i| format!("h{i}: v\r\n"))
            .collect();
        let s = format!("HTTP/1.1 200 OK\r\n{many}\r\n");
        assert_eq!(
            head(&s),
            Err(H1Error::Head(httparse::Error::TooManyHeaders))
        );
    }

    #[test]
    fn chunked_bodies_decode_with_extensions_and_trailers() {
        let body =
            b"4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-T: 1\r\n\r\nNEXT";
        let (out, used, done) = decode(Framing::Chunked, body, &[]).unwrap();
        assert!(done);
        assert_eq!(out, b"Wikipedia in\r\n\r\nchunks.");
        assert_eq!(&body[used..], b"NEXT");
    }

    #[test]
    fn bad_chunks_are_errors() {
        for bad in [
            &b"x\r\n"[..],
            b"\r\n",
            b"4\r\nWikiX\r\n",
            b"4\nWiki",
            b"4\r\nWiki\r\r",
            b"ffffffffffffffff0\r\n",
            b"0\r\nX\nY",
            b"0\r\n\rX",
            b"1;a\nb",
        ] {
            assert!(
                decode(Framing::Chunked, bad, &[]).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let mut trailer = b"0\r\n".to_vec();
        trailer.extend(std::iter::repeat_n(b'a', MAX_SKIPPED as usize + 1));
        assert!(decode(Framing::Chunked, &trailer, &[]).is_err());
    }

    #[test]
    fn truncated_bodies_are_not_done() {
        let (_, _, done) = decode(Framing::Chunked, b"5\r\nab", &[]).unwrap();
        assert!(!done);
        let mut b = Body::new(Framing::Length(5));
        b.feed(b"abc", None).unwrap();
        assert!(!b.eof());
        let mut b = Body::new(Framing::UntilClose);
        b.feed(b"abc", None).unwrap();
        assert!(b.eof() && b.done());
    }

    /// A chunked encoding of `payload` in random chunk sizes, with random
    /// extensions, hex case and trailers.
    fn chunked(rng: &mut fastrand::Rng, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < payload.len() {
            let n = rng.usize(1..=(payload.len() - at).min(300));
            let size = if rng.bool() {
                format!("{n:x}")
            } else {
                format!("{n:X}")
            };
            out.extend_from_slice(size.as_bytes());
            if rng.u8(..) < 40 {
                out.extend_from_slice(b";name=\"v\"");
            }
            out.extend_from_slice(b"\r\n");
            out.extend_from_slice(&payload[at..at + n]);
            out.extend_from_slice(b"\r\n");
            at += n;
        }
        out.extend_from_slice(b"0\r\n");
        for t in 0..rng.usize(0..3) {
            out.extend_from_slice(format!("T{t}: x\r\n").as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        out
    }

    /// Randomized (fixed seed, bounded): chunked bodies decode to their
    /// payload whatever the read boundaries; mutated input never panics
    /// and never decodes past its end.
    #[test]
    fn chunked_bodies_survive_any_split_and_mutation() {
        let mut rng = fastrand::Rng::with_seed(14);
        for round in 0..400 {
            let len = rng.usize(0..2000);
            let payload: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
            let mut wire = chunked(&mut rng, &payload);
            let end = wire.len();
            wire.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
            let cuts: Vec<usize> = {
                let mut c: Vec<usize> = (0..rng.usize(0..20)).map(|_| rng.usize(0..=end)).collect();
                c.sort_unstable();
                c
            };
            let (out, used, done) = decode(Framing::Chunked, &wire, &cuts).unwrap();
            assert!(done, "round {round}");
            assert_eq!(out, payload, "round {round}");
            assert_eq!(used, end, "round {round}");
            // Mutations: flip, drop or insert bytes, or truncate.
            let mut bad = wire[..end].to_vec();
            for _ in 0..rng.usize(1..4) {
                let at = rng.usize(0..bad.len());
                match rng.u8(0..4) {
                    0 => bad[at] = rng.u8(..),
                    1 => {
                        bad.remove(at);
                    }
                    2 => bad.insert(at, rng.u8(..)),
                    _ => bad.truncate(at),
                }
                if bad.is_empty() {
                    break;
                }
            }
            let split = decode(Framing::Chunked, &bad, &cuts);
            if let Ok((_, used, _)) = &split {
                assert!(*used <= bad.len());
            }
            // Where the reads split never changes the outcome.
            assert_eq!(split, decode(Framing::Chunked, &bad, &[]), "round {round}");
        }
    }

    /// Every split of a small chunked body, byte by byte boundaries.
    #[test]
    fn chunked_body_split_at_every_byte() {
        let wire = b"3;x=y\r\nabc\r\n1\r\nd\r\n0\r\nT: 1\r\n\r\n";
        for a in 0..=wire.len() {
            for b in a..=wire.len() {
                let (out, used, done) = decode(Framing::Chunked, wire, &[a, b]).unwrap();
                assert!(done && out == b"abcd" && used == wire.len(), "cuts {a} {b}");
            }
        }
    }

    /// Randomized heads: parse never panics; a complete head's length is
    /// within the input; a prefix of a good head asks for more bytes.
    #[test]
    fn heads_never_panic_and_prefixes_ask_for_more() {
        let good = b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nTransfer-Encoding: chunked\r\nConnection: close\r\nRetry-After: 3\r\n\r\n";
        for n in 0..good.len() {
            assert_eq!(parse_head(&good[..n], false, None), Ok(None), "prefix {n}");
        }
        let mut rng = fastrand::Rng::with_seed(3);
        let mut map = HeaderMap::new();
        for _ in 0..20_000 {
            let mut b = good.to_vec();
            for _ in 0..rng.usize(1..6) {
                let at = rng.usize(0..b.len());
                match rng.u8(0..3) {
                    0 => b[at] = rng.u8(..),
                    1 => {
                        b.remove(at);
                    }
                    _ => b.insert(at, rng.u8(..)),
                }
            }
            map.clear();
            if let Ok(Some(h)) = parse_head(&b, false, Some(&mut map)) {
                assert!(h.len <= b.len());
            }
        }
    }
}
