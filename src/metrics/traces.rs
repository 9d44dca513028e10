//! The slowest requests that carried a trace context (`target.trace`):
//! each scope ([`super::Stats`]: a worker's window, a phase's total) keeps
//! the [`KEEP`] slowest by brunt's own latency (from the intended start) in
//! a fixed-size list, so memory stays flat however many requests are traced.
//! Merging two scopes keeps the slowest of both, which is how windows add
//! up to phases and shards to a merged run.

use serde::{Deserialize, Serialize};

use super::Class;

/// Traced requests kept per scope: the slowest this many.
pub const KEEP: usize = 10;

/// One traced request, as the recorder keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// The W3C trace id (never zero).
    pub trace: u128,
    /// From the intended start to the end, ns.
    pub latency_ns: u64,
    pub class: Class,
    /// When it was sent, ns on the run clock.
    pub sent_ns: u64,
    /// Index of the request in the mix.
    pub request: usize,
}

impl Hit {
    /// Slower first; among equals, the smaller id (a stable order).
    fn before(&self, o: &Hit) -> bool {
        (self.latency_ns, o.trace) > (o.latency_ns, self.trace)
    }
}

/// The traced requests of a scope: how many, and the [`KEEP`] slowest.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Traced {
    /// Answers (every class) of requests sent with a trace context.
    pub sent: u64,
    /// At most [`KEEP`], in no order (see [`Traced::slowest`]).
    kept: Vec<Hit>,
}

impl Traced {
    /// Count one traced answer and keep it if it is among the slowest.
    #[inline]
    pub fn offer(&mut self, h: Hit) {
        self.sent += 1;
        self.keep(h);
    }

    fn keep(&mut self, h: Hit) {
        if self.kept.len() < KEEP {
            self.kept.push(h);
            return;
        }
        // KEEP is small: a scan for the fastest kept beats a heap here.
        let mut min = 0;
        for (i, k) in self.kept.iter().enumerate() {
            if self.kept[min].before(k) {
                min = i;
            }
        }
        if h.before(&self.kept[min]) {
            self.kept[min] = h;
        }
    }

    pub fn merge(&mut self, o: &Traced) {
        self.sent += o.sent;
        for h in &o.kept {
            if !self.kept.contains(h) {
                self.keep(*h);
            }
        }
    }

    /// The kept requests, slowest first.
    pub fn slowest(&self) -> Vec<Hit> {
        let mut v = self.kept.clone();
        v.sort_by(|a, b| b.latency_ns.cmp(&a.latency_ns).then(a.trace.cmp(&b.trace)));
        v
    }

    /// What of this scope (a window) `total` does not hold yet and will keep
    /// once this is merged into it, slowest first: appended to a file, these
    /// lines are all a reader needs to rebuild `total`'s list.
    pub fn entering(&self, total: &Traced) -> Vec<Hit> {
        let mut after = total.clone();
        after.merge(self);
        self.slowest()
            .into_iter()
            .filter(|h| after.kept.contains(h) && !total.kept.contains(h))
            .collect()
    }
}

/// A trace id as W3C writes it: 32 lowercase hex digits.
pub fn trace_hex(id: u128) -> String {
    format!("{id:032x}")
}

/// One traced request as `summary.json` and `traces.jsonl` show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceRow {
    /// 32 lowercase hex digits.
    pub trace_id: String,
    /// From the intended start, as every latency brunt reports.
    pub latency_ms: f64,
    pub class: Class,
    /// When it was sent, seconds on the run clock.
    pub at_s: f64,
    /// The request (or `scenario/step`) of the mix.
    pub request: String,
}

impl TraceRow {
    /// `names`: the mix's request names, by index.
    pub fn of(h: &Hit, names: &[String]) -> TraceRow {
        TraceRow {
            trace_id: trace_hex(h.trace),
            latency_ms: h.latency_ns as f64 / 1e6,
            class: h.class,
            at_s: h.sent_ns as f64 / 1e9,
            request: names
                .get(h.request)
                .cloned()
                .unwrap_or_else(|| format!("#{}", h.request + 1)),
        }
    }
}

/// The slowest [`KEEP`] of `rows`, slowest first (ties: the smaller id).
pub fn slowest_rows(mut rows: Vec<TraceRow>) -> Vec<TraceRow> {
    rows.sort_by(|a, b| {
        b.latency_ms
            .total_cmp(&a.latency_ms)
            .then_with(|| a.trace_id.cmp(&b.trace_id))
    });
    rows.dedup_by(|a, b| a.trace_id == b.trace_id);
    rows.truncate(KEEP);
    rows
}

/// A traced ok answer of `ms`, sent 1.5 s into the run (for tests).
#[cfg(test)]
pub(crate) fn test_hit(trace: u128, ms: u64) -> Hit {
    Hit {
        trace,
        latency_ns: ms * 1_000_000,
        class: Class::Ok,
        sent_ns: 1_500_000_000,
        request: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::test_hit as hit;
    use super::*;

    #[test]
    fn keeps_the_slowest_few_and_merges_to_the_slowest_of_both() {
        let mut a = Traced::default();
        for i in 1..=100u128 {
            a.offer(hit(i, (i as u64 * 37) % 101));
        }
        assert_eq!(a.sent, 100);
        let lat: Vec<u64> = a
            .slowest()
            .iter()
            .map(|h| h.latency_ns / 1_000_000)
            .collect();
        assert_eq!(lat, [100, 99, 98, 97, 96, 95, 94, 93, 92, 91]);
        let mut b = Traced::default();
        b.offer(hit(1000, 500));
        b.offer(hit(1001, 1));
        let entering = b.entering(&a);
        assert_eq!(entering, vec![hit(1000, 500)], "the 1 ms one stays out");
        a.merge(&b);
        assert_eq!(a.sent, 102);
        assert_eq!(a.slowest()[0], hit(1000, 500));
        assert_eq!(a.slowest().len(), KEEP);
        assert_eq!(a.slowest()[KEEP - 1].latency_ns, 92_000_000);
    }

    #[test]
    fn rows_show_the_id_as_w3c_hex_and_the_slowest_rows_are_kept() {
        let names = vec!["get".to_string()];
        let r = TraceRow::of(&hit(0xabc, 250), &names);
        assert_eq!(r.trace_id, "00000000000000000000000000000abc");
        assert_eq!((r.latency_ms, r.request.as_str()), (250.0, "get"));
        let rows: Vec<TraceRow> = (0..30u128)
            .map(|i| TraceRow::of(&hit(i + 1, i as u64), &names))
            .collect();
        let kept = slowest_rows(rows);
        assert_eq!(kept.len(), KEEP);
        assert_eq!(kept[0].latency_ms, 29.0);
    }
}
