//! Reading what a run measured back from its directory: its files mapped
//! onto its phases ([`for_each_part`], streamed one interval at a time, the
//! one loop `brunt report` and `brunt merge` share), per-phase stats from
//! them ([`measured_noting`]), the per-second rows merged across phases
//! ([`seconds`], the one merge in `metrics`), the generator's health, and
//! the latency log as time windows for the soak's drift check
//! ([`LogWindows`], streamed per query).

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
/// both files hold whole (see [`for_each_part`]).
pub fn measured_noting(
    dir: &Path,
    meta: &RunMeta,
) -> Result<(Measured, Duration, Vec<String>), RundirError> {
    let mut phases: Vec<Stats> = (0..meta.phases.len()).map(|_| Stats::default()).collect();
    let read = for_each_part(dir, meta, |_, i, part| part.add_to(&mut phases[i]))?;
    let elapsed = Duration::from_secs(read.last).min(meta.planned());
    Ok((
        Measured::new(&meta.phases, phases, elapsed),
        elapsed,
        read.warnings,
    ))
}

/// What one phase's second holds in a run directory's files.
pub enum SecondPart<'a> {
    /// A tagged line of `latency.hlog`: one class's latency, service time,
    /// request or iteration histogram.
    Hist {
        class: Class,
        kind: hlog::TagKind,
        hist: &'a Histogram<u64>,
    },
    /// A row of `timeseries.csv`.
    Row(&'a Row),
}

impl SecondPart<'_> {
    /// Add it to a phase's stats: histograms by class, and the counts only
    /// the series holds (offered, dropped, shed with `Retry-After`).
    pub fn add_to(&self, st: &mut Stats) {
        match self {
            SecondPart::Hist { class, kind, hist } => st.add_hist(*class, hist, *kind),
            SecondPart::Row(r) => {
                st.offered += r.offered;
                st.dropped += r.dropped;
                st.shed_retry_after += r.shed_retry_after;
                st.refreshes += r.refreshes;
            }
        }
    }
}

/// What [`for_each_part`] read around the parts it handed on.
#[derive(Debug, Default)]
pub struct PartsRead {
    /// One line per file whose end was cut short.
    pub warnings: Vec<String>,
    /// The first line naming no phase of `run.json` (or a tag that is not
    /// brunt's): its file and what it said. Such lines are not handed on.
    pub stray: Option<(PathBuf, String)>,
    /// The second after the last one read (the load's measured length).
    pub last: u64,
}

/// Stream a run directory's per-phase seconds into `add(second, phase index,
/// part)`: each tagged interval of the latency log (one at a time: a long
/// soak's log does not fit in memory once decoded), then each row of the
/// time series. The one place that maps a run's files onto its phases: the
/// rebuilt stats add the parts per phase ([`measured_noting`]), `brunt
/// merge` per shifted second. Read up to the last second both files hold
/// whole: a second cut in one file is left out of both, so requests and
/// offered still add up.
pub fn for_each_part(
    dir: &Path,
    meta: &RunMeta,
    mut add: impl FnMut(u64, usize, SecondPart<'_>),
) -> Result<PartsRead, RundirError> {
    let mut read = PartsRead::default();
    let (rows, skipped) = rows_noting(dir)?;
    if let Some(w) = skipped.describe(&dir.join(TIME_SERIES).display().to_string()) {
        read.warnings.push(w);
    }
    // The series' cut second (when its number is there) ends both files.
    let mut limit = skipped.cut_last.and_then(|(_, s)| s).unwrap_or(u64::MAX);
    let stray = |file: &str, what: String, read: &mut PartsRead| {
        if read.stray.is_none() {
            read.stray = Some((dir.join(file), what));
        }
    };
    let mut hlog_read = PartsRead::default();
    let cut = hlog::for_each_noting(&dir.join(LATENCY_LOG), |iv| {
        let second = iv.start.as_secs();
        if second >= limit {
            return;
        }
        hlog_read.last = hlog_read.last.max(second + 1);
        let Some(tag) = iv.tag.as_deref() else {
            return;
        };
        let Some((phase, class, kind)) = hlog::parse_tag(tag) else {
            stray(LATENCY_LOG, format!("unknown tag `{tag}`"), &mut hlog_read);
            return;
        };
        let Some(i) = meta.phase_index(phase) else {
            stray(
                LATENCY_LOG,
                format!("tag `{tag}` names no phase"),
                &mut hlog_read,
            );
            return;
        };
        let hist = &iv.hist;
        add(second, i, SecondPart::Hist { class, kind, hist });
    })?;
    read.last = hlog_read.last;
    read.stray = hlog_read.stray;
    if let Some(c) = cut {
        limit = limit.min(c.second.unwrap_or(u64::MAX));
        read.warnings.push(c.to_string());
    }
    for r in rows.iter().filter(|r| r.second < limit) {
        read.last = read.last.max(r.second + 1);
        match meta.phase_index(&r.phase) {
            Some(i) => add(r.second, i, SecondPart::Row(r)),
            None => {
                let what = format!("phase `{}` is not in run.json", r.phase);
                stray(TIME_SERIES, what, &mut read);
            }
        }
    }
    Ok(read)
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
