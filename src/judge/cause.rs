//! The cause at a stress run's first breaking step: a saturated generator
//! or brunt's own connection limit (brunt's own figures, judged first),
//! else from the server side —
//! saturation, contention, inconclusive — or unknown when nothing from the
//! target was seen: no server-side cause is ever claimed without its evidence.

use super::knee::StressResult;
use super::rules::opt_pct;
use super::verdict::{Cause, StepRow};
use crate::evidence::FindingRef;
use crate::metrics::GeneratorHealth;
use crate::vocab::findings::FindingKind;

/// Target CPU at or above this is saturation.
const CPU_SATURATED: f64 = 80.0;
/// Target CPU below this with a rising tail is contention.
const CPU_IDLE: f64 = 60.0;

pub(super) fn classify(
    step: &StepRow,
    prev: Option<&StepRow>,
    st: &StressResult,
    have_server: bool,
) -> (Cause, String) {
    // brunt's own figures: they need no server side, and a saturated
    // generator discredits the latencies whatever the server did.
    if let Some(c) = generator_saturated(step) {
        return c;
    }
    // brunt's own queue: the service is not to blame for it.
    if let Some(w) = step.connection_wait.as_ref().filter(|w| w.dominates) {
        return (
            Cause::ConnectionLimit,
            format!(". Not the service: {}", w.text),
        );
    }
    // No CPU, thread or lock figure from the target: claim nothing about it.
    if !have_server {
        return (
            Cause::Unknown,
            ". Cause unknown: no server-side data (no collectors configured, or they never reached the target — see `server_side`): the target's CPU, threads and locks were not seen".into(),
        );
    }
    let latency_broke = st.breached.iter().any(|v| v.latency);
    let rising = latency_broke || prev.is_some_and(|p| step.p99_ms > 1.5 * p.p99_ms.max(0.001));
    let lock_like = step
        .top_finding
        .as_ref()
        .is_some_and(|f| f.kind.is_lock_like())
        || step.db_finding.is_some();
    let seen = Seen::of(step);
    busy_host_idle_service(step, lock_like && rising, &seen)
        .unwrap_or_else(|| by_target_cpu(step, rising, lock_like, &seen))
}

/// What the server side showed in the step, as text to append: the threads
/// by state and the top finding (each empty when absent).
struct Seen {
    threads: String,
    finding: String,
}

/// The top finding and the database behind it, in one chain: a pool
/// waiting ← the lock its connections wait on (`; top finding (…): …`, empty
/// when neither was seen). Only what the database showed is said.
pub(super) fn finding_chain(top: Option<&FindingRef>, db: Option<&FindingRef>) -> String {
    let mut finding = top
        .map(|f| format!("; top finding ({} {}): {}", f.severity, f.kind, f.summary))
        .unwrap_or_default();
    match (top, db) {
        (Some(top), Some(db)) if top == db => {}
        (Some(top), Some(db)) if top.kind == FindingKind::Pool => {
            finding.push_str(&format!(" ← database: {}", db.summary))
        }
        (_, Some(db)) => finding.push_str(&format!(
            "; database ({} {}): {}",
            db.severity, db.kind, db.summary
        )),
        _ => {}
    }
    finding
}

impl Seen {
    fn of(step: &StepRow) -> Seen {
        let finding = finding_chain(step.top_finding.as_ref(), step.db_finding.as_ref());
        let threads = if step.threads.is_empty() {
            String::new()
        } else {
            let parts: Vec<String> = step
                .threads
                .iter()
                .map(|(k, v)| format!("{v:.0} {k}"))
                .collect();
            format!("; threads: {}", parts.join(", "))
        };
        Seen { threads, finding }
    }
}

/// A saturated generator makes the latencies untrustworthy.
fn generator_saturated(step: &StepRow) -> Option<(Cause, String)> {
    let busy = GeneratorHealth::saturated_at(
        step.generator_lag_ms.unwrap_or(0.0),
        step.generator_cpu_pct.unwrap_or(0.0),
    );
    busy.then(|| {
        (
            Cause::GeneratorSaturated,
            format!(
                ". The generator was saturated (CPU {}, lag {}): these latencies are not trustworthy — add generator capacity or shards",
                opt_pct(step.generator_cpu_pct),
                step.generator_lag_ms
                    .map(|l| format!("{l:.1}ms"))
                    .unwrap_or_else(|| "-".into())
            ),
        )
    })
}

/// A host busy with other processes (a noisy neighbour, or the generator
/// on the same box) while the service itself barely uses CPU and its
/// threads wait on a lock: the waiting is the cause, not the CPU.
fn busy_host_idle_service(step: &StepRow, waiting: bool, seen: &Seen) -> Option<(Cause, String)> {
    let (c, p) = (step.target_cpu_pct?, step.target_process_cpu_pct?);
    let Seen { threads, finding } = seen;
    (c >= CPU_IDLE && p < CPU_IDLE && waiting).then(|| {
        (
            Cause::Contention,
            format!(": target host CPU {c:.0}%, but the target process used only {p:.0}% of it (the rest is other processes) — not CPU bound while the tail rose: contention (waiting on locks, pools or I/O){threads}{finding}"),
        )
    })
}

/// The target's CPU decides: saturated, idle while the tail rose, or neither.
fn by_target_cpu(step: &StepRow, rising: bool, lock_like: bool, seen: &Seen) -> (Cause, String) {
    let Seen { threads, finding } = seen;
    match step.target_cpu_pct {
        Some(c) if c >= CPU_SATURATED => (
            Cause::Saturation,
            format!(": target CPU {c:.0}% — saturation (the service ran out of CPU){threads}{finding}"),
        ),
        Some(c) if c < CPU_IDLE && rising => (
            Cause::Contention,
            format!(": target CPU {c:.0}% — not CPU bound while the tail rose: contention (waiting on locks, pools or I/O){threads}{finding}"),
        ),
        Some(c) => (
            Cause::Inconclusive,
            format!(": target CPU {c:.0}% — neither idle nor saturated; inconclusive{threads}{finding}"),
        ),
        None if lock_like && rising => (
            Cause::Contention,
            format!(": no target CPU samples, but waiting was seen: contention{threads}{finding}"),
        ),
        None => (
            Cause::Inconclusive,
            format!(": no target CPU samples in this step; inconclusive{threads}{finding}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(cpu: Option<f64>, gen_cpu: f64) -> StepRow {
        StepRow {
            name: "step-2".into(),
            label: "200/s".into(),
            level: Some(200.0),
            offered_rate: 200.0,
            achieved_rate: 150.0,
            p50_ms: 5.0,
            p95_ms: 300.0,
            p99_ms: 900.0,
            max_ms: 1000.0,
            errors: 0,
            error_rate: 0.0,
            within_budget: false,
            target_cpu_pct: cpu,
            target_process_cpu_pct: None,
            generator_cpu_pct: Some(gen_cpu),
            generator_lag_ms: Some(0.5),
            threads: Default::default(),
            top_finding: None,
            abandoned: false,
            connection_wait: None,
            db_finding: None,
        }
    }

    fn breach() -> StressResult {
        StressResult {
            knee: Some("step-1".into()),
            knee_level: Some(100.0),
            first_breach: Some("step-2".into()),
            first_breach_level: Some(200.0),
            breached: vec![],
            expect_capacity: None,
        }
    }

    #[test]
    fn no_server_side_claims_no_server_cause() {
        let prev = step(None, 10.0);
        let (c, why) = classify(&step(None, 10.0), Some(&prev), &breach(), false);
        assert_eq!(c, Cause::Unknown, "{why}");
        assert!(why.contains("no server-side data"), "{why}");
        for claim in ["saturation", "contention", "target CPU "] {
            assert!(
                !why.contains(claim),
                "claims `{claim}` without evidence: {why}"
            );
        }
    }

    #[test]
    fn brunts_own_connection_limit_is_never_the_services() {
        let wait = crate::judge::wait::ConnectionWait {
            connections: Some(8),
            latency_p99_ms: 900.0,
            wait_p99_ms: 890.0,
            service_p99_ms: 0.5,
            service_max_ms: 2.0,
            share: 0.98,
            dominates: true,
            text: "p99 900ms is brunt's own connection limit".into(),
        };
        let mut hot = step(Some(95.0), 10.0);
        hot.connection_wait = Some(wait.clone());
        // Even with a hot target CPU: the tail was brunt's queue.
        let (c, why) = classify(&hot, None, &breach(), true);
        assert_eq!(c, Cause::ConnectionLimit, "{why}");
        assert!(
            why.contains("Not the service") && why.contains("own connection limit"),
            "{why}"
        );
        // A wait that does not make the tail changes nothing.
        hot.connection_wait = Some(crate::judge::wait::ConnectionWait {
            dominates: false,
            ..wait
        });
        assert_eq!(classify(&hot, None, &breach(), true).0, Cause::Saturation);
    }

    #[test]
    fn a_pool_wait_is_chained_to_the_database_lock_behind_it() {
        let f = |kind: &str, summary: &str| crate::evidence::FindingRef {
            at_s: 3.0,
            phase: Some("step-2".into()),
            severity: "critical".into(),
            kind: kind.into(),
            summary: summary.into(),
            evidence: None,
        };
        let prev = StepRow {
            p99_ms: 50.0,
            ..step(None, 10.0)
        };
        let mut s = step(None, 10.0);
        s.top_finding = Some(f("pool", "9 of 10 threads waiting in HikariPool-1"));
        s.db_finding = Some(f("lock", "9 backends waiting on a row lock of `orders`"));
        let (c, why) = classify(&s, Some(&prev), &breach(), true);
        assert_eq!(c, Cause::Contention, "{why}");
        assert!(
            why.contains("HikariPool-1 ← database: 9 backends waiting on a row lock of `orders`"),
            "{why}"
        );
        // The database alone still names the lock.
        s.top_finding = s.db_finding.clone();
        let (c, why) = classify(&s, Some(&prev), &breach(), true);
        assert_eq!(c, Cause::Contention, "{why}");
        assert_eq!(why.matches("row lock of `orders`").count(), 1, "{why}");
    }

    #[test]
    fn a_saturated_generator_is_said_without_server_data() {
        let (c, why) = classify(&step(None, 99.0), None, &breach(), false);
        assert_eq!(c, Cause::GeneratorSaturated, "{why}");
    }
}
