//! The live dashboard's server (`brunt run --dashboard ADDR`, `brunt watch
//! DIR --dashboard ADDR`): a thread that follows the run directory as the
//! run writes it — the same files `brunt watch` reads, so a run on another
//! machine (a shared volume) is watched the same way — and the read-only
//! endpoint (`export::http`) that answers the page (`report::dashboard`).
//! The load never waits on it: it reads files the recorder already wrote,
//! on threads of its own.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::live::ServerWatch;
use crate::export::http::{self, Answer};
use crate::report::dashboard::{waiting_json, Dashboard, PAGE};
use crate::rundir::{self, tail::SeriesTail};

/// How often the run directory is read again.
const EVERY: Duration = Duration::from_millis(500);
/// How often, at most, the gates are judged on what the run has so far
/// (each judging reads the latency log whole: at least ten times its cost apart).
const JUDGE_EVERY: Duration = Duration::from_secs(5);

/// The dashboard, bound and serving; [`DashboardServer::follow`] gives it
/// the run directory to show.
pub struct DashboardServer {
    addr: SocketAddr,
    state: Arc<Mutex<Option<Dashboard>>>,
    done: Arc<AtomicBool>,
    stop: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl DashboardServer {
    /// Bind `addr` now (a busy port is an error before any load) and serve.
    pub fn bind(addr: SocketAddr, notices: crate::vocab::Say) -> std::io::Result<DashboardServer> {
        let l = std::net::TcpListener::bind(addr)?;
        l.set_nonblocking(true)?;
        let addr = l.local_addr()?;
        let state: Arc<Mutex<Option<Dashboard>>> = Arc::new(Mutex::new(None));
        let shared = state.clone();
        let answer: Answer = Arc::new(move |a| match a.path {
            "/" | "/index.html" => (200, "text/html; charset=utf-8", PAGE.as_bytes().to_vec()),
            "/api/state" => {
                let since = query_usize(a.query, "since");
                let server = query_usize(a.query, "server");
                let body = match shared.lock() {
                    Ok(g) => g.as_ref().map(|d| d.json(since, server)),
                    Err(p) => p.into_inner().as_ref().map(|d| d.json(since, server)),
                };
                let body = body.unwrap_or_else(|| waiting_json().into());
                (200, "application/json", body.into_bytes())
            }
            _ => (
                404,
                "text/plain",
                b"brunt's dashboard serves / and /api/state\n".to_vec(),
            ),
        });
        let (tx, rx) = tokio::sync::oneshot::channel();
        let h = std::thread::Builder::new()
            .name("brunt-dashboard".into())
            .spawn(move || http::serve(l, answer, rx, &notices, "dashboard"))?;
        Ok(DashboardServer {
            addr,
            state,
            done: Arc::new(AtomicBool::new(false)),
            stop: Mutex::new(Some(tx)),
            threads: Mutex::new(vec![h]),
        })
    }

    /// The address it answers on (the bound port when 0 was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Follow the run writing `dir` until its summary appears (or the
    /// server stops).
    pub fn follow(&self, dir: &Path) {
        let (state, done, dir) = (self.state.clone(), self.done.clone(), dir.to_path_buf());
        let spawned = std::thread::Builder::new()
            .name("brunt-dashboard-feed".into())
            .spawn(move || feed(&dir, &state, &done));
        if let (Ok(h), Ok(mut t)) = (spawned, self.threads.lock()) {
            t.push(h);
        }
    }

    /// Whether the run's summary (or its end without one) is on the page.
    pub fn ended(&self) -> bool {
        self.state
            .lock()
            .ok()
            .and_then(|g| g.as_ref().map(Dashboard::has_summary))
            .unwrap_or(false)
    }

    /// Stop following and serving.
    pub fn stop(&self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(tx) = self.stop.lock().ok().and_then(|mut s| s.take()) {
            let _ = tx.send(());
        }
        let threads = self
            .threads
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        for h in threads {
            let _ = h.join();
        }
    }
}

impl Drop for DashboardServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `since=N` of a query string; 0 when absent or not a number.
fn query_usize(query: &str, key: &str) -> usize {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

/// Read the run directory every [`EVERY`] into the dashboard until the
/// summary is in (then once more: the summary is written last).
fn feed(dir: &Path, state: &Mutex<Option<Dashboard>>, done: &AtomicBool) {
    while !dir.join(rundir::RUN_JSON).exists() {
        if done.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(EVERY);
    }
    let Ok(meta) = rundir::read_meta(dir) else {
        return;
    };
    let mut tail = SeriesTail::new(dir);
    let mut server = ServerWatch::new(dir);
    if let Ok(mut g) = state.lock() {
        *g = Some(Dashboard::new(&meta));
    }
    let mut judge_at = Instant::now() + JUDGE_EVERY;
    while !done.load(Ordering::Relaxed) {
        let ended = dir.join(rundir::SUMMARY).exists();
        let secs = tail.seconds(ended);
        let figures = server.refresh().clone();
        let summary = ended
            .then(|| rundir::read_json::<serde_json::Value>(dir, rundir::SUMMARY).ok())
            .flatten();
        let gone = meta.writer.as_ref().and_then(|w| w.alive()) == Some(false) && !ended;
        if let Ok(mut g) = state.lock() {
            if let Some(d) = g.as_mut() {
                for rows in &secs {
                    d.push(rows);
                }
                d.set_server(&figures);
                if let Some(s) = summary.clone() {
                    d.set_summary(s);
                }
                if gone {
                    d.set_gone(format!(
                        "the run's process is gone and left no summary: `brunt report {}` rebuilds what it measured",
                        dir.display()
                    ));
                }
            }
        }
        if summary.is_some() || gone {
            return;
        }
        if Instant::now() >= judge_at {
            // Judged as `brunt report` would, less often the longer it takes.
            let t0 = Instant::now();
            if let Ok(s) = super::rebuild::so_far(dir) {
                let at = (s.totals.duration_s.round()) as u64;
                if let Ok(mut g) = state.lock() {
                    if let Some(d) = g.as_mut() {
                        d.set_gates_so_far(at, s.gates);
                    }
                }
            }
            judge_at = Instant::now() + JUDGE_EVERY.max(t0.elapsed() * 10);
        }
        std::thread::sleep(EVERY);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn since_is_read_from_the_query() {
        assert_eq!(super::query_usize("since=12", "since"), 12);
        assert_eq!(super::query_usize("a=1&since=3", "since"), 3);
        assert_eq!(super::query_usize("since=x", "since"), 0);
        assert_eq!(super::query_usize("", "since"), 0);
    }
}
