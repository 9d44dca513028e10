//! The recorder: every request's outcome goes into HdrHistograms per phase ×
//! outcome class (and per request of the mix, and whole scenario iterations
//! per scenario: [`ClassHists`]), cut into 1-s windows. Windows become the interval log
//! (`latency.hlog`), the time series (`timeseries.csv`) and the per-phase
//! totals that budgets and reports read. Nothing is kept per request, so
//! memory stays flat however long the run.
//!
//! - [`WorkerRecorder`]: owned by one load worker, no locks on the hot path.
//! - [`Aggregator`]: the recorder thread; merges the workers' windows.
//! - [`hlog`]: the interval log writer/reader; [`series`]: the time series.
//! - [`measured`]: per-phase totals of a run and the generator's own health.
//! - [`errors`]: what went wrong beyond the class (statuses, messages,
//!   failed checks, sample bodies), tallied beside the histograms.
//! - [`traces`]: the slowest requests sent with a trace context, a few per scope.

pub mod errors;
pub mod hlog;
pub mod measured;
pub mod series;
pub mod traces;

pub use measured::{GeneratorHealth, InMemoryWindows, LatencyWindows, Measured};

use std::collections::BTreeMap;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Lowest and highest recordable latency (ns): 1 µs to 1 h at 3 significant digits.
const LOWEST_NS: u64 = 1_000;
const HIGHEST_NS: u64 = 3_600_000_000_000;

/// An empty latency histogram (nanoseconds).
pub fn new_hist() -> Histogram<u64> {
    // Bounds are constants that the crate accepts; failure here is a bug.
    Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, 3).expect("valid histogram bounds")
}

/// How a request ended. Every class gets its own histograms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// An expected status (and the body check passed, when sampled).
    Ok,
    /// 503 or 429: the server refused the work (load shedding).
    Shed,
    /// Any other unexpected status.
    HttpError,
    /// Expected status but the sampled body check failed.
    CheckFailed,
    /// No complete answer within the request timeout.
    Timeout,
    /// The connection could not be made (refused, unreachable, TLS failure).
    ConnectError,
    /// The connection broke mid-request (reset, closed early).
    Reset,
    /// Anything else the client reported.
    OtherError,
    /// Still queued or in flight when the run ended (or was stopped) and
    /// the drain gave it up: no answer, its latency is at least the time it
    /// waited until then.
    Unfinished,
    /// An expected status, but the body was larger than `expect.max_body`,
    /// so the check or extraction it was read for could not run: brunt's
    /// own limit, said as such (never a pass on a body it did not read).
    BodyTooLarge,
    /// An answer that made a scenario step refresh its credentials (a 401
    /// on a `refresh.on_status`): the step was sent again once, and that
    /// send has its own outcome. Not an error: shown, never hidden.
    Retried,
}

pub const CLASSES: [Class; 11] = [
    Class::Ok,
    Class::Shed,
    Class::HttpError,
    Class::CheckFailed,
    Class::Timeout,
    Class::ConnectError,
    Class::Reset,
    Class::OtherError,
    Class::Unfinished,
    Class::BodyTooLarge,
    Class::Retried,
];

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Ok => "ok",
            Class::Shed => "shed",
            Class::HttpError => "http_error",
            Class::CheckFailed => "check_failed",
            Class::Timeout => "timeout",
            Class::ConnectError => "connect_error",
            Class::Reset => "reset",
            Class::OtherError => "other_error",
            Class::Unfinished => "unfinished",
            Class::BodyTooLarge => "body_too_large",
            Class::Retried => "retried",
        }
    }
    pub fn from_name(s: &str) -> Option<Class> {
        CLASSES.iter().copied().find(|c| c.name() == s)
    }
    /// Errors are everything but `ok`, `shed` (shedding is a deliberate
    /// answer) and `retried` (its resend has its own outcome); `unfinished`
    /// is one: the user got no answer.
    pub fn is_error(self) -> bool {
        !matches!(self, Class::Ok | Class::Shed | Class::Retried)
    }
}

/// Latency (from the intended start), service time (from the actual send)
/// and the wait between the two of one class.
#[derive(Debug, Clone)]
pub struct ClassHists {
    pub latency: Histogram<u64>,
    pub service: Histogram<u64>,
    /// From the intended start to the actual send: the time a due request
    /// waited in brunt's own queue for one of its lanes (a connection, an
    /// HTTP/2 stream) — and the scheduler's lateness. A request given up
    /// before it was sent waited its whole latency.
    pub wait: Histogram<u64>,
    /// Latency split by request of the mix (index into the profile's
    /// `requests`); empty when the mix has a single request.
    pub by_request: Vec<Option<Histogram<u64>>>,
    /// Whole iterations of scenario `k` that ended in this class (`ok`: every
    /// step answered ok; otherwise the class of the step that ended it), from
    /// the iteration's intended start to its last answer.
    pub by_scenario: Vec<Option<Histogram<u64>>>,
}

impl ClassHists {
    fn new() -> Self {
        ClassHists {
            latency: new_hist(),
            service: new_hist(),
            wait: new_hist(),
            by_request: Vec::new(),
            by_scenario: Vec::new(),
        }
    }
    fn add(&mut self, o: &ClassHists) {
        // Same bounds everywhere, so add cannot fail; saturate defensively.
        let _ = self.latency.add(&o.latency);
        let _ = self.service.add(&o.service);
        let _ = self.wait.add(&o.wait);
        for (i, h) in o.by_request.iter().enumerate() {
            if let Some(h) = h {
                let _ = self.request_mut(i).add(h);
            }
        }
        for (k, h) in o.by_scenario.iter().enumerate() {
            if let Some(h) = h {
                let _ = self.scenario_mut(k).add(h);
            }
        }
    }
    /// The histogram of request `i`, created on first use.
    pub fn request_mut(&mut self, i: usize) -> &mut Histogram<u64> {
        if self.by_request.len() <= i {
            self.by_request.resize_with(i + 1, || None);
        }
        self.by_request[i].get_or_insert_with(new_hist)
    }
    /// The iteration histogram of scenario `k`, created on first use.
    pub fn scenario_mut(&mut self, k: usize) -> &mut Histogram<u64> {
        if self.by_scenario.len() <= k {
            self.by_scenario.resize_with(k + 1, || None);
        }
        self.by_scenario[k].get_or_insert_with(new_hist)
    }
}

/// Histograms and counts of one scope (a window, a phase, or the whole run).
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub classes: BTreeMap<Class, ClassHists>,
    /// Requests due to start (sent + dropped).
    pub offered: u64,
    /// Due but not started: `max_in_flight` was reached.
    pub dropped: u64,
    /// Shed answers (503/429) that carried a `Retry-After` header.
    pub shed_retry_after: u64,
    /// Wall time the scope covers (for rates).
    pub duration: Duration,
    /// Connections opened (TCP, TLS included), counted when the request
    /// that opened one ends.
    pub connects: u64,
    /// Their connect times (TCP connect + TLS handshake), kept apart from
    /// request latency; `None` until a connection is opened.
    pub connect_time: Option<Histogram<u64>>,
    /// Every answer not `ok`, by what went wrong (the errors table).
    pub failures: errors::ErrorTally,
    /// Requests sent with a trace context (`target.trace`): the slowest few.
    pub traces: traces::Traced,
    /// Scenario steps that ran their `refresh.from` step again (a login).
    pub refreshes: u64,
}

impl Stats {
    pub fn merge(&mut self, o: &Stats) {
        for (c, h) in &o.classes {
            self.classes
                .entry(*c)
                .or_insert_with(ClassHists::new)
                .add(h);
        }
        self.offered += o.offered;
        self.dropped += o.dropped;
        self.shed_retry_after += o.shed_retry_after;
        self.connects += o.connects;
        self.refreshes += o.refreshes;
        if let Some(h) = &o.connect_time {
            let _ = self.connect_time.get_or_insert_with(new_hist).add(h);
        }
        if !o.failures.is_empty() {
            self.failures.merge(&o.failures);
        }
        if o.traces.sent > 0 {
            self.traces.merge(&o.traces);
        }
    }
    pub fn count(&self, c: Class) -> u64 {
        self.classes.get(&c).map(|h| h.latency.len()).unwrap_or(0)
    }
    /// Requests that got an answer or an error, `unfinished` included
    /// (dropped excluded): `offered == completed() + dropped`.
    pub fn completed(&self) -> u64 {
        self.classes.values().map(|h| h.latency.len()).sum()
    }
    /// Offered requests with no recorded outcome: in flight when the run
    /// was stopped hard (a second signal, a kill), or answered in a second
    /// that never reached the disk. Zero for any run that ended itself.
    pub fn unknown(&self) -> u64 {
        self.offered.saturating_sub(self.completed() + self.dropped)
    }
    pub fn errors(&self) -> u64 {
        self.classes
            .iter()
            .filter(|(c, _)| c.is_error())
            .map(|(_, h)| h.latency.len())
            .sum()
    }
    /// Latency histogram of the given classes merged (all when `None`).
    pub fn latency(&self, class: Option<Class>) -> Histogram<u64> {
        let mut h = new_hist();
        for (c, ch) in &self.classes {
            if class.is_none_or(|k| k == *c) {
                let _ = h.add(&ch.latency);
            }
        }
        h
    }
    pub fn service(&self, class: Option<Class>) -> Histogram<u64> {
        self.merged(class, |ch| &ch.service)
    }
    /// The wait for a lane (see [`ClassHists::wait`]) of the given classes merged.
    pub fn wait(&self, class: Option<Class>) -> Histogram<u64> {
        self.merged(class, |ch| &ch.wait)
    }
    fn merged(
        &self,
        class: Option<Class>,
        of: impl Fn(&ClassHists) -> &Histogram<u64>,
    ) -> Histogram<u64> {
        let mut h = new_hist();
        for (c, ch) in &self.classes {
            if class.is_none_or(|k| k == *c) {
                let _ = h.add(of(ch));
            }
        }
        h
    }
    /// Errors (dropped included) over everything offered.
    pub fn error_rate(&self) -> f64 {
        let denom = self.completed() + self.dropped;
        if denom == 0 {
            0.0
        } else {
            (self.errors() + self.dropped) as f64 / denom as f64
        }
    }
    /// Add a histogram read back from an interval log.
    pub fn add_hist(&mut self, c: Class, h: &Histogram<u64>, kind: hlog::TagKind) {
        let e = self.ensure(c);
        let _ = match kind {
            hlog::TagKind::Latency => e.latency.add(h),
            hlog::TagKind::Service => e.service.add(h),
            hlog::TagKind::Wait => e.wait.add(h),
            hlog::TagKind::Request(i) => e.request_mut(i).add(h),
            hlog::TagKind::Iteration(k) => e.scenario_mut(k).add(h),
        };
    }

    /// The answers of the requests `at` (indices into the mix) as a scope of
    /// their own: latency per class, counts, this scope's duration. Service
    /// time, offered and dropped are not kept per request (drops happen
    /// before a request is picked), so they stay empty; the budget language
    /// refuses those metrics on a step.
    pub fn requests_scope(&self, at: &[usize]) -> Stats {
        let mut out = Stats {
            duration: self.duration,
            ..Stats::default()
        };
        for (c, ch) in &self.classes {
            for i in at {
                if let Some(Some(h)) = ch.by_request.get(*i) {
                    let _ = out.ensure(*c).latency.add(h);
                }
            }
        }
        out
    }

    /// Whole scenario iterations as a scope (see [`ClassHists::by_scenario`]):
    /// of the scenarios `at`, or of every scenario when `at` is empty. Each
    /// iteration is one "answer" of the class it ended in.
    pub fn iterations_scope(&self, at: &[usize]) -> Stats {
        let mut out = Stats {
            duration: self.duration,
            ..Stats::default()
        };
        for (c, ch) in &self.classes {
            for (k, h) in ch.by_scenario.iter().enumerate() {
                if let Some(h) = h {
                    if at.is_empty() || at.contains(&k) {
                        let _ = out.ensure(*c).latency.add(h);
                    }
                }
            }
        }
        out
    }
    /// Latency of request `i` of the mix (all classes) and its count per class.
    pub fn request(&self, i: usize) -> (Histogram<u64>, BTreeMap<Class, u64>) {
        let mut h = new_hist();
        let mut counts = BTreeMap::new();
        for (c, ch) in &self.classes {
            if let Some(Some(r)) = ch.by_request.get(i) {
                let _ = h.add(r);
                counts.insert(*c, r.len());
            }
        }
        (h, counts)
    }
    fn ensure(&mut self, c: Class) -> &mut ClassHists {
        self.classes.entry(c).or_insert_with(ClassHists::new)
    }
}

/// One worker's share of one 1-s window, sent to the aggregator.
#[derive(Debug)]
pub struct WindowPart {
    pub window: u64,
    /// Per phase index.
    pub phases: Vec<(usize, Stats)>,
    /// Requests queued or running when the part was cut.
    pub in_flight: u64,
    /// Worst lateness of the scheduler in this window, µs: how long after
    /// its due time a request was handed to a lane. Large = saturated generator.
    pub sched_lag_us: u64,
    /// Share of the window this worker's event loop was busy, percent.
    pub busy_pct: Option<f64>,
}

/// Messages from workers to the aggregator.
#[derive(Debug)]
pub enum RecorderMsg {
    Part(WindowPart),
    /// A worker has stopped and flushed everything.
    Done,
}

/// The hot-path recorder of one load worker. Not shared: no locks.
pub struct WorkerRecorder {
    start: Instant,
    window: u64,
    /// Small: usually one phase per window.
    phases: Vec<(usize, Stats)>,
    tx: Sender<RecorderMsg>,
    pub in_flight: u64,
    sched_lag_us: u64,
    /// Runtime busy time and when it was read, for `busy_pct`.
    cpu_mark: Option<(Duration, Instant)>,
    /// Keep per-request histograms (the mix has more than one request).
    split_requests: bool,
    /// What the engine said of the exchange about to be recorded.
    why: Option<errors::Failure>,
}

/// One finished request, as the engine reports it.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    pub phase: usize,
    /// Index of the request in the profile's mix.
    pub request: usize,
    pub class: Class,
    /// Scheduled start (open model) or actual start (closed model).
    pub intended: Instant,
    pub sent: Instant,
    pub end: Instant,
    /// A shed answer carried `Retry-After`.
    pub retry_after: bool,
    /// The request opened a connection, taking this long.
    pub connect: Option<Duration>,
    /// The W3C trace id it was sent with (`target.trace`), if it was.
    pub trace: Option<std::num::NonZeroU128>,
}

impl WorkerRecorder {
    pub fn new(start: Instant, tx: Sender<RecorderMsg>, split_requests: bool) -> Self {
        WorkerRecorder {
            start,
            window: 0,
            phases: Vec::new(),
            tx,
            in_flight: 0,
            sched_lag_us: 0,
            cpu_mark: None,
            split_requests,
            why: None,
        }
    }

    #[inline]
    fn stats_at(&mut self, phase: usize, at: Instant) -> &mut Stats {
        let w = at.saturating_duration_since(self.start).as_secs();
        if w > self.window {
            self.flush_to(w);
        }
        let pos = match self.phases.iter().position(|(p, _)| *p == phase) {
            Some(i) => i,
            None => {
                self.phases.push((phase, Stats::default()));
                self.phases.len() - 1
            }
        };
        &mut self.phases[pos].1
    }

    /// Record a finished request.
    #[inline]
    pub fn record(&mut self, o: Outcome) {
        let latency = o.end.saturating_duration_since(o.intended).as_nanos() as u64;
        let service = o.end.saturating_duration_since(o.sent).as_nanos() as u64;
        let wait = o.sent.saturating_duration_since(o.intended).as_nanos() as u64;
        let split = self.split_requests;
        let why = self.why.take();
        let start = self.start;
        let stats = self.stats_at(o.phase, o.end);
        if let Some(id) = o.trace {
            stats.traces.offer(traces::Hit {
                trace: id.get(),
                latency_ns: latency.max(LOWEST_NS),
                class: o.class,
                sent_ns: o.sent.saturating_duration_since(start).as_nanos() as u64,
                request: o.request,
            });
        }
        if o.retry_after {
            stats.shed_retry_after += 1;
        }
        if let Some(c) = o.connect {
            stats.connects += 1;
            let ns = (c.as_nanos() as u64).max(LOWEST_NS);
            stats
                .connect_time
                .get_or_insert_with(new_hist)
                .saturating_record(ns);
        }
        if o.class != Class::Ok {
            stats.failures.tally(o.class, o.request, why);
        }
        let h = stats.ensure(o.class);
        let latency = latency.max(LOWEST_NS);
        h.latency.saturating_record(latency);
        h.service.saturating_record(service.max(LOWEST_NS));
        h.wait.saturating_record(wait.max(LOWEST_NS));
        if split {
            h.request_mut(o.request).saturating_record(latency);
        }
    }

    /// What went wrong with the exchange recorded next (the engine says it
    /// just before [`WorkerRecorder::record`]).
    #[inline]
    pub fn failure(&mut self, f: errors::Failure) {
        self.why = Some(f);
    }

    /// Record a whole scenario iteration of scenario `scenario` that ended
    /// in `class` (`ok`: every step ok) at `end`; its duration counts from
    /// `intended`, the arrival's intended start in the open model.
    #[inline]
    pub fn iteration(
        &mut self,
        phase: usize,
        scenario: usize,
        class: Class,
        intended: Instant,
        end: Instant,
    ) {
        let d = (end.saturating_duration_since(intended).as_nanos() as u64).max(LOWEST_NS);
        self.stats_at(phase, end)
            .ensure(class)
            .scenario_mut(scenario)
            .saturating_record(d);
    }

    /// Give up a request still queued (`sent: None`) or in flight when the
    /// drain at the end of a run runs out: class `unfinished`, latency from
    /// its intended start to `end` (it is at least that slow), service time
    /// from the send when it was sent, the wait until the send (or `end`).
    pub fn unfinished(
        &mut self,
        phase: usize,
        request: usize,
        intended: Instant,
        sent: Option<Instant>,
        end: Instant,
    ) {
        let latency = (end.saturating_duration_since(intended).as_nanos() as u64).max(LOWEST_NS);
        let split = self.split_requests;
        let stats = self.stats_at(phase, end);
        stats.failures.tally(Class::Unfinished, request, None);
        let h = stats.ensure(Class::Unfinished);
        h.latency.saturating_record(latency);
        let waited = sent.unwrap_or(end).saturating_duration_since(intended);
        h.wait
            .saturating_record((waited.as_nanos() as u64).max(LOWEST_NS));
        if let Some(sent) = sent {
            let service = end.saturating_duration_since(sent).as_nanos() as u64;
            h.service.saturating_record(service.max(LOWEST_NS));
        }
        if split {
            h.request_mut(request).saturating_record(latency);
        }
    }

    /// A request fell due (whether it then starts or is dropped).
    #[inline]
    pub fn offered(&mut self, phase: usize, at: Instant) {
        self.stats_at(phase, at).offered += 1;
    }

    /// The scheduler handed a due request over `lag` after its due time.
    #[inline]
    pub fn sched_lag(&mut self, lag: Duration) {
        let us = lag.as_micros() as u64;
        if us > self.sched_lag_us {
            self.sched_lag_us = us;
        }
    }

    #[inline]
    pub fn dropped(&mut self, phase: usize, at: Instant) {
        self.stats_at(phase, at).dropped += 1;
    }

    /// A scenario step refreshed its credentials (ran its `refresh.from`).
    pub fn refreshed(&mut self, phase: usize, at: Instant) {
        self.stats_at(phase, at).refreshes += 1;
    }

    /// Cut the window if the clock has moved on (called by a ticker, so that
    /// quiet seconds still produce windows).
    pub fn tick(&mut self, now: Instant) {
        let w = now.saturating_duration_since(self.start).as_secs();
        if w > self.window {
            self.flush_to(w);
        }
    }

    fn flush_to(&mut self, next: u64) {
        let part = WindowPart {
            window: self.window,
            phases: std::mem::take(&mut self.phases),
            in_flight: self.in_flight,
            sched_lag_us: std::mem::take(&mut self.sched_lag_us),
            busy_pct: self.busy_pct(),
        };
        // The aggregator outlives workers; if it is gone the run is ending anyway.
        let _ = self.tx.send(RecorderMsg::Part(part));
        self.window = next;
    }

    /// Share of wall time the worker's runtime spent running tasks (not
    /// parked waiting for I/O or timers) since the last call, in percent.
    /// Near 100% the event loop never rests: requests start late and queue
    /// as if the server were slow. Unlike thread CPU time this also counts
    /// time the OS took the core away (a machine overloaded by others).
    fn busy_pct(&mut self) -> Option<f64> {
        let handle = tokio::runtime::Handle::try_current().ok()?;
        let busy = handle.metrics().worker_total_busy_duration(0);
        let now = Instant::now();
        let pct = self.cpu_mark.map(|(b0, at)| {
            let wall = now.saturating_duration_since(at).as_secs_f64().max(1e-3);
            busy.saturating_sub(b0).as_secs_f64() / wall * 100.0
        });
        self.cpu_mark = Some((busy, now));
        pct.map(|p| p.min(100.0))
    }

    /// Flush the last window and say goodbye.
    pub fn finish(&mut self) {
        let w = self.window + 1;
        self.flush_to(w);
        let _ = self.tx.send(RecorderMsg::Done);
    }
}

/// A finished window as the aggregator hands it on: merged over workers.
#[derive(Debug)]
pub struct Window {
    pub second: u64,
    pub phases: Vec<(usize, Stats)>,
    pub in_flight: u64,
    /// Worst scheduler lateness over the workers, µs.
    pub sched_lag_us: u64,
    /// Busiest worker's event-loop busy share, percent.
    pub busy_pct: Option<f64>,
}

impl Window {
    pub fn total(&self) -> Stats {
        let mut s = Stats::default();
        for (_, p) in &self.phases {
            s.merge(p);
        }
        s
    }
}

/// Collects workers' window parts and releases each window once every
/// worker has moved past it (or a grace time has passed).
pub struct Aggregator {
    workers: usize,
    pending: BTreeMap<u64, (Window, usize)>,
    /// Highest window released; late parts fold into the next one.
    released: Option<u64>,
    done: usize,
}

impl Aggregator {
    pub fn new(workers: usize) -> Self {
        Aggregator {
            workers,
            pending: BTreeMap::new(),
            released: None,
            done: 0,
        }
    }

    pub fn all_done(&self) -> bool {
        self.done >= self.workers
    }

    pub fn accept(&mut self, msg: RecorderMsg) {
        match msg {
            RecorderMsg::Done => self.done += 1,
            RecorderMsg::Part(part) => {
                let mut w = part.window;
                if let Some(r) = self.released {
                    if w <= r {
                        w = r + 1;
                    }
                }
                let entry = self.pending.entry(w).or_insert_with(|| {
                    (
                        Window {
                            second: w,
                            phases: Vec::new(),
                            in_flight: 0,
                            sched_lag_us: 0,
                            busy_pct: None,
                        },
                        0,
                    )
                });
                entry.1 += 1;
                entry.0.in_flight += part.in_flight;
                entry.0.sched_lag_us = entry.0.sched_lag_us.max(part.sched_lag_us);
                if let Some(b) = part.busy_pct {
                    entry.0.busy_pct = Some(entry.0.busy_pct.map_or(b, |a: f64| a.max(b)));
                }
                for (p, s) in part.phases {
                    match entry.0.phases.iter_mut().find(|(q, _)| *q == p) {
                        Some((_, t)) => t.merge(&s),
                        None => entry.0.phases.push((p, s)),
                    }
                }
            }
        }
    }

    /// Windows ready to release: all workers reported, or `now_window` is
    /// at least two seconds past it, or every worker is done.
    pub fn ready(&mut self, now_window: u64) -> Vec<Window> {
        let mut out = Vec::new();
        while let Some((&w, (_, n))) = self.pending.iter().next() {
            let complete = *n >= self.workers || now_window >= w + 2 || self.all_done();
            if !complete {
                break;
            }
            if let Some((mut win, _)) = self.pending.remove(&w) {
                win.phases.sort_by_key(|(p, _)| *p);
                self.released = Some(w);
                out.push(win);
            }
        }
        out
    }
}

/// Percentile of a histogram in microseconds.
pub fn pct_us(h: &Histogram<u64>, q: f64) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.value_at_quantile(q) / 1000
    }
}
