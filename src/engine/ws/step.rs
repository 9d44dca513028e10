//! Running one WebSocket step: connect, the messages in order (awaiting
//! and checking correlated replies), the hold, the close; every outcome
//! reported as it ends (the rules in [`super`]'s doc).

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use tokio::time::timeout_at;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message as Frame;

use super::conn::{self, Socket};
use super::{json_at, Correlate, Message, Step};
use crate::engine::template::Ctx;
use crate::engine::{EngineConfig, Event};
use crate::metrics::errors::{Failure, What, SAMPLE_BYTES};
use crate::metrics::{Class, Outcome};

/// Reports one step's outcomes (a Due, then a Failed when not ok, then its Done).
struct Reporter<'a> {
    report: &'a mut dyn FnMut(Event),
    phase: usize,
    /// The step's place in its pick (its connect is reported as it).
    step: usize,
}

impl Reporter<'_> {
    fn due(&mut self, first: bool, request: usize, intended: Instant, sent: Instant) {
        // Past the pick's first step: offered when due (see the module doc).
        let step = if first { self.step } else { self.step + 1 };
        (self.report)(Event::Due {
            step,
            request,
            intended,
            sent,
        });
    }

    #[allow(clippy::too_many_arguments)]
    fn done(
        &mut self,
        request: usize,
        class: Class,
        failure: Option<Failure>,
        (intended, sent): (Instant, Instant),
        connect: Option<Duration>,
        retry_after: bool,
    ) -> Instant {
        let end = Instant::now();
        if let Some(f) = failure.filter(|_| class != Class::Ok) {
            (self.report)(Event::Failed(f));
        }
        (self.report)(Event::Done(Outcome {
            phase: self.phase,
            request,
            class,
            intended,
            sent,
            end,
            retry_after,
            connect,
            // A socket carries no trace context (yet).
            trace: None,
        }));
        end
    }

    /// An outcome that failed for `why`.
    fn failed(
        &mut self,
        request: usize,
        class: Class,
        why: String,
        at: (Instant, Instant),
    ) -> Instant {
        self.done(request, class, Some(Failure::message(why)), at, None, false)
    }
}

/// What came from the socket.
enum Got {
    Data(Bytes),
    /// The server's close frame (its code, if any).
    Closed(Option<CloseFrame>),
    /// The connection broke without a close frame.
    Dropped(String),
    TimedOut,
}

async fn next(socket: &mut Socket, deadline: Instant) -> Got {
    loop {
        match timeout_at(deadline.into(), socket.next()).await {
            Err(_) => return Got::TimedOut,
            Ok(None) => return Got::Dropped("connection closed without a close frame".into()),
            Ok(Some(Err(e))) => return Got::Dropped(format!("connection broke: {e}")),
            Ok(Some(Ok(Frame::Text(t)))) => return Got::Data(Bytes::from(t)),
            Ok(Some(Ok(Frame::Binary(b)))) => return Got::Data(b),
            Ok(Some(Ok(Frame::Close(f)))) => return Got::Closed(f),
            // Pings are answered by the library.
            Ok(Some(Ok(_))) => continue,
        }
    }
}

/// A close's class: 1000/1001 (and none) `ok`, 1011/1013 `shed`, others
/// `other_error`; with the errors table's words.
fn close_class(f: Option<&CloseFrame>) -> (Class, Failure) {
    let code = f.map_or(1005, |f| u16::from(f.code));
    let reason = f
        .map(|f| f.reason.as_str())
        .filter(|r| !r.is_empty())
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    let class = match code {
        1000 | 1001 | 1005 => Class::Ok,
        1011 | 1013 => Class::Shed,
        _ => Class::OtherError,
    };
    let meaning = match code {
        1011 => " (server error)",
        1013 => " (try again later)",
        1008 => " (policy violation)",
        _ => "",
    };
    let words = format!("closed by the server: code {code}{meaning}{reason}");
    (class, Failure::message(words))
}

/// How the connection ended, for the step's own outcome.
struct Ending {
    class: Class,
    failure: Option<Failure>,
    /// A 1013 close ("try again later"): counted as a shed answer that
    /// carried `Retry-After`, the hint it is on a socket.
    retry: bool,
}

impl Ending {
    fn from(got: &Got) -> Option<Ending> {
        match got {
            Got::Closed(f) => {
                let (class, failure) = close_class(f.as_ref());
                Some(Ending {
                    class,
                    failure: Some(failure),
                    retry: f.as_ref().is_some_and(|f| u16::from(f.code) == 1013),
                })
            }
            Got::Dropped(why) => Some(Ending {
                class: Class::Reset,
                failure: Some(Failure::message(why.clone())),
                retry: false,
            }),
            _ => None,
        }
    }
}

/// Run WebSocket step `step` (request `index`, place `k` in its pick, due
/// at `intended`) and report its outcomes. Returns the step's class (the
/// first not `ok` of its outcomes) and when it ended, or `None` when its
/// upgrade request could not be rendered (a `unique` feeder ran out).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run(
    cfg: &EngineConfig,
    step: &Step,
    vars: &mut [Option<Bytes>],
    counters: Ctx<'_>,
    (phase, k, index): (usize, usize, usize),
    intended: Instant,
    report: &mut dyn FnMut(Event),
) -> Option<(Class, Instant)> {
    let p = &cfg.requests[index];
    let req = match &p.dynamic {
        None => p.request.clone(),
        Some(d) => d.render(&cfg.templates, &Ctx { vars, ..counters })?,
    };
    let mut out = Reporter {
        report,
        phase,
        step: k,
    };
    let began = Instant::now();
    out.due(true, step.connect, intended, began);
    let (mut socket, connect) = match conn::open(&cfg.ws, &cfg.target, req).await {
        Ok(s) => s,
        Err(r) => {
            let end = out.done(
                step.connect,
                r.class,
                Some(r.failure),
                (intended, began),
                None,
                r.retry_after,
            );
            return Some((r.class, end));
        }
    };
    out.done(
        step.connect,
        Class::Ok,
        None,
        (intended, began),
        Some(connect),
        false,
    );
    // The first message was due when the step was: it waited for the connection.
    let mut due = intended;
    let mut class = Class::Ok;
    let mut ending: Option<Ending> = None;
    let mut received: u64 = 0;
    for m in &step.messages {
        if due > Instant::now() {
            tokio::time::sleep_until(due.into()).await;
        }
        let (c, end, e) = message(
            cfg,
            m,
            &mut socket,
            (vars, counters),
            &mut out,
            due,
            &mut received,
        )
        .await;
        due = end + m.pause;
        if c != Class::Ok {
            class = c;
        }
        if e.is_some() {
            ending = e;
        }
        if c != Class::Ok || ending.is_some() {
            break;
        }
    }
    if let (Some(hold), None, Class::Ok) = (step.hold, &ending, class) {
        let until = Instant::now() + hold;
        while step.close_after.is_none_or(|n| received < n) {
            let got = next(&mut socket, until).await;
            if let Got::Data(_) = got {
                received += 1;
                continue;
            }
            ending = Ending::from(&got);
            break;
        }
    }
    let ending = match ending {
        Some(e) => e,
        None => close(&mut socket, cfg.target.timeout).await,
    };
    if class == Class::Ok {
        class = ending.class;
    }
    out.due(false, index, intended, began);
    let end = out.done(
        index,
        ending.class,
        ending.failure,
        (intended, began),
        None,
        ending.retry,
    );
    Some((class, end))
}

/// Our close (1000), awaiting the server's answer up to `within`.
async fn close(socket: &mut Socket, within: Duration) -> Ending {
    let frame = CloseFrame {
        code: CloseCode::Normal,
        reason: "".into(),
    };
    let deadline = Instant::now() + within;
    let sent = timeout_at(deadline.into(), socket.close(Some(frame))).await;
    let answered = match sent {
        Ok(Ok(())) => loop {
            match next(socket, deadline).await {
                Got::Data(_) => continue,
                Got::TimedOut => break false,
                // Closed, or the connection ended after our close.
                _ => break true,
            }
        },
        _ => false,
    };
    Ending {
        class: if answered { Class::Ok } else { Class::Timeout },
        failure: (!answered).then(|| {
            Failure::message(format!(
                "no answer to our close within {}",
                humantime::format_duration(within)
            ))
        }),
        retry: false,
    }
}

/// Send message `m` due at `due`; await, check and read its reply when it
/// has one. Returns its class, when it finished, and how the connection
/// ended if it did meanwhile.
async fn message(
    cfg: &EngineConfig,
    m: &Message,
    socket: &mut Socket,
    (vars, counters): (&mut [Option<Bytes>], Ctx<'_>),
    out: &mut Reporter<'_>,
    due: Instant,
    received: &mut u64,
) -> (Class, Instant, Option<Ending>) {
    let Some(text) = m.text.render(&cfg.templates, &Ctx { vars, ..counters }) else {
        return (Class::Unfinished, Instant::now(), None);
    };
    let sent = Instant::now();
    let deadline = sent + cfg.target.timeout;
    let wanted = match &m.reply {
        Some(r) => {
            out.due(false, r.outcome, due, sent);
            match &r.correlate {
                Correlate::Next => None,
                Correlate::Json(p) => match json_at(&text, p) {
                    Some(v) => Some(v),
                    None => {
                        let why =
                            format!("correlate json {p:?}: the sent message has no value there");
                        let end = out.failed(r.outcome, Class::OtherError, why, (due, sent));
                        return (Class::OtherError, end, None);
                    }
                },
            }
        }
        None => None,
    };
    let frame = match tokio_tungstenite::tungstenite::Utf8Bytes::try_from(text.clone()) {
        Ok(t) => Frame::Text(t),
        Err(_) => Frame::Binary(text),
    };
    let failed = match timeout_at(deadline.into(), socket.send(frame)).await {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some((Class::Reset, format!("send: {e}"))),
        Err(_) => Some((Class::Timeout, "send: timed out".to_string())),
    };
    let Some(r) = &m.reply else {
        let ending = failed.map(|(class, why)| Ending {
            class,
            failure: Some(Failure::message(why)),
            retry: false,
        });
        return (Class::Ok, Instant::now(), ending);
    };
    if let Some((class, why)) = failed {
        let end = out.failed(r.outcome, class, why.clone(), (due, sent));
        let ending = Ending {
            class,
            failure: Some(Failure::message(why)),
            retry: false,
        };
        return (class, end, Some(ending));
    }
    loop {
        let got = next(socket, deadline).await;
        let reply = match got {
            Got::Data(b) => b,
            Got::TimedOut => {
                let why = format!(
                    "no reply within {} (the request timeout)",
                    humantime::format_duration(cfg.target.timeout)
                );
                let end = out.failed(r.outcome, Class::Timeout, why, (due, sent));
                return (Class::Timeout, end, None);
            }
            _ => {
                let ending = Ending::from(&got);
                let (class, failure) = match &ending {
                    // Closed normally before the reply: no answer, as a reset.
                    Some(e) if e.class == Class::Ok => (
                        Class::Reset,
                        Some(Failure::message("closed by the server before the reply")),
                    ),
                    Some(e) => (e.class, e.failure.clone()),
                    None => (Class::Reset, None),
                };
                let retry = ending.as_ref().is_some_and(|e| e.retry);
                let end = out.done(r.outcome, class, failure, (due, sent), None, retry);
                return (class, end, ending);
            }
        };
        *received += 1;
        if let (Some(w), Correlate::Json(p)) = (&wanted, &r.correlate) {
            if json_at(&reply, p).as_ref() != Some(w) {
                continue; // another message's reply, or a push
            }
        }
        let mut failure = r.expect.as_ref().and_then(|e| e.check(&reply).err());
        for (i, x) in &r.extract {
            match x.take(&hyper::HeaderMap::new(), &reply) {
                Some(v) => {
                    if let Some(slot) = vars.get_mut(*i) {
                        *slot = Some(v);
                    }
                }
                None => failure = failure.or_else(|| Some(x.describe())),
            }
        }
        let class = if failure.is_some() {
            Class::CheckFailed
        } else {
            Class::Ok
        };
        let failure = failure.map(|c| Failure {
            what: What::Check(c.into()),
            body: Some(reply[..reply.len().min(SAMPLE_BYTES)].to_vec()),
        });
        let end = out.done(r.outcome, class, failure, (due, sent), None, false);
        return (class, end, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closed(code: u16) -> Ending {
        let frame = CloseFrame {
            code: CloseCode::from(code),
            reason: "".into(),
        };
        Ending::from(&Got::Closed(Some(frame))).expect("an ending")
    }

    #[test]
    fn close_codes_are_classes() {
        for (code, class) in [
            (1000, Class::Ok),
            (1001, Class::Ok),
            (1011, Class::Shed),
            (1013, Class::Shed),
            (1008, Class::OtherError),
            (4000, Class::OtherError),
        ] {
            assert_eq!(closed(code).class, class, "{code}");
        }
        assert!(closed(1013).retry && !closed(1011).retry);
        let none = Ending::from(&Got::Closed(None)).expect("an ending");
        assert_eq!(none.class, Class::Ok, "a close frame without a code");
        let drop = Ending::from(&Got::Dropped("gone".into())).expect("an ending");
        assert_eq!(drop.class, Class::Reset);
        assert!(Ending::from(&Got::TimedOut).is_none());
    }
}
