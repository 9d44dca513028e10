//! The one finishing sequence of a judged run: a single run, `brunt report
//! DIR` and `brunt merge` all read their directory into a [`RunData`], gather
//! a [`Judging`] (what only they know: the measured histograms, why the load
//! ended, the collectors' index) and hand both to [`judge`], so `summary.json` is built, stopped, and given its generator
//! health, collectors, findings and notes in one order, written once.

use super::summary::{build, StopKind, Summary};
use crate::budgets::Budget;
use crate::metrics::{GeneratorHealth, Measured};
use crate::profile::verdicts::VerdictsConfig;
use crate::rundir::RunData;

/// How the load ended.
#[derive(Debug, Clone, Default)]
pub struct Ending {
    /// Why it stopped before its plan did, if it did.
    pub kind: Option<StopKind>,
    pub reason: Option<String>,
    /// It ended before its plan (also without a known kind: a killed run):
    /// phases never reached are not judged.
    pub early: bool,
}

/// Everything the judged run is built from beside its [`RunData`], whoever
/// gathered it.
pub struct Judging<'a> {
    pub budgets: &'a [Budget],
    pub settings: &'a VerdictsConfig,
    pub measured: &'a Measured,
    pub ending: Ending,
    pub generator: GeneratorHealth,
    /// The collectors' index (`None`: no collector ran, or none is known).
    pub collectors: Option<crate::vocab::collectors::CollectorsSummary>,
    pub findings: Option<serde_json::Value>,
    /// Said last, after the judge's own notes.
    pub notes: Vec<String>,
}

/// Judge the run read into `data`: the summary, complete.
pub fn judge(j: Judging<'_>, data: &RunData) -> Summary {
    let mut s = build(
        data,
        j.budgets,
        j.settings,
        j.measured,
        j.ending.early || j.ending.kind.is_some(),
        j.ending.reason,
    );
    s.set_stop_kind(j.ending.kind);
    // Around the worst second: was the host busy with something else?
    let w = j.generator.worst_second as f64;
    let others = data.server.as_ref().and_then(|sv| {
        sv.max_in(
            crate::vocab::series::GENERATOR_OTHERS_CPU.name,
            w - 1.0,
            w + 2.0,
        )
    });
    s.set_generator(j.generator, others);
    if j.collectors.is_some() {
        s.set_collectors(j.collectors);
    }
    s.findings = j.findings;
    s.notes.extend(j.notes);
    if let Some(t) = s.teardown.as_ref().filter(|t| !t.ok) {
        s.notes
            .push(format!("{}; the load's verdict stands", t.line("teardown")));
    }
    s
}
