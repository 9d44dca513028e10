//! The overload verdict: does the service shed its excess load fast and
//! cleanly, keep admitted requests within budget, and recover afterwards.

use super::rules::*;
use super::verdict::{Check, CheckStatus, LatencySplit, OverloadVerdict};
use super::wait::ConnectionWait;
use crate::budgets::Budget;
use crate::evidence::ServerEvidence;
use crate::metrics::series::Second;
use crate::metrics::{Class, Measured, Stats};
use crate::rundir::RunMeta;

/// Tolerance (absolute fraction of offered) of the shed-fraction check.
const SHED_TOLERANCE: f64 = 0.10;

/// The `overload` phase's ok/s must stay at least this share of the capacity
/// seen outside it ("goodput held"): below it, admitted throughput collapsed.
pub const GOODPUT_FLOOR: f64 = 0.5;

/// The ramp's capacity is its best ok/s sustained over this many seconds.
const SUSTAINED_S: usize = 3;

/// The overload checks:
/// 1. shed p99 ≤ `fast_fail`;
/// 2. every shed answer carried `Retry-After`;
/// 3. admitted (ok) p99 within the p99 budget during `overload`;
/// 4. goodput held: one capacity C for every check and the headline —
///    `shape.overload.expect_capacity` when the profile gives one, else the
///    capacity seen *outside* the overload phase (the best ok/s sustained
///    for 3 s in `ramp`, from the per-second series, or the `baseline`'s
///    ok/s), raised to the overload's own ok/s when that is higher (it
///    served that much) — and the `overload` phase's ok/s must be at least
///    [`GOODPUT_FLOOR`] (50 %) of it. A service whose admitted throughput
///    collapses under overload fails here, however fast and well-labelled
///    its 503s;
/// 5. shed fraction consistent with the excess: expected shed = 1 − C/offered;
///    the measured shed/offered must be within ±10 points. Too little
///    shedding means the excess went to queues, timeouts or drops; too much
///    means admitted throughput fell below capacity;
/// 6. no timeouts, resets or connect errors from `ramp` to the end, and no
///    request left without an answer: `unfinished` (given up at the end)
///    and `dropped` (the generator's `max_in_flight` queue was full) count
///    against it — a queue that never answered is not clean shedding;
/// 7. recovery: seconds after `overload` ends until the 1-s p99 is within
///    bound and nothing is shed (stable 3 s), within the `recovery` phase.
pub(super) fn overload(
    meta: &RunMeta,
    budgets: &[Budget],
    m: &Measured,
    secs: &[Second],
    fast_fail_ms: f64,
    expect_capacity: Option<f64>,
    server: Option<&ServerEvidence>,
) -> Option<OverloadVerdict> {
    let oi = meta.phase_index("overload")?;
    let ov = m.phases.get(oi)?;
    let load = Load::of(meta, m, ov, secs, expect_capacity);
    let bound = p99_bound(budgets, &["overload"]);
    let (recovered, recovery_s) = recovery(meta, budgets, m, secs, oi, bound.as_ref());
    let mut admitted = admitted_p99(ov, bound.as_ref());
    // brunt's own queue is not the service's tail: say so beside the figure.
    let scenarios = !meta.scenarios.is_empty();
    if let Some(w) = ConnectionWait::of(ov, meta.model, meta.connections, scenarios) {
        if w.dominates {
            admitted.measured = format!("{} — {}", admitted.measured, w.brief());
        }
    }
    let checks = vec![
        shed_fast(ov, &load, fast_fail_ms),
        retry_after(ov),
        admitted,
        goodput_held(&load),
        shed_fraction(&load),
        no_transport_errors(meta, m),
        recovered,
    ];
    let mut v = verdict(checks, &load, recovery_s, ov);
    // What the server side showed during the overload (a pool waiting ← the
    // database lock behind it): said when a check failed, never guessed.
    let info = &meta.phases[oi];
    let (from, to) = (info.start.as_secs_f64(), info.end().as_secs_f64());
    let top = server.and_then(|sv| sv.top_finding_beside_db(&info.name, from, to));
    let db = server.and_then(|sv| sv.top_db_finding(&info.name, from, to));
    let chain = super::cause::finding_chain(top, db);
    if !chain.is_empty() {
        let seen = chain.trim_start_matches("; ").to_string();
        if !v.pass {
            v.text = format!(
                "{}; during the overload the server side showed: {seen}",
                v.text
            );
        }
        v.server_finding = Some(seen);
    }
    Some(v)
}

/// The `overload` phase's offered load against what the service showed it can serve.
struct Load {
    /// Shed answers during `overload`.
    shed: u64,
    offered_rate: f64,
    /// ok/s during `overload`.
    goodput: f64,
    /// The capacity seen outside `overload` (0: nothing to tell it from).
    outside: f64,
    /// The one capacity every check and the headline use: `expect_capacity`,
    /// else max(outside, goodput).
    capacity: f64,
    /// Where `capacity` comes from, e.g. `best 3 s of ramp`.
    capacity_source: String,
    /// 1 − capacity/offered, at least 0.
    expected: f64,
    /// Shed answers / offered.
    measured: f64,
}

impl Load {
    fn of(meta: &RunMeta, m: &Measured, ov: &Stats, secs: &[Second], expect: Option<f64>) -> Load {
        let shed = ov.count(Class::Shed);
        let offered_rate = ov.offered as f64 / ov.duration.as_secs_f64().max(1e-9);
        let goodput = rate(ov, Class::Ok);
        let (outside, outside_source) = outside_capacity(meta, m, secs, expect);
        let (capacity, capacity_source) = if expect.is_none() && goodput > outside && outside > 0.0
        {
            (
                goodput,
                format!("the overload's own ok/s, above {outside:.0}/s from {outside_source}"),
            )
        } else {
            (outside, outside_source)
        };
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
            goodput,
            outside,
            capacity,
            capacity_source,
            expected,
            measured,
        }
    }
}

/// The capacity seen outside the `overload` phase, and where it comes from:
/// `expect_capacity`, else the larger of the ramp's best ok/s sustained for
/// [`SUSTAINED_S`] seconds and the baseline's ok/s.
fn outside_capacity(
    meta: &RunMeta,
    m: &Measured,
    secs: &[Second],
    expect: Option<f64>,
) -> (f64, String) {
    if let Some(c) = expect {
        return (c, "expect_capacity".into());
    }
    let base = meta
        .phase_index("baseline")
        .and_then(|i| m.phases.get(i))
        .map(|b| rate(b, Class::Ok))
        .unwrap_or(0.0);
    let ramp = meta.phase_index("ramp").and_then(|ri| {
        let (a, b) = window(meta, ri);
        // Whole seconds inside the ramp, in order.
        let ok: Vec<f64> = secs
            .iter()
            .filter(|s| s.t as f64 >= a.floor() && (s.t + 1) as f64 <= b.ceil())
            .map(|s| s.ok as f64)
            .collect();
        ok.windows(SUSTAINED_S.min(ok.len()).max(1))
            .map(|w| w.iter().sum::<f64>() / w.len() as f64)
            .max_by(f64::total_cmp)
    });
    match ramp {
        Some(r) if r >= base => (r, format!("best {SUSTAINED_S} s of ramp")),
        _ if base > 0.0 => (base, "baseline".into()),
        _ => (0.0, "nothing outside the overload".into()),
    }
}

/// Check 4: the overload's ok/s against the capacity seen outside it.
fn goodput_held(load: &Load) -> Check {
    const NAME: &str = "goodput held";
    let (got, cap) = (load.goodput, load.capacity);
    let expected = format!(
        "≥ {:.0}% of the capacity ≈ {cap:.0}/s ({})",
        GOODPUT_FLOOR * 100.0,
        load.capacity_source
    );
    if load.outside <= 0.0 {
        return check(
            NAME,
            CheckStatus::NotApplicable,
            format!("{got:.0} ok/s; no capacity seen outside the overload to compare with"),
            expected,
        );
    }
    let share = got / cap;
    if share >= GOODPUT_FLOOR {
        check(
            NAME,
            CheckStatus::Pass,
            format!(
                "{got:.0} ok/s against a capacity of ≈{cap:.0}/s ({:.0}%)",
                share * 100.0
            ),
            expected,
        )
    } else {
        check(
            NAME,
            CheckStatus::Fail,
            format!(
                "goodput collapsed: {got:.0} ok/s against a capacity of ≈{cap:.0}/s ({:.0}%)",
                share * 100.0
            ),
            expected,
        )
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
                CheckStatus::Pass
            } else {
                CheckStatus::Fail
            },
            format!("shed p99 {p:.1}ms over {shed} answers"),
            format!("≤ {fast_fail_ms:.0}ms (fast_fail)"),
        )
    } else if load.expected > 0.05 {
        check(
            NAME,
            CheckStatus::Fail,
            format!("no 503/429 at {offered_rate:.0}/s offered, above a capacity of ≈ {capacity:.0}/s: the service does not shed"),
            format!("shed answers with p99 ≤ {fast_fail_ms:.0}ms"),
        )
    } else {
        check(
            NAME,
            CheckStatus::NotApplicable,
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
            CheckStatus::NotApplicable,
            "no shed answers".into(),
            "every shed answer".into(),
        );
    }
    let with = ov.shed_retry_after;
    check(
        NAME,
        if with >= shed {
            CheckStatus::Pass
        } else {
            CheckStatus::Fail
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
                    CheckStatus::Pass
                } else {
                    CheckStatus::Fail
                },
                format!("ok p99 {p:.1}ms over {} answers", ok_h.len()),
                format!("≤ {:.1}ms ({})", b.ms, b.source),
            )
        }
        Some(b) => check(
            NAME,
            CheckStatus::Fail,
            "no request was admitted (no ok answer)".into(),
            format!("≤ {:.1}ms ({})", b.ms, b.source),
        ),
        None => check(
            NAME,
            CheckStatus::NotApplicable,
            if ok_h.is_empty() {
                "no ok answers".into()
            } else {
                format!("ok p99 {:.1}ms", ms_q(&ok_h, 0.99))
            },
            "a `p99 < …` budget in the profile".into(),
        ),
    }
}

/// Check 5: the measured shed fraction within ±[`SHED_TOLERANCE`] of the excess.
fn shed_fraction(load: &Load) -> Check {
    let (expected, measured, offered_rate) = (load.expected, load.measured, load.offered_rate);
    let capacity = load.capacity;
    check(
        "shed fraction matches the excess",
        if (measured - expected).abs() <= SHED_TOLERANCE {
            CheckStatus::Pass
        } else {
            CheckStatus::Fail
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

/// Check 6: no timeouts, resets or connect errors from `ramp` to the end,
/// and nothing left unanswered (`unfinished`, `dropped`).
fn no_transport_errors(meta: &RunMeta, m: &Measured) -> Check {
    let mut bad = [0u64; 5];
    for name in ["ramp", "overload", "recovery"] {
        if let Some(s) = meta.phase_index(name).and_then(|i| m.phases.get(i)) {
            bad[0] += s.count(Class::Timeout);
            bad[1] += s.count(Class::Reset);
            bad[2] += s.count(Class::ConnectError);
            bad[3] += s.count(Class::Unfinished);
            bad[4] += s.dropped;
        }
    }
    let [timeout, reset, connect, unfinished, dropped] = bad;
    let mut measured = format!("timeout={timeout} reset={reset} connect_error={connect}");
    if unfinished + dropped > 0 {
        measured.push_str(&format!(
            " unfinished={unfinished} dropped={dropped} (never answered: given up at the end, or over the generator's max_in_flight)"
        ));
    }
    check(
        "no timeouts, resets or refused connections",
        if bad.iter().sum::<u64>() == 0 {
            CheckStatus::Pass
        } else {
            CheckStatus::Fail
        },
        measured,
        "none (unfinished and dropped included)".into(),
    )
}

/// Check 7: recovery within the `recovery` phase, and the seconds it took.
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
    let rec = meta.phase_index("recovery").map(|ri| window(meta, ri));
    match (&rb, rec) {
        (Some(b), Some((_, rend))) => {
            let at = first_stable_good(secs, ov_end, rend, b.ms, true);
            let recovery_s = at.map(|t| (t as f64 - ov_end).max(0.0));
            (recovered(recovery_s, b, rend - ov_end), recovery_s)
        }
        (None, Some(_)) => (
            check(
                NAME,
                CheckStatus::NotApplicable,
                "no p99 bound (no budget, no baseline answers)".into(),
                "-".into(),
            ),
            None,
        ),
        (_, None) => (
            check(
                NAME,
                CheckStatus::NotApplicable,
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
            CheckStatus::Pass,
            format!("p99 within bound and no shedding {r:.0}s after the overload ended"),
            format!(
                "within the recovery phase ({:.0}s); p99 ≤ {:.1}ms ({})",
                span, b.ms, b.source
            ),
        ),
        None => check(
            NAME,
            CheckStatus::Fail,
            "not recovered by the end of the recovery phase".into(),
            format!("within {:.0}s; p99 ≤ {:.1}ms ({})", span, b.ms, b.source),
        ),
    }
}

/// The verdict: PASS when no check failed, with its headline.
fn verdict(
    checks: Vec<Check>,
    load: &Load,
    recovery_s: Option<f64>,
    ov: &Stats,
) -> OverloadVerdict {
    let pass = checks.iter().all(|c| c.status != CheckStatus::Fail);
    let text = if pass {
        format!(
            "shedding works: {:.0}% shed at {:.0}/s offered, {:.0} ok/s held (capacity ≈ {:.0}/s){}",
            load.measured * 100.0,
            load.offered_rate,
            load.goodput,
            load.capacity,
            recovery_s
                .map(|r| format!(", recovered {r:.0}s after the overload"))
                .unwrap_or_default()
        )
    } else {
        let failed: Vec<&str> = checks
            .iter()
            .filter(|c| c.status == CheckStatus::Fail)
            .map(|c| c.name.as_str())
            .collect();
        format!("failed: {}", failed.join("; "))
    };
    OverloadVerdict {
        pass,
        checks,
        offered_rate: load.offered_rate,
        capacity_estimate: load.capacity,
        capacity_source: load.capacity_source.clone(),
        goodput: load.goodput,
        ok_latency: split(ov, Class::Ok),
        shed_latency: split(ov, Class::Shed),
        expected_shed_fraction: load.expected,
        shed_fraction: load.measured,
        recovery_s,
        text,
        server_finding: None,
    }
}

/// p50/p99 of one class over a phase (`None`: no such answer).
pub fn split(s: &Stats, c: Class) -> Option<LatencySplit> {
    let h = s.latency(Some(c));
    (!h.is_empty()).then(|| LatencySplit {
        count: h.len(),
        p50_ms: ms_q(&h, 0.5),
        p99_ms: ms_q(&h, 0.99),
    })
}
