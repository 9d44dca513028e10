//! W3C trace context on a share of the sends (`target.trace`): a sampled
//! send carries `traceparent: 00-<trace id>-<span id>-01` with random ids
//! (the sampled flag set), and its outcome carries the trace id to the
//! recorder. The header is formatted into a stack buffer; a send not
//! sampled costs one random number, and none at all without `target.trace`.

use std::num::NonZeroU128;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue};
use hyper::Request;

use super::client::{ClientError, Prepared, Target};
use crate::profile::TraceSpec;

/// `00-` + 32 + `-` + 16 + `-01`.
const LEN: usize = 55;

/// `target.trace`, compiled.
#[derive(Debug, Clone)]
pub struct Tracer {
    header: HeaderName,
    /// A send is traced when a random u64 falls below this…
    below: u64,
    /// …or always (100 %).
    always: bool,
}

impl Tracer {
    pub fn new(spec: &TraceSpec) -> Result<Tracer, ClientError> {
        let header = HeaderName::from_bytes(spec.header.trim().as_bytes()).map_err(|e| {
            ClientError::Request(
                "target.trace".into(),
                format!("header `{}`: {e}", spec.header),
            )
        })?;
        let p = spec.sample.0.clamp(0.0, 1.0);
        Ok(Tracer {
            header,
            below: (p * u64::MAX as f64) as u64,
            always: p >= 1.0,
        })
    }

    /// Whether this send carries a trace context.
    #[inline]
    fn sampled(&self) -> bool {
        self.always || fastrand::u64(..) < self.below
    }
}

/// This send's message, with a fresh trace context when `tracer` samples
/// it (then also its trace id); `msg` unchanged otherwise.
#[inline]
pub(crate) fn stamp(
    tracer: Option<&Tracer>,
    t: &Target,
    p: &Prepared,
    msg: Option<Request<Full<Bytes>>>,
) -> (Option<Request<Full<Bytes>>>, Option<NonZeroU128>) {
    let Some(tr) = tracer.filter(|tr| tr.sampled()) else {
        return (msg, None);
    };
    let id = loop {
        // All-zero ids are invalid (W3C trace context §3.2.2.3).
        if let Some(id) = NonZeroU128::new(fastrand::u128(..)) {
            break id;
        }
    };
    let buf = traceparent(id.get(), fastrand::u64(1..));
    let Ok(v) = HeaderValue::from_bytes(&buf) else {
        return (msg, None);
    };
    let req = p.message_with(t, msg, &[(tr.header.clone(), v)]);
    (Some(req), Some(id))
}

/// `00-{trace:032x}-{span:016x}-01`, without an allocation.
pub fn traceparent(trace: u128, span: u64) -> [u8; LEN] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut b = [b'-'; LEN];
    b[0] = b'0';
    b[1] = b'0';
    for i in 0..32 {
        b[3 + i] = HEX[((trace >> (124 - 4 * i)) & 0xf) as usize];
    }
    for i in 0..16 {
        b[36 + i] = HEX[((span >> (60 - 4 * i)) & 0xf) as usize];
    }
    b[53] = b'0';
    b[54] = b'1';
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_is_w3c_version_00_sampled() {
        let b = traceparent(0x0af7651916cd43dd8448eb211c80319c, 0xb7ad6b7169203331);
        assert_eq!(
            std::str::from_utf8(&b).expect("ascii"),
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        );
    }

    #[test]
    fn sample_share_is_kept() {
        let spec = |s: f64| TraceSpec {
            header: "traceparent".into(),
            sample: crate::vocab::Percent(s),
            url: None,
        };
        let t = Tracer::new(&spec(0.1)).expect("tracer");
        let n = (0..100_000).filter(|_| t.sampled()).count();
        assert!((9_000..11_000).contains(&n), "{n}");
        let all = Tracer::new(&spec(1.0)).expect("tracer");
        assert!((0..1000).all(|_| all.sampled()));
        let none = Tracer::new(&spec(0.0)).expect("tracer");
        assert!(!(0..1000).any(|_| none.sampled()));
        assert!(Tracer::new(&TraceSpec {
            header: "bad header".into(),
            ..spec(0.1)
        })
        .is_err());
    }
}
