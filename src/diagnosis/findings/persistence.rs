//! Persistence: which contention (same lock, same pool, same deadlock)
//! is seen again across several dumps of one JVM.

use std::collections::BTreeMap;

use super::finding::{Detail, Evidence, Finding, Severity};
use crate::diagnosis::model::ThreadDump;

/// Across several dumps: which contention (same lock, same pool) persists.
pub fn persistence(dumps: &[&ThreadDump], per_dump: &[Vec<Finding>]) -> Vec<Finding> {
    let n = dumps.len();
    if n < 2 {
        return vec![];
    }
    // key → (dumps seen, holders, last finding)
    let mut seen: BTreeMap<String, (usize, Vec<Option<String>>, &Finding)> = BTreeMap::new();
    for fs in per_dump {
        for f in fs {
            // A GC can move a monitor between dumps: follow a lock by its
            // class and the waiters' entry frame, not by its address.
            let (holder, key) = match &f.detail {
                Detail::LockContention {
                    holder,
                    class,
                    entry_frames,
                    ..
                } => (
                    holder.clone(),
                    format!(
                        "lock:{class}:{}",
                        entry_frames.first().map(|e| e.0.as_str()).unwrap_or("")
                    ),
                ),
                Detail::PoolWait { .. } | Detail::Deadlock { .. } => (None, f.key.clone()),
                _ => continue,
            };
            let e = seen.entry(key).or_insert((0, vec![], f));
            e.0 += 1;
            e.1.push(holder);
            e.2 = f;
        }
    }
    seen.into_iter()
        .map(|(key, (count, holders, last))| {
            let same_holder = holders.windows(2).all(|w| w.first() == w.get(1))
                && holders.first().is_some_and(Option::is_some);
            let persistent = count == n;
            let subject = last.summary.clone();
            Finding {
                severity: if persistent {
                    last.severity.max(Severity::Medium)
                } else {
                    Severity::Info
                },
                summary: format!(
                    "{} in {count} of {n} dumps{}: {subject}",
                    if persistent {
                        "persists"
                    } else {
                        "comes and goes"
                    },
                    if same_holder {
                        ", same holder each time"
                    } else {
                        ""
                    }
                ),
                key: format!("persist:{key}"),
                evidence: Evidence {
                    file: last.evidence.file.clone(),
                    ..last.evidence.clone()
                },
                detail: Detail::Persistence {
                    subject: key,
                    seen_in: count,
                    of_dumps: n,
                    same_holder,
                    persistent,
                },
            }
        })
        .collect()
}
