//! Open model: requests start on a schedule whatever the server does.
//!
//! The scheduler computes each arrival's intended time from the phase's
//! level (a linear ramp), sleeps until it, and queues a ticket. Lanes (one
//! connection each, at most `connections`) take tickets; a ticket waiting
//! for a lane still has its latency counted from the intended time, which is
//! what removes coordinated omission. When queued + running reaches
//! `max_in_flight`, the arrival is counted as dropped.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::client::Conn;
use super::{is_stopped, send_one, share, EngineConfig, Live};
use crate::metrics::WorkerRecorder;
use crate::profile::{Arrival, Phase};

struct Ticket {
    intended: Instant,
    phase: usize,
    req: usize,
}

struct Lanes {
    queue: RefCell<VecDeque<Ticket>>,
    notify: Notify,
    idle: Cell<usize>,
    lanes: Cell<usize>,
    /// Queued + running.
    in_flight: Cell<u64>,
    done: Cell<bool>,
}

fn per_worker(total: usize, cfg: &EngineConfig) -> usize {
    ((total as f64) * share(cfg)).ceil().max(1.0) as usize
}

/// Offset of the k-th arrival (global index `j`) from the phase start, or
/// `None` when it falls after the phase. Level ramps linearly a → b over d:
/// N(t) = a·t + (b−a)·t²/(2d); solve N(t) = j.
fn constant_arrival(j: f64, a: f64, b: f64, d: f64) -> Option<f64> {
    let t = if (b - a).abs() < 1e-12 {
        if a <= 0.0 {
            return None;
        }
        j / a
    } else {
        let c = (b - a) / d;
        let disc = a * a + 2.0 * c * j;
        if disc < 0.0 {
            return None;
        }
        (disc.sqrt() - a) / c
    };
    (t.is_finite() && t < d).then_some(t)
}

pub(super) async fn run(
    cfg: Arc<EngineConfig>,
    worker: usize,
    start: Instant,
    rec: Rc<RefCell<WorkerRecorder>>,
    stop: Arc<AtomicBool>,
    live: Arc<Live>,
) {
    let max_conns = per_worker(cfg.load.connections, &cfg);
    let max_in_flight = per_worker(cfg.load.max_in_flight, &cfg) as u64;
    let lanes = Rc::new(Lanes {
        queue: RefCell::new(VecDeque::new()),
        notify: Notify::new(),
        idle: Cell::new(0),
        lanes: Cell::new(0),
        in_flight: Cell::new(0),
        done: Cell::new(false),
    });

    // Cut windows on time even when nothing completes (a stalled target).
    {
        let rec = rec.clone();
        let lanes = lanes.clone();
        let live = live.clone();
        tokio::task::spawn_local(async move {
            let mut iv = tokio::time::interval(Duration::from_millis(100));
            loop {
                iv.tick().await;
                let n = lanes.in_flight.get();
                if let Some(slot) = live.in_flight.get(worker) {
                    slot.store(n, Ordering::Relaxed);
                }
                let mut r = rec.borrow_mut();
                r.in_flight = n;
                r.tick(Instant::now());
            }
        });
    }

    let stride = (cfg.workers as u64) * cfg.shard.count as u64;
    let offset = cfg.shard.index as u64 * cfg.workers as u64 + worker as u64;
    let mut rng = fastrand::Rng::with_seed(0x9e37_79b9 ^ offset);

    'phases: for phase in &cfg.plan.phases {
        let p_start = start + phase.info.start;
        let d = phase.info.duration.as_secs_f64();
        let mut k: u64 = 0;
        let mut t = 0.0f64;
        loop {
            let next = match cfg.load.arrival {
                Arrival::Constant => {
                    let j = (k * stride + offset) as f64;
                    k += 1;
                    constant_arrival(j, phase.from, phase.to, d)
                }
                Arrival::Poisson => poisson_next(&mut rng, phase, t, share(&cfg)),
            };
            let Some(off) = next else {
                // No more arrivals: wait out the phase (a zero-rate phase still lasts).
                if !sleep_checking(p_start + phase.info.duration, &stop).await {
                    break 'phases;
                }
                break;
            };
            t = off;
            let intended = p_start + Duration::from_secs_f64(off);
            if !sleep_checking(intended, &stop).await {
                break 'phases;
            }
            let idx = phase.info.index;
            let mut r = rec.borrow_mut();
            r.sched_lag(Instant::now().saturating_duration_since(intended));
            r.offered(idx, intended);
            if lanes.in_flight.get() >= max_in_flight {
                r.dropped(idx, intended);
                continue;
            }
            drop(r);
            lanes.in_flight.set(lanes.in_flight.get() + 1);
            let req = cfg.pick(&mut rng);
            lanes.queue.borrow_mut().push_back(Ticket {
                intended,
                phase: idx,
                req,
            });
            if lanes.idle.get() == 0 && lanes.lanes.get() < max_conns {
                lanes.lanes.set(lanes.lanes.get() + 1);
                tokio::task::spawn_local(lane(cfg.clone(), lanes.clone(), rec.clone()));
            } else {
                lanes.notify.notify_one();
            }
        }
    }

    // Wind down: after a stop, forget what has not been sent; then give
    // running requests up to their timeout (a few seconds after a stop).
    let stopped = is_stopped(&stop);
    if stopped {
        let n = lanes.queue.borrow().len() as u64;
        lanes.queue.borrow_mut().clear();
        lanes.in_flight.set(lanes.in_flight.get().saturating_sub(n));
    }
    lanes.done.set(true);
    lanes.notify.notify_waiters();
    let grace = if stopped {
        cfg.target.timeout.min(Duration::from_secs(3))
    } else {
        cfg.target.timeout + Duration::from_secs(1)
    };
    let deadline = Instant::now() + grace;
    while lanes.in_flight.get() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut r = rec.borrow_mut();
    r.in_flight = lanes.in_flight.get();
}

/// Next arrival of a Poisson process whose rate follows the phase's ramp.
fn poisson_next(rng: &mut fastrand::Rng, phase: &Phase, mut t: f64, share: f64) -> Option<f64> {
    let d = phase.info.duration.as_secs_f64();
    loop {
        let rate = phase.level_at(Duration::from_secs_f64(t.min(d))) * share;
        if rate <= 0.0 {
            // Nothing at this level; look a little later (ramps up from zero).
            t += 0.01;
        } else {
            let u = 1.0 - rng.f64(); // (0, 1]
            t += -u.ln() / rate;
            if t < d {
                return Some(t);
            }
        }
        if t >= d {
            return None;
        }
    }
}

/// Sleep until `when`, waking at least every 100 ms to notice a stop.
/// Returns false when stopped.
async fn sleep_checking(when: Instant, stop: &AtomicBool) -> bool {
    loop {
        if is_stopped(stop) {
            return false;
        }
        let now = Instant::now();
        if now >= when {
            return true;
        }
        let step = (when - now).min(Duration::from_millis(100));
        tokio::time::sleep(step).await;
    }
}

async fn lane(cfg: Arc<EngineConfig>, lanes: Rc<Lanes>, rec: Rc<RefCell<WorkerRecorder>>) {
    let mut conn = Conn::default();
    let mut n: u64 = 0;
    loop {
        let ticket = lanes.queue.borrow_mut().pop_front();
        let Some(t) = ticket else {
            if lanes.done.get() {
                break;
            }
            lanes.idle.set(lanes.idle.get() + 1);
            lanes.notify.notified().await;
            lanes.idle.set(lanes.idle.get() - 1);
            continue;
        };
        let p = &cfg.requests[t.req];
        n += 1;
        let check = p.has_check() && n.is_multiple_of(p.check_every);
        send_one(&cfg, &mut conn, t.phase, t.req, t.intended, check, |o| {
            rec.borrow_mut().record(o)
        })
        .await;
        lanes.in_flight.set(lanes.in_flight.get().saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::constant_arrival;

    #[test]
    fn constant_rate_arrivals() {
        assert_eq!(constant_arrival(0.0, 100.0, 100.0, 10.0), Some(0.0));
        assert!((constant_arrival(50.0, 100.0, 100.0, 10.0).unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(constant_arrival(1000.0, 100.0, 100.0, 10.0), None);
        // Ramp 0 → 100 over 10 s: 500 arrivals in total, the 125th at 5 s.
        assert!((constant_arrival(125.0, 0.0, 100.0, 10.0).unwrap() - 5.0).abs() < 1e-9);
        assert_eq!(constant_arrival(501.0, 0.0, 100.0, 10.0), None);
        assert_eq!(constant_arrival(0.0, 0.0, 0.0, 10.0), None);
    }
}
