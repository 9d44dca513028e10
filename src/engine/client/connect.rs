//! Connections: a lane's connection, the HTTP/2 connections its worker's
//! lanes share ([`Pool`]), and opening one (TCP, TLS, the HTTP handshake).

use std::cell::RefCell;
use std::pin::Pin;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::classify::{connect_class, hyper_fault, io_message, Fault};
use super::Target;
use crate::engine::h1;
use crate::metrics::Class;
use crate::profile::HttpVersion;

/// One connection's request side.
pub(super) enum Sender {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
    /// The HTTP/1.1 codec: the connection itself, driven by the lane.
    Codec(h1::CodecConn),
}

impl Sender {
    #[inline]
    pub(super) fn is_closed(&self) -> bool {
        match self {
            Sender::H1(s) => s.is_closed(),
            Sender::H2(s) => s.is_closed(),
            // Found out by the next exchange (and then sent again once).
            Sender::Codec(_) => false,
        }
    }
    pub(super) async fn ready(&mut self) -> Result<(), hyper::Error> {
        match self {
            Sender::H1(s) => s.ready().await,
            Sender::H2(s) => s.ready().await,
            Sender::Codec(_) => Ok(()),
        }
    }
}

/// HTTP/2 connections of one worker, shared by its lanes: lane `i` uses
/// connection `i / streams_per_connection`. HTTP/1.1: every lane its own.
pub struct Pool {
    h2: bool,
    streams: usize,
    slots: RefCell<Vec<Rc<Slot>>>,
}

/// One shared HTTP/2 connection; the lock makes the lanes that find it
/// closed open one new connection, not one each.
#[derive(Default)]
pub(super) struct Slot {
    pub(super) sender: RefCell<Option<http2::SendRequest<Full<Bytes>>>>,
    pub(super) opening: tokio::sync::Mutex<()>,
}

impl Pool {
    pub fn new(t: &Target, streams_per_connection: usize) -> Pool {
        Pool {
            // Without keep-alive every request opens its own connection.
            h2: t.plans_h2() && t.keep_alive,
            streams: streams_per_connection.max(1),
            slots: RefCell::new(Vec::new()),
        }
    }
    /// Lanes (open model) per connection: 1 for HTTP/1.1.
    pub fn streams(&self) -> usize {
        if self.h2 {
            self.streams
        } else {
            1
        }
    }
    /// The connection of lane (or virtual user) `lane`.
    pub fn conn(&self, lane: usize) -> LaneConn {
        if !self.h2 {
            return LaneConn::default();
        }
        let k = lane / self.streams;
        let mut slots = self.slots.borrow_mut();
        while slots.len() <= k {
            slots.push(Rc::new(Slot::default()));
        }
        LaneConn {
            slot: Some(slots[k].clone()),
            ..LaneConn::default()
        }
    }
}

/// A lane's connection: opened lazily, reopened when the server closes it.
#[derive(Default)]
pub struct LaneConn {
    pub(super) sender: Option<Sender>,
    /// HTTP/2: the connection this lane shares.
    pub(super) slot: Option<Rc<Slot>>,
    /// The codec: a templated request's bytes, a checked body (reused).
    pub(super) wire: Vec<u8>,
    pub(super) body: Vec<u8>,
    /// The request timeout, reset per exchange rather than armed anew:
    /// a later deadline on a registered timer is one store, no wheel work.
    pub(super) timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// Runs hyper's HTTP/2 connection tasks on the worker's own thread.
#[derive(Clone, Copy)]
pub(super) struct LocalExec;

impl<F> hyper::rt::Executor<F> for LocalExec
where
    F: std::future::Future + 'static,
{
    fn execute(&self, fut: F) {
        tokio::task::spawn_local(fut);
    }
}

/// Open a connection: TCP, TLS (ALPN picks the protocol), the HTTP
/// handshake. Returns the time it took with the sender.
pub(super) async fn connect(t: &Target) -> Result<(Sender, Duration), Fault> {
    let began = Instant::now();
    let tcp = match tokio::time::timeout(
        t.connect_timeout,
        TcpStream::connect((t.host.as_str(), t.port)),
    )
    .await
    {
        Err(_) => return Err(Fault::new(Class::Timeout, "connect: timed out")),
        Ok(Err(e)) => {
            return Err(Fault::new(
                connect_class(&e),
                format!("connect: {}", io_message(&e)),
            ))
        }
        Ok(Ok(s)) => s,
    };
    let _ = tcp.set_nodelay(true);
    let codec = t.uses_codec();
    let sender = match &t.tls {
        None if codec && t.http != HttpVersion::Http2 => {
            Sender::Codec(h1::CodecConn::new(h1::Io::Tcp(tcp)))
        }
        None => handshake(TokioIo::new(tcp), t.http == HttpVersion::Http2).await?,
        Some((connector, name)) => {
            let tls =
                match tokio::time::timeout(t.connect_timeout, connector.connect(name.clone(), tcp))
                    .await
                {
                    Err(_) => return Err(Fault::new(Class::Timeout, "TLS handshake: timed out")),
                    Ok(Err(e)) => {
                        return Err(Fault::new(
                            connect_class(&e),
                            format!("TLS handshake: {}", io_message(&e)),
                        ))
                    }
                    Ok(Ok(s)) => s,
                };
            let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
            if t.http == HttpVersion::Http2 && !h2 {
                // The preflight refuses such a target; a server that changed mid-run.
                return Err(Fault::new(
                    Class::ConnectError,
                    "TLS: the server no longer offers HTTP/2 (ALPN)",
                ));
            }
            if codec && !h2 {
                Sender::Codec(h1::CodecConn::new(h1::Io::Tls(Box::new(tls))))
            } else {
                handshake(TokioIo::new(tls), h2).await?
            }
        }
    };
    Ok((sender, began.elapsed()))
}

pub(super) async fn handshake<IO>(io: TokioIo<IO>, h2: bool) -> Result<Sender, Fault>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + 'static,
{
    if h2 {
        let (sender, conn) = http2::Builder::new(LocalExec)
            .handshake(io)
            .await
            .map_err(|e| hyper_fault(&e))?;
        tokio::task::spawn_local(async move {
            let _ = conn.await;
        });
        Ok(Sender::H2(sender))
    } else {
        let (sender, conn) = http1::handshake(io).await.map_err(|e| hyper_fault(&e))?;
        tokio::task::spawn_local(async move {
            let _ = conn.await;
        });
        Ok(Sender::H1(sender))
    }
}
