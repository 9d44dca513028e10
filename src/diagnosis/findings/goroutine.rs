//! A Go goroutine dump's (and a `py-spy dump`'s) findings, in the vocabulary the JVM dumps use:
//! the goroutine states (as thread states), `sync.Mutex` waiters per mutex
//! (a lock finding naming the site), goroutines waiting on a channel per
//! site (a channel finding), and identical-stack clusters of the rest —
//! idle goroutines (keep-alive readers, workers waiting for work) counted
//! but never ranked as contention. Go records no mutex owner: a lock
//! finding names the waiters' site, the mutex profile names the holder's.

use std::collections::{BTreeMap, HashSet};

use super::dump::{explained_threads, stack_clusters, thread_states};
use super::finding::{dump_evidence, waiting_severity, Detail, Finding, Options};
use super::pools::top_counts;
use crate::diagnosis::goroutines::{site, wait_of, waited_minutes, GoWait};
use crate::diagnosis::model::{DumpFormat, ThreadDump, ThreadInfo};

/// `3 goroutines (go)`, `1 thread (python)`.
fn who(d: &ThreadDump, n: usize) -> String {
    let unit = match d.format {
        DumpFormat::Goroutine => "goroutine",
        _ => "thread",
    };
    let runtime = d.jvm.as_deref().unwrap_or("?");
    format!("{n} {unit}{} ({runtime})", if n == 1 { "" } else { "s" })
}

/// Where a waiter waits: its first application frame.
fn site_of(d: &ThreadDump, t: &ThreadInfo) -> String {
    match d.format {
        DumpFormat::PySpy => crate::diagnosis::pyspy::site(&t.frames)
            .map(|f| format!("{} ({})", f.method, f.location))
            .unwrap_or_else(|| "?".into()),
        _ => site(&t.frames),
    }
}

fn longest(ts: &[&ThreadInfo]) -> (Option<u64>, String) {
    let m = ts.iter().filter_map(|t| waited_minutes(t)).max();
    let text = m
        .map(|m| format!(", the longest for {m} min"))
        .unwrap_or_default();
    (m, text)
}

/// All findings of one goroutine dump.
pub(super) fn goroutine_findings(d: &ThreadDump, opts: &Options) -> Vec<Finding> {
    let app: Vec<&ThreadInfo> = d.threads.iter().filter(|t| !t.internal).collect();
    let (states, _) = thread_states(d, &app);
    let mut out = vec![states];
    let mut locks: BTreeMap<(String, String), Vec<&ThreadInfo>> = BTreeMap::new();
    let mut channels: BTreeMap<(String, String), Vec<&ThreadInfo>> = BTreeMap::new();
    for &t in &app {
        match wait_of(t) {
            GoWait::Lock => {
                if let Some(l) = t.waiting_to_lock() {
                    let class = l.class.clone().unwrap_or_else(|| "sync.Mutex".into());
                    let addr = l.addr.clone().unwrap_or_default();
                    locks.entry((class, addr)).or_default().push(t);
                }
            }
            GoWait::Channel => {
                let op = t.state_detail.clone().unwrap_or_default();
                channels.entry((op, site_of(d, t))).or_default().push(t);
            }
            GoWait::Other => {}
        }
    }
    let mut ranked = vec![];
    for ((class, addr), ts) in locks {
        ranked.push(lock_finding(d, class, addr, &ts));
    }
    for ((op, at), ts) in channels {
        let (longest_min, longest_text) = longest(&ts);
        let verb = match op.as_str() {
            o if o.starts_with("chan send") => "to send on a channel",
            o if o.starts_with("chan receive") => "to receive from a channel",
            _ => "in `select` on channels",
        };
        let names: Vec<String> = ts.iter().map(|t| t.name.clone()).collect();
        ranked.push(Finding {
            severity: waiting_severity(ts.len()),
            summary: format!(
                "{} waiting {verb} in `{at}`{longest_text}",
                who(d, ts.len())
            ),
            key: format!("channel:{op}:{at}"),
            evidence: dump_evidence(d, names.clone()),
            detail: Detail::ChannelWait {
                op,
                site: at,
                waiters: names,
                longest_min,
            },
        });
    }
    ranked.sort_by_key(|f| std::cmp::Reverse(f.evidence.threads.len()));
    out.extend(ranked);
    let explained: HashSet<&str> = out.iter().flat_map(explained_threads).collect();
    let explained: HashSet<String> = explained.into_iter().map(str::to_string).collect();
    let channel_waiters: HashSet<&str> = out
        .iter()
        .filter_map(|f| match &f.detail {
            Detail::ChannelWait { waiters, .. } => Some(waiters),
            _ => None,
        })
        .flatten()
        .map(String::as_str)
        .collect();
    let rest: Vec<&ThreadInfo> = app
        .iter()
        .copied()
        .filter(|t| !explained.contains(&t.name) && !channel_waiters.contains(t.name.as_str()))
        .collect();
    out.extend(stack_clusters(d, &rest, opts));
    out
}

/// Waiters of one lock: `12 goroutines (go) waiting for `sync.Mutex`
/// (0xc0000a4940) in `main.(*ledger).post (ledger.go:32)``.
fn lock_finding(d: &ThreadDump, class: String, addr: String, ts: &[&ThreadInfo]) -> Finding {
    let names: Vec<String> = ts.iter().map(|t| t.name.clone()).collect();
    let entry_frames = top_counts(ts.iter().map(|t| site_of(d, t)));
    let at = entry_frames
        .first()
        .map(|e| e.0.clone())
        .unwrap_or_default();
    let (_, longest_text) = longest(ts);
    let shown_addr = if addr.starts_with("0x") {
        format!(" ({addr})")
    } else {
        String::new()
    };
    let holder = match d.format {
        DumpFormat::Goroutine => "; Go records no holder (see the mutex profile)",
        _ => "",
    };
    Finding {
        severity: waiting_severity(ts.len()),
        summary: format!(
            "{} waiting for `{class}`{shown_addr} in `{at}`{longest_text}{holder}",
            who(d, ts.len())
        ),
        key: format!("lock:{class}@{addr}"),
        evidence: dump_evidence(d, names.clone()),
        detail: Detail::LockContention {
            lock_type: "mutex".into(),
            address: addr,
            class,
            holder: None,
            holder_state: None,
            holder_stack: vec![],
            waiters: names,
            entry_frames,
            pool: None,
            pool_size: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnosis::goroutines::parse_goroutine_dump;
    use crate::diagnosis::phases::dump_activity;
    use crate::vocab::findings::FindingKind;

    const DUMP: &str = include_str!("../../../tests/fixtures/go/goroutines.txt");

    #[test]
    fn a_real_dump_names_the_mutex_site_and_the_channel_and_leaves_idle_alone() {
        let d = parse_goroutine_dump(DUMP, "goroutines.txt").expect("dump");
        let fs = goroutine_findings(&d, &Options::default());
        for f in &fs {
            eprintln!("{:?} {}: {}", f.severity, f.detail.kind(), f.summary);
        }
        let lock = fs
            .iter()
            .find(|f| f.detail.kind() == FindingKind::Lock)
            .expect("a lock finding");
        assert!(
            lock.summary.contains("`sync.Mutex`") && lock.summary.contains("main.(*ledger).post"),
            "{}",
            lock.summary
        );
        let ch = fs
            .iter()
            .find(|f| f.detail.kind() == FindingKind::Channel)
            .expect("a channel finding");
        assert!(ch.summary.contains("main.main.func2"), "{}", ch.summary);
        // No finding ranks the idle workers or the keep-alive readers.
        for f in fs.iter().filter(|f| f.detail.kind().is_lock_like()) {
            assert!(!f.summary.contains("idleWorker"), "{}", f.summary);
        }
        let a = dump_activity(&d, &fs);
        assert!(a.blocked >= 5, "{a:?}");
        assert!(
            a.idle >= 8 + 10,
            "idle workers and keep-alive readers: {a:?}"
        );
        let top = a.top_lock.as_ref().expect("top lock");
        assert_eq!(
            (top.class.as_str(), top.lock_type.as_str()),
            ("sync.Mutex", "mutex")
        );
        assert!(a.in_channel > 0, "{a:?}");
        assert_eq!(
            a.contended(),
            a.blocked + a.in_pool + a.in_channel,
            "a mutex waiter counts once"
        );
    }
}
