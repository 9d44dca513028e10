//! A response parsed: its head by `httparse`, its body framed by
//! Content-Length, chunked coding or the close, fed in any pieces.

use hyper::header::{HeaderName, HeaderValue};
use hyper::HeaderMap;

use super::{H1Error, MAX_HEAD, MAX_HEADERS, MAX_SKIPPED};

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
    /// It carries `Set-Cookie` (read again by a caller that keeps cookies).
    pub set_cookie: bool,
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
    let mut set_cookie = false;
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
        } else if name.eq_ignore_ascii_case(b"set-cookie") {
            set_cookie = true;
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
        set_cookie,
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
