//! Gates: everything that decides a run's result, each with what was
//! measured and what was expected, so that a FAIL always names its reason.
//!
//! - every budget verdict (PASS, FAIL, or NO DATA when its scope had no answers);
//! - stress: the knee, against `expect_capacity` when the profile sets one
//!   (a first step that already breaks a budget fails it);
//! - overload: each check that applies (N/A checks are not gates);
//! - spike: p99 back within its bound after the spike ended;
//! - soak: the leak verdict (a leak or a latency drift fails; "cannot tell" is NO DATA).
//!
//! The shape's gates (overload, spike, soak) are advisory when the profile
//! says `verdicts.advisory: true`: shown, never failing the run.

use serde::{Deserialize, Serialize};

use super::knee::StressResult;
use super::verdict::{
    CheckStatus, LeakStatus, OverloadVerdict, SoakVerdict, SpikeVerdict, Verdicts,
};
use crate::budgets::{Status, Verdict};
use crate::vocab::{Level, Model};

/// One thing the run's result depends on.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Gate {
    /// `budget`, `knee`, `overload`, `spike` or `soak`.
    pub kind: String,
    pub name: String,
    pub measured: String,
    pub expected: String,
    pub status: Status,
    /// Shown but not deciding the result (`verdicts.advisory: true`).
    #[serde(default)]
    pub advisory: bool,
    /// One line saying why, e.g. `knee 100/s < expected capacity 200/s`.
    #[serde(default)]
    pub text: String,
}

impl Gate {
    /// Whether this gate lets the run pass: a PASS, or an advisory gate.
    pub fn holds(&self) -> bool {
        self.advisory || self.status == Status::Pass
    }

    /// `FAIL     knee: knee 100/s < expected capacity 200/s`.
    pub fn line(&self) -> String {
        format!(
            "{:<7}  {}{}",
            self.status.label(),
            self.text,
            if self.advisory { " (advisory)" } else { "" }
        )
    }
}

/// Every gate of a run, in the order they are shown.
pub fn gates(
    model: Model,
    budgets: &[Verdict],
    stress: Option<&StressResult>,
    verdicts: Option<&Verdicts>,
    advisory: bool,
) -> Vec<Gate> {
    let mut g: Vec<Gate> = budgets.iter().map(budget).collect();
    if let Some(st) = stress {
        g.push(knee(st, model));
    }
    let shape = |mut x: Gate| {
        x.advisory = advisory;
        x
    };
    if let Some(v) = verdicts {
        if let Some(ov) = &v.overload {
            g.extend(overload(ov).into_iter().map(shape));
        }
        if let Some(sp) = &v.spike {
            g.push(shape(spike(sp)));
        }
        if let Some(so) = &v.soak {
            g.push(shape(soak(so)));
        }
    }
    g
}

fn budget(v: &Verdict) -> Gate {
    let name = format!("{} [{}]", v.budget, v.scope);
    let measured = v.measured();
    Gate {
        kind: "budget".into(),
        text: match v.status {
            Status::NoData => format!("{name}: {measured}"),
            _ => format!("{name}: measured {measured}"),
        },
        name,
        measured,
        expected: v.expected(),
        status: v.status,
        advisory: false,
    }
}

fn knee(st: &StressResult, model: Model) -> Gate {
    let unit = model.unit();
    let lv = |l: f64| format!("{}{unit}", Level(l));
    let breach = || {
        st.breached
            .iter()
            .map(|v| format!("{} (measured {})", v.budget, v.shown))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let measured = match (&st.knee, st.knee_level) {
        (Some(k), Some(l)) => format!("knee {} ({k})", lv(l)),
        (Some(k), None) => format!("knee {k}"),
        (None, _) => "no knee".into(),
    };
    let (name, expected) = match st.expect_capacity {
        Some(want) => (
            "knee vs expect_capacity".to_string(),
            format!("≥ {} (expect_capacity)", lv(want)),
        ),
        None => ("knee".to_string(), "a first step within budget".to_string()),
    };
    let want = st.expect_capacity;
    let (status, text) = match (&st.knee, st.knee_level, &st.first_breach) {
        (None, _, None) => (
            Status::NoData,
            "knee: no step completed, nothing to judge".to_string(),
        ),
        (None, _, Some(b)) => (
            Status::Fail,
            format!(
                "no knee: the first step {b} ({}) already broke {}{}",
                st.first_breach_level.map(lv).unwrap_or_else(|| "-".into()),
                breach(),
                want.map(|w| format!("; expected capacity {}", lv(w)))
                    .unwrap_or_default()
            ),
        ),
        (Some(_), None, _) => (Status::NoData, format!("knee: {measured}, level unknown")),
        (Some(_), Some(got), _) => match want {
            Some(w) if got < w => (
                Status::Fail,
                format!(
                    "knee {} < expected capacity {}{}",
                    lv(got),
                    lv(w),
                    st.first_breach
                        .as_ref()
                        .map(|b| format!(" ({b} broke {})", breach()))
                        .unwrap_or_default()
                ),
            ),
            Some(w) => (
                Status::Pass,
                format!("knee {} ≥ expected capacity {}", lv(got), lv(w)),
            ),
            None => (Status::Pass, format!("knee {}", lv(got))),
        },
    };
    Gate {
        kind: "knee".into(),
        name,
        measured,
        expected,
        status,
        advisory: false,
        text,
    }
}

fn overload(ov: &OverloadVerdict) -> Vec<Gate> {
    ov.checks
        .iter()
        .filter_map(|c| {
            let status = match c.status {
                CheckStatus::Pass => Status::Pass,
                CheckStatus::Fail => Status::Fail,
                CheckStatus::NotApplicable => return None,
            };
            Some(Gate {
                kind: "overload".into(),
                name: format!("overload: {}", c.name),
                text: format!(
                    "overload: {}: {} (expected {})",
                    c.name, c.measured, c.expected
                ),
                measured: c.measured.clone(),
                expected: c.expected.clone(),
                status,
                advisory: false,
            })
        })
        .collect()
}

fn spike(sp: &SpikeVerdict) -> Gate {
    let (status, measured) = match sp.back_after_end_s {
        Some(t) => (
            Status::Pass,
            format!(
                "p99 back within {:.1}ms {t:.0}s after the spike ended",
                sp.bound_ms
            ),
        ),
        None => (
            Status::Fail,
            format!(
                "p99 not back within {:.1}ms before the data ended",
                sp.bound_ms
            ),
        ),
    };
    let expected = format!(
        "p99 back within {:.1}ms ({}) after the spike, 3 s in a row",
        sp.bound_ms, sp.bound_source
    );
    Gate {
        kind: "spike".into(),
        name: "spike recovery".into(),
        text: format!("spike recovery: {measured}"),
        measured,
        expected,
        status,
        advisory: false,
    }
}

fn soak(so: &SoakVerdict) -> Gate {
    let status = match so.status {
        LeakStatus::Leak | LeakStatus::Degrading => Status::Fail,
        LeakStatus::NoLeak => Status::Pass,
        LeakStatus::Unknown => Status::NoData,
    };
    Gate {
        kind: "soak".into(),
        name: "soak leaks".into(),
        text: format!("soak leaks: {}", so.text),
        measured: so.text.clone(),
        expected: format!(
            "no series over its verdicts.leaks threshold; p99 drift ≤ {:.0}%",
            so.p99_drift_limit * 100.0
        ),
        status,
        advisory: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn soak(status: LeakStatus) -> Verdicts {
        Verdicts {
            soak: Some(SoakVerdict {
                status,
                window_start_s: 0.0,
                window_end_s: 60.0,
                trends: vec![],
                p99_first_ms: None,
                p99_last_ms: None,
                p99_drift: None,
                p99_drift_limit: 0.5,
                text: "LEAK: target.rss_bytes +80MB/h".into(),
                grows: vec![],
            }),
            ..Default::default()
        }
    }

    #[test]
    fn shape_verdicts_gate_unless_advisory() {
        let soak_gates = |s, advisory| gates(Model::Open, &[], None, Some(&soak(s)), advisory);
        let g = soak_gates(LeakStatus::Leak, false);
        assert_eq!(g.len(), 1);
        assert_eq!((g[0].kind.as_str(), g[0].status), ("soak", Status::Fail));
        assert!(!g[0].holds());
        let g = soak_gates(LeakStatus::Leak, true);
        assert!(g[0].holds() && g[0].advisory);
        assert!(g[0].line().ends_with("(advisory)"), "{}", g[0].line());
        // Cannot tell is not a pass.
        let g = soak_gates(LeakStatus::Unknown, false);
        assert_eq!(g[0].status, Status::NoData);
        let g = soak_gates(LeakStatus::NoLeak, false);
        assert!(g[0].holds());
    }

    #[test]
    fn the_knee_gate_names_both_levels() {
        let st = StressResult {
            knee: Some("step-2".into()),
            knee_level: Some(100.0),
            first_breach: Some("step-3".into()),
            first_breach_level: Some(150.0),
            breached: vec![],
            expect_capacity: Some(200.0),
        };
        let g = gates(Model::Open, &[], Some(&st), None, true);
        assert_eq!(g[0].status, Status::Fail);
        assert!(!g[0].advisory, "expect_capacity is never advisory");
        assert!(
            g[0].text
                .starts_with("knee 100/s < expected capacity 200/s"),
            "{}",
            g[0].text
        );
        let none = StressResult {
            knee: None,
            knee_level: None,
            first_breach: None,
            first_breach_level: None,
            breached: vec![],
            expect_capacity: None,
        };
        let g = gates(Model::Open, &[], Some(&none), None, false);
        assert_eq!(g[0].status, Status::NoData);
    }
}
