//! Windowed JFR recordings (`window:` on a jfr probe), for runs too long for
//! one recording: the recording is bounded in the JVM (`maxage`, `maxsize`,
//! on disk) and every window the chunks since the previous window are
//! dumped, downloaded, removed on the target and analysed at once. Each
//! window's figures go to `diagnostics/jfr-windows.jsonl` (kept for every
//! window), its file to `diagnostics/` (at most `keep_windows`, the oldest
//! pruned first): disk use stays bounded on both sides however long the run.
//!
//! A dump repeats at most the chunk the previous window ended in (`begin` is
//! chunk-granular); the figures count only events that ended after the
//! previous window's last chunk (the target's own clock), so nothing is
//! counted twice. A window that fails (dump error, empty or unreadable file)
//! is an error and a gap; a JVM that goes away loses only the window in
//! progress ([`Lane::jfr_lost`]).
//!
//! Reading a window is the diagnosis's craft, not the collectors': the run
//! hands its JFR reader in as a [`WindowReader`], so collectors import no
//! parser and data still flows collectors → diagnosis.

use std::path::Path;

use crate::vocab::samples::CollectorEvent;

use super::probes::{Fill, Taken};
use super::Lane;
use crate::collectors::error::CollectorError;
use crate::collectors::jvm;
use crate::collectors::store::artifact_name;
use crate::vocab::jfr::{JfrTotals, JfrWindowRow};

/// What a window's reader found: the per-window figures, and what the cut
/// of the next window needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WindowFigures {
    /// Complete chunks read (0: nothing usable).
    pub chunks: usize,
    /// Parts of the file that could not be read.
    pub warnings: Vec<String>,
    /// Target clock (Unix s) of the last chunk's end.
    pub end_unix: Option<f64>,
    /// Events that ended after the cut (Unix s) passed to the reader.
    pub totals: JfrTotals,
}

/// Reads one window file, counting events that ended after the cut (Unix s).
pub type WindowReader = fn(&Path, f64) -> Result<WindowFigures, String>;

/// The reader when none was handed in (the collectors used on their own):
/// every window is an error saying so, never figures made up.
pub fn no_window_reader(_: &Path, _: f64) -> Result<WindowFigures, String> {
    Err("no JFR reader was given to the collectors (collectors::start_with)".into())
}

/// Window state of a running recording.
#[derive(Debug, Clone)]
pub(super) struct WindowCut {
    /// Run clock of the previous cut (the recording's start, then each dump).
    pub t: f64,
    /// Target clock (Unix s) of the end of the last chunk counted.
    pub unix: f64,
    /// Run clock of the next dump.
    pub next: f64,
    /// The load phase when the window started (names its file and row).
    pub phase: String,
}

/// The probe's windows so far.
#[derive(Debug, Default)]
pub(super) struct Windows {
    /// Windows dumped (numbers the files).
    pub n: u32,
    /// Window files in `diagnostics/`, oldest first.
    pub kept: std::collections::VecDeque<String>,
}

impl Lane {
    /// The window length of probe `i`, when it records in windows.
    pub(super) fn window_of(&self, i: usize) -> Option<f64> {
        self.probes[i].def.window_s()
    }

    /// `{maxage}` of the bounded recording: two windows, so a dump that runs
    /// late still finds everything since the previous one.
    pub(super) fn window_maxage(&self, i: usize) -> String {
        let w = self.window_of(i).unwrap_or(600.0);
        format!("{}s", (2.0 * w).ceil() as u64 + 60)
    }

    /// Is a window of a running recording due?
    pub(super) fn window_due(&self, i: usize, now: f64) -> bool {
        self.probes[i]
            .jfr
            .as_ref()
            .and_then(|a| a.cut.as_ref())
            .is_some_and(|c| c.next <= now)
    }

    /// Dump, fetch, analyse and keep one window of recording `i`. Returns
    /// false when the window failed (recorded as an error and a gap).
    pub(super) fn jfr_window(&mut self, i: usize) -> bool {
        let Some((pid, started, cut)) = self.probes[i]
            .jfr
            .as_ref()
            .and_then(|a| Some((a.pid, a.t, a.cut.clone()?)))
        else {
            return false;
        };
        let phase = cut.phase.clone();
        let window = self.window_of(i).unwrap_or(600.0);
        let now = self.now();
        if let Some(c) = self.probes[i].jfr.as_mut().and_then(|a| a.cut.as_mut()) {
            // On the grid; after a stall, a full window from now.
            c.next = if c.next + window > now {
                c.next + window
            } else {
                now + window
            };
        }
        // `begin` is on the target's clock, relative to its now: no clock
        // sync needed. Just after the previous cut leaves out the chunks the
        // previous dump ended (the recording's first window takes everything).
        let since = now - cut.t;
        let back = if cut.t > started {
            ((since - 1.0).floor() as i64).max(1)
        } else {
            since.ceil() as i64 + 60
        };
        let Some(template) = self.probes[i]
            .def
            .windows
            .as_ref()
            .map(|w| w.dump_command.clone())
        else {
            return false;
        };
        let remote = self.remote_file(i);
        let begin = [("begin", format!("-{back}s"))];
        let fill = Fill {
            extra: &begin,
            ..Fill::pid(pid, &remote)
        };
        let cmd = self.render(i, &template, fill);
        let n = self.probes[i].windows.n + 1;
        let name = format!("{}-window", self.probes[i].def.name);
        let file = artifact_name(&name, cut.t, &phase, n, &self.probes[i].def.extension);
        let local = self.dir.join(&file);
        let fetched = (|| -> Result<u64, CollectorError> {
            let dumped = self.t.exec(&cmd).and_then(|o| o.check(&cmd));
            let got = dumped.and_then(|_| self.t.download(&remote, &local));
            // Removed whatever happened: the target's disk stays bounded.
            let rm = self.t.remove(&remote);
            let bytes = got?;
            rm?;
            Ok(bytes)
        })();
        let to_t = self.now();
        let analysed = fetched.and_then(|bytes| {
            if bytes == 0 {
                return Err(CollectorError::Other("the window came back empty".into()));
            }
            let rec = (self.window_reader)(&local, cut.unix)
                .map_err(|e| CollectorError::Other(format!("the window is unreadable: {e}")))?;
            if rec.chunks == 0 {
                return Err(CollectorError::Other(
                    "the window holds no complete chunk".into(),
                ));
            }
            Ok((bytes, rec))
        });
        self.probes[i].windows.n = n;
        let (bytes, rec) = match analysed {
            Ok(x) => x,
            Err(e) => {
                let _ = std::fs::remove_file(&local);
                let reason = format!("JFR window {n} ({:.1}–{to_t:.1} s) lost: {e}", cut.t);
                // A JVM gone takes the window in progress along: jfr_lost's gap.
                if let Some(p) = pid {
                    if self.t.is_connected() && matches!(jvm::alive(self.t.as_mut(), p), Ok(false))
                    {
                        self.jfr_lost(i, format!("the JVM (PID {p}) went away"));
                        return false;
                    }
                }
                if e.is_link() {
                    // The link's own gap covers it; the next window reaches back.
                    self.fail(i, e);
                } else {
                    self.fail(i, CollectorError::Other(reason.clone()));
                    self.push_jfr_gap(i, cut.t, to_t, reason);
                    // Counting starts again after this window: its span is a gap.
                    self.advance_cut(i, to_t, None);
                }
                return false;
            }
        };
        if !rec.warnings.is_empty() {
            let e = CollectorError::Other(format!(
                "JFR window {n}: part of it unreadable ({}): its figures are short",
                rec.warnings.join("; ")
            ));
            let who = format!("{}/{}", self.probes[i].collector, self.probes[i].def.name);
            self.error(&who, &e);
        }
        let row = JfrWindowRow {
            n,
            pid,
            warnings: rec.warnings.len(),
            ..JfrWindowRow::new(
                cut.t,
                to_t,
                format!("diagnostics/{file}"),
                bytes,
                &rec.totals,
            )
        };
        let written = match self.probes[i].stream.as_mut() {
            Some((_, s)) => s.row(to_t, &phase, &row),
            None => Ok(()),
        };
        if let Err(e) = written {
            self.fail(i, e);
        }
        let end_unix = rec.end_unix;
        self.advance_cut(i, to_t, end_unix);
        let taken = Taken {
            file: file.clone(),
            t: cut.t,
            phase,
            bytes,
            pid,
        };
        match self.record_artifact(i, taken, "jfr-window") {
            Ok(()) => {
                self.succeeded(i);
                self.prune_windows(i, file);
                true
            }
            Err(e) => {
                self.fail(i, e);
                false
            }
        }
    }

    fn advance_cut(&mut self, i: usize, t: f64, end_unix: Option<f64>) {
        let phase = self.tracker.name();
        if let Some(c) = self.probes[i].jfr.as_mut().and_then(|a| a.cut.as_mut()) {
            c.t = t;
            c.phase = phase;
            if let Some(u) = end_unix.filter(|u| u.is_finite()) {
                c.unix = c.unix.max(u);
            }
        }
    }

    /// Keep at most `keep_windows` window files; the oldest go (their
    /// figures stay in `jfr-windows.jsonl`).
    fn prune_windows(&mut self, i: usize, file: String) {
        let keep = self.probes[i]
            .def
            .tune
            .keep_windows
            .unwrap_or(crate::collectors::definition::DEFAULT_KEEP_WINDOWS)
            as usize;
        self.probes[i].windows.kept.push_back(file);
        while self.probes[i].windows.kept.len() > keep {
            let Some(old) = self.probes[i].windows.kept.pop_front() else {
                break;
            };
            let _ = std::fs::remove_file(self.dir.join(&old));
            let listed = format!("diagnostics/{old}");
            self.rep.artifacts.retain(|a| a.file != listed);
            self.event(CollectorEvent::ArtifactPruned { file: listed });
        }
    }
}
