//! Closed model: virtual users, each sending its next request only after the
//! previous answer (plus think time). The level of each phase is a number of
//! VUs; VU `v` belongs to worker/shard `v mod stride`. Closed-loop latency
//! hides queueing (a slow server slows the offered load): reports say so.
//!
//! A request counts as offered when a VU sends it. When the plan ends or
//! the run is stopped, VUs send nothing more; what they have in flight gets
//! up to the request timeout, and what is still running then is recorded as
//! `unfinished`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::client::{LaneConn, Pool};
use super::scenario::{send_one, Session};
use super::Event;
use super::{is_stopped, EngineConfig, Worker};
use crate::metrics::{Class, WorkerRecorder};

/// A VU's pick under way: its phase, the scenario and when the iteration
/// started, and the step being sent (request, sent) — `None` during a think time.
#[derive(Debug, Clone, Copy)]
struct Running {
    phase: usize,
    scenario: Option<usize>,
    started: Instant,
    step: Option<(usize, Instant)>,
}

struct State {
    level: Cell<f64>,
    phase: Cell<usize>,
    done: Cell<bool>,
    /// What each VU is running, by the VU's slot in this worker (a slab,
    /// not a map: three updates per request on the hot path).
    running: RefCell<Vec<Option<Running>>>,
    busy: Cell<u64>,
    /// The drain is over: what was running has been recorded as
    /// unfinished, and a late answer must not be recorded again.
    closed: Cell<bool>,
}

impl State {
    fn running(&self) -> u64 {
        self.busy.get()
    }
    fn set(&self, slot: usize, run: Running) {
        let mut r = self.running.borrow_mut();
        if r.len() <= slot {
            r.resize(slot + 1, None);
        }
        if r[slot].replace(run).is_none() {
            self.busy.set(self.busy.get() + 1);
        }
    }
    fn clear(&self, slot: usize) {
        if let Some(r) = self.running.borrow_mut().get_mut(slot) {
            if r.take().is_some() {
                self.busy.set(self.busy.get() - 1);
            }
        }
    }
}

pub(super) async fn run(w: Worker) {
    let state = Rc::new(State {
        level: Cell::new(0.0),
        phase: Cell::new(0),
        done: Cell::new(false),
        running: RefCell::new(Vec::new()),
        busy: Cell::new(0),
        closed: Cell::new(false),
    });
    let (stride, offset) = w.stride_offset();
    let total = w.cfg.plan.total();
    let mut spawned: u64 = 0; // VUs of this worker spawned so far
                              // HTTP/2: `streams_per_connection` VUs of this worker share a connection.
    let pool = Pool::new(&w.cfg.target, w.cfg.load.streams_per_connection);
    let mut iv = tokio::time::interval(Duration::from_millis(50));
    loop {
        iv.tick().await;
        let now = Instant::now();
        let t = now.saturating_duration_since(w.start);
        w.tick(state.running(), now);
        if t >= total || is_stopped(&w.stop) {
            break;
        }
        let idx = w.cfg.plan.phase_at(t);
        let Some(phase) = w.cfg.plan.phases.get(idx) else {
            break;
        };
        let level = phase.level_at(t.saturating_sub(phase.info.start));
        state.level.set(level);
        state.phase.set(idx);
        // Spawn this worker's VUs whose global index is below the level.
        loop {
            let v = spawned * stride + offset;
            if (v as f64) >= level.round() {
                break;
            }
            let slot = spawned as usize;
            let conn = pool.conn(slot);
            spawned += 1;
            tokio::task::spawn_local(vu(
                w.cfg.clone(),
                (v, slot),
                conn,
                state.clone(),
                w.rec.clone(),
                w.stop.clone(),
            ));
        }
    }
    // Wind down: VUs send nothing more; what is running gets up to the
    // request timeout, then is recorded as unfinished.
    state.done.set(true);
    w.live.enter_drain(w.index, state.running());
    let deadline = Instant::now() + w.cfg.target.timeout;
    while state.running() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
        w.tick(state.running(), Instant::now());
    }
    state.closed.set(true);
    let now = Instant::now();
    let mut r = w.rec.borrow_mut();
    state.busy.set(0);
    for run in std::mem::take(&mut *state.running.borrow_mut())
        .into_iter()
        .flatten()
    {
        // The step under way was offered when it was sent.
        if let Some((req, sent)) = run.step {
            r.unfinished(run.phase, req, sent, Some(sent), now);
        }
        if let Some(sc) = run.scenario {
            r.iteration(run.phase, sc, Class::Unfinished, run.started, now);
        }
    }
    r.in_flight = 0;
    w.live.set_in_flight(w.index, 0);
}

/// `v`: the VU's global index; `slot`: its index in this worker.
async fn vu(
    cfg: Arc<EngineConfig>,
    (v, slot): (u64, usize),
    conn: LaneConn,
    state: Rc<State>,
    rec: Rc<RefCell<WorkerRecorder>>,
    stop: Arc<AtomicBool>,
) {
    let mut rng = fastrand::Rng::with_seed(v.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut n: u64 = 0;
    let mut session = Session::new(conn);
    loop {
        if state.done.get() || is_stopped(&stop) {
            break;
        }
        if (v as f64) >= state.level.get().round() {
            // Ramped down: this VU rests until the level rises again.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        let phase = state.phase.get();
        let req = cfg.pick(&mut rng);
        let p = &cfg.requests[req];
        n += 1;
        let check = p.has_check() && n.is_multiple_of(p.check_every);
        // Closed loop: the request is due when it is sent.
        let start = Instant::now();
        let scenario = cfg.scenario_of(req);
        let mut run = Running {
            phase,
            scenario,
            started: start,
            step: None,
        };
        state.set(slot, run);
        let sent = send_one(&cfg, &mut session, phase, req, start, check, |e| {
            if state.closed.get() {
                return; // given up at the end of the drain, and recorded then
            }
            let mut r = rec.borrow_mut();
            match e {
                // Closed loop: a request is offered when the VU sends it.
                Event::Due { request, sent, .. } => {
                    r.offered(phase, sent);
                    run.step = Some((request, sent));
                }
                Event::Failed(f) => r.failure(f),
                Event::Refreshed { at } => r.refreshed(phase, at),
                Event::Done(o) => {
                    run.step = None;
                    r.record(o);
                }
                Event::Iteration {
                    scenario,
                    class,
                    end,
                } => r.iteration(phase, scenario, class, start, end),
            }
            state.set(slot, run);
        })
        .await;
        if state.closed.get() {
            break;
        }
        state.clear(slot);
        // Not sent: a unique feeder ran out and the run is stopping.
        let Some(class) = sent else { break };
        if let Some(think) = cfg.load.think_time {
            tokio::time::sleep(think).await;
        } else if class != Class::Ok && class != Class::Shed {
            // A refused connection fails in microseconds: don't spin on it.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
