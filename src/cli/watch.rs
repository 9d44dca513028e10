//! `brunt watch DIR`: poll the run directory a run is writing, feed the
//! live view (`report::live`, which only renders) and print it, then the
//! summary once `summary.json` appears.

use super::out::outln;
use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use crate::judge::Summary;
use crate::report::live::LiveView;
use crate::run::live::ServerWatch;
use crate::rundir::errors::ErrorsTail;
use crate::rundir::{self, tail::SeriesTail, RundirError};

/// How `brunt watch` ended.
pub enum WatchEnd {
    /// The run finished: its summary, already printed.
    Finished(Box<Summary>),
    /// The run stopped writing without a summary (killed?).
    Stalled(String),
}

/// How long a run whose writer this machine cannot see (`run.json`'s
/// `writer` on another host) may write nothing past its planned end before
/// `brunt watch` gives up on it (the drain and the diagnosis take time).
const STALL_GRACE: Duration = Duration::from_secs(120);

/// `brunt watch DIR`: the live view of the run writing DIR (plain lines when
/// stdout is not a terminal), then its summary once `summary.json` appears.
/// Waits up to `wait_start` for `run.json` (a run about to start).
pub fn watch(dir: &Path, wait_start: Duration) -> Result<WatchEnd, RundirError> {
    let t0 = Instant::now();
    while !dir.join(rundir::RUN_JSON).exists() {
        if t0.elapsed() >= wait_start {
            return Err(RundirError::Read {
                path: dir.join(rundir::RUN_JSON),
                message: format!(
                    "no run is writing here (waited {})",
                    humantime::format_duration(wait_start)
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut view = LiveView::new(rundir::read_meta(dir)?);
    let mut server = ServerWatch::new(dir);
    let mut errors = ErrorsTail::new(dir);
    let mut tail = SeriesTail::new(dir);
    let bar = std::io::stdout().is_terminal().then(|| {
        let b =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stdout());
        b.set_style(
            indicatif::ProgressStyle::with_template("{msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        b
    });
    let planned_end = SystemTime::UNIX_EPOCH
        + Duration::from_secs_f64(view.meta().started_at.max(0.0))
        + view.meta().planned();
    let mut last_news = Instant::now();
    loop {
        let ended = dir.join(rundir::SUMMARY).exists();
        let secs = tail.seconds(ended);
        if !secs.is_empty() {
            last_news = Instant::now();
        }
        for rows in &secs {
            view.push(rows);
            if bar.is_none()
                && rows
                    .first()
                    .is_some_and(|r| r.second % 5 == 4 || r.second == 0)
            {
                if let Some(l) = view.plain_line() {
                    outln!("{l}");
                }
            }
        }
        view.set_server(server.refresh());
        view.set_errors(errors.refresh());
        if let Some(b) = &bar {
            b.set_message(view.render());
        }
        if ended {
            if let Some(b) = &bar {
                b.finish();
            }
            let s: Summary = rundir::read_json(dir, rundir::SUMMARY)?;
            super::show::summary(&s, super::show::colour_on(false));
            return Ok(WatchEnd::Finished(Box::new(s)));
        }
        // The writer gone without a summary: killed. Looked at again after
        // a beat, since a run writes its summary and then exits.
        if view.meta().writer.as_ref().and_then(|w| w.alive()) == Some(false) {
            std::thread::sleep(Duration::from_millis(500));
            if !dir.join(rundir::SUMMARY).exists() {
                if let Some(b) = &bar {
                    b.finish();
                }
                let pid = view.meta().writer.as_ref().map_or(0, |w| w.pid);
                return Ok(WatchEnd::Stalled(format!(
                    "the run's process (pid {pid}) is gone and left no summary: it was killed? `brunt report {}` rebuilds what it measured",
                    dir.display()
                )));
            }
            continue;
        }
        // Another machine's run: only the files can tell.
        let past_end = SystemTime::now()
            .duration_since(planned_end)
            .is_ok_and(|d| d > STALL_GRACE);
        if past_end && last_news.elapsed() > STALL_GRACE {
            if let Some(b) = &bar {
                b.finish();
            }
            return Ok(WatchEnd::Stalled(format!(
                "{} has not grown for {} and the plan ended long ago, with no summary: the run was killed? `brunt report {}` rebuilds it",
                rundir::TIME_SERIES,
                humantime::format_duration(STALL_GRACE),
                dir.display()
            )));
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}
