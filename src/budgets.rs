//! The budget language and its evaluation.
//!
//! A budget is `[phase.][subject.][class.]metric op value`:
//! - phase: a phase name (`spike`, `step-3`); none = the whole run (less
//!   the warm-up);
//! - subject: what is measured — none = every request; `step(NAME)` (alias
//!   `request(NAME)`) = the requests of one step or request of the mix;
//!   `iteration` = whole scenario iterations, `iteration(NAME)` those of one
//!   scenario. Written with parentheses so that a name can never be read as
//!   a phase or a class (`step(login)` is a step even when a phase is named
//!   `login`), and so that names may hold dots and spaces (`step(GET /a.b)`);
//! - class: an outcome class (`ok`, `shed`, …); none = every answer; for
//!   iterations, the class an iteration ended in (`ok`: every step ok);
//! - metric: `p50` `p75` `p90` `p95` `p99` `p99.9` `max` `mean` (latency from
//!   the intended start), `svc.p99`-style service time, `error_rate`,
//!   `shed_rate`, `drop_rate` (fractions), `throughput` (ok answers/s),
//!   `rps` (all answers/s), `requests` (count);
//! - op: `<` `<=` `>` `>=`; value: `500ms`, `1.5s`, `0.1%`, `3000/s`, `42`.
//!   Units are strict: a latency needs its unit (`500ms`, not `500`) and a
//!   rate a `%` (`1%`, not `1` or `0.01`), since a bare number is ambiguous.
//!
//! Scopes narrow one another, never replace: `spike.step(login).ok.p99` is
//! the ok answers of step `login` during phase `spike`. The parts must come
//! in that order. A step or iteration subject keeps no service time and no
//! drops (a drop happens before a request or scenario is picked), so
//! `svc.*` and `drop_rate` are refused there. A name is resolved against the
//! profile when budgets are compiled ([`Budget::resolve`]): `step(login)`
//! matches every scenario step named `login` (`step(shop/login)` only
//! shop's) and a request of the mix of that name; an unknown name is an error.
//!
//! A budget whose scope has no answers (a class that never occurred, a phase
//! that sent nothing, a step that never ran) is `NO DATA`, which is not a pass.
//!
//! In YAML a budget is a string, or `{expr: "p99 < 300ms", phase: spike,
//! step: login}` (`phase` and `step` as if written in front of the expression).

use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::metrics::{Class, Stats};
use crate::vocab::{Level, Percent};

#[derive(Debug, Error, PartialEq)]
#[error("{0}")]
pub struct BudgetError(pub String);

/// A budget as written in the profile.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum BudgetSpec {
    Expr(String),
    Scoped {
        expr: String,
        #[serde(default)]
        phase: Option<String>,
        /// A step or request name, as `step(NAME).` in the expression.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step: Option<String>,
    },
}

/// Compile every budget of a profile; the first that does not parse is the error.
pub fn compile(specs: &[BudgetSpec]) -> Result<Vec<Budget>, BudgetError> {
    specs
        .iter()
        .map(|b| {
            b.parse()
                .map_err(|e| BudgetError(format!("budget `{}`: {}", b.expr(), e.0)))
        })
        .collect()
}

impl BudgetSpec {
    pub fn expr(&self) -> &str {
        match self {
            BudgetSpec::Expr(e) | BudgetSpec::Scoped { expr: e, .. } => e,
        }
    }
    pub fn parse(&self) -> Result<Budget, BudgetError> {
        let mut b = Budget::parse(self.expr())?;
        if let BudgetSpec::Scoped { phase, step, .. } = self {
            if let Some(p) = phase {
                if b.phase.is_some() {
                    return Err(BudgetError(format!(
                        "`{}` names a phase and `phase: {p}` names another",
                        self.expr()
                    )));
                }
                b.phase = Some(p.clone());
            }
            if let Some(st) = step {
                if b.subject != Subject::All {
                    return Err(BudgetError(format!(
                        "`{}` names a step or iterations and `step: {st}` names another",
                        self.expr()
                    )));
                }
                b.subject = Subject::Step {
                    name: st.clone(),
                    at: Vec::new(),
                };
                // Shown as if written in the expression: a verdict names its step.
                b.text = format!("step({st}).{}", b.text);
                b.check_subject()?;
            }
        }
        Ok(b)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Metric {
    /// Latency quantile (0..=1) from the intended start.
    Quantile(f64),
    /// Service-time quantile, from the actual send.
    ServiceQuantile(f64),
    Max,
    Mean,
    ErrorRate,
    ShedRate,
    DropRate,
    Throughput,
    Rps,
    Requests,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
        }
    }
}

/// What a budget measures: every request, one step's, or whole iterations.
/// `at` holds the indices the name resolved to ([`Budget::resolve`]):
/// requests of the mix (scenario steps included) or scenarios.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Subject {
    #[default]
    All,
    Step {
        name: String,
        at: Vec<usize>,
    },
    /// `name: None`: every scenario.
    Iteration {
        name: Option<String>,
        at: Vec<usize>,
    },
}

impl Subject {
    /// `step login`, `iterations of shop`, `iterations`; `None` for all requests.
    pub fn describe(&self) -> Option<String> {
        match self {
            Subject::All => None,
            Subject::Step { name, .. } => Some(format!("step {name}")),
            Subject::Iteration { name: Some(n), .. } => Some(format!("iterations of {n}")),
            Subject::Iteration { name: None, .. } => Some("iterations".into()),
        }
    }
}

/// What a name in a budget can be resolved against: the requests of the
/// mix in engine order (scenario steps included) and the scenarios.
pub struct Names<'a> {
    /// Full names (`item`, `shop/login`) and, for scenario steps, the
    /// step's own name (`login`).
    pub requests: Vec<(String, Option<String>)>,
    pub scenarios: Vec<&'a str>,
}

/// A parsed budget. `limit` is in the metric's unit: ms for latency, a
/// fraction for rates, per second for throughput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    pub text: String,
    pub phase: Option<String>,
    #[serde(default)]
    pub subject: Subject,
    pub class: Option<Class>,
    pub metric: Metric,
    pub op: Op,
    pub limit: f64,
}

fn quantile(s: &str) -> Option<f64> {
    let digits = s.strip_prefix('p')?;
    let q: f64 = match digits {
        "999" => 99.9,
        "9999" => 99.99,
        d => d.parse().ok()?,
    };
    // Round away binary noise: p99.9 is exactly 0.999, not 0.9990000000000001.
    (q > 0.0 && q <= 100.0).then_some((q * 1e6).round() / 1e8)
}

impl Budget {
    pub fn parse(text: &str) -> Result<Budget, BudgetError> {
        let err = |m: String| BudgetError(m);
        let t = text.trim();
        let (lhs, op, rhs) = ["<=", ">=", "<", ">"]
            .iter()
            .find_map(|o| t.split_once(o).map(|(a, b)| (a.trim(), *o, b.trim())))
            .ok_or_else(|| err("expected `metric < value`, e.g. `p99 < 500ms`".into()))?;
        let op = match op {
            "<=" => Op::Le,
            ">=" => Op::Ge,
            "<" => Op::Lt,
            _ => Op::Gt,
        };
        // `step(NAME)` / `iteration(NAME)` may hold dots: split outside parentheses.
        let all_parts = split_dots(lhs).map_err(err)?;
        let mut subject = Subject::All;
        let mut subject_at = None;
        for (i, seg) in all_parts.iter().enumerate() {
            let found = if let Some(name) = call(seg, &["step", "request"]) {
                Some(Subject::Step {
                    name: name.map_err(err)?,
                    at: Vec::new(),
                })
            } else if *seg == "iteration" || *seg == "iterations" {
                Some(Subject::Iteration {
                    name: None,
                    at: Vec::new(),
                })
            } else {
                call(seg, &["iteration", "iterations"])
                    .map(|name| {
                        name.map(|n| Subject::Iteration {
                            name: Some(n),
                            at: Vec::new(),
                        })
                    })
                    .transpose()
                    .map_err(err)?
            };
            if let Some(sub) = found {
                if subject_at.is_some() {
                    return Err(err(format!(
                        "`{lhs}`: two subjects (step(…), iteration); give one"
                    )));
                }
                if i > 1 {
                    return Err(err(format!(
                        "`{lhs}`: `{seg}` comes first or after the phase: [phase.][step(NAME).|iteration.][class.]metric"
                    )));
                }
                subject = sub;
                subject_at = Some(i);
            }
        }
        // The phase (if any) is before the subject; class and metric after it.
        let (before, parts): (Vec<&str>, Vec<&str>) = match subject_at {
            Some(i) => (all_parts[..i].to_vec(), all_parts[i + 1..].to_vec()),
            None => (Vec::new(), all_parts.clone()),
        };
        // Metrics may contain a dot (p99.9, svc.p99): find the longest metric suffix.
        let mut found = None;
        for k in (1..=parts.len().min(3)).rev() {
            let m = parts[parts.len() - k..].join(".");
            if let Some(metric) = parse_metric(&m) {
                found = Some((metric, parts.len() - k));
                break;
            }
        }
        let (metric, nscope) = found.ok_or_else(|| {
            err(format!(
                "`{lhs}`: unknown metric; expected p50, p90, p95, p99, p99.9, max, mean, svc.p99, error_rate, shed_rate, drop_rate, throughput, rps or requests"
            ))
        })?;
        let mut phase = before.first().map(|p| p.to_string());
        let mut class = None;
        for s in &parts[..nscope] {
            match Class::from_name(s) {
                Some(c) if class.is_none() => class = Some(c),
                Some(_) => return Err(err(format!("`{lhs}`: two outcome classes"))),
                None if phase.is_none() && class.is_none() && subject_at.is_none() => {
                    phase = Some(s.to_string())
                }
                None => return Err(err(format!("`{lhs}`: `{s}` is neither a phase nor an outcome class (ok, shed, http_error, timeout, connect_error, reset, check_failed, other_error, unfinished)"))),
            }
        }
        let limit = match metric {
            Metric::Quantile(_) | Metric::ServiceQuantile(_) | Metric::Max | Metric::Mean => {
                if rhs.parse::<f64>().is_ok() {
                    return Err(err(format!("`{rhs}`: expected a unit: {rhs}ms")));
                }
                humantime::parse_duration(rhs)
                    .map(|d| d.as_secs_f64() * 1000.0)
                    .map_err(|_| {
                        err(format!(
                            "`{rhs}`: expected a duration such as `500ms` or `1.5s`"
                        ))
                    })
                    .or_else(|e| {
                        // humantime has no fractions: accept `1.5s`/`0.5ms` by hand.
                        parse_frac_duration_ms(rhs).ok_or(e)
                    })?
            }
            Metric::ErrorRate | Metric::ShedRate | Metric::DropRate => {
                if !rhs.ends_with('%') {
                    let n = rhs.trim();
                    return Err(err(if n.parse::<f64>().is_ok() {
                        format!(
                            "`{n}`: expected a percentage: write {n}% (a bare number is ambiguous)"
                        )
                    } else {
                        format!("`{n}`: expected a percentage such as `1%` or `0.1%`")
                    }));
                }
                rhs.parse::<Percent>().map(|p| p.0).map_err(err)?
            }
            Metric::Throughput | Metric::Rps => rhs.parse::<Level>().map(|l| l.0).map_err(err)?,
            Metric::Requests => rhs
                .parse::<f64>()
                .map_err(|_| err(format!("`{rhs}`: expected a number")))?,
        };
        if matches!(
            metric,
            Metric::ErrorRate | Metric::ShedRate | Metric::DropRate
        ) && class.is_some()
        {
            return Err(err(format!(
                "`{lhs}`: rates are over all classes; drop the class"
            )));
        }
        let b = Budget {
            text: t.to_string(),
            phase,
            subject,
            class,
            metric,
            op,
            limit,
        };
        b.check_subject()?;
        Ok(b)
    }

    /// The metrics a step or iteration subject cannot measure.
    fn check_subject(&self) -> Result<(), BudgetError> {
        let Some(what) = self.subject.describe() else {
            return Ok(());
        };
        match self.metric {
            Metric::ServiceQuantile(_) => Err(BudgetError(format!(
                "`{}`: service time is kept for all requests only, not per {what}; budget its latency (p99) instead",
                self.text
            ))),
            Metric::DropRate => Err(BudgetError(format!(
                "`{}`: drops happen before a request or scenario is picked, so there is no drop_rate per {what}; budget drop_rate over all requests",
                self.text
            ))),
            _ => Ok(()),
        }
    }

    /// Resolve a step or iteration name against the profile's requests and
    /// scenarios; an unknown name is an error that lists the known ones.
    pub fn resolve(&mut self, names: &Names<'_>) -> Result<(), BudgetError> {
        match &mut self.subject {
            Subject::All => Ok(()),
            Subject::Step { name, at } => {
                *at = names
                    .requests
                    .iter()
                    .enumerate()
                    .filter(|(_, (full, own))| full == name || own.as_deref() == Some(name))
                    .map(|(i, _)| i)
                    .collect();
                if at.is_empty() {
                    let known: Vec<&str> = names.requests.iter().map(|(f, _)| f.as_str()).collect();
                    return Err(BudgetError(format!(
                        "no step or request named `{name}`; the profile has {}",
                        known.join(", ")
                    )));
                }
                Ok(())
            }
            Subject::Iteration { name, at } => {
                if names.scenarios.is_empty() {
                    return Err(BudgetError(
                        "iterations are measured for `scenarios:` only, and the profile has none"
                            .into(),
                    ));
                }
                if let Some(n) = name {
                    match names.scenarios.iter().position(|s| s == n) {
                        Some(k) => *at = vec![k],
                        None => {
                            return Err(BudgetError(format!(
                                "no scenario named `{n}`; the profile has {}",
                                names.scenarios.join(", ")
                            )))
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// Whether the budget is on every request (no step or iteration subject):
    /// the only ones the knee, the p99 bound and collectors' triggers read.
    pub fn on_all_requests(&self) -> bool {
        self.subject == Subject::All
    }

    /// The part of `s` this budget's subject measures (`s` itself for all
    /// requests). `split`: the scope keeps per-request histograms (a mix of
    /// more than one request); without, the one request is all of `s`.
    pub fn scope_of(&self, s: &Stats, split: bool) -> Stats {
        match &self.subject {
            Subject::All => s.clone(),
            Subject::Step { .. } if !split => s.clone(),
            Subject::Step { at, .. } => s.requests_scope(at),
            Subject::Iteration { at, .. } => s.iterations_scope(at),
        }
    }

    /// [`Budget::evaluate`] on this budget's subject within `s`.
    pub fn evaluate_in(&self, s: &Stats, split: bool) -> Verdict {
        match self.subject {
            Subject::All => self.evaluate(s),
            _ => self.evaluate(&self.scope_of(s, split)),
        }
    }

    /// The measured value of this budget's metric on `s` (in the limit's unit).
    pub fn measure(&self, s: &Stats) -> f64 {
        let secs = s.duration.as_secs_f64().max(1e-9);
        match self.metric {
            Metric::Quantile(q) => ms(
                s.latency(self.class).value_at_quantile(q),
                &s.latency(self.class),
            ),
            Metric::ServiceQuantile(q) => ms(
                s.service(self.class).value_at_quantile(q),
                &s.service(self.class),
            ),
            Metric::Max => {
                let h = s.latency(self.class);
                ms(h.max(), &h)
            }
            Metric::Mean => {
                let h = s.latency(self.class);
                if h.is_empty() {
                    0.0
                } else {
                    h.mean() / 1e6
                }
            }
            Metric::ErrorRate => s.error_rate(),
            Metric::ShedRate => {
                let n = s.completed() + s.dropped;
                if n == 0 {
                    0.0
                } else {
                    s.count(Class::Shed) as f64 / n as f64
                }
            }
            Metric::DropRate => {
                if s.offered == 0 {
                    0.0
                } else {
                    s.dropped as f64 / s.offered as f64
                }
            }
            Metric::Throughput => match self.class {
                Some(c) => s.count(c) as f64 / secs,
                None => s.count(Class::Ok) as f64 / secs,
            },
            Metric::Rps => match self.class {
                Some(c) => s.count(c) as f64 / secs,
                None => s.completed() as f64 / secs,
            },
            Metric::Requests => match self.class {
                Some(c) => s.count(c) as f64,
                None => s.completed() as f64,
            },
        }
    }

    /// Whether `s` holds anything this budget can be measured on: a latency
    /// needs answers of its class, a rate a non-zero denominator. Counts and
    /// throughputs are always measured (zero is a measurement).
    pub fn has_data(&self, s: &Stats) -> bool {
        match self.metric {
            Metric::Quantile(_) | Metric::Max | Metric::Mean => !s.latency(self.class).is_empty(),
            Metric::ServiceQuantile(_) => !s.service(self.class).is_empty(),
            Metric::ErrorRate => s.completed() + s.dropped > 0,
            Metric::ShedRate => s.completed() + s.dropped > 0,
            Metric::DropRate => s.offered > 0,
            Metric::Throughput | Metric::Rps | Metric::Requests => true,
        }
    }

    /// Evaluate on a scope. A budget on a scope with no answers is
    /// [`Status::NoData`]: not a pass, and it says so.
    pub fn evaluate(&self, s: &Stats) -> Verdict {
        let value = self.measure(s);
        let latency = self.measures_time();
        let status = if !self.has_data(s) {
            Status::NoData
        } else if self.op.holds(value, self.limit) {
            Status::Pass
        } else {
            Status::Fail
        };
        Verdict {
            budget: self.text.clone(),
            scope: self.phase.clone().unwrap_or_else(|| "run".into()),
            value,
            shown: self.show(value),
            limit: self.show(self.limit),
            pass: status == Status::Pass,
            status,
            note: (status == Status::NoData).then(|| self.nothing_to_measure()),
            latency,
        }
    }

    /// Why a scope had nothing to measure: `no timeout answers in the run`.
    fn nothing_to_measure(&self) -> String {
        let scope = match &self.phase {
            Some(p) => format!("phase {p}"),
            None => "the run".into(),
        };
        match (&self.subject, self.metric, self.class) {
            (Subject::Step { name, .. }, _, None) => format!("step {name} never ran in {scope}"),
            (Subject::Step { name, .. }, _, Some(c)) => {
                format!("no {} answers of step {name} in {scope}", c.name())
            }
            (Subject::Iteration { .. }, _, c) => format!(
                "no {}{} in {scope}",
                c.map(|c| format!("{} ", c.name())).unwrap_or_default(),
                self.subject.describe().unwrap_or_default()
            ),
            (Subject::All, Metric::DropRate, _) => format!("nothing offered in {scope}"),
            (Subject::All, _, Some(c)) => format!("no {} answers in {scope}", c.name()),
            (Subject::All, _, None) => format!("no answers in {scope}"),
        }
    }

    /// Budgets on a time (quantiles, service quantiles, max, mean), in ms.
    /// Wider than [`Budget::is_latency`], which names only those a 1-s
    /// window can check.
    pub fn measures_time(&self) -> bool {
        matches!(
            self.metric,
            Metric::Quantile(_) | Metric::ServiceQuantile(_) | Metric::Max | Metric::Mean
        )
    }

    fn show(&self, v: f64) -> String {
        match self.metric {
            Metric::Quantile(_) | Metric::ServiceQuantile(_) | Metric::Max | Metric::Mean => {
                format!("{v:.1}ms")
            }
            Metric::ErrorRate | Metric::ShedRate | Metric::DropRate => format!("{:.3}%", v * 100.0),
            Metric::Throughput | Metric::Rps => format!("{v:.1}/s"),
            Metric::Requests => format!("{v:.0}"),
        }
    }

    /// Latency budgets (for per-second triggers such as collectors' dumps).
    pub fn is_latency(&self) -> bool {
        matches!(self.metric, Metric::Quantile(_) | Metric::Max)
    }
}

fn ms(v: u64, h: &hdrhistogram::Histogram<u64>) -> f64 {
    if h.is_empty() {
        0.0
    } else {
        v as f64 / 1e6
    }
}

/// Split `a.step(x.y).p99` on the dots outside parentheses.
fn split_dots(lhs: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut from = 0;
    for (i, c) in lhs.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            '.' if depth == 0 => {
                out.push(lhs[from..i].trim());
                from = i + 1;
            }
            _ => {}
        }
        if depth < 0 {
            return Err(format!("`{lhs}`: a `)` without its `(`"));
        }
    }
    if depth != 0 {
        return Err(format!("`{lhs}`: a `(` without its `)`"));
    }
    out.push(lhs[from..].trim());
    Ok(out)
}

/// `word(NAME)` for one of `words`: the name, or an error when it is empty.
fn call(seg: &str, words: &[&str]) -> Option<Result<String, String>> {
    let (w, rest) = seg.split_once('(')?;
    if !words.contains(&w.trim()) {
        return None;
    }
    let name = rest.strip_suffix(')')?.trim();
    Some(if name.is_empty() {
        Err(format!(
            "`{seg}`: name the {} inside the parentheses",
            w.trim()
        ))
    } else {
        Ok(name.to_string())
    })
}

fn parse_frac_duration_ms(s: &str) -> Option<f64> {
    let s = s.trim();
    let units = [
        ("ms", 1.0),
        ("us", 0.001),
        ("µs", 0.001),
        ("s", 1000.0),
        ("m", 60_000.0),
    ];
    for (u, f) in units {
        if let Some(n) = s.strip_suffix(u) {
            if let Ok(v) = n.trim().parse::<f64>() {
                if v.is_finite() && v >= 0.0 {
                    return Some(v * f);
                }
            }
        }
    }
    None
}

fn parse_metric(m: &str) -> Option<Metric> {
    Some(match m {
        "max" => Metric::Max,
        "mean" | "avg" => Metric::Mean,
        "error_rate" => Metric::ErrorRate,
        "shed_rate" => Metric::ShedRate,
        "drop_rate" => Metric::DropRate,
        "throughput" => Metric::Throughput,
        "rps" => Metric::Rps,
        "requests" => Metric::Requests,
        _ => {
            if let Some(q) = m.strip_prefix("svc.") {
                return quantile(q).map(Metric::ServiceQuantile);
            }
            return quantile(m).map(Metric::Quantile);
        }
    })
}

/// What a budget or a gate came to: the one gate vocabulary, in `vocab`.
pub use crate::vocab::Status;

/// A budget's result on one scope.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(from = "VerdictWire")]
pub struct Verdict {
    pub budget: String,
    /// `run` or a phase name.
    pub scope: String,
    pub value: f64,
    pub shown: String,
    pub limit: String,
    /// `status == Pass` (kept for readers of `brunt.summary/1` before `status`).
    pub pass: bool,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The budget is on a latency (see [`Budget::measures_time`]).
    #[serde(default)]
    pub latency: bool,
}

/// [`Verdict`] as read: summaries written before `status` existed get it from `pass`.
#[derive(Deserialize)]
struct VerdictWire {
    budget: String,
    scope: String,
    value: f64,
    shown: String,
    limit: String,
    pass: bool,
    #[serde(default)]
    status: Option<Status>,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    latency: bool,
}

impl From<VerdictWire> for Verdict {
    fn from(w: VerdictWire) -> Self {
        let status = w
            .status
            .unwrap_or(if w.pass { Status::Pass } else { Status::Fail });
        Verdict {
            budget: w.budget,
            scope: w.scope,
            value: w.value,
            shown: w.shown,
            limit: w.limit,
            pass: status == Status::Pass,
            status,
            note: w.note,
            latency: w.latency,
        }
    }
}

impl Verdict {
    /// The right-hand side of the budget: `< 500ms` of `p99 < 500ms`.
    pub fn expected(&self) -> String {
        match self.budget.find(['<', '>']) {
            Some(i) => self.budget[i..].trim().to_string(),
            None => self.budget.clone(),
        }
    }

    /// What was measured, or why nothing was.
    pub fn measured(&self) -> String {
        match self.status {
            Status::NoData => self
                .note
                .clone()
                .unwrap_or_else(|| "nothing to measure".into()),
            _ => self.shown.clone(),
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.status {
            Status::NoData => write!(
                f,
                "{} {:<28} [{}] nothing measured",
                self.status, self.budget, self.scope
            ),
            _ => write!(
                f,
                "{} {:<28} [{}] measured {}",
                self.status, self.budget, self.scope, self.shown
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_language() {
        let b = Budget::parse("p99 < 500ms").unwrap();
        assert_eq!(b.metric, Metric::Quantile(0.99));
        assert_eq!(b.limit, 500.0);
        let b = Budget::parse("shed.p99 < 50ms").unwrap();
        assert_eq!(b.class, Some(Class::Shed));
        let b = Budget::parse("spike.ok.p99.9 <= 1.5s").unwrap();
        assert_eq!(b.phase.as_deref(), Some("spike"));
        assert_eq!(b.class, Some(Class::Ok));
        assert_eq!(b.metric, Metric::Quantile(0.999));
        assert_eq!(b.limit, 1500.0);
        let b = Budget::parse("error_rate < 0.1%").unwrap();
        assert!((b.limit - 0.001).abs() < 1e-12);
        let b = Budget::parse("throughput >= 3000/s").unwrap();
        assert_eq!(
            (b.metric, b.op, b.limit),
            (Metric::Throughput, Op::Ge, 3000.0)
        );
        let b = Budget::parse("svc.p99 < 20ms").unwrap();
        assert_eq!(b.metric, Metric::ServiceQuantile(0.99));
        assert!(Budget::parse("p99 500ms").is_err());
        assert!(Budget::parse("p101 < 5ms").is_err());
        assert!(Budget::parse("latency < 5ms").is_err());
        assert!(Budget::parse("p99 < fast").is_err());
        assert!(Budget::parse("ok.error_rate < 1%").is_err());
    }

    #[test]
    fn step_and_iteration_subjects_compose_with_phase_and_class() {
        let b = Budget::parse("spike.step(GET /a.b).ok.p99.9 < 1s").unwrap();
        assert_eq!(b.phase.as_deref(), Some("spike"));
        assert_eq!(
            b.subject,
            Subject::Step {
                name: "GET /a.b".into(),
                at: vec![]
            }
        );
        assert_eq!(
            (b.class, b.metric),
            (Some(Class::Ok), Metric::Quantile(0.999))
        );
        let b = Budget::parse("iteration.p99 < 2s").unwrap();
        assert_eq!(
            b.subject,
            Subject::Iteration {
                name: None,
                at: vec![]
            }
        );
        assert_eq!(b.phase, None);
        let b = Budget::parse("request(item).error_rate < 1%").unwrap();
        assert!(matches!(b.subject, Subject::Step { .. }));
        // A step named like a phase or a class stays a step.
        let b = Budget::parse("step(ok).p99 < 1s").unwrap();
        assert_eq!(b.class, None);
        assert!(Budget::parse("p99.step(x) < 1s").is_err());
        assert!(Budget::parse("step(x.p99 < 1s").is_err());
        assert!(Budget::parse("a.b.step(x).p99 < 1s").is_err());
        let names = Names {
            requests: vec![
                ("item".into(), None),
                ("shop/login".into(), Some("login".into())),
                ("admin/login".into(), Some("login".into())),
            ],
            scenarios: vec!["shop", "admin"],
        };
        let mut b = Budget::parse("step(login).p99 < 1s").unwrap();
        b.resolve(&names).unwrap();
        assert!(matches!(&b.subject, Subject::Step { at, .. } if at == &[1, 2]));
        let mut b = Budget::parse("step(shop/login).p99 < 1s").unwrap();
        b.resolve(&names).unwrap();
        assert!(matches!(&b.subject, Subject::Step { at, .. } if at == &[1]));
        let mut b = Budget::parse("iteration(admin).p99 < 1s").unwrap();
        b.resolve(&names).unwrap();
        assert!(matches!(&b.subject, Subject::Iteration { at, .. } if at == &[1]));
        let mut b = Budget::parse("step(nope).p99 < 1s").unwrap();
        assert!(b.resolve(&names).is_err());
        // An empty step scope is NO DATA, saying which step.
        let v = Budget::parse("step(login).p99 < 1s")
            .unwrap()
            .evaluate_in(&Stats::default(), true);
        assert_eq!(v.status, Status::NoData);
        assert_eq!(v.note.as_deref(), Some("step login never ran in the run"));
    }

    #[test]
    fn units_are_strict() {
        let e = Budget::parse("error_rate < 1").unwrap_err().0;
        assert!(e.contains("write 1% (a bare number is ambiguous)"), "{e}");
        assert!(Budget::parse("shed_rate < 0.01").is_err());
        assert!(Budget::parse("drop_rate <= 0").is_err());
        let e = Budget::parse("p99 < 500").unwrap_err().0;
        assert!(e.contains("expected a unit: 500ms"), "{e}");
        assert!(Budget::parse("svc.p99 < 2.5").is_err());
        assert!(Budget::parse("error_rate < 1%").is_ok());
        assert!(Budget::parse("max < 1.5s").is_ok());
    }

    #[test]
    fn an_empty_scope_is_no_data_not_a_pass() {
        let s = Stats::default();
        for text in [
            "p99 < 500ms",
            "shed.p99 < 50ms",
            "error_rate < 1%",
            "svc.p99 < 5ms",
        ] {
            let v = Budget::parse(text).unwrap().evaluate(&s);
            assert_eq!(v.status, Status::NoData, "{text}");
            assert!(!v.pass, "{text}");
            assert!(v.to_string().starts_with("NO DATA"), "{v}");
        }
        // A count of zero is measured, and fails `>=`.
        let v = Budget::parse("requests >= 1").unwrap().evaluate(&s);
        assert_eq!(v.status, Status::Fail);
    }

    #[test]
    fn old_verdicts_read_their_status_from_pass() {
        let v: Verdict = serde_json::from_str(
            r#"{"budget":"p99 < 5ms","scope":"run","value":9.0,"shown":"9.0ms","limit":"5.0ms","pass":false}"#,
        )
        .unwrap();
        assert_eq!(v.status, Status::Fail);
        assert_eq!(v.expected(), "< 5ms");
    }

    #[test]
    fn verdicts_know_their_budget_is_on_a_latency() {
        let s = Stats::default();
        for (text, latency) in [
            ("p99 < 500ms", true),
            ("svc.p99 < 20ms", true),
            ("max < 1s", true),
            ("mean < 5ms", true),
            ("error_rate < 0.1%", false),
            ("throughput >= 3000/s", false),
        ] {
            let v = Budget::parse(text).unwrap().evaluate(&s);
            assert_eq!(v.latency, latency, "{text}");
            assert_eq!(v.latency, v.shown.ends_with("ms"), "{text}");
        }
    }
}
