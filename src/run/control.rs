//! Shards that act as one run (`brunt run --shard I/N --control ADDR`): a
//! stop by design or by hand in any shard — a stress breach, a `unique`
//! feeder run out, Ctrl-C — stops every shard within a bounded time, and
//! each says which shard stopped it and why. Shard 1 serves the control
//! endpoint at ADDR (`export::http`, as `/metrics` is served); every shard,
//! shard 1 too, watches its own stop flag and the endpoint every
//! [`POLL`]. The first stop posted wins. Nothing new to run: the shards
//! already share the `--start-at` clock, and shard 1's address is the one
//! thing they need (a headless Service in `brunt k8s`).
//!
//! A shard that cannot reach the endpoint goes on alone and says so; the
//! load never waits on it (its own thread, short timeouts).
//!
//! The endpoint ([`Server`]) is bound before the run's `setup:` and also
//! serves the setup's outcome at `GET /setup` (what `run::setup` publishes:
//! the values other shards fetch before the start). Plain HTTP: the values
//! cross the network between the shards as they are. Each other shard posts
//! `/done` when its load has drained, so shard 1's teardown can wait for
//! them ([`Ended`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::export::http::{self, Answer};
use crate::judge::StopKind;

/// How often each shard looks at its stop flag and the endpoint.
pub const POLL: Duration = Duration::from_millis(250);
const TIMEOUT: Duration = Duration::from_millis(800);
/// How long shard 1 answers after its own load ended.
const SERVE_ON: Duration = Duration::from_secs(5);
/// Shard 1 may bind a little after the others first look: failures this
/// early are not yet "unreachable".
const STARTUP: Duration = Duration::from_secs(5);

/// A stop, as the shards tell each other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedStop {
    /// 1-based shard that stopped first.
    pub shard: u32,
    pub kind: StopKind,
    pub reason: String,
}

/// Why this shard's stop flag went up, read when it does.
#[derive(Clone, Default)]
pub struct LocalCauses {
    /// Set by the recorder before it stops a stress run at a breach.
    pub breach: Arc<OnceLock<String>>,
    /// A signal's name (Ctrl-C when unset).
    pub signal: Option<Arc<OnceLock<String>>>,
    /// Why the engine stopped itself (a `unique` feeder ran out).
    pub engine: Option<Arc<dyn Fn() -> Option<String> + Send + Sync>>,
}

impl LocalCauses {
    fn read(&self) -> (StopKind, String) {
        if let Some(b) = self.breach.get() {
            return (StopKind::Breach, b.clone());
        }
        if let Some(r) = self.engine.as_ref().and_then(|f| f()) {
            return (StopKind::DataExhausted, r);
        }
        let by = self.signal.as_ref().and_then(|s| s.get()).cloned();
        (
            StopKind::Interrupted,
            format!(
                "stopped by {}",
                by.as_deref().unwrap_or("the user (Ctrl-C)")
            ),
        )
    }
}

/// The control endpoint's side of shard 1: the first stop posted.
struct Board(Mutex<Option<SharedStop>>);

impl Board {
    fn post(&self, s: SharedStop) {
        if let Ok(mut b) = self.0.lock() {
            b.get_or_insert(s);
        }
    }
    fn get(&self) -> Option<SharedStop> {
        self.0.lock().ok().and_then(|b| b.clone())
    }
}

/// Shard 1's endpoint: `/stop` (the first stop posted) and `/setup` (the
/// setup's outcome, once published). Bound before the setup; stopped by
/// [`Control::finish`] (or at once when dropped).
pub struct Server {
    board: Arc<Board>,
    ended: Arc<Ended>,
    setup: Arc<Mutex<Option<Vec<u8>>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Bind `addr` (see [`listen_addr`]) and serve it from a thread of its own.
    pub fn start(addr: &str, notices: &crate::vocab::Say) -> std::io::Result<Server> {
        let l = std::net::TcpListener::bind(listen_addr(addr))?;
        l.set_nonblocking(true)?;
        let board = Arc::new(Board(Mutex::new(None)));
        let ended: Arc<Ended> = Arc::default();
        let setup: Arc<Mutex<Option<Vec<u8>>>> = Arc::default();
        let (b, su, en) = (board.clone(), setup.clone(), ended.clone());
        let answer: Answer = Arc::new(move |a| match (a.method, a.path) {
            ("GET", "/stop") => {
                let body = serde_json::to_vec(&b.get()).unwrap_or_default();
                (200, "application/json", body)
            }
            ("POST", "/stop") => match parse_post(a.query) {
                Some(s) => {
                    b.post(s);
                    (200, "application/json", b"{}".to_vec())
                }
                None => (400, "text/plain", b"shard, kind, reason\n".to_vec()),
            },
            ("POST", "/done") => match shard_of(a.query) {
                Some(n) => {
                    en.mark(n);
                    (200, "application/json", b"{}".to_vec())
                }
                None => (400, "text/plain", b"shard\n".to_vec()),
            },
            ("GET", "/setup") => match su.lock().ok().and_then(|s| s.clone()) {
                Some(body) => (200, "application/json", body),
                None => (503, "text/plain", b"setup not done yet\n".to_vec()),
            },
            _ => (
                404,
                "text/plain",
                b"brunt's shard control serves /stop, /setup and /done\n".to_vec(),
            ),
        });
        let (tx, rx) = tokio::sync::oneshot::channel();
        let n = notices.clone();
        let thread = std::thread::Builder::new()
            .name("brunt-control".into())
            .spawn(move || http::serve(l, answer, rx, &n, "shard control"))?;
        Ok(Server {
            board,
            ended,
            setup,
            stop: Some(tx),
            thread: Some(thread),
        })
    }

    /// What `GET /setup` answers from now on.
    pub fn publish_setup(&self, body: Vec<u8>) {
        if let Ok(mut s) = self.setup.lock() {
            *s = Some(body);
        }
    }
}

/// The shards (1-based) whose load has ended and drained, as they said.
#[derive(Default)]
pub struct Ended(Mutex<std::collections::BTreeSet<u32>>);

impl Ended {
    fn mark(&self, shard: u32) {
        if let Ok(mut e) = self.0.lock() {
            e.insert(shard);
        }
    }

    /// Wait until shards 2..=`count` all said so, at most `within`; the
    /// shards that did not, in order.
    pub fn wait(&self, count: u32, within: Duration) -> Vec<u32> {
        let until = Instant::now() + within;
        loop {
            let missing: Vec<u32> = match self.0.lock() {
                Ok(e) => (2..=count).filter(|n| !e.contains(n)).collect(),
                Err(_) => Vec::new(),
            };
            if missing.is_empty() || Instant::now() >= until {
                return missing;
            }
            std::thread::sleep(POLL / 5);
        }
    }
}

/// Where this shard stands with the others.
pub struct Control {
    /// The stop another shard made, when this shard stopped with it.
    pub peer: Arc<OnceLock<SharedStop>>,
    /// The endpoint could not be reached at some point (said in the summary).
    pub unreachable: Arc<OnceLock<String>>,
    /// Shard 1: the other shards whose load has ended.
    pub ended: Option<Arc<Ended>>,
    done: Arc<AtomicBool>,
    server_stop: Option<tokio::sync::oneshot::Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

impl Control {
    /// Start watching: shard 1 (`index` 0) hands in its [`Server`], bound
    /// at `addr` (`HOST:PORT`; a name is resolved, as a pod's own DNS name
    /// is in Kubernetes) before the setup; every shard watches `stop` and
    /// the endpoint.
    pub fn start(
        addr: &str,
        index: u32,
        server: Option<Server>,
        stop: Arc<AtomicBool>,
        causes: LocalCauses,
        ends: Instant,
        notices: crate::vocab::Say,
    ) -> std::io::Result<Control> {
        let mut threads = Vec::new();
        let mut server_stop = None;
        let mut board = None;
        let mut ended = None;
        if let Some(mut sv) = server.filter(|_| index == 0) {
            board = Some(sv.board.clone());
            ended = Some(sv.ended.clone());
            server_stop = sv.stop.take();
            threads.extend(sv.thread.take());
        }
        let peer: Arc<OnceLock<SharedStop>> = Arc::default();
        let unreachable: Arc<OnceLock<String>> = Arc::default();
        let done = Arc::new(AtomicBool::new(false));
        let w = Watch {
            base: format!("http://{addr}/stop"),
            shard: index + 1,
            local: board,
            stop,
            causes,
            peer: peer.clone(),
            unreachable: unreachable.clone(),
            done: done.clone(),
            ends,
            started: Instant::now(),
            notices,
        };
        threads.push(
            std::thread::Builder::new()
                .name("brunt-control-watch".into())
                .spawn(move || w.run())?,
        );
        Ok(Control {
            peer,
            unreachable,
            ended,
            done,
            server_stop,
            threads,
        })
    }

    /// Stop watching (at the end of the load, after the drain). Shard 1
    /// serves on for [`SERVE_ON`] while this process judges and writes, so a
    /// shard that polls late still reads the stop; the process may end sooner.
    pub fn finish(mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(tx) = self.server_stop.take() {
            let _ = std::thread::Builder::new()
                .name("brunt-control-end".into())
                .spawn(move || {
                    std::thread::sleep(SERVE_ON);
                    let _ = tx.send(());
                });
        }
        // The watcher ends within a poll; the server thread is left to its stop.
        if let Some(watcher) = self.threads.pop() {
            let _ = watcher.join();
        }
    }
}

/// Where shard 1 listens for `addr`: the address itself when it is one
/// (`127.0.0.1:5670`), every interface at its port when it is a name (the
/// name is for the other shards to find shard 1, e.g. a pod's DNS name).
pub fn listen_addr(addr: &str) -> String {
    match addr.rsplit_once(':') {
        Some((host, port))
            if host
                .trim_matches(['[', ']'])
                .parse::<std::net::IpAddr>()
                .is_err() =>
        {
            format!("0.0.0.0:{port}")
        }
        _ => addr.to_string(),
    }
}

/// `shard=N` of a query.
fn shard_of(query: &str) -> Option<u32> {
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "shard")
        .and_then(|(_, v)| v.parse().ok())
}

/// `shard=2&kind=breach&reason=…` (percent-encoded).
fn parse_post(query: &str) -> Option<SharedStop> {
    let mut shard = None;
    let mut kind = None;
    let mut reason = String::new();
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        match &*k {
            "shard" => shard = v.parse().ok(),
            "kind" => kind = serde_json::from_value(serde_json::Value::String(v.into_owned())).ok(),
            "reason" => reason = v.into_owned(),
            _ => {}
        }
    }
    Some(SharedStop {
        shard: shard?,
        kind: kind?,
        reason,
    })
}

/// One shard's watcher thread.
struct Watch {
    base: String,
    shard: u32,
    /// Shard 1 posts to its own board without a round trip.
    local: Option<Arc<Board>>,
    stop: Arc<AtomicBool>,
    causes: LocalCauses,
    peer: Arc<OnceLock<SharedStop>>,
    unreachable: Arc<OnceLock<String>>,
    done: Arc<AtomicBool>,
    /// The plan's end: shard 1 may be gone after it (its run over), not lost.
    ends: Instant,
    started: Instant,
    notices: crate::vocab::Say,
}

impl Watch {
    fn run(self) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(TIMEOUT))
            .http_status_as_error(false)
            .build()
            .into();
        let mut posted = false;
        loop {
            // Read before posting: a load that stops and drains within one
            // poll still has its stop posted on the way out.
            let finishing = self.done.load(Ordering::Relaxed);
            // Our own stop first: tell the others (once).
            if self.stop.load(Ordering::Relaxed) && self.peer.get().is_none() && !posted {
                let (kind, reason) = self.causes.read();
                let s = SharedStop {
                    shard: self.shard,
                    kind,
                    reason,
                };
                posted = match &self.local {
                    Some(b) => {
                        b.post(s);
                        true
                    }
                    None => self.post(&agent, &s),
                };
            }
            if finishing {
                if self.local.is_none() {
                    // Shard 1's teardown waits for this (see `Ended`).
                    let done = self.base.replace("/stop", "/done");
                    let _ = agent
                        .post(&format!("{done}?shard={}", self.shard))
                        .send_empty();
                }
                return;
            }
            // Then theirs: a stop posted by another shard stops this one.
            if self.peer.get().is_none() {
                let seen = match &self.local {
                    Some(b) => b.get(),
                    None => self.get(&agent),
                };
                if let Some(s) = seen.filter(|s| s.shard != self.shard) {
                    if !self.stop.load(Ordering::Relaxed) {
                        self.notices
                            .line(format!("stopping with shard {}: {}", s.shard, s.reason));
                        let _ = self.peer.set(s);
                        self.stop.store(true, Ordering::Relaxed);
                    }
                }
            }
            std::thread::sleep(POLL);
        }
    }

    fn get(&self, agent: &ureq::Agent) -> Option<SharedStop> {
        let r = agent
            .get(&self.base)
            .call()
            .and_then(|mut r| r.body_mut().read_to_string());
        match r {
            Ok(text) => serde_json::from_str::<Option<SharedStop>>(&text)
                .ok()
                .flatten(),
            Err(e) => {
                self.lost(&e.to_string());
                None
            }
        }
    }

    fn post(&self, agent: &ureq::Agent, s: &SharedStop) -> bool {
        let kind = serde_json::to_value(s.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let q: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("shard", &s.shard.to_string())
            .append_pair("kind", &kind)
            .append_pair("reason", &s.reason)
            .finish();
        match agent.post(&format!("{}?{q}", self.base)).send_empty() {
            Ok(r) if r.status().is_success() => true,
            Ok(r) => {
                self.lost(&format!("HTTP {}", r.status()));
                false
            }
            Err(e) => {
                self.lost(&e.to_string());
                false
            }
        }
    }

    fn lost(&self, why: &str) {
        let now = Instant::now();
        if now + POLL >= self.ends || now < self.started + STARTUP {
            return;
        }
        if self
            .unreachable
            .set(format!("{}: {why}", self.base))
            .is_ok()
        {
            self.notices.warn(format!(
                "shard control {} unreachable ({why}): this shard goes on, but a stop elsewhere may not reach it",
                self.base
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_posted_stop_is_read_back() {
        let s =
            super::parse_post("shard=3&kind=data_exhausted&reason=feeder%20%60u%60%20ran%20out");
        assert_eq!(
            s,
            Some(super::SharedStop {
                shard: 3,
                kind: crate::judge::StopKind::DataExhausted,
                reason: "feeder `u` ran out".into()
            })
        );
        assert_eq!(super::parse_post("kind=breach"), None, "a shard is needed");
        assert_eq!(super::listen_addr("127.0.0.1:5670"), "127.0.0.1:5670");
        assert_eq!(super::listen_addr("[::1]:5670"), "[::1]:5670");
        assert_eq!(super::listen_addr("job-0.job-control:5670"), "0.0.0.0:5670");
        assert_eq!(super::parse_post("shard=1&kind=nope"), None, "a known kind");
    }
}
