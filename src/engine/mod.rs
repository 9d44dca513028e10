//! The load engine: turns a [`Plan`] into requests and hands every outcome to
//! the recorder. It never waits on anything but the target.
//!
//! - `workers` threads, each a current-thread tokio runtime (cheaper per
//!   request than a multi-thread runtime here), each taking 1/W of the load.
//! - Open model ([`open`]): arrivals on a precomputed schedule; a request
//!   that cannot be queued because `max_in_flight` is reached is *dropped*
//!   and counted; latency counts from the intended start.
//! - Closed model ([`closed`]): virtual users, each waiting for its answer.
//! - Wind-down: when the plan ends or the run is stopped, every request still
//!   queued or in flight gets up to the request timeout to finish (a stop
//!   gives up the queued ones at once: the load stops); whatever is left then
//!   is recorded as [`Class::Unfinished`](crate::metrics::Class::Unfinished),
//!   its latency counted to the moment it was given up. So every offered request is accounted for:
//!   `offered = answered (every class) + dropped`, per phase and per run.
//! - Scenarios ([`scenario`]): one pick runs its steps in order on one
//!   connection, each later step due when the one before answered plus its
//!   think time; the whole iteration is recorded too (intended start to last
//!   answer), and one given up at the drain is `unfinished` — for the step
//!   under way and for its iteration. `repeat` loops jump back within the
//!   pick; a scenario keeps cookies ([`cookies`]) and refreshes its
//!   credentials ([`refresh`]).
//! - Trace context ([`trace`]): `target.trace` stamps a share of the sends
//!   with a W3C `traceparent`; their outcomes carry the trace id.
//! - Shards (`--shard i/N`) take 1/N of the load with interleaved arrivals.
//! - `setup:` and `teardown:` ([`setup`]) are sent once, outside the load,
//!   on a connection of their own; the setup's values are bound into the
//!   templates before the workers start.
//! - Connections ([`client`]): HTTP/1.1 one per lane (or VU); HTTP/2 one per
//!   `streams_per_connection` lanes, each lane a stream; `keep_alive: false`
//!   one per request. The preflight settles `auto` and refuses `"2"` against
//!   a server that speaks only 1.1. HTTP/1.1 goes through brunt's codec
//!   ([`h1`]), HTTP/2 through hyper (the rule is in [`client`]'s doc).
//! - WebSocket steps ([`ws`]): a step with `ws:` opens a socket of its own
//!   where `send_one` would exchange; its connect, round trips and lifetime
//!   are outcomes under names after the mix's requests ([`EngineConfig::outcome_names`]).
//! - gRPC ([`grpc`]): a call is an HTTP/2 request of the mix like any
//!   other; its message is checked against the `.proto` files at compile
//!   and its `grpc-status` decides its class.

pub mod client;
mod closed;
mod cookies;
pub mod feeder;
pub mod grpc;
pub mod h1;
mod open;
mod refresh;
mod scenario;
pub mod setup;
pub mod template;
pub mod trace;
pub mod ws;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use thiserror::Error;

use crate::metrics::errors::Failure;
use crate::metrics::{Class, Outcome, RecorderMsg, WorkerRecorder};
use crate::profile::{CookieMode, LoadSpec, Loop, Model, Plan, Profile};
pub use client::{Prepared, Target};

#[derive(Debug, Error)]
pub enum EngineError {
    #[error(transparent)]
    Client(#[from] client::ClientError),
    #[error("cannot start load worker: {0}")]
    Spawn(std::io::Error),
    #[error("TLS handshake with {0} failed: {1} (trust its CA with target.tls.ca_file, or opt out with target.tls.insecure: true)")]
    Tls(String, String),
    #[error("target {0} is unreachable: {1}")]
    Unreachable(String, String),
    #[error("target {0} does not speak HTTP/2: {1} (target.http: \"2\" demands it; `auto` falls back to HTTP/1.1 over TLS)")]
    NoHttp2(String, String),
}

/// This process's share of a sharded run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 0-based.
    pub index: u32,
    pub count: u32,
}

impl Default for Shard {
    fn default() -> Self {
        Shard { index: 0, count: 1 }
    }
}

/// One pick of the mix: a request, or a scenario's steps `first..first+steps`.
#[derive(Debug, Clone, Copy)]
struct Unit {
    first: usize,
    steps: usize,
    /// Variables its steps extract.
    vars: usize,
    /// The scenario's index in the profile (`None`: a plain request).
    scenario: Option<usize>,
    /// Its cookie jar (a plain request keeps none).
    cookies: CookieMode,
}

/// Everything the workers need, shared read-only.
pub struct EngineConfig {
    pub target: Target,
    pub requests: Vec<Prepared>,
    /// Cumulative weights for picking a unit of the mix (a request or a scenario).
    cumulative: Vec<f64>,
    /// The first request of each unit, in `cumulative` order.
    unit_first: Vec<usize>,
    /// Indexed by request: the unit that starts there (scenario steps after the first: `None`).
    unit_at: Vec<Option<Unit>>,
    /// Indexed by request: the pause after a scenario step before the next one.
    think: Vec<Option<Duration>>,
    /// Indexed by request: a scenario step whose failure does not end its iteration.
    optional: Vec<bool>,
    /// Indexed by request: the `repeat` loop that starts at this step.
    loop_at: Vec<Option<Loop>>,
    /// The steps that refresh their credentials, and the logins they run.
    refresh: refresh::Refreshes,
    pub load: LoadSpec,
    pub plan: Plan,
    pub shard: Shard,
    pub workers: usize,
    /// Feeders and the engine's own stop reason, shared by the workers.
    pub templates: template::Shared,
    /// `setup:` and `teardown:`, sent once outside the load ([`setup`]).
    pub setup: setup::OnceSteps,
    pub teardown: setup::OnceSteps,
    /// The mix's WebSocket steps ([`ws`]), by request index.
    pub ws: ws::Steps,
    /// `target.trace`: the share of sends that carry a trace context.
    pub trace: Option<trace::Tracer>,
}

impl EngineConfig {
    /// Compile from a profile ([`compile`] with the process environment;
    /// feeder paths resolve from the working directory): for tests and examples.
    pub fn new(
        profile: &Profile,
        url: &str,
        plan: Plan,
        shard: Shard,
    ) -> Result<Self, EngineError> {
        compile(profile, url, plan, shard, &template::Inputs::default())
    }

    /// The name of every outcome index: the mix's requests, then what its
    /// WebSocket steps record apart (`STEP connect`, `STEP MESSAGE`).
    pub fn outcome_names(&self) -> Vec<String> {
        let requests = self.requests.iter().map(|r| r.name.clone());
        requests.chain(self.ws.names().iter().cloned()).collect()
    }

    /// The protocol the run speaks, as `meta.protocol` says it.
    pub fn protocol(&self) -> String {
        self.ws.protocol(self.target.protocol())
    }

    /// Why the engine stopped the run by itself (a `unique` feeder ran out).
    pub fn stopped_reason(&self) -> Option<String> {
        self.templates.stopped_reason()
    }

    /// The server-streaming gRPC calls' tallies so far, a row per such request.
    pub fn stream_rows(&self) -> Vec<crate::vocab::streams::StreamRow> {
        let calls = self
            .requests
            .iter()
            .filter_map(|p| Some((p, p.grpc.as_ref()?)));
        calls.filter_map(|(p, c)| c.stream_row(&p.name)).collect()
    }

    /// The scenario a pick starting at request `request` runs, if any.
    fn scenario_of(&self, request: usize) -> Option<usize> {
        self.unit_at
            .get(request)
            .copied()
            .flatten()
            .and_then(|u| u.scenario)
    }

    /// The request a pick starts with (a scenario's first step).
    #[inline]
    fn pick(&self, rng: &mut fastrand::Rng) -> usize {
        if self.cumulative.len() == 1 {
            return self.unit_first[0];
        }
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let x = rng.f64() * total;
        let u = self
            .cumulative
            .iter()
            .position(|c| x < *c)
            .unwrap_or(self.cumulative.len() - 1);
        self.unit_first[u]
    }
}

/// The engine's part of the one compile (held by the run spec): the target
/// and its TLS, the mix's requests and units, templates and feeders. `url`
/// is the resolved target URL (`--target`, the demo's, or the profile's);
/// `inputs` the `--env` values and the directory feeder paths resolve from.
/// A missing feeder file or column is an error here, before any load.
pub fn compile(
    profile: &Profile,
    url: &str,
    plan: Plan,
    shard: Shard,
    inputs: &template::Inputs,
) -> Result<EngineConfig, EngineError> {
    let (target, base) = client::target_from(profile, url)?;
    let feeders = template::open_feeders(profile, inputs, shard)
        .map_err(|e| EngineError::Client(e.into()))?;
    let mut requests = client::prepare(profile, &target, &base, inputs, &feeders)?;
    let once = |sect, steps: &[crate::profile::RequestSpec]| {
        client::prepare_steps(profile, &target, &base, inputs, &feeders, sect, steps)
            .map(|p| setup::OnceSteps::new(sect, steps, p))
    };
    let (setup, teardown) = (
        once("setup", &profile.setup)?,
        once("teardown", &profile.teardown)?,
    );
    let ws = ws::compile(profile, url, inputs, &feeders, requests.len())?;
    // The mix's units: each request, then each scenario (its steps in a row).
    let mut units: Vec<(f64, Unit)> = profile
        .requests
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let u = Unit {
                first: i,
                steps: 1,
                vars: 0,
                scenario: None,
                cookies: CookieMode::Off,
            };
            (r.weight, u)
        })
        .collect();
    let mut next = profile.requests.len();
    let mut loop_at: Vec<Option<Loop>> = vec![None; requests.len()];
    let mut refreshes = refresh::Refreshes::new(requests.len());
    for (k, sc) in profile.scenarios.iter().enumerate() {
        let steps = sc.flat_steps();
        let vars = template::scenario_vars(steps.iter().copied()).len();
        let u = Unit {
            first: next,
            steps: steps.len(),
            vars: refreshes.add(sc, next, vars, &mut requests),
            scenario: Some(k),
            cookies: sc.cookies.mode(),
        };
        for p in requests.iter_mut().skip(next).take(steps.len()) {
            p.cookies = u.cookies != CookieMode::Off;
        }
        for l in sc.loops() {
            if let Some(slot) = loop_at.get_mut(next + l.first) {
                *slot = Some(l);
            }
        }
        next += steps.len();
        units.push((sc.weight, u));
    }
    let mut acc = 0.0;
    let cumulative = units
        .iter()
        .map(|(w, _)| {
            acc += w;
            acc
        })
        .collect();
    let mut unit_at: Vec<Option<Unit>> = vec![None; requests.len()];
    for (_, u) in &units {
        if let Some(slot) = unit_at.get_mut(u.first) {
            *slot = Some(*u);
        }
    }
    let unit_first = units.iter().map(|(_, u)| u.first).collect();
    let think = profile
        .all_requests()
        .iter()
        .map(|(_, _, r)| r.think_time)
        .collect();
    let optional = profile
        .all_requests()
        .iter()
        .map(|(_, _, r)| r.optional)
        .collect();
    let workers = profile.load.workers.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    Ok(EngineConfig {
        target,
        requests,
        cumulative,
        unit_first,
        unit_at,
        think,
        optional,
        loop_at,
        refresh: refreshes,
        load: profile.load.clone(),
        plan,
        shard,
        workers: workers.max(1),
        templates: template::Shared::new(feeders),
        setup,
        teardown,
        ws,
        trace: match &profile.target.trace {
            Some(t) => Some(trace::Tracer::new(t)?),
            None => None,
        },
    })
}

/// Live counters the progress display reads (relaxed atomics, off the hot path's critical work).
#[derive(Debug, Default)]
pub struct Live {
    /// Requests queued or running, one slot per worker, refreshed every 100 ms.
    pub in_flight: Vec<AtomicU64>,
    /// Workers that have reached the end of their load and are draining.
    pub draining: AtomicUsize,
    /// The longest a drain waits: the request timeout.
    pub drain_for: Duration,
}

impl Live {
    pub fn in_flight(&self) -> u64 {
        self.in_flight
            .iter()
            .map(|a| a.load(Ordering::Relaxed))
            .sum()
    }

    /// Every worker has stopped sending and waits for what it has in flight.
    pub fn draining(&self) -> bool {
        !self.in_flight.is_empty() && self.draining.load(Ordering::Relaxed) >= self.in_flight.len()
    }

    fn set_in_flight(&self, worker: usize, n: u64) {
        if let Some(slot) = self.in_flight.get(worker) {
            slot.store(n, Ordering::Relaxed);
        }
    }

    /// Worker `worker` stops sending with `n` requests queued or running.
    fn enter_drain(&self, worker: usize, n: u64) {
        self.set_in_flight(worker, n);
        self.draining.fetch_add(1, Ordering::Relaxed);
    }
}

/// What one worker thread's load loop is handed, in the open model
/// ([`open::run`]) and the closed one ([`closed::run`]) alike.
struct Worker {
    cfg: Arc<EngineConfig>,
    /// This worker's number (0-based): its share of the arrivals, its `Live` slot.
    index: usize,
    /// The run's start: phase offsets count from here.
    start: Instant,
    rec: Rc<RefCell<WorkerRecorder>>,
    stop: Arc<AtomicBool>,
    live: Arc<Live>,
}

impl Worker {
    /// This worker's place among the workers of every shard: it takes every
    /// `stride`-th arrival (or VU) of the whole run, starting at `offset`.
    fn stride_offset(&self) -> (u64, u64) {
        let (workers, shard) = (self.cfg.workers as u64, self.cfg.shard);
        (
            workers * shard.count as u64,
            shard.index as u64 * workers + self.index as u64,
        )
    }

    /// Show `in_flight` (live view and recorder) and cut the recorder's
    /// windows up to `now`, so they close on time even when nothing completes.
    fn tick(&self, in_flight: u64, now: Instant) {
        self.live.set_in_flight(self.index, in_flight);
        let mut r = self.rec.borrow_mut();
        r.in_flight = in_flight;
        r.tick(now);
    }
}

/// A running engine.
pub struct Engine {
    threads: Vec<JoinHandle<()>>,
    pub live: Arc<Live>,
}

impl Engine {
    /// Start the workers now; phase offsets count from `start`.
    pub fn start(
        cfg: Arc<EngineConfig>,
        start: Instant,
        tx: Sender<RecorderMsg>,
        stop: Arc<AtomicBool>,
    ) -> Result<Engine, EngineError> {
        let live = Arc::new(Live {
            in_flight: (0..cfg.workers).map(|_| AtomicU64::new(0)).collect(),
            draining: AtomicUsize::new(0),
            drain_for: cfg.target.timeout,
        });
        let mut threads = Vec::new();
        for w in 0..cfg.workers {
            let cfg = cfg.clone();
            let tx = tx.clone();
            let stop = stop.clone();
            let live = live.clone();
            let h = std::thread::Builder::new()
                .name(format!("brunt-load-{w}"))
                .spawn(move || {
                    template::enter_worker(w, cfg.workers, cfg.shard, stop.clone());
                    let rt = match tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    {
                        Ok(rt) => rt,
                        Err(_) => {
                            let _ = tx.send(RecorderMsg::Done);
                            return;
                        }
                    };
                    let local = tokio::task::LocalSet::new();
                    let rec = Rc::new(RefCell::new(WorkerRecorder::new(
                        start,
                        tx,
                        cfg.requests.len() + cfg.ws.names().len() > 1,
                    )));
                    let model = cfg.load.model;
                    let worker = Worker {
                        cfg,
                        index: w,
                        start,
                        rec: rec.clone(),
                        stop,
                        live,
                    };
                    local.block_on(&rt, async move {
                        match model {
                            Model::Open => open::run(worker).await,
                            Model::Closed => closed::run(worker).await,
                        }
                    });
                    // Requests still running were given up (recorded as
                    // unfinished); their tasks are cancelled with the LocalSet.
                    drop(local);
                    rec.borrow_mut().finish();
                })
                .map_err(EngineError::Spawn)?;
            threads.push(h);
        }
        Ok(Engine { threads, live })
    }

    pub fn join(self) {
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// Check once, before any load, that the target accepts connections: an
/// unreachable target is a clear error, not a run full of connect errors.
/// It also settles the protocol: `http: "2"` against a server that answers
/// only HTTP/1.1 is refused here, and `auto` over TLS takes the protocol
/// its ALPN answer chose. A target that accepts and then resets connections
/// passes (it is there): the run records those as `reset`.
pub fn preflight(cfg: &EngineConfig) -> Result<(), EngineError> {
    let t = &cfg.target;
    let addr = format!("{}:{}", t.host, t.port);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(EngineError::Spawn)?;
    rt.block_on(async {
        let mut tcp = match tokio::time::timeout(
            t.connect_timeout,
            tokio::net::TcpStream::connect((t.host.as_str(), t.port)),
        )
        .await
        {
            Ok(Ok(tcp)) => tcp,
            Ok(Err(e)) if client::is_reset(e.kind()) => return Ok(()),
            Ok(Err(e)) => return Err(EngineError::Unreachable(addr, e.to_string())),
            Err(_) => {
                return Err(EngineError::Unreachable(
                    addr,
                    format!("no answer within {:?}", t.connect_timeout),
                ))
            }
        };
        let Some((connector, name)) = &t.tls else {
            if t.http != crate::profile::HttpVersion::Http2 {
                return Ok(());
            }
            return match h2c_preface(&mut tcp, t.connect_timeout).await {
                Ok(true) => Ok(()),
                Ok(false) => Err(EngineError::NoHttp2(
                    addr,
                    "it did not answer the HTTP/2 connection preface (h2c, prior knowledge) with SETTINGS".into(),
                )),
                Err(e) => Err(EngineError::NoHttp2(addr, e.to_string())),
            };
        };
        // A certificate problem would otherwise show only as a run full of connect errors.
        match tokio::time::timeout(t.connect_timeout, connector.connect(name.clone(), tcp)).await {
            Ok(Ok(tls)) => {
                let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
                match t.http {
                    crate::profile::HttpVersion::Http2 if !h2 => Err(EngineError::NoHttp2(
                        addr,
                        "its TLS handshake (ALPN) did not choose h2: it speaks HTTP/1.1 only".into(),
                    )),
                    crate::profile::HttpVersion::Auto => {
                        t.set_h2(h2);
                        Ok(())
                    }
                    _ => Ok(()),
                }
            }
            Ok(Err(e)) if client::is_reset(e.kind()) => Ok(()),
            Ok(Err(e)) if no_alpn(&e) => Err(EngineError::NoHttp2(
                addr,
                "its TLS handshake refused ALPN h2 (no_application_protocol): it speaks HTTP/1.1 only".into(),
            )),
            Ok(Err(e)) => Err(EngineError::Tls(addr, e.to_string())),
            Err(_) => Err(EngineError::Tls(
                addr,
                "no TLS handshake within the connect timeout".into(),
            )),
        }
    })
}

/// What a pick of the mix ([`scenario`]'s `send_one`, a WebSocket step) reports as it goes, for the caller to record.
pub(crate) enum Event {
    /// Step `request` of the pick is due at `intended` and is being sent
    /// (at `sent`). The first step's event comes too: the closed model
    /// counts it as offered here, the open model counted it on arrival.
    Due {
        step: usize,
        request: usize,
        intended: Instant,
        sent: Instant,
    },
    /// What went wrong with the exchange whose `Done` comes next (the
    /// errors table's detail; absent for `ok`).
    Failed(Failure),
    /// An exchange finished.
    Done(Outcome),
    /// A step refreshed its credentials (ran its `refresh.from` again).
    Refreshed { at: Instant },
    /// A scenario's iteration ended in `class` (`ok`: every step ok;
    /// `unfinished`: cut short because nothing more could be sent). Not
    /// reported when not even its first step was sent.
    Iteration {
        scenario: usize,
        class: Class,
        end: Instant,
    },
}

/// The server refused every protocol offered by ALPN.
fn no_alpn(e: &std::io::Error) -> bool {
    e.get_ref()
        .and_then(|i| i.downcast_ref::<rustls::Error>())
        .is_some_and(|r| {
            matches!(
                r,
                rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol)
                    | rustls::Error::NoApplicationProtocol
            )
        })
}

/// Send the HTTP/2 client preface and an empty SETTINGS frame; an HTTP/2
/// server's first frame is its SETTINGS (RFC 9113 §3.4). An HTTP/1.1 server
/// answers `HTTP/1.1 400` or closes. A few bytes by hand: hyper's client
/// handshake does not wait for the server's SETTINGS.
async fn h2c_preface(tcp: &mut tokio::net::TcpStream, within: Duration) -> std::io::Result<bool> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
    tcp.write_all(PREFACE).await?;
    let mut head = [0u8; 9];
    match tokio::time::timeout(within, tcp.read_exact(&mut head)).await {
        Err(_) => Ok(false),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Ok(Err(e)) => Err(e),
        // A frame header: length (3), type (4 = SETTINGS), flags, stream 0.
        Ok(Ok(_)) => Ok(head[3] == 4 && head[5..9] == [0, 0, 0, 0]),
    }
}

/// Per-worker share of a level: the worker's and the shard's fraction.
fn share(cfg: &EngineConfig) -> f64 {
    1.0 / (cfg.workers as f64 * cfg.shard.count as f64)
}

pub(crate) fn is_stopped(stop: &AtomicBool) -> bool {
    stop.load(Ordering::Relaxed)
}
