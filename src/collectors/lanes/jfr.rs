//! JFR recordings: started with their phase (or the run), watched while they
//! run, stopped at the phase's end or at shutdown, then downloaded and
//! recorded as artifacts.
//!
//! A recording lives in its JVM, and one started with `filename=` is written
//! only when it stops: a JVM that goes away mid-recording (killed, crashed,
//! restarted) takes it along. That is noticed — every [`WATCH_EVERY`] seconds
//! a cheap `/proc` look at the recording's PID, or another probe finding the
//! target under a new PID — and then the loss is an error and a gap (from the
//! recording's start to its restart), no empty file is listed, and the
//! recording starts again on the JVM found next while its phase still runs.
//! A recording in windows (`window:`) is dumped window by window instead
//! (`jfr_window`): its stop dumps the last window and writes nothing else.

use crate::vocab::samples::CollectorEvent;

use super::jfr_window::WindowCut;
use super::probes::{Fill, Taken};
use super::{JfrActive, JfrLost, Lane};
use crate::collectors::error::CollectorError;
use crate::collectors::jvm;
use crate::collectors::store::artifact_name;
use crate::collectors::GapInfo;

/// Seconds between two looks at a recording's JVM (one short command each).
const WATCH_EVERY: f64 = 2.0;

impl Lane {
    pub(super) fn jfr_start(&mut self, i: usize) {
        if self.probes[i].next_due.is_some_and(|d| d > self.now()) {
            return;
        }
        if !self.ensure_link() {
            return;
        }
        let pid = match self.prepare(i) {
            Ok(p) => p,
            Err(CollectorError::Other(m)) if m.is_empty() => return,
            Err(e) => {
                // Retry at the next loop turn, but not in a tight loop.
                self.probes[i].next_due = Some(self.now() + 1.0);
                return self.fail(i, e);
            }
        };
        let windowed = self.window_of(i).is_some();
        let (remote, cmd) = match self.probes[i].def.windows.clone() {
            // Windows: bounded in the JVM, nothing written at the stop.
            Some(w) if windowed => {
                let maxage = self.window_maxage(i);
                let maxage = [("maxage", maxage)];
                let fill = Fill {
                    extra: &maxage,
                    ..Fill::pid(pid, "")
                };
                let cmd = self.render(i, &w.start_command, fill);
                (String::new(), cmd)
            }
            _ => {
                let remote = self.remote_file(i);
                let cmd = self.render(i, &self.probes[i].def.command, Fill::pid(pid, &remote));
                (remote, cmd)
            }
        };
        let t = self.now();
        match self.t.exec(&cmd).and_then(|o| o.check(&cmd)) {
            Ok(_) => {
                let phase = self.probes[i]
                    .def
                    .tune
                    .phase
                    .clone()
                    .unwrap_or_else(|| "run".into());
                self.event(CollectorEvent::JfrStart {
                    remote: remote.clone(),
                    pid,
                    window_s: self.window_of(i),
                });
                let cut = self.window_of(i).map(|w| WindowCut {
                    t,
                    unix: f64::NEG_INFINITY,
                    next: t + w,
                    phase: self.tracker.name(),
                });
                self.probes[i].jfr = Some(JfrActive {
                    remote,
                    t,
                    phase,
                    pid,
                    cut,
                });
                self.probes[i].next_due = Some(t + WATCH_EVERY);
                if let Some(lost) = self.probes[i].jfr_lost.take() {
                    let again = pid.map(|p| format!(" on PID {p}")).unwrap_or_default();
                    let reason = format!("{}; recording again{again} from {t:.1} s", lost.reason);
                    self.push_jfr_gap(i, lost.from_t, t, reason);
                }
            }
            Err(e) => {
                self.probes[i].next_due = Some(self.now() + 2.0);
                self.fail(i, e);
            }
        }
    }

    /// Is the recording's JVM still there?
    pub(super) fn jfr_watch(&mut self, i: usize) {
        self.probes[i].next_due = Some(self.now() + WATCH_EVERY);
        let Some(pid) = self.probes[i].jfr.as_ref().and_then(|a| a.pid) else {
            return;
        };
        if !self.ensure_link() {
            return;
        }
        match jvm::alive(self.t.as_mut(), pid) {
            Ok(true) => {}
            Ok(false) => self.jfr_lost(i, format!("the JVM (PID {pid}) went away")),
            Err(e) => self.fail(i, e),
        }
    }

    /// The recording's JVM is gone, and the recording with it.
    pub(super) fn jfr_lost(&mut self, i: usize, why: String) {
        let Some(active) = self.probes[i].jfr.take() else {
            return;
        };
        if self.pid == active.pid {
            self.pid = None;
            self.java_major = None;
        }
        // Whatever the dead JVM left at the output path is no recording.
        if self.t.is_connected() && !active.remote.is_empty() {
            let _ = self.t.remove(&active.remote);
        }
        let (from_t, reason) = match &active.cut {
            // Windows: only the window in progress is lost.
            Some(c) => (
                c.t,
                format!("JFR window from {:.1} s lost before its dump: {why}", c.t),
            ),
            None => (
                active.t,
                format!(
                    "JFR recording started at {:.1} s lost before JFR.stop (a recording is written only when it stops): {why}",
                    active.t
                ),
            ),
        };
        let name = format!("{}/{}", self.probes[i].collector, self.probes[i].def.name);
        self.error(&name, &CollectorError::Other(reason.clone()));
        self.event(CollectorEvent::JfrLost {
            pid: active.pid,
            from_t,
        });
        self.probes[i].jfr_lost = Some(JfrLost { from_t, reason });
        // Start again as soon as a JVM is found (while its phase runs).
        self.probes[i].next_due = None;
    }

    /// A lost recording that was not started again: its gap runs to now.
    pub(super) fn jfr_gap(&mut self, i: usize, until: &str) {
        if let Some(lost) = self.probes[i].jfr_lost.take() {
            let reason = format!("{}; not recorded again {until}", lost.reason);
            let now = self.now();
            self.push_jfr_gap(i, lost.from_t, now, reason);
        }
    }

    pub(super) fn push_jfr_gap(&mut self, i: usize, from_t: f64, to_t: f64, reason: String) {
        // Whole, so `brunt report` can rebuild the gap from the event log.
        self.event(CollectorEvent::Gap {
            probe: self.probes[i].def.name.clone(),
            from_t: Some(from_t),
            to_t: Some(to_t),
            reason: reason.clone(),
            missed: 1,
        });
        self.rep.gaps.push(GapInfo {
            lane: self.lane.to_string(),
            from_t,
            to_t,
            reason,
            missed: 1,
            probe: Some(self.probes[i].def.name.clone()),
        });
    }

    pub(super) fn jfr_stop(&mut self, i: usize) {
        let Some(active) = self.probes[i].jfr.take() else {
            return;
        };
        if !self.ensure_link() {
            // One immediate retry: the recording is worth it.
            self.next_retry = 0.0;
            if !self.ensure_link() {
                let what = match &active.cut {
                    // Left running in the JVM, but bounded there by maxage/maxsize.
                    Some(c) => format!("the JFR window from {:.1} s", c.t),
                    None => format!("JFR {}", active.remote),
                };
                let e = CollectorError::Other(format!("{what} lost: link down at stop"));
                if let Some(c) = &active.cut {
                    let now = self.now();
                    self.push_jfr_gap(i, c.t, now, e.to_string());
                }
                return self.error("jvm/jfr", &e);
            }
        }
        // Stop it in the JVM that records it, if that is still there.
        if let Some(pid) = active.pid {
            if let Ok(false) = jvm::alive(self.t.as_mut(), pid) {
                self.probes[i].jfr = Some(active);
                return self.jfr_lost(i, format!("the JVM (PID {pid}) went away"));
            }
        }
        if active.cut.is_some() {
            return self.jfr_stop_windows(i, active);
        }
        let pid = active.pid;
        let res = (|| -> Result<(String, u64), CollectorError> {
            let stop = self.probes[i].def.stop_command.clone().unwrap_or_default();
            let cmd = self.render(i, &stop, Fill::pid(pid, &active.remote));
            self.t.exec(&cmd)?.check(&cmd)?;
            let p = &self.probes[i];
            let name = artifact_name(
                &p.def.name,
                active.t,
                &active.phase,
                p.count + 1,
                &p.def.extension,
            );
            let local = self.dir.join(&name);
            let n = self.t.download(&active.remote, &local);
            let rm = self.t.remove(&active.remote);
            let n = n?;
            rm?;
            Ok((name, n))
        })();
        self.probes[i].count += 1;
        let recorded = res.and_then(|(file, bytes)| {
            let taken = Taken {
                file,
                t: active.t,
                phase: active.phase,
                bytes,
                pid,
            };
            self.record_artifact(i, taken, "jfr")
        });
        if let Err(e) = recorded {
            self.fail(i, e);
        }
    }

    /// The end of a windowed recording: its last window, then a stop that
    /// writes nothing (everything was dumped window by window).
    fn jfr_stop_windows(&mut self, i: usize, active: JfrActive) {
        let pid = active.pid;
        let since = active.cut.as_ref().map(|c| self.now() - c.t).unwrap_or(0.0);
        self.probes[i].jfr = Some(active);
        // Under a second since the last dump holds nothing worth a window.
        if since >= 1.0 && !self.jfr_window(i) && self.probes[i].jfr.is_none() {
            return; // the JVM went away: jfr_lost has the gap
        }
        if self.probes[i].jfr.take().is_none() {
            return;
        }
        let stop = self.probes[i]
            .def
            .windows
            .as_ref()
            .map(|w| w.stop_command.clone())
            .unwrap_or_default();
        let cmd = self.render(i, &stop, Fill::pid(pid, ""));
        if let Err(e) = self.t.exec(&cmd).and_then(|o| o.check(&cmd)) {
            self.fail(i, e);
        }
        self.probes[i].count += 1;
    }
}
