//! The stress verdict: the knee (the highest step that met every budget),
//! the first breaking step, the per-step table with the server side seen in
//! each step, and the cause at the breach.

use std::collections::BTreeMap;

use super::cause::classify;
use super::knee::{step_verdicts, StressResult};
use super::rules::{ms_q, window};
use super::verdict::{Cause, StepRow, StressVerdict};
use super::wait::ConnectionWait;
use super::{StopKind, Summary};
use crate::budgets::Budget;
use crate::evidence::ServerEvidence;
use crate::metrics::{Class, Measured, Stats};
use crate::rundir::RunMeta;
use crate::vocab::series as names;
use crate::vocab::PhaseInfo;

pub(super) fn stress_verdict(
    meta: &RunMeta,
    budgets: &[Budget],
    m: &Measured,
    st: &StressResult,
    server: Option<&ServerEvidence>,
) -> StressVerdict {
    let steps: Vec<StepRow> = meta
        .phases
        .iter()
        .zip(&m.phases)
        .enumerate()
        .filter(|(_, (p, _))| !p.is_warmup())
        .take_while(|(_, (_, s))| s.completed() + s.dropped > 0)
        .map(|(i, (p, s))| step_row(meta, budgets, i, p, s, server))
        .collect();
    let breach = st
        .first_breach
        .as_ref()
        .and_then(|b| steps.iter().position(|r| &r.name == b));
    let (cause, why) = match breach {
        None => (Cause::NoBreach, String::new()),
        Some(bi) => {
            let prev = bi.checked_sub(1).map(|k| &steps[k]);
            classify(
                &steps[bi],
                prev,
                st,
                server.is_some_and(|s| s.has_target_data()),
            )
        }
    };
    let text = headline(meta, st, &why);
    StressVerdict {
        steps,
        capacity: st.knee_level,
        capacity_step: st.knee.clone(),
        first_breach: st.first_breach.clone(),
        cause,
        text,
    }
}

/// One stress step as the knee table shows it, with the server side seen in it.
fn step_row(
    meta: &RunMeta,
    budgets: &[Budget],
    i: usize,
    p: &PhaseInfo,
    s: &Stats,
    server: Option<&ServerEvidence>,
) -> StepRow {
    let (from, to) = window(meta, i);
    let secs = s.duration.as_secs_f64().max(1e-9);
    let lat = s.latency(None);
    let mean = |k: &str| server.and_then(|sv| sv.mean_in(k, from, to));
    StepRow {
        name: p.name.clone(),
        label: p.label.clone(),
        level: p.level,
        offered_rate: s.offered as f64 / secs,
        achieved_rate: s.count(Class::Ok) as f64 / secs,
        p50_ms: ms_q(&lat, 0.50),
        p95_ms: ms_q(&lat, 0.95),
        p99_ms: ms_q(&lat, 0.99),
        max_ms: if lat.is_empty() {
            0.0
        } else {
            lat.max() as f64 / 1e6
        },
        errors: s.errors() + s.dropped,
        error_rate: s.error_rate(),
        within_budget: step_verdicts(budgets, s).iter().all(|v| v.pass),
        target_cpu_pct: mean(names::TARGET_HOST_CPU.name),
        target_process_cpu_pct: mean(names::TARGET_PROCESS_CPU_OF_HOST.name),
        generator_cpu_pct: mean(names::GENERATOR_WORKER_BUSY.name),
        generator_lag_ms: mean(names::GENERATOR_SCHED_LAG.name),
        threads: server.map(|sv| threads(sv, from, to)).unwrap_or_default(),
        abandoned: false,
        connection_wait: ConnectionWait::of(
            s,
            meta.model,
            meta.connections,
            !meta.scenarios.is_empty(),
        ),
        top_finding: server.and_then(|sv| sv.top_finding_beside_db(&p.name, from, to).cloned()),
        db_finding: server.and_then(|sv| sv.top_db_finding(&p.name, from, to).cloned()),
    }
}

/// Mean `jvm.threads.<state>` over `[from, to)`, by state.
fn threads(sv: &ServerEvidence, from: f64, to: f64) -> BTreeMap<String, f64> {
    let mut threads = BTreeMap::new();
    for k in sv.series.keys() {
        if let Some(state) = k.strip_prefix(names::JVM_THREADS_PREFIX) {
            if let Some(v) = sv.mean_in(k, from, to) {
                threads.insert(state.to_string(), v);
            }
        }
    }
    threads
}

/// The verdict's text: the capacity, the step that broke and `why`.
fn headline(meta: &RunMeta, st: &StressResult, why: &str) -> String {
    let broke: Vec<String> = st
        .breached
        .iter()
        .map(|v| format!("{} (measured {})", v.budget, v.shown))
        .collect();
    let unit = meta.model.unit();
    let lvl = |l: Option<f64>| {
        l.map(|v| format!("{v}{unit}"))
            .unwrap_or_else(|| "?".into())
    };
    match (&st.knee, &st.first_breach) {
        (Some(k), Some(b)) => format!(
            "capacity {} ({k}, the last step within budget); {b} ({}) broke {}{why}",
            lvl(st.knee_level),
            lvl(st.first_breach_level),
            broke.join(", ")
        ),
        (None, Some(b)) => format!(
            "capacity below the first step: {b} ({}) already broke {}{why}",
            lvl(st.first_breach_level),
            broke.join(", ")
        ),
        (Some(k), None) => format!(
            "no step broke the budgets: capacity at least {} ({k}, the last step run)",
            lvl(st.knee_level)
        ),
        (None, None) => "no step completed".into(),
    }
}

/// The shard the others stopped with, from a stop reason that says so
/// (`stopped with shard 3: …`, also inside a merge's `shard 1: …; …`).
fn stopped_with(reason: &str) -> Option<u32> {
    let rest = reason.split("stopped with shard ").nth(1)?;
    rest.split(':').next()?.trim().parse().ok()
}

impl Summary {
    /// A stress run stopped at its breach (`set_stop_kind`): the step begun
    /// after the breaching one ran only until the stop and was given up by
    /// design — marked abandoned (a phase row and a step row, never a FAIL
    /// of its own), and the stop is told with the judged breach figures, so
    /// the terminal, `summary.json` and the report quote one figure.
    pub(super) fn mark_abandoned_after_breach(&mut self) {
        debug_assert_eq!(self.stop_kind, Some(StopKind::Breach));
        let Some(st) = &self.stress else { return };
        let Some(b) = st.first_breach.clone() else {
            return;
        };
        let Some(bi) = self.phases.iter().position(|p| p.name == b) else {
            return;
        };
        let broke: Vec<String> = st
            .breached
            .iter()
            .map(|v| format!("{} (measured {})", v.budget, v.shown))
            .collect();
        // Shards that stopped together (`--control`): who stopped them stays said.
        let with = self
            .stopped_reason
            .as_deref()
            .and_then(stopped_with)
            .map(|n| format!(" (shard {n}'s breach; the other shards stopped with it)"))
            .unwrap_or_default();
        self.stopped_reason = Some(format!(
            "{b} ({}) broke {}; stopped at the first breach{with}",
            self.phases[bi].label,
            broke.join(", ")
        ));
        for p in self.phases.iter_mut().skip(bi + 1) {
            p.abandoned = p.offered + p.requests + p.dropped > 0;
        }
        if let Some(sv) = self.verdicts.as_mut().and_then(|v| v.stress.as_mut()) {
            for r in sv.steps.iter_mut().skip_while(|r| r.name != b).skip(1) {
                r.abandoned = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_shard_the_others_stopped_with_is_read_from_the_reason() {
        let merged = "shard 1: stopped with shard 3: step-1 (80/s) broke p99; shard 3: step-1 (80/s) broke p99";
        assert_eq!(super::stopped_with(merged), Some(3));
        assert_eq!(
            super::stopped_with("step-2 (150/s) broke p99 < 100ms"),
            None
        );
    }
}
