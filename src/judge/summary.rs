//! `summary.json`'s content: the judged result of a run. [`build`] turns
//! per-phase histograms, the budgets and the shape's inputs into a
//! [`Summary`]; writing it is [`crate::rundir::write_json`], rendering it is `report`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::gates::{gates, Gate};
use super::knee::{stress_result, StressResult};
pub use super::server_side::{ServerSide, ServerSideStatus};
use super::wait::ConnectionWait;
use super::Verdicts;
use crate::budgets::{Budget, Verdict};
use crate::metrics::{pct_us, Class, GeneratorHealth, Measured, Stats, CLASSES};
use crate::profile::verdicts::VerdictsConfig;
use crate::rundir::{MergedFrom, RunData, RunMeta};
use crate::vocab::collectors::CollectorsSummary;
use crate::vocab::{exit, Model, ShapeKind};

/// Bumped when a field changes meaning or disappears.
pub const SUMMARY_SCHEMA: &str = "brunt.summary/1";

/// Shard starts further apart than this blur the merged per-second series
/// (a window of one shard overlaps two of another's by a visible share).
pub const SKEW_WARN_MS: f64 = 100.0;

/// One request of the mix over the whole run (only with several requests).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RequestSummary {
    pub name: String,
    pub requests: u64,
    pub ok: u64,
    pub shed: u64,
    pub errors: u64,
    /// All answers of this request, from the intended start.
    pub latency: Percentiles,
}

/// One scenario's whole iterations over the whole run, from each
/// iteration's intended start (the arrival's, in the open model) to its
/// last answer, think times included.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IterationSummary {
    pub scenario: String,
    /// Iterations that ended, any way (`ok + failed`).
    pub iterations: u64,
    /// Every step answered ok.
    pub ok: u64,
    /// Ended by a step that failed, or given up (`unfinished`).
    pub failed: u64,
    /// Every iteration.
    pub latency: Percentiles,
    /// Completed (ok) iterations only.
    pub ok_latency: Percentiles,
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Percentiles {
    pub count: u64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
}

impl Percentiles {
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> Self {
        let ms = |us: u64| us as f64 / 1000.0;
        Percentiles {
            count: h.len(),
            p50: ms(pct_us(h, 0.50)),
            p90: ms(pct_us(h, 0.90)),
            p95: ms(pct_us(h, 0.95)),
            p99: ms(pct_us(h, 0.99)),
            p999: ms(pct_us(h, 0.999)),
            max: if h.is_empty() {
                0.0
            } else {
                h.max() as f64 / 1e6
            },
            mean: if h.is_empty() { 0.0 } else { h.mean() / 1e6 },
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ClassSummary {
    pub count: u64,
    /// From the intended start (what a user waits in the open model).
    pub latency: Percentiles,
    /// From the actual send (what the server took once asked).
    pub service: Percentiles,
}

/// Stats of one scope: a phase or the whole run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScopeSummary {
    pub name: String,
    pub label: String,
    pub start_s: f64,
    pub duration_s: f64,
    pub offered: u64,
    /// Completed requests, any outcome.
    pub requests: u64,
    pub dropped: u64,
    /// Offered with no recorded outcome (a hard stop): `offered = requests
    /// + dropped + unknown`. Absent when zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unknown: u64,
    pub ok: u64,
    pub errors: u64,
    pub shed: u64,
    /// Shed answers that carried `Retry-After`.
    pub shed_retry_after: u64,
    /// Answers that made a scenario step refresh its credentials and go
    /// again once (class `retried`, not an error). Absent when zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retried: u64,
    /// Credential refreshes (a step's `refresh.from` run again). Absent when zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refreshes: u64,
    pub error_rate: f64,
    /// Offered per second.
    pub offered_rate: f64,
    /// Completed per second.
    pub rps: f64,
    /// Ok per second.
    pub throughput: f64,
    pub latency: Percentiles,
    pub service: Percentiles,
    /// From the intended start to the send: the wait for one of brunt's
    /// lanes (see [`super::wait`]); empty before it was recorded.
    #[serde(default)]
    pub wait: Percentiles,
    pub by_class: BTreeMap<String, ClassSummary>,
    /// A stress step begun after the breaching one and given up when the
    /// run stopped at the breach: shown as such, judged by nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub abandoned: bool,
}

impl ScopeSummary {
    pub fn of(name: &str, label: &str, start_s: f64, s: &Stats) -> Self {
        let secs = s.duration.as_secs_f64().max(1e-9);
        let mut by_class = BTreeMap::new();
        for c in CLASSES {
            // A class met only by iterations has no request answers.
            if let Some(h) = s.classes.get(&c).filter(|h| !h.latency.is_empty()) {
                by_class.insert(
                    c.name().to_string(),
                    ClassSummary {
                        count: h.latency.len(),
                        latency: Percentiles::of(&h.latency),
                        service: Percentiles::of(&h.service),
                    },
                );
            }
        }
        ScopeSummary {
            name: name.into(),
            label: label.into(),
            start_s,
            duration_s: s.duration.as_secs_f64(),
            offered: s.offered,
            requests: s.completed(),
            dropped: s.dropped,
            unknown: s.unknown(),
            ok: s.count(Class::Ok),
            errors: s.errors(),
            shed: s.count(Class::Shed),
            shed_retry_after: s.shed_retry_after,
            retried: s.count(Class::Retried),
            refreshes: s.refreshes,
            error_rate: s.error_rate(),
            offered_rate: s.offered as f64 / secs,
            rps: s.completed() as f64 / secs,
            throughput: s.count(Class::Ok) as f64 / secs,
            latency: Percentiles::of(&s.latency(None)),
            service: Percentiles::of(&s.service(None)),
            wait: Percentiles::of(&s.wait(None)),
            by_class,
            abandoned: false,
        }
    }
}

/// Why the load ended before the plan did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopKind {
    /// By design: a stress run stopped at its first budget breach.
    Breach,
    /// By the user or a signal (Ctrl-C, SIGTERM), or the run was killed.
    Interrupted,
    /// By design: a `unique` feeder handed out its last row.
    DataExhausted,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub schema: String,
    pub meta: RunMeta,
    /// The load was stopped by the user or a signal (Ctrl-C, SIGTERM) or
    /// killed, before the plan ended. A designed stop (stress stop on
    /// breach) is not an interruption: see `stop_kind`.
    pub interrupted: bool,
    /// Why the load ended early (a breach or an interruption).
    pub stopped_reason: Option<String>,
    /// `breach`, `interrupted`, or null when the plan ran to its end.
    #[serde(default)]
    pub stop_kind: Option<StopKind>,
    pub totals: ScopeSummary,
    pub phases: Vec<ScopeSummary>,
    /// Per request of the mix, scenario steps included as `scenario/step`
    /// (empty for a single-request mix).
    #[serde(default)]
    pub requests: Vec<RequestSummary>,
    /// Per scenario: its whole iterations (empty without scenarios).
    #[serde(default)]
    pub iterations: Vec<IterationSummary>,
    pub budgets: Vec<Verdict>,
    pub stress: Option<StressResult>,
    /// Every gate all passed and the run was not interrupted.
    pub passed: bool,
    /// Everything the result depends on: budgets, the knee against
    /// `expect_capacity`, the shape's checks (see [`super::gates`]).
    #[serde(default)]
    pub gates: Vec<Gate>,
    /// Plain-language warnings (closed-model latency, drops, saturated generator…).
    pub notes: Vec<String>,
    /// Whether brunt itself kept up with its schedule.
    #[serde(default)]
    pub generator: GeneratorHealth,
    /// The collectors' index (keys in alphabetical order, as always).
    #[serde(default, serialize_with = "crate::vocab::collectors::serialize_sorted")]
    pub collectors: Option<CollectorsSummary>,
    /// Whether the server side was seen, and why not (see [`ServerSide`]).
    #[serde(default)]
    pub server_side: Option<ServerSide>,
    #[serde(default)]
    pub findings: Option<serde_json::Value>,
    /// The shape's verdict (knee and cause, overload checks, spike recovery, leaks).
    #[serde(default)]
    pub verdicts: Option<Verdicts>,
    /// Per load phase: its threads (from dumps) and JFR waits; empty
    /// without thread evidence (see [`super::threads`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads_by_phase: Vec<super::threads::PhaseThreads>,
    /// The wait for brunt's own connections over the judged run, against
    /// its latency and service time (open model; see [`super::wait`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_wait: Option<ConnectionWait>,
    /// What went wrong, by class, request and status, check or message,
    /// with sample bodies (absent when every request was ok).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<super::errors::ErrorsTable>,
    /// Per load phase: what the database showed (the `postgres` collector):
    /// lock waits and the worst blocking chain, connections, the oldest
    /// transaction, top wait events, statement deltas; empty without it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub database_by_phase: Vec<crate::vocab::samples_db::DbPhase>,
    /// What the remote-write pushes did (absent when the run pushed nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export: Option<crate::vocab::export::ExportTally>,
    /// What `setup:` did, once before the load (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<crate::vocab::setup::OnceRecord>,
    /// What `teardown:` did after the load; a failed one leaves the verdict as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teardown: Option<crate::vocab::setup::OnceRecord>,
    /// Server-streaming gRPC calls per request: streams, messages per
    /// stream, time to first message (absent without such calls).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<crate::vocab::streams::StreamRow>,
    /// The slowest requests sent with a trace context, per phase (absent
    /// without `target.trace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traces: Option<super::traces::TracesSummary>,
}

/// The whole run less its warm-up phase (`None`: there is none, the run is it).
fn judged_run(meta: &RunMeta, m: &Measured) -> Option<Stats> {
    meta.phases.iter().any(|p| p.is_warmup()).then(|| {
        let mut run = Stats::default();
        for (p, s) in meta.phases.iter().zip(&m.phases) {
            if !p.is_warmup() {
                run.merge(s);
                run.duration += s.duration;
            }
        }
        run
    })
}

/// Evaluate budgets and assemble the summary.
pub fn build(
    data: &RunData,
    budgets: &[Budget],
    settings: &VerdictsConfig,
    m: &Measured,
    interrupted: bool,
    stopped_reason: Option<String>,
) -> Summary {
    let meta = data.meta.clone();
    let meta_requests = meta.requests.clone();
    let is_stress = matches!(meta.shape, ShapeKind::Stress { .. });
    let judged = judged_run(&meta, m);
    // Per-request histograms exist only for a mix of several requests.
    let split = meta.requests.len() > 1;
    let mut verdicts = Vec::new();
    for b in budgets {
        match &b.phase {
            Some(p) => {
                if let Some(i) = meta.phase_index(p) {
                    if let Some(s) = m.phases.get(i) {
                        if s.completed() + s.dropped > 0 || !interrupted {
                            verdicts.push(b.evaluate_in(s, split));
                        }
                    }
                }
            }
            // In a stress run the unscoped budgets on every request find the
            // knee step by step; step and iteration budgets judge the run.
            None if is_stress && b.on_all_requests() => {}
            // Every phase but the warm-up.
            None => match &judged {
                Some(run) => {
                    let mut v = b.evaluate_in(run, split);
                    v.scope = "run less warm-up".into();
                    verdicts.push(v);
                }
                None => verdicts.push(b.evaluate_in(&m.run, split)),
            },
        }
    }
    let stress = if let ShapeKind::Stress {
        expect_capacity, ..
    } = &meta.shape
    {
        Some(stress_result(&meta, budgets, m, *expect_capacity))
    } else {
        None
    };
    let mut notes = Vec::new();
    if meta.model == Model::Closed {
        notes.push("closed model: each virtual user waits for its answer, so a slow server lowers the offered load and latency hides queueing; use the open model to measure what users would wait".into());
    }
    if m.run.dropped > 0 {
        notes.push(format!(
            "{} requests were due but dropped because max_in_flight was reached: the target could not keep up (or raise load.max_in_flight)",
            m.run.dropped
        ));
    }
    let too_large = m.run.count(Class::BodyTooLarge);
    if too_large > 0 {
        notes.push(format!(
            "{too_large} answers were larger than expect.max_body (1 MiB unless set): their bodies were not checked, and they count as `body_too_large`, not as failed checks; raise expect.max_body to check them"
        ));
    }
    if m.run.unknown() > 0 {
        notes.push(format!(
            "{} offered requests have no recorded outcome: they were in flight when the run was stopped hard, or answered in a second never written (offered {} = requests {} + dropped {} + unknown {})",
            m.run.unknown(),
            m.run.offered,
            m.run.completed(),
            m.run.dropped,
            m.run.unknown()
        ));
    }
    if let Some(merged) = &meta.merged {
        notes.extend(merge_notes(merged));
    }
    notes.extend(data.unread.iter().map(|u| u.error.to_string()));
    if let Some(x) = data.export.as_ref().filter(|x| x.push_failures > 0) {
        notes.push(format!(
            "remote-write: {} of {} pushes failed, in {} second(s) (first: {}); the live figures in Prometheus miss those seconds (export.jsonl has every push)",
            x.push_failures,
            x.pushes,
            x.failed_seconds.len(),
            x.first_error.as_deref().unwrap_or("no reason given")
        ));
    }
    let lanes =
        |s: &Stats| ConnectionWait::of(s, meta.model, meta.connections, !meta.scenarios.is_empty());
    let connection_wait = lanes(judged.as_ref().unwrap_or(&m.run));
    if let Some(w) = connection_wait.as_ref().filter(|w| w.dominates) {
        notes.push(w.text.clone());
    }
    let shape_verdicts = Some(super::compute(
        data,
        budgets,
        &settings.leaks,
        m,
        stress.as_ref(),
    ));
    let mut gates = gates(
        meta.model,
        &verdicts,
        stress.as_ref(),
        shape_verdicts.as_ref(),
        settings.advisory,
    );
    // A latency budget whose tail was brunt's own queue says so (budget
    // gates come first, one per verdict, in order).
    for (g, v) in gates.iter_mut().zip(&verdicts).filter(|(_, v)| v.latency) {
        let scoped = meta.phase_index(&v.scope).and_then(|i| m.phases.get(i));
        let w = match scoped {
            Some(s) => lanes(s),
            None => connection_wait.clone(),
        };
        if let Some(w) = w.filter(|w| w.dominates) {
            g.text = format!("{} — {}", g.text, w.brief());
        }
    }
    // An interrupted run answered only part of its question: never a pass.
    let passed = !interrupted && gates.iter().all(Gate::holds);
    let phases = meta
        .phases
        .iter()
        .zip(&m.phases)
        .map(|(p, s)| ScopeSummary::of(&p.name, &p.label, p.start.as_secs_f64(), s))
        .collect();
    let requests = if meta.requests.len() > 1 {
        meta.requests
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let (h, counts) = m.run.request(i);
                let get = |c: Class| counts.get(&c).copied().unwrap_or(0);
                RequestSummary {
                    name: name.clone(),
                    requests: h.len(),
                    ok: get(Class::Ok),
                    shed: get(Class::Shed),
                    errors: counts
                        .iter()
                        .filter(|(c, _)| c.is_error())
                        .map(|(_, n)| n)
                        .sum(),
                    latency: Percentiles::of(&h),
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    let server_side = ServerSide::of(
        None,
        shape_verdicts.as_ref().is_some_and(|v| v.server_side),
        (meta.shard_index, meta.shard_count),
    );
    let iterations = meta
        .scenarios
        .iter()
        .enumerate()
        .map(|(k, name)| {
            let it = m.run.iterations_scope(&[k]);
            let ok = it.count(Class::Ok);
            IterationSummary {
                scenario: name.clone(),
                iterations: it.completed(),
                ok,
                failed: it.completed() - ok,
                latency: Percentiles::of(&it.latency(None)),
                ok_latency: Percentiles::of(&it.latency(Some(Class::Ok))),
            }
        })
        .collect();
    // Phases a stop left unreached have no row: "no dump" there says nothing.
    let ran: Vec<_> = meta
        .phases
        .iter()
        .zip(&m.phases)
        .filter(|(_, s)| !s.duration.is_zero())
        .map(|(p, _)| p.clone())
        .collect();
    let threads_by_phase = super::threads::by_phase(&ran, data.server.as_ref());
    let database_by_phase = data
        .server
        .iter()
        .flat_map(|s| &s.database)
        .filter(|d| ran.iter().any(|p| p.name == d.phase))
        .cloned()
        .collect();
    Summary {
        schema: SUMMARY_SCHEMA.into(),
        threads_by_phase,
        database_by_phase,
        requests,
        iterations,
        totals: ScopeSummary::of("run", "", 0.0, &m.run),
        phases,
        budgets: verdicts,
        stress,
        passed,
        gates,
        interrupted,
        stopped_reason,
        stop_kind: interrupted.then_some(StopKind::Interrupted),
        notes,
        meta,
        server_side: Some(server_side),
        collectors: None,
        findings: None,
        verdicts: shape_verdicts,
        generator: GeneratorHealth::default(),
        export: data.export.clone(),
        setup: data.setup.setup.clone(),
        teardown: data.setup.teardown.clone(),
        streams: data.streams.clone(),
        traces: super::traces::TracesSummary::of(data),
        connection_wait,
        errors: super::errors::ErrorsTable::of(&data.errors, &meta_requests, &m.run),
    }
}

impl Summary {
    /// The CLI's exit code for this result: [`exit::INTERRUPTED`] for a run
    /// that ended before its plan did, whatever was measured up to the stop;
    /// [`exit::BUDGET_FAILED`] when a gate failed or had no data.
    pub fn exit_code(&self) -> i32 {
        if self.interrupted {
            exit::INTERRUPTED
        } else if self.passed {
            exit::PASS
        } else {
            exit::BUDGET_FAILED
        }
    }

    /// Attach the collectors' index and judge the server side from it.
    pub fn set_collectors(&mut self, collectors: Option<CollectorsSummary>) {
        self.collectors = collectors;
        self.server_side = Some(self.server_side());
    }

    /// The server side judged from the summary's own fields: what
    /// `server_side` holds once the collectors are attached, and what a
    /// summary written before that field existed would have said.
    pub fn server_side(&self) -> ServerSide {
        let evidence = self.verdicts.as_ref().is_some_and(|v| v.server_side);
        let shard = (self.meta.shard_index, self.meta.shard_count);
        ServerSide::of(self.collectors.as_ref(), evidence, shard)
    }

    /// The gates that keep the run from passing.
    pub fn failed_gates(&self) -> impl Iterator<Item = &Gate> {
        self.gates.iter().filter(|g| !g.holds())
    }

    /// Say how the load ended. `build` takes "ended early" for its
    /// judging (phases never reached are not judged); this keeps
    /// `interrupted` for a stop by the user or a signal only.
    pub fn set_stop_kind(&mut self, kind: Option<StopKind>) {
        self.interrupted = kind == Some(StopKind::Interrupted);
        self.stop_kind = kind;
        if kind == Some(StopKind::Breach) {
            self.mark_abandoned_after_breach();
        }
        // A designed stop (a stress breach) is judged by its gates alone.
        self.passed = !self.interrupted && self.gates.iter().all(Gate::holds);
    }

    /// Attach the generator's health and say plainly when it fell behind,
    /// and whose doing that was (see [`generator_note`]).
    pub fn set_generator(&mut self, g: GeneratorHealth, others_cpu_pct: Option<f64>) {
        self.notes.extend(generator_note(&g, others_cpu_pct));
        self.generator = g;
    }
}

/// What the reader of a merged summary must know: where it came from and
/// whether the shards' clocks make its per-second series trustworthy.
/// `summary::build` adds these for any merged run directory, so `brunt
/// report` on it says the same.
pub fn merge_notes(m: &MergedFrom) -> Vec<String> {
    let mut notes = vec![format!(
        "merged from {} shards; their starts spread over {:.0} ms",
        m.shard_count, m.skew_ms
    )];
    if m.skew_ms > SKEW_WARN_MS {
        let shifted: Vec<String> = m
            .shards
            .iter()
            .filter(|s| s.shift_s > 0)
            .map(|s| format!("shard {} by {} s", s.shard, s.shift_s))
            .collect();
        notes.push(format!(
            "clock skew: shard starts differ by {:.0} ms (over {SKEW_WARN_MS:.0} ms), so each merged second mixes parts of neighbouring seconds and phase edges blur{}; start every shard with the same --start-at on NTP-synchronised clocks",
            m.skew_ms,
            if shifted.is_empty() {
                String::new()
            } else {
                format!(" (windows shifted to line up: {})", shifted.join(", "))
            }
        ));
    }
    let agreed: Vec<Option<f64>> = m.shards.iter().map(|s| s.start_at).collect();
    if agreed.iter().any(|a| a.is_none()) || agreed.windows(2).any(|w| w[0] != w[1]) {
        notes.push(
            "the shards were not all given the same --start-at: their phases did not step together"
                .into(),
        );
    } else if let Some((shard, late_ms)) = m
        .shards
        .iter()
        .filter_map(|s| s.start_at.map(|a| (s.shard, (s.started_at - a) * 1000.0)))
        .filter(|(_, ms)| *ms > SKEW_WARN_MS)
        .max_by(|a, b| a.1.total_cmp(&b.1))
    {
        notes.push(format!(
            "shard {shard} started {late_ms:.0} ms after the agreed --start-at (scheduled too late: give the shards more --start-delay)"
        ));
    }
    notes
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Other processes using this share of the generator host (% of all cores)
/// make a late scheduler the host's doing, not brunt's.
pub const OTHERS_BUSY_PCT: f64 = 50.0;

/// The note on a generator that fell behind; `others_cpu_pct` is the
/// host's CPU used by other processes around the worst second.
fn generator_note(g: &GeneratorHealth, others_cpu_pct: Option<f64>) -> Option<String> {
    if !g.saturated() {
        return None;
    }
    Some(match others_cpu_pct.filter(|o| *o >= OTHERS_BUSY_PCT) {
        Some(o) => format!(
            "the generator host was busy with other processes in {} second(s) (worst at {} s: other processes {o:.0}% of the host's CPU, brunt's busiest load worker {:.0}% of a core, scheduler up to {:.0} ms late): latencies there include that delay, not the service's — run brunt where nothing else competes for the CPU",
            g.late_seconds, g.worst_second, g.max_worker_cpu_pct, g.max_sched_lag_ms
        ),
        None => format!(
            "the generator was saturated in {} second(s) (worst at {} s: a load worker at {:.0}% of a core, scheduler up to {:.0} ms late): latencies there include brunt's own delay — use more workers, a bigger machine or shards",
            g.late_seconds, g.worst_second, g.max_worker_cpu_pct, g.max_sched_lag_ms
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::{generator_note, GeneratorHealth};

    #[test]
    fn a_late_generator_blames_the_busy_host_or_brunt() {
        let mut g = GeneratorHealth::default();
        assert_eq!(generator_note(&g, Some(99.0)), None, "on time: no note");
        g.observe(3, 40_000, 95.0);
        let own = generator_note(&g, Some(10.0)).unwrap_or_default();
        assert!(
            own.contains("brunt's own delay") && own.contains("use more workers"),
            "{own}"
        );
        assert_eq!(
            generator_note(&g, None),
            Some(own),
            "unknown host: brunt's wording"
        );
        let host = generator_note(&g, Some(80.0)).unwrap_or_default();
        assert!(
            host.contains("other processes 80%") && host.contains("not the service's"),
            "{host}"
        );
    }
}
