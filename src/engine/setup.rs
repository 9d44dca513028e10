//! `setup:` and `teardown:`: steps sent once, outside the load, on one
//! connection of their own, in order — as a scenario's iteration, with
//! `{{ vars.NAME }}` between its steps and `think_time` after a step. None
//! of it is measured in the phases: each step's outcome, status and time go
//! to a [`OnceRecord`] instead.
//!
//! What the setup extracts is bound once into the templates' shared state
//! ([`template::Shared::bind_setup`]) before the load, and every request
//! (teardown included) reads it as `{{ setup.NAME }}`. A setup step does
//! not send a `target.headers` entry that reads `{{ setup.… }}`: its value
//! is not known yet (see [`super::client::prepare_steps`]). A failed step
//! (not `optional`), an extraction that found nothing, or a name left
//! unextracted fails the setup.
//!
//! Which process runs them in a sharded run, and how the values reach the
//! other shards, is `run`'s part (`run::setup`).

use std::time::{Duration, Instant};

use bytes::Bytes;

use super::client::{LaneConn, Prepared, Target};
use super::template::{self, Ctx};
use super::EngineConfig;
use crate::metrics::Class;
use crate::profile::RequestSpec;
use crate::vocab::setup::{OnceRecord, OnceStep};

/// A `setup:` or `teardown:` list compiled (empty when the profile has none).
#[derive(Default)]
pub struct OnceSteps {
    steps: Vec<Prepared>,
    optional: Vec<bool>,
    think: Vec<Option<Duration>>,
    /// The names its steps extract, in [`template::scenario_vars`] order.
    pub names: Vec<String>,
    /// A setup (its names must all be extracted), not a teardown.
    setup: bool,
}

/// What a run of the steps left: its record and what it extracted.
pub struct OnceOutcome {
    pub record: OnceRecord,
    /// In [`OnceSteps::names`] order; complete when the record is ok.
    pub values: Vec<Bytes>,
}

impl OnceSteps {
    /// `steps` of section `sect` (`setup` or `teardown`), `prepared` as
    /// [`super::client::prepare_steps`] compiled them.
    pub(super) fn new(sect: &str, steps: &[RequestSpec], prepared: Vec<Prepared>) -> OnceSteps {
        OnceSteps {
            steps: prepared,
            optional: steps.iter().map(|s| s.optional).collect(),
            think: steps.iter().map(|s| s.think_time).collect(),
            names: template::scenario_vars(steps),
            setup: sect == "setup",
        }
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// The longest the steps may take: every step its timeouts and think time.
    pub fn bound(&self, t: &Target) -> Duration {
        self.think
            .iter()
            .map(|th| t.timeout + t.connect_timeout + th.unwrap_or_default())
            .sum()
    }
}

/// Send `steps` once, in order, on a connection of their own (on a thread
/// of their own: the calling thread's template state stays untouched).
pub fn run_once(cfg: &EngineConfig, steps: &OnceSteps) -> OnceOutcome {
    std::thread::scope(|s| {
        s.spawn(|| {
            match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => {
                    let local = tokio::task::LocalSet::new();
                    local.block_on(&rt, send_steps(cfg, steps))
                }
                Err(e) => failed(format!("cannot start its runtime: {e}")),
            }
        })
        .join()
        .unwrap_or_else(|_| failed("its thread panicked".into()))
    })
}

fn failed(error: String) -> OnceOutcome {
    OnceOutcome {
        record: OnceRecord::failed(error),
        values: Vec::new(),
    }
}

async fn send_steps(cfg: &EngineConfig, once: &OnceSteps) -> OnceOutcome {
    let mut conn = LaneConn::default();
    let mut vars: Vec<Option<Bytes>> = vec![None; once.names.len()];
    let mut record = OnceRecord::begun(if once.setup {
        once.names.clone()
    } else {
        Vec::new()
    });
    let began = Instant::now();
    for (k, p) in once.steps.iter().enumerate() {
        let msg = match &p.dynamic {
            None => None,
            Some(d) => match d.render(
                &cfg.templates,
                &Ctx {
                    vars: &vars,
                    ..Ctx::default()
                },
            ) {
                Some(m) => Some(m),
                None => {
                    record.ok = false;
                    record.error = Some(format!(
                        "step {}: a `unique` feeder ran out before it could be sent",
                        p.name
                    ));
                    break;
                }
            },
        };
        let sent = Instant::now();
        let answer = conn
            .exchange_within(&cfg.target, p, msg, p.has_check())
            .await;
        let latency_ms = sent.elapsed().as_secs_f64() * 1000.0;
        let (class, status, error) = match answer {
            Some(a) => {
                for (i, v) in a.extracted {
                    if let Some(slot) = vars.get_mut(i) {
                        *slot = Some(v);
                    }
                }
                let error = match (&a.failure, a.class) {
                    (Some(f), _) => Some(f.what.text()),
                    (None, Class::Ok) => None,
                    (None, c) => Some(c.name().to_string()),
                };
                (a.class, (a.status > 0).then_some(a.status), error)
            }
            None => (
                Class::Timeout,
                None,
                Some(format!(
                    "no answer within {} (the request timeout)",
                    humantime::format_duration(cfg.target.timeout)
                )),
            ),
        };
        record.steps.push(OnceStep {
            name: p.name.clone(),
            outcome: class.name().to_string(),
            status,
            latency_ms,
            error: error.clone(),
        });
        if class != Class::Ok && !once.optional.get(k).copied().unwrap_or(false) {
            record.ok = false;
            record.error = Some(format!(
                "step {}: {}",
                p.name,
                error.unwrap_or_else(|| class.name().to_string())
            ));
            break;
        }
        if let Some(t) = once.think.get(k).copied().flatten() {
            if k + 1 < once.steps.len() {
                tokio::time::sleep(t).await;
            }
        }
    }
    record.took_ms = began.elapsed().as_secs_f64() * 1000.0;
    if record.ok && once.setup {
        if let Some(i) = vars.iter().position(Option::is_none) {
            record.ok = false;
            record.error = Some(format!(
                "nothing was extracted for `{}` (its step is optional and failed)",
                once.names[i]
            ));
        }
    }
    let values = if record.ok {
        vars.into_iter().flatten().collect()
    } else {
        Vec::new()
    };
    OnceOutcome { record, values }
}
