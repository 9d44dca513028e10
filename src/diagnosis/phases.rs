//! The thread picture the per-phase table is made of: what each dump's
//! threads were doing ([`Activity`]: running, BLOCKED, parked in a pool,
//! idle…) with its top lock and pool, and the JFR waits of each load phase
//! a recording covers ([`JfrPhase`]).

use std::collections::{HashMap, HashSet};

use super::findings::{Detail, Finding};
use super::jfr::{is_idle_stack, JfrRecording};
use super::model::{ThreadDump, ThreadState};
use super::PhaseWindow;
use crate::vocab::threads::{Activity, JfrPhase, JfrWait, LockTop, PoolTop};

/// Park / wait sites kept per phase.
const TOP_WAITS: usize = 3;

/// One dump's activity, from the dump and its findings (which already name
/// each lock's and pool's waiters).
pub fn dump_activity(d: &ThreadDump, findings: &[Finding]) -> Activity {
    let mut a = Activity::default();
    let mut in_pool: HashSet<&str> = HashSet::new();
    let mut in_channel: HashSet<&str> = HashSet::new();
    for f in findings {
        match &f.detail {
            Detail::LockContention {
                lock_type,
                class,
                holder,
                waiters,
                ..
            } if a
                .top_lock
                .as_ref()
                .is_none_or(|l| waiters.len() > l.waiters) =>
            {
                a.top_lock = Some(LockTop {
                    lock_type: lock_type.clone(),
                    class: class.clone(),
                    holder: holder.clone(),
                    waiters: waiters.len(),
                });
            }
            Detail::PoolWait {
                pool_kind, waiters, ..
            } => {
                in_pool.extend(waiters.iter().map(String::as_str));
                if a.top_pool
                    .as_ref()
                    .is_none_or(|p| waiters.len() > p.waiters)
                {
                    a.top_pool = Some(PoolTop {
                        pool: pool_kind.clone(),
                        waiters: waiters.len(),
                    });
                }
            }
            Detail::ChannelWait { waiters, .. } => {
                in_channel.extend(waiters.iter().map(String::as_str));
            }
            _ => {}
        }
    }
    for t in d.threads.iter().filter(|t| !t.internal) {
        a.threads += 1;
        let n = if in_pool.contains(t.name.as_str()) {
            &mut a.in_pool
        } else if in_channel.contains(t.name.as_str()) {
            &mut a.in_channel
        } else if t.state() == ThreadState::Blocked {
            &mut a.blocked
        } else if t.idle || is_idle_stack(&t.frames) {
            &mut a.idle
        } else if t.frames.is_empty() {
            // JVM service threads (compilers, Signal Dispatcher, Attach
            // Listener) print RUNNABLE with no Java frame: not the service's work.
            &mut a.other
        } else {
            match t.state() {
                ThreadState::Runnable => &mut a.runnable,
                ThreadState::Waiting | ThreadState::TimedWaiting => &mut a.waiting,
                _ => &mut a.other,
            }
        };
        *n += 1;
    }
    a
}

/// Per phase of `phases` some recording covers: monitor entries, the top
/// monitor and the heaviest park/wait sites, idle waits left out. Phases
/// no recording covers are absent (no JFR is not zero waits).
pub fn jfr_phases(recs: &[JfrRecording], phases: &[PhaseWindow]) -> Vec<JfrPhase> {
    let mut out = vec![];
    for p in phases {
        let phase_s = (p.end_unix - p.start_unix).max(0.0);
        let covered_s: f64 = recs
            .iter()
            .filter_map(|r| {
                let s = r.start_unix?;
                let e = s + r.duration_s;
                Some((e.min(p.end_unix) - s.max(p.start_unix)).max(0.0))
            })
            .sum::<f64>()
            .min(phase_s);
        if covered_s <= 0.0 {
            continue;
        }
        let mut jp = JfrPhase {
            phase: p.name.clone(),
            covered_s,
            phase_s,
            ..JfrPhase::default()
        };
        let mut monitors: HashMap<Option<&str>, (u64, f64)> = HashMap::new();
        let mut waits: HashMap<(&str, Option<&str>, &str), (u64, f64)> = HashMap::new();
        let sites = recs
            .iter()
            .flat_map(|r| &r.sites)
            .filter(|s| !s.idle && s.phase.as_deref() == Some(p.name.as_str()));
        for s in sites {
            let class = s.class.as_deref();
            let slot = if s.event == "jdk.JavaMonitorEnter" {
                jp.monitor_entries += s.count;
                jp.monitor_ms += s.total_ms;
                monitors.entry(class).or_default()
            } else {
                waits.entry((&s.event, class, &s.site)).or_default()
            };
            slot.0 += s.count;
            slot.1 += s.total_ms;
        }
        jp.top_monitor = monitors
            .into_iter()
            .max_by(|a, b| a.1 .1.total_cmp(&b.1 .1))
            .map(|(class, (count, total_ms))| JfrWait {
                event: "jdk.JavaMonitorEnter".into(),
                class: class.map(str::to_string),
                site: String::new(),
                count,
                total_ms,
            });
        let mut w: Vec<JfrWait> = waits
            .into_iter()
            .map(|((event, class, site), (count, total_ms))| JfrWait {
                event: event.to_string(),
                class: class.map(str::to_string),
                site: site.to_string(),
                count,
                total_ms,
            })
            .collect();
        w.sort_by(|a, b| b.total_ms.total_cmp(&a.total_ms).then(a.site.cmp(&b.site)));
        w.truncate(TOP_WAITS);
        jp.waits = w;
        out.push(jp);
    }
    out
}
