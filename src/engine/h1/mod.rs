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
//! request bodies of unknown length (every body here is pre-built).//!
//! Its jobs, a file each: encoding a request ([`encode`]), parsing and
//! framing a response ([`parse`]) and the exchange on a connection ([`conn`]).

mod conn;
mod encode;
mod parse;

use thiserror::Error;

pub use conn::{CodecConn, Failed, Io};
pub use encode::{encodable, encode};
pub use parse::{parse_head, Body, Framing, Head};

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
pub(super) const MAX_HEADERS: usize = 128;
/// Bytes of chunk extensions and trailers skipped per response.
pub(super) const MAX_SKIPPED: u64 = 64 * 1024;
/// Read buffer: a typical answer (head and small body) in one read.
pub(super) const READ_BUF: usize = 16 * 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http_body_util::Full;
    use hyper::{HeaderMap, Request};

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
