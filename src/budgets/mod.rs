//! The budget language and its evaluation: the types here, parsing and
//! resolving names in [`parse`], measuring and judging in [`evaluate`], the
//! verdict in [`verdict`].
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

mod evaluate;
mod parse;
mod verdict;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::metrics::Class;

pub use verdict::{Status, Verdict};

#[derive(Debug, Error, PartialEq)]
#[error("{0}")]
pub struct BudgetError(pub String);

/// A budget as written in the profile.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Stats;

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
