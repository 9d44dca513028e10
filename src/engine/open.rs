//! Open model: requests start on a schedule whatever the server does.
//!
//! The scheduler computes each arrival's intended time from the phase's
//! level (a linear ramp), sleeps until it, and queues a ticket. Lanes (one
//! connection each, at most `connections`; over HTTP/2 one stream each,
//! `connections` × `streams_per_connection`) take tickets; a ticket waiting
//! for a lane still has its latency counted from the intended time, which is
//! what removes coordinated omission. When queued + running reaches
//! `max_in_flight`, the arrival is counted as dropped.
//!
//! When the arrivals end (the plan is over, or the run is stopped) the
//! worker drains: lanes finish what is queued and running, for up to the
//! request timeout (after a stop the queue is given up at once). Every
//! ticket still queued or running then is recorded as `unfinished`.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::client::{LaneConn, Pool};
use super::scenario::{send_one, Session};
use super::Event;
use super::{is_stopped, share, EngineConfig, Worker};
use crate::metrics::{Class, WorkerRecorder};
use crate::profile::{Arrival, Phase};

#[derive(Debug, Clone, Copy)]
struct Ticket {
    intended: Instant,
    phase: usize,
    req: usize,
    /// The scenario this arrival runs (`None`: a plain request).
    scenario: Option<usize>,
}

/// What a lane is sending: its ticket, and the step under way (request,
/// when it was due, when it was sent); `None` between a scenario's steps.
#[derive(Debug, Clone, Copy)]
struct Running {
    ticket: Ticket,
    step: Option<(usize, Instant, Instant)>,
}

struct Lanes {
    queue: RefCell<VecDeque<Ticket>>,
    notify: Notify,
    idle: Cell<usize>,
    lanes: Cell<usize>,
    /// Queued + running.
    in_flight: Cell<u64>,
    /// No more arrivals: lanes stop once the queue is empty.
    done: Cell<bool>,
    /// What each lane is sending, by lane id.
    running: RefCell<Vec<Option<Running>>>,
    /// The drain is over: what was still running has been recorded as
    /// unfinished, and a late answer must not be recorded again.
    closed: Cell<bool>,
}

impl Lanes {
    /// Record every queued ticket as unfinished (never sent) at `now`.
    fn give_up_queued(&self, rec: &RefCell<WorkerRecorder>, now: Instant) {
        let queued: Vec<Ticket> = self.queue.borrow_mut().drain(..).collect();
        let mut r = rec.borrow_mut();
        for t in &queued {
            r.unfinished(t.phase, t.req, t.intended, None, now);
            if let Some(sc) = t.scenario {
                r.iteration(t.phase, sc, Class::Unfinished, t.intended, now);
            }
        }
        self.in_flight
            .set(self.in_flight.get().saturating_sub(queued.len() as u64));
    }

    /// End of the drain: record what is still queued or running as
    /// unfinished, and close the lanes to late answers.
    fn give_up_all(&self, rec: &RefCell<WorkerRecorder>, now: Instant) {
        self.give_up_queued(rec, now);
        self.closed.set(true);
        let mut r = rec.borrow_mut();
        for run in self
            .running
            .borrow_mut()
            .iter_mut()
            .filter_map(Option::take)
        {
            let t = run.ticket;
            // The step under way (none during a think time), and its iteration, are given up.
            if let Some((req, intended, sent)) = run.step {
                r.unfinished(t.phase, req, intended, Some(sent), now);
            }
            if let Some(sc) = t.scenario {
                r.iteration(t.phase, sc, Class::Unfinished, t.intended, now);
            }
        }
        self.in_flight.set(0);
    }
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

pub(super) async fn run(w: Worker) {
    // HTTP/2: a lane is a stream, `streams_per_connection` of them share a connection.
    let pool = Pool::new(&w.cfg.target, w.cfg.load.streams_per_connection);
    let max_conns = per_worker(w.cfg.load.connections, &w.cfg) * pool.streams();
    let max_in_flight = per_worker(w.cfg.load.max_in_flight, &w.cfg) as u64;
    let lanes = Rc::new(Lanes {
        queue: RefCell::new(VecDeque::new()),
        notify: Notify::new(),
        idle: Cell::new(0),
        lanes: Cell::new(0),
        in_flight: Cell::new(0),
        done: Cell::new(false),
        running: RefCell::new(Vec::new()),
        closed: Cell::new(false),
    });

    // Cut windows on time even when nothing completes (a stalled target).
    let w = Rc::new(w);
    {
        let (w, lanes) = (w.clone(), lanes.clone());
        tokio::task::spawn_local(async move {
            let mut iv = tokio::time::interval(Duration::from_millis(100));
            loop {
                iv.tick().await;
                w.tick(lanes.in_flight.get(), Instant::now());
            }
        });
    }

    let (stride, offset) = w.stride_offset();
    let mut rng = fastrand::Rng::with_seed(0x9e37_79b9 ^ offset);

    'phases: for phase in &w.cfg.plan.phases {
        let p_start = w.start + phase.info.start;
        let d = phase.info.duration.as_secs_f64();
        let mut k: u64 = 0;
        let mut t = 0.0f64;
        loop {
            let next = match w.cfg.load.arrival {
                Arrival::Constant => {
                    let j = (k * stride + offset) as f64;
                    k += 1;
                    constant_arrival(j, phase.from, phase.to, d)
                }
                Arrival::Poisson => poisson_next(&mut rng, phase, t, share(&w.cfg)),
            };
            let Some(off) = next else {
                // No more arrivals: wait out the phase (a zero-rate phase still lasts).
                if !sleep_checking(p_start + phase.info.duration, &w.stop).await {
                    break 'phases;
                }
                break;
            };
            t = off;
            let intended = p_start + Duration::from_secs_f64(off);
            if !sleep_checking(intended, &w.stop).await {
                break 'phases;
            }
            let idx = phase.info.index;
            let mut r = w.rec.borrow_mut();
            r.sched_lag(Instant::now().saturating_duration_since(intended));
            r.offered(idx, intended);
            if lanes.in_flight.get() >= max_in_flight {
                r.dropped(idx, intended);
                continue;
            }
            drop(r);
            lanes.in_flight.set(lanes.in_flight.get() + 1);
            let req = w.cfg.pick(&mut rng);
            lanes.queue.borrow_mut().push_back(Ticket {
                intended,
                phase: idx,
                req,
                scenario: w.cfg.scenario_of(req),
            });
            if lanes.idle.get() == 0 && lanes.lanes.get() < max_conns {
                let id = lanes.lanes.get();
                lanes.lanes.set(id + 1);
                lanes.running.borrow_mut().push(None);
                let conn = pool.conn(id);
                tokio::task::spawn_local(lane(
                    w.cfg.clone(),
                    id,
                    conn,
                    lanes.clone(),
                    w.rec.clone(),
                ));
            } else {
                lanes.notify.notify_one();
            }
        }
    }

    // Wind down: no more arrivals. After a stop what has not been sent is
    // given up at once; queued and running requests get up to the request
    // timeout; whatever is left then is recorded as unfinished.
    let deadline = Instant::now() + w.cfg.target.timeout;
    let mut queue_given_up = is_stopped(&w.stop);
    if queue_given_up {
        lanes.give_up_queued(&w.rec, Instant::now());
    }
    lanes.done.set(true);
    lanes.notify.notify_waiters();
    w.live.enter_drain(w.index, lanes.in_flight.get());
    loop {
        if !queue_given_up && is_stopped(&w.stop) {
            lanes.give_up_queued(&w.rec, Instant::now());
            queue_given_up = true;
        }
        if lanes.in_flight.get() == 0 || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    lanes.give_up_all(&w.rec, Instant::now());
    w.live.set_in_flight(w.index, 0);
    w.rec.borrow_mut().in_flight = 0;
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

async fn lane(
    cfg: Arc<EngineConfig>,
    id: usize,
    conn: LaneConn,
    lanes: Rc<Lanes>,
    rec: Rc<RefCell<WorkerRecorder>>,
) {
    let mut n: u64 = 0;
    let mut session = Session::new(conn);
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
        let sent = send_one(&cfg, &mut session, t.phase, t.req, t.intended, check, |e| {
            if lanes.closed.get() {
                return;
            }
            match e {
                Event::Due {
                    step,
                    request,
                    intended,
                    sent,
                } => {
                    // A scenario's later steps are offered when they become
                    // due (the first was on arrival), so offered = answered +
                    // dropped holds per step, as in the closed model.
                    if step > 0 {
                        rec.borrow_mut().offered(t.phase, intended);
                    }
                    set_running(
                        &lanes,
                        id,
                        Some(Running {
                            ticket: t,
                            step: Some((request, intended, sent)),
                        }),
                    );
                }
                Event::Failed(f) => rec.borrow_mut().failure(f),
                Event::Refreshed { at } => rec.borrow_mut().refreshed(t.phase, at),
                Event::Done(o) => {
                    // Between steps the iteration is still running.
                    set_running(
                        &lanes,
                        id,
                        Some(Running {
                            ticket: t,
                            step: None,
                        }),
                    );
                    rec.borrow_mut().record(o);
                }
                Event::Iteration {
                    scenario,
                    class,
                    end,
                } => rec
                    .borrow_mut()
                    .iteration(t.phase, scenario, class, t.intended, end),
            }
        })
        .await;
        if lanes.closed.get() {
            // Given up at the end of the drain, and recorded then.
            break;
        }
        set_running(&lanes, id, None);
        if sent.is_none() {
            // Due but never sent (a unique feeder ran out): still accounted for.
            let now = Instant::now();
            let mut r = rec.borrow_mut();
            r.unfinished(t.phase, t.req, t.intended, None, now);
            if let Some(sc) = t.scenario {
                r.iteration(t.phase, sc, Class::Unfinished, t.intended, now);
            }
        }
        lanes.in_flight.set(lanes.in_flight.get().saturating_sub(1));
    }
}

fn set_running(lanes: &Lanes, id: usize, what: Option<Running>) {
    if let Some(slot) = lanes.running.borrow_mut().get_mut(id) {
        *slot = what;
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
