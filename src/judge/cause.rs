//! The cause at a stress run's first breaking step: saturation, contention,
//! a saturated generator, or unknown when the server side was not watched.

use super::knee::StressResult;
use super::rules::opt_pct;
use super::verdict::{Cause, StepRow};
use crate::metrics::GeneratorHealth;

/// Target CPU at or above this is saturation.
const CPU_SATURATED: f64 = 80.0;
/// Target CPU below this with a rising tail is contention.
const CPU_IDLE: f64 = 60.0;
/// Generator CPU at or above this (or lag above [`GEN_LAG_MS`]) makes latencies untrustworthy.
const GEN_CPU_SATURATED: f64 = GeneratorHealth::BUSY_PCT;
const GEN_LAG_MS: f64 = GeneratorHealth::LATE_MS;

pub(super) fn classify(
    step: &StepRow,
    prev: Option<&StepRow>,
    st: &StressResult,
    have_server: bool,
) -> (Cause, String) {
    let finding = step
        .top_finding
        .as_ref()
        .map(|f| format!("; top finding ({} {}): {}", f.severity, f.kind, f.summary))
        .unwrap_or_default();
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
    if !have_server {
        return (
            Cause::Unknown,
            ". Cause unknown: no server-side data (configure collectors to see the target's CPU, threads and locks)".into(),
        );
    }
    let gen_busy = step
        .generator_cpu_pct
        .is_some_and(|c| c >= GEN_CPU_SATURATED)
        || step.generator_lag_ms.is_some_and(|l| l >= GEN_LAG_MS);
    if gen_busy {
        return (
            Cause::GeneratorSaturated,
            format!(
                ". The generator was saturated (CPU {}, lag {}): these latencies are not trustworthy — add generator capacity or shards",
                opt_pct(step.generator_cpu_pct),
                step.generator_lag_ms
                    .map(|l| format!("{l:.1}ms"))
                    .unwrap_or_else(|| "-".into())
            ),
        );
    }
    // Latency budgets show their value in ms.
    let latency_broke = st.breached.iter().any(|v| v.shown.ends_with("ms"));
    let rising = latency_broke || prev.is_some_and(|p| step.p99_ms > 1.5 * p.p99_ms.max(0.001));
    let lock_like = step.top_finding.as_ref().is_some_and(|f| {
        matches!(
            f.kind.as_str(),
            "lock" | "pool" | "pinning" | "deadlock" | "contention"
        )
    });
    // A host busy with other processes (a noisy neighbour, or the generator
    // on the same box) while the service itself barely uses CPU and its
    // threads wait on a lock: the waiting is the cause, not the CPU.
    if let (Some(c), Some(p)) = (step.target_cpu_pct, step.target_process_cpu_pct) {
        if c >= CPU_IDLE && p < CPU_IDLE && lock_like && rising {
            return (
                Cause::Contention,
                format!(": target host CPU {c:.0}%, but the target process used only {p:.0}% of it (the rest is other processes) — not CPU bound while the tail rose: contention (waiting on locks, pools or I/O){threads}{finding}"),
            );
        }
    }
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
