//! The live dashboard's data and page (`brunt run --dashboard`, `brunt
//! watch DIR --dashboard`), rendered from what it is handed: the plan
//! ([`RunMeta`]), each second's rows of `timeseries.csv` as the recorder
//! wrote them (so every figure is the recorder's own, the ones
//! `summary.json` adds up), the latest server-side figures and, at the end,
//! the summary. `run::dashboard` reads the run directory and serves it; this
//! file opens no file.
//!
//! The page (`page.html`, embedded: no CDN, no internet) asks for
//! `/api/state?since=N` once a second and draws its charts as SVG itself —
//! polling, like Locust's web UI, rather than a held stream: a browser that
//! goes away leaves nothing behind, and the state is a few hundred bytes a
//! second.

use serde::Serialize;

use super::live::ServerFigures;
use crate::judge::Gate;
use crate::metrics::series::{Row, Second};
use crate::metrics::CLASSES;
use crate::rundir::RunMeta;
use crate::vocab::PhaseInfo;

/// The page, served at `/`.
pub const PAGE: &str = include_str!("page.html");

/// One second as the page draws it (latencies in ms, from the intended start).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DashSecond {
    pub t: u64,
    pub phase: String,
    pub offered: u64,
    pub dropped: u64,
    pub completed: u64,
    pub ok: u64,
    pub shed: u64,
    pub errors: u64,
    pub in_flight: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Answers by outcome class, the classes seen only.
    pub classes: Vec<(&'static str, u64)>,
}

impl DashSecond {
    fn of(s: &Second) -> DashSecond {
        let ms = |us: u64| us as f64 / 1000.0;
        DashSecond {
            t: s.t,
            phase: s.phase.clone(),
            offered: s.offered,
            dropped: s.dropped,
            completed: s.completed,
            ok: s.ok,
            shed: s.shed,
            errors: s.errors,
            in_flight: s.in_flight,
            p50_ms: ms(s.p50_us),
            p99_ms: ms(s.p99_us),
            max_ms: ms(s.max_us),
            classes: CLASSES
                .iter()
                .zip(s.counts)
                .filter(|(_, n)| *n > 0)
                .map(|(c, n)| (c.name(), n))
                .collect(),
        }
    }
}

/// The server side's latest figures, as the terminal's live view has them.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct DashServer {
    pub host_cpu_pct: Option<f64>,
    pub process_cpu_pct: Option<f64>,
    pub blocked_threads: Option<usize>,
    pub threads: Option<usize>,
    pub dump: Option<String>,
    pub finding: Option<String>,
}

/// One point of the server side's figures over time (when they changed).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ServerPoint {
    /// The run second it was seen at.
    pub t: u64,
    pub host_cpu_pct: Option<f64>,
    pub process_cpu_pct: Option<f64>,
    pub blocked_threads: Option<usize>,
}

/// The plan, sent once.
#[derive(Debug, Clone, Serialize)]
pub struct DashPlan {
    pub name: String,
    pub target: String,
    pub shape: &'static str,
    /// `/s` or ` VUs`: the unit of the phases' levels.
    pub unit: &'static str,
    pub planned_s: f64,
    pub started_at: f64,
    pub phases: Vec<DashPhase>,
}

/// A phase of the plan, in seconds from the run start.
#[derive(Debug, Clone, Serialize)]
pub struct DashPhase {
    pub name: String,
    pub label: String,
    pub start_s: f64,
    pub duration_s: f64,
}

impl DashPhase {
    fn of(p: &PhaseInfo) -> DashPhase {
        DashPhase {
            name: p.name.clone(),
            label: p.label.clone(),
            start_s: p.start.as_secs_f64(),
            duration_s: p.duration.as_secs_f64(),
        }
    }
}

/// What one poll returns: the plan, the seconds from `since` on, the
/// server figures, and the summary once the run has one.
#[derive(Debug, Clone, Serialize)]
pub struct DashState<'a> {
    pub plan: &'a DashPlan,
    /// How many seconds the dashboard holds (the next `since`).
    pub seconds_total: usize,
    pub seconds: &'a [DashSecond],
    pub server: &'a DashServer,
    /// The server side's figures over time, from `since_server` on.
    pub server_points: &'a [ServerPoint],
    /// How many server points the dashboard holds (the next `since_server`).
    pub server_points_total: usize,
    /// `summary.json` as written, once the run ended.
    #[serde(rename = "final")]
    pub final_: Option<&'a serde_json::Value>,
    /// Why no summary will come (the run's process died), when known.
    pub ended_without_summary: Option<&'a str>,
    /// The gates as they stood when the run directory was last judged.
    pub gates_so_far: Option<&'a GatesSoFar>,
}

/// The gates of a run still running, judged on what it has so far.
#[derive(Debug, Clone, Serialize)]
pub struct GatesSoFar {
    /// Seconds of the run judged.
    pub at_s: u64,
    pub gates: Vec<Gate>,
}

/// A run followed second by second.
pub struct Dashboard {
    plan: DashPlan,
    seconds: Vec<DashSecond>,
    server: DashServer,
    server_points: Vec<ServerPoint>,
    summary: Option<serde_json::Value>,
    gone: Option<String>,
    so_far: Option<GatesSoFar>,
}

impl Dashboard {
    pub fn new(meta: &RunMeta) -> Dashboard {
        Dashboard {
            plan: DashPlan {
                name: meta.name.clone(),
                target: meta.target.clone(),
                shape: meta.shape.name(),
                unit: meta.model.unit(),
                planned_s: meta.planned().as_secs_f64(),
                started_at: meta.started_at,
                phases: meta.phases.iter().map(DashPhase::of).collect(),
            },
            seconds: Vec::new(),
            server: DashServer::default(),
            server_points: Vec::new(),
            summary: None,
            gone: None,
            so_far: None,
        }
    }

    /// One second's rows, as written to `timeseries.csv`.
    pub fn push(&mut self, rows: &[Row]) {
        if let Some(s) = Second::of(rows) {
            self.seconds.push(DashSecond::of(&s));
        }
    }

    pub fn set_server(&mut self, s: &ServerFigures) {
        let p = ServerPoint {
            t: self.seconds.last().map_or(0, |l| l.t),
            host_cpu_pct: s.host_cpu_pct,
            process_cpu_pct: s.process_cpu_pct,
            blocked_threads: s.blocked.map(|b| b.0),
        };
        let changed = self.server_points.last().is_none_or(|l| {
            (l.host_cpu_pct, l.process_cpu_pct, l.blocked_threads)
                != (p.host_cpu_pct, p.process_cpu_pct, p.blocked_threads)
        });
        let any =
            p.host_cpu_pct.is_some() || p.process_cpu_pct.is_some() || p.blocked_threads.is_some();
        if changed && any {
            self.server_points.push(p);
        }
        self.server = DashServer {
            host_cpu_pct: s.host_cpu_pct,
            process_cpu_pct: s.process_cpu_pct,
            blocked_threads: s.blocked.map(|b| b.0),
            threads: s.blocked.map(|b| b.1),
            dump: s.dump.clone(),
            finding: s.finding.clone(),
        };
    }

    /// The run's summary: the page shows the final figures and gates.
    pub fn set_summary(&mut self, summary: serde_json::Value) {
        self.summary = Some(summary);
    }

    pub fn has_summary(&self) -> bool {
        self.summary.is_some()
    }

    /// The gates as they stand after `at_s` seconds.
    pub fn set_gates_so_far(&mut self, at_s: u64, gates: Vec<Gate>) {
        self.so_far = Some(GatesSoFar { at_s, gates });
    }

    /// Seconds the dashboard holds.
    pub fn seconds(&self) -> usize {
        self.seconds.len()
    }

    /// The run ended without a summary (its process is gone).
    pub fn set_gone(&mut self, why: String) {
        self.gone = Some(why);
    }

    /// The state from second index `since` (and server point `since_server`) on.
    pub fn state(&self, since: usize, since_server: usize) -> DashState<'_> {
        DashState {
            plan: &self.plan,
            seconds_total: self.seconds.len(),
            seconds: self.seconds.get(since..).unwrap_or_default(),
            server: &self.server,
            server_points: self.server_points.get(since_server..).unwrap_or_default(),
            server_points_total: self.server_points.len(),
            final_: self.summary.as_ref(),
            ended_without_summary: self.gone.as_deref(),
            gates_so_far: self.so_far.as_ref(),
        }
    }

    /// [`Self::state`] as JSON.
    pub fn json(&self, since: usize, since_server: usize) -> String {
        serde_json::to_string(&self.state(since, since_server)).unwrap_or_else(|_| "{}".into())
    }
}

/// The state before `run.json` exists (a run about to start).
pub fn waiting_json() -> &'static str {
    r#"{"waiting":true}"#
}
