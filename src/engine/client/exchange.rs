//! The exchanges on a lane's connection: through the codec, hyper's
//! HTTP/1.1 or HTTP/2, each bounded by the request timeout, with the one
//! resend the module doc allows.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, CONNECTION};
use hyper::{Method, Request};

use super::classify::{classify_error, codec_failed, unprocessed};
use super::connect::{connect, LaneConn, Sender};
use super::request::{to_h2, Prepared};
use super::Target;
use crate::engine::h1;
use crate::metrics::Class;

/// How one exchange went.
pub struct Answer {
    pub class: Class,
    /// A shed answer carried `Retry-After`.
    pub retry_after: bool,
    /// Scenario steps: the values `extract` took, by variable index.
    pub extracted: Vec<(usize, Bytes)>,
    /// This exchange opened a connection, taking this long (TCP + TLS).
    pub connected: Option<Duration>,
}

impl From<Class> for Answer {
    fn from(class: Class) -> Self {
        Answer {
            class,
            retry_after: false,
            extracted: Vec::new(),
            connected: None,
        }
    }
}

impl LaneConn {
    /// Make sure the lane has a live sender: its own, the shared HTTP/2
    /// connection's, or a new connection (its connect time goes to `connected`).
    async fn open(&mut self, t: &Target, connected: &mut Option<Duration>) -> Result<(), Class> {
        if self.sender.as_ref().is_some_and(|s| !s.is_closed()) {
            return Ok(());
        }
        self.sender = None;
        let Some(slot) = self.slot.clone() else {
            let (s, took) = connect(t).await?;
            *connected = Some(took);
            self.sender = Some(s);
            return Ok(());
        };
        let _guard = slot.opening.lock().await;
        let live = slot
            .sender
            .borrow()
            .as_ref()
            .filter(|s| !s.is_closed())
            .cloned();
        if let Some(s) = live {
            self.sender = Some(Sender::H2(s));
            return Ok(());
        }
        let (s, took) = connect(t).await?;
        *connected = Some(took);
        if let Sender::H2(h) = &s {
            *slot.sender.borrow_mut() = Some(h.clone());
        }
        self.sender = Some(s);
        Ok(())
    }

    /// [`LaneConn::exchange`] within the request timeout; `None`: it ran out
    /// (the connection is then dropped: its state is unknown).
    pub async fn exchange_within(
        &mut self,
        t: &Target,
        p: &Prepared,
        msg: Option<Request<Full<Bytes>>>,
        check: bool,
    ) -> Option<Answer> {
        let now = tokio::time::Instant::now();
        // A timeout too large for the clock: a year is never reached.
        let deadline = now
            .checked_add(t.timeout)
            .unwrap_or_else(|| now + Duration::from_secs(365 * 86_400));
        let mut timer = match self.timer.take() {
            Some(mut s) => {
                s.as_mut().reset(deadline);
                s
            }
            None => Box::pin(tokio::time::sleep_until(deadline)),
        };
        let a = tokio::select! {
            biased;
            a = self.exchange(t, p, msg, check) => Some(a),
            _ = timer.as_mut() => None,
        };
        self.timer = Some(timer);
        if a.is_none() {
            self.reset();
        }
        a
    }

    /// Send one request and read its whole answer. Dropping this future
    /// mid-way leaves the connection unusable: call [`LaneConn::reset`].
    /// `msg`: this send's rendered request (templated), or `None` to send
    /// the pre-built one.
    pub async fn exchange(
        &mut self,
        t: &Target,
        p: &Prepared,
        mut msg: Option<Request<Full<Bytes>>>,
        check: bool,
    ) -> Answer {
        let mut connected = None;
        let mut a = self
            .exchange_inner(t, p, &mut msg, check, &mut connected)
            .await;
        a.connected = connected;
        if !t.keep_alive {
            // One connection per request: dropping the sender closes it.
            self.sender = None;
        }
        a
    }

    async fn exchange_inner(
        &mut self,
        t: &Target,
        p: &Prepared,
        msg: &mut Option<Request<Full<Bytes>>>,
        check: bool,
        connected: &mut Option<Duration>,
    ) -> Answer {
        // One resend, as `p.resend` allows: a kept-alive connection found
        // closed (the server's idle timeout), an HTTP/2 stream refused.
        for attempt in 0..2 {
            let reused = self.sender.is_some();
            if let Err(c) = self.open(t, connected).await {
                self.sender = None;
                return c.into();
            }
            if let Some(Sender::Codec(_)) = self.sender {
                match self.exchange_codec(t, p, msg.as_ref(), check).await {
                    Ok(a) => return a,
                    Err((class, retry)) => {
                        self.sender = None;
                        // The request went out: its fate is unknown.
                        if retry && reused && attempt == 0 && p.resend.unknown {
                            continue;
                        }
                        return class.into();
                    }
                }
            }
            let Some(sender) = self.sender.as_mut() else {
                return Class::OtherError.into();
            };
            if sender.ready().await.is_err() {
                self.sender = None;
                // Nothing was sent on it.
                if attempt == 0 && p.resend.unprocessed {
                    continue;
                }
                return Class::Reset.into();
            }
            let sent = match sender {
                Sender::H1(s) => {
                    let mut req = msg.take().unwrap_or_else(|| p.request.clone());
                    if !t.keep_alive {
                        req.headers_mut()
                            .insert(CONNECTION, HeaderValue::from_static("close"));
                    }
                    s.try_send_request(req).await.map_err(|mut e| {
                        // An unsent request comes back, to be retried as it was.
                        *msg = e.take_message();
                        let retry = msg.is_some() && reused;
                        (classify_error(e.error()), retry)
                    })
                }
                Sender::Codec(_) => return Class::OtherError.into(),
                Sender::H2(s) => {
                    let req = match msg.as_ref() {
                        Some(m) => to_h2(m.clone(), &t.origin),
                        None => p.request_h2.clone(),
                    };
                    s.try_send_request(req).await.map_err(|mut e| {
                        let unsent = e.take_message().is_some();
                        let retry = (unsent && reused) || unprocessed(e.error());
                        (classify_error(e.error()), retry)
                    })
                }
            };
            let resp = match sent {
                Ok(r) => r,
                Err((class, retry)) => {
                    self.sender = None;
                    // hyper gave the request back unsent, or HTTP/2 refused it.
                    if retry && attempt == 0 && p.resend.unprocessed {
                        continue;
                    }
                    return class.into();
                }
            };
            let mut class = p.classify_status(resp.status());
            let retry_after =
                class == Class::Shed && resp.headers().contains_key(hyper::header::RETRY_AFTER);
            let want = !p.extract.is_empty() && class == Class::Ok;
            let headers = if want {
                resp.headers().clone()
            } else {
                hyper::HeaderMap::new()
            };
            let mut body = resp.into_body();
            let mut extracted = Vec::new();
            if (check || want) && class == Class::Ok {
                match http_body_util::Limited::new(body, p.max_body)
                    .collect()
                    .await
                {
                    Ok(b) => {
                        let b = b.to_bytes();
                        if check && !p.body_ok(&b) {
                            class = Class::CheckFailed;
                        }
                        for (i, x) in &p.extract {
                            match x.take(&headers, &b) {
                                Some(v) => extracted.push((*i, v)),
                                // Later steps would go out without it.
                                None => class = Class::CheckFailed,
                            }
                        }
                    }
                    Err(e) => {
                        self.sender = None;
                        return match e.downcast_ref::<hyper::Error>() {
                            Some(e) => classify_error(e).into(),
                            // Limited's own error: past `expect.max_body`.
                            None => Class::BodyTooLarge.into(),
                        };
                    }
                }
            } else {
                while let Some(f) = body.frame().await {
                    if let Err(e) = f {
                        self.sender = None;
                        return classify_error(&e).into();
                    }
                }
            }
            return Answer {
                class,
                retry_after,
                extracted,
                connected: None,
            };
        }
        Class::Reset.into()
    }

    /// One exchange on the codec's connection; `Err`: its class, and
    /// whether the request may be sent again (not one byte of an answer
    /// came back: a kept-alive connection the server had closed).
    async fn exchange_codec(
        &mut self,
        t: &Target,
        p: &Prepared,
        msg: Option<&Request<Full<Bytes>>>,
        check: bool,
    ) -> Result<Answer, (Class, bool)> {
        let LaneConn {
            sender, wire, body, ..
        } = self;
        let Some(Sender::Codec(c)) = sender.as_mut() else {
            return Err((Class::OtherError, false));
        };
        let bytes: &[u8] = match msg {
            Some(m) => {
                wire.clear();
                h1::encode(m, !t.keep_alive, wire);
                wire
            }
            None => &p.wire,
        };
        let head_request = p.request.method() == Method::HEAD;
        let mut headers = (!p.extract.is_empty()).then(hyper::HeaderMap::new);
        let head = c
            .send(bytes, head_request, headers.as_mut())
            .await
            .map_err(codec_failed)?;
        let mut class = p.classify_code(head.status);
        let retry_after = class == Class::Shed && head.retry_after;
        let want = !p.extract.is_empty() && class == Class::Ok;
        let keep = (check || want) && class == Class::Ok;
        body.clear();
        let reusable = c
            .body(&head, keep.then_some(&mut *body), p.max_body)
            .await
            .map_err(codec_failed)?;
        let mut extracted = Vec::new();
        if keep {
            if check && !p.body_ok(body) {
                class = Class::CheckFailed;
            }
            let none = hyper::HeaderMap::new();
            for (i, x) in &p.extract {
                match x.take(headers.as_ref().unwrap_or(&none), body) {
                    Some(v) => extracted.push((*i, v)),
                    // Later steps would go out without it.
                    None => class = Class::CheckFailed,
                }
            }
            // A lane keeps no more than a small answer's room between checks.
            body.clear();
            body.shrink_to(64 * 1024);
        }
        if !reusable {
            *sender = None;
        }
        Ok(Answer {
            class,
            retry_after,
            extracted,
            connected: None,
        })
    }

    /// Forget the connection (after a timeout the stream is in an unknown state).
    pub fn reset(&mut self) {
        self.sender = None;
    }
}
