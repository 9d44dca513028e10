//! All findings of one thread dump: thread states per pool, deadlocks, lock
//! contention, pool-borrow waits and identical-stack clusters.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::contention::lock_contention;
use super::deadlock::deadlock_findings;
use super::finding::{dump_evidence, Detail, Finding, Options, PoolStates, Severity};
use super::pools::{pool_of, pool_waits};
use crate::diagnosis::jfr::{is_idle_stack_lines, site_of};
use crate::diagnosis::model::{DumpFormat, Frame, ThreadDump, ThreadInfo, ThreadState};

/// All findings of one dump.
pub fn dump_findings(d: &ThreadDump, opts: &Options) -> Vec<Finding> {
    if matches!(d.format, DumpFormat::Goroutine | DumpFormat::PySpy) {
        return super::goroutine::goroutine_findings(d, opts);
    }
    let app_threads: Vec<&ThreadInfo> = d.threads.iter().filter(|t| !t.internal).collect();
    let (states, pool_size) = thread_states(d, &app_threads);
    let mut out = vec![states];
    out.extend(deadlock_findings(d));
    out.extend(lock_contention(d, &app_threads, &pool_size));
    out.extend(pool_waits(d, &app_threads, &opts.pool_patterns));
    // One finding per fact: threads a deadlock, lock (waiters and holder) or
    // pool wait already explains are not clustered again.
    let explained: HashSet<&str> = out.iter().flat_map(explained_threads).collect();
    let rest: Vec<&ThreadInfo> = app_threads
        .iter()
        .copied()
        .filter(|t| !explained.contains(t.name.as_str()))
        .collect();
    out.extend(stack_clusters(d, &rest, opts));
    out
}

/// The threads a finding accounts for.
pub(super) fn explained_threads(f: &Finding) -> Vec<&str> {
    match &f.detail {
        Detail::LockContention {
            waiters, holder, ..
        } => waiters
            .iter()
            .chain(holder.iter())
            .map(String::as_str)
            .collect(),
        Detail::PoolWait { waiters, .. } => waiters.iter().map(String::as_str).collect(),
        Detail::Deadlock { cycle } => cycle.iter().map(|e| e.thread.as_str()).collect(),
        _ => vec![],
    }
}

/// Thread states, overall and per pool; also each pool's size.
pub(super) fn thread_states(
    d: &ThreadDump,
    app_threads: &[&ThreadInfo],
) -> (Finding, HashMap<String, usize>) {
    let mut states: BTreeMap<String, usize> = BTreeMap::new();
    let mut pools: BTreeMap<String, PoolStates> = BTreeMap::new();
    let inferred = app_threads.iter().filter(|t| t.state_inferred).count();
    for t in app_threads {
        let s = t.state().as_str().to_string();
        *states.entry(s.clone()).or_default() += 1;
        let p = pools.entry(pool_of(&t.name)).or_insert_with(|| PoolStates {
            pool: pool_of(&t.name),
            ..PoolStates::default()
        });
        p.total += 1;
        *p.states.entry(s).or_default() += 1;
    }
    let pool_size: HashMap<String, usize> =
        pools.values().map(|p| (p.pool.clone(), p.total)).collect();
    let mut pool_list: Vec<PoolStates> = pools.into_values().filter(|p| p.total > 1).collect();
    pool_list.sort_by(|a, b| b.total.cmp(&a.total).then(a.pool.cmp(&b.pool)));
    let summary = format!(
        "{} threads: {}{}",
        app_threads.len(),
        states
            .iter()
            .map(|(s, n)| format!("{n} {s}"))
            .collect::<Vec<_>>()
            .join(", "),
        if inferred > 0 {
            format!(" ({inferred} inferred from their top frames: the dump prints no states)")
        } else {
            String::new()
        }
    );
    let finding = Finding {
        severity: Severity::Info,
        summary,
        key: "thread-states".into(),
        evidence: dump_evidence(d, vec![]),
        detail: Detail::ThreadStates {
            total: app_threads.len(),
            states,
            pools: pool_list,
            inferred,
        },
    };
    (finding, pool_size)
}

/// Threads in the same state with the same top frames, most severe and largest first.
pub(super) fn stack_clusters(
    d: &ThreadDump,
    app_threads: &[&ThreadInfo],
    opts: &Options,
) -> Vec<Finding> {
    let mut clusters: HashMap<(ThreadState, Vec<String>), Vec<&ThreadInfo>> = HashMap::new();
    for &t in app_threads {
        if t.frames.len() < 2 {
            continue;
        }
        let key: Vec<String> = t
            .frames
            .iter()
            .take(opts.cluster_depth)
            .map(Frame::display)
            .collect();
        clusters.entry((t.state(), key)).or_default().push(t);
    }
    let mut cl: Vec<Finding> = clusters
        .into_iter()
        .filter(|(_, ts)| ts.len() >= opts.cluster_min)
        .map(|((state, stack), ts)| cluster_finding(d, state, stack, &ts))
        .collect();
    cl.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(b.evidence.threads.len().cmp(&a.evidence.threads.len()))
    });
    cl
}

fn cluster_finding(
    d: &ThreadDump,
    state: ThreadState,
    stack: Vec<String>,
    ts: &[&ThreadInfo],
) -> Finding {
    let idle = is_idle_stack_lines(&stack) || ts.iter().all(|t| t.idle);
    let n = ts.len();
    let frames: Vec<Frame> = ts.first().map(|t| t.frames.clone()).unwrap_or_default();
    let site = site_of(&frames);
    Finding {
        severity: if idle {
            Severity::Info
        } else if n >= 10 {
            Severity::Medium
        } else {
            Severity::Low
        },
        summary: format!(
            "{n} threads {}{} in the same stack at `{site}`{}",
            state.as_str(),
            if ts.iter().any(|t| t.state_inferred) {
                " (inferred)"
            } else {
                ""
            },
            if idle {
                " (idle, waiting for work)"
            } else {
                ""
            }
        ),
        key: format!("cluster:{}:{site}", state.as_str()),
        evidence: dump_evidence(d, ts.iter().map(|t| t.name.clone()).collect()),
        detail: Detail::StackCluster {
            state: state.as_str().to_string(),
            count: n,
            stack,
            idle,
        },
    }
}
