//! Closed model: virtual users, each sending its next request only after the
//! previous answer (plus think time). The level of each phase is a number of
//! VUs; VU `v` belongs to worker/shard `v mod stride`. Closed-loop latency
//! hides queueing (a slow server slows the offered load): reports say so.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::client::Conn;
use super::{is_stopped, send_one, EngineConfig, Live};
use crate::metrics::{Class, WorkerRecorder};

struct State {
    level: Cell<f64>,
    phase: Cell<usize>,
    done: Cell<bool>,
    running: Cell<u64>,
}

pub(super) async fn run(
    cfg: Arc<EngineConfig>,
    worker: usize,
    start: Instant,
    rec: Rc<RefCell<WorkerRecorder>>,
    stop: Arc<AtomicBool>,
    live: Arc<Live>,
) {
    let state = Rc::new(State {
        level: Cell::new(0.0),
        phase: Cell::new(0),
        done: Cell::new(false),
        running: Cell::new(0),
    });
    let stride = (cfg.workers as u64) * cfg.shard.count as u64;
    let offset = cfg.shard.index as u64 * cfg.workers as u64 + worker as u64;
    let total = cfg.plan.total();
    let mut spawned: u64 = 0; // VUs of this worker spawned so far
    let mut iv = tokio::time::interval(Duration::from_millis(50));
    loop {
        iv.tick().await;
        let now = Instant::now();
        let t = now.saturating_duration_since(start);
        {
            let n = state.running.get();
            if let Some(slot) = live.in_flight.get(worker) {
                slot.store(n, Ordering::Relaxed);
            }
            let mut r = rec.borrow_mut();
            r.in_flight = n;
            r.tick(now);
        }
        if t >= total || is_stopped(&stop) {
            break;
        }
        let idx = cfg.plan.phase_at(t);
        let Some(phase) = cfg.plan.phases.get(idx) else {
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
            spawned += 1;
            tokio::task::spawn_local(vu(cfg.clone(), v, state.clone(), rec.clone(), stop.clone()));
        }
    }
    state.done.set(true);
    let grace = if is_stopped(&stop) {
        cfg.target.timeout.min(Duration::from_secs(3))
    } else {
        cfg.target.timeout + Duration::from_secs(1)
    };
    let deadline = Instant::now() + grace;
    while state.running.get() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn vu(
    cfg: Arc<EngineConfig>,
    v: u64,
    state: Rc<State>,
    rec: Rc<RefCell<WorkerRecorder>>,
    stop: Arc<AtomicBool>,
) {
    let mut conn = Conn::default();
    let mut rng = fastrand::Rng::with_seed(v.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut n: u64 = 0;
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
        state.running.set(state.running.get() + 1);
        // Closed loop: the request is due when it is sent.
        let sent = send_one(&cfg, &mut conn, phase, req, Instant::now(), check, |o| {
            let mut r = rec.borrow_mut();
            r.offered(phase, o.sent);
            r.record(o);
        })
        .await;
        state.running.set(state.running.get().saturating_sub(1));
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
