//! One exchange on a codec connection: the request written in one write,
//! the answer read into a reused buffer and framed, and what failed.

use std::io;

use hyper::HeaderMap;
use thiserror::Error;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{parse_head, Body, H1Error, Head, MAX_HEAD, READ_BUF};

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
pub struct CodecConn {
    io: Io,
    buf: Box<[u8]>,
    /// Unparsed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// Exchanges completed on this connection.
    pub served: u64,
}

impl CodecConn {
    pub fn new(io: Io) -> CodecConn {
        CodecConn {
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
    /// Read its body next with [`CodecConn::body`].
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

    /// The bytes of `head`, the head [`CodecConn::send`] just returned
    /// (valid until [`CodecConn::body`] reads on).
    pub fn head_bytes(&self, head: &Head) -> &[u8] {
        &self.buf[self.start.saturating_sub(head.len)..self.start]
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
