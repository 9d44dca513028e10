//! `setup:` once before the load, `teardown:` once after it, for the whole
//! run (the engine sends them: `engine::setup`).
//!
//! When: the setup runs after the preflight and the run directory's
//! creation, before the `--start-at` wait, the run clock, the collectors
//! and the load — so it is in no phase and in none of the collectors'
//! phase marks; its record (steps, statuses, times) goes to `setup.json`
//! and the summary. A failed setup stops the run there ([`RunError::Setup`],
//! exit 1): nothing of the load is sent, and the run directory keeps
//! `setup.json` and a `setup_failed` event saying why. The teardown runs when
//! the load has ended — at the plan's end or after a stop (Ctrl-C, a
//! breach, a feeder run out, another shard's stop) — before the judging; a
//! failed teardown is reported (a warning, a summary note) and the load's
//! verdict and exit code stay as they are: it cleans up after the
//! measurement and is not part of it.
//!
//! Sharded runs: shard 1 runs the setup for the whole run and publishes
//! the outcome on its control endpoint (`GET /setup`, see `run::control`);
//! every other shard fetches it before the start and binds the same values,
//! or fails as shard 1 did. Shard 1 runs the teardown after its last phase,
//! once the other shards said their load has drained (`/done`; it waits
//! at most [`ENDED_WAIT`], then says which shards did not).
//! Without `--control` a sharded run with `setup:` is refused (bad input):
//! shards that do not talk would each run it, and a setup that seeds data
//! or takes a one-time token must run once. `brunt k8s` always passes `--control`.
//!
//! The values may be secrets: they never reach the run directory (the
//! records hold names, statuses and times), and they cross the network
//! between shards only through the control endpoint, in plain HTTP.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use base64::Engine as _;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::{control, RunError, RunOptions, RunSpec};
use crate::engine::setup::{run_once, OnceOutcome};
use crate::rundir;
use crate::vocab::setup::OnceRecord;

/// How long past the setup's own bound the other shards wait for shard 1
/// (it may start later than they do).
const FETCH_SLACK: Duration = Duration::from_secs(30);

/// How long shard 1 waits for the other shards' loads to end before its
/// teardown (within the time its endpoint serves on after its own load).
const ENDED_WAIT: Duration = Duration::from_secs(4);

/// What shard 1 serves at `GET /setup`.
#[derive(Serialize, Deserialize)]
struct Share {
    record: OnceRecord,
    /// By name, base64 (a value is bytes, not always text).
    values: BTreeMap<String, String>,
}

/// Refuse, before anything starts, a sharded run whose `setup:` would run
/// once per shard (see the module doc).
pub(super) fn check(spec: &RunSpec, opts: &RunOptions) -> Result<(), RunError> {
    if opts.shard.count > 1 && opts.control.is_none() && !spec.engine.setup.is_empty() {
        return Err(RunError::Invalid(
            "`setup:` runs once for the whole run: a sharded run needs --control HOST:PORT (shard 1 runs the setup and hands its values to the other shards; `brunt k8s` sets it)".into(),
        ));
    }
    Ok(())
}

/// Run the setup (shard 1 or an unsharded run) or fetch its outcome from
/// shard 1, record it in `dir`, and bind its values for the load.
pub(super) fn before_load(
    spec: &RunSpec,
    opts: &RunOptions,
    dir: &Path,
    server: Option<&control::Server>,
) -> Result<(), RunError> {
    let cfg = &spec.engine;
    if cfg.setup.is_empty() {
        return Ok(());
    }
    let sharded = opts.shard.count > 1;
    let out = if opts.shard.index == 0 {
        opts.say.line(format!(
            "setup: {} step(s), once before the load",
            cfg.setup.len()
        ));
        let mut out = run_once(cfg, &cfg.setup);
        if sharded {
            out.record.shard = Some(1);
        }
        if let Some(sv) = server {
            sv.publish_setup(share(&cfg.setup.names, &out));
        }
        out
    } else {
        let addr = opts.control.as_deref().unwrap_or_default();
        opts.say
            .line(format!("setup: waiting for shard 1's at {addr}"));
        fetch(spec, opts, addr)
    };
    rundir::edit_setup(dir, |f| f.setup = Some(out.record.clone()))?;
    let line = out.record.line("setup");
    if !out.record.ok {
        let mut events = rundir::EventLog::create(dir)?;
        events.push(&serde_json::json!({"event": "setup_failed", "why": line}))?;
        if server.is_some() {
            // The other shards poll: let them read the failure before this process ends.
            std::thread::sleep(control::POLL * 3);
        }
        return Err(RunError::Setup(format!(
            "{line}; nothing of the load was sent"
        )));
    }
    opts.say.line(line);
    cfg.templates.bind_setup(out.values);
    Ok(())
}

/// Run the teardown (shard 1 or an unsharded run) and record it in `dir`;
/// shard 1 first waits (at most [`ENDED_WAIT`]) for the other shards to say
/// their load has ended (`ended`).
pub(super) fn after_load(
    spec: &RunSpec,
    opts: &RunOptions,
    dir: &Path,
    ended: Option<&control::Ended>,
) -> Result<(), RunError> {
    let cfg = &spec.engine;
    if cfg.teardown.is_empty() || opts.shard.index != 0 {
        return Ok(());
    }
    if let Some(e) = ended {
        let missing = e.wait(opts.shard.count, ENDED_WAIT);
        if !missing.is_empty() {
            let shards: Vec<String> = missing.iter().map(u32::to_string).collect();
            opts.say.warn(format!(
                "teardown: shard(s) {} did not say their load ended within {} s; tearing down now",
                shards.join(", "),
                ENDED_WAIT.as_secs()
            ));
        }
    }
    let mut out = run_once(cfg, &cfg.teardown);
    if opts.shard.count > 1 {
        out.record.shard = Some(1);
    }
    let line = out.record.line("teardown");
    if out.record.ok {
        opts.say.line(line);
    } else {
        opts.say.warn(format!("{line} (the load's verdict stands)"));
    }
    rundir::edit_setup(dir, |f| f.teardown = Some(out.record))?;
    Ok(())
}

/// The body of `GET /setup`: the record and, when it went through, the values.
fn share(names: &[String], out: &OnceOutcome) -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let values = names
        .iter()
        .zip(&out.values)
        .map(|(n, v)| (n.clone(), b64.encode(v)))
        .collect();
    serde_json::to_vec(&Share {
        record: out.record.clone(),
        values,
    })
    .unwrap_or_default()
}

/// Poll shard 1's `/setup` until it answers, the run is stopped, or the
/// setup's bound (plus [`FETCH_SLACK`]) has passed since the later of now
/// and `--start-at`.
fn fetch(spec: &RunSpec, opts: &RunOptions, addr: &str) -> OnceOutcome {
    let cfg = &spec.engine;
    let from = opts
        .start_at
        .and_then(|at| at.duration_since(SystemTime::now()).ok())
        .unwrap_or_default();
    let deadline = Instant::now() + from + cfg.setup.bound(&cfg.target) + FETCH_SLACK;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_millis(800)))
        .http_status_as_error(false)
        .build()
        .into();
    let url = format!("http://{addr}/setup");
    let mut last = String::from("no answer yet");
    let failed = |why: String| OnceOutcome {
        record: OnceRecord {
            shard: Some(1),
            ..OnceRecord::failed(why)
        },
        values: Vec::new(),
    };
    while Instant::now() < deadline {
        if opts
            .stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
        {
            return failed("stopped while waiting for shard 1's setup".into());
        }
        match agent.get(&url).call() {
            Ok(mut r) if r.status().is_success() => {
                let body = r.body_mut().read_to_string().unwrap_or_default();
                return match serde_json::from_str::<Share>(&body) {
                    Ok(s) => bind_share(&cfg.setup.names, s).unwrap_or_else(failed),
                    Err(e) => failed(format!("shard 1's /setup answer: {e}")),
                };
            }
            Ok(r) => last = format!("HTTP {}", r.status()),
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(control::POLL);
    }
    failed(format!(
        "shard 1's setup did not reach this shard at {url} ({last})"
    ))
}

/// The values of a fetched share, in `names` order.
fn bind_share(names: &[String], s: Share) -> Result<OnceOutcome, String> {
    if !s.record.ok {
        return Ok(OnceOutcome {
            record: s.record,
            values: Vec::new(),
        });
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    let values = names
        .iter()
        .map(|n| {
            let v = s
                .values
                .get(n)
                .ok_or_else(|| format!("shard 1's setup has no value `{n}` (another profile?)"))?;
            b64.decode(v)
                .map(Bytes::from)
                .map_err(|e| format!("shard 1's value `{n}`: {e}"))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(OnceOutcome {
        record: s.record,
        values,
    })
}
