//! Opening a WebSocket: TCP, TLS for `wss://` (the target's trust settings),
//! the HTTP/1.1 upgrade from the step's rendered request; a refusal
//! classified as for HTTP (`connect_error`, `reset`, `timeout`, a status as
//! `shed` or `http_error`).

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CONNECTION, RETRY_AFTER, UPGRADE};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::handshake::client::generate_key;
use tokio_tungstenite::tungstenite::Error as WsError;
use tokio_tungstenite::WebSocketStream;

use super::Steps;
use crate::engine::client::{is_reset, Target};
use crate::metrics::errors::{Failure, What, SAMPLE_BYTES};
use crate::metrics::Class;

/// A plain or TLS stream under the socket.
pub(super) trait Io: AsyncRead + AsyncWrite + Unpin {}
impl<T: AsyncRead + AsyncWrite + Unpin> Io for T {}

pub(super) type Socket = WebSocketStream<Box<dyn Io>>;

/// A connection that could not be opened: its class and why.
pub(super) struct Refused {
    pub class: Class,
    pub failure: Failure,
    /// A `503`/`429` carried `Retry-After`.
    pub retry_after: bool,
}

impl Refused {
    fn new(class: Class, why: String) -> Refused {
        Refused {
            class,
            failure: Failure::message(why),
            retry_after: false,
        }
    }
}

/// An I/O error of a connection the target had or had not accepted.
fn io_refused(stage: &str, e: &std::io::Error) -> Refused {
    let class = match e.kind() {
        k if is_reset(k) => Class::Reset,
        std::io::ErrorKind::TimedOut => Class::Timeout,
        _ => Class::ConnectError,
    };
    Refused::new(class, format!("{stage}: {e}"))
}

/// Open the socket of `req` (the step's upgrade request, path and headers
/// rendered); returns it with the TCP + TLS connect time.
pub(super) async fn open(
    steps: &Steps,
    t: &Target,
    req: hyper::Request<Full<Bytes>>,
) -> Result<(Socket, Duration), Refused> {
    let began = Instant::now();
    let tcp = match tokio::time::timeout(
        t.connect_timeout,
        TcpStream::connect((t.host.as_str(), t.port)),
    )
    .await
    {
        Err(_) => return Err(Refused::new(Class::Timeout, "connect: timed out".into())),
        Ok(Err(e)) => return Err(io_refused("connect", &e)),
        Ok(Ok(s)) => s,
    };
    let _ = tcp.set_nodelay(true);
    let io: Box<dyn Io> = match (&steps.tls, &t.tls) {
        (Some(connector), Some((_, name))) => {
            match tokio::time::timeout(t.connect_timeout, connector.connect(name.clone(), tcp))
                .await
            {
                Err(_) => {
                    return Err(Refused::new(
                        Class::Timeout,
                        "TLS handshake: timed out".into(),
                    ))
                }
                Ok(Err(e)) => return Err(io_refused("TLS handshake", &e)),
                Ok(Ok(s)) => Box::new(s),
            }
        }
        _ => Box::new(tcp),
    };
    let connected = began.elapsed();
    let upgrade = upgrade_request(steps, req)?;
    match tokio::time::timeout(
        t.timeout,
        tokio_tungstenite::client_async_with_config(upgrade, io, None),
    )
    .await
    {
        Err(_) => Err(Refused::new(
            Class::Timeout,
            format!(
                "no upgrade answer within {} (the request timeout)",
                humantime::format_duration(t.timeout)
            ),
        )),
        Ok(Ok((socket, _))) => Ok((socket, connected)),
        Ok(Err(WsError::Http(resp))) => {
            let code = resp.status().as_u16();
            let class = if code == 503 || code == 429 {
                Class::Shed
            } else {
                Class::HttpError
            };
            Err(Refused {
                class,
                failure: Failure {
                    what: What::Status(code),
                    body: resp
                        .body()
                        .as_ref()
                        .map(|b| b[..b.len().min(SAMPLE_BYTES)].to_vec()),
                },
                retry_after: resp.headers().contains_key(RETRY_AFTER),
            })
        }
        Ok(Err(WsError::Io(e))) => Err(io_refused("upgrade", &e)),
        Ok(Err(e)) => Err(Refused::new(Class::OtherError, format!("upgrade: {e}"))),
    }
}

/// The HTTP/1.1 upgrade request: the step's path and headers (Host,
/// User-Agent, the target's and the step's) and the WebSocket headers.
fn upgrade_request(
    steps: &Steps,
    req: hyper::Request<Full<Bytes>>,
) -> Result<hyper::Request<()>, Refused> {
    let pq = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let uri: hyper::Uri = format!("{}{pq}", steps.origin)
        .parse()
        .map_err(|e| Refused::new(Class::OtherError, format!("upgrade URI: {e}")))?;
    let (parts, _) = req.into_parts();
    let mut up = hyper::Request::new(());
    *up.uri_mut() = uri;
    *up.headers_mut() = parts.headers;
    let h = up.headers_mut();
    h.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(UPGRADE, HeaderValue::from_static("websocket"));
    h.insert("sec-websocket-version", HeaderValue::from_static("13"));
    let key = HeaderValue::from_str(&generate_key())
        .map_err(|e| Refused::new(Class::OtherError, format!("upgrade key: {e}")))?;
    h.insert("sec-websocket-key", key);
    Ok(up)
}
