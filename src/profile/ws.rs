//! A WebSocket step as written in YAML (`ws:` on a request or scenario
//! step), its checks, and the names its outcomes are recorded under.
//!
//! The step's own `path` and `headers` make the upgrade request (over
//! `ws://` or `wss://` as the target's scheme says); `ws:` holds what is
//! sent on the socket. Each step records up to three kinds of outcome, each
//! under its own name (so budgets, histograms and reports need nothing
//! new): `STEP connect` (the upgrade), `STEP MESSAGE` (a message's round
//! trip to its correlated reply) and `STEP` itself (the connection's
//! lifetime, classed by its close code).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::locate::Place;
use super::{ExtractSpec, Profile, RequestSpec};

/// `ws:` — this step is a WebSocket: its `path` and `headers` make the
/// upgrade request; then its messages are sent in order on the socket.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WsSpec {
    /// Text messages sent in order, none awaiting a reply (shorthand for
    /// `messages` with only `send`); templated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub send: Vec<String>,
    /// Messages sent in order (after those of `send`), each may await its
    /// reply, check and extract from it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<WsMessage>,
    /// After the last message, keep the connection open this long (reading
    /// what the server pushes), then close it (code 1000).
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<crate::profile::schema::Duration>")]
    pub hold: Option<Duration>,
    /// End the `hold` early once the server has sent this many messages
    /// (counted from the connection's start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_after: Option<u64>,
}

/// One message of a WebSocket step.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WsMessage {
    /// Names its round trip (`STEP NAME`); default `message N` (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The text frame sent; templated (`{{ seq }}`, `{{ vars.token }}`, …).
    pub send: String,
    /// Which received message is this one's reply: `next` (the next one to
    /// arrive) or `{json: /id}` (the first whose `/id` equals the sent
    /// message's). Without it nothing is awaited and no round trip recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlate: Option<Correlate>,
    /// What the reply must hold (else `check_failed`); needs `correlate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<WsExpect>,
    /// Values taken from the reply (`json` or `regex`) for later messages
    /// and steps (`{{ vars.NAME }}`); scenario steps only; needs `correlate`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extract: BTreeMap<String, ExtractSpec>,
    /// Pause after this message (after its reply, when awaited) before the
    /// next one is due.
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<crate::profile::schema::Duration>")]
    pub pause: Option<Duration>,
}

/// How a reply is matched to the message it answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Correlate {
    /// The next message the server sends.
    Next,
    /// A JSON pointer (`/id`): the reply carries the sent message's value there.
    Json(String),
}

/// A check on a reply: exactly one of `json` (with `equals`), `regex`, `contains`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WsExpect {
    /// A JSON pointer into the reply whose value must be `equals`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json: Option<String>,
    /// The value expected at `json` (a string, number or boolean).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<serde_json::Value>,
    /// A regex the reply must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// Text the reply must contain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
}

impl WsSpec {
    /// Every message in sending order: `send`'s, then `messages`.
    pub fn all_messages(&self) -> Vec<WsMessage> {
        self.send
            .iter()
            .map(|s| WsMessage {
                send: s.clone(),
                ..WsMessage::default()
            })
            .chain(self.messages.iter().cloned())
            .collect()
    }
}

impl WsMessage {
    /// Its name (`message N`, 1-based over [`WsSpec::all_messages`]).
    pub fn label(&self, n: usize) -> String {
        self.name.clone().unwrap_or_else(|| format!("message {n}"))
    }
}

/// The extra outcome names of one WebSocket step whose full name is
/// `step`: `STEP connect`, then each awaited message's `STEP NAME`; with
/// the own names (`connect`, `NAME`) of a scenario step's. In engine order.
pub fn outcome_names(step: &str, own: Option<&str>, ws: &WsSpec) -> Vec<(String, Option<String>)> {
    let mut names = vec!["connect".to_string()];
    for (i, m) in ws.all_messages().iter().enumerate() {
        if m.correlate.is_some() {
            names.push(m.label(i + 1));
        }
    }
    names
        .into_iter()
        .map(|n| (format!("{step} {n}"), own.map(|o| format!("{o} {n}"))))
        .collect()
}

impl Profile {
    /// The outcome names WebSocket steps add after the mix's own requests
    /// (see [`outcome_names`]), in engine order.
    pub fn ws_outcome_names(&self) -> Vec<(String, Option<String>)> {
        let mut out = Vec::new();
        for (_, sc, r) in self.all_requests() {
            let Some(ws) = &r.ws else { continue };
            match sc.and_then(|k| self.scenarios.get(k)) {
                Some(sc) => out.extend(outcome_names(
                    &format!("{}/{}", sc.name, r.label()),
                    Some(&r.label()),
                    ws,
                )),
                None => out.extend(outcome_names(&r.label(), None, ws)),
            }
        }
        out
    }

    /// Whether any request or step of the mix is a WebSocket.
    pub fn has_ws(&self) -> bool {
        self.all_requests().iter().any(|(_, _, r)| r.ws.is_some())
    }
}

/// The checks of a WebSocket step `which` (in section `sect`; `scenario`:
/// it is a scenario step, where `extract` works); each `extract` entry's
/// own form is checked with the HTTP steps' (in `validate`).
pub(super) fn check(
    which: &str,
    r: &RequestSpec,
    ws: &WsSpec,
    sect: &'static str,
    scenario: bool,
) -> Result<(), (String, Option<Place>)> {
    let at = |needle: &str| Some(Place::Text(sect, needle.to_string()));
    if r.body.is_some() || !r.method.eq_ignore_ascii_case("GET") {
        return Err((
            format!("{which}: a WebSocket step's upgrade is a GET without a body; send data as ws.messages"),
            at("ws:"),
        ));
    }
    let e = &r.expect;
    if !e.status.is_empty() || e.body_contains.is_some() || e.body_regex.is_some() {
        return Err((
            format!("{which}: a WebSocket step's upgrade expects 101; check replies with `expect` under a ws message"),
            at("expect:"),
        ));
    }
    if !r.extract.is_empty() {
        return Err((
            format!("{which}: a WebSocket step extracts from its replies: put `extract` under a ws message with `correlate`"),
            at("ws:"),
        ));
    }
    let all = ws.all_messages();
    if all.is_empty() && ws.hold.is_none() {
        return Err((
            format!("{which}: ws needs `send`, `messages` or `hold` (a socket that only connects and closes)"),
            at("ws:"),
        ));
    }
    if ws.close_after.is_some() && ws.hold.is_none() {
        return Err((
            format!("{which}: ws.close_after ends the `hold` early; give `hold` too"),
            at("close_after"),
        ));
    }
    let mut names = Vec::new();
    for (i, m) in all.iter().enumerate() {
        let what = format!("{which}: ws message `{}`", m.label(i + 1));
        let needs_reply = |key: &str| {
            Err((
                format!("{what}: `{key}` reads the reply; say which message is the reply with `correlate: next` or `correlate: {{json: /id}}`"),
                at(&format!("{key}:")),
            ))
        };
        if m.correlate.is_none() {
            if m.expect.is_some() {
                return needs_reply("expect");
            }
            if !m.extract.is_empty() {
                return needs_reply("extract");
            }
            continue;
        }
        if let Some(Correlate::Json(p)) = &m.correlate {
            pointer(&what, "correlate.json", p).map_err(|e| (e, at(p)))?;
        }
        let label = m.label(i + 1);
        if label == "connect" || names.contains(&label) {
            return Err((
                format!("{what}: two outcomes of this step would share the name `{label}`; name the message"),
                at(&label),
            ));
        }
        names.push(label);
        if let Some(e) = &m.expect {
            check_expect(&what, e).map_err(|(m, needle)| (m, at(&needle)))?;
        }
        if !m.extract.is_empty() && !scenario {
            return Err((
                format!("{what}: `extract` works in scenario steps only"),
                at("extract:"),
            ));
        }
        for (var, x) in &m.extract {
            if x.header.is_some() {
                return Err((
                    format!("{what}: extract.{var}: a WebSocket message has no headers; use json or regex"),
                    at(&format!("{var}:")),
                ));
            }
        }
    }
    Ok(())
}

fn pointer(what: &str, key: &str, p: &str) -> Result<(), String> {
    if p.is_empty() || p.starts_with('/') {
        Ok(())
    } else {
        Err(format!(
            "{what}: {key} `{p}`: a JSON pointer starts with `/`"
        ))
    }
}

/// Exactly one check, well formed; the error with the text to point at.
fn check_expect(what: &str, e: &WsExpect) -> Result<(), (String, String)> {
    let n = [e.json.is_some(), e.regex.is_some(), e.contains.is_some()]
        .iter()
        .filter(|b| **b)
        .count();
    if n != 1 {
        return Err((
            format!("{what}: expect: give exactly one of json (with equals), regex, contains"),
            "expect".into(),
        ));
    }
    if let Some(p) = &e.json {
        pointer(what, "expect.json", p).map_err(|m| (m, p.clone()))?;
        if e.equals.is_none() {
            return Err((
                format!("{what}: expect.json `{p}`: say the value with `equals`"),
                p.clone(),
            ));
        }
    } else if e.equals.is_some() {
        return Err((
            format!("{what}: expect.equals needs `json`, the pointer it compares"),
            "equals".into(),
        ));
    }
    if let Some(re) = &e.regex {
        regex::Regex::new(re)
            .map_err(|err| (format!("{what}: expect.regex: {err}"), re.clone()))?;
    }
    Ok(())
}

/// Every templated field of the WebSocket step `key` (its messages' texts).
pub(super) fn template_fields<'a>(key: &str, ws: &'a WsSpec, out: &mut Vec<(String, &'a str)>) {
    for (i, s) in ws.send.iter().enumerate() {
        out.push((format!("{key}.ws.send[{i}]"), s.as_str()));
    }
    for (i, m) in ws.messages.iter().enumerate() {
        out.push((format!("{key}.ws.messages[{i}].send"), m.send.as_str()));
    }
}

/// The variables a WebSocket step extracts (with its messages' positions).
pub fn extracted(ws: &WsSpec) -> impl Iterator<Item = (usize, &String)> {
    let first = ws.send.len();
    ws.messages
        .iter()
        .enumerate()
        .flat_map(move |(i, m)| m.extract.keys().map(move |k| (first + i, k)))
}
