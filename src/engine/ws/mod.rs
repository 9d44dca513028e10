//! WebSocket steps (`ws:` on a request or scenario step, see
//! [`crate::profile::ws`]): compiled once here, run by `run` where
//! `send_one` sends a step.
//!
//! A step opens its own connection (the step's `path` and `headers`, the
//! target's headers and TLS settings: `ws://` over `http://`, `wss://` over
//! `https://` with ALPN `http/1.1`), sends its messages in order, holds,
//! closes. Every figure is an ordinary outcome under its own name (indices
//! after the mix's requests, see [`Steps::names`]), so the recorder, budgets
//! and reports treat them as requests:
//! - `STEP connect`: the upgrade, from the step's due time (a step waiting
//!   for a lane keeps it) to the `101`; `503`/`429` are `shed`, other
//!   statuses `http_error`, a refused or broken connection as for HTTP.
//! - `STEP MESSAGE`: an awaited message's round trip, due when the one
//!   before it finished (the first: when the step was due, so a message
//!   that waits for its connection keeps its due time) to its correlated
//!   reply; `check_failed` when the reply fails `expect`, `timeout` after
//!   the request timeout; a close before the reply takes the close's class
//!   (`reset` for a normal one).
//! - `STEP`: the connection's lifetime, classed by how it closed: 1000/1001
//!   (or our own close answered) `ok`, 1011/1013 `shed` (1013, "try again
//!   later", as a shed answer with `Retry-After`), other codes
//!   `other_error`, a drop without a close frame `reset`.
//!
//! Sub-outcomes report `Event::Due` before their `Event::Done`, with a
//! step number past the pick's first (they are offered when due, as a
//! scenario's later steps), and never two at once: a drain that gives up
//! the step finds at most one under way.

mod conn;
mod step;

use std::time::Duration;

use bytes::Bytes;

use super::client::{ClientError, Extractor};
use super::feeder::Feeder;
use super::template::{self, Inputs, Text};
use crate::profile::ws::{Correlate, WsExpect};
use crate::profile::Profile;
pub(crate) use step::run;

/// The WebSocket steps of the mix, by request index.
#[derive(Default)]
pub struct Steps {
    steps: Vec<Option<Step>>,
    /// Outcome names after the mix's requests, in index order.
    names: Vec<String>,
    /// `wss://`: the target's TLS settings with ALPN `http/1.1`.
    tls: Option<tokio_rustls::TlsConnector>,
    /// `ws://host:port` or `wss://…`: the upgrade request's URI prefix.
    origin: String,
}

/// One compiled WebSocket step.
pub(crate) struct Step {
    /// The outcome index of `STEP connect`.
    connect: usize,
    messages: Vec<Message>,
    hold: Option<Duration>,
    close_after: Option<u64>,
}

struct Message {
    text: Text,
    reply: Option<Reply>,
    pause: Duration,
}

/// An awaited reply: its outcome index, how it is found, checked and read.
struct Reply {
    outcome: usize,
    correlate: Correlate,
    expect: Option<Expect>,
    extract: Vec<(usize, Extractor)>,
}

enum Expect {
    Json(String, serde_json::Value),
    Regex(regex::bytes::Regex),
    Contains(Vec<u8>),
}

impl Expect {
    fn of(e: &WsExpect) -> Result<Expect, String> {
        if let (Some(p), Some(v)) = (&e.json, &e.equals) {
            return Ok(Expect::Json(p.clone(), v.clone()));
        }
        if let Some(re) = &e.regex {
            return regex::bytes::Regex::new(re)
                .map(Expect::Regex)
                .map_err(|e| e.to_string());
        }
        match &e.contains {
            Some(c) => Ok(Expect::Contains(c.as_bytes().to_vec())),
            None => Err("expect: give json (with equals), regex or contains".into()),
        }
    }

    /// Whether `reply` passes; the check's words for the errors table.
    fn check(&self, reply: &[u8]) -> Result<(), String> {
        let pass = match self {
            Expect::Json(p, want) => serde_json::from_slice::<serde_json::Value>(reply)
                .ok()
                .and_then(|v| v.pointer(p).cloned())
                .is_some_and(|got| same(&got, want)),
            Expect::Regex(re) => re.is_match(reply),
            Expect::Contains(c) => reply.windows(c.len().max(1)).any(|w| w == c.as_slice()),
        };
        match (pass, self) {
            (true, _) => Ok(()),
            (false, Expect::Json(p, v)) => Err(format!("expect json {p:?} equals {v}")),
            (false, Expect::Regex(re)) => Err(format!("expect regex {:?}", re.as_str())),
            (false, Expect::Contains(c)) => {
                Err(format!("expect contains {:?}", String::from_utf8_lossy(c)))
            }
        }
    }
}

/// JSON values equal, or the same once written (`"7"` and `7`).
fn same(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    a == b || text(a) == text(b)
}

/// The value at `pointer` of a JSON message, as text (strings unquoted).
fn json_at(msg: &[u8], pointer: &str) -> Option<Bytes> {
    Extractor::Json(pointer.to_string()).take(&hyper::HeaderMap::new(), msg)
}

impl Steps {
    /// The step at request index `request`, if it is a WebSocket.
    #[inline]
    pub(crate) fn get(&self, request: usize) -> Option<&Step> {
        self.steps.get(request).and_then(Option::as_ref)
    }
    /// The outcome names the steps add after the mix's requests.
    pub fn names(&self) -> &[String] {
        &self.names
    }
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
    /// The protocol a run speaks (`meta.protocol`): the target's (`http`)
    /// alone, or with `WebSocket` beside or instead of it.
    pub fn protocol(&self, http: &str) -> String {
        let ws = if self.tls.is_some() {
            "WebSocket over TLS"
        } else {
            "WebSocket"
        };
        if self.is_empty() {
            http.to_string()
        } else if self.steps.iter().all(Option::is_some) {
            ws.to_string()
        } else {
            format!("{http} + {ws}")
        }
    }
}

/// Compile the profile's WebSocket steps; `first` is the first outcome
/// index after the mix's requests (their count). `url` is the target's.
pub fn compile(
    profile: &Profile,
    url: &str,
    inputs: &Inputs,
    feeders: &[Feeder],
    first: usize,
) -> Result<Steps, ClientError> {
    if !profile.has_ws() {
        return Ok(Steps::default());
    }
    let names = profile.ws_outcome_names();
    let setup = template::scenario_vars(&profile.setup);
    let mut next = first;
    let mut steps = Vec::new();
    for (key, sc, r) in profile.all_requests() {
        let Some(ws) = &r.ws else {
            steps.push(None);
            continue;
        };
        let vars = match sc.and_then(|k| profile.scenarios.get(k)) {
            Some(sc) => template::scenario_vars(sc.flat_steps()),
            None => Vec::new(),
        };
        let bad = |m: String| ClientError::Request(r.label(), m);
        let connect = next;
        next += 1;
        let mut messages = Vec::new();
        for (i, m) in ws.all_messages().iter().enumerate() {
            let field = match i.checked_sub(ws.send.len()) {
                None => format!("{key}.ws.send[{i}]"),
                Some(j) => format!("{key}.ws.messages[{j}].send"),
            };
            let names = template::Names {
                vars: &vars,
                setup: &setup,
            };
            let text = Text::compile(&m.send, &field, inputs, feeders, names)?;
            let reply = match &m.correlate {
                None => None,
                Some(c) => {
                    let outcome = next;
                    next += 1;
                    let expect = match &m.expect {
                        Some(e) => Some(Expect::of(e).map_err(&bad)?),
                        None => None,
                    };
                    let mut extract = Vec::new();
                    for (var, x) in &m.extract {
                        let at = vars.iter().position(|v| v == var).unwrap_or(0);
                        let e = match (&x.json, &x.regex) {
                            (Some(p), _) => Extractor::Json(p.clone()),
                            (None, Some(re)) => Extractor::Regex(
                                regex::bytes::Regex::new(re)
                                    .map_err(|e| bad(format!("extract.{var}.regex: {e}")))?,
                            ),
                            _ => return Err(bad(format!("extract.{var}: give json or regex"))),
                        };
                        extract.push((at, e));
                    }
                    Some(Reply {
                        outcome,
                        correlate: c.clone(),
                        expect,
                        extract,
                    })
                }
            };
            messages.push(Message {
                text,
                reply,
                pause: m.pause.unwrap_or_default(),
            });
        }
        steps.push(Some(Step {
            connect,
            messages,
            hold: ws.hold,
            close_after: ws.close_after,
        }));
    }
    let url = crate::profile::target_url(url).map_err(|e| ClientError::Url(url.into(), e))?;
    let https = url.scheme() == "https";
    let tls = if https {
        let mut cfg = super::client::tls_roots(&profile.target.tls)?;
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        Some(tokio_rustls::TlsConnector::from(std::sync::Arc::new(cfg)))
    } else {
        None
    };
    let authority = match (url.host_str(), url.port_or_known_default()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        _ => return Err(ClientError::Url(url.to_string(), "no host".into())),
    };
    Ok(Steps {
        steps,
        names: names.into_iter().map(|(full, _)| full).collect(),
        tls,
        origin: format!("{}://{authority}", if https { "wss" } else { "ws" }),
    })
}
