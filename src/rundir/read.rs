//! Reading what a run measured back from its directory: per-phase stats from
//! the latency log (streamed, one interval at a time), the per-second rows
//! merged across phases ([`seconds`], the one merge in `metrics`), and the
//! generator's health. `brunt report`,
//! `brunt compare`, `brunt merge` and the soak's drift check all read here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hdrhistogram::Histogram;

use super::{RunMeta, RundirError, LATENCY_LOG, TIME_SERIES};
use crate::metrics::series::{self, Row};
use crate::metrics::{hlog, new_hist, Class, GeneratorHealth, LatencyWindows, Measured, Stats};

/// `timeseries.csv`, every row.
pub fn rows(dir: &Path) -> Result<Vec<Row>, RundirError> {
    rows_noting(dir).map(|(rows, _)| rows)
}

/// `timeseries.csv`, every row, and what was skipped (a cut last line).
pub fn rows_noting(dir: &Path) -> Result<(Vec<Row>, series::Skipped), RundirError> {
    let path = dir.join(TIME_SERIES);
    series::read_noting(&path).map_err(|e| RundirError::Read {
        path,
        message: e.to_string(),
    })
}

/// Rebuild per-phase stats from a run directory's interval log and time
/// series; also returns how long the load ran (the last second measured).
pub fn measured(dir: &Path, meta: &RunMeta) -> Result<(Measured, Duration), RundirError> {
    measured_noting(dir, meta).map(|(m, elapsed, _)| (m, elapsed))
}

/// [`measured`], with a warning per file whose end was cut short (a full
/// disk, a kill mid-write). The run is rebuilt up to the last second that
/// both files hold whole: a second cut in one file is left out of both, so
/// requests and offered still add up.
pub fn measured_noting(
    dir: &Path,
    meta: &RunMeta,
) -> Result<(Measured, Duration, Vec<String>), RundirError> {
    let mut warnings = vec![];
    let (rows, skipped) = rows_noting(dir)?;
    if let Some(w) = skipped.describe(&dir.join(TIME_SERIES).display().to_string()) {
        warnings.push(w);
    }
    // The series' cut second (when its number is there) ends both files.
    let mut limit = skipped.cut_last.and_then(|(_, s)| s).unwrap_or(u64::MAX);
    let mut phases: Vec<Stats> = (0..meta.phases.len()).map(|_| Stats::default()).collect();
    let mut last = 0u64;
    // Streamed: a long soak's log does not fit in memory once decoded.
    let cut = hlog::for_each_noting(&dir.join(LATENCY_LOG), |iv| {
        if iv.start.as_secs() >= limit {
            return;
        }
        last = last.max(iv.start.as_secs() + 1);
        let Some(tag) = iv.tag.as_deref() else {
            return;
        };
        let Some((phase, class, kind)) = hlog::parse_tag(tag) else {
            return;
        };
        let Some(i) = meta.phase_index(phase) else {
            return;
        };
        phases[i].add_hist(class, &iv.hist, kind);
    })?;
    if let Some(c) = cut {
        limit = limit.min(c.second.unwrap_or(u64::MAX));
        warnings.push(c.to_string());
    }
    for r in rows.iter().filter(|r| r.second < limit) {
        last = last.max(r.second + 1);
        if let Some(i) = meta.phase_index(&r.phase) {
            phases[i].offered += r.offered;
            phases[i].dropped += r.dropped;
            phases[i].shed_retry_after += r.shed_retry_after;
        }
    }
    let elapsed = Duration::from_secs(last).min(meta.planned());
    Ok((
        Measured::new(&meta.phases, phases, elapsed),
        elapsed,
        warnings,
    ))
}

pub use crate::metrics::series::{seconds, Second};

/// The generator's health second by second, as the live run saw it.
pub fn generator_health(secs: &[Second]) -> GeneratorHealth {
    let mut g = GeneratorHealth::default();
    for s in secs {
        g.observe(s.t, s.sched_lag_us, s.busy_pct);
    }
    g
}

/// Every class's latency merged, and the answers counted per class.
pub type ClassLatency = (Histogram<u64>, BTreeMap<Class, u64>);

/// Per phase (by name) and for the whole run (`run`): every class's latency
/// histogram merged, and the answers counted per class.
pub fn latency_by_phase(dir: &Path) -> Result<BTreeMap<String, ClassLatency>, RundirError> {
    let mut acc: BTreeMap<String, ClassLatency> = BTreeMap::new();
    hlog::for_each(&dir.join(LATENCY_LOG), |iv| {
        let Some((phase, class, hlog::TagKind::Latency)) =
            iv.tag.as_deref().and_then(hlog::parse_tag)
        else {
            return;
        };
        for key in [phase, "run"] {
            let (h, counts) = acc
                .entry(key.to_string())
                .or_insert_with(|| (new_hist(), BTreeMap::new()));
            let _ = h.add(&iv.hist);
            *counts.entry(class).or_default() += iv.hist.len();
        }
    })?;
    Ok(acc)
}

/// A run directory's latency log as [`LatencyWindows`]: each query streams
/// the log once, using its untagged per-second lines (every answer).
pub struct LogWindows(pub PathBuf);

impl LogWindows {
    pub fn of(dir: &Path) -> Option<LogWindows> {
        let p = dir.join(LATENCY_LOG);
        p.exists().then_some(LogWindows(p))
    }
}

impl LatencyWindows for LogWindows {
    fn merged(&self, windows: &[(f64, f64)]) -> Result<Vec<Histogram<u64>>, String> {
        let mut hs: Vec<_> = windows.iter().map(|_| new_hist()).collect();
        hlog::for_each(&self.0, |iv| {
            if iv.tag.is_some() {
                return;
            }
            let t = iv.start.as_secs_f64();
            for (h, (a, b)) in hs.iter_mut().zip(windows) {
                if t >= *a && t < *b {
                    let _ = h.add(&iv.hist);
                }
            }
        })
        .map_err(|e| e.to_string())?;
        Ok(hs)
    }
}
