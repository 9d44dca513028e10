//! The errors table's tally: what went wrong, request by request, beyond
//! the outcome class — the status of an unexpected or shed answer, the
//! name of a failed check, the client's message for a broken connection
//! (connect, TLS, reset, timeout) — and a few sample bodies.
//!
//! Every answer not `ok` is counted exactly once under one [`ErrorKey`], so
//! a class's rows add up to its count. Memory stays bounded however long
//! the run: messages are capped at [`MAX_MESSAGES`] distinct ones per request
//! and class (the rest fold into one row), samples at [`MAX_SAMPLES`] of at
//! most [`SAMPLE_BYTES`] each. A worker tallies into its own window's
//! [`super::Stats`] (no lock), the aggregator merges.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Class;

/// Distinct messages kept per (class, request); more fold into [`OTHER_MESSAGES`].
pub const MAX_MESSAGES: usize = 16;
/// Sample bodies kept (the first of each key).
pub const MAX_SAMPLES: usize = 8;
/// The longest sample kept, in bytes (cut at a character boundary).
pub const SAMPLE_BYTES: usize = 512;
/// Where messages beyond [`MAX_MESSAGES`] are counted.
pub const OTHER_MESSAGES: &str = "(other messages)";

/// What went wrong with one request.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum What {
    /// The answer's status (`http_error`, `shed`, or an expected status
    /// whose body was too large to check).
    Status(u16),
    /// The body check or extraction that failed, named as the profile says it.
    Check(Cow<'static, str>),
    /// The client's word for a connection or exchange that broke.
    Message(Cow<'static, str>),
}

impl What {
    /// As a table cell: `HTTP 500`, `check contains "ok"`, the message.
    pub fn text(&self) -> String {
        match self {
            What::Status(s) => format!("HTTP {s}"),
            What::Check(c) => format!("check {c}"),
            What::Message(m) => m.to_string(),
        }
    }
}

/// One row of the errors table: a class, the request (index into the
/// mix), what went wrong.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ErrorKey {
    pub class: Class,
    pub request: usize,
    #[serde(flatten)]
    pub what: What,
}

/// What the engine says of one failed request, beside its outcome.
#[derive(Debug, Clone)]
pub struct Failure {
    pub what: What,
    /// The answer's body (at most [`SAMPLE_BYTES`]), when it was read to be sampled.
    pub body: Option<Vec<u8>>,
}

impl Failure {
    pub fn message(m: impl Into<Cow<'static, str>>) -> Failure {
        Failure {
            what: What::Message(m.into()),
            body: None,
        }
    }
}

/// A sample body of one key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorSample {
    #[serde(flatten)]
    pub key: ErrorKey,
    pub body: String,
}

/// Counts by key and the samples of one scope (a window, a phase, a run).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorTally {
    #[serde(with = "rows")]
    pub counts: BTreeMap<ErrorKey, u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<ErrorSample>,
}

impl ErrorTally {
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// Count `n` under `key` (a message past the cap under [`OTHER_MESSAGES`]).
    pub fn add(&mut self, mut key: ErrorKey, n: u64) {
        if let What::Message(m) = &key.what {
            if !self.counts.contains_key(&key)
                && m != OTHER_MESSAGES
                && self.messages(key.class, key.request) >= MAX_MESSAGES
            {
                key.what = What::Message(Cow::Borrowed(OTHER_MESSAGES));
            }
        }
        *self.counts.entry(key).or_default() += n;
    }

    /// Count one answer of `class` (not ok) of request `request`, with what
    /// the engine said of it (a class's own words when it said nothing).
    pub fn tally(&mut self, class: Class, request: usize, why: Option<Failure>) {
        let (what, body) = match why {
            Some(f) => (f.what, f.body),
            None => (What::Message(Cow::Borrowed(default_message(class))), None),
        };
        let key = ErrorKey {
            class,
            request,
            what,
        };
        if let Some(b) = body {
            self.sample(&key, &b);
        }
        self.add(key, 1);
    }

    /// Keep `body` as the sample of `key` if it has none and there is room.
    pub fn sample(&mut self, key: &ErrorKey, body: &[u8]) {
        if self.samples.len() >= MAX_SAMPLES || self.samples.iter().any(|s| s.key == *key) {
            return;
        }
        let text = String::from_utf8_lossy(&body[..body.len().min(SAMPLE_BYTES)]);
        self.samples.push(ErrorSample {
            key: key.clone(),
            body: text.into_owned(),
        });
    }

    /// Whether a body of `key` would still be kept.
    pub fn wants_sample(&self, key: &ErrorKey) -> bool {
        self.samples.len() < MAX_SAMPLES && !self.samples.iter().any(|s| s.key == *key)
    }

    pub fn merge(&mut self, o: &ErrorTally) {
        for (k, n) in &o.counts {
            self.add(k.clone(), *n);
        }
        for s in &o.samples {
            self.sample(&s.key, s.body.as_bytes());
        }
    }

    /// Rows counted under `class`.
    pub fn class_total(&self, class: Class) -> u64 {
        self.counts
            .iter()
            .filter(|(k, _)| k.class == class)
            .map(|(_, n)| n)
            .sum()
    }

    fn messages(&self, class: Class, request: usize) -> usize {
        self.counts
            .keys()
            .filter(|k| k.class == class && k.request == request)
            .filter(|k| matches!(k.what, What::Message(_)))
            .count()
    }
}

/// The counts as a list of rows (`{class, request, status|check|message,
/// count}`): JSON keys cannot be structs.
mod rows {
    use super::*;
    use serde::{Deserializer, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Row {
        #[serde(flatten)]
        key: ErrorKey,
        count: u64,
    }

    pub fn serialize<S: Serializer>(m: &BTreeMap<ErrorKey, u64>, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(m.iter().map(|(k, n)| Row {
            key: k.clone(),
            count: *n,
        }))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<ErrorKey, u64>, D::Error> {
        let rows: Vec<Row> = Vec::deserialize(d)?;
        let mut m = BTreeMap::new();
        for r in rows {
            *m.entry(r.key).or_default() += r.count;
        }
        Ok(m)
    }
}

/// The message of a class recorded without one (every path that knows
/// better says so): the table still has a row for it.
pub fn default_message(class: Class) -> &'static str {
    match class {
        Class::Timeout => "no answer within the request timeout",
        Class::ConnectError => "could not connect",
        Class::Reset => "connection closed before a full answer",
        Class::Unfinished => "given up at the end of the run (queued or in flight)",
        Class::BodyTooLarge => "body larger than expect.max_body",
        Class::Retried => "sent again after refreshing its credentials",
        _ => "client error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(class: Class, what: What) -> ErrorKey {
        ErrorKey {
            class,
            request: 0,
            what,
        }
    }

    #[test]
    fn messages_are_capped_and_samples_bounded_and_rows_round_trip() {
        let mut t = ErrorTally::default();
        for i in 0..(MAX_MESSAGES + 5) {
            t.add(
                key(Class::OtherError, What::Message(format!("m{i}").into())),
                2,
            );
        }
        t.add(key(Class::HttpError, What::Status(500)), 3);
        assert_eq!(t.counts.len(), MAX_MESSAGES + 2);
        assert_eq!(
            t.class_total(Class::OtherError),
            2 * (MAX_MESSAGES as u64 + 5)
        );
        let other = key(Class::OtherError, What::Message(OTHER_MESSAGES.into()));
        assert_eq!(t.counts[&other], 10);
        for i in 0..20u16 {
            t.sample(&key(Class::HttpError, What::Status(400 + i)), &[b'x'; 2000]);
        }
        assert_eq!(t.samples.len(), MAX_SAMPLES);
        assert!(t.samples.iter().all(|s| s.body.len() == SAMPLE_BYTES));
        let json = serde_json::to_string(&t).unwrap();
        assert!(
            json.contains(r#"{"class":"http_error","request":0,"status":500,"count":3}"#),
            "{json}"
        );
        let back: ErrorTally = serde_json::from_str(&json).unwrap();
        assert_eq!(back, t);
        let mut m = ErrorTally::default();
        m.merge(&t);
        m.merge(&t);
        assert_eq!(m.class_total(Class::HttpError), 6);
        assert_eq!(m.samples.len(), MAX_SAMPLES);
    }
}
