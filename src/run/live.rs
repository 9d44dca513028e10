//! What the live view shows of the server side, read from the run directory
//! as the collectors write it — the host collector's last sample
//! (`diagnostics/host.jsonl`) and the newest thread dump, diagnosed — and
//! the live view of `brunt run` fed from the recorder with it. The view
//! itself (`report::live`) only renders.

use std::path::{Path, PathBuf};

use crate::diagnosis::findings::{dump_findings, Options, Severity};
use crate::diagnosis::model::{ThreadDump, ThreadState};
use crate::metrics::series::Row;
use crate::report::live::{RunView, ServerFigures};
use crate::rundir::errors::ErrorsTail;
use crate::rundir::{self, tail::last_json_line, tail::newest_dump};
use crate::vocab::samples::HostSample;
use serde::Deserialize;

/// The server figures of a run directory, read again each second.
pub struct ServerWatch {
    dir: PathBuf,
    server: ServerFigures,
    /// The dump parsed last (path, size): parsed again only when it changes.
    dump_seen: Option<(PathBuf, u64)>,
}

impl ServerWatch {
    pub fn new(dir: &Path) -> ServerWatch {
        ServerWatch {
            dir: dir.to_path_buf(),
            server: ServerFigures::default(),
            dump_seen: None,
        }
    }

    /// Read the collectors' newest figures; a missing or unreadable file
    /// leaves the figure as it was (the view never stops for it).
    pub fn refresh(&mut self) -> &ServerFigures {
        self.read();
        &self.server
    }

    fn read(&mut self) {
        let diag = self.dir.join(rundir::DIAGNOSTICS);
        let last = last_json_line(&diag.join(rundir::HOST_SAMPLES))
            .and_then(|v| HostSample::deserialize(v).ok());
        if let Some(h) = last {
            self.server.host_cpu_pct = h.cpu_busy_pct.or(self.server.host_cpu_pct);
            if let Some(p) = h.process {
                self.server.process_cpu_pct = p.cpu_pct.or(self.server.process_cpu_pct);
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

/// The view `brunt run` draws on a terminal, with the server figures read
/// each second.
pub(super) struct LiveRun {
    view: RunView,
    server: ServerWatch,
    errors: ErrorsTail,
}

impl LiveRun {
    /// `None` when `run.json` cannot be read: the caller falls back to the plain line.
    pub(super) fn start(dir: &Path) -> Option<LiveRun> {
        let meta = rundir::read_meta(dir).ok()?;
        Some(LiveRun {
            view: RunView::start(meta),
            server: ServerWatch::new(dir),
            errors: ErrorsTail::new(dir),
        })
    }

    /// One second's rows, as written; redraws.
    pub(super) fn second(&mut self, rows: &[Row]) {
        let server = self.server.refresh();
        self.view.second(rows, server, self.errors.refresh());
    }

    pub(super) fn view(&self) -> &RunView {
        &self.view
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::live::tests::{meta, row};
    use crate::report::live::LiveView;

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
        let mut w = ServerWatch::new(d.path());
        let server = w.refresh().clone();
        assert_eq!(server.host_cpu_pct, Some(43.0), "the last whole line");
        assert_eq!(server.process_cpu_pct, Some(80.0));
        assert_eq!(server.blocked, Some((2, 3)));
        let f = server.finding.clone().expect("a finding");
        let mut v = LiveView::new(meta.clone());
        v.push(&[row(0, "main", 5, 1000)]);
        v.set_server(&server);
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
