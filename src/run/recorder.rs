//! The recorder thread: takes the workers' windows, writes them second by
//! second (interval log, time series, events), tells observers, shows
//! progress, and stops a stress run at its first breach.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use super::{Progress, RunError};
use crate::budgets::Budget;
use crate::engine;
use crate::judge::knee::step_verdicts;
use crate::metrics::hlog::HlogWriter;
use crate::metrics::series::{Row, SeriesWriter};
use crate::metrics::{pct_us, Aggregator, Class, GeneratorHealth, RecorderMsg, Stats};
use crate::profile::Plan;
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
}

pub(super) struct Recorded {
    pub phases: Vec<Stats>,
    pub stopped_reason: Option<String>,
    pub generator: GeneratorHealth,
}

impl Recording {
    pub(super) fn run(
        self,
        rx: Receiver<RecorderMsg>,
        mut hlog: HlogWriter,
        mut series: SeriesWriter,
        live: Arc<engine::Live>,
    ) -> Result<Recorded, RunError> {
        let mut agg = Aggregator::new(self.workers);
        let mut phases: Vec<Stats> = (0..self.plan.phases.len())
            .map(|_| Stats::default())
            .collect();
        let mut announced: Option<usize> = None;
        let mut judged = 0usize; // stress steps judged so far
        let mut stopped_reason = None;
        let mut generator = GeneratorHealth::default();
        let mut events = EventLog::create(&self.dir)?;
        let bar = self.make_bar();
        let names: Vec<String> = self
            .plan
            .phases
            .iter()
            .map(|p| p.info.name.clone())
            .collect();
        let stop_on_breach = matches!(
            self.plan.kind,
            ShapeKind::Stress {
                stop_on_breach: true,
                ..
            }
        );
        loop {
            // Announce the phase that is running now.
            let now_t = self.clock.elapsed();
            let cur = self.plan.phase_at(now_t);
            if announced != Some(cur) && now_t < self.plan.total() + Duration::from_secs(1) {
                for i in announced.map(|a| a + 1).unwrap_or(0)..=cur {
                    let info = &self.plan.phases[i].info;
                    for o in &self.observers {
                        o.phase_started(info, &self.clock);
                    }
                    let _ = events.push(&serde_json::json!({"event": "phase_start", "phase": info.name, "label": info.label, "t": info.start.as_secs_f64()}));
                }
                announced = Some(cur);
            }
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(msg) => agg.accept(msg),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {}
            }
            while let Ok(msg) = rx.try_recv() {
                agg.accept(msg);
            }
            let now_window = self.clock.elapsed().as_secs();
            for w in agg.ready(now_window) {
                let mut named: Vec<(&str, &Stats)> = Vec::new();
                for (p, s) in &w.phases {
                    if let Some(total) = phases.get_mut(*p) {
                        total.merge(s);
                    }
                }
                for (p, s) in &w.phases {
                    if let Some(n) = names.get(*p) {
                        named.push((n.as_str(), s));
                    }
                }
                hlog.window(w.second, &named)?;
                let mut rows_in_flight = w.in_flight;
                for (name, s) in &named {
                    series.row(&Row::from_stats(
                        w.second,
                        name,
                        s,
                        rows_in_flight,
                        w.sched_lag_us,
                        w.busy_pct.unwrap_or(0.0),
                    ))?;
                    rows_in_flight = 0;
                }
                series.flush()?;
                generator.observe(w.second, w.sched_lag_us, w.busy_pct.unwrap_or(0.0));
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
                };
                for o in &self.observers {
                    o.window(&stats);
                }
                self.show(&bar, &stats, &names);
                // Judge stress steps whose every window is in.
                if stop_on_breach && stopped_reason.is_none() {
                    while judged < self.plan.phases.len() {
                        let p = &self.plan.phases[judged];
                        if (w.second + 1) as f64 <= p.end().as_secs_f64() {
                            break;
                        }
                        let mut s = phases[judged].clone();
                        s.duration = p.info.duration;
                        let failed: Vec<String> = step_verdicts(&self.budgets, &s)
                            .into_iter()
                            .filter(|v| !v.pass)
                            .map(|v| format!("{} (measured {})", v.budget, v.shown))
                            .collect();
                        judged += 1;
                        if !failed.is_empty() && s.completed() > 0 {
                            let why = format!(
                                "{} ({}) broke {}; stopped at the first breach",
                                p.info.name,
                                p.info.label,
                                failed.join(", ")
                            );
                            let _ = events.push(&serde_json::json!({"event": "breach", "phase": p.info.name, "why": why}));
                            stopped_reason = Some(why);
                            self.stop.store(true, Ordering::Relaxed);
                            break;
                        }
                    }
                }
            }
            if agg.all_done() && agg.ready(u64::MAX).is_empty() {
                break;
            }
        }
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        let _ = events
            .push(&serde_json::json!({"event": "end", "t": self.clock.elapsed().as_secs_f64()}));
        Ok(Recorded {
            phases,
            stopped_reason,
            generator,
        })
    }

    fn make_bar(&self) -> Option<indicatif::ProgressBar> {
        if self.progress != Progress::Auto {
            return None;
        }
        let b = indicatif::ProgressBar::new(self.plan.total().as_secs().max(1));
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:30.cyan/blue} {pos:>5}/{len}s {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Some(b)
    }

    fn show(&self, bar: &Option<indicatif::ProgressBar>, s: &WindowStats, names: &[String]) {
        let phase = names.get(s.phase).map(String::as_str).unwrap_or("-");
        let label = self
            .plan
            .phases
            .get(s.phase)
            .map(|p| p.info.label.as_str())
            .unwrap_or("");
        let line = format!(
            "{phase} {label} | offered {}/s done {}/s | in flight {} | p99 {:.1}ms | ok {} shed {} err {}",
            s.offered,
            s.completed,
            s.in_flight,
            s.p99_us as f64 / 1000.0,
            s.ok,
            s.shed,
            s.errors
        );
        match (self.progress, bar) {
            (Progress::Auto, Some(b)) => {
                b.set_position(s.second + 1);
                b.set_message(line);
            }
            (Progress::Plain, _) if s.second % 5 == 4 || s.second == 0 => {
                eprintln!("[{:>5}s] {line}", s.second + 1);
            }
            _ => {}
        }
    }
}
