//! The live view of a running load, and `brunt watch DIR`.
//!
//! Both read what the run writes second by second — `run.json` for the plan,
//! the rows of `timeseries.csv` (in `brunt run` handed over as they are
//! written, in `brunt watch` read as the file grows), the host collector's
//! last sample (`diagnostics/host.jsonl`) and the newest thread dump in
//! `diagnostics/` — so the two views are the same by construction.
//!
//! A view is several lines: the phase and time left, offered vs achieved, in
//! flight, p50/p99 of the last second with a sparkline of the last minute's
//! p99, outcomes by class, and the latest server-side figures (target CPU,
//! BLOCKED threads in the last dump; on a line of its own, that dump's most
//! severe finding). On a
//! terminal it is redrawn in place through `indicatif` (already brunt's
//! progress crate: it handles the redraw, wrapping and hidden terminals);
//! piped, brunt prints the plain progress line instead
//! ([`super::terminal::progress_line`]).
//!
//! A second at a phase boundary has one row per phase: the view shows the
//! sum of their counts and the worse of their percentiles (percentiles of
//! two histograms are never averaged).

use std::collections::VecDeque;
use std::io::{BufRead, IsTerminal, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::terminal::{fmt_ms, progress_line, render as render_summary};
use super::ReportError;
use crate::diagnosis::findings::{dump_findings, Options, Severity};
use crate::diagnosis::model::{ThreadDump, ThreadState};
use crate::judge::Summary;
use crate::metrics::series::{parse_row, Row, Second};
use crate::metrics::{Class, CLASSES};
use crate::rundir::{self, RunMeta};
use crate::vocab::WindowStats;

/// Seconds of p99 kept for the sparkline.
const SPARK_SECONDS: usize = 60;
const SPARKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// As the plain progress line wants a merged second.
fn window_stats(t: &Second, phase: usize) -> WindowStats {
    let (ok, shed) = (t.ok, t.shed);
    WindowStats {
        second: t.t,
        phase,
        offered: t.offered,
        completed: t.completed,
        ok,
        shed,
        errors: t.completed - ok - shed + t.dropped,
        in_flight: t.in_flight,
        p50_us: t.p50_us,
        p99_us: t.p99_us,
        max_us: t.max_us,
    }
}

/// The latest server-side figures, from the collectors' files.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerFigures {
    /// Target host CPU busy % and, when a process is watched, its CPU % of one core.
    pub host_cpu_pct: Option<f64>,
    pub process_cpu_pct: Option<f64>,
    /// BLOCKED application threads in the newest dump, and of how many.
    pub blocked: Option<(usize, usize)>,
    /// The newest dump's file name.
    pub dump: Option<String>,
    /// Its most severe finding above `info`.
    pub finding: Option<String>,
}

/// The live view's state: the plan, the last second, the last minute's p99.
pub struct LiveView {
    dir: PathBuf,
    meta: RunMeta,
    last: Option<Second>,
    p99s: VecDeque<Option<u64>>,
    server: ServerFigures,
    /// The dump parsed last (path, size): parsed again only when it changes.
    dump_seen: Option<(PathBuf, u64)>,
}

impl LiveView {
    /// A view of the run writing `dir` (its `run.json` must exist).
    pub fn open(dir: &Path) -> Result<LiveView, ReportError> {
        Ok(LiveView {
            dir: dir.to_path_buf(),
            meta: rundir::read_meta(dir)?,
            last: None,
            p99s: VecDeque::with_capacity(SPARK_SECONDS),
            server: ServerFigures::default(),
            dump_seen: None,
        })
    }

    pub fn last(&self) -> Option<&Second> {
        self.last.as_ref()
    }

    /// One second's rows, as written to `timeseries.csv`.
    pub fn push(&mut self, rows: &[Row]) {
        let Some(t) = Second::of(rows) else { return };
        if self.p99s.len() == SPARK_SECONDS {
            self.p99s.pop_front();
        }
        self.p99s.push_back((t.completed > 0).then_some(t.p99_us));
        self.last = Some(t);
    }

    /// Read the collectors' newest figures; a missing or unreadable file
    /// leaves the figure as it was (the view never stops for it).
    pub fn refresh_server(&mut self) {
        let diag = self.dir.join(rundir::DIAGNOSTICS);
        if let Some(v) = last_json_line(&diag.join(rundir::HOST_SAMPLES)) {
            let f = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_f64());
            self.server.host_cpu_pct = f(&v, "cpu_busy_pct").or(self.server.host_cpu_pct);
            if let Some(p) = v.get("proc") {
                self.server.process_cpu_pct = f(p, "cpu_pct").or(self.server.process_cpu_pct);
            }
        }
        let Some((path, size)) = newest_dump(&diag) else {
            return;
        };
        if self.dump_seen.as_ref() == Some(&(path.clone(), size)) {
            return;
        }
        self.dump_seen = Some((path.clone(), size));
        if let Some(d) = read_dump(&path) {
            let app: Vec<_> = d.threads.iter().filter(|t| !t.internal).collect();
            let blocked = app
                .iter()
                .filter(|t| t.state() == ThreadState::Blocked)
                .count();
            self.server.blocked = Some((blocked, app.len()));
            self.server.dump = path.file_name().map(|n| n.to_string_lossy().to_string());
            self.server.finding = dump_findings(&d, &Options::default())
                .into_iter()
                .filter(|f| f.severity > Severity::Info)
                .max_by_key(|f| f.severity)
                .map(|f| f.summary);
        }
    }

    /// The plain progress line of the last second.
    pub fn plain_line(&self) -> Option<String> {
        let t = self.last.as_ref()?;
        let i = self.meta.phase_index(&t.phase).unwrap_or(0);
        let label = self
            .meta
            .phases
            .get(i)
            .map(|p| p.label.as_str())
            .unwrap_or("");
        Some(format!(
            "[{:>5}s] {}",
            t.t + 1,
            progress_line(&t.phase, label, &window_stats(t, i))
        ))
    }

    /// The multi-line view.
    pub fn render(&self) -> String {
        let m = &self.meta;
        let planned = m.planned().as_secs();
        let mut lines = Vec::new();
        let Some(t) = &self.last else {
            lines.push(format!(
                "brunt · {} · {} · waiting for the first second ({} planned)",
                m.name,
                m.target,
                clock(planned)
            ));
            return lines.join("\n");
        };
        let now = t.t + 1;
        lines.push(format!(
            "brunt · {} · {} · {} / {}",
            m.name,
            m.target,
            clock(now),
            clock(planned)
        ));
        let phase = m.phases.iter().find(|p| p.name == t.phase);
        let (label, phase_left) = match phase {
            Some(p) => (p.label.as_str(), p.end().as_secs().saturating_sub(now)),
            None => ("", 0),
        };
        lines.push(format!(
            "phase    {} ({label}) · {} left in phase · {} left in run",
            t.phase,
            clock(phase_left),
            clock(planned.saturating_sub(now))
        ));
        lines.push(format!(
            "rate     offered {}/s · achieved {}/s · dropped {} · in flight {}",
            t.offered, t.completed, t.dropped, t.in_flight
        ));
        let pct = |us: u64| {
            if t.completed == 0 {
                "—".to_string()
            } else {
                fmt_ms(us as f64 / 1000.0)
            }
        };
        lines.push(format!(
            "latency  p50 {} · p99 {} (last second) · p99 last {} s {}",
            pct(t.p50_us),
            pct(t.p99_us),
            self.p99s.len(),
            self.sparkline()
        ));
        let mut outcomes = vec![format!("ok {}", t.count(Class::Ok))];
        for c in CLASSES.iter().filter(|c| **c != Class::Ok) {
            let n = t.count(*c);
            if n > 0 {
                outcomes.push(format!("{} {n}", c.name()));
            }
        }
        if t.dropped > 0 {
            outcomes.push(format!("dropped {}", t.dropped));
        }
        lines.push(format!("outcomes {}", outcomes.join(" · ")));
        lines.push(format!("server   {}", self.server_line()));
        // On its own line: a finding is long, and a terminal cuts lines at its width.
        if let Some(f) = &self.server.finding {
            lines.push(format!("finding  {f} (newest dump)"));
        }
        lines.join("\n")
    }

    fn server_line(&self) -> String {
        let s = &self.server;
        let mut parts = Vec::new();
        if let Some(c) = s.host_cpu_pct {
            parts.push(format!("target CPU {c:.0}% (host)"));
        }
        if let Some(c) = s.process_cpu_pct {
            parts.push(format!("process {c:.0}% of a core"));
        }
        if let Some((b, n)) = s.blocked {
            parts.push(format!("{b} of {n} threads BLOCKED in the last dump"));
        }
        if parts.is_empty() {
            "no server-side figures yet (no collectors, or none sampled so far)".into()
        } else {
            parts.join(" · ")
        }
    }

    /// The last minute's p99, scaled from its lowest to its highest; a
    /// second without answers is a space.
    fn sparkline(&self) -> String {
        let vals: Vec<u64> = self.p99s.iter().flatten().copied().collect();
        let (Some(lo), Some(hi)) = (vals.iter().min(), vals.iter().max()) else {
            return String::new();
        };
        let span = (hi - lo).max(1) as f64;
        let spark: String = self
            .p99s
            .iter()
            .map(|v| match v {
                Some(v) => {
                    let i = ((v - lo) as f64 / span * (SPARKS.len() - 1) as f64).round() as usize;
                    SPARKS[i.min(SPARKS.len() - 1)]
                }
                None => ' ',
            })
            .collect();
        format!(
            "{spark} ({}–{})",
            fmt_ms(*lo as f64 / 1000.0),
            fmt_ms(*hi as f64 / 1000.0)
        )
    }
}

/// `m:ss` (or `h:mm:ss`).
fn clock(s: u64) -> String {
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// The last complete line of a JSONL file, reading only its tail.
fn last_json_line(path: &Path) -> Option<serde_json::Value> {
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let from = len.saturating_sub(16 * 1024);
    f.seek(SeekFrom::Start(from)).ok()?;
    let mut buf = String::new();
    f.read_to_string(&mut buf).ok()?;
    // A line still being written has no newline yet: skip it.
    let complete = &buf[..buf.rfind('\n')?];
    complete
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l.trim()).ok())
}

/// The newest thread dump in `diagnostics/` (by modification time), and its size.
fn newest_dump(diag: &Path) -> Option<(PathBuf, u64)> {
    std::fs::read_dir(diag)
        .ok()?
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n.contains("thread-dump") && (n.ends_with(".txt") || n.ends_with(".json"))
        })
        .filter_map(|e| {
            let md = e.metadata().ok()?;
            Some((md.modified().ok()?, e.path(), md.len()))
        })
        .max()
        .map(|(_, p, n)| (p, n))
}

/// The last dump in a text or JSON thread-dump file.
fn read_dump(path: &Path) -> Option<ThreadDump> {
    let text = std::fs::read_to_string(path).ok()?;
    let name = path.display().to_string();
    if crate::diagnosis::json::looks_like_json_dump(&text) {
        crate::diagnosis::json::parse_json_dump(&text, &name).ok()
    } else {
        crate::diagnosis::text::parse_text_dumps(&text, &name).pop()
    }
}

/// `timeseries.csv` read as it grows: whole lines only, grouped by second.
pub struct SeriesTail {
    path: PathBuf,
    offset: u64,
    partial: String,
    /// Rows of the newest second, held until a later second (or the end) shows it is complete.
    pending: Vec<Row>,
}

impl SeriesTail {
    pub fn new(dir: &Path) -> SeriesTail {
        SeriesTail {
            path: dir.join(rundir::TIME_SERIES),
            offset: 0,
            partial: String::new(),
            pending: Vec::new(),
        }
    }

    /// Every second completed since the last call (all of them with `ended`).
    pub fn seconds(&mut self, ended: bool) -> Vec<Vec<Row>> {
        let mut out = Vec::new();
        for r in self.new_rows() {
            if self.pending.first().is_some_and(|p| p.second != r.second) {
                out.push(std::mem::take(&mut self.pending));
            }
            self.pending.push(r);
        }
        if ended && !self.pending.is_empty() {
            out.push(std::mem::take(&mut self.pending));
        }
        out
    }

    fn new_rows(&mut self) -> Vec<Row> {
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return Vec::new();
        };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return Vec::new();
        }
        let mut rows = Vec::new();
        let mut r = std::io::BufReader::new(&mut f);
        loop {
            let mut line = String::new();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    self.offset += n as u64;
                    if !line.ends_with('\n') {
                        self.partial.push_str(&line);
                        break;
                    }
                    let whole = std::mem::take(&mut self.partial) + &line;
                    if let Some(row) = parse_row(whole.trim_end()) {
                        rows.push(row);
                    }
                }
            }
        }
        rows
    }
}

/// How `brunt watch` ended.
pub enum WatchEnd {
    /// The run finished: its summary, already printed.
    Finished(Box<Summary>),
    /// The run stopped writing without a summary (killed?).
    Stalled(String),
}

/// How long a run may write nothing past its planned end before `brunt
/// watch` gives up on it (the drain and the diagnosis take time).
const STALL_GRACE: Duration = Duration::from_secs(120);

/// `brunt watch DIR`: the live view of the run writing DIR (plain lines when
/// stdout is not a terminal), then its summary once `summary.json` appears.
/// Waits up to `wait_start` for `run.json` (a run about to start).
pub fn watch(dir: &Path, wait_start: Duration) -> Result<WatchEnd, ReportError> {
    let t0 = Instant::now();
    while !dir.join(rundir::RUN_JSON).exists() {
        if t0.elapsed() >= wait_start {
            return Err(ReportError::Rundir(rundir::RundirError::Read {
                path: dir.join(rundir::RUN_JSON),
                message: format!(
                    "no run is writing here (waited {})",
                    humantime::format_duration(wait_start)
                ),
            }));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut view = LiveView::open(dir)?;
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
        + Duration::from_secs_f64(view.meta.started_at.max(0.0))
        + view.meta.planned();
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
                    println!("{l}");
                }
            }
        }
        view.refresh_server();
        if let Some(b) = &bar {
            b.set_message(view.render());
        }
        if ended {
            if let Some(b) = &bar {
                b.finish();
            }
            let s: Summary = rundir::read_json(dir, rundir::SUMMARY)?;
            print!("{}", render_summary(&s));
            return Ok(WatchEnd::Finished(Box::new(s)));
        }
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

/// The view `brunt run` draws on a terminal, fed from the recorder.
pub struct RunView {
    view: LiveView,
    bar: indicatif::ProgressBar,
}

impl RunView {
    /// On stderr (the summary goes to stdout). `None` when `run.json`
    /// cannot be read: the caller falls back to the plain line.
    pub fn start(dir: &Path) -> Option<RunView> {
        let view = LiveView::open(dir).ok()?;
        let bar =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        bar.set_style(
            indicatif::ProgressStyle::with_template("{msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        bar.set_message(view.render());
        Some(RunView { view, bar })
    }

    /// One second's rows, as written; redraws.
    pub fn second(&mut self, rows: &[Row]) {
        self.view.push(rows);
        self.view.refresh_server();
        self.bar.set_message(self.view.render());
    }

    /// A line above the view (e.g. the drain notice).
    pub fn println(&self, line: &str) {
        self.bar.println(line);
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// Leave the view as it is (the run stops on an error printed below it).
    pub fn abandon(&self) {
        self.bar.abandon();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(second: u64, phase: &str, ok: u64, p99_us: u64) -> Row {
        let mut r = Row {
            second,
            phase: phase.into(),
            offered: ok,
            p99_us,
            p50_us: p99_us / 2,
            ..Row::default()
        };
        r.counts[Class::Ok as usize] = ok;
        r
    }

    fn meta() -> RunMeta {
        RunMeta {
            name: "t".into(),
            target: "http://127.0.0.1:1".into(),
            model: crate::vocab::Model::Open,
            shape: crate::vocab::ShapeKind::Constant,
            phases: vec![],
            started_at: 0.0,
            time_scale: 1.0,
            shard_index: 0,
            shard_count: 1,
            workers: 1,
            brunt_version: "0".into(),
            requests: vec![],
            scenarios: vec![],
            start_at: None,
            merged: None,
        }
    }

    #[test]
    fn a_boundary_second_adds_counts_and_keeps_the_worse_percentile() {
        let t = Second::of(&[row(9, "step-1", 10, 5_000), row(9, "step-2", 3, 2_000)]).unwrap();
        assert_eq!(t.phase, "step-2");
        assert_eq!(t.completed, 13);
        assert_eq!(t.p99_us, 5_000);
        assert!(Second::of(&[]).is_none());
    }

    #[test]
    fn the_tail_hands_over_whole_seconds_only() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join(rundir::TIME_SERIES);
        let mut w = crate::metrics::series::SeriesWriter::create(&path).unwrap();
        let mut tail = SeriesTail::new(d.path());
        w.row(&row(0, "main", 5, 1000)).unwrap();
        w.row(&row(1, "main", 6, 1000)).unwrap();
        w.flush().unwrap();
        let s = tail.seconds(false);
        assert_eq!(s.len(), 1, "second 1 may still get rows");
        assert_eq!(s[0][0].second, 0);
        w.row(&row(1, "next", 2, 1000)).unwrap();
        w.flush().unwrap();
        assert!(tail.seconds(false).is_empty());
        let s = tail.seconds(true);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].len(), 2, "both rows of second 1");
    }

    #[test]
    fn clock_and_sparkline() {
        assert_eq!(clock(65), "1:05");
        assert_eq!(clock(3_725), "1:02:05");
        let d = tempfile::tempdir().unwrap();
        let mut v = LiveView {
            dir: d.path().to_path_buf(),
            meta: meta(),
            last: None,
            p99s: VecDeque::new(),
            server: ServerFigures::default(),
            dump_seen: None,
        };
        for (s, ok, p99) in [(0, 5, 1000), (1, 5, 2000), (2, 0, 0), (3, 5, 8000)] {
            v.push(&[row(s, "main", ok, p99)]);
        }
        assert!(v.sparkline().starts_with("▁▂ █"), "{}", v.sparkline());
        for s in 4..100 {
            v.push(&[row(s, "main", 1, 1000)]);
        }
        assert_eq!(v.p99s.len(), SPARK_SECONDS, "the last minute only");
    }

    /// Two workers BLOCKED on one monitor held by a third, in `jcmd Thread.print` format.
    const DUMP: &str = "2026-11-30 10:00:00
Full thread dump OpenJDK 64-Bit Server VM (17.0.9+9 mixed mode):

\"worker-2\" #11 prio=5 os_prio=0 tid=0x00007f5c5c0f7800 nid=0x1a21 waiting for monitor entry [0x00007f5c3f6fd000]
   java.lang.Thread.State: BLOCKED (on object monitor)
\tat com.acme.Inventory.reserve(Inventory.java:88)
\t- waiting to lock <0x000000076ab62208> (a com.acme.Inventory)
\tat com.acme.Api.handle(Api.java:12)

\"worker-1\" #10 prio=5 os_prio=0 tid=0x00007f5c5c0f6800 nid=0x1a20 waiting for monitor entry [0x00007f5c3f7fe000]
   java.lang.Thread.State: BLOCKED (on object monitor)
\tat com.acme.Inventory.reserve(Inventory.java:88)
\t- waiting to lock <0x000000076ab62208> (a com.acme.Inventory)
\tat com.acme.Api.handle(Api.java:12)

\"worker-0\" #9 prio=5 os_prio=0 tid=0x00007f5c5c0f5000 nid=0x1a1f runnable [0x00007f5c3f8ff000]
   java.lang.Thread.State: RUNNABLE
\tat com.acme.Inventory.reserve(Inventory.java:90)
\t- locked <0x000000076ab62208> (a com.acme.Inventory)
\tat com.acme.Api.handle(Api.java:12)

";

    #[test]
    fn server_figures_come_from_the_host_sample_and_the_newest_dump() {
        let d = tempfile::tempdir().unwrap();
        let meta = meta();
        rundir::write_json(&d.path().join(rundir::RUN_JSON), &meta).unwrap();
        let diag = d.path().join(rundir::DIAGNOSTICS);
        std::fs::create_dir_all(&diag).unwrap();
        std::fs::write(
            diag.join(rundir::HOST_SAMPLES),
            "{\"t\":1.0,\"cpu_busy_pct\":12.0}\n{\"t\":2.0,\"cpu_busy_pct\":43.0,\"proc\":{\"cpu_pct\":80.0}}\n{\"t\":3.0,\"cpu_bu",
        )
        .unwrap();
        std::fs::write(diag.join("thread-dump-t0002.0-main-001.txt"), DUMP).unwrap();
        let mut v = LiveView::open(d.path()).unwrap();
        v.push(&[row(0, "main", 5, 1000)]);
        v.refresh_server();
        assert_eq!(v.server.host_cpu_pct, Some(43.0), "the last whole line");
        assert_eq!(v.server.process_cpu_pct, Some(80.0));
        assert_eq!(v.server.blocked, Some((2, 3)));
        let f = v.server.finding.clone().expect("a finding");
        assert!(f.contains("com.acme.Inventory"), "{f}");
        let view = v.render();
        assert!(view.contains("target CPU 43% (host)"), "{view}");
        assert!(
            view.contains("2 of 3 threads BLOCKED in the last dump"),
            "{view}"
        );
        assert!(view.contains("\nfinding  "), "{view}");
    }
}
