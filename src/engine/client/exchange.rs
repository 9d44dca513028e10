//! The exchanges on a lane's connection: through the codec, hyper's
//! HTTP/1.1 or HTTP/2, each bounded by the request timeout, with the one
//! resend the module doc allows.

use std::cell::RefCell;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, CONNECTION, SET_COOKIE};
use hyper::{Method, Request};

use super::classify::{codec_failed, hyper_fault, unprocessed, Fault};
use super::connect::{connect, LaneConn, Sender};
use super::request::{to_h2, Prepared};
use super::Target;
use crate::engine::h1;
use crate::metrics::errors::{Failure, What, SAMPLE_BYTES};
use crate::metrics::Class;

/// Distinct (request, status) pairs a worker samples a body of.
const SAMPLED_MAX: usize = 32;

thread_local! {
    /// The (request, status) pairs whose first body this worker has kept:
    /// a per-thread list, so sampling takes no lock and reads few bodies.
    static SAMPLED: RefCell<Vec<(usize, u16)>> = const { RefCell::new(Vec::new()) };
}

/// Whether this worker still wants a body of `status` from request `request`
/// (the first one of each pair is kept; asking again counts as taken).
fn take_sample(request: usize, status: u16) -> bool {
    SAMPLED.with(|s| {
        let mut s = s.borrow_mut();
        if s.len() >= SAMPLED_MAX || s.contains(&(request, status)) {
            return false;
        }
        s.push((request, status));
        true
    })
}

/// The unexpected or failed answer's failure: its status or check and,
/// when kept, the start of its body.
fn status_failure(what: What, body: Option<&[u8]>) -> Option<Failure> {
    Some(Failure {
        what,
        body: body.map(|b| b[..b.len().min(SAMPLE_BYTES)].to_vec()),
    })
}

/// How one exchange went.
pub struct Answer {
    pub class: Class,
    /// A shed answer carried `Retry-After`.
    pub retry_after: bool,
    /// Scenario steps: the values `extract` took, by variable index.
    pub extracted: Vec<(usize, Bytes)>,
    /// This exchange opened a connection, taking this long (TCP + TLS).
    pub connected: Option<Duration>,
    /// What went wrong, for the errors table (`None`: ok, or nothing more
    /// to say than the class).
    pub failure: Option<Failure>,
    /// Steps that keep cookies: the answer's `Set-Cookie` values.
    pub set_cookies: Vec<HeaderValue>,
    /// The answer's status (0: none came).
    pub status: u16,
    /// Its body matched the step's `refresh.body_regex`.
    pub expired: bool,
}

impl From<Class> for Answer {
    fn from(class: Class) -> Self {
        Answer {
            class,
            retry_after: false,
            extracted: Vec::new(),
            connected: None,
            failure: None,
            status: 0,
            set_cookies: Vec::new(),
            expired: false,
        }
    }
}

impl From<Fault> for Answer {
    fn from(f: Fault) -> Self {
        let (class, failure) = f.failure();
        Answer {
            failure: Some(failure),
            ..class.into()
        }
    }
}

impl LaneConn {
    /// Make sure the lane has a live sender: its own, the shared HTTP/2
    /// connection's, or a new connection (its connect time goes to `connected`).
    async fn open(&mut self, t: &Target, connected: &mut Option<Duration>) -> Result<(), Fault> {
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
        // A templated call's message is rendered as JSON and encoded per
        // send; a static one (cloned for a trace header) is framed already.
        let templated = p.dynamic.is_some();
        if let (Some(call), Some(m), true) = (p.grpc.as_deref(), msg.as_mut(), templated) {
            if let Err(f) = call.encode(m).await {
                return Answer {
                    failure: Some(f),
                    ..Class::OtherError.into()
                };
            }
        }
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
                    Err((fault, retry)) => {
                        self.sender = None;
                        // The request went out: its fate is unknown.
                        if retry && reused && attempt == 0 && p.resend.unknown {
                            continue;
                        }
                        return fault.into();
                    }
                }
            }
            let Some(sender) = self.sender.as_mut() else {
                return Class::OtherError.into();
            };
            if let Err(e) = sender.ready().await {
                self.sender = None;
                // Nothing was sent on it.
                if attempt == 0 && p.resend.unprocessed {
                    continue;
                }
                return Fault::new(Class::Reset, hyper_fault(&e).why).into();
            }
            let began = std::time::Instant::now();
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
                        (hyper_fault(e.error()), retry)
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
                        (hyper_fault(e.error()), retry)
                    })
                }
            };
            let resp = match sent {
                Ok(r) => r,
                Err((fault, retry)) => {
                    self.sender = None;
                    // hyper gave the request back unsent, or HTTP/2 refused it.
                    if retry && attempt == 0 && p.resend.unprocessed {
                        continue;
                    }
                    return fault.into();
                }
            };
            if let Some(call) = &p.grpc {
                return match crate::engine::grpc::read(resp).await {
                    Ok((reply, streamed)) => {
                        call.streamed(began, streamed);
                        Answer {
                            retry_after: reply.retry_after,
                            failure: reply.failure,
                            ..reply.class.into()
                        }
                    }
                    Err(e) => {
                        self.sender = None;
                        hyper_fault(&e).into()
                    }
                };
            }
            let mut class = p.classify_status(resp.status());
            let retry_after =
                class == Class::Shed && resp.headers().contains_key(hyper::header::RETRY_AFTER);
            let want = !p.extract.is_empty() && class == Class::Ok;
            let headers = if want {
                resp.headers().clone()
            } else {
                hyper::HeaderMap::new()
            };
            let status = resp.status().as_u16();
            let set_cookies = if p.cookies {
                resp.headers().get_all(SET_COOKIE).iter().cloned().collect()
            } else {
                Vec::new()
            };
            let mut body = resp.into_body();
            let mut extracted = Vec::new();
            let mut failure = None;
            let sample = class != Class::Ok && take_sample(p.index, status);
            let mut expired = false;
            if ((check || want) && class == Class::Ok) || sample || p.expired.is_some() {
                match http_body_util::Limited::new(body, p.max_body)
                    .collect()
                    .await
                {
                    Ok(b) if class != Class::Ok => {
                        let b = b.to_bytes();
                        expired = p.expired.as_ref().is_some_and(|re| re.is_match(&b));
                        failure = status_failure(What::Status(status), sample.then_some(&b[..]));
                    }
                    Ok(b) => {
                        let b = b.to_bytes();
                        expired = p.expired.as_ref().is_some_and(|re| re.is_match(&b));
                        (class, failure) = p.judge_body(check, &headers, &b, &mut extracted);
                    }
                    Err(e) => {
                        self.sender = None;
                        return match e.downcast_ref::<hyper::Error>() {
                            Some(e) => hyper_fault(e).into(),
                            // Limited's own error: past `expect.max_body`.
                            None => {
                                Fault::new(Class::BodyTooLarge, "body larger than expect.max_body")
                                    .into()
                            }
                        };
                    }
                }
            } else {
                while let Some(f) = body.frame().await {
                    if let Err(e) = f {
                        self.sender = None;
                        return hyper_fault(&e).into();
                    }
                }
                if class != Class::Ok {
                    failure = status_failure(What::Status(status), None);
                }
            }
            return Answer {
                class,
                retry_after,
                extracted,
                connected: None,
                failure,
                status,
                set_cookies,
                expired,
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
    ) -> Result<Answer, (Fault, bool)> {
        let LaneConn {
            sender, wire, body, ..
        } = self;
        let Some(Sender::Codec(c)) = sender.as_mut() else {
            return Err((Fault::new(Class::OtherError, "no connection"), false));
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
        let mut set_cookies = Vec::new();
        if p.cookies && head.set_cookie {
            // Read again, only when there is a cookie to keep.
            let mut all = hyper::HeaderMap::new();
            let _ = h1::parse_head(c.head_bytes(&head), head_request, Some(&mut all));
            set_cookies = all.get_all(SET_COOKIE).iter().cloned().collect();
        }
        let mut class = p.classify_code(head.status);
        let retry_after = class == Class::Shed && head.retry_after;
        let want = !p.extract.is_empty() && class == Class::Ok;
        let keep = (check || want) && class == Class::Ok;
        let sample = class != Class::Ok && take_sample(p.index, head.status);
        let scan = p.expired.is_some();
        body.clear();
        let reusable = c
            .body(
                &head,
                (keep || sample || scan).then_some(&mut *body),
                p.max_body,
            )
            .await
            .map_err(codec_failed)?;
        let expired = p.expired.as_ref().is_some_and(|re| re.is_match(body));
        let mut extracted = Vec::new();
        let mut failure = None;
        if class != Class::Ok {
            let kept = sample.then_some(body.as_slice());
            failure = status_failure(What::Status(head.status), kept);
        }
        if keep || sample || scan {
            if keep {
                let none = hyper::HeaderMap::new();
                let headers = headers.as_ref().unwrap_or(&none);
                (class, failure) = p.judge_body(check, headers, body, &mut extracted);
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
            failure,
            status: head.status,
            set_cookies,
            expired,
        })
    }

    /// Forget the connection (after a timeout the stream is in an unknown state).
    pub fn reset(&mut self) {
        self.sender = None;
    }
}

impl Prepared {
    /// An ok answer's body, checked (when `check`) and its values
    /// extracted: `ok`, or `check_failed` and the check or extraction that
    /// failed (with the body's start as its sample, the first per worker).
    fn judge_body(
        &self,
        check: bool,
        headers: &hyper::HeaderMap,
        body: &[u8],
        extracted: &mut Vec<(usize, Bytes)>,
    ) -> (Class, Option<Failure>) {
        let mut what = if check { self.failed_check(body) } else { None };
        for (i, x) in &self.extract {
            match x.take(headers, body) {
                Some(v) => extracted.push((*i, v)),
                // Later steps would go out without it.
                None => what = what.or_else(|| Some(What::Check(x.describe().into()))),
            }
        }
        match what {
            None => (Class::Ok, None),
            Some(what) => {
                // Checks have no status: 0 keys their sample.
                let kept = take_sample(self.index, 0).then_some(body);
                (Class::CheckFailed, status_failure(what, kept))
            }
        }
    }
}
