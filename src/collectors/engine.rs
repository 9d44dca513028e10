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

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::config::TargetConfig;
use super::definition::{render, Definition, PidUse, ProbeDef, ProbeKind};
use super::error::CollectorError;
use super::host::ProcHostParser;
use super::jvm;
use super::quote::sh_quote;
use super::store::{artifact_name, safe, Jsonl, PhaseTracker};
use super::transport::Transport;
use super::{ArtifactInfo, ErrorInfo, GapInfo, PidInfo, StreamInfo};

/// Messages from the run (via the observer) to the collector thread.
#[derive(Debug)]
pub(crate) enum Event {
    Phase(usize),
    Trigger { second: u64, p99_us: u64 },
    Finish,
}

/// What the collector thread hands back at the end.
#[derive(Debug, Default)]
pub(crate) struct EngineReport {
    pub streams: Vec<StreamInfo>,
    pub artifacts: Vec<ArtifactInfo>,
    pub gaps: Vec<GapInfo>,
    pub errors: Vec<ErrorInfo>,
    pub errors_total: u64,
    pub target_pids: Vec<PidInfo>,
    pub triggers: u64,
}

enum Parser {
    None,
    Host(ProcHostParser),
    Heap,
    Lines,
}

struct JfrActive {
    remote: String,
    t: f64,
    phase: String,
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
    tail_offset: Option<u64>,
    tail_out: Option<File>,
    disabled: bool,
}

pub(crate) struct EngineSetup {
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
}

pub(crate) struct Engine {
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
    rep: EngineReport,
    seq: u32,
    /// Last error per probe, to log a repeating failure once.
    last_error: HashMap<String, String>,
    /// The run's messages, polled between probes.
    rx: Option<Receiver<Event>>,
    /// The load has ended: stop JFR, download, return.
    finishing: bool,
    /// A phase started mid-batch: restart the probe order (JFR first).
    rescan: bool,
}

const MAX_ERRORS_KEPT: usize = 200;
const FIRST_BACKOFF: f64 = 0.5;

impl Engine {
    pub fn new(s: EngineSetup) -> Result<Self, CollectorError> {
        let events = Jsonl::open(&s.diag_dir.join("collectors.jsonl"))?;
        let mut probes = Vec::new();
        for d in &s.definitions {
            for p in d.probes.iter().filter(|p| p.enabled) {
                let stream = if p.kind == ProbeKind::Sample {
                    let name = safe(p.stream.as_deref().unwrap_or(&p.name));
                    let file = s.diag_dir.join(format!("{name}.jsonl"));
                    Some((name, Jsonl::open(&file)?))
                } else {
                    None
                };
                let parser = match p.parser.as_deref() {
                    Some("proc-host") => Parser::Host(ProcHostParser::new(s.target.port)),
                    Some("gc-heap-info") => Parser::Heap,
                    Some("lines") => Parser::Lines,
                    _ => Parser::None,
                };
                probes.push(Probe {
                    collector: d.name.clone(),
                    next_due: p.every.map(|_| 0.0),
                    forced: None,
                    count: 0,
                    stream,
                    parser,
                    jfr_want: p.kind == ProbeKind::Jfr
                        && p.phase.as_deref().unwrap_or("run") == "run",
                    jfr: None,
                    tail_offset: None,
                    tail_out: None,
                    disabled: false,
                    def: p.clone(),
                });
            }
        }
        let run_tag = format!(
            "{}-{}-{}",
            std::process::id(),
            s.tracker.clock().start_unix() as u64,
            s.lane
        );
        Ok(Engine {
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
            rep: EngineReport::default(),
            seq: 0,
            last_error: HashMap::new(),
            rx: None,
            finishing: false,
            rescan: false,
        })
    }

    fn now(&self) -> f64 {
        self.tracker.t()
    }

    fn event(&mut self, kind: &str, fields: Value) {
        let t = self.now();
        let phase = self.tracker.name();
        if let (Some(ev), Value::Object(mut m)) = (self.events.as_mut(), fields) {
            m.insert("event".into(), json!(kind));
            if ev.row(t, &phase, m).is_err() {
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
        eprintln!("brunt: collector {probe}: {e}");
        if self.rep.errors.len() < MAX_ERRORS_KEPT {
            self.rep.errors.push(ErrorInfo {
                t,
                probe: probe.to_string(),
                message: e.to_string(),
            });
        }
        self.event("error", json!({"probe": probe, "message": e.to_string()}));
    }

    /// Run until the load finishes (or the observer goes away).
    pub fn run(mut self, mut rx: Receiver<Event>) -> EngineReport {
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
        for i in 0..self.probes.len() {
            let p = &mut self.probes[i];
            if p.def.kind == ProbeKind::Jfr {
                let target = p.def.phase.clone().unwrap_or_else(|| "run".into());
                if target != "run" {
                    if target == name {
                        p.jfr_want = true;
                    } else if p.jfr.is_some() {
                        p.jfr_want = false;
                        self.jfr_stop(i);
                    }
                }
            } else if p.def.at_phase_start {
                p.forced = Some("phase-start");
            }
        }
    }

    fn on_trigger(&mut self, second: u64, p99_us: u64) {
        if !self.probes.iter().any(|p| p.def.on_trigger) {
            return;
        }
        let now = self.now();
        if self.last_trigger.is_some_and(|l| now - l < self.cooldown) {
            return;
        }
        self.last_trigger = Some(now);
        self.rep.triggers += 1;
        self.event("trigger", json!({"second": second, "p99_us": p99_us}));
        for p in &mut self.probes {
            // A pending phase-start run keeps its reason: one dump serves both.
            if p.def.on_trigger && p.def.kind != ProbeKind::Jfr && p.forced.is_none() {
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
                if p.jfr_want && p.jfr.is_none() {
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
                if let (Some(every), Some(due)) = (p.def.every, p.next_due) {
                    let e = every.as_secs_f64();
                    // Keep to the grid; after a long stall, skip ahead instead of bursting.
                    let mut n = due + e;
                    if n <= now {
                        n = now + e;
                    }
                    p.next_due = Some(n);
                }
            }
            if p.def.max.is_some_and(|m| p.count >= m) {
                continue;
            }
            self.run_probe(i, reason);
        }
        false
    }

    /// Is the link up? Reconnects (respecting back-off) when it is not.
    fn ensure_link(&mut self) -> bool {
        if self.t.is_connected() {
            return true;
        }
        if self.permanent.is_some() {
            return false;
        }
        let now = self.now();
        if now < self.next_retry {
            return false;
        }
        match self.t.reconnect() {
            Ok(()) => {
                self.close_gap(now);
                true
            }
            Err(e) => {
                if self.down_since.is_none() {
                    self.down_since = Some(now);
                    self.down_reason = e.to_string();
                }
                if e.is_permanent() {
                    self.permanent = Some(e.to_string());
                    self.error("transport", &e);
                } else {
                    if self.backoff <= FIRST_BACKOFF {
                        self.error("transport", &e);
                    }
                    self.next_retry = now + self.backoff;
                    self.backoff = (self.backoff * 2.0).min(self.max_backoff);
                }
                false
            }
        }
    }

    /// The link works again: record the gap it left.
    fn close_gap(&mut self, now: f64) {
        if let Some(from) = self.down_since.take() {
            let gap = GapInfo {
                lane: self.lane.to_string(),
                from_t: from,
                to_t: now,
                reason: std::mem::take(&mut self.down_reason),
                missed: std::mem::take(&mut self.missed),
            };
            eprintln!(
                "brunt: collectors reconnected to {} after {:.1}s",
                self.t.describe(),
                now - from
            );
            self.event(
                "reconnected",
                json!({"from_t": gap.from_t, "missed": gap.missed}),
            );
            self.rep.gaps.push(gap);
        }
        self.backoff = FIRST_BACKOFF;
    }

    fn link_broke(&mut self, e: &CollectorError) {
        let now = self.now();
        if self.down_since.is_none() {
            self.down_since = Some(now);
            self.down_reason = e.to_string();
            self.event("link-down", json!({"message": e.to_string()}));
        }
        self.next_retry = now;
        self.backoff = FIRST_BACKOFF;
    }

    /// Handle a probe failure: link errors start a gap; a failed command on
    /// the target process makes us look for the PID again (it may have restarted).
    fn fail(&mut self, i: usize, e: CollectorError) {
        let name = format!("{}/{}", self.probes[i].collector, self.probes[i].def.name);
        if e.is_link() {
            self.link_broke(&e);
            self.missed += 1;
        } else if self.probes[i].def.uses("pid") {
            self.pid = None;
            self.java_major = None;
        }
        self.error(&name, &e);
    }

    fn succeeded(&mut self, i: usize) {
        // Transports without a session (openssh) come back without a reconnect call.
        if self.down_since.is_some() {
            let t = self.now();
            self.close_gap(t);
        }
        let name = format!("{}/{}", self.probes[i].collector, self.probes[i].def.name);
        self.last_error.remove(&name);
    }

    fn ensure_pid(&mut self) -> Result<Option<u32>, CollectorError> {
        if self.pid.is_some() {
            return Ok(self.pid);
        }
        let found = jvm::find_pid(self.t.as_mut(), &self.target)?;
        if let Some(pid) = found {
            let t = self.now();
            self.pid = Some(pid);
            self.rep.target_pids.push(PidInfo {
                t,
                pid,
                java_major: None,
            });
            self.event("target-pid", json!({"pid": pid}));
        }
        Ok(found)
    }

    fn ensure_java(&mut self, pid: u32) -> Result<Option<u32>, CollectorError> {
        if self.java_major.is_none() {
            self.java_major = jvm::java_major(self.t.as_mut(), &self.target.jcmd, pid)?;
            if let Some(last) = self.rep.target_pids.last_mut() {
                if last.pid == pid {
                    last.java_major = self.java_major;
                }
            }
        }
        Ok(self.java_major)
    }

    /// Values for a probe's placeholders; Err(reason) = skip this run.
    fn prepare(&mut self, i: usize) -> Result<Option<u32>, CollectorError> {
        let needs_pid = self.probes[i].def.uses("pid");
        let pid = if needs_pid { self.ensure_pid()? } else { None };
        if needs_pid && pid.is_none() && self.probes[i].def.pid == PidUse::Required {
            return Err(CollectorError::Other("target process not found".into()));
        }
        if let (Some(min), Some(pid)) = (self.probes[i].def.min_java, pid) {
            let v = self.ensure_java(pid)?;
            if v.is_none_or(|v| v < min) {
                // Not an error: this JVM simply lacks the feature.
                self.probes[i].disabled = true;
                let name = self.probes[i].def.name.clone();
                self.event(
                    "probe-disabled",
                    json!({"probe": name, "java_major": v, "min_java": min}),
                );
                return Err(CollectorError::Other(String::new()));
            }
        }
        Ok(pid)
    }

    fn render(
        &self,
        i: usize,
        template: &str,
        pid: Option<u32>,
        remote: &str,
        offset: u64,
    ) -> String {
        let d = &self.probes[i].def;
        let jcmd = self.target.jcmd.clone();
        let port = self.target.port;
        render(template, &|k| match k {
            "pid" => pid.map(|p| p.to_string()),
            "port" => port.map(|p| p.to_string()),
            "jcmd" => Some(jcmd.clone()),
            "remote_file" => Some(remote.to_string()),
            "settings" => d.settings.clone(),
            "file" => d.file.clone(),
            "offset" => Some(offset.to_string()),
            _ => None,
        })
    }

    fn remote_file(&mut self, i: usize) -> String {
        self.seq += 1;
        let p = &self.probes[i].def;
        format!(
            "{}/brunt-{}-{}-{}.{}",
            self.remote_dir,
            self.run_tag,
            safe(&p.name),
            self.seq,
            p.extension
        )
    }

    fn run_probe(&mut self, i: usize, reason: &'static str) {
        if !self.ensure_link() {
            self.missed += 1;
            return;
        }
        let pid = match self.prepare(i) {
            Ok(p) => p,
            Err(CollectorError::Other(m)) if m.is_empty() => return,
            Err(e) => return self.fail(i, e),
        };
        let res = match self.probes[i].def.kind {
            ProbeKind::Sample => self.sample(i, pid),
            ProbeKind::Artifact => self.artifact(i, pid, reason),
            ProbeKind::Tail => self.tail(i, pid),
            ProbeKind::Jfr => Ok(()),
        };
        self.probes[i].count += 1;
        match res {
            Ok(()) => self.succeeded(i),
            Err(e) => self.fail(i, e),
        }
    }

    fn sample(&mut self, i: usize, pid: Option<u32>) -> Result<(), CollectorError> {
        let cmd = self.render(i, &self.probes[i].def.command.clone(), pid, "", 0);
        let t = self.now();
        let phase = self.tracker.name();
        let out = self.t.exec(&cmd)?.check(&cmd)?;
        let text = out.stdout_str();
        let p = &mut self.probes[i];
        let mut fields = match &mut p.parser {
            Parser::Host(h) => {
                let (m, seen) = h.parse(&text)?;
                if pid.is_some() && seen.is_none() {
                    // The target process went away: find it again next time.
                    self.pid = None;
                    self.java_major = None;
                }
                m
            }
            Parser::Heap => jvm::parse_heap_info(&text)?,
            Parser::Lines => {
                let mut m = Map::new();
                m.insert("lines".into(), json!(text.lines().collect::<Vec<_>>()));
                m
            }
            Parser::None => Map::new(),
        };
        if let Some(pid) = pid {
            fields.entry("pid").or_insert(json!(pid));
        }
        fields.insert("took_ms".into(), json!(((self.now() - t) * 1000.0).round()));
        if let Some((_, s)) = self.probes[i].stream.as_mut() {
            s.row(t, &phase, fields)?;
        }
        Ok(())
    }

    fn artifact(&mut self, i: usize, pid: Option<u32>, reason: &str) -> Result<(), CollectorError> {
        let t = self.now();
        let phase = self.tracker.name();
        let fetch = self.probes[i].def.fetch;
        let remote = if fetch {
            self.remote_file(i)
        } else {
            String::new()
        };
        let cmd = self.render(i, &self.probes[i].def.command.clone(), pid, &remote, 0);
        let out = self.t.exec(&cmd)?.check(&cmd)?;
        let p = &self.probes[i];
        let name = artifact_name(&p.def.name, t, &phase, p.count + 1, &p.def.extension);
        let local = self.dir.join(&name);
        let bytes = if fetch {
            let n = self.t.download(&remote, &local);
            // Remove the remote file even when the download failed.
            let rm = self.t.remove(&remote);
            let n = n?;
            rm?;
            n
        } else {
            let mut f = File::create(&local).map_err(|e| CollectorError::io(&local, e))?;
            f.write_all(&out.stdout)
                .map_err(|e| CollectorError::io(&local, e))?;
            out.stdout.len() as u64
        };
        self.record_artifact(i, name, t, phase, bytes, reason);
        Ok(())
    }

    fn record_artifact(
        &mut self,
        i: usize,
        file: String,
        t: f64,
        phase: String,
        bytes: u64,
        reason: &str,
    ) {
        let p = &self.probes[i];
        let a = ArtifactInfo {
            collector: p.collector.clone(),
            probe: p.def.name.clone(),
            kind: match p.def.kind {
                ProbeKind::Jfr => "jfr",
                _ => "artifact",
            }
            .into(),
            file: format!("diagnostics/{file}"),
            t: (t * 1000.0).round() / 1000.0,
            phase,
            bytes,
            reason: reason.to_string(),
            pid: self.pid,
        };
        self.event(
            "artifact",
            json!({"probe": a.probe, "file": a.file, "bytes": a.bytes, "reason": a.reason}),
        );
        self.rep.artifacts.push(a);
    }

    fn tail(&mut self, i: usize, pid: Option<u32>) -> Result<(), CollectorError> {
        let file = self.probes[i].def.file.clone().unwrap_or_default();
        let Some(offset) = self.probes[i].tail_offset else {
            // Start at the current end: only lines written during the run.
            let cmd = format!("wc -c < {} 2>/dev/null || echo 0", sh_quote(&file));
            let out = self.t.exec(&cmd)?.check(&cmd)?;
            let size = out.stdout_str().trim().parse::<u64>().unwrap_or(0);
            self.probes[i].tail_offset = Some(size + 1);
            return Ok(());
        };
        let cmd = self.render(i, &self.probes[i].def.command.clone(), pid, "", offset);
        let out = self.t.exec(&cmd)?.check(&cmd)?;
        if out.stdout.is_empty() {
            return Ok(());
        }
        let t = self.now();
        let phase = self.tracker.name();
        let name = format!("{}.log", safe(&self.probes[i].def.name));
        let path = self.dir.join(&name);
        if self.probes[i].tail_out.is_none() {
            let f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| CollectorError::io(&path, e))?;
            self.probes[i].tail_out = Some(f);
        }
        if let Some(f) = self.probes[i].tail_out.as_mut() {
            // A header per chunk ties the lines to the run's clock and phase.
            writeln!(
                f,
                "# brunt t={t:.3} phase={phase} bytes={}",
                out.stdout.len()
            )
            .and_then(|_| f.write_all(&out.stdout))
            .and_then(|_| f.flush())
            .map_err(|e| CollectorError::io(&path, e))?;
        }
        self.probes[i].tail_offset = Some(offset + out.stdout.len() as u64);
        self.event("tail", json!({"probe": self.probes[i].def.name, "file": format!("diagnostics/{name}"), "bytes": out.stdout.len()}));
        Ok(())
    }

    fn jfr_start(&mut self, i: usize) {
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
        let remote = self.remote_file(i);
        let cmd = self.render(i, &self.probes[i].def.command.clone(), pid, &remote, 0);
        let t = self.now();
        match self.t.exec(&cmd).and_then(|o| o.check(&cmd)) {
            Ok(_) => {
                let phase = self.probes[i]
                    .def
                    .phase
                    .clone()
                    .unwrap_or_else(|| "run".into());
                self.event("jfr-start", json!({"remote": remote, "pid": pid}));
                self.probes[i].jfr = Some(JfrActive { remote, t, phase });
                self.probes[i].next_due = None;
            }
            Err(e) => {
                self.probes[i].next_due = Some(self.now() + 2.0);
                self.fail(i, e);
            }
        }
    }

    fn jfr_stop(&mut self, i: usize) {
        let Some(active) = self.probes[i].jfr.take() else {
            return;
        };
        if !self.ensure_link() {
            // One immediate retry: the recording is worth it.
            self.next_retry = 0.0;
            if !self.ensure_link() {
                let e =
                    CollectorError::Other(format!("JFR {} lost: link down at stop", active.remote));
                return self.error("jvm/jfr", &e);
            }
        }
        let res = (|| -> Result<(String, u64), CollectorError> {
            let pid = self.ensure_pid()?;
            let stop = self.probes[i].def.stop_command.clone().unwrap_or_default();
            let cmd = self.render(i, &stop, pid, &active.remote, 0);
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
        match res {
            Ok((name, n)) => self.record_artifact(i, name, active.t, active.phase, n, "jfr"),
            Err(e) => self.fail(i, e),
        }
    }

    fn keepalive_if_idle(&mut self) {
        let now = self.now();
        if now - self.last_keepalive < 1.0 {
            return;
        }
        self.last_keepalive = now;
        if self.t.is_connected() {
            if let Err(e) = self.t.keepalive() {
                self.link_broke(&e);
                self.error("transport", &e);
            }
        } else if self.down_since.is_some() && self.permanent.is_none() {
            // Reconnect between probes too, so the gap ends as soon as the link is back.
            let _ = self.ensure_link();
        }
    }

    fn shutdown(&mut self) {
        for i in 0..self.probes.len() {
            if self.probes[i].jfr.is_some() {
                self.jfr_stop(i);
            }
        }
        let now = self.now();
        if let Some(from) = self.down_since.take() {
            self.rep.gaps.push(GapInfo {
                lane: self.lane.to_string(),
                from_t: from,
                to_t: now,
                reason: format!("{} (still down at the end)", self.down_reason),
                missed: self.missed,
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
