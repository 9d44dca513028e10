//! Lock contention in one dump: threads blocked on a monitor (`waiting to
//! lock`) or parked on an ownable synchronizer, grouped by lock, with the
//! holder and the pool the waiters belong to.

use std::collections::{BTreeMap, HashMap};

use super::finding::{dump_evidence, threads, waiting_severity, Detail, Finding, Severity};
use super::pools::{app_frame, pool_of, top_counts};
use crate::diagnosis::jfr::is_internal_frame;
use crate::diagnosis::model::{Frame, LockKind, ThreadDump, ThreadInfo};

/// A contended lock: `monitor` or `ownable`, its address and class.
struct Lock {
    ty: String,
    addr: String,
    class: String,
}

/// Waiters grouped by (lock type, address).
type Waiters<'a> = BTreeMap<(String, String), Vec<&'a ThreadInfo>>;

/// Contention findings, the most waiters first; locks whose every waiter
/// is in a reported deadlock are left to the deadlock finding.
pub(super) fn lock_contention(
    d: &ThreadDump,
    app_threads: &[&ThreadInfo],
    pool_size: &HashMap<String, usize>,
) -> Vec<Finding> {
    let (by_lock, lock_class) = waiters_by_lock(app_threads);
    let in_deadlock = |n: &str| {
        d.deadlocks
            .iter()
            .any(|dl| dl.edges.iter().any(|e| e.thread == n))
    };
    let mut contention = vec![];
    for ((ty, addr), waiters) in by_lock {
        if waiters.iter().all(|w| in_deadlock(&w.name)) {
            continue; // reported as a deadlock
        }
        let class = lock_class.get(&addr).cloned().unwrap_or_else(|| "?".into());
        let lock = Lock { ty, addr, class };
        let holder = holder_of(app_threads, &lock);
        contention.push(contention_finding(d, lock, &waiters, holder, pool_size));
    }
    contention.sort_by_key(|f| std::cmp::Reverse(waiters_of(f)));
    contention
}

fn waiters_by_lock<'a>(app_threads: &[&'a ThreadInfo]) -> (Waiters<'a>, HashMap<String, String>) {
    let mut by_lock: Waiters<'a> = BTreeMap::new();
    let mut lock_class: HashMap<String, String> = HashMap::new();
    for &t in app_threads {
        if let Some(l) = t.waiting_to_lock() {
            if let Some(a) = &l.addr {
                by_lock
                    .entry(("monitor".into(), a.clone()))
                    .or_default()
                    .push(t);
                if let Some(c) = &l.class {
                    lock_class.insert(a.clone(), c.clone());
                }
            }
        } else if let Some(l) = t.parked_on() {
            let (Some(a), Some(c)) = (&l.addr, &l.class) else {
                continue;
            };
            let owned_elsewhere = app_threads.iter().any(|o| {
                o.ownable_synchronizers
                    .iter()
                    .any(|s| s.addr.as_ref() == Some(a))
            });
            if owned_elsewhere || (c.ends_with("Sync") && c.contains("Lock")) {
                by_lock
                    .entry(("ownable".into(), a.clone()))
                    .or_default()
                    .push(t);
                lock_class.insert(a.clone(), c.clone());
            }
        }
    }
    (by_lock, lock_class)
}

fn holder_of<'a>(app_threads: &[&'a ThreadInfo], lock: &Lock) -> Option<&'a ThreadInfo> {
    app_threads.iter().copied().find(|t| {
        if lock.ty == "monitor" {
            t.held_monitors()
                .iter()
                .any(|l| l.addr.as_ref() == Some(&lock.addr))
        } else {
            t.ownable_synchronizers
                .iter()
                .any(|l| l.addr.as_ref() == Some(&lock.addr))
        }
    })
}

fn contention_finding(
    d: &ThreadDump,
    lock: Lock,
    waiters: &[&ThreadInfo],
    holder: Option<&ThreadInfo>,
    pool_size: &HashMap<String, usize>,
) -> Finding {
    let names: Vec<String> = waiters.iter().map(|w| w.name.clone()).collect();
    let entry_frames = top_counts(waiters.iter().map(|w| entry_frame(&lock.ty, w)));
    let pools = top_counts(waiters.iter().map(|w| pool_of(&w.name)));
    let pool = pools.first().map(|p| p.0.clone());
    let psize = pool.as_ref().and_then(|p| pool_size.get(p).copied());
    let n = waiters.len();
    let in_pool = pools.first().map(|p| p.1).unwrap_or(n);
    // Half of a pool of 4 or more blocked on one lock is high however few that is.
    let severity = if psize.is_some_and(|s| s >= 4 && in_pool * 2 >= s) {
        Severity::High
    } else {
        waiting_severity(n)
    };
    let who = match (pool.as_deref(), psize) {
        (Some(p), Some(s)) if p.ends_with('*') => {
            format!(
                "{in_pool} of {s} `{}` threads",
                p.trim_end_matches(['-', '*'])
            )
        }
        _ => threads(n),
    };
    let extra = if n > in_pool {
        format!(" (+{} other)", n - in_pool)
    } else {
        String::new()
    };
    let summary = format!("{who}{extra} {}", lock_summary(&lock, holder));
    let Lock { ty, addr, class } = lock;
    Finding {
        severity,
        summary,
        key: format!("lock:{class}@{addr}"),
        evidence: dump_evidence(d, names.clone()),
        detail: Detail::LockContention {
            lock_type: ty,
            address: addr,
            class,
            holder: holder.map(|h| h.name.clone()),
            holder_state: holder.map(|h| h.state().as_str().to_string()),
            holder_stack: holder
                .map(|h| h.frames.iter().take(16).map(Frame::display).collect())
                .unwrap_or_default(),
            waiters: names,
            entry_frames,
            pool,
            pool_size: psize,
        },
    }
}

/// The frame at which a waiter blocks; for park-based locks, its app frame.
fn entry_frame(ty: &str, w: &ThreadInfo) -> String {
    if ty == "monitor" {
        w.frames
            .iter()
            .find(|f| {
                f.locks
                    .iter()
                    .any(|l| matches!(l.kind, LockKind::WaitingToLock | LockKind::WaitingToRelock))
            })
            .map(Frame::short)
            .unwrap_or_default()
    } else {
        app_frame(&w.frames, 0).unwrap_or_default()
    }
}

/// `BLOCKED on `class` (addr), held by `holder` in `frame``.
fn lock_summary(lock: &Lock, holder: Option<&ThreadInfo>) -> String {
    let holder_frame = holder.and_then(|h| {
        // The frame that locked it, or the top application frame.
        h.frames
            .iter()
            .find(|f| f.locks.iter().any(|l| l.addr.as_ref() == Some(&lock.addr)))
            .or_else(|| h.frames.iter().find(|f| !is_internal_frame(&f.method)))
            .map(Frame::short)
    });
    let verb = if lock.ty == "monitor" {
        "BLOCKED on"
    } else {
        "waiting for"
    };
    let held = match (holder, &holder_frame) {
        (Some(h), Some(f)) => format!(", held by `{}` in `{f}`", h.name),
        (Some(h), None) => format!(", held by `{}`", h.name),
        _ => ", holder not in the dump".into(),
    };
    format!("{verb} `{}` ({}){held}", lock.class, lock.addr)
}

fn waiters_of(f: &Finding) -> usize {
    match &f.detail {
        Detail::LockContention { waiters, .. } => waiters.len(),
        _ => 0,
    }
}
