//! Outcome classification: a status by the request's expectations, and a
//! broken connection or stream as `connect_error`, `reset` or `timeout`
//! (the rules in [`super`]'s doc).

use std::borrow::Cow;

use hyper::StatusCode;

use super::Prepared;
use crate::engine::h1;
use crate::metrics::errors::{Failure, What};
use crate::metrics::Class;

/// A failed exchange: its class and the client's word for it (the errors
/// table's message).
pub(super) struct Fault {
    pub class: Class,
    pub why: Cow<'static, str>,
}

impl Fault {
    pub(super) fn new(class: Class, why: impl Into<Cow<'static, str>>) -> Fault {
        Fault {
            class,
            why: why.into(),
        }
    }
    pub(super) fn failure(self) -> (Class, Failure) {
        (self.class, Failure::message(self.why))
    }
}

/// An I/O error in words: the common kinds as fixed text (few distinct
/// rows), TLS errors as rustls says them, anything else as the OS does.
pub(super) fn io_message(e: &std::io::Error) -> Cow<'static, str> {
    use std::io::ErrorKind::*;
    if let Some(r) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        return Cow::Owned(format!("TLS: {r}"));
    }
    Cow::Borrowed(match e.kind() {
        ConnectionRefused => "connection refused",
        ConnectionReset => "connection reset by peer",
        ConnectionAborted => "connection aborted",
        BrokenPipe => "connection closed while sending (broken pipe)",
        UnexpectedEof => "connection closed before a full answer",
        TimedOut => "timed out",
        NotConnected => "not connected",
        AddrNotAvailable => "no local address or port free",
        _ => return Cow::Owned(e.to_string()),
    })
}

impl Prepared {
    #[inline]
    pub fn classify_status(&self, s: StatusCode) -> Class {
        self.classify_code(s.as_u16())
    }
    #[inline]
    pub fn classify_code(&self, code: u16) -> Class {
        let code = code as usize;
        if self.ok.get(code).copied().unwrap_or(false) {
            Class::Ok
        } else if code == 503 || code == 429 {
            Class::Shed
        } else {
            Class::HttpError
        }
    }
    #[inline]
    pub fn has_check(&self) -> bool {
        self.check_every > 0 && (self.contains.is_some() || self.regex.is_some())
    }
    pub fn body_ok(&self, body: &[u8]) -> bool {
        self.failed_check(body).is_none()
    }
    /// The check `body` fails, named as the profile says it.
    pub(super) fn failed_check(&self, body: &[u8]) -> Option<What> {
        let text = String::from_utf8_lossy(body);
        if let Some(c) = self.contains.as_deref().filter(|c| !text.contains(c)) {
            return Some(What::Check(format!("body_contains {c:?}").into()));
        }
        let r = self.regex.as_ref().filter(|r| !r.is_match(&text))?;
        Some(What::Check(format!("body_regex {:?}", r.as_str()).into()))
    }
}

/// A TCP connect or TLS handshake error: `reset` when the target had
/// accepted the connection and then broke it (see the module doc),
/// `connect_error` otherwise.
pub(super) fn connect_class(e: &std::io::Error) -> Class {
    match e.kind() {
        k if is_reset(k) => Class::Reset,
        std::io::ErrorKind::TimedOut => Class::Timeout,
        _ => Class::ConnectError,
    }
}

/// The I/O errors that mean the target broke a connection it had accepted:
/// the one rule behind `reset` (the module doc), wherever it is noticed.
pub(crate) fn is_reset(kind: std::io::ErrorKind) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        kind,
        ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof
    )
}

/// The server did not process this request and says so (HTTP/2
/// `REFUSED_STREAM`, or a stream above a graceful GOAWAY's last id).
pub(super) fn unprocessed(e: &hyper::Error) -> bool {
    h2_error(e).is_some_and(|h| {
        h.reason() == Some(h2::Reason::REFUSED_STREAM)
            || (h.is_go_away() && h.reason() == Some(h2::Reason::NO_ERROR))
    })
}

pub(super) fn h2_error(e: &hyper::Error) -> Option<&h2::Error> {
    let mut src: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = src {
        if let Some(h) = s.downcast_ref::<h2::Error>() {
            return Some(h);
        }
        src = s.source();
    }
    None
}

/// A failed codec exchange's class (the same rules as hyper's errors get),
/// and whether it may be sent again: nothing came back and the connection
/// was closed or reset under it.
pub(super) fn codec_failed(f: h1::Failed) -> (Fault, bool) {
    let fault = match &f {
        h1::Failed::Io(e, _) => match e.kind() {
            k if is_reset(k) => Fault::new(Class::Reset, io_message(e)),
            std::io::ErrorKind::TimedOut => Fault::new(Class::Timeout, io_message(e)),
            _ => Fault::new(Class::OtherError, io_message(e)),
        },
        h1::Failed::Closed(true) => Fault::new(Class::Reset, "connection closed with no answer"),
        h1::Failed::Closed(false) => {
            Fault::new(Class::Reset, "connection closed before a full answer")
        }
        // A response the codec cannot frame: a protocol error.
        h1::Failed::Protocol(e) => Fault::new(Class::OtherError, format!("bad answer: {e}")),
        // Past `expect.max_body`: brunt's limit, not a failed check.
        h1::Failed::TooLarge => Fault::new(Class::BodyTooLarge, "body larger than expect.max_body"),
    };
    let retry = fault.class == Class::Reset && f.unanswered();
    (fault, retry)
}

/// A hyper error's class and words.
pub(super) fn hyper_fault(e: &hyper::Error) -> Fault {
    let class = classify_error(e);
    if let Some(h) = h2_error(e) {
        if let Some(io) = h.get_io() {
            return Fault::new(class, io_message(io));
        }
        return Fault::new(class, format!("HTTP/2: {h}"));
    }
    let mut src: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return Fault::new(class, io_message(io));
        }
        src = s.source();
    }
    Fault::new(class, e.to_string())
}

pub(super) fn classify_error(e: &hyper::Error) -> Class {
    if e.is_timeout() {
        return Class::Timeout;
    }
    if e.is_incomplete_message() || e.is_canceled() || e.is_closed() {
        return Class::Reset;
    }
    if let Some(h) = h2_error(e) {
        if h.is_reset() || h.is_go_away() {
            return Class::Reset;
        }
        return match h.get_io().map(connect_class) {
            Some(Class::ConnectError) | None => Class::OtherError,
            Some(c) => c,
        };
    }
    let mut src: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                k if is_reset(k) => Class::Reset,
                std::io::ErrorKind::TimedOut => Class::Timeout,
                _ => Class::OtherError,
            };
        }
        src = s.source();
    }
    Class::OtherError
}
