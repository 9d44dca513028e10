//! Where collector output goes in the run directory: one `.jsonl` file per
//! sample stream under `diagnostics/` (each row stamped with `t` = seconds
//! since the run start, the run's clock, and the `phase` it was taken in),
//! raw artifacts named `<probe>-t<seconds>-<phase>-<n>.<ext>`, and the phase
//! tracker shared by the collector threads.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use serde::Serialize;

use super::error::CollectorError;
use crate::vocab::samples::Stamped;
use crate::vocab::{PhaseInfo, RunClock};

/// Which phase is running, readable from any collector thread.
#[derive(Debug)]
pub struct PhaseTracker {
    clock: RunClock,
    phases: Vec<PhaseInfo>,
    /// Index set by `phase_started`; -1 = none announced yet.
    current: AtomicI64,
    finished: AtomicBool,
}

impl PhaseTracker {
    pub fn new(clock: RunClock, phases: Vec<PhaseInfo>) -> Arc<Self> {
        Arc::new(PhaseTracker {
            clock,
            phases,
            current: AtomicI64::new(-1),
            finished: AtomicBool::new(false),
        })
    }
    pub fn clock(&self) -> &RunClock {
        &self.clock
    }
    pub fn phases(&self) -> &[PhaseInfo] {
        &self.phases
    }
    /// Seconds since the run start.
    pub fn t(&self) -> f64 {
        self.clock.elapsed().as_secs_f64()
    }
    pub fn set_current(&self, index: usize) {
        self.current.store(index as i64, Ordering::Relaxed);
    }
    pub fn set_finished(&self) {
        self.finished.store(true, Ordering::Relaxed);
    }
    /// The phase running now: the announced one, else the one the schedule
    /// says; `pre` before the first, `post` after the load ended.
    pub fn name(&self) -> String {
        if self.finished.load(Ordering::Relaxed) {
            return "post".into();
        }
        let cur = self.current.load(Ordering::Relaxed);
        if cur >= 0 {
            if let Some(p) = self.phases.get(cur as usize) {
                return p.name.clone();
            }
        }
        let el = self.clock.elapsed();
        self.phases
            .iter()
            .find(|p| p.start <= el && el < p.start + p.duration)
            .map(|p| p.name.clone())
            .unwrap_or_else(|| "pre".into())
    }
}

/// An append-only JSON-lines file, flushed per row so a killed run keeps its data.
pub struct Jsonl {
    path: PathBuf,
    w: BufWriter<File>,
    pub rows: u64,
}

impl Jsonl {
    pub fn open(path: &Path) -> Result<Self, CollectorError> {
        let f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| CollectorError::io(path, e))?;
        Ok(Jsonl {
            path: path.to_path_buf(),
            w: BufWriter::new(f),
            rows: 0,
        })
    }

    /// Write a typed row (a [`crate::vocab::samples`] row) as
    /// `{"t":…, "phase":…, …its fields}`, `t` rounded to the millisecond.
    pub fn row<R: Serialize>(&mut self, t: f64, phase: &str, row: R) -> Result<(), CollectorError> {
        let stamped = Stamped {
            t: (t * 1000.0).round() / 1000.0,
            phase: phase.to_string(),
            row,
        };
        // Through a JSON value: its keys come out sorted, as the files have always had them.
        let line = serde_json::to_value(&stamped)
            .map_err(|e| CollectorError::Other(format!("a sample row: {e}")))?
            .to_string();
        let res = writeln!(self.w, "{line}").and_then(|_| self.w.flush());
        res.map_err(|e| CollectorError::io(&self.path, e))?;
        self.rows += 1;
        Ok(())
    }
}

pub use crate::vocab::files::{artifact_name, artifact_time, safe};
