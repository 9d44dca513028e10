//! Judging a budget: the figure its metric and scope measure in the
//! recorded stats, and the verdict it comes to (PASS, FAIL or NO DATA).

use super::{Budget, Metric, Op, Status, Subject, Verdict};
use crate::metrics::{Class, Stats};

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
        }
    }
}

impl Budget {
    /// Whether the budget is on every request (no step or iteration subject):
    /// the only ones the knee, the p99 bound and collectors' triggers read.
    pub fn on_all_requests(&self) -> bool {
        self.subject == Subject::All
    }

    /// The part of `s` this budget's subject measures (`s` itself for all
    /// requests). `split`: the scope keeps per-request histograms (a mix of
    /// more than one request); without, the one request is all of `s`.
    pub fn scope_of(&self, s: &Stats, split: bool) -> Stats {
        match &self.subject {
            Subject::All => s.clone(),
            Subject::Step { .. } if !split => s.clone(),
            Subject::Step { at, .. } => s.requests_scope(at),
            Subject::Iteration { at, .. } => s.iterations_scope(at),
        }
    }

    /// [`Budget::evaluate`] on this budget's subject within `s`.
    pub fn evaluate_in(&self, s: &Stats, split: bool) -> Verdict {
        match self.subject {
            Subject::All => self.evaluate(s),
            _ => self.evaluate(&self.scope_of(s, split)),
        }
    }

    /// The measured value of this budget's metric on `s` (in the limit's unit).
    pub fn measure(&self, s: &Stats) -> f64 {
        let secs = s.duration.as_secs_f64().max(1e-9);
        match self.metric {
            Metric::Quantile(q) => ms(
                s.latency(self.class).value_at_quantile(q),
                &s.latency(self.class),
            ),
            Metric::ServiceQuantile(q) => ms(
                s.service(self.class).value_at_quantile(q),
                &s.service(self.class),
            ),
            Metric::Max => {
                let h = s.latency(self.class);
                ms(h.max(), &h)
            }
            Metric::Mean => {
                let h = s.latency(self.class);
                if h.is_empty() {
                    0.0
                } else {
                    h.mean() / 1e6
                }
            }
            Metric::ErrorRate => s.error_rate(),
            Metric::ShedRate => {
                let n = s.completed() + s.dropped;
                if n == 0 {
                    0.0
                } else {
                    s.count(Class::Shed) as f64 / n as f64
                }
            }
            Metric::DropRate => {
                if s.offered == 0 {
                    0.0
                } else {
                    s.dropped as f64 / s.offered as f64
                }
            }
            Metric::Throughput => match self.class {
                Some(c) => s.count(c) as f64 / secs,
                None => s.count(Class::Ok) as f64 / secs,
            },
            Metric::Rps => match self.class {
                Some(c) => s.count(c) as f64 / secs,
                None => s.completed() as f64 / secs,
            },
            Metric::Requests => match self.class {
                Some(c) => s.count(c) as f64,
                None => s.completed() as f64,
            },
        }
    }

    /// Whether `s` holds anything this budget can be measured on: a latency
    /// needs answers of its class, a rate a non-zero denominator. Counts and
    /// throughputs are always measured (zero is a measurement).
    pub fn has_data(&self, s: &Stats) -> bool {
        match self.metric {
            Metric::Quantile(_) | Metric::Max | Metric::Mean => !s.latency(self.class).is_empty(),
            Metric::ServiceQuantile(_) => !s.service(self.class).is_empty(),
            Metric::ErrorRate => s.completed() + s.dropped > 0,
            Metric::ShedRate => s.completed() + s.dropped > 0,
            Metric::DropRate => s.offered > 0,
            Metric::Throughput | Metric::Rps | Metric::Requests => true,
        }
    }

    /// Evaluate on a scope. A budget on a scope with no answers is
    /// [`Status::NoData`]: not a pass, and it says so.
    pub fn evaluate(&self, s: &Stats) -> Verdict {
        let value = self.measure(s);
        let latency = self.measures_time();
        let status = if !self.has_data(s) {
            Status::NoData
        } else if self.op.holds(value, self.limit) {
            Status::Pass
        } else {
            Status::Fail
        };
        Verdict {
            budget: self.text.clone(),
            scope: self.phase.clone().unwrap_or_else(|| "run".into()),
            value,
            shown: self.show(value),
            limit: self.show(self.limit),
            pass: status == Status::Pass,
            status,
            note: (status == Status::NoData).then(|| self.nothing_to_measure()),
            latency,
        }
    }

    /// Why a scope had nothing to measure: `no timeout answers in the run`.
    fn nothing_to_measure(&self) -> String {
        let scope = match &self.phase {
            Some(p) => format!("phase {p}"),
            None => "the run".into(),
        };
        match (&self.subject, self.metric, self.class) {
            (Subject::Step { name, .. }, _, None) => format!("step {name} never ran in {scope}"),
            (Subject::Step { name, .. }, _, Some(c)) => {
                format!("no {} answers of step {name} in {scope}", c.name())
            }
            (Subject::Iteration { .. }, _, c) => format!(
                "no {}{} in {scope}",
                c.map(|c| format!("{} ", c.name())).unwrap_or_default(),
                self.subject.describe().unwrap_or_default()
            ),
            (Subject::All, Metric::DropRate, _) => format!("nothing offered in {scope}"),
            (Subject::All, _, Some(c)) => format!("no {} answers in {scope}", c.name()),
            (Subject::All, _, None) => format!("no answers in {scope}"),
        }
    }

    /// Budgets on a time (quantiles, service quantiles, max, mean), in ms.
    /// Wider than [`Budget::is_latency`], which names only those a 1-s
    /// window can check.
    pub fn measures_time(&self) -> bool {
        matches!(
            self.metric,
            Metric::Quantile(_) | Metric::ServiceQuantile(_) | Metric::Max | Metric::Mean
        )
    }

    fn show(&self, v: f64) -> String {
        match self.metric {
            Metric::Quantile(_) | Metric::ServiceQuantile(_) | Metric::Max | Metric::Mean => {
                format!("{v:.1}ms")
            }
            Metric::ErrorRate | Metric::ShedRate | Metric::DropRate => format!("{:.3}%", v * 100.0),
            Metric::Throughput | Metric::Rps => format!("{v:.1}/s"),
            Metric::Requests => format!("{v:.0}"),
        }
    }

    /// Latency budgets (for per-second triggers such as collectors' dumps).
    pub fn is_latency(&self) -> bool {
        matches!(self.metric, Metric::Quantile(_) | Metric::Max)
    }
}

fn ms(v: u64, h: &hdrhistogram::Histogram<u64>) -> f64 {
    if h.is_empty() {
        0.0
    } else {
        v as f64 / 1e6
    }
}
