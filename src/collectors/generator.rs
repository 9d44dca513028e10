//! Generator health: brunt's own CPU and RSS (via `sysinfo`) and scheduler lag
//! (a probe thread that sleeps 5 ms and measures how late it wakes). A
//! saturated generator makes fake latency, so every second is marked
//! saturated or not, and the summary says whether the run's latencies can be
//! trusted. Runs on its own two threads; never touches the load.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};

use super::error::CollectorError;
use super::store::{Jsonl, PhaseTracker};
use crate::profile::collectors::GeneratorConfig;
use crate::vocab::collectors::{ErrorInfo, GeneratorSummary};
use crate::vocab::samples::{GeneratorSample, Stamped};

const PROBE_SLEEP: Duration = Duration::from_millis(5);

impl GeneratorSummary {
    /// Round the figures and judge: two saturated seconds, or 5 % of the
    /// run, make latencies suspect.
    fn finalize(&mut self, cpu_sum: f64) {
        let s = self;
        if s.samples > 0 {
            s.mean_cpu_pct = (cpu_sum / s.samples as f64 * 10.0).round() / 10.0;
        }
        s.max_cpu_pct = (s.max_cpu_pct * 10.0).round() / 10.0;
        s.max_lag_ms = (s.max_lag_ms * 100.0).round() / 100.0;
        s.max_lag_p99_ms = (s.max_lag_p99_ms * 100.0).round() / 100.0;
        s.saturated =
            s.saturated_seconds >= 2 && s.saturated_seconds as f64 >= 0.05 * s.samples as f64;
        s.verdict = if s.saturated {
            format!(
                "generator SATURATED for {} of {} s (CPU max {:.0}% of one core, scheduler lag p99 max {:.1} ms): latencies in those seconds are not trustworthy",
                s.saturated_seconds, s.samples, s.max_cpu_pct, s.max_lag_p99_ms
            )
        } else {
            format!(
                "generator healthy (CPU max {:.0}% of one core, scheduler lag p99 max {:.1} ms)",
                s.max_cpu_pct, s.max_lag_p99_ms
            )
        };
    }

    /// Count one second's sample, stamped `t` s into the run.
    fn add(&mut self, t: f64, g: &GeneratorSample) {
        let s = self;
        let cpu = g.cpu_pct.unwrap_or(0.0);
        s.samples += 1;
        s.max_cpu_pct = s.max_cpu_pct.max(cpu);
        s.max_rss_bytes = s.max_rss_bytes.max(g.rss_bytes.unwrap_or(0));
        s.max_lag_ms = s.max_lag_ms.max(g.lag_max_ms.unwrap_or(0.0));
        s.max_lag_p99_ms = s.max_lag_p99_ms.max(g.lag_p99_ms.unwrap_or(0.0));
        if g.saturated {
            s.saturated_seconds += 1;
            if s.saturated_at.len() < 1000 {
                s.saturated_at.push(t as u64);
            }
        }
    }

    /// The summary again from the rows `generator.jsonl` holds (`brunt
    /// report` on a run that ended before writing its summary); `None`
    /// without a readable row. A torn line is skipped.
    pub fn from_samples(text: &str) -> Option<GeneratorSummary> {
        let mut s = GeneratorSummary::default();
        let mut cpu_sum = 0.0;
        for r in text
            .lines()
            .filter_map(|l| serde_json::from_str::<Stamped<GeneratorSample>>(l).ok())
        {
            cpu_sum += r.row.cpu_pct.unwrap_or(0.0);
            s.add(r.t, &r.row);
        }
        if s.samples == 0 {
            return None;
        }
        s.finalize(cpu_sum);
        Some(s)
    }
}

pub struct Generator {
    stop: Arc<AtomicBool>,
    saturated_now: Arc<AtomicBool>,
    sampler: Option<JoinHandle<(GeneratorSummary, Option<ErrorInfo>)>>,
    probe: Option<JoinHandle<()>>,
}

impl Generator {
    pub fn start(
        cfg: &GeneratorConfig,
        dir: &Path,
        tracker: Arc<PhaseTracker>,
    ) -> Result<Self, CollectorError> {
        let stop = Arc::new(AtomicBool::new(false));
        let saturated_now = Arc::new(AtomicBool::new(false));
        let lags: Arc<Mutex<Vec<f64>>> = Arc::new(Mutex::new(Vec::with_capacity(256)));
        let mut out = Jsonl::open(&dir.join(crate::vocab::files::GENERATOR_SAMPLES))?;

        let probe = {
            let stop = stop.clone();
            let lags = lags.clone();
            thread::Builder::new()
                .name("brunt-lag-probe".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let t0 = Instant::now();
                        thread::sleep(PROBE_SLEEP);
                        let late = t0.elapsed().saturating_sub(PROBE_SLEEP).as_secs_f64() * 1e3;
                        if let Ok(mut v) = lags.lock() {
                            v.push(late);
                        }
                    }
                })
                .map_err(|e| CollectorError::Other(format!("spawning lag probe: {e}")))?
        };

        let cfg = cfg.clone();
        let sampler = {
            let stop = stop.clone();
            let saturated_now = saturated_now.clone();
            thread::Builder::new()
                .name("brunt-generator-health".into())
                .spawn(move || {
                    let mut s = GeneratorSummary::default();
                    let mut write_error = None;
                    let mut cpu_sum = 0.0;
                    let pid = sysinfo::get_current_pid().ok();
                    let mut sys = System::new().ok();
                    let ncpu = thread::available_parallelism()
                        .map(|n| n.get())
                        .unwrap_or(1) as f64;
                    let kind = ProcessRefreshKind::nothing().with_cpu().with_memory();
                    let refresh = |sys: &mut System, pid: Pid| {
                        sys.refresh_processes_specifics(
                            ProcessesToUpdate::Some(&[pid]),
                            false,
                            kind,
                        );
                    };
                    if let (Some(sys), Some(pid)) = (sys.as_mut(), pid) {
                        sys.refresh_cpu_usage();
                        refresh(sys, pid);
                    }
                    let mut next = Instant::now() + cfg.every;
                    while !stop.load(Ordering::Relaxed) {
                        // Sleep in short steps so finish() is prompt.
                        let now = Instant::now();
                        if now < next {
                            thread::sleep((next - now).min(Duration::from_millis(50)));
                            continue;
                        }
                        next += cfg.every;
                        let (mut cpu, mut host_cpu, mut rss) = (0.0f64, 0.0f64, 0u64);
                        if let (Some(sys), Some(pid)) = (sys.as_mut(), pid) {
                            sys.refresh_cpu_usage();
                            refresh(sys, pid);
                            if let Some(p) = sys.process(pid) {
                                cpu = f64::from(p.cpu_usage());
                                rss = p.memory();
                            }
                            host_cpu = f64::from(sys.global_cpu_usage());
                        }
                        let mut v = lags
                            .lock()
                            .map(|mut v| std::mem::take(&mut *v))
                            .unwrap_or_default();
                        v.sort_by(f64::total_cmp);
                        let p99 = v
                            .get(((v.len() as f64) * 0.99) as usize)
                            .or(v.last())
                            .copied()
                            .unwrap_or(0.0);
                        let max = v.last().copied().unwrap_or(0.0);
                        let sat = cpu / ncpu >= cfg.cpu_saturation_pct
                            || p99 >= cfg.lag_saturation.as_secs_f64() * 1e3;
                        saturated_now.store(sat, Ordering::Relaxed);
                        let t = tracker.t();
                        let row = GeneratorSample {
                            cpu_pct: Some((cpu * 10.0).round() / 10.0),
                            host_cpu_pct: Some((host_cpu * 10.0).round() / 10.0),
                            others_cpu_pct: Some(
                                ((host_cpu - cpu / ncpu).max(0.0) * 10.0).round() / 10.0,
                            ),
                            rss_bytes: Some(rss),
                            lag_p99_ms: Some((p99 * 100.0).round() / 100.0),
                            lag_max_ms: Some((max * 100.0).round() / 100.0),
                            saturated: sat,
                        };
                        if let Err(e) = out.row(t, &tracker.name(), &row) {
                            // The first write failure goes to the collectors' errors.
                            write_error.get_or_insert(ErrorInfo {
                                t,
                                probe: "generator".into(),
                                message: e.to_string(),
                                kind: e.kind(),
                            });
                        }
                        // The figures as written: a rebuild from the file sums the same.
                        cpu_sum += row.cpu_pct.unwrap_or(0.0);
                        s.add(t, &row);
                    }
                    s.finalize(cpu_sum);
                    (s, write_error)
                })
                .map_err(|e| CollectorError::Other(format!("spawning generator health: {e}")))?
        };
        Ok(Generator {
            stop,
            saturated_now,
            sampler: Some(sampler),
            probe: Some(probe),
        })
    }

    /// Was the last second saturated?
    pub fn saturated_now(&self) -> Arc<AtomicBool> {
        self.saturated_now.clone()
    }

    /// Stop sampling: the summary, and the first failure to write a sample.
    pub fn finish(mut self) -> (GeneratorSummary, Option<ErrorInfo>) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(p) = self.probe.take() {
            let _ = p.join();
        }
        self.sampler
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Generator {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
