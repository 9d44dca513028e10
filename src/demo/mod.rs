//! The built-in demo target: a small HTTP/1.1 (and h2c) server with known, tunable
//! misbehaviour, so brunt can be tried (`brunt demo-target`, `target: builtin`)
//! and tested without any outside service.
//!
//! Hand-written because it is a test fixture: no crate provides a server
//! whose contention, load shedding and stalls are exact and predictable
//! enough for tests to compute the latencies brunt must report.
//!
//! | endpoint | behaviour |
//! |---|---|
//! | `/`, `/fast` | 200 `ok\n` at once |
//! | `/slow[?ms=N]` | sleeps [`DemoConfig::slow`] (or N ms, ≤ 600000), then 200 |
//! | `/contended` | every request holds one shared FIFO lock for [`DemoConfig::contended_hold`]: throughput caps at 1/hold and latency grows with the queue |
//! | `/shed` | in flight ≥ [`DemoConfig::shed_cap`]: immediate 503 with `Retry-After: 1`; else works [`DemoConfig::shed_work`], then 200 |
//! | `/noshed` | the same work, but queues on `shed_cap` permits and never sheds: overload shows as slow 200s or client timeouts |
//! | `/status/{code}[?retry_after=V]` | answers `code` (200..=599), with `Retry-After: V` if asked |
//! | `/echo` | echoes the request body (≤ 1 MiB) and its content type |
//! | `/health` | 200 `ok\n` |
//! | `/cache/{id}` | the id's ~10 KB value, created on its first request and never evicted: memory grows with distinct ids only |
//! | `POST /login[?ttl_ms=N&uses=M]` | 200 `{"token":"…"}`: a new bearer token (kept for the server's life), also set as the session cookie `sid`; with `ttl_ms` or `uses` it holds that long (`"expires_in"`: seconds, in the answer) or that many `/items` requests |
//! | `/items/{id}` | 200 `{"id":…}` with `Authorization: Bearer <token from /login>` or the `sid` cookie, else 401 |
//! | `/ws` | a WebSocket echo (each message back as sent); an `Authorization: Bearer` header must carry a `/login` token, else 401 |
//!
//! Stalls ([`DemoConfig::stall_every`]) pause the *whole* server — every
//! endpoint — during windows computed from the server's start (see
//! [`StallSchedule`]): the coordinated-omission trap. Each window is the
//! last `stall_for` of every `stall_every` period; a response that would be
//! sent inside a window is held until the window ends.
//!
//! Timing: `/contended` holds are thread sleeps chained back to back
//! (accurate to tens of µs, saturated throughput exactly 1/hold); `/slow`,
//! `/shed` and `/noshed` work and stall waits use tokio's timer, which rounds
//! up to the next millisecond (never early).
//!
//! Threads: each worker thread runs its own current-thread tokio runtime and
//! accepts from a shared listening socket, so the target costs one core at
//! most by default (`threads: 1`) and leaves the rest to the load generator.
//! Measured here (release build, server on CPU 1, `wrk -t1 -c50` on CPU 0):
//! one thread serves 90–110 k req/s of `/fast` at ~4.5 µs of CPU per request
//! and 3.3 MB RSS; two threads on the same core did no better. Raise
//! `threads` only on a machine with cores to spare.

mod handlers;
mod stall;
mod ws;

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde::{Deserialize, Serialize};

pub use stall::StallSchedule;

use handlers::Shared;

/// Upper bound on [`DemoConfig::threads`]: the target shares the machine
/// with the generator, more is a configuration mistake.
pub const MAX_THREADS: usize = 64;

/// How the demo target behaves. Every field has a default, so an empty
/// mapping (or `DemoConfig::default()`) is a working server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct DemoConfig {
    /// Address to listen on; port 0 picks a free one. Default `127.0.0.1:0`.
    pub listen: SocketAddr,
    /// Worker threads, each with its own current-thread runtime. Default 1.
    pub threads: usize,
    /// `/slow` delay. Default 200ms.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub slow: Duration,
    /// `/contended`: how long each request holds the shared lock. Default 2ms.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub contended_hold: Duration,
    /// `/shed`: in-flight cap before answering 503; also `/noshed`'s permits. Default 32.
    pub shed_cap: usize,
    /// `/shed` and `/noshed`: work time of an admitted request. Default 5ms.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub shed_work: Duration,
    /// The whole server pauses once every this long (measured from start). Default none.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "Option<String>")]
    pub stall_every: Option<Duration>,
    /// Length of each pause. Default 1s.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub stall_for: Duration,
}

impl Default for DemoConfig {
    fn default() -> Self {
        DemoConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            threads: 1,
            slow: Duration::from_millis(200),
            contended_hold: Duration::from_millis(2),
            shed_cap: 32,
            shed_work: Duration::from_millis(5),
            stall_every: None,
            stall_for: Duration::from_secs(1),
        }
    }
}

impl DemoConfig {
    /// The stall schedule, if stalls are on.
    pub fn stall_schedule(&self) -> Option<StallSchedule> {
        self.stall_every.map(|every| StallSchedule {
            every,
            stall_for: self.stall_for,
        })
    }

    /// Checks the values serde cannot: ranges and the stall relation.
    pub fn validate(&self) -> Result<(), DemoError> {
        let bad = |msg: String| Err(DemoError::Config(msg));
        if self.threads == 0 || self.threads > MAX_THREADS {
            return bad(format!(
                "threads must be 1..={MAX_THREADS}, got {}",
                self.threads
            ));
        }
        if self.shed_cap == 0 || self.shed_cap > tokio::sync::Semaphore::MAX_PERMITS {
            return bad(format!(
                "shed_cap must be 1..={}, got {}",
                tokio::sync::Semaphore::MAX_PERMITS,
                self.shed_cap
            ));
        }
        if let Some(every) = self.stall_every {
            if every.is_zero() {
                return bad("stall_every must be greater than zero".into());
            }
            if self.stall_for >= every {
                return bad(format!(
                    "stall_for ({:?}) must be shorter than stall_every ({every:?}), \
                     or the server would never answer",
                    self.stall_for
                ));
            }
        }
        Ok(())
    }
}

/// Requests seen by one endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointStats {
    /// Requests received (counted on arrival).
    pub requests: u64,
    /// Responses produced, any status (counted when the response is handed
    /// to the connection, after any stall).
    pub completed: u64,
    /// Of those, 503s from load shedding (only `/shed` sheds).
    pub shed: u64,
}

impl std::ops::Add for EndpointStats {
    type Output = EndpointStats;
    fn add(self, o: EndpointStats) -> EndpointStats {
        EndpointStats {
            requests: self.requests + o.requests,
            completed: self.completed + o.completed,
            shed: self.shed + o.shed,
        }
    }
}

/// Counters since the server started, per endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DemoStats {
    /// `/` and `/fast`.
    pub fast: EndpointStats,
    pub slow: EndpointStats,
    pub contended: EndpointStats,
    pub shed: EndpointStats,
    pub noshed: EndpointStats,
    /// `/status/{code}`.
    pub status: EndpointStats,
    pub echo: EndpointStats,
    pub health: EndpointStats,
    /// Any other path (404).
    pub not_found: EndpointStats,
    /// `/cache/{id}`.
    pub cache: EndpointStats,
    /// `POST /login`.
    pub login: EndpointStats,
    /// `/items/{id}` (401s included).
    pub items: EndpointStats,
    /// Distinct ids `/cache/{id}` holds (each ~10 KB).
    pub cache_entries: u64,
    /// TCP connections accepted.
    pub connections: u64,
    /// Responses held back by a stall window.
    pub stalled: u64,
    /// `/items/{id}` answers 401 (no token, unknown, expired or used up).
    pub unauthorized: u64,
}

impl DemoStats {
    /// Sum over all endpoints.
    pub fn total(&self) -> EndpointStats {
        self.fast
            + self.slow
            + self.contended
            + self.shed
            + self.noshed
            + self.status
            + self.echo
            + self.health
            + self.not_found
            + self.cache
            + self.login
            + self.items
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("invalid demo target configuration: {0}")]
    Config(String),
    #[error("demo target cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("demo target: cannot start a runtime: {0}")]
    Runtime(std::io::Error),
    #[error("demo target: cannot start a worker thread: {0}")]
    Thread(std::io::Error),
    #[error("demo target: cannot wait for Ctrl-C: {0}")]
    Signal(std::io::Error),
}

/// A running demo target. Stops (and joins its threads) on [`DemoServer::stop`] or drop.
pub struct DemoServer {
    addr: SocketAddr,
    started: Instant,
    cfg: DemoConfig,
    shared: Arc<Shared>,
    shutdown: tokio::sync::watch::Sender<bool>,
    workers: Vec<JoinHandle<()>>,
}

impl DemoServer {
    /// Binds, starts the worker thread(s) and returns once the socket is
    /// listening (connections made after this returns are accepted).
    pub fn start(cfg: DemoConfig) -> Result<DemoServer, DemoError> {
        cfg.validate()?;
        let bind_err = |source| DemoError::Bind {
            addr: cfg.listen,
            source,
        };
        let listener = std::net::TcpListener::bind(cfg.listen).map_err(bind_err)?;
        listener.set_nonblocking(true).map_err(bind_err)?;
        let addr = listener.local_addr().map_err(bind_err)?;
        let started = Instant::now();
        let shared = Arc::new(Shared::new(&cfg, started));
        let (shutdown, _) = tokio::sync::watch::channel(false);

        let mut server = DemoServer {
            addr,
            started,
            cfg: cfg.clone(),
            shared,
            shutdown,
            workers: Vec::with_capacity(cfg.threads),
        };
        for i in 0..cfg.threads {
            // Each worker accepts on its own handle to the one socket; the
            // kernel hands each connection to one of them.
            let std_listener = listener.try_clone().map_err(bind_err)?;
            let shared = server.shared.clone();
            let stop = server.shutdown.subscribe();
            let (ready_tx, ready_rx) = std::sync::mpsc::channel();
            let handle = std::thread::Builder::new()
                .name(format!("brunt-demo-{i}"))
                .spawn(move || worker(std_listener, shared, stop, ready_tx))
                .map_err(DemoError::Thread)?; // `server` drops here and stops the started workers
            server.workers.push(handle);
            // The runtime is built (and later dropped) on the worker thread
            // itself, so start/stop also work from inside a caller's runtime.
            match ready_rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(e),
                Err(_) => {
                    return Err(DemoError::Runtime(std::io::Error::other(
                        "worker thread ended during start-up",
                    )))
                }
            }
        }
        Ok(server)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://IP:PORT` (IPv6 addresses in brackets), no trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Counters since start, per endpoint.
    pub fn stats(&self) -> DemoStats {
        self.shared.stats()
    }

    /// The tokens (and session cookies) `POST /login` issued since start.
    pub fn tokens(&self) -> Vec<String> {
        self.shared.tokens()
    }

    /// Requests per id of `/cache/{id}` since start.
    pub fn cache_counts(&self) -> std::collections::HashMap<String, u64> {
        self.shared.cache_counts()
    }

    /// The instant stall windows are measured from.
    pub fn started_at(&self) -> Instant {
        self.started
    }

    /// The configuration the server runs with (with the real port in `listen`).
    pub fn config(&self) -> DemoConfig {
        DemoConfig {
            listen: self.addr,
            ..self.cfg.clone()
        }
    }

    /// Stops accepting, drops open connections and joins the worker threads.
    pub fn stop(self) {
        drop(self);
    }
}

impl std::fmt::Debug for DemoServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoServer")
            .field("addr", &self.addr)
            .field("threads", &self.workers.len())
            .finish_non_exhaustive()
    }
}

impl Drop for DemoServer {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
        for w in self.workers.drain(..) {
            // A worker that panicked has nothing left to clean up.
            let _ = w.join();
        }
    }
}

/// One worker thread: its own current-thread runtime around the accept loop.
/// Reports start-up success or failure on `ready` before serving.
fn worker(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
    stop: tokio::sync::watch::Receiver<bool>,
    ready: std::sync::mpsc::Sender<Result<(), DemoError>>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(DemoError::Runtime(e)));
            return;
        }
    };
    let listener = {
        let _guard = rt.enter();
        match tokio::net::TcpListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => {
                let _ = ready.send(Err(DemoError::Runtime(e)));
                return;
            }
        }
    };
    if ready.send(Ok(())).is_err() {
        return; // start() gave up already
    }
    rt.block_on(accept_loop(listener, shared, stop));
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            biased;
            // Changed, or the server handle is gone: stop either way.
            _ = stop.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    // Responses are small; don't let Nagle delay them.
                    let _ = stream.set_nodelay(true);
                    shared.connection_opened();
                    let shared = shared.clone();
                    tokio::spawn(async move {
                        let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                            let shared = shared.clone();
                            async move {
                                if req.uri().path() == "/ws" {
                                    return Ok(ws::upgrade(&shared, req));
                                }
                                handlers::handle(shared, req).await
                            }
                        });
                        // HTTP/1.1, or HTTP/2 with prior knowledge (h2c) when the
                        // client opens with the HTTP/2 preface.
                        // Errors here are clients hanging up: nothing to report.
                        let _ = auto::Builder::new(TokioExecutor::new())
                            .serve_connection_with_upgrades(TokioIo::new(stream), svc)
                            .await;
                    });
                }
                // Out of fds or similar: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
        }
    }
    // Returning drops the runtime's remaining tasks: open connections close.
}

/// Runs the demo target in the foreground until Ctrl-C, handing `show` its
/// endpoints, then what it served (the CLI prints them).
pub fn run_standalone(cfg: DemoConfig, show: &dyn Fn(&str)) -> Result<(), DemoError> {
    let server = DemoServer::start(cfg)?;
    show(&describe(&server));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .map_err(DemoError::Runtime)?;
    rt.block_on(tokio::signal::ctrl_c())
        .map_err(DemoError::Signal)?;
    let stats = server.stats();
    server.stop();
    show(&format!(
        "stopped: {} requests ({} shed)",
        stats.total().requests,
        stats.total().shed
    ));
    Ok(())
}

/// The banner `brunt demo-target` prints: where it listens and what each endpoint does.
pub fn describe(server: &DemoServer) -> String {
    let c = &server.cfg;
    let url = server.base_url();
    let stall = match c.stall_schedule() {
        Some(s) => format!(
            "pauses for {:?} at the end of every {:?} (from start)",
            s.stall_for, s.every
        ),
        None => "off".to_string(),
    };
    format!(
        "brunt demo target on {url} ({threads} thread{s})\n\
         \x20 {url}/  {url}/fast        200 at once\n\
         \x20 {url}/slow[?ms=N]          200 after {slow:?}\n\
         \x20 {url}/contended            one shared lock, held {hold:?} per request\n\
         \x20 {url}/shed                 503 + Retry-After when {cap} in flight; else {work:?} of work\n\
         \x20 {url}/noshed               same work, queues on {cap} permits, never sheds\n\
         \x20 {url}/status/CODE          answers CODE\n\
         \x20 {url}/echo                 echoes the body\n\
         \x20 {url}/health               200\n\
         \x20 {url}/cache/ID             ~10 KB value per distinct ID, never evicted\n\
         \x20 POST {url}/login           a bearer token (and sid cookie) for /items/ID (401 without)\n\
         \x20 stall: {stall}\n\
         Ctrl-C to stop.",
        threads = c.threads,
        s = if c.threads == 1 { "" } else { "s" },
        slow = c.slow,
        hold = c.contended_hold,
        cap = c.shed_cap,
        work = c.shed_work,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_documented_values() {
        let c = DemoConfig::default();
        assert_eq!(c.listen, "127.0.0.1:0".parse().expect("addr"));
        assert_eq!(c.threads, 1);
        assert_eq!(c.slow, Duration::from_millis(200));
        assert_eq!(c.contended_hold, Duration::from_millis(2));
        assert_eq!(c.shed_cap, 32);
        assert_eq!(c.shed_work, Duration::from_millis(5));
        assert_eq!(c.stall_every, None);
        assert_eq!(c.stall_for, Duration::from_secs(1));
        assert!(c.validate().is_ok());
    }

    #[test]
    fn yaml_with_humantime_durations() {
        let c: DemoConfig =
            serde_saphyr::from_str("threads: 2\nslow: 50ms\nstall_every: 10s\nstall_for: 1s\n")
                .expect("parses");
        assert_eq!(c.threads, 2);
        assert_eq!(c.slow, Duration::from_millis(50));
        assert_eq!(c.stall_every, Some(Duration::from_secs(10)));
        assert_eq!(c.shed_cap, 32, "unset fields keep defaults");
        let empty: DemoConfig = serde_json::from_str("{}").expect("empty parses");
        assert_eq!(empty, DemoConfig::default());
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let r: Result<DemoConfig, _> = serde_json::from_str(r#"{"slo": "1s"}"#);
        assert!(r.is_err());
    }

    #[test]
    fn round_trips_through_json() {
        let c = DemoConfig {
            stall_every: Some(Duration::from_secs(10)),
            ..DemoConfig::default()
        };
        let s = serde_json::to_string(&c).expect("serializes");
        let back: DemoConfig = serde_json::from_str(&s).expect("parses");
        assert_eq!(back, c);
    }

    #[test]
    fn invalid_values_are_config_errors() {
        let cases = [
            DemoConfig {
                threads: 0,
                ..DemoConfig::default()
            },
            DemoConfig {
                shed_cap: 0,
                ..DemoConfig::default()
            },
            DemoConfig {
                stall_every: Some(Duration::ZERO),
                ..DemoConfig::default()
            },
            DemoConfig {
                stall_every: Some(Duration::from_secs(1)),
                stall_for: Duration::from_secs(1),
                ..DemoConfig::default()
            },
        ];
        for c in cases {
            assert!(
                matches!(DemoServer::start(c.clone()), Err(DemoError::Config(_))),
                "{c:?}"
            );
        }
    }

    #[test]
    fn bind_conflict_is_a_bind_error() {
        let first = DemoServer::start(DemoConfig::default()).expect("starts");
        let second = DemoServer::start(DemoConfig {
            listen: first.addr(),
            ..DemoConfig::default()
        });
        assert!(matches!(second, Err(DemoError::Bind { .. })));
    }
}
