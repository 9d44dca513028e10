//! The live view of a running load (`brunt run` on a terminal, `brunt
//! watch DIR`), rendered from what it is handed: the plan ([`RunMeta`]),
//! each second's rows of `timeseries.csv` as they are written, and the
//! latest server-side figures ([`ServerFigures`]: read by `run::live` from
//! the collectors' files). The two views are the same by construction; this
//! file opens no file.
//!
//! A view is several lines: the phase and time left, offered vs achieved, in
//! flight, p50/p99 of the last second with a sparkline of the last seconds'
//! p99 (as many as fit: every line fits 80 columns, longer ones are cut;
//! when anything was shed, ok and shed p99 apart on a line of their own, the
//! line above labelled as both together), outcomes by class, the most
//! frequent errors so far (`errors.jsonl`, see [`super::errors::live_line`]),
//! and the latest server-side figures (target CPU,
//! BLOCKED threads in the last dump; on a line of its own, that dump's most
//! severe finding). On a
//! terminal it is redrawn in place through `indicatif` (already brunt's
//! progress crate: it handles the redraw, wrapping and hidden terminals);
//! piped, brunt prints the plain progress line instead
//! ([`super::terminal::progress_line`]).
//!
//! A second at a phase boundary has one row per phase: the view shows the
//! sum of their counts and the worse of their percentiles
//! ([`crate::metrics::series::Second`]).

use std::collections::VecDeque;

use super::terminal::{clock, fmt_ms, progress_line, progress_prefix};
use super::width::{fit, COLUMNS};
use crate::metrics::errors::ErrorTally;
use crate::metrics::series::{Row, Second};
use crate::metrics::{Class, CLASSES};
use crate::rundir::RunMeta;
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
        errors: t.errors + t.dropped,
        in_flight: t.in_flight,
        p50_us: t.p50_us,
        p99_us: t.p99_us,
        max_us: t.max_us,
        ok_p99_us: t.ok_p99_us,
        shed_p99_us: t.shed_p99_us,
    }
}

/// In a second with shed answers: ok and shed p99 apart, and the combined
/// figures above said to be combined (fast 503s are not fast service).
fn ok_shed_apart(t: &Second) -> Option<String> {
    (t.shed > 0).then(|| {
        let p = |us: u64| fmt_ms(us as f64 / 1000.0);
        let ok = if t.ok > 0 {
            p(t.ok_p99_us)
        } else {
            "—".into()
        };
        format!(
            "apart    ok p99 {ok} · shed p99 {} (line above: ok and shed together)",
            p(t.shed_p99_us)
        )
    })
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
    meta: RunMeta,
    last: Option<Second>,
    p99s: VecDeque<Option<u64>>,
    server: ServerFigures,
    /// The most frequent errors so far, as their line shows them.
    errors: Option<String>,
}

impl LiveView {
    /// A view of the run planned as `meta`.
    pub fn new(meta: RunMeta) -> LiveView {
        LiveView {
            meta,
            last: None,
            p99s: VecDeque::with_capacity(SPARK_SECONDS),
            server: ServerFigures::default(),
            errors: None,
        }
    }

    pub fn meta(&self) -> &RunMeta {
        &self.meta
    }

    /// The latest server-side figures.
    pub fn set_server(&mut self, s: &ServerFigures) {
        self.server.clone_from(s);
    }

    /// The run's errors so far (`errors.jsonl` as read up to now).
    pub fn set_errors(&mut self, t: &ErrorTally) {
        self.errors = super::errors::live_line(t, &self.meta.requests, 80 - 9);
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
            "{} {}",
            progress_prefix(t.t + 1, self.meta.planned().as_secs()),
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
        let head = format!(
            "latency  p50 {} · p99 {} (last second)",
            pct(t.p50_us),
            pct(t.p99_us)
        );
        // The sparkline gets what is left of 80 columns: ` · `, its
        // seconds, ` (lo–hi)` (at most 18 with fmt_ms's 7 characters).
        let n = COLUMNS.saturating_sub(head.chars().count() + 3 + 18);
        match self.sparkline_last(n) {
            s if s.is_empty() => lines.push(head),
            s => lines.push(format!("{head} · {s}")),
        }
        if let Some(apart) = ok_shed_apart(t) {
            lines.push(apart);
        }
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
        if let Some(e) = &self.errors {
            lines.push(format!("errors   {e}"));
        }
        lines.extend(self.server_lines());
        // On its own line: a finding is long, and a terminal cuts lines at its width.
        if let Some(f) = &self.server.finding {
            lines.push(format!("finding  {f} (newest dump)"));
        }
        // Within 80 columns: a long target URL, server line or finding is cut.
        let fitted: Vec<String> = lines.iter().map(|l| fit(l, COLUMNS)).collect();
        fitted.join("\n")
    }

    /// The server line, and the target process's CPU on a line of its own
    /// when the three figures would not fit 80 columns together.
    fn server_lines(&self) -> Vec<String> {
        let s = &self.server;
        let host = s.host_cpu_pct.map(|c| format!("target CPU {c:.0}% (host)"));
        let process = s
            .process_cpu_pct
            .map(|c| format!("process {c:.0}% of a core"));
        let blocked = s
            .blocked
            .map(|(b, n)| format!("{b} of {n} threads BLOCKED in the last dump"));
        let all: Vec<&String> = [&host, &process, &blocked].into_iter().flatten().collect();
        if all.is_empty() {
            return vec![
                "server   no server-side figures yet (no collectors, or none sampled so far)"
                    .into(),
            ];
        }
        let line = format!("server   {}", join(&all));
        if line.chars().count() <= COLUMNS {
            return vec![line];
        }
        let first: Vec<&String> = [&host, &blocked].into_iter().flatten().collect();
        let mut out = vec![format!("server   {}", join(&first))];
        out.extend(process.map(|p| format!("process  {p}")));
        out
    }

    /// The last minute's p99, scaled from its lowest to its highest; a
    /// second without answers is a space.
    #[cfg(test)]
    fn sparkline(&self) -> String {
        self.sparkline_last(SPARK_SECONDS)
    }

    /// The sparkline of the last `n` seconds, scaled over them.
    fn sparkline_last(&self, n: usize) -> String {
        let skip = self.p99s.len().saturating_sub(n);
        let shown: Vec<Option<u64>> = self.p99s.iter().skip(skip).copied().collect();
        let vals: Vec<u64> = shown.iter().flatten().copied().collect();
        let (Some(lo), Some(hi)) = (vals.iter().min(), vals.iter().max()) else {
            return String::new();
        };
        let span = (hi - lo).max(1) as f64;
        let spark: String = shown
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

/// Parts of a line, ` · ` between them.
fn join(parts: &[&String]) -> String {
    parts
        .iter()
        .map(|p| p.as_str())
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The view `brunt run` draws on a terminal, fed from the recorder.
pub struct RunView {
    view: LiveView,
    bar: indicatif::ProgressBar,
}

impl RunView {
    /// On stderr (the summary goes to stdout).
    pub fn start(meta: RunMeta) -> RunView {
        let view = LiveView::new(meta);
        let bar =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        bar.set_style(
            indicatif::ProgressStyle::with_template("{msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        bar.set_message(view.render());
        RunView { view, bar }
    }

    /// One second's rows, as written, the latest server figures and the
    /// errors so far; redraws.
    pub fn second(&mut self, rows: &[Row], server: &ServerFigures, errors: &ErrorTally) {
        self.view.push(rows);
        self.view.set_server(server);
        self.view.set_errors(errors);
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
pub(crate) mod tests {
    use super::*;

    pub(crate) use crate::metrics::series::test_row as row;

    pub(crate) fn meta() -> RunMeta {
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
            protocol: None,
            scenarios: vec![],
            start_at: None,
            merged: None,
            writer: None,
            connections: None,
            trace: None,
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
    fn shed_answers_put_ok_and_shed_p99_apart() {
        let mut v = LiveView::new(meta());
        v.push(&[row(0, "main", 10, 40_000)]);
        assert!(!v.render().contains("apart "), "{}", v.render());
        let mut r = row(1, "main", 10, 40_000);
        r.counts[Class::Shed as usize] = 90;
        (r.ok_p99_us, r.shed_p99_us) = (40_000, 300);
        v.push(&[r]);
        let view = v.render();
        assert!(
            view.contains(
                "apart    ok p99 40.00ms · shed p99 0.30ms (line above: ok and shed together)"
            ),
            "{view}"
        );
    }

    #[test]
    fn clock_and_sparkline() {
        assert_eq!(clock(65), "1:05");
        assert_eq!(clock(3_725), "1:02:05");
        let mut v = LiveView::new(meta());
        for (s, ok, p99) in [(0, 5, 1000), (1, 5, 2000), (2, 0, 0), (3, 5, 8000)] {
            v.push(&[row(s, "main", ok, p99)]);
        }
        assert!(v.sparkline().starts_with("▁▂ █"), "{}", v.sparkline());
        for s in 4..100 {
            v.push(&[row(s, "main", 1, 1000)]);
        }
        assert_eq!(v.p99s.len(), SPARK_SECONDS, "the last minute only");
    }
}
