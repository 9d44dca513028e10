//! The live figures: what the recorder has counted so far, cumulative since
//! the run start, in Prometheus' shape (counters, gauges, bucketed
//! histograms), and their one rendering as metric families that both the
//! pull endpoint (OpenMetrics text) and remote-write (protobuf) encode.
//!
//! Every figure is folded from the recorder's 1-s windows, the same windows
//! that make `summary.json`'s per-phase totals: counts agree exactly. The
//! quantile gauges come from an HdrHistogram per phase (the summary's own
//! precision, 3 significant digits), labelled `q` (a `quantile` label is
//! reserved to summaries, and promtool says so); the bucketed histograms are what
//! Prometheus can add across shards and runs (`histogram_quantile`).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use crate::metrics::{new_hist, Class, Window};

/// Upper bounds of the latency buckets, seconds: 100 µs × 2^(k/3), up to
/// ~105 s; a bucket is 26 % wide, the precision of `histogram_quantile` on them.
pub fn bucket_bounds() -> Vec<f64> {
    (0..=60).map(|k| 1e-4 * 2f64.powf(k as f64 / 3.0)).collect()
}

/// Quantiles exported as gauges, per phase.
pub const QUANTILES: [f64; 5] = [0.5, 0.9, 0.95, 0.99, 0.999];

/// A cumulative bucketed histogram (counts per bucket, not cumulative; the
/// last is +Inf).
#[derive(Debug, Clone)]
pub struct Buckets {
    pub counts: Vec<u64>,
    pub sum_s: f64,
    pub count: u64,
}

impl Buckets {
    fn new(n_bounds: usize) -> Self {
        Buckets {
            counts: vec![0; n_bounds + 1],
            sum_s: 0.0,
            count: 0,
        }
    }
    /// Fold an HdrHistogram (ns) in: each recorded value lands in the first
    /// bucket whose bound is at least its value.
    fn add(&mut self, bounds_ns: &[u64], h: &Histogram<u64>) {
        for v in h.iter_recorded() {
            let ns = h.median_equivalent(v.value_iterated_to());
            let n = v.count_at_value();
            let i = bounds_ns.partition_point(|b| *b < ns);
            self.counts[i] += n;
            self.count += n;
            self.sum_s += ns as f64 * 1e-9 * n as f64;
        }
    }
}

/// One phase's figures.
#[derive(Debug)]
struct PhaseFigures {
    offered: u64,
    dropped: u64,
    /// (request index, class) → answered.
    answered: BTreeMap<(usize, Class), u64>,
    /// Request index → latency from the intended start, every class.
    latency: BTreeMap<usize, Buckets>,
    /// Service time (from the actual send), every request and class.
    service: Buckets,
    /// Every class, for the quantile gauges.
    hdr: Histogram<u64>,
    /// (request index, latency bucket) → the newest traced request there.
    exemplars: BTreeMap<(usize, usize), Exemplar>,
}

/// A traced request shown beside the latency bucket it fell in (an
/// OpenMetrics exemplar on `brunt_latency_seconds`).
#[derive(Debug, Clone, PartialEq)]
pub struct Exemplar {
    /// 32 lowercase hex digits.
    pub trace_id: String,
    /// Its latency from the intended start, seconds.
    pub value_s: f64,
    /// When it was sent, Unix seconds.
    pub at_unix_s: f64,
}

/// (phase, request) → latency bucket index → its exemplar.
pub type Exemplars = BTreeMap<(String, String), BTreeMap<usize, Exemplar>>;

/// What the run is, for labels.
#[derive(Debug, Clone)]
pub struct Labels {
    /// The run directory's name: one run, one value.
    pub run: String,
    /// `1/1` unless sharded (`2/4`).
    pub shard: String,
    /// Phase names in plan order.
    pub phases: Vec<String>,
    /// Request names of the mix, in profile order.
    pub requests: Vec<String>,
    /// The run's start, Unix seconds: the exemplars' timestamps count from it.
    pub started_at: f64,
}

/// Everything exported, updated once a second by the recorder thread.
#[derive(Debug)]
pub struct Figures {
    labels: Labels,
    bounds_s: Vec<f64>,
    bounds_ns: Vec<u64>,
    phases: BTreeMap<usize, PhaseFigures>,
    in_flight: u64,
    sched_lag_s: f64,
    busy_ratio: Option<f64>,
    windows: u64,
    /// Remote-write pushes that failed (the push thread counts them here).
    pub push_failures: u64,
    pub pushes: u64,
    /// Set once the load has ended and every window is in.
    pub final_: bool,
}

/// A metric value as both encoders need it.
#[derive(Debug, Clone)]
pub enum Value {
    Counter(u64),
    Gauge(f64),
    /// Sum (s), count, per-bucket counts with their upper bounds (last = +Inf).
    Histogram {
        sum: f64,
        count: u64,
        buckets: Vec<(f64, u64)>,
    },
}

/// One metric family: a name (without `_total` for counters), help, samples.
#[derive(Debug, Clone)]
pub struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub samples: Vec<(Vec<(&'static str, String)>, Value)>,
}

impl Family {
    fn new(name: &'static str, help: &'static str) -> Self {
        Family {
            name,
            help,
            samples: Vec::new(),
        }
    }
    pub fn is_counter(&self) -> bool {
        self.samples
            .first()
            .is_some_and(|(_, v)| matches!(v, Value::Counter(_)))
    }
}

/// Metric names, as code (README lists them for Grafana).
pub mod names {
    pub const OFFERED: &str = "brunt_offered";
    pub const DROPPED: &str = "brunt_dropped";
    pub const REQUESTS: &str = "brunt_requests";
    pub const IN_FLIGHT: &str = "brunt_in_flight";
    pub const LATENCY: &str = "brunt_latency_seconds";
    pub const SERVICE: &str = "brunt_service_time_seconds";
    pub const LATENCY_QUANTILE: &str = "brunt_latency_quantile_seconds";
    pub const SCHED_LAG: &str = "brunt_generator_sched_lag_seconds";
    pub const WORKER_BUSY: &str = "brunt_generator_worker_busy_ratio";
    pub const WINDOWS: &str = "brunt_windows";
    pub const PUSH_FAILURES: &str = "brunt_remote_write_failures";
}

impl Figures {
    pub fn new(labels: Labels) -> Self {
        let bounds_s = bucket_bounds();
        let bounds_ns = bounds_s.iter().map(|b| (b * 1e9).round() as u64).collect();
        Figures {
            labels,
            bounds_s,
            bounds_ns,
            phases: BTreeMap::new(),
            in_flight: 0,
            sched_lag_s: 0.0,
            busy_ratio: None,
            windows: 0,
            push_failures: 0,
            pushes: 0,
            final_: false,
        }
    }

    /// Fold one finished window in; `in_flight` is the engine's count now.
    pub fn window(&mut self, w: &Window, in_flight: u64) {
        let n_bounds = self.bounds_ns.len();
        let split = self.labels.requests.len() > 1;
        for (p, s) in &w.phases {
            let f = self.phases.entry(*p).or_insert_with(|| PhaseFigures {
                offered: 0,
                dropped: 0,
                answered: BTreeMap::new(),
                latency: BTreeMap::new(),
                service: Buckets::new(n_bounds),
                hdr: new_hist(),
                exemplars: BTreeMap::new(),
            });
            if s.traces.sent > 0 {
                for h in s.traces.slowest() {
                    let b = self.bounds_ns.partition_point(|x| *x < h.latency_ns);
                    let i = if split { h.request } else { 0 };
                    f.exemplars.insert(
                        (i, b),
                        Exemplar {
                            trace_id: crate::metrics::traces::trace_hex(h.trace),
                            value_s: h.latency_ns as f64 / 1e9,
                            at_unix_s: self.labels.started_at + h.sent_ns as f64 / 1e9,
                        },
                    );
                }
            }
            f.offered += s.offered;
            f.dropped += s.dropped;
            for (c, h) in &s.classes {
                let _ = f.hdr.add(&h.latency);
                f.service.add(&self.bounds_ns, &h.service);
                if split {
                    for (i, r) in h.by_request.iter().enumerate() {
                        let Some(r) = r else { continue };
                        *f.answered.entry((i, *c)).or_default() += r.len();
                        f.latency
                            .entry(i)
                            .or_insert_with(|| Buckets::new(n_bounds))
                            .add(&self.bounds_ns, r);
                    }
                } else {
                    *f.answered.entry((0, *c)).or_default() += h.latency.len();
                    f.latency
                        .entry(0)
                        .or_insert_with(|| Buckets::new(n_bounds))
                        .add(&self.bounds_ns, &h.latency);
                }
            }
        }
        self.in_flight = in_flight;
        self.sched_lag_s = w.sched_lag_us as f64 / 1e6;
        self.busy_ratio = w.busy_pct.map(|b| b / 100.0);
        self.windows += 1;
    }

    fn phase_name(&self, p: usize) -> String {
        self.labels
            .phases
            .get(p)
            .cloned()
            .unwrap_or_else(|| format!("phase-{p}"))
    }

    fn request_name(&self, i: usize) -> String {
        self.labels
            .requests
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("request-{i}"))
    }

    /// The figures as metric families (the one rendering both encoders use).
    pub fn families(&self) -> Vec<Family> {
        use names::*;
        let base = || {
            vec![
                ("run", self.labels.run.clone()),
                ("shard", self.labels.shard.clone()),
            ]
        };
        let with = |extra: &[(&'static str, String)]| {
            let mut l = base();
            l.extend(extra.iter().cloned());
            l
        };
        let mut offered = Family::new(OFFERED, "Requests due to start (sent + dropped)");
        let mut dropped = Family::new(
            DROPPED,
            "Requests due but not started (max_in_flight reached)",
        );
        let mut requests = Family::new(
            REQUESTS,
            "Requests answered (or given up), by outcome class",
        );
        let mut latency = Family::new(
            LATENCY,
            "Latency from the intended start (open model: no coordinated omission), every class",
        );
        let mut service = Family::new(SERVICE, "Service time, from the actual send, every class");
        let mut quantile = Family::new(
            LATENCY_QUANTILE,
            "Latency quantile from the intended start over the phase so far (HdrHistogram, 3 digits), every class",
        );
        for (p, f) in &self.phases {
            let phase = self.phase_name(*p);
            let ph = ("phase", phase.clone());
            offered
                .samples
                .push((with(std::slice::from_ref(&ph)), Value::Counter(f.offered)));
            dropped
                .samples
                .push((with(std::slice::from_ref(&ph)), Value::Counter(f.dropped)));
            for ((i, c), n) in &f.answered {
                requests.samples.push((
                    with(&[
                        ph.clone(),
                        ("request", self.request_name(*i)),
                        ("class", c.name().to_string()),
                    ]),
                    Value::Counter(*n),
                ));
            }
            for (i, b) in &f.latency {
                latency.samples.push((
                    with(&[ph.clone(), ("request", self.request_name(*i))]),
                    self.histogram(b),
                ));
            }
            service
                .samples
                .push((with(std::slice::from_ref(&ph)), self.histogram(&f.service)));
            if !f.hdr.is_empty() {
                for q in QUANTILES {
                    let v = f.hdr.value_at_quantile(q) as f64 / 1e9;
                    quantile
                        .samples
                        .push((with(&[ph.clone(), ("q", q.to_string())]), Value::Gauge(v)));
                }
            }
        }
        let mut in_flight = Family::new(IN_FLIGHT, "Requests queued or running now");
        in_flight
            .samples
            .push((base(), Value::Gauge(self.in_flight as f64)));
        let mut lag = Family::new(
            SCHED_LAG,
            "Worst open-model scheduler lateness in the last second (large = saturated generator)",
        );
        lag.samples.push((base(), Value::Gauge(self.sched_lag_s)));
        let mut busy = Family::new(
            WORKER_BUSY,
            "Busiest load worker's event-loop busy share in the last second (0-1)",
        );
        if let Some(b) = self.busy_ratio {
            busy.samples.push((base(), Value::Gauge(b)));
        }
        let mut windows = Family::new(WINDOWS, "1-s windows recorded so far");
        windows.samples.push((base(), Value::Counter(self.windows)));
        let mut failures = Family::new(PUSH_FAILURES, "Remote-write pushes that failed");
        failures
            .samples
            .push((base(), Value::Counter(self.push_failures)));
        [
            offered, dropped, requests, latency, service, quantile, in_flight, lag, busy, windows,
            failures,
        ]
        .into_iter()
        .filter(|f| !f.samples.is_empty())
        .collect()
    }

    /// The newest traced request of each latency bucket, by phase and request.
    pub fn exemplars(&self) -> Exemplars {
        let mut out = Exemplars::new();
        for (p, f) in &self.phases {
            for ((i, b), e) in &f.exemplars {
                out.entry((self.phase_name(*p), self.request_name(*i)))
                    .or_default()
                    .insert(*b, e.clone());
            }
        }
        out
    }

    fn histogram(&self, b: &Buckets) -> Value {
        let mut buckets: Vec<(f64, u64)> = self
            .bounds_s
            .iter()
            .copied()
            .chain(std::iter::once(f64::INFINITY))
            .zip(b.counts.iter().copied())
            .collect();
        // Round bounds to 6 significant digits: `le` values read well in Grafana.
        for (le, _) in &mut buckets {
            if le.is_finite() {
                *le = format!("{:.6e}", *le).parse().unwrap_or(*le);
            }
        }
        Value::Histogram {
            sum: b.sum_s,
            count: b.count,
            buckets,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Stats;

    fn window(second: u64, lat_ms: &[u64]) -> Window {
        let mut s = Stats {
            offered: lat_ms.len() as u64 + 1,
            dropped: 1,
            ..Default::default()
        };
        for ms in lat_ms {
            s.add_hist(
                Class::Ok,
                &{
                    let mut h = new_hist();
                    h.record(ms * 1_000_000).expect("in range");
                    h
                },
                crate::metrics::hlog::TagKind::Latency,
            );
        }
        Window {
            second,
            phases: vec![(0, s)],
            in_flight: 3,
            sched_lag_us: 1500,
            busy_pct: Some(40.0),
        }
    }

    #[test]
    fn counts_and_buckets_add_up_over_windows() {
        let mut f = Figures::new(Labels {
            run: "r".into(),
            shard: "1/1".into(),
            phases: vec!["steady".into()],
            requests: vec!["get".into()],
            started_at: 0.0,
        });
        f.window(&window(0, &[1, 2, 3]), 5);
        f.window(&window(1, &[10, 1000]), 2);
        let fams = f.families();
        let get = |n: &str| fams.iter().find(|x| x.name == n).expect(n);
        assert!(matches!(
            get(names::OFFERED).samples[0].1,
            Value::Counter(7)
        ));
        assert!(matches!(
            get(names::DROPPED).samples[0].1,
            Value::Counter(2)
        ));
        assert!(matches!(
            get(names::REQUESTS).samples[0].1,
            Value::Counter(5)
        ));
        let Value::Histogram {
            count,
            buckets,
            sum,
        } = &get(names::LATENCY).samples[0].1
        else {
            panic!("a histogram")
        };
        assert_eq!(*count, 5);
        assert_eq!(buckets.iter().map(|b| b.1).sum::<u64>(), 5);
        assert!((sum - 1.016).abs() < 0.01, "{sum}");
        // 1 s lands in the first bucket at or above it, not below.
        let at_1s = buckets
            .iter()
            .find(|b| b.0 >= 1.0)
            .expect("a bound above 1 s");
        assert!(at_1s.1 >= 1);
        let q = get(names::LATENCY_QUANTILE);
        assert_eq!(q.samples.len(), QUANTILES.len());
        assert!(matches!(get(names::IN_FLIGHT).samples[0].1, Value::Gauge(g) if g == 2.0));
    }
}
