//! A collector thread ("lane"), owning its transport (one SSH session reused
//! for the whole run), scheduling probes (every N s, at phase starts,
//! on p99 triggers, capped by `max`), running JFR recordings, following logs,
//! and keeping the link alive. When the link breaks it reconnects with
//! back-off and records the gap; a probe that fails is logged and retried on
//! its next schedule. Nothing here is ever awaited by the load.
//!
//! Two lanes per run: `samples` (host, heap, log tails: short commands on a
//! fixed beat) and `artifacts` (thread dumps, JFR: each jcmd attach takes
//! 0.3-1 s under load). With one lane, dumps starved the heap series (2
//! samples in 7 s instead of 7); each lane has its own session.
//!
//! This file holds the lane's state, its loop and the scheduling (phases,
//! triggers, probe order). Helpers, each an `impl Lane` block, from the
//! bottom up: `database` (the database probes' placeholders, password
//! input, check before the load and gaps), `link` (reconnects, gaps),
//! `probes` (running one probe on the target), `jfr` (recordings) and
//! `jfr_window` (a recording dumped and
//! analysed window by window). Each calls only those before it, except that
//! `jfr` and `jfr_window` call each other (a stop dumps the last window; a
//! failed window may find the JVM gone).

mod database;
pub(crate) use database::preflight;
mod jfr;
mod jfr_window;
pub use jfr_window::{no_window_reader, WindowFigures, WindowReader};
mod link;
mod probes;

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::sync::Arc;
use std::time::Duration;

use super::definition::{Definition, ProbeDef, ProbeKind};
use super::error::CollectorError;
use super::host::ProcHostParser;
use super::store::{safe, Jsonl, PhaseTracker};
use super::transport::Transport;
use super::{CollectorsSummary, ErrorInfo, GapInfo, StreamInfo};
use crate::profile::collectors::{DatabaseConfig, TargetConfig};
use crate::vocab::samples::{CollectorEvent, EventRow};

/// Messages from the run (via the observer) to the collector thread.
#[derive(Debug)]
pub(crate) enum Event {
    Phase(usize),
    Trigger { second: u64, p99_us: u64 },
    Finish,
}

enum Parser {
    None,
    Host(ProcHostParser),
    Heap,
    Lines,
    Fds,
    Pg,
}

struct JfrActive {
    remote: String,
    t: f64,
    phase: String,
    /// The JVM recording it: a recording lives and dies with its JVM.
    pid: Option<u32>,
    /// Recording in windows: where the next window starts.
    cut: Option<jfr_window::WindowCut>,
}

/// A recording whose JVM went away before `JFR.stop`: nothing of it was
/// written (a `filename=` recording is written at the stop). Becomes a gap
/// when the probe records again or gives up.
struct JfrLost {
    from_t: f64,
    reason: String,
}

struct Probe {
    collector: String,
    def: ProbeDef,
    next_due: Option<f64>,
    forced: Option<&'static str>,
    count: u32,
    stream: Option<(String, Jsonl)>,
    parser: Parser,
    jfr_want: bool,
    jfr: Option<JfrActive>,
    jfr_lost: Option<JfrLost>,
    windows: jfr_window::Windows,
    tail_offset: Option<u64>,
    tail_out: Option<File>,
    disabled: bool,
    /// A database probe failing since (see `database`).
    down: Option<database::ProbeDown>,
}

impl Probe {
    /// A probe's run state; `sample` probes open their stream file now.
    fn new(
        collector: &str,
        p: &ProbeDef,
        diag_dir: &Path,
        port: Option<u16>,
    ) -> Result<Self, CollectorError> {
        let stream = if p.kind == ProbeKind::Sample {
            let name = safe(p.stream.as_deref().unwrap_or(&p.name));
            let file = diag_dir.join(format!("{name}.jsonl"));
            Some((name, Jsonl::open(&file)?))
        } else if p.kind == ProbeKind::Jfr && p.window_s().is_some() {
            // Each window's figures, kept even when its file is pruned.
            let file = diag_dir.join(crate::vocab::files::JFR_WINDOWS);
            let name = crate::vocab::files::JFR_WINDOWS.trim_end_matches(".jsonl");
            Some((name.to_string(), Jsonl::open(&file)?))
        } else {
            None
        };
        let parser = match p.parser.as_deref() {
            Some("proc-host") => Parser::Host(ProcHostParser::new(port)),
            Some("gc-heap-info") => Parser::Heap,
            Some("lines") => Parser::Lines,
            Some("proc-fds") => Parser::Fds,
            Some("pg-json") => Parser::Pg,
            _ => Parser::None,
        };
        Ok(Probe {
            collector: collector.to_string(),
            next_due: p.tune.every.map(|_| 0.0),
            forced: None,
            count: 0,
            stream,
            parser,
            jfr_want: p.kind == ProbeKind::Jfr && p.tune.phase.as_deref().unwrap_or("run") == "run",
            jfr: None,
            jfr_lost: None,
            windows: jfr_window::Windows::default(),
            tail_offset: None,
            tail_out: None,
            disabled: false,
            down: None,
            def: p.clone(),
        })
    }
}

pub(crate) struct LaneSetup {
    /// `samples` or `artifacts` (see the module doc).
    pub lane: &'static str,
    pub transport: Box<dyn Transport>,
    pub tracker: Arc<PhaseTracker>,
    pub diag_dir: PathBuf,
    pub target: TargetConfig,
    pub remote_dir: String,
    pub definitions: Vec<Definition>,
    pub trigger_cooldown: Duration,
    pub max_backoff: Duration,
    pub window_reader: jfr_window::WindowReader,
    /// `collectors.database` and the password read from its variable.
    pub database: Option<(DatabaseConfig, String)>,
}

pub(crate) struct Lane {
    t: Box<dyn Transport>,
    tracker: Arc<PhaseTracker>,
    dir: PathBuf,
    target: TargetConfig,
    remote_dir: String,
    run_tag: String,
    lane: &'static str,
    probes: Vec<Probe>,
    pid: Option<u32>,
    java_major: Option<u32>,
    down_since: Option<f64>,
    down_reason: String,
    missed: u64,
    next_retry: f64,
    backoff: f64,
    max_backoff: f64,
    permanent: Option<String>,
    last_trigger: Option<f64>,
    cooldown: f64,
    last_keepalive: f64,
    events: Option<Jsonl>,
    rep: CollectorsSummary,
    seq: u32,
    /// Last error per probe, to log a repeating failure once.
    last_error: HashMap<String, String>,
    /// The run's messages, polled between probes.
    rx: Option<Receiver<Event>>,
    /// The load has ended: stop JFR, download, return.
    finishing: bool,
    /// A phase started mid-batch: restart the probe order (JFR first).
    rescan: bool,
    /// Reads each JFR window as it arrives (the run's diagnosis).
    window_reader: jfr_window::WindowReader,
    database: Option<(DatabaseConfig, String)>,
}

const MAX_ERRORS_KEPT: usize = 200;
const FIRST_BACKOFF: f64 = 0.5;

impl Lane {
    pub fn new(s: LaneSetup) -> Result<Self, CollectorError> {
        let events = Jsonl::open(&s.diag_dir.join(crate::vocab::files::COLLECTOR_EVENTS))?;
        let mut probes = Vec::new();
        for d in &s.definitions {
            for p in d.probes.iter().filter(|p| p.enabled()) {
                probes.push(Probe::new(&d.name, p, &s.diag_dir, s.target.port)?);
            }
        }
        let run_tag = format!(
            "{}-{}-{}",
            std::process::id(),
            s.tracker.clock().start_unix() as u64,
            s.lane
        );
        Ok(Lane {
            t: s.transport,
            tracker: s.tracker,
            dir: s.diag_dir,
            target: s.target,
            remote_dir: s.remote_dir.trim_end_matches('/').to_string(),
            run_tag,
            lane: s.lane,
            probes,
            pid: None,
            java_major: None,
            down_since: None,
            down_reason: String::new(),
            missed: 0,
            next_retry: 0.0,
            backoff: FIRST_BACKOFF,
            max_backoff: s.max_backoff.as_secs_f64().max(FIRST_BACKOFF),
            permanent: None,
            last_trigger: None,
            cooldown: s.trigger_cooldown.as_secs_f64(),
            last_keepalive: 0.0,
            events: Some(events),
            rep: CollectorsSummary::default(),
            seq: 0,
            last_error: HashMap::new(),
            rx: None,
            finishing: false,
            rescan: false,
            window_reader: s.window_reader,
            database: s.database,
        })
    }

    fn now(&self) -> f64 {
        self.tracker.t()
    }

    fn event(&mut self, event: CollectorEvent) {
        let t = self.now();
        let phase = self.tracker.name();
        if let Some(ev) = self.events.as_mut() {
            // The lane lets `brunt report` rebuild gaps per lane from this file.
            let row = EventRow {
                event,
                lane: self.lane.to_string(),
            };
            if ev.row(t, &phase, row).is_err() {
                self.events = None;
            }
        }
    }

    fn error(&mut self, probe: &str, e: &CollectorError) {
        let t = self.now();
        self.rep.errors_total += 1;
        // A probe failing the same way every second says it once (counted in errors_total).
        let msg = e.to_string();
        if self.last_error.get(probe) == Some(&msg) {
            return;
        }
        self.last_error.insert(probe.to_string(), msg);
        if self.rep.errors.len() < MAX_ERRORS_KEPT {
            self.rep.errors.push(ErrorInfo {
                t,
                probe: probe.to_string(),
                message: e.to_string(),
                kind: e.kind(),
            });
        }
        self.event(CollectorEvent::Error {
            probe: probe.to_string(),
            message: e.to_string(),
            kind: e.kind(),
        });
    }

    /// Run until the load finishes (or the observer goes away).
    pub fn run(mut self, mut rx: Receiver<Event>) -> CollectorsSummary {
        // Tails start at the file's end as of the first contact: do it now,
        // before the load gets going.
        if self.ensure_link() {
            for i in 0..self.probes.len() {
                if self.probes[i].def.kind == ProbeKind::Tail {
                    self.run_probe(i, "start");
                }
            }
        }
        loop {
            let now = self.now();
            let next = self
                .probes
                .iter()
                .filter_map(|p| p.next_due)
                .fold(now + 0.5, f64::min);
            let wait = Duration::from_secs_f64((next - now).clamp(0.005, 0.5));
            match rx.recv_timeout(wait) {
                Ok(ev) => self.handle(ev),
                Err(RecvTimeoutError::Disconnected) => self.finishing = true,
                Err(RecvTimeoutError::Timeout) => {}
            }
            self.rx = Some(rx);
            self.run_due();
            self.keepalive_if_idle();
            let Some(r) = self.rx.take() else { break };
            if self.finishing {
                break;
            }
            rx = r;
        }
        self.shutdown();
        self.rep
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::Phase(i) => self.on_phase(i),
            Event::Trigger { second, p99_us } => self.on_trigger(second, p99_us),
            Event::Finish => self.finishing = true,
        }
    }

    /// Take in everything the run sent, without waiting. Called between
    /// probes: a remote command can take a second (jcmd attaches), and a
    /// phase start or the end of the load must not queue behind a batch.
    fn poll_events(&mut self) {
        let Some(rx) = self.rx.take() else { return };
        loop {
            match rx.try_recv() {
                Ok(ev) => self.handle(ev),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    self.finishing = true;
                    break;
                }
            }
        }
        self.rx = Some(rx);
    }

    fn on_phase(&mut self, index: usize) {
        self.tracker.set_current(index);
        self.rescan = true;
        let name = self
            .tracker
            .phases()
            .get(index)
            .map(|p| p.name.clone())
            .unwrap_or_default();
        let now = self.now();
        let min_window = super::definition::MIN_WINDOW.as_secs_f64();
        for i in 0..self.probes.len() {
            let p = &mut self.probes[i];
            if p.def.kind == ProbeKind::Jfr {
                let target = p.def.tune.phase.clone().unwrap_or_else(|| "run".into());
                // Windows of a run-long recording end at phase starts too:
                // no window mixes two phases (unless one is too short for its own).
                if let Some(c) = p.jfr.as_mut().and_then(|a| a.cut.as_mut()) {
                    if target == "run" && now - c.t >= min_window {
                        c.next = now;
                    }
                }
                if target != "run" {
                    if target == name {
                        p.jfr_want = true;
                    } else if p.jfr.is_some() || p.jfr_lost.is_some() {
                        p.jfr_want = false;
                        self.jfr_stop(i);
                        self.jfr_gap(i, "until its phase ended");
                    }
                }
            } else if p.def.at_phase_start() {
                p.forced = Some("phase-start");
            }
        }
    }

    fn on_trigger(&mut self, second: u64, p99_us: u64) {
        if !self.probes.iter().any(|p| p.def.on_trigger()) {
            return;
        }
        let now = self.now();
        if self.last_trigger.is_some_and(|l| now - l < self.cooldown) {
            return;
        }
        self.last_trigger = Some(now);
        self.rep.triggers += 1;
        self.event(CollectorEvent::Trigger { second, p99_us });
        for p in &mut self.probes {
            // A pending phase-start run keeps its reason: one dump serves both.
            if p.def.on_trigger() && p.def.kind != ProbeKind::Jfr && p.forced.is_none() {
                p.forced = Some("trigger");
            }
        }
    }

    fn run_due(&mut self) {
        while self.run_batch() {}
    }

    /// One pass over the due probes; true = a phase started meanwhile, pass again.
    fn run_batch(&mut self) -> bool {
        // JFR first: a recording should start with its phase, not after the dumps.
        let order: Vec<usize> = (0..self.probes.len())
            .filter(|&i| self.probes[i].def.kind == ProbeKind::Jfr)
            .chain((0..self.probes.len()).filter(|&i| self.probes[i].def.kind != ProbeKind::Jfr))
            .collect();
        for i in order {
            self.poll_events();
            if self.finishing {
                return false;
            }
            if std::mem::take(&mut self.rescan) {
                // A phase just started: begin again with its JFR recording.
                return true;
            }
            let now = self.now();
            let p = &mut self.probes[i];
            if p.disabled {
                continue;
            }
            if p.def.kind == ProbeKind::Jfr {
                if let Some(a) = &p.jfr {
                    // Another probe found the target under a new PID: this JVM is gone.
                    match (a.pid, self.pid) {
                        (Some(old), Some(new)) if old != new => self.jfr_lost(
                            i,
                            format!("the JVM (PID {old}) went away; the target is now PID {new}"),
                        ),
                        _ if p.next_due.is_some_and(|d| d <= now) => self.jfr_watch(i),
                        _ => {}
                    }
                }
                if self.window_due(i, now) {
                    self.jfr_window(i);
                }
                let p = &self.probes[i];
                if p.jfr.is_none() && p.jfr_want {
                    self.jfr_start(i);
                }
                continue;
            }
            let scheduled = p.next_due.is_some_and(|d| d <= now);
            let reason = match (p.forced.take(), scheduled) {
                (Some(r), _) => r,
                (None, true) => "schedule",
                (None, false) => continue,
            };
            if scheduled {
                if let (Some(every), Some(due)) = (p.def.tune.every, p.next_due) {
                    let e = every.as_secs_f64();
                    // Keep to the grid; after a long stall, skip ahead instead of bursting.
                    let mut n = due + e;
                    if n <= now {
                        n = now + e;
                    }
                    p.next_due = Some(n);
                }
            }
            if p.def.tune.max.is_some_and(|m| p.count >= m) {
                continue;
            }
            self.run_probe(i, reason);
        }
        false
    }

    fn shutdown(&mut self) {
        for i in 0..self.probes.len() {
            if self.probes[i].jfr.is_some() {
                self.jfr_stop(i);
            }
            self.jfr_gap(i, "until the load ended");
        }
        let now = self.now();
        for i in 0..self.probes.len() {
            self.close_db_gap(i, now, " (still failing at the end)");
        }
        if let Some(from) = self.down_since.take() {
            self.rep.gaps.push(GapInfo {
                lane: self.lane.to_string(),
                from_t: from,
                to_t: now,
                reason: format!("{} (still down at the end)", self.down_reason),
                missed: self.missed,
                probe: None,
            });
        }
        for p in &self.probes {
            if let Some((name, s)) = &p.stream {
                if !self.rep.streams.iter().any(|x| &x.name == name) {
                    self.rep.streams.push(StreamInfo {
                        name: name.clone(),
                        file: format!("diagnostics/{name}.jsonl"),
                        rows: s.rows,
                    });
                }
            }
        }
    }
}
