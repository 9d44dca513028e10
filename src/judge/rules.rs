//! The rules every shape shares: which p99 bounds a 1-s window, when a
//! window counts as good and a recovery as stable, and small helpers on
//! phases and histograms.

use crate::budgets::{Budget, Metric, Op};
use crate::metrics::series::Second;
use crate::metrics::{pct_us, Class, Measured, Stats};
use crate::rundir::RunMeta;

use super::verdict::{Check, CheckStatus};

pub(super) fn window(meta: &RunMeta, i: usize) -> (f64, f64) {
    let p = &meta.phases[i];
    let s = p.start.as_secs_f64();
    (s, s + p.duration.as_secs_f64())
}

pub(super) fn ms_q(h: &hdrhistogram::Histogram<u64>, q: f64) -> f64 {
    pct_us(h, q) as f64 / 1000.0
}

/// The p99 bound for 1-s windows (see the module doc).
#[derive(Debug, Clone, PartialEq)]
pub struct Bound {
    pub ms: f64,
    pub source: String,
}

pub fn p99_bound(budgets: &[Budget], phases: &[&str]) -> Option<Bound> {
    let fits = |b: &&Budget| {
        matches!(b.metric, Metric::Quantile(q) if (q - 0.99).abs() < 1e-9)
            && matches!(b.op, Op::Lt | Op::Le)
            && matches!(b.class, None | Some(Class::Ok))
            && b.on_all_requests()
    };
    let scoped = budgets
        .iter()
        .filter(fits)
        .find(|b| b.phase.as_deref().is_some_and(|p| phases.contains(&p)));
    let any = budgets.iter().filter(fits).find(|b| b.phase.is_none());
    scoped.or(any).map(|b| Bound {
        ms: b.limit,
        source: format!("budget `{}`", b.text),
    })
}

pub(super) fn fallback_bound(meta: &RunMeta, m: &Measured, base: &str) -> Option<Bound> {
    let i = meta.phase_index(base)?;
    let h = m.phases.get(i)?.latency(None);
    if h.is_empty() {
        return None;
    }
    let p = ms_q(&h, 0.99);
    Some(Bound {
        ms: (2.0 * p).max(p + 5.0),
        source: format!("no p99 budget: 2× the {base} p99 ({p:.1}ms)"),
    })
}

/// Seconds a window must stay good to count as recovered.
pub(super) const STABLE_S: usize = 3;

pub(super) fn good(s: &Second, bound: f64, no_shed: bool) -> bool {
    let answered = s.completed > 0 || s.offered == 0;
    answered && s.p99_ms <= bound && (!no_shed || s.shed == 0)
}

/// First second in `[from, to)` from which the bound holds for
/// [`STABLE_S`] seconds in a row (or until the data ends).
pub(super) fn first_stable_good(
    secs: &[Second],
    from: f64,
    to: f64,
    bound: f64,
    no_shed: bool,
) -> Option<u64> {
    let w: Vec<&Second> = secs
        .iter()
        .filter(|s| s.t as f64 >= from && (s.t as f64) < to)
        .collect();
    (0..w.len()).find_map(|i| {
        let end = (i + STABLE_S).min(w.len());
        w[i..end]
            .iter()
            .all(|s| good(s, bound, no_shed))
            .then_some(w[i].t)
    })
}

pub(super) fn opt_pct(v: Option<f64>) -> String {
    v.map(|c| format!("{c:.0}%")).unwrap_or_else(|| "-".into())
}

pub(super) fn check(name: &str, status: CheckStatus, measured: String, expected: String) -> Check {
    Check {
        name: name.into(),
        status,
        measured,
        expected,
    }
}

pub(super) fn rate(s: &Stats, c: Class) -> f64 {
    s.count(c) as f64 / s.duration.as_secs_f64().max(1e-9)
}
