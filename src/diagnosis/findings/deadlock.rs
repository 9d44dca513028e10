//! Deadlocks: cycles found in a dump's waits-for graph, and the findings
//! for the deadlocks a dump reports.

use super::finding::{dump_evidence, Detail, Finding, Severity};
use crate::diagnosis::model::{Deadlock, DeadlockEdge, LockLine, ThreadDump, ThreadInfo};

/// Deadlock cycles in a waits-for graph built from the dump itself (thread →
/// monitor or ownable synchronizer → its holder), for dumps where the JVM
/// did not report them (JSON dumps).
pub fn wait_cycles(threads: &[ThreadInfo]) -> Vec<Deadlock> {
    // For each thread: the lock it waits for and that lock's holder (index).
    let edge: Vec<Option<(usize, &LockLine)>> = threads
        .iter()
        .map(|t| {
            let (lock, monitor) = match (t.waiting_to_lock(), t.parked_on()) {
                (Some(l), _) => (l, true),
                (None, Some(l)) => (l, false),
                _ => return None,
            };
            let addr = lock.addr.as_ref()?;
            let holder = threads.iter().position(|h| {
                if monitor {
                    h.held_monitors()
                        .iter()
                        .any(|l| l.addr.as_ref() == Some(addr))
                } else {
                    h.ownable_synchronizers
                        .iter()
                        .any(|l| l.addr.as_ref() == Some(addr))
                }
            })?;
            Some((holder, lock))
        })
        .collect();
    let mut out = vec![];
    let mut reported = vec![false; threads.len()];
    for start in 0..threads.len() {
        // Walk the chain; a revisit of a node on this walk closes a cycle.
        let mut path = vec![];
        let mut cur = start;
        while let Some(Some((next, _))) = edge.get(cur) {
            if reported.get(cur).copied().unwrap_or(true) {
                break;
            }
            if let Some(pos) = path.iter().position(|p| *p == cur) {
                let cycle: Vec<usize> = path.get(pos..).map(<[usize]>::to_vec).unwrap_or_default();
                let mut edges = vec![];
                for &i in &cycle {
                    if let (Some(t), Some(Some((h, l)))) = (threads.get(i), edge.get(i)) {
                        edges.push(DeadlockEdge {
                            thread: t.name.clone(),
                            waiting_for: l.addr.clone(),
                            lock_class: l.class.clone(),
                            held_by: threads.get(*h).map(|h| h.name.clone()),
                        });
                    }
                    if let Some(r) = reported.get_mut(i) {
                        *r = true;
                    }
                }
                out.push(Deadlock { edges });
                break;
            }
            if path.len() > threads.len() {
                break;
            }
            path.push(cur);
            cur = *next;
        }
    }
    out
}

/// The deadlocks the JVM reported in dump `d`.
pub(super) fn deadlock_findings(d: &ThreadDump) -> Vec<Finding> {
    d.deadlocks
        .iter()
        .map(|dl| deadlock_finding(d, dl))
        .collect()
}

fn deadlock_finding(d: &ThreadDump, dl: &Deadlock) -> Finding {
    let names: Vec<String> = dl.edges.iter().map(|e| e.thread.clone()).collect();
    let desc = dl
        .edges
        .iter()
        .map(|e| {
            format!(
                "`{}` waits for {} held by `{}`",
                e.thread,
                e.lock_class.as_deref().unwrap_or("?"),
                e.held_by.as_deref().unwrap_or("?")
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let mut key_names = names.clone();
    key_names.sort();
    Finding {
        severity: Severity::Critical,
        summary: format!("deadlock between {} threads: {desc}", dl.edges.len()),
        key: format!("deadlock:{}", key_names.join(",")),
        evidence: dump_evidence(d, names),
        detail: Detail::Deadlock {
            cycle: dl.edges.clone(),
        },
    }
}
