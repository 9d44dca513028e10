//! One pick of the mix on a lane's connection ([`send_one`]): a request, or
//! a scenario's steps in order, and the [`Event`]s it reports as it goes for
//! the caller (open or closed model) to record; the [`Session`] a virtual
//! user or a lane keeps between picks (its cookie jar).

use std::time::Instant;

use bytes::Bytes;
use hyper::header::COOKIE;

use super::cookies::Jar;
use super::refresh::{Creds, Refresh};
use super::template::Ctx;
use super::{client, EngineConfig, Event, Unit};
use crate::metrics::errors::Failure;
use crate::metrics::{Class, Outcome};
use crate::profile::{CookieMode, Model};

/// What a virtual user (closed model) or a lane (open model) keeps
/// between its picks: its connection and its cookies.
pub(super) struct Session {
    pub conn: client::LaneConn,
    /// Per virtual user; in the open model only for `cookies: per_lane`.
    pub jar: Jar,
    /// Picks of the mix so far (`{{ iteration }}`).
    pub iteration: u64,
}

impl Session {
    pub fn new(conn: client::LaneConn) -> Session {
        Session {
            conn,
            jar: Jar::default(),
            iteration: 0,
        }
    }
}

/// One pick of the mix on a lane's connection: a request, or each step of a
/// scenario in order, with its think time between steps (a step that fails
/// ends the iteration, unless it is `optional`), its `repeat` loops, and its
/// credentials refreshed as `refresh` says. Every exchange is bounded by the
/// request timeout (a timed-out connection is in an unknown state and is
/// dropped) and handed to `report`; a scenario's iteration is reported once
/// at its end. Returns the class of the last exchange, or `None` when
/// nothing was sent: a `unique` feeder has run out (and the run's stop flag
/// is set).
pub(super) async fn send_one(
    cfg: &EngineConfig,
    session: &mut Session,
    phase: usize,
    request: usize,
    intended: Instant,
    check: bool,
    mut report: impl FnMut(Event),
) -> Option<Class> {
    let unit = cfg.unit_at.get(request).copied().flatten().unwrap_or(Unit {
        first: request,
        steps: 1,
        vars: 0,
        scenario: None,
        cookies: CookieMode::Off,
    });
    // Empty and unallocated until an answer sets a cookie.
    let mut own = Jar::default();
    let mut jar = match (unit.cookies, cfg.load.model) {
        (CookieMode::Off, _) => None,
        (CookieMode::Session, Model::Open) => Some(&mut own),
        _ => Some(&mut session.jar),
    };
    let conn = &mut session.conn;
    let mut pick = Pick {
        cfg,
        phase,
        // Allocated only for scenarios that extract.
        vars: vec![None; unit.vars],
        iteration: session.iteration,
        repeat: 0,
        sends: 0,
        creds: Creds::default(),
    };
    session.iteration += 1;
    let mut last = None;
    // When the next step could start: the previous answer plus its think time.
    let mut due = intended;
    let mut ended = Class::Ok;
    // The loop under way (`repeat`).
    let mut rep: Option<Rep> = None;
    let mut k = 0;
    while k < unit.steps {
        let index = unit.first + k;
        let p = &cfg.requests[index];
        if let Some(l) = cfg.loop_at.get(index).copied().flatten() {
            if rep.is_none_or(|r| r.start != k) {
                rep = Some(Rep {
                    start: k,
                    end: k + l.len,
                    times: fastrand::u32(l.lo..=l.hi),
                    index: 0,
                });
            }
        }
        pick.repeat = rep.map_or(0, |r| u64::from(r.index));
        if pick.sends > 0 && due > Instant::now() {
            tokio::time::sleep_until(tokio::time::Instant::from_std(due)).await;
        }
        // A later step is due when the one before it has answered (plus think time).
        let (intended, check) = if pick.sends == 0 {
            (intended, check)
        } else {
            let sampled = p.has_check() && fastrand::u64(..).is_multiple_of(p.check_every.max(1));
            (due, sampled)
        };
        if let Some(step) = cfg.ws.get(index) {
            let Some(sent) = pick.socket(step, index, intended, &mut report).await else {
                ended = Class::Unfinished;
                break;
            };
            last = Some(sent.class);
            if sent.class != Class::Ok && !cfg.optional.get(index).copied().unwrap_or(false) {
                ended = sent.class;
                break;
            }
            due = sent.end + cfg.think.get(index).copied().flatten().unwrap_or_default();
            k = rep_next(&mut rep, k + 1);
            continue;
        }
        let guard = cfg.refresh.at.get(index).and_then(|r| r.as_deref());
        // A budget ran out: log in again before sending (nothing is retried).
        if let Some(r) = guard.filter(|r| pick.creds.due(r, Instant::now())) {
            match pick.refresh(conn, jar.as_deref_mut(), r, &mut report).await {
                Some(s) if s.class == Class::Ok => {}
                s => {
                    last = s.map(|s| s.class).or(last);
                    ended = s.map_or(Class::Unfinished, |s| s.class);
                    break;
                }
            }
        }
        if guard.is_some() {
            pick.creds.used();
        }
        let shot = Shot {
            index,
            intended,
            check,
            retry_on: guard.map(|r| r.on_status.as_slice()),
        };
        let Some(mut sent) = pick.send(conn, jar.as_deref_mut(), shot, &mut report).await else {
            ended = Class::Unfinished;
            break;
        };
        // Expired: the answer was `retried`; log in again and send once more.
        if let Some(r) = guard.filter(|_| sent.class == Class::Retried) {
            sent = match pick.refresh(conn, jar.as_deref_mut(), r, &mut report).await {
                Some(s) if s.class == Class::Ok => {
                    pick.creds.used();
                    let again = Shot {
                        index,
                        intended: Instant::now(),
                        check,
                        retry_on: None,
                    };
                    match pick
                        .send(conn, jar.as_deref_mut(), again, &mut report)
                        .await
                    {
                        Some(s) => s,
                        None => {
                            ended = Class::Unfinished;
                            break;
                        }
                    }
                }
                Some(s) => s,
                None => {
                    ended = Class::Unfinished;
                    break;
                }
            };
        }
        last = Some(sent.class);
        let optional = cfg.optional.get(index).copied().unwrap_or(false);
        if sent.class != Class::Ok && !optional {
            ended = sent.class;
            break;
        }
        due = sent.end + cfg.think.get(index).copied().flatten().unwrap_or_default();
        k = rep_next(&mut rep, k + 1);
    }
    // An iteration of which nothing was sent is the caller's to account for.
    if let (Some(scenario), Some(_)) = (unit.scenario, last) {
        report(Event::Iteration {
            scenario,
            class: ended,
            end: Instant::now(),
        });
    }
    last
}

/// What a pick's exchanges share: its variables, counters and credentials.
struct Pick<'a> {
    cfg: &'a EngineConfig,
    phase: usize,
    vars: Vec<Option<Bytes>>,
    iteration: u64,
    /// The repetition under way (`{{ repeat.index }}`).
    repeat: u64,
    /// Exchanges sent so far.
    sends: usize,
    creds: Creds,
}

/// One exchange: request `index`, due at `intended`; with `retry_on`, an
/// answer of one of those statuses (or whose body matched the step's
/// `refresh.body_regex`) is `retried`.
struct Shot<'a> {
    index: usize,
    intended: Instant,
    check: bool,
    retry_on: Option<&'a [u16]>,
}

/// What one exchange came to.
#[derive(Clone, Copy)]
struct Sent {
    class: Class,
    end: Instant,
}

impl Pick<'_> {
    /// Render, send and report one exchange (cookies added and kept,
    /// values extracted, credentials renewed by a login); `None`: not
    /// sent, a `unique` feeder ran out.
    async fn send(
        &mut self,
        conn: &mut client::LaneConn,
        jar: Option<&mut Jar>,
        shot: Shot<'_>,
        report: &mut impl FnMut(Event),
    ) -> Option<Sent> {
        let cfg = self.cfg;
        let index = shot.index;
        let p = &cfg.requests[index];
        let mut msg = match &p.dynamic {
            None => None,
            Some(d) => Some(d.render(
                &cfg.templates,
                &Ctx {
                    vars: &self.vars,
                    iteration: self.iteration,
                    repeat: self.repeat,
                    setup: &[],
                },
            )?),
        };
        let origin = cfg.target.origin();
        if let Some(j) = jar.as_deref() {
            if let Some(v) = j.header(origin, p.path_of(msg.as_ref())) {
                msg = Some(p.message_with(&cfg.target, msg, &[(COOKIE, v)]));
            }
        }
        let (msg, trace) = super::trace::stamp(cfg.trace.as_ref(), &cfg.target, p, msg);
        // The URI a `Set-Cookie` answers (the rendered one goes into the exchange).
        let uri = msg
            .as_ref()
            .filter(|_| jar.is_some())
            .map(|m| m.uri().clone());
        let sent = Instant::now();
        report(Event::Due {
            step: self.sends,
            request: index,
            intended: shot.intended,
            sent,
        });
        self.sends += 1;
        let (class, retry_after, connect, failure) =
            match conn.exchange_within(&cfg.target, p, msg, shot.check).await {
                Some(a) => {
                    if let (Some(j), false) = (jar, a.set_cookies.is_empty()) {
                        let path = match &uri {
                            Some(u) => u.path_and_query().map_or("/", |x| x.as_str()),
                            None => p.path_of(None),
                        };
                        j.store(origin, path, &a.set_cookies);
                    }
                    for (i, v) in a.extracted {
                        if let Some(slot) = self.vars.get_mut(i) {
                            *slot = Some(v);
                        }
                    }
                    let expired = shot.retry_on.is_some_and(|on| {
                        a.expired || (a.class != Class::Ok && on.contains(&a.status))
                    });
                    let class = if expired { Class::Retried } else { a.class };
                    (class, a.retry_after, a.connected, a.failure)
                }
                None => (Class::Timeout, false, None, Some(timed_out(cfg))),
            };
        let end = Instant::now();
        if let Some(f) = failure {
            report(Event::Failed(f));
        }
        if class == Class::Ok && cfg.refresh.renews.get(index).copied().unwrap_or(false) {
            let slot = cfg.refresh.expires.get(index).copied().flatten();
            self.creds.renewed(end, slot, &self.vars);
        }
        report(Event::Done(Outcome {
            phase: self.phase,
            request: index,
            class,
            intended: shot.intended,
            sent,
            end,
            retry_after,
            connect,
            trace,
        }));
        Some(Sent { class, end })
    }

    /// A WebSocket step ([`super::ws`]), its outcomes reported as it goes;
    /// `None`: its upgrade request could not be rendered.
    async fn socket(
        &mut self,
        step: &super::ws::Step,
        index: usize,
        intended: Instant,
        report: &mut impl FnMut(Event),
    ) -> Option<Sent> {
        let ctx = Ctx {
            vars: &[],
            iteration: self.iteration,
            repeat: self.repeat,
            setup: &[],
        };
        let place = (self.phase, self.sends, index);
        // Its connect, messages and lifetime are each a send of the pick.
        let mut sends = 0;
        let mut counted = |e: Event| {
            if matches!(e, Event::Due { .. }) {
                sends += 1;
            }
            report(e)
        };
        let r = super::ws::run(
            self.cfg,
            step,
            &mut self.vars,
            ctx,
            place,
            intended,
            &mut counted,
        )
        .await;
        self.sends += sends.max(1);
        r.map(|(class, end)| Sent { class, end })
    }

    /// Run `r`'s login step again (recorded under its own name) and count
    /// the refresh.
    async fn refresh(
        &mut self,
        conn: &mut client::LaneConn,
        jar: Option<&mut Jar>,
        r: &Refresh,
        report: &mut impl FnMut(Event),
    ) -> Option<Sent> {
        let login = Shot {
            index: r.from,
            intended: Instant::now(),
            check: false,
            retry_on: None,
        };
        let s = self.send(conn, jar, login, report).await;
        report(Event::Refreshed { at: Instant::now() });
        s
    }
}

/// The step after the one that ended before `k`: back to the loop's first
/// while repetitions are left.
fn rep_next(rep: &mut Option<Rep>, k: usize) -> usize {
    match rep.as_mut().filter(|r| r.end == k) {
        Some(r) => {
            r.index += 1;
            if r.index < r.times {
                return r.start;
            }
            *rep = None;
            k
        }
        None => k,
    }
}

/// A `repeat` under way: steps `start..end` of the pick, sent `times`
/// times; `index` is the repetition under way (`{{ repeat.index }}`).
#[derive(Clone, Copy)]
struct Rep {
    start: usize,
    end: usize,
    times: u32,
    index: u32,
}

/// A request that ran out of its timeout, in the errors table's words.
fn timed_out(cfg: &EngineConfig) -> Failure {
    Failure::message(format!(
        "no answer within {} (the request timeout)",
        humantime::format_duration(cfg.target.timeout)
    ))
}
