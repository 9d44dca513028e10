//! brunt's own queue, said apart: the wait of a due request for one of
//! brunt's lanes (a connection, an HTTP/2 stream), from its intended start
//! to its send. Latency still counts from the intended start (the open
//! model's rule); this only splits it into that wait and the service time.
//! When the wait makes the tail while the answers themselves were quick,
//! the tail is brunt's connection limit, not the service: the summary, the
//! gates, the report and the knee's cause say so.

use serde::{Deserialize, Serialize};

use crate::metrics::{pct_us, Stats};
use crate::vocab::Model;

/// A wait p99 below this is left alone: a few milliseconds are the
/// timer's and the task wake-up's granularity on a busy generator (idle
/// lanes included), not a connection limit.
const MIN_WAIT_MS: f64 = 10.0;
/// The wait dominates when its p99 is at least this share of latency p99 …
const WAIT_SHARE: f64 = 0.5;
/// … and the slowest answer took at most this share of the wait p99: the
/// lanes were not held by slow answers (a stalled or queueing service holds
/// them through its service time, and that is the service's tail).
const SERVICE_SHARE: f64 = 0.5;
/// … and the answers were quick next to the tail: service time p99 at most
/// this share of latency p99. A service whose own time rose under the load
/// (a lock queue, a saturated CPU) holds brunt's connections because it is
/// slow; more connections would only queue more inside it.
const QUICK_SHARE: f64 = 0.1;

/// The wait for a lane in one scope, against its latency and service time.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ConnectionWait {
    /// `load.connections` (absent from run directories written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<usize>,
    pub latency_p99_ms: f64,
    pub wait_p99_ms: f64,
    pub service_p99_ms: f64,
    pub service_max_ms: f64,
    /// Time spent waiting over all latency (summed over requests), 0–1.
    pub share: f64,
    /// The wait makes the tail while the answers were quick: p99 is brunt's
    /// own connection limit.
    pub dominates: bool,
    /// One line saying so (empty when it does not dominate).
    #[serde(default)]
    pub text: String,
}

impl ConnectionWait {
    /// The wait in `s` (open model only: a virtual user has its own
    /// connection and sends when it is ready); `None` without answers or
    /// without a recorded wait (a run directory written before it).
    pub fn of(
        s: &Stats,
        model: Model,
        connections: Option<usize>,
        scenarios: bool,
    ) -> Option<ConnectionWait> {
        if model != Model::Open {
            return None;
        }
        let (lat, wait, svc) = (s.latency(None), s.wait(None), s.service(None));
        if wait.is_empty() || lat.is_empty() {
            return None;
        }
        let latency_p99_ms = ms_q(&lat, 0.99);
        let wait_p99_ms = ms_q(&wait, 0.99);
        let service_p99_ms = ms_q(&svc, 0.99);
        let service_max_ms = if svc.is_empty() {
            0.0
        } else {
            svc.max() as f64 / 1e6
        };
        let total = lat.mean() * lat.len() as f64;
        let share = if total > 0.0 {
            (wait.mean() * wait.len() as f64 / total).min(1.0)
        } else {
            0.0
        };
        let dominates = wait_p99_ms >= MIN_WAIT_MS
            && wait_p99_ms >= WAIT_SHARE * latency_p99_ms
            && service_max_ms <= SERVICE_SHARE * wait_p99_ms
            && service_p99_ms <= QUICK_SHARE * latency_p99_ms;
        let mut w = ConnectionWait {
            connections,
            latency_p99_ms,
            wait_p99_ms,
            service_p99_ms,
            service_max_ms,
            share,
            dominates,
            text: String::new(),
        };
        if dominates {
            w.text = w.say(scenarios);
        }
        Some(w)
    }

    /// Worth a line of its own in the terminal: below [`MIN_WAIT_MS`] the
    /// wait is the timer's and the wake-up's granularity, not a queue.
    pub fn notable(&self) -> bool {
        self.wait_p99_ms >= MIN_WAIT_MS
    }

    /// `p99 445ms is brunt's own connection limit: …`.
    fn say(&self, scenarios: bool) -> String {
        let lanes = match self.connections {
            Some(n) => format!("one of brunt's {n} connections"),
            None => "one of brunt's connections".into(),
        };
        format!(
            "p99 {} is brunt's own connection limit: {:.0} % of the time requests took was waiting for {lanes} (wait p99 {}; service time p99 {}, max {}) — raise `load.connections`{}",
            ms(self.latency_p99_ms),
            self.share * 100.0,
            ms(self.wait_p99_ms),
            ms(self.service_p99_ms),
            ms(self.service_max_ms),
            if scenarios {
                " (a scenario holds its connection through its steps and think times)"
            } else {
                ""
            }
        )
    }

    /// The short form for a gate or a check: `brunt's own connection limit (…)`.
    pub fn brief(&self) -> String {
        format!(
            "brunt's own connection limit: {:.0} % waiting for a connection, service time p99 {} — raise `load.connections`",
            self.share * 100.0,
            ms(self.service_p99_ms)
        )
    }
}

/// Quantile `q` of `h` in ms (as `rules::ms_q`, which `verdict`'s use of
/// this file keeps out of reach).
fn ms_q(h: &hdrhistogram::Histogram<u64>, q: f64) -> f64 {
    pct_us(h, q) as f64 / 1000.0
}

fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}ms")
    } else {
        format!("{v:.2}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::hlog::TagKind;
    use crate::metrics::{new_hist, Class};

    fn stats(latency_ms: &[u64], wait_ms: &[u64], service_ms: &[u64]) -> Stats {
        let mut s = Stats::default();
        for (kind, vals) in [
            (TagKind::Latency, latency_ms),
            (TagKind::Wait, wait_ms),
            (TagKind::Service, service_ms),
        ] {
            let mut h = new_hist();
            for v in vals {
                let _ = h.record(v * 1_000_000);
            }
            s.add_hist(Class::Ok, &h, kind);
        }
        s
    }

    #[test]
    fn a_few_milliseconds_of_wait_are_not_worth_a_line() {
        // A busy generator's wake-ups: 5 ms of wait beside 12 ms latency.
        let s = stats(&[5, 6, 12], &[1, 2, 5], &[4, 4, 7]);
        let w = ConnectionWait::of(&s, Model::Open, Some(256), false).expect("a wait");
        assert!(!w.notable() && !w.dominates, "{w:?}");
        let s = stats(&[400, 420, 450], &[350, 380, 420], &[2, 3, 4]);
        let w = ConnectionWait::of(&s, Model::Open, Some(8), false).expect("a wait");
        assert!(w.notable(), "{w:?}");
    }

    #[test]
    fn a_wait_with_quick_answers_is_brunts_limit_and_a_slow_service_is_not() {
        // Quick answers, long waits: lanes held by something else (think time).
        let s = stats(&[400; 100], &[399; 100], &[1; 100]);
        let w = ConnectionWait::of(&s, Model::Open, Some(8), false).expect("a wait");
        assert!(w.dominates, "{w:?}");
        assert!(
            w.text.contains("one of brunt's 8 connections"),
            "{}",
            w.text
        );
        assert!(w.share > 0.9, "{w:?}");
        // The same wait behind answers as slow as it (a stall, a queue):
        // the service held the lanes.
        let s = stats(&[400; 100], &[300; 100], &[350; 100]);
        let w = ConnectionWait::of(&s, Model::Open, Some(8), false).expect("a wait");
        assert!(!w.dominates && w.text.is_empty(), "{w:?}");
        // A lock queue in the service (the hot-row case): its own time rose
        // to a quarter of the tail, the waits are its doing.
        let s = stats(&[2500; 100], &[2100; 100], &[680; 100]);
        let w = ConnectionWait::of(&s, Model::Open, Some(12), false).expect("a wait");
        assert!(!w.dominates, "{w:?}");
        // The closed model has no such queue.
        assert!(ConnectionWait::of(&s, Model::Closed, Some(8), false).is_none());
        // A few milliseconds of waiting are the generator's own granularity.
        let s = stats(&[5; 100], &[4; 100], &[1; 100]);
        let w = ConnectionWait::of(&s, Model::Open, Some(64), false).expect("a wait");
        assert!(!w.dominates, "{w:?}");
    }
}
