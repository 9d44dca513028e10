//! The knee of a stress run: the unscoped budgets judged step by step, the
//! highest step that met them all and the first that broke one.

use serde::{Deserialize, Serialize};

use crate::budgets::{Budget, Verdict};
use crate::metrics::{Measured, Stats};
use crate::rundir::RunMeta;
use crate::vocab::PhaseInfo;

/// Per-step evaluation of the unscoped budgets. A budget with nothing to
/// measure in a step (`shed.p99` where nothing was shed) says nothing about
/// that step and is left out: only a measured breach makes a knee.
pub fn step_verdicts(budgets: &[Budget], s: &Stats) -> Vec<Verdict> {
    budgets
        .iter()
        .filter(|b| b.phase.is_none() && b.on_all_requests() && b.has_data(s))
        .map(|b| {
            let mut v = b.evaluate(s);
            v.scope = String::new();
            v
        })
        .collect()
}

/// The stress verdict: where the knee is.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StressResult {
    /// Highest step that met every budget (`None`: even the first step broke one).
    pub knee: Option<String>,
    pub knee_level: Option<f64>,
    /// First step that broke a budget (`None`: no step did).
    pub first_breach: Option<String>,
    pub first_breach_level: Option<f64>,
    /// The budgets the first breaching step failed.
    pub breached: Vec<Verdict>,
    pub expect_capacity: Option<f64>,
}

pub(super) fn stress_result(
    meta: &RunMeta,
    budgets: &[Budget],
    m: &Measured,
    expect: Option<f64>,
) -> StressResult {
    let mut knee = None;
    let mut first = None;
    let mut breached = Vec::new();
    for (p, s) in meta.phases.iter().zip(&m.phases) {
        if p.is_warmup() {
            continue; // sent, never judged
        }
        if s.completed() + s.dropped == 0 {
            break; // not reached (stopped before)
        }
        let mut vs = step_verdicts(budgets, s);
        for v in &mut vs {
            v.scope = p.name.clone();
        }
        if vs.iter().all(|v| v.pass) {
            knee = Some(p);
        } else {
            first = Some(p);
            breached = vs.into_iter().filter(|v| !v.pass).collect();
            break;
        }
    }
    let level = |p: &PhaseInfo| p.level;
    StressResult {
        knee_level: knee.and_then(level),
        knee: knee.map(|p| p.name.clone()),
        first_breach_level: first.and_then(level),
        first_breach: first.map(|p| p.name.clone()),
        breached,
        expect_capacity: expect,
    }
}
