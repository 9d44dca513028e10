//! Server-side evidence as the judge and the report read it: time series
//! sampled on the target (and on the generator) and findings from the
//! diagnosis, all on the run's clock (seconds since the run start, the same
//! clock as `timeseries.csv` and `latency.hlog`).
//!
//! The judge depends only on this contract, not on the collectors or the
//! diagnosis themselves, so either can change without touching the verdicts.
//! Series names and units are [`crate::vocab::series`]; the file,
//! `diagnostics/evidence.json`, is read and written by [`crate::rundir::evidence`]:
//! ```json
//! {
//!   "series": {
//!     "target.host_cpu_pct":  [[0.0, 12.5], [1.0, 14.0]],
//!     "jvm.threads.blocked": [[5.0, 180]]
//!   },
//!   "findings": [
//!     { "at_s": 31.2, "phase": "step-6", "severity": "critical", "kind": "lock",
//!       "summary": "180 of 200 http-nio threads BLOCKED on com.acme.Inventory …",
//!       "evidence": "diagnostics/dump-031s-step-6.txt" }
//!   ]
//! }
//! ```
//! Both keys are optional; a missing file means "no server-side collectors".
//! A third, `threads`, keeps what each thread dump's threads were doing
//! (and JFR's waits per phase) for the per-phase thread table, see
//! [`ThreadEvidence`].
//!
//! Findings: `severity` is one of `critical`, `high`, `warning`, `info`
//! (others rank lowest, see [`Severity`]); `kind` is a [`FindingKind`] such
//! as `lock`, `pool`, `pinning`, `deadlock`, `cluster` (another tool's own
//! kind is kept as written); `phase` may be left out, the report
//! then places the finding by `at_s`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::vocab::findings::{FindingKind, Severity};
use crate::vocab::growth::PartSeries;
use crate::vocab::samples::Stamped;
use crate::vocab::samples_db::{DbPhase, DbSample};
use crate::vocab::series;
use crate::vocab::threads::{Activity, JfrPhase};

/// Everything seen on the server side during a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ServerEvidence {
    /// The `nmt` probe asked and the JVM answered that Native Memory
    /// Tracking is off (so the verdict says how to turn it on, not to add the probe).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nmt_off: bool,
    /// Name → samples `(seconds since run start, value)`, in time order.
    #[serde(default)]
    pub series: BTreeMap<String, Vec<(f64, f64)>>,
    #[serde(default)]
    pub findings: Vec<FindingRef>,
    #[serde(default, skip_serializing_if = "ThreadEvidence::is_empty")]
    pub threads: ThreadEvidence,
    /// The parts a soak watches grow (heap classes, thread groups, sockets
    /// by state and peer, fd kinds, NMT categories), see [`crate::vocab::growth`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<PartSeries>,
    /// What the database showed per phase (the `postgres` collector).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub database: Vec<DbPhase>,
}

/// Thread dumps and JFR waits as the per-phase thread table reads them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ThreadEvidence {
    /// One per dump with a time, in time order.
    #[serde(default)]
    pub dumps: Vec<DumpSnapshot>,
    /// Per phase some JFR recording covered.
    #[serde(default)]
    pub jfr: Vec<JfrPhase>,
}

impl ThreadEvidence {
    pub fn is_empty(&self) -> bool {
        self.dumps.is_empty() && self.jfr.is_empty()
    }
}

/// One thread dump: when, in which phase, from which file, and what its
/// threads were doing.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DumpSnapshot {
    pub at_s: f64,
    #[serde(default)]
    pub phase: Option<String>,
    pub file: String,
    #[serde(flatten)]
    pub activity: Activity,
}

/// One diagnosis finding, as far as the report needs it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FindingRef {
    /// Seconds since the run start when it was seen.
    pub at_s: f64,
    #[serde(default)]
    pub phase: Option<String>,
    pub severity: Severity,
    pub kind: FindingKind,
    /// One line a human reads ("180 of 200 … BLOCKED on com.acme.Inventory").
    pub summary: String,
    /// Where it came from (a file under `diagnostics/`, thread names…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

impl FindingRef {
    /// Higher is worse.
    pub fn rank(&self) -> u8 {
        self.severity.rank()
    }
}

impl ServerEvidence {
    /// Drop non-finite samples and sort by time: collectors append as they
    /// go, possibly out of order after a reconnect.
    /// Series written under an earlier name take today's name.
    pub fn normalize(&mut self) {
        let renamed: Vec<String> = self
            .series
            .keys()
            .filter(|k| series::current_name(k) != k.as_str())
            .cloned()
            .collect();
        for old in renamed {
            if let Some(pts) = self.series.remove(&old) {
                let new = series::current_name(&old).to_string();
                self.series.entry(new).or_default().extend(pts);
            }
        }
        for pts in self.series.values_mut() {
            pts.retain(|(t, v)| t.is_finite() && v.is_finite());
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        self.series.retain(|_, p| !p.is_empty());
        for p in &mut self.parts {
            p.points.sort_by(|a, b| a.0.total_cmp(&b.0));
            p.instances.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
    }

    /// Fold another source in (e.g. the collectors' series, then the
    /// diagnosis' findings): samples of the same series are merged in time order.
    pub fn merge(&mut self, other: ServerEvidence) {
        self.nmt_off |= other.nmt_off;
        for (k, pts) in other.series {
            self.series.entry(k).or_default().extend(pts);
        }
        self.findings.extend(other.findings);
        self.threads.dumps.extend(other.threads.dumps);
        self.threads.jfr.extend(other.threads.jfr);
        self.parts.extend(other.parts);
        self.database.extend(other.database);
        self.threads.dumps.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
        self.normalize();
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
            && self.findings.is_empty()
            && self.threads.is_empty()
            && self.parts.is_empty()
            && self.database.is_empty()
    }

    /// Anything seen on the target (not only brunt's own `generator.*` figures).
    pub fn has_target_data(&self) -> bool {
        !self.findings.is_empty()
            || self
                .series
                .keys()
                .any(|k| series::lookup(k).is_none_or(|s| s.side == series::Side::Target))
    }

    /// Mean of a series over `[from, to)`; `None` without samples there.
    pub fn mean_in(&self, name: &str, from: f64, to: f64) -> Option<f64> {
        let pts = self.series.get(name)?;
        let (n, sum) = pts
            .iter()
            .filter(|(t, _)| *t >= from && *t < to)
            .fold((0usize, 0.0), |(n, s), (_, v)| (n + 1, s + v));
        (n > 0).then(|| sum / n as f64)
    }

    /// Max of a series over `[from, to)`.
    pub fn max_in(&self, name: &str, from: f64, to: f64) -> Option<f64> {
        self.series
            .get(name)?
            .iter()
            .filter(|(t, _)| *t >= from && *t < to)
            .map(|(_, v)| *v)
            .reduce(f64::max)
    }

    /// The worst finding seen in a phase (by name, or by time when the
    /// finding carries no phase); the earliest among equals.
    pub fn top_finding(&self, phase: &str, from: f64, to: f64) -> Option<&FindingRef> {
        self.top_where(phase, from, to, |_| true)
    }

    /// The worst database finding of a phase that says what waits (a lock
    /// chain, saturated connections), as [`Self::top_finding`] ranks them.
    pub fn top_db_finding(&self, phase: &str, from: f64, to: f64) -> Option<&FindingRef> {
        self.top_where(phase, from, to, |f| {
            f.evidence
                .as_deref()
                .is_some_and(|e| e.ends_with(crate::vocab::files::DB_SAMPLES))
                && (f.kind == FindingKind::Lock || f.kind == "connections")
        })
    }

    /// [`Self::top_finding`], except that with a database finding in the
    /// phase a pool wait the service showed leads: the database finding
    /// then says what its connections waited on (the cause chains the two).
    pub fn top_finding_beside_db(&self, phase: &str, from: f64, to: f64) -> Option<&FindingRef> {
        let pool = || {
            self.top_where(phase, from, to, |f| {
                f.kind == FindingKind::Pool
                    && !f
                        .evidence
                        .as_deref()
                        .is_some_and(|e| e.ends_with(crate::vocab::files::DB_SAMPLES))
            })
        };
        match self.top_db_finding(phase, from, to) {
            Some(_) => pool().or_else(|| self.top_finding(phase, from, to)),
            None => self.top_finding(phase, from, to),
        }
    }

    fn top_where(
        &self,
        phase: &str,
        from: f64,
        to: f64,
        keep: impl Fn(&FindingRef) -> bool,
    ) -> Option<&FindingRef> {
        self.findings
            .iter()
            .filter(|f| keep(f))
            .filter(|f| match &f.phase {
                Some(p) => p == phase,
                None => f.at_s >= from && f.at_s < to,
            })
            .min_by(|a, b| b.rank().cmp(&a.rank()).then(a.at_s.total_cmp(&b.at_s)))
    }
}

/// The diagnosis' view as evidence: findings placed on the run's clock
/// (`start_unix` is the run start), thread states per dump as
/// `jvm.threads.<state>`, heap after each full GC (from JFR) as
/// `jvm.heap_after_gc_bytes` (after a young GC: `jvm.heap_after_young_gc_bytes`),
/// and the parts a soak watches grow with their series (live set, NMT,
/// direct buffers, Metaspace, loaded classes: [`crate::diagnosis::growth`]).
pub fn from_analysis(a: &crate::diagnosis::Analysis, start_unix: f64) -> ServerEvidence {
    let mut out = ServerEvidence::default();
    for f in &a.findings {
        let Some(at) = f.evidence.time_unix else {
            continue;
        };
        out.findings.push(FindingRef {
            at_s: (at - start_unix).max(0.0),
            phase: f.evidence.phase.clone(),
            severity: f.severity.for_evidence(),
            kind: f.detail.kind(),
            summary: f.summary.clone(),
            evidence: Some(f.evidence.file.clone()),
        });
    }
    for d in &a.dumps {
        let Some(at) = d.time_unix else { continue };
        let t = (at - start_unix).max(0.0);
        if let Some(activity) = &d.activity {
            // The name: the run directory may have moved since.
            let file = std::path::Path::new(&d.file)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| d.file.clone());
            // The time and phase are already the artifact name's ask time
            // where a text dump's whole-second header was earlier
            // (`run::retime_dumps`, before this conversion).
            out.threads.dumps.push(DumpSnapshot {
                at_s: t,
                phase: d.phase.clone(),
                file,
                activity: activity.clone(),
            });
        }
        for (state, n) in &d.states {
            out.series
                .entry(format!(
                    "{}{}",
                    series::JVM_THREADS_PREFIX,
                    state.to_ascii_lowercase()
                ))
                .or_default()
                .push((t, *n as f64));
        }
    }
    for h in a.heap.iter().filter(|h| h.when == "After GC") {
        // Only a full (or old) collection's heap is the live set.
        let s = match crate::diagnosis::growth::is_young(h) {
            true => series::JVM_HEAP_AFTER_YOUNG_GC,
            false => series::JVM_HEAP_AFTER_GC,
        };
        out.series
            .entry(s.name.into())
            .or_default()
            .push(((h.unix - start_unix).max(0.0), h.heap_used as f64));
    }
    crate::diagnosis::growth::add_to(a, start_unix, &mut out.series, &mut out.parts);
    out.nmt_off = a
        .memory
        .iter()
        .any(|m| matches!(m.report, crate::diagnosis::growth::MemoryReport::NativeOff));
    out.threads.jfr = a.jfr_phases.clone();
    out.threads.dumps.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    out.normalize();
    out
}

/// The database collector's samples as evidence: its series, its findings
/// (placed in their sample's phase) and what each phase showed.
pub fn from_database(rows: &[Stamped<DbSample>], file: &str) -> ServerEvidence {
    let a = crate::diagnosis::database::analyze(rows);
    let mut out = ServerEvidence {
        series: a.series,
        database: a.phases,
        ..Default::default()
    };
    for f in a.findings {
        out.findings.push(FindingRef {
            at_s: f.at_s,
            phase: Some(f.phase),
            severity: f.severity,
            kind: f.kind,
            summary: f.summary,
            evidence: Some(file.to_string()),
        });
    }
    out.normalize();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_interleaves_samples() {
        let mut a = ServerEvidence::default();
        a.series.insert("x".into(), vec![(0.0, 1.0), (2.0, 3.0)]);
        let mut b = ServerEvidence::default();
        b.series.insert("x".into(), vec![(1.0, 2.0)]);
        b.series.insert("y".into(), vec![(1.0, 9.0)]);
        a.merge(b);
        assert_eq!(a.series["x"], vec![(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)]);
        assert_eq!(a.series["y"], vec![(1.0, 9.0)]);
    }

    #[test]
    fn non_finite_samples_are_dropped() {
        let mut s = ServerEvidence::default();
        s.series
            .insert("a".into(), vec![(1.0, f64::NAN), (f64::INFINITY, 1.0)]);
        s.series
            .insert("b".into(), vec![(1.0, 2.0), (0.5, f64::NAN)]);
        s.normalize();
        assert!(!s.series.contains_key("a"));
        assert_eq!(s.series["b"], vec![(1.0, 2.0)]);
    }
}
