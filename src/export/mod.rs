//! Live export of a run's figures to Prometheus while it runs: a pull
//! endpoint (`--metrics-listen 127.0.0.1:PORT`, `/metrics` in OpenMetrics
//! for a scraper that asks for it — with the traced requests as exemplars
//! on `brunt_latency_seconds` — else the text format 0.0.4) and remote-write push (`output.prometheus_remote_write`).
//!
//! | file | owns |
//! |---|---|
//! | [`figures`] | the cumulative figures folded from the recorder's 1-s windows, and their metric families |
//! | [`encode`] | OpenMetrics text (`prometheus-client`) and remote-write protobuf + snappy (`prost`, `snap`) |
//! | [`http`] | the read-only HTTP endpoint (hyper, a thread of its own) that `/metrics` and the live dashboard answer through |
//!
//! The load never waits on the exporter: the recorder thread folds each
//! finished window into [`Figures`] (a short lock), scrapes are answered on
//! the exporter's own thread, and pushes happen on a push thread that the
//! recorder only nudges through a one-slot channel (a push still running
//! means the next one sends the newer cumulative figures instead). A failed
//! push is counted (`brunt_remote_write_failures_total`), written to the run
//! directory's `export.jsonl` (one row per push) and reported on stderr,
//! never fatal; the end of a run waits at most [`FINAL_PUSH_WAIT`] for a
//! receiver that hangs. Remote-write POSTs use `ureq` (blocking, rustls with
//! ring, three crates on top of the tree): one small request a second on a
//! thread of its own needs no async client.

pub mod encode;
pub mod figures;
pub mod http;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use prometheus_client::registry::Registry;
use thiserror::Error;

use crate::metrics::Window;
use crate::vocab::export::PushRow;
pub use figures::{Figures, Labels};

#[derive(Debug, Error)]
pub enum ExportError {
    #[error("--metrics-listen {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("prometheus_remote_write `{0}`: expected an http:// or https:// URL")]
    BadUrl(String),
    #[error("starting the metrics exporter: {0}")]
    Io(#[from] std::io::Error),
}

/// What to export and where.
#[derive(Debug, Clone)]
pub struct ExportConfig {
    /// Serve `/metrics` here (pull).
    pub listen: Option<SocketAddr>,
    /// POST remote-write requests here every second (push).
    pub remote_write: Option<String>,
    /// Sent as `Authorization: Bearer …` with each push.
    pub remote_write_token: Option<String>,
    pub labels: Labels,
    /// After the run, wait this long at most for one scrape of the final
    /// figures, so a scraping Prometheus holds the end of the run.
    pub linger: Duration,
    /// Say when the end of the run waits for that scrape.
    pub say: bool,
    /// Where that line and the endpoint's and pushes' warnings go.
    pub notices: crate::vocab::Say,
    /// Append one [`PushRow`] per push here (the run directory's `export.jsonl`).
    pub push_log: Option<std::path::PathBuf>,
}

/// What the exporter did, for the run's stderr line and the tests.
#[derive(Debug, Clone, Default)]
pub struct ExportReport {
    pub scrapes: u64,
    pub pushes: u64,
    pub push_failures: u64,
    /// The final figures were scraped before the exporter stopped.
    pub final_scraped: bool,
    /// The final push was still waiting on the receiver after
    /// [`FINAL_PUSH_WAIT`]: the run ended without it.
    pub final_push_abandoned: bool,
}

/// The longest the end of a run waits for the pushes still under way (a
/// hanging receiver): the final push is given up after it.
pub const FINAL_PUSH_WAIT: Duration = Duration::from_secs(1);

/// An address `--metrics-listen` could not bind is refused before anything
/// is written (bound and let go: the exporter binds it again at the start).
pub fn check_listen(addr: SocketAddr) -> Result<(), ExportError> {
    std::net::TcpListener::bind(addr)
        .map(drop)
        .map_err(|source| ExportError::Listen { addr, source })
}

/// The running exporter: hand [`Exporter::window`] every finished window,
/// call [`Exporter::finish`] after the last.
pub struct Exporter {
    figures: Arc<Mutex<Figures>>,
    addr: Option<SocketAddr>,
    server: Mutex<Option<(tokio::sync::oneshot::Sender<()>, JoinHandle<()>)>>,
    scrapes: Arc<AtomicU64>,
    final_scrapes: Arc<AtomicU64>,
    nudge: Mutex<Option<SyncSender<()>>>,
    pusher: Mutex<Option<JoinHandle<()>>>,
    linger: Duration,
    say: bool,
    notices: crate::vocab::Say,
}

impl Exporter {
    /// Bind the endpoint (an address in use is an error now, not mid-run)
    /// and start the exporter's threads.
    pub fn start(cfg: ExportConfig) -> Result<Exporter, ExportError> {
        if let Some(u) = &cfg.remote_write {
            let ok = url::Url::parse(u)
                .ok()
                .is_some_and(|p| matches!(p.scheme(), "http" | "https") && p.host().is_some());
            if !ok {
                return Err(ExportError::BadUrl(u.clone()));
            }
        }
        let figures = Arc::new(Mutex::new(Figures::new(cfg.labels.clone())));
        let scrapes = Arc::new(AtomicU64::new(0));
        let final_scrapes = Arc::new(AtomicU64::new(0));
        let mut addr = None;
        let server = match cfg.listen {
            Some(a) => {
                let l = std::net::TcpListener::bind(a)
                    .map_err(|source| ExportError::Listen { addr: a, source })?;
                l.set_nonblocking(true)?;
                addr = Some(l.local_addr()?);
                let (tx, rx) = tokio::sync::oneshot::channel();
                let state = Served {
                    registry: Arc::new(registry(&figures)),
                    figures: figures.clone(),
                    scrapes: scrapes.clone(),
                    final_scrapes: final_scrapes.clone(),
                };
                let notices = cfg.notices.clone();
                let h = std::thread::Builder::new()
                    .name("brunt-metrics".into())
                    .spawn(move || {
                        let answer: http::Answer = Arc::new(move |a| state.body(a.path, a.accept));
                        http::serve(l, answer, rx, &notices, "metrics endpoint")
                    })?;
                Some((tx, h))
            }
            None => None,
        };
        let (nudge, pusher) = match cfg.remote_write {
            Some(url) => {
                let (tx, rx) = sync_channel(1);
                let f = figures.clone();
                let token = cfg.remote_write_token.clone();
                let notices = cfg.notices.clone();
                let log = cfg.push_log.clone();
                let h = std::thread::Builder::new()
                    .name("brunt-remote-write".into())
                    .spawn(move || {
                        let out = Pushes {
                            notices,
                            log: log.as_deref().and_then(open_log),
                        };
                        push_loop(&url, token.as_deref(), &f, rx, out)
                    })?;
                (Some(tx), Some(h))
            }
            None => (None, None),
        };
        Ok(Exporter {
            figures,
            addr,
            server: Mutex::new(server),
            scrapes,
            final_scrapes,
            nudge: Mutex::new(nudge),
            pusher: Mutex::new(pusher),
            linger: cfg.linger,
            say: cfg.say,
            notices: cfg.notices,
        })
    }

    /// The endpoint's address (the port chosen when `:0` was asked for).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// Fold a finished window in (recorder thread; a short lock, no I/O).
    pub fn window(&self, w: &Window, in_flight: u64) {
        if let Ok(mut f) = self.figures.lock() {
            f.window(w, in_flight);
        }
        if let Some(tx) = self.nudge.lock().ok().as_ref().and_then(|n| n.as_ref()) {
            // Full: a push is pending and will carry these figures too.
            match tx.try_send(()) {
                Ok(()) | Err(TrySendError::Full(())) | Err(TrySendError::Disconnected(())) => {}
            }
        }
    }

    /// Every window is in: push the final figures, waiting at most
    /// [`FINAL_PUSH_WAIT`] for a receiver that hangs. What the pushes did.
    pub fn push_final(&self) -> ExportReport {
        if let Ok(mut f) = self.figures.lock() {
            f.final_ = true;
        }
        // Closing the channel makes the push thread send once more and end;
        // a hanging receiver is left to the thread's request timeout.
        if let Ok(mut n) = self.nudge.lock() {
            n.take();
        }
        let mut final_push_abandoned = false;
        if let Some(h) = self.pusher.lock().ok().and_then(|mut p| p.take()) {
            let until = Instant::now() + FINAL_PUSH_WAIT;
            while !h.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            if h.is_finished() {
                let _ = h.join();
            } else {
                final_push_abandoned = true;
            }
        }
        let (pushes, push_failures) = self
            .figures
            .lock()
            .map(|f| (f.pushes, f.push_failures))
            .unwrap_or_default();
        ExportReport {
            scrapes: self.scrapes.load(Ordering::Relaxed),
            pushes,
            push_failures,
            final_scraped: false,
            final_push_abandoned,
        }
    }

    /// After [`Exporter::push_final`] (called here if it was not): wait up
    /// to the linger time for one scrape of the final figures, then stop.
    pub fn finish(&self) -> ExportReport {
        let mut report = self.push_final();
        if let Some((stop, h)) = self.server.lock().ok().and_then(|mut s| s.take()) {
            let until = Instant::now() + self.linger;
            if self.say && !self.linger.is_zero() && self.final_scrapes.load(Ordering::Relaxed) == 0
            {
                self.notices.line(format!(
                    "metrics: waiting up to {} for a scrape of the final figures",
                    humantime::format_duration(self.linger)
                ));
            }
            while Instant::now() < until && self.final_scrapes.load(Ordering::Relaxed) == 0 {
                std::thread::sleep(Duration::from_millis(50));
            }
            report.final_scraped = self.final_scrapes.load(Ordering::Relaxed) > 0;
            let _ = stop.send(());
            let _ = h.join();
        }
        report.scrapes = self.scrapes.load(Ordering::Relaxed);
        report
    }
}

fn registry(figures: &Arc<Mutex<Figures>>) -> Registry {
    let mut r = Registry::default();
    r.register_collector(Box::new(encode::FiguresCollector(figures.clone())));
    r
}

/// What the endpoint's connections share.
#[derive(Clone)]
struct Served {
    registry: Arc<Registry>,
    figures: Arc<Mutex<Figures>>,
    scrapes: Arc<AtomicU64>,
    final_scrapes: Arc<AtomicU64>,
}

impl Served {
    /// `/metrics` in OpenMetrics when the `Accept` header asks for it (as
    /// Prometheus does), else in the text format 0.0.4 (curl, promtool).
    fn body(&self, path: &str, accept: &str) -> http::Reply {
        let (code, ctype, text) = self.text(path, accept);
        (code, ctype, text.into_bytes())
    }

    fn text(&self, path: &str, accept: &str) -> (u16, &'static str, String) {
        if path != "/metrics" {
            return (404, "text/plain", "brunt serves /metrics\n".into());
        }
        let is_final = self.figures.lock().map(|f| f.final_).unwrap_or(false);
        let (ctype, text) = if accept.contains("application/openmetrics-text") {
            // Taken before the counts: an exemplar is never newer than them.
            let ex = match self.figures.lock() {
                Ok(f) => f.exemplars(),
                Err(p) => p.into_inner().exemplars(),
            };
            (
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                encode::with_exemplars(&encode::openmetrics(&self.registry), &ex),
            )
        } else {
            // A poisoned lock still holds the last figures: serve them.
            let fams = match self.figures.lock() {
                Ok(f) => f.families(),
                Err(p) => p.into_inner().families(),
            };
            (
                "text/plain; version=0.0.4; charset=utf-8",
                encode::text_004(&fams),
            )
        };
        self.scrapes.fetch_add(1, Ordering::Relaxed);
        if is_final {
            self.final_scrapes.fetch_add(1, Ordering::Relaxed);
        }
        (200, ctype, text)
    }
}

/// How long one remote-write POST may take.
const PUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// Where the push thread says what its pushes did.
struct Pushes {
    notices: crate::vocab::Say,
    log: Option<std::fs::File>,
}

fn open_log(path: &std::path::Path) -> Option<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .ok()
}

impl Pushes {
    /// One row of `export.jsonl`; a row that cannot be written (a full
    /// disk) loses only itself: the load's own writes say the disk is full.
    fn row(&mut self, row: &PushRow) {
        use std::io::Write as _;
        if let (Some(f), Ok(mut line)) = (self.log.as_mut(), serde_json::to_vec(row)) {
            line.push(b'\n');
            let _ = f.write_all(&line);
        }
    }
}

/// Push the figures at each nudge, and once more when the channel closes.
fn push_loop(
    url: &str,
    token: Option<&str>,
    figures: &Arc<Mutex<Figures>>,
    rx: Receiver<()>,
    mut out: Pushes,
) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(PUSH_TIMEOUT))
        .http_status_as_error(false)
        .build()
        .into();
    let mut last_ts = 0i64;
    let mut failures_said = 0u64;
    loop {
        let closed = rx.recv().is_err();
        let fams = match figures.lock() {
            Ok(f) => f.families(),
            Err(_) => return,
        };
        let now_ms = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        // Samples of one series must come in increasing time.
        let ts = now_ms.max(last_ts + 1);
        last_ts = ts;
        let result = encode::remote_write_body(&encode::write_request(&fams, ts))
            .map_err(|e| e.to_string())
            .and_then(|body| {
                let mut req = agent.post(url);
                if let Some(t) = token {
                    req = req.header("Authorization", format!("Bearer {t}"));
                }
                req.header("Content-Encoding", "snappy")
                    .header("Content-Type", "application/x-protobuf")
                    .header("X-Prometheus-Remote-Write-Version", "0.1.0")
                    .header("User-Agent", concat!("brunt/", env!("CARGO_PKG_VERSION")))
                    .send(&body[..])
                    .map_err(|e| e.to_string())
                    .and_then(|mut r| {
                        let code = r.status().as_u16();
                        if (200..300).contains(&code) {
                            Ok(())
                        } else {
                            let text = r.body_mut().read_to_string().unwrap_or_default();
                            Err(format!("HTTP {code}: {}", text.trim()))
                        }
                    })
            });
        if let Ok(mut f) = figures.lock() {
            f.pushes += 1;
            if let Err(e) = &result {
                f.push_failures += 1;
                // The first failure, then one line per 30, so stderr stays readable.
                if failures_said == 0 || f.push_failures % 30 == 0 {
                    out.notices.warn(format!(
                        "remote-write to {url} failed ({} so far): {e}",
                        f.push_failures
                    ));
                    failures_said += 1;
                }
            }
        }
        out.row(&PushRow {
            t: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0),
            ok: result.is_ok(),
            error: result.err(),
            last: closed,
        });
        if closed {
            return;
        }
    }
}
