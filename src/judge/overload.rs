//! The overload verdict: does the service shed its excess load fast and
//! cleanly, keep admitted requests within budget, and recover afterwards.

use super::rules::*;
use super::verdict::{OverloadVerdict, Status};
use crate::budgets::Budget;
use crate::metrics::{Class, Measured};
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
    let mut checks = Vec::new();
    let shed_h = ov.latency(Some(Class::Shed));
    checks.push(if shed > 0 {
        let p = ms_q(&shed_h, 0.99);
        check(
            "shed answers are fast",
            if p <= fast_fail_ms { Status::Pass } else { Status::Fail },
            format!("shed p99 {p:.1}ms over {shed} answers"),
            format!("≤ {fast_fail_ms:.0}ms (fast_fail)"),
        )
    } else if expected > 0.05 {
        check(
            "shed answers are fast",
            Status::Fail,
            format!("no 503/429 at {offered_rate:.0}/s offered, above a capacity of ≈ {capacity:.0}/s: the service does not shed"),
            format!("shed answers with p99 ≤ {fast_fail_ms:.0}ms"),
        )
    } else {
        check(
            "shed answers are fast",
            Status::NotApplicable,
            "no shed answers: the load stayed within capacity".into(),
            format!("≤ {fast_fail_ms:.0}ms"),
        )
    });
    checks.push(if shed > 0 {
        let with = ov.shed_retry_after;
        check(
            "Retry-After on shed answers",
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
    } else {
        check(
            "Retry-After on shed answers",
            Status::NotApplicable,
            "no shed answers".into(),
            "every shed answer".into(),
        )
    });
    let bound = p99_bound(budgets, &["overload"]);
    let ok_h = ov.latency(Some(Class::Ok));
    checks.push(match &bound {
        Some(b) if !ok_h.is_empty() => {
            let p = ms_q(&ok_h, 0.99);
            check(
                "admitted p99 within budget",
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
            "admitted p99 within budget",
            Status::Fail,
            "no request was admitted (no ok answer)".into(),
            format!("≤ {:.1}ms ({})", b.ms, b.source),
        ),
        None => check(
            "admitted p99 within budget",
            Status::NotApplicable,
            if ok_h.is_empty() {
                "no ok answers".into()
            } else {
                format!("ok p99 {:.1}ms", ms_q(&ok_h, 0.99))
            },
            "a `p99 < …` budget in the profile".into(),
        ),
    });
    checks.push(check(
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
    ));
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
    checks.push(check(
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
    ));
    let rb = bound
        .clone()
        .or_else(|| p99_bound(budgets, &["recovery"]))
        .or_else(|| fallback_bound(meta, m, "baseline"));
    let (_, ov_end) = window(meta, oi);
    let rec = phase_idx(meta, "recovery").map(|ri| window(meta, ri));
    let mut recovery_s = None;
    checks.push(match (&rb, rec) {
        (Some(b), Some((_, rend))) => {
            let at = first_stable_good(secs, ov_end, rend, b.ms, true);
            recovery_s = at.map(|t| (t as f64 - ov_end).max(0.0));
            match recovery_s {
                Some(r) => check(
                    "recovers after the overload",
                    Status::Pass,
                    format!("p99 within bound and no shedding {r:.0}s after the overload ended"),
                    format!(
                        "within the recovery phase ({:.0}s); p99 ≤ {:.1}ms ({})",
                        rend - ov_end,
                        b.ms,
                        b.source
                    ),
                ),
                None => check(
                    "recovers after the overload",
                    Status::Fail,
                    "not recovered by the end of the recovery phase".into(),
                    format!(
                        "within {:.0}s; p99 ≤ {:.1}ms ({})",
                        rend - ov_end,
                        b.ms,
                        b.source
                    ),
                ),
            }
        }
        (None, Some(_)) => check(
            "recovers after the overload",
            Status::NotApplicable,
            "no p99 bound (no budget, no baseline answers)".into(),
            "-".into(),
        ),
        (_, None) => check(
            "recovers after the overload",
            Status::NotApplicable,
            "no recovery phase".into(),
            "-".into(),
        ),
    });
    let pass = checks.iter().all(|c| c.status != Status::Fail);
    let failed: Vec<&str> = checks
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(|c| c.name.as_str())
        .collect();
    let text = if pass {
        format!(
            "shedding works: {:.0}% shed at {offered_rate:.0}/s offered (capacity ≈ {capacity:.0}/s){}",
            measured * 100.0,
            recovery_s
                .map(|r| format!(", recovered {r:.0}s after the overload"))
                .unwrap_or_default()
        )
    } else {
        format!("failed: {}", failed.join("; "))
    };
    Some(OverloadVerdict {
        pass,
        checks,
        offered_rate,
        capacity_estimate: capacity,
        expected_shed_fraction: expected,
        shed_fraction: measured,
        recovery_s,
        text,
    })
}
