//! The overload verdict: does the service shed its excess load fast and
//! cleanly, keep admitted requests within budget, and recover afterwards.

use super::rules::*;
use super::verdict::{Check, OverloadVerdict, Status};
use crate::budgets::Budget;
use crate::metrics::{Class, Measured, Stats};
use crate::rundir::read::Second;
use crate::rundir::RunMeta;

/// Tolerance (absolute fraction of offered) of the shed-fraction check.
const SHED_TOLERANCE: f64 = 0.10;

/// The overload checks:
/// 1. shed p99 ≤ `fast_fail`;
/// 2. every shed answer carried `Retry-After`;
/// 3. admitted (ok) p99 within the p99 budget during `overload`;
/// 4. shed fraction consistent with the excess: capacity C = max(ok/s in
///    `baseline`, ok/s in `overload`), expected shed = 1 − C/offered; the
///    measured shed/offered must be within ±10 points. Too little shedding
///    means the excess went to queues, timeouts or drops; too much means
///    admitted throughput collapsed below what the baseline showed;
/// 5. no timeouts, resets or connect errors from `ramp` to the end;
/// 6. recovery: seconds after `overload` ends until the 1-s p99 is within
///    bound and nothing is shed (stable 3 s), within the `recovery` phase.
pub(super) fn overload(
    meta: &RunMeta,
    budgets: &[Budget],
    m: &Measured,
    secs: &[Second],
    fast_fail_ms: f64,
) -> Option<OverloadVerdict> {
    let oi = phase_idx(meta, "overload")?;
    let ov = m.phases.get(oi)?;
    let load = Load::of(meta, m, ov);
    let bound = p99_bound(budgets, &["overload"]);
    let (recovered, recovery_s) = recovery(meta, budgets, m, secs, oi, bound.as_ref());
    let checks = vec![
        shed_fast(ov, &load, fast_fail_ms),
        retry_after(ov),
        admitted_p99(ov, bound.as_ref()),
        shed_fraction(&load),
        no_transport_errors(meta, m),
        recovered,
    ];
    Some(verdict(checks, &load, recovery_s))
}

/// The `overload` phase's offered load against what the service showed it can serve.
struct Load {
    /// Shed answers during `overload`.
    shed: u64,
    offered_rate: f64,
    /// max(ok/s in `baseline`, ok/s in `overload`).
    capacity: f64,
    /// 1 − capacity/offered, at least 0.
    expected: f64,
    /// Shed answers / offered.
    measured: f64,
}

impl Load {
    fn of(meta: &RunMeta, m: &Measured, ov: &Stats) -> Load {
        let base = phase_idx(meta, "baseline").and_then(|i| m.phases.get(i));
        let shed = ov.count(Class::Shed);
        let offered_rate = ov.offered as f64 / ov.duration.as_secs_f64().max(1e-9);
        let capacity = rate(ov, Class::Ok).max(base.map(|b| rate(b, Class::Ok)).unwrap_or(0.0));
        let expected = if offered_rate > 0.0 {
            (1.0 - capacity / offered_rate).max(0.0)
        } else {
            0.0
        };
        let measured = if ov.offered > 0 {
            shed as f64 / ov.offered as f64
        } else {
            0.0
        };
        Load {
            shed,
            offered_rate,
            capacity,
            expected,
            measured,
        }
    }
}

/// Check 1: shed p99 ≤ `fast_fail`; no shedding above capacity fails.
fn shed_fast(ov: &Stats, load: &Load, fast_fail_ms: f64) -> Check {
    const NAME: &str = "shed answers are fast";
    let (shed, offered_rate, capacity) = (load.shed, load.offered_rate, load.capacity);
    if shed > 0 {
        let p = ms_q(&ov.latency(Some(Class::Shed)), 0.99);
        check(
            NAME,
            if p <= fast_fail_ms {
                Status::Pass
            } else {
                Status::Fail
            },
            format!("shed p99 {p:.1}ms over {shed} answers"),
            format!("≤ {fast_fail_ms:.0}ms (fast_fail)"),
        )
    } else if load.expected > 0.05 {
        check(
            NAME,
            Status::Fail,
            format!("no 503/429 at {offered_rate:.0}/s offered, above a capacity of ≈ {capacity:.0}/s: the service does not shed"),
            format!("shed answers with p99 ≤ {fast_fail_ms:.0}ms"),
        )
    } else {
        check(
            NAME,
            Status::NotApplicable,
            "no shed answers: the load stayed within capacity".into(),
            format!("≤ {fast_fail_ms:.0}ms"),
        )
    }
}

/// Check 2: every shed answer carried `Retry-After`.
fn retry_after(ov: &Stats) -> Check {
    const NAME: &str = "Retry-After on shed answers";
    let shed = ov.count(Class::Shed);
    if shed == 0 {
        return check(
            NAME,
            Status::NotApplicable,
            "no shed answers".into(),
            "every shed answer".into(),
        );
    }
    let with = ov.shed_retry_after;
    check(
        NAME,
        if with >= shed {
            Status::Pass
        } else {
            Status::Fail
        },
        format!(
            "{with} of {shed} ({:.1}%)",
            100.0 * with as f64 / shed as f64
        ),
        "every shed answer".into(),
    )
}

/// Check 3: admitted (ok) p99 within the p99 budget during `overload`.
fn admitted_p99(ov: &Stats, bound: Option<&Bound>) -> Check {
    const NAME: &str = "admitted p99 within budget";
    let ok_h = ov.latency(Some(Class::Ok));
    match bound {
        Some(b) if !ok_h.is_empty() => {
            let p = ms_q(&ok_h, 0.99);
            check(
                NAME,
                if p <= b.ms {
                    Status::Pass
                } else {
                    Status::Fail
                },
                format!("ok p99 {p:.1}ms over {} answers", ok_h.len()),
                format!("≤ {:.1}ms ({})", b.ms, b.source),
            )
        }
        Some(b) => check(
            NAME,
            Status::Fail,
            "no request was admitted (no ok answer)".into(),
            format!("≤ {:.1}ms ({})", b.ms, b.source),
        ),
        None => check(
            NAME,
            Status::NotApplicable,
            if ok_h.is_empty() {
                "no ok answers".into()
            } else {
                format!("ok p99 {:.1}ms", ms_q(&ok_h, 0.99))
            },
            "a `p99 < …` budget in the profile".into(),
        ),
    }
}

/// Check 4: the measured shed fraction within ±[`SHED_TOLERANCE`] of the excess.
fn shed_fraction(load: &Load) -> Check {
    let (expected, measured, offered_rate) = (load.expected, load.measured, load.offered_rate);
    let capacity = load.capacity;
    check(
        "shed fraction matches the excess",
        if (measured - expected).abs() <= SHED_TOLERANCE {
            Status::Pass
        } else {
            Status::Fail
        },
        format!(
            "{:.1}% shed of {offered_rate:.0}/s offered",
            measured * 100.0
        ),
        format!(
            "≈ {:.1}% ± {:.0} points (1 − capacity {capacity:.0}/s ÷ offered)",
            expected * 100.0,
            SHED_TOLERANCE * 100.0
        ),
    )
}

/// Check 5: no timeouts, resets or connect errors from `ramp` to the end.
fn no_transport_errors(meta: &RunMeta, m: &Measured) -> Check {
    let mut bad = [0u64; 3];
    let mut dropped = 0;
    for name in ["ramp", "overload", "recovery"] {
        if let Some(s) = phase_idx(meta, name).and_then(|i| m.phases.get(i)) {
            bad[0] += s.count(Class::Timeout);
            bad[1] += s.count(Class::Reset);
            bad[2] += s.count(Class::ConnectError);
            dropped += s.dropped;
        }
    }
    check(
        "no timeouts, resets or refused connections",
        if bad.iter().sum::<u64>() == 0 {
            Status::Pass
        } else {
            Status::Fail
        },
        format!(
            "timeout={} reset={} connect_error={}{}",
            bad[0],
            bad[1],
            bad[2],
            if dropped > 0 {
                format!(" (and {dropped} dropped by the generator's max_in_flight)")
            } else {
                String::new()
            }
        ),
        "none".into(),
    )
}

/// Check 6: recovery within the `recovery` phase, and the seconds it took.
fn recovery(
    meta: &RunMeta,
    budgets: &[Budget],
    m: &Measured,
    secs: &[Second],
    oi: usize,
    bound: Option<&Bound>,
) -> (Check, Option<f64>) {
    const NAME: &str = "recovers after the overload";
    let rb = bound
        .cloned()
        .or_else(|| p99_bound(budgets, &["recovery"]))
        .or_else(|| fallback_bound(meta, m, "baseline"));
    let (_, ov_end) = window(meta, oi);
    let rec = phase_idx(meta, "recovery").map(|ri| window(meta, ri));
    match (&rb, rec) {
        (Some(b), Some((_, rend))) => {
            let at = first_stable_good(secs, ov_end, rend, b.ms, true);
            let recovery_s = at.map(|t| (t as f64 - ov_end).max(0.0));
            (recovered(recovery_s, b, rend - ov_end), recovery_s)
        }
        (None, Some(_)) => (
            check(
                NAME,
                Status::NotApplicable,
                "no p99 bound (no budget, no baseline answers)".into(),
                "-".into(),
            ),
            None,
        ),
        (_, None) => (
            check(
                NAME,
                Status::NotApplicable,
                "no recovery phase".into(),
                "-".into(),
            ),
            None,
        ),
    }
}

/// The recovery check once there is a bound and a recovery phase `span` seconds long.
fn recovered(recovery_s: Option<f64>, b: &Bound, span: f64) -> Check {
    const NAME: &str = "recovers after the overload";
    match recovery_s {
        Some(r) => check(
            NAME,
            Status::Pass,
            format!("p99 within bound and no shedding {r:.0}s after the overload ended"),
            format!(
                "within the recovery phase ({:.0}s); p99 ≤ {:.1}ms ({})",
                span, b.ms, b.source
            ),
        ),
        None => check(
            NAME,
            Status::Fail,
            "not recovered by the end of the recovery phase".into(),
            format!("within {:.0}s; p99 ≤ {:.1}ms ({})", span, b.ms, b.source),
        ),
    }
}

/// The verdict: PASS when no check failed, with its headline.
fn verdict(checks: Vec<Check>, load: &Load, recovery_s: Option<f64>) -> OverloadVerdict {
    let pass = checks.iter().all(|c| c.status != Status::Fail);
    let text = if pass {
        format!(
            "shedding works: {:.0}% shed at {:.0}/s offered (capacity ≈ {:.0}/s){}",
            load.measured * 100.0,
            load.offered_rate,
            load.capacity,
            recovery_s
                .map(|r| format!(", recovered {r:.0}s after the overload"))
                .unwrap_or_default()
        )
    } else {
        let failed: Vec<&str> = checks
            .iter()
            .filter(|c| c.status == Status::Fail)
            .map(|c| c.name.as_str())
            .collect();
        format!("failed: {}", failed.join("; "))
    };
    OverloadVerdict {
        pass,
        checks,
        offered_rate: load.offered_rate,
        capacity_estimate: load.capacity,
        expected_shed_fraction: load.expected,
        shed_fraction: load.measured,
        recovery_s,
        text,
    }
}
