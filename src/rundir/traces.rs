//! `traces.jsonl`: the requests sent with a trace context (`target.trace`),
//! one line per phase and second that had any (`{"second", "phase", "sent",
//! "slowest"}`), appended and flushed as the run goes. `slowest` holds the
//! second's slowest traced request first, then those of the second that
//! entered the phase's running list of the [`KEEP`] slowest: so the file
//! stays small (a new entry is rare once the list is full) and the whole
//! file read back gives each phase's list exactly ([`read`]), the slowest
//! per second for the charts, and a merge of shards (their lines together).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{LazyLog, RundirError, TRACES_LOG};
use crate::metrics::traces::{slowest_rows, Hit, TraceRow, Traced, KEEP};
use crate::vocab::Percent;

/// `target.trace` as `run.json` records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceMeta {
    pub header: String,
    pub sample: Percent,
    /// The link template, `{trace_id}` in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// One line of `traces.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TracesLine {
    pub second: u64,
    pub phase: String,
    /// Traced answers of this phase in this second.
    pub sent: u64,
    /// The second's slowest first, then the others that entered the phase's list.
    pub slowest: Vec<TraceRow>,
}

/// The writer, created with the first line (a run without traces has no file).
pub struct TracesLog {
    log: LazyLog,
    /// The mix's request names, from `run.json` (read with the first line).
    names: Vec<String>,
}

impl TracesLog {
    pub fn new(dir: &Path) -> TracesLog {
        TracesLog {
            log: LazyLog::new(dir.join(TRACES_LOG)),
            names: Vec::new(),
        }
    }

    /// Append `phase`'s traced requests of `second` (`window`), `entering`
    /// being those its list takes ([`Traced::entering`]); nothing when none
    /// was traced.
    pub fn push(
        &mut self,
        second: u64,
        phase: &str,
        window: &Traced,
        entering: &[Hit],
    ) -> Result<(), RundirError> {
        let Some(worst) = window.slowest().first().copied() else {
            return Ok(());
        };
        if !self.log.started() {
            if let Some(dir) = self.log.path().parent() {
                self.names = super::read_meta(dir)
                    .map(|m| m.requests)
                    .unwrap_or_default();
            }
        }
        let mut slowest = vec![TraceRow::of(&worst, &self.names)];
        for h in entering.iter().filter(|h| **h != worst) {
            slowest.push(TraceRow::of(h, &self.names));
        }
        self.log.push(&TracesLine {
            second,
            phase: phase.to_string(),
            sent: window.sent,
            slowest,
        })
    }
}

/// The traced requests of a run, as the judge and the report take them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceData {
    pub sent: u64,
    /// The [`KEEP`] slowest per phase, slowest first.
    pub slowest_by_phase: BTreeMap<String, Vec<TraceRow>>,
    /// The slowest traced request of each second (every phase), by second.
    pub worst_by_second: Vec<(u64, TraceRow)>,
}

/// The lines of `traces.jsonl` (a line cut short is skipped); empty
/// without the file.
pub fn lines(dir: &Path) -> Vec<TracesLine> {
    let Ok(text) = std::fs::read_to_string(dir.join(TRACES_LOG)) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Append `lines` to `dir`'s `traces.jsonl` as they are (`brunt merge`).
pub fn append(dir: &Path, lines: &[TracesLine]) -> Result<(), RundirError> {
    let path = dir.join(TRACES_LOG);
    let failed = |source| RundirError::Write {
        path: path.clone(),
        source,
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(failed)?;
    let mut text = String::new();
    for l in lines {
        text.push_str(&serde_json::to_string(l).map_err(|e| failed(std::io::Error::other(e)))?);
        text.push('\n');
    }
    f.write_all(text.as_bytes()).map_err(failed)
}

/// The run's traced requests; `None` when none was traced.
pub fn read(dir: &Path) -> Option<TraceData> {
    let lines = lines(dir);
    if lines.is_empty() {
        return None;
    }
    let mut d = TraceData::default();
    let mut phases: BTreeMap<String, Vec<TraceRow>> = BTreeMap::new();
    let mut seconds: BTreeMap<u64, TraceRow> = BTreeMap::new();
    for l in lines {
        d.sent += l.sent;
        if let Some(w) = l.slowest.first() {
            let slot = seconds.entry(l.second).or_insert_with(|| w.clone());
            if w.latency_ms > slot.latency_ms {
                *slot = w.clone();
            }
        }
        let list = phases.entry(l.phase).or_default();
        list.extend(l.slowest);
        if list.len() > 4 * KEEP {
            *list = slowest_rows(std::mem::take(list));
        }
    }
    d.slowest_by_phase = phases
        .into_iter()
        .map(|(p, rows)| (p, slowest_rows(rows)))
        .collect();
    d.worst_by_second = seconds.into_iter().collect();
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::traces::test_hit as hit;

    #[test]
    fn lines_written_give_each_phases_slowest_and_the_worst_per_second() {
        let d = tempfile::tempdir().expect("tempdir");
        let mut log = TracesLog::new(d.path());
        let mut total = Traced::default();
        log.push(0, "main", &total, &[]).expect("nothing");
        assert!(!d.path().join(TRACES_LOG).exists(), "no traces, no file");
        for second in 0..30u64 {
            let mut w = Traced::default();
            for k in 0..20u64 {
                let id = (second * 100 + k + 1) as u128;
                // Second 7 holds the slowest of the run.
                let ms = if second == 7 { 1000 + k } else { k + second };
                w.offer(hit(id, ms));
            }
            let entering = w.entering(&total);
            log.push(second, "main", &w, &entering).expect("push");
            total.merge(&w);
        }
        let text = std::fs::read_to_string(d.path().join(TRACES_LOG)).expect("file");
        assert!(text.lines().count() == 30);
        let data = read(d.path()).expect("traces");
        assert_eq!(data.sent, 600);
        let want: Vec<String> = total
            .slowest()
            .iter()
            .map(|h| crate::metrics::traces::trace_hex(h.trace))
            .collect();
        let got: Vec<String> = data.slowest_by_phase["main"]
            .iter()
            .map(|r| r.trace_id.clone())
            .collect();
        assert_eq!(got, want);
        assert_eq!(data.worst_by_second.len(), 30);
        assert_eq!(data.worst_by_second[7].1.latency_ms, 1019.0);
        assert_eq!(data.worst_by_second[3].1.latency_ms, 22.0);
        assert_eq!(data.slowest_by_phase["main"][0].at_s, 1.5);
    }
}
