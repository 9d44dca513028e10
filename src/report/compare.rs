//! `brunt compare RUN_A RUN_B [--fail-if COND]…`: two run directories side
//! by side, phase by phase (matched by name), so a before/after change can
//! be judged — and, with `--fail-if`, gated (see [`Condition`]). The caller
//! reads both directories ([`crate::rundir::RunData`]); nothing here opens
//! a file.
//!
//! Percentiles come from each run's `latency.hlog`, merging every class's
//! latency histograms of a phase (never averaging percentiles); request,
//! shed and error counts come from the same histograms; rates divide them by
//! the phase's measured length (planned, cut at the last second measured).
//! The `run` row merges every phase but the warm-up, as the budgets judge
//! it. Deltas are B − A.

use super::terminal::fmt_ms as ms;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;
use serde::Serialize;
use thiserror::Error;

use crate::budgets::Status;
use crate::judge::summary::Percentiles;
use crate::judge::Gate;
use crate::metrics::{new_hist, Class};
use crate::rundir::RunData;

/// One phase of one run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PhaseFigures {
    pub requests: u64,
    pub ok: u64,
    pub shed: u64,
    /// Non-ok, non-shed answers.
    pub errors: u64,
    /// The phase's measured length (seconds); the run's: its phases' sum.
    pub duration_s: f64,
    /// Answers per second, any outcome.
    pub rps: f64,
    /// Ok answers per second.
    pub throughput: f64,
    /// Non-ok answers (shed included) over all answers.
    pub error_rate: f64,
    /// Every answer together (ok, shed and errors).
    pub latency: Percentiles,
    /// Ok and shed answers apart: fast 503s must not read as fast service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok_latency: Option<Percentiles>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shed_latency: Option<Percentiles>,
}

impl PhaseFigures {
    fn of(l: &Sides, counts: &BTreeMap<Class, u64>, duration_s: f64) -> PhaseFigures {
        let hist = &l.0;
        let n = |c: Class| counts.get(&c).copied().unwrap_or(0);
        let requests: u64 = counts.values().sum();
        let per_s = |v: u64| {
            if duration_s > 0.0 {
                v as f64 / duration_s
            } else {
                0.0
            }
        };
        PhaseFigures {
            requests,
            ok: n(Class::Ok),
            shed: n(Class::Shed),
            errors: requests - n(Class::Ok) - n(Class::Shed),
            duration_s,
            rps: per_s(requests),
            throughput: per_s(n(Class::Ok)),
            error_rate: if requests > 0 {
                (requests - n(Class::Ok)) as f64 / requests as f64
            } else {
                0.0
            },
            latency: Percentiles::of(hist),
            ok_latency: l.1.as_ref().filter(|h| !h.is_empty()).map(Percentiles::of),
            shed_latency: l.2.as_ref().filter(|h| !h.is_empty()).map(Percentiles::of),
        }
    }
}

/// A phase's histograms: every answer, ok alone, shed alone.
type Sides = (
    Histogram<u64>,
    Option<Histogram<u64>>,
    Option<Histogram<u64>>,
);

/// Add `h` into the `slot` histogram (created on first use).
fn add_into(slot: &mut Option<Histogram<u64>>, h: &Option<Histogram<u64>>) {
    if let Some(h) = h {
        let _ = slot.get_or_insert_with(new_hist).add(h);
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PhaseRow {
    pub phase: String,
    pub a: Option<PhaseFigures>,
    pub b: Option<PhaseFigures>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: PathBuf,
    pub b: PathBuf,
    /// Phases in A's order, then those only in B; the whole run last (`run`).
    pub phases: Vec<PhaseRow>,
    /// The `--fail-if` conditions as gates: FAIL when the condition holds,
    /// NO DATA when either run has nothing to measure it on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gates: Vec<Gate>,
    /// What makes the two runs unlike (another profile, other phases or
    /// requests): their deltas may then not mean what they seem.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Comparison {
    /// Every `--fail-if` condition was measured and none holds.
    pub fn passed(&self) -> bool {
        self.gates.iter().all(Gate::holds)
    }
    /// 0 when [`Comparison::passed`], else 99 (a gate failed or had no data).
    pub fn exit_code(&self) -> i32 {
        if self.passed() {
            crate::vocab::exit::PASS
        } else {
            crate::vocab::exit::BUDGET_FAILED
        }
    }
}

/// One run's phases in plan order, and each measured phase's figures.
fn sides(data: &RunData) -> (Vec<String>, BTreeMap<String, PhaseFigures>) {
    let meta = &data.meta;
    // How far the load got: a phase cut short by a stop counts its measured part only.
    let elapsed = data.seconds.iter().map(|s| s.t + 1).max().unwrap_or(0) as f64;
    let mut run: (Sides, BTreeMap<Class, u64>, f64) =
        ((new_hist(), None, None), BTreeMap::new(), 0.0);
    let mut out = BTreeMap::new();
    for (phase, l) in &data.latency.phases {
        let p = meta.phase_index(phase).map(|i| &meta.phases[i]);
        let secs = p
            .map(|p| (elapsed - p.start.as_secs_f64()).clamp(0.0, p.duration.as_secs_f64()))
            .unwrap_or(0.0);
        // `run` merges every phase but the warm-up.
        if p.is_some_and(|p| !p.is_warmup()) {
            let _ = run.0 .0.add(&l.all);
            add_into(&mut run.0 .1, &l.ok);
            add_into(&mut run.0 .2, &l.shed);
            for (c, n) in &l.counts {
                *run.1.entry(*c).or_default() += n;
            }
            run.2 += secs;
        }
        let sides = (l.all.clone(), l.ok.clone(), l.shed.clone());
        out.insert(phase.clone(), PhaseFigures::of(&sides, &l.counts, secs));
    }
    if !run.1.is_empty() {
        out.insert("run".into(), PhaseFigures::of(&run.0, &run.1, run.2));
    }
    let order = meta.phases.iter().map(|p| p.name.clone()).collect();
    (order, out)
}

/// One run to compare: where it was read from (shown) and what it holds.
pub type Run<'a> = (&'a Path, &'a RunData);

/// Compare two runs and judge `conditions` on them.
pub fn compare_gated(a: Run<'_>, b: Run<'_>, conditions: &[Condition]) -> Comparison {
    let mut c = compare(a, b);
    c.gates = conditions.iter().map(|k| k.judge(&c)).collect();
    c
}

/// Compare two runs, phase by phase.
pub fn compare(a: Run<'_>, b: Run<'_>) -> Comparison {
    let (order_a, mut sa) = sides(a.1);
    let (order_b, mut sb) = sides(b.1);
    let mut phases = Vec::new();
    let mut names: Vec<String> = order_a.clone();
    names.extend(order_b.into_iter().filter(|n| !order_a.contains(n)));
    names.push("run".into());
    for n in names {
        let (x, y) = (sa.remove(&n), sb.remove(&n));
        if x.is_none() && y.is_none() {
            continue;
        }
        phases.push(PhaseRow {
            phase: n,
            a: x,
            b: y,
        });
    }
    Comparison {
        a: a.0.to_path_buf(),
        b: b.0.to_path_buf(),
        phases,
        gates: Vec::new(),
        warnings: unlike(&a.1.meta, &b.1.meta),
    }
}

/// How two runs differ in what they were asked to do.
fn unlike(a: &crate::rundir::RunMeta, b: &crate::rundir::RunMeta) -> Vec<String> {
    let mut w = Vec::new();
    if a.name != b.name {
        w.push(format!(
            "A is a run of profile `{}`, B of `{}`: compare runs of one profile",
            a.name, b.name
        ));
    }
    if a.phases != b.phases {
        w.push("the runs planned other phases (a shape, rate or duration changed, or --time-scale): phase rows compare different loads".into());
    }
    if a.requests != b.requests {
        w.push(
            "the runs sent other request mixes: latency and throughput compare different work"
                .into(),
        );
    }
    w
}

fn delta(a: f64, b: f64, show: fn(f64) -> String) -> (String, String) {
    let d = b - a;
    let sign = if d >= 0.0 { "+" } else { "-" };
    let pct = if a.abs() > 0.0 {
        format!("{:+.1}%", d / a * 100.0)
    } else {
        "-".into()
    };
    (format!("{sign}{}", show(d.abs())), pct)
}

/// A row of the table: name, A, B, how to show a value.
type Row = (&'static str, f64, f64, fn(f64) -> String);

/// The side-by-side table for a terminal.
pub fn render(c: &Comparison) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\nbrunt compare\n  A: {}\n  B: {}",
        c.a.display(),
        c.b.display()
    );
    for w in &c.warnings {
        let _ = writeln!(o, "  warning: {w}");
    }
    let _ = writeln!(
        o,
        "\n{:<12} {:<9} {:>12} {:>12} {:>12} {:>9}",
        "phase", "metric", "A", "B", "Δ (B−A)", "Δ%"
    );
    let count = |v: f64| format!("{v:.0}");
    for r in &c.phases {
        let _ = writeln!(o, "{}", "-".repeat(71));
        let (Some(a), Some(b)) = (&r.a, &r.b) else {
            let only = if r.a.is_some() { "A" } else { "B" };
            let _ = writeln!(o, "{:<12} only in {only}", r.phase);
            continue;
        };
        let rate = |v: f64| format!("{v:.1}/s");
        let metrics: [Row; 10] = [
            ("requests", a.requests as f64, b.requests as f64, count),
            ("ok/s", a.throughput, b.throughput, rate),
            ("errors", a.errors as f64, b.errors as f64, count),
            ("shed", a.shed as f64, b.shed as f64, count),
            ("p50", a.latency.p50, b.latency.p50, ms),
            ("p90", a.latency.p90, b.latency.p90, ms),
            ("p95", a.latency.p95, b.latency.p95, ms),
            ("p99", a.latency.p99, b.latency.p99, ms),
            ("p99.9", a.latency.p999, b.latency.p999, ms),
            ("max", a.latency.max, b.latency.max, ms),
        ];
        // With shed answers on either side, ok and shed p99 apart as well.
        let apart = |f: &PhaseFigures, ok: bool| {
            let l = if ok { &f.ok_latency } else { &f.shed_latency };
            l.as_ref().map_or(0.0, |p| p.p99)
        };
        let mut metrics = metrics.to_vec();
        if a.shed + b.shed > 0 {
            metrics.push(("ok p99", apart(a, true), apart(b, true), ms));
            metrics.push(("shed p99", apart(a, false), apart(b, false), ms));
        }
        for (i, (name, x, y, show)) in metrics.iter().enumerate() {
            let (d, pct) = delta(*x, *y, *show);
            let _ = writeln!(
                o,
                "{:<12} {:<9} {:>12} {:>12} {:>12} {:>9}",
                if i == 0 { r.phase.as_str() } else { "" },
                name,
                show(*x),
                show(*y),
                d,
                pct
            );
        }
    }
    let _ = writeln!(
        o,
        "\npercentiles from merged histograms (latency.hlog) of every outcome together, with ok and shed p99 apart\nwhen anything was shed; `run` without the warm-up; Δ% relative to A"
    );
    if !c.gates.is_empty() {
        let _ = writeln!(o, "\ngates:");
        for g in &c.gates {
            let _ = writeln!(o, "  {}", g.line());
        }
        let failed: Vec<String> = c
            .gates
            .iter()
            .filter(|g| !g.holds())
            .map(|g| match g.status {
                Status::NoData => format!("NO DATA {}", g.text),
                _ => g.text.clone(),
            })
            .collect();
        let _ = writeln!(
            o,
            "\nresult: {}",
            if failed.is_empty() {
                "PASS".to_string()
            } else {
                format!("FAIL — {}", failed.join("; "))
            }
        );
    }
    o
}

/// Why a `--fail-if` condition does not parse (exit 2).
#[derive(Debug, Error, PartialEq)]
#[error("--fail-if `{text}`: {why}")]
pub struct ConditionError {
    pub text: String,
    pub why: String,
}

/// What a condition measures in each run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Measure {
    /// A latency percentile (0.5 … 0.999), or the max / mean: milliseconds.
    Latency(LatencyStat),
    /// Ok answers per second.
    Throughput,
    /// Answers per second, any outcome.
    Rps,
    Requests,
    Errors,
    Shed,
    /// Non-ok answers over all answers (0–1).
    ErrorRate,
    /// p99 of the ok answers alone, and of the shed ones.
    OkP99,
    ShedP99,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LatencyStat {
    P50,
    P90,
    P95,
    P99,
    P999,
    Max,
    Mean,
}

impl Measure {
    fn parse(s: &str) -> Option<Measure> {
        use LatencyStat as L;
        Some(match s {
            "p50" | "median" => Measure::Latency(L::P50),
            "p90" => Measure::Latency(L::P90),
            "p95" => Measure::Latency(L::P95),
            "p99" => Measure::Latency(L::P99),
            "p99.9" | "p999" => Measure::Latency(L::P999),
            "ok_p99" => Measure::OkP99,
            "shed_p99" => Measure::ShedP99,
            "max" => Measure::Latency(L::Max),
            "mean" => Measure::Latency(L::Mean),
            "throughput" => Measure::Throughput,
            "rps" => Measure::Rps,
            "requests" => Measure::Requests,
            "errors" => Measure::Errors,
            "shed" => Measure::Shed,
            "error_rate" => Measure::ErrorRate,
            _ => return None,
        })
    }

    /// The value in one run, `None` when there is nothing to measure it on.
    fn of(self, s: &PhaseFigures) -> Option<f64> {
        use LatencyStat as L;
        let l = &s.latency;
        match self {
            Measure::Latency(_) if l.count == 0 => None,
            Measure::Latency(q) => Some(match q {
                L::P50 => l.p50,
                L::P90 => l.p90,
                L::P95 => l.p95,
                L::P99 => l.p99,
                L::P999 => l.p999,
                L::Max => l.max,
                L::Mean => l.mean,
            }),
            Measure::Throughput | Measure::Rps if s.duration_s <= 0.0 => None,
            Measure::Throughput => Some(s.throughput),
            Measure::Rps => Some(s.rps),
            Measure::ErrorRate if s.requests == 0 => None,
            Measure::ErrorRate => Some(s.error_rate),
            Measure::Requests => Some(s.requests as f64),
            Measure::Errors => Some(s.errors as f64),
            Measure::Shed => Some(s.shed as f64),
            Measure::OkP99 => s.ok_latency.as_ref().map(|p| p.p99),
            Measure::ShedP99 => s.shed_latency.as_ref().map(|p| p.p99),
        }
    }

    /// A change in the metric's unit, with its sign (`+20.59ms`, `+1.00pp`).
    fn signed(self, d: f64) -> String {
        let sign = if d < 0.0 { "-" } else { "+" };
        match self {
            Measure::ErrorRate => format!("{sign}{:.2}pp", d.abs() * 100.0),
            m => format!("{sign}{}", m.show(d.abs())),
        }
    }

    fn show(self, v: f64) -> String {
        match self {
            Measure::Latency(_) | Measure::OkP99 | Measure::ShedP99 => ms(v),
            Measure::Throughput | Measure::Rps => format!("{v:.1}/s"),
            Measure::ErrorRate => format!("{:.2}%", v * 100.0),
            _ => format!("{v:.0}"),
        }
    }
}

/// How far B may move from A.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Change {
    /// Relative to A, in percent (`+10%`).
    Percent(f64),
    /// In the metric's own unit: ms for latency (`+50ms`), per second for
    /// rates (`-20/s`), a count, or percentage points for `error_rate` (`+1pp`).
    Absolute(f64),
}

/// One `--fail-if` condition: `METRIC OP CHANGE [in PHASE]`, e.g.
/// `p99 > +10%`, `throughput < -5%`, `p99 > +50ms in step-3`,
/// `error_rate > +1pp`. It holds — and fails the comparison — when B's value
/// moved from A's past CHANGE in the direction of OP. Scope: the run (every
/// phase but the warm-up) unless `in PHASE` names one.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    pub text: String,
    pub metric: Measure,
    /// `true` for `>` / `>=`.
    pub above: bool,
    pub inclusive: bool,
    pub change: Change,
    pub scope: String,
}

impl std::str::FromStr for Condition {
    type Err = ConditionError;
    fn from_str(text: &str) -> Result<Condition, ConditionError> {
        let err = |why: String| ConditionError {
            text: text.to_string(),
            why,
        };
        let (expr, scope) = match text.split_once(" in ") {
            Some((e, p)) if !p.trim().is_empty() && !p.trim().contains(' ') => {
                (e, p.trim().to_string())
            }
            Some(_) => {
                return Err(err(
                    "expected `in PHASE` with one phase name at the end".into()
                ))
            }
            None => (text, "run".to_string()),
        };
        let expr = expr.trim();
        let at = expr.find(['<', '>']).ok_or_else(|| {
            err("expected METRIC > CHANGE or METRIC < CHANGE, e.g. `p99 > +10%`".into())
        })?;
        let name = expr[..at].trim();
        let metric = Measure::parse(name).ok_or_else(|| {
            err(format!(
                "unknown metric `{name}`: use p50, p90, p95, p99, p99.9, max, mean, ok_p99, shed_p99, throughput, rps, requests, errors, shed or error_rate"
            ))
        })?;
        let above = expr[at..].starts_with('>');
        let mut rest = &expr[at + 1..];
        let inclusive = rest.starts_with('=');
        if inclusive {
            rest = &rest[1..];
        }
        let rest = rest.trim();
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
            .unwrap_or(rest.len());
        let (num, unit) = (&rest[..num_end], rest[num_end..].trim());
        let v: f64 = num
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| {
                err(format!(
                    "`{rest}` is not a change: expected e.g. +10%, -5%, +50ms"
                ))
            })?;
        let change = match (metric, unit) {
            (_, "%") => Change::Percent(v),
            (Measure::Latency(_), "ms") => Change::Absolute(v),
            (Measure::Latency(_), "s") => Change::Absolute(v * 1000.0),
            (Measure::Latency(_), "us" | "µs") => Change::Absolute(v / 1000.0),
            (Measure::Throughput | Measure::Rps, "/s") => Change::Absolute(v),
            (Measure::ErrorRate, "pp") => Change::Absolute(v / 100.0),
            (Measure::Requests | Measure::Errors | Measure::Shed, "") => Change::Absolute(v),
            (m, u) => {
                let want = match m {
                    Measure::Latency(_) => "a percentage (+10%) or a time (+50ms)",
                    Measure::Throughput | Measure::Rps => "a percentage (-5%) or a rate (-20/s)",
                    Measure::ErrorRate => {
                        "a percentage (+10%, relative) or percentage points (+1pp)"
                    }
                    _ => "a percentage (+10%) or a count (+100)",
                };
                let got = if u.is_empty() {
                    "no unit".to_string()
                } else {
                    format!("`{u}`")
                };
                return Err(err(format!("{name} takes {want}, not {got}")));
            }
        };
        Ok(Condition {
            text: text.trim().to_string(),
            metric,
            above,
            inclusive,
            change,
            scope,
        })
    }
}

impl Condition {
    /// The gate: FAIL when the condition holds, PASS when it does not, NO
    /// DATA when the scope or the metric is missing in either run.
    pub fn judge(&self, c: &Comparison) -> Gate {
        let row = c.phases.iter().find(|r| r.phase == self.scope);
        let side = |s: Option<&PhaseFigures>| s.and_then(|s| self.metric.of(s));
        let (a, b) = match row {
            Some(r) => (side(r.a.as_ref()), side(r.b.as_ref())),
            None => (None, None),
        };
        let op = match (self.above, self.inclusive) {
            (true, false) => ">",
            (true, true) => ">=",
            (false, false) => "<",
            (false, true) => "<=",
        };
        let limit = match self.change {
            Change::Percent(p) => format!("{p:+}%"),
            Change::Absolute(v) => self.metric.signed(v),
        };
        let expected = format!("Δ not {op} {limit} (B vs A, {})", self.scope);
        let (status, measured) = match (a, b) {
            (Some(a), Some(b)) => {
                let d = b - a;
                let (moved, shown) = match self.change {
                    Change::Percent(_) => {
                        // From nothing to something is an unbounded rise.
                        let rel = if a != 0.0 {
                            d / a.abs() * 100.0
                        } else if d == 0.0 {
                            0.0
                        } else {
                            f64::INFINITY.copysign(d)
                        };
                        (rel, format!("{rel:+.1}%"))
                    }
                    Change::Absolute(_) => (d, self.metric.signed(d)),
                };
                let limit_v = match self.change {
                    Change::Percent(p) | Change::Absolute(p) => p,
                };
                let holds = match (self.above, self.inclusive) {
                    (true, false) => moved > limit_v,
                    (true, true) => moved >= limit_v,
                    (false, false) => moved < limit_v,
                    (false, true) => moved <= limit_v,
                };
                let measured = format!(
                    "A {} → B {} ({shown})",
                    self.metric.show(a),
                    self.metric.show(b)
                );
                (if holds { Status::Fail } else { Status::Pass }, measured)
            }
            _ => {
                let missing = match (a.is_some(), b.is_some()) {
                    (false, false) => "A and B",
                    (false, true) => "A",
                    _ => "B",
                };
                (
                    Status::NoData,
                    format!("no data in {missing} for `{}`", self.scope),
                )
            }
        };
        Gate {
            kind: "regression".into(),
            name: self.text.clone(),
            text: format!("{}: {measured}", self.text),
            measured,
            expected,
            status,
            advisory: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(p99: f64, ok: u64, secs: f64) -> PhaseFigures {
        let mut counts = BTreeMap::new();
        counts.insert(Class::Ok, ok);
        let mut s = PhaseFigures::of(&(new_hist(), None, None), &counts, secs);
        s.latency.count = ok;
        s.latency.p99 = p99;
        s
    }

    fn cmp(a: PhaseFigures, b: PhaseFigures) -> Comparison {
        Comparison {
            a: "a".into(),
            b: "b".into(),
            phases: vec![PhaseRow {
                phase: "run".into(),
                a: Some(a),
                b: Some(b),
            }],
            gates: Vec::new(),
            warnings: Vec::new(),
        }
    }

    fn status(cond: &str, c: &Comparison) -> Status {
        cond.parse::<Condition>().expect(cond).judge(c).status
    }

    #[test]
    fn ok_and_shed_p99_are_measures_of_their_own() {
        let mut ok = new_hist();
        ok.record(40_000_000).expect("in range"); // ns
        let mut shed = new_hist();
        shed.record(1_000_000).expect("in range");
        let counts = BTreeMap::from([(Class::Ok, 1), (Class::Shed, 1)]);
        let f = PhaseFigures::of(&(new_hist(), Some(ok), Some(shed)), &counts, 1.0);
        let p = |m: &str| Measure::parse(m).and_then(|m| m.of(&f));
        assert!(
            p("ok_p99").is_some_and(|v| (v - 40.0).abs() < 0.1),
            "{:?}",
            p("ok_p99")
        );
        assert!(
            p("shed_p99").is_some_and(|v| (v - 1.0).abs() < 0.01),
            "{:?}",
            p("shed_p99")
        );
        let none = PhaseFigures::of(&(new_hist(), None, None), &counts, 1.0);
        assert_eq!(
            Measure::OkP99.of(&none),
            None,
            "nothing to measure: NO DATA, never 0"
        );
    }

    #[test]
    fn conditions_hold_past_their_change_only() {
        let c = cmp(side(100.0, 100, 10.0), side(111.0, 94, 10.0));
        assert_eq!(status("p99 > +10%", &c), Status::Fail);
        assert_eq!(status("p99 > +12%", &c), Status::Pass);
        assert_eq!(status("p99 > +10ms", &c), Status::Fail);
        assert_eq!(status("p99 >= +11ms", &c), Status::Fail);
        assert_eq!(status("p99 > +0.02s", &c), Status::Pass);
        assert_eq!(status("throughput < -5%", &c), Status::Fail);
        assert_eq!(status("throughput < -7%", &c), Status::Pass);
        assert_eq!(status("throughput < -0.5/s", &c), Status::Fail);
        assert_eq!(status("requests < -10", &c), Status::Pass);
    }

    #[test]
    fn missing_data_is_no_data_never_a_pass() {
        let c = cmp(side(100.0, 0, 10.0), side(100.0, 10, 10.0));
        assert_eq!(status("p99 > +10%", &c), Status::NoData);
        assert_eq!(status("p99 > +10% in step-2", &c), Status::NoData);
        let c = cmp(side(100.0, 10, 0.0), side(100.0, 10, 10.0));
        assert_eq!(status("throughput < -5%", &c), Status::NoData);
    }

    #[test]
    fn from_nothing_to_something_is_an_unbounded_rise() {
        let mut a = side(100.0, 100, 10.0);
        a.error_rate = 0.0;
        let mut b = a.clone();
        b.error_rate = 0.02;
        let c = cmp(a, b);
        assert_eq!(status("error_rate > +50%", &c), Status::Fail);
        assert_eq!(status("error_rate > +1pp", &c), Status::Fail);
        assert_eq!(status("error_rate > +3pp", &c), Status::Pass);
    }

    #[test]
    fn bad_conditions_say_what_was_expected() {
        let e = |s: &str| s.parse::<Condition>().unwrap_err().to_string();
        assert!(e("p99 < ").contains("not a change"), "{}", e("p99 < "));
        assert!(e("error_rate > +1ms").contains("percentage points"));
        assert!(e("p99 > +10% in ").contains("in PHASE"));
        let k: Condition = "p99.9 <= -1% in step-3".parse().expect("parses");
        assert_eq!(k.scope, "step-3");
        assert!(!k.above && k.inclusive);
        assert_eq!(k.change, Change::Percent(-1.0));
    }
}
