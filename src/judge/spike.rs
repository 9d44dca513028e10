//! The spike verdict: how long until the 1-s p99 is back within bound after
//! the spike starts and after it ends, and the errors during the spike.

use super::rules::*;
use super::verdict::SpikeVerdict;
use crate::budgets::Budget;
use crate::metrics::series::Second;
use crate::metrics::Measured;
use crate::rundir::RunMeta;

pub(super) fn spike(
    meta: &RunMeta,
    budgets: &[Budget],
    m: &Measured,
    secs: &[Second],
) -> Option<SpikeVerdict> {
    let si = meta.phase_index("spike")?;
    let sp = m.phases.get(si)?;
    let b = p99_bound(budgets, &["recovery", "baseline"])
        .or_else(|| fallback_bound(meta, m, "baseline"))?;
    let (s0, s1) = window(meta, si);
    let end = meta
        .phases
        .last()
        .map(|p| (p.start + p.duration).as_secs_f64())
        .unwrap_or(s1)
        .min(m.run.duration.as_secs_f64().max(s1));
    let in_spike: Vec<&Second> = secs
        .iter()
        .filter(|s| s.t as f64 >= s0 && (s.t as f64) < s1)
        .collect();
    let first_bad = in_spike.iter().find(|s| !good(s, b.ms, false)).map(|s| s.t);
    let back_after_start_s = match first_bad {
        None => Some(0.0),
        Some(t) => first_stable_good(secs, t as f64, s1, b.ms, false).map(|g| g as f64 - s0),
    };
    let back_after_end_s =
        first_stable_good(secs, s1, end.max(s1 + 1.0), b.ms, false).map(|g| g as f64 - s1);
    let errors = sp.errors() + sp.dropped;
    let shed = sp.count(crate::metrics::Class::Shed);
    // Refused with 503/429 past capacity: no error, but the spike's shape.
    let shed_text = if shed > 0 {
        format!(
            "; {shed} shed (503/429: {:.1}% of the spike's answers)",
            shed as f64 / sp.completed().max(1) as f64 * 100.0
        )
    } else {
        String::new()
    };
    let text = format!(
        "{}; after the spike ended p99 was back within {:.1}ms {}; {} error(s) during the spike ({:.2}%){shed_text}",
        match (first_bad, back_after_start_s) {
            (None, _) => "p99 stayed within bound during the spike".to_string(),
            (Some(_), Some(t)) => format!("p99 went over the bound and was back {t:.0}s after the spike started"),
            (Some(_), None) => "p99 went over the bound and stayed over until the spike ended".to_string(),
        },
        b.ms,
        back_after_end_s
            .map(|t| format!("after {t:.0}s"))
            .unwrap_or_else(|| "— never, within the data".into()),
        errors,
        sp.error_rate() * 100.0
    );
    Some(SpikeVerdict {
        bound_ms: b.ms,
        bound_source: b.source,
        left_budget: first_bad.is_some(),
        back_after_start_s,
        back_after_end_s,
        spike_errors: errors,
        spike_error_rate: sp.error_rate(),
        text,
    })
}
