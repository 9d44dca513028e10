//! The recorder thread: takes the workers' windows, writes them second by
//! second (interval log, time series, errors, events), tells observers, shows
//! progress (the live view of `run::live` on a terminal, the plain line
//! otherwise), and stops a stress run at its first breach. A write that
//! fails (a full disk) stops the load at once: nothing is measured blind.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use super::live::LiveRun;
use super::{Progress, RunError};
use crate::budgets::Budget;
use crate::engine;
use crate::judge::knee::step_verdicts;
use crate::metrics::hlog::HlogWriter;
use crate::metrics::series::{Row, SeriesWriter};
use crate::metrics::{pct_us, Aggregator, Class, RecorderMsg, Stats, Window};
use crate::profile::Plan;
use crate::report::terminal::{progress_line, progress_prefix};
use crate::rundir::errors::ErrorsLog;
use crate::rundir::traces::TracesLog;
use crate::rundir::EventLog;
use crate::vocab::{RunClock, RunObserver, ShapeKind, WindowStats};

/// The recorder thread's state.
pub(super) struct Recording {
    pub dir: PathBuf,
    pub plan: Plan,
    pub clock: RunClock,
    pub workers: usize,
    pub budgets: Vec<Budget>,
    pub stop: Arc<AtomicBool>,
    pub observers: Vec<Arc<dyn RunObserver>>,
    pub progress: Progress,
    /// Where the plain progress lines and the drain notice go.
    pub say: crate::vocab::Say,
    /// Live export to Prometheus: gets every window as it is written.
    pub export: Option<Arc<crate::export::Exporter>>,
    /// Set with the reason before a breach stops the load (for the shards' control).
    pub breach_cause: Arc<std::sync::OnceLock<String>>,
}

pub(super) struct Recorded {
    pub phases: Vec<Stats>,
    pub stopped_reason: Option<String>,
    /// The load was stopped by a budget breach (stop on breach), not by the user.
    pub breach_stop: bool,
}

/// What the recorder thread accumulates while the load runs.
struct State {
    agg: Aggregator,
    /// Per-phase totals, in plan order.
    phases: Vec<Stats>,
    names: Vec<String>,
    hlog: HlogWriter,
    series: SeriesWriter,
    events: EventLog,
    /// `errors.jsonl`: what went wrong, per phase and second.
    errors: ErrorsLog,
    /// `traces.jsonl`: the slowest traced requests, per phase and second.
    traces: TracesLog,
    announced: Option<usize>,
    /// Stress steps judged so far (stop on breach).
    judged: usize,
    stopped_reason: Option<String>,
    /// This recorder's breach is what stopped the load.
    breach_stop: bool,
    /// The drain at the end of the load has been announced.
    drain_said: bool,
}

impl State {
    /// Fold one window into the totals and write it to the interval log and
    /// the time series; what observers and the progress line see of it.
    fn write(
        &mut self,
        w: &Window,
        live: &engine::Live,
    ) -> Result<(WindowStats, Vec<Row>), RunError> {
        for (p, s) in &w.phases {
            if let Some(total) = self.phases.get_mut(*p) {
                if s.traces.sent > 0 {
                    let entering = s.traces.entering(&total.traces);
                    let name = self.names.get(*p).map_or("", String::as_str);
                    self.traces.push(w.second, name, &s.traces, &entering)?;
                }
                total.merge(s);
            }
        }
        let named: Vec<(&str, &Stats)> = w
            .phases
            .iter()
            .filter_map(|(p, s)| self.names.get(*p).map(|n| (n.as_str(), s)))
            .collect();
        self.hlog.window(w.second, &named)?;
        // In flight is a per-second figure: on the second's first row.
        let mut rows_in_flight = w.in_flight;
        let busy = w.busy_pct.unwrap_or(0.0);
        let mut rows = Vec::with_capacity(named.len());
        for (name, s) in &named {
            let row = Row::from_stats(w.second, name, s, rows_in_flight, w.sched_lag_us, busy);
            self.series.row(&row)?;
            self.errors.push(w.second, name, &s.failures)?;
            rows.push(row);
            rows_in_flight = 0;
        }
        self.series.flush()?;
        let total = w.total();
        let lat = total.latency(None);
        let stats = WindowStats {
            second: w.second,
            phase: w.phases.last().map(|(p, _)| *p).unwrap_or(0),
            offered: total.offered,
            completed: total.completed(),
            ok: total.count(Class::Ok),
            shed: total.count(Class::Shed),
            errors: total.errors() + total.dropped,
            in_flight: live.in_flight(),
            p50_us: pct_us(&lat, 0.5),
            p99_us: pct_us(&lat, 0.99),
            max_us: if lat.is_empty() { 0 } else { lat.max() / 1000 },
            ok_p99_us: pct_us(&total.latency(Some(Class::Ok)), 0.99),
            shed_p99_us: pct_us(&total.latency(Some(Class::Shed)), 0.99),
        };
        Ok((stats, rows))
    }
}

impl Recording {
    pub(super) fn run(
        self,
        rx: Receiver<RecorderMsg>,
        hlog: HlogWriter,
        series: SeriesWriter,
        live: Arc<engine::Live>,
    ) -> Result<Recorded, RunError> {
        let events = EventLog::create(&self.dir).inspect_err(|_| {
            // The load has started: never let it run with nothing recorded.
            self.stop.store(true, Ordering::Relaxed);
        })?;
        let mut st = State {
            agg: Aggregator::new(self.workers),
            phases: (0..self.plan.phases.len())
                .map(|_| Stats::default())
                .collect(),
            names: self
                .plan
                .phases
                .iter()
                .map(|p| p.info.name.clone())
                .collect(),
            hlog,
            series,
            events,
            errors: ErrorsLog::new(&self.dir),
            traces: TracesLog::new(&self.dir),
            announced: None,
            judged: 0,
            stopped_reason: None,
            breach_stop: false,
            drain_said: false,
        };
        // The live view on a terminal (Progress::Auto), fed the rows as written.
        let mut view = if self.progress == Progress::Auto {
            LiveRun::start(&self.dir)
        } else {
            None
        };
        let stop_on_breach = matches!(
            self.plan.kind,
            ShapeKind::Stress {
                stop_on_breach: true,
                ..
            }
        );
        loop {
            self.announce(&mut st);
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(msg) => st.agg.accept(msg),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {}
            }
            while let Ok(msg) = rx.try_recv() {
                st.agg.accept(msg);
            }
            // Once every worker is done, every window left is complete.
            let done = st.agg.all_done();
            let now_window = if done {
                u64::MAX
            } else {
                self.clock.elapsed().as_secs()
            };
            for w in st.agg.ready(now_window) {
                let (stats, rows) = match st.write(&w, &live) {
                    Ok(s) => s,
                    Err(e) => {
                        // The disk is full (or gone): measuring blind would
                        // load the target for nothing. Stop the load now.
                        self.stop.store(true, Ordering::Relaxed);
                        if let Some(v) = &view {
                            v.view().abandon();
                        }
                        return Err(RunError::Recording {
                            dir: self.dir.clone(),
                            second: w.second,
                            cause: Box::new(e),
                        });
                    }
                };
                if let Some(e) = &self.export {
                    e.window(&w, stats.in_flight);
                }
                for o in &self.observers {
                    o.window(&stats);
                }
                self.show(view.as_mut(), &stats, &rows, &st.names);
                if stop_on_breach && st.stopped_reason.is_none() {
                    self.judge_steps(&mut st, w.second);
                }
            }
            if done {
                break;
            }
            self.say_drain(&mut st, view.as_ref(), &live);
        }
        if let Some(v) = view {
            v.view().finish();
        }
        let _ = st
            .events
            .push(&serde_json::json!({"event": "end", "t": self.clock.elapsed().as_secs_f64()}));
        Ok(Recorded {
            phases: st.phases,
            stopped_reason: st.stopped_reason,
            breach_stop: st.breach_stop,
        })
    }

    /// Announce the phases started since the last call.
    fn announce(&self, st: &mut State) {
        let now_t = self.clock.elapsed();
        let cur = self.plan.phase_at(now_t);
        if st.announced == Some(cur) || now_t >= self.plan.total() + Duration::from_secs(1) {
            return;
        }
        for i in st.announced.map(|a| a + 1).unwrap_or(0)..=cur {
            let info = &self.plan.phases[i].info;
            for o in &self.observers {
                o.phase_started(info, &self.clock);
            }
            let _ = st.events.push(&serde_json::json!({"event": "phase_start", "phase": info.name, "label": info.label, "t": info.start.as_secs_f64()}));
        }
        st.announced = Some(cur);
    }

    /// Judge the stress steps whose every window is in (up to `second`);
    /// at the first that breaks a budget, record why and stop the load.
    fn judge_steps(&self, st: &mut State, second: u64) {
        while st.judged < self.plan.phases.len() {
            let p = &self.plan.phases[st.judged];
            if (second + 1) as f64 <= p.end().as_secs_f64() {
                return;
            }
            if p.info.is_warmup() {
                st.judged += 1; // the warm-up breaks nothing
                continue;
            }
            let mut s = st.phases[st.judged].clone();
            s.duration = p.info.duration;
            let failed: Vec<String> = step_verdicts(&self.budgets, &s)
                .into_iter()
                .filter(|v| !v.pass)
                .map(|v| format!("{} (measured {})", v.budget, v.shown))
                .collect();
            st.judged += 1;
            if !failed.is_empty() && s.completed() > 0 {
                let why = format!(
                    "{} ({}) broke {}; stopped at the first breach",
                    p.info.name,
                    p.info.label,
                    failed.join(", ")
                );
                let _ = st.events.push(
                    &serde_json::json!({"event": "breach", "phase": p.info.name, "why": why}),
                );
                let _ = self.breach_cause.set(why.clone());
                st.stopped_reason = Some(why);
                // A stop already asked for (Ctrl-C, SIGTERM) stays the user's.
                st.breach_stop = !self.stop.swap(true, Ordering::Relaxed);
                return;
            }
        }
    }

    /// Once every worker has stopped sending, say what the end of the run
    /// waits for (and for how long at most).
    fn say_drain(&self, st: &mut State, view: Option<&LiveRun>, live: &engine::Live) {
        if st.drain_said || !live.draining() {
            return;
        }
        st.drain_said = true;
        let n = live.in_flight();
        if n == 0 {
            return;
        }
        let line = format!(
            "draining {n} request{} in flight (up to {}); what is left then counts as unfinished",
            if n == 1 { "" } else { "s" },
            humantime::format_duration(live.drain_for)
        );
        match view {
            Some(v) => v.view().println(&line),
            None => self.say.line(line),
        }
    }

    /// The live view on a terminal; the plain line every 5 s otherwise (also
    /// when the view cannot read `run.json`).
    fn show(&self, view: Option<&mut LiveRun>, s: &WindowStats, rows: &[Row], names: &[String]) {
        match (self.progress, view) {
            (Progress::Auto, Some(v)) => v.second(rows),
            (Progress::Auto | Progress::Plain, _) if s.second % 5 == 4 || s.second == 0 => {
                let phase = names.get(s.phase).map(String::as_str).unwrap_or("-");
                let label = self
                    .plan
                    .phases
                    .get(s.phase)
                    .map(|p| p.info.label.as_str())
                    .unwrap_or("");
                self.say.line(format!(
                    "{} {}",
                    progress_prefix(s.second + 1, self.plan.total().as_secs()),
                    progress_line(phase, label, s)
                ));
            }
            _ => {}
        }
    }
}
