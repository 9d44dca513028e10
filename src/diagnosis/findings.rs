//! Findings: what the parsed dumps, recordings and pinning traces mean for
//! the user — thread-state counts per pool, lock contention with its holder,
//! pool-borrow waits, pinning sites, deadlocks, identical-stack clusters, and
//! which contention persists across dumps. Each finding has a severity, a
//! one-line summary and its evidence (file, dump time, thread names).

use std::collections::{BTreeMap, HashMap};

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::jfr::{is_internal_frame, site_of, JfrRecording};
use super::model::{Frame, LockKind, ThreadDump, ThreadInfo, ThreadState};
use super::pinning::PinEvent;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }
}

/// Where a finding was seen: the run correlates `time_unix` with its phases.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub file: String,
    /// Dump index within the file (several SIGQUIT dumps in one log).
    pub dump_index: Option<usize>,
    /// As printed in the source.
    pub time: Option<String>,
    pub time_unix: Option<f64>,
    /// Load phase name, set by [`super::Analysis::tag_phases`].
    pub phase: Option<String>,
    pub threads: Vec<String>,
}

/// A thread pool's state counts (pool = thread-name prefix).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolStates {
    /// `http-worker-*`, `ForkJoinPool-1-worker-*`, or a single thread's name.
    pub pool: String,
    pub total: usize,
    pub states: BTreeMap<String, usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Detail {
    ThreadStates {
        total: usize,
        states: BTreeMap<String, usize>,
        pools: Vec<PoolStates>,
    },
    LockContention {
        /// `monitor` (synchronized) or `ownable` (ReentrantLock & co).
        lock_type: String,
        address: String,
        class: String,
        holder: Option<String>,
        holder_state: Option<String>,
        holder_stack: Vec<String>,
        waiters: Vec<String>,
        /// Waiters' first application frame → count.
        entry_frames: Vec<(String, usize)>,
        /// The pool most waiters belong to and its size.
        pool: Option<String>,
        pool_size: Option<usize>,
    },
    PoolWait {
        /// `hikari`, `commons-pool2`, `dbcp2`, `c3p0`, `tomcat-jdbc`, `httpclient4`, `httpclient5`, or a user pattern's name.
        pool_kind: String,
        waiters: Vec<String>,
        /// Calling application frame → count.
        app_frames: Vec<(String, usize)>,
    },
    Pinning {
        site: String,
        /// Frame holding the monitor (`<== monitors:N`), when known.
        monitor_frame: Option<String>,
        count: u64,
        total_ms: Option<f64>,
        stack: Vec<String>,
        /// `trace` (tracePinnedThreads: sites only) or `jfr` (counts and time).
        from: String,
    },
    Deadlock {
        cycle: Vec<super::model::DeadlockEdge>,
    },
    StackCluster {
        state: String,
        count: usize,
        stack: Vec<String>,
        idle: bool,
    },
    JfrContention {
        event: String,
        class: Option<String>,
        site: String,
        count: u64,
        total_ms: f64,
        max_ms: f64,
        previous_owners: Vec<(String, u64)>,
        stack: Vec<String>,
    },
    HeapAfterGc {
        samples: usize,
        first_bytes: u64,
        last_bytes: u64,
        max_bytes: u64,
    },
    HotMethods {
        methods: Vec<(String, u64)>,
    },
    Persistence {
        /// The key of the contention followed across dumps.
        subject: String,
        seen_in: usize,
        of_dumps: usize,
        same_holder: bool,
        persistent: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub severity: Severity,
    pub summary: String,
    /// Stable identity of what was found (same monitor/pool/site across dumps).
    pub key: String,
    pub evidence: Evidence,
    pub detail: Detail,
}

/// A user-supplied pool recogniser: a regex matched against each frame (`pkg.Class.method(Loc)`).
#[derive(Debug, Clone)]
pub struct PoolPattern {
    pub name: String,
    pub frame: Regex,
}

/// Tuning for the findings.
#[derive(Debug, Clone)]
pub struct Options {
    pub pool_patterns: Vec<PoolPattern>,
    /// Smallest identical-stack cluster reported.
    pub cluster_min: usize,
    /// Frames compared for identical stacks.
    pub cluster_depth: usize,
    /// Load phases: findings are tagged with them and JFR sites split by them.
    pub phases: Vec<super::PhaseWindow>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            pool_patterns: vec![],
            cluster_min: 3,
            cluster_depth: 12,
            phases: vec![],
        }
    }
}

/// Pool name of a thread: trailing number replaced by `*` (`http-worker-12` → `http-worker-*`).
pub fn pool_of(name: &str) -> String {
    let trimmed = name.trim_end_matches(|c: char| c.is_ascii_digit());
    if trimmed.len() < name.len() && !trimmed.is_empty() {
        format!("{trimmed}*")
    } else {
        name.to_string()
    }
}

fn evidence(d: &ThreadDump, threads: Vec<String>) -> Evidence {
    Evidence {
        file: d.source.clone(),
        dump_index: Some(d.index),
        time: d.time.clone(),
        time_unix: d.time_unix,
        phase: None,
        threads,
    }
}

fn app_frame(frames: &[Frame], from: usize) -> Option<String> {
    frames
        .iter()
        .skip(from)
        .find(|f| !is_library_frame(&f.method))
        .map(Frame::short)
}

/// JDK and pool-library frames: skipped when looking for the calling application frame.
fn is_library_frame(m: &str) -> bool {
    const P: &[&str] = &[
        "com.zaxxer.hikari.",
        "org.apache.commons.pool2.",
        "org.apache.commons.dbcp2.",
        "com.mchange.",
        "org.apache.tomcat.jdbc.",
        "org.apache.tomcat.dbcp.",
        "org.apache.http.",
        "org.apache.hc.",
        "redis.clients.",
        "io.lettuce.",
    ];
    is_internal_frame(m) || P.iter().any(|p| m.starts_with(p))
}

fn top_counts(items: impl Iterator<Item = String>) -> Vec<(String, usize)> {
    let mut m: HashMap<String, usize> = HashMap::new();
    for i in items {
        *m.entry(i).or_default() += 1;
    }
    let mut v: Vec<(String, usize)> = m.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(5);
    v
}

/// Which pool a waiting thread is borrowing from, and the index of the deepest pool frame.
pub fn pool_wait_kind(t: &ThreadInfo, patterns: &[PoolPattern]) -> Option<(String, usize)> {
    if !t.state().is_waiting() && t.state() != ThreadState::Unknown {
        return None;
    }
    let has = |p: &str| t.frames.iter().position(|f| f.method.starts_with(p));
    for p in patterns {
        if let Some(i) = t.frames.iter().position(|f| p.frame.is_match(&f.display())) {
            return Some((p.name.clone(), i));
        }
    }
    // The JDK-internal top of a parked thread first: a pool frame must sit below a wait.
    let waiting_top = t.frames.iter().take(12).any(|f| {
        f.method.starts_with("jdk.internal.misc.Unsafe.park")
            || f.method.starts_with("sun.misc.Unsafe.park")
            || f.method.starts_with("java.lang.Object.wait")
    });
    if !waiting_top {
        return None;
    }
    let rules: &[(&str, &[&str])] = &[
        (
            "hikari",
            &[
                "com.zaxxer.hikari.pool.HikariPool.getConnection",
                "com.zaxxer.hikari.util.ConcurrentBag.borrow",
            ],
        ),
        (
            "c3p0",
            &["com.mchange.v2.resourcepool.BasicResourcePool.awaitAvailable"],
        ),
        (
            "tomcat-jdbc",
            &["org.apache.tomcat.jdbc.pool.ConnectionPool.borrowConnection"],
        ),
        (
            "tomcat-dbcp",
            &["org.apache.tomcat.dbcp.pool2.impl.GenericObjectPool.borrowObject"],
        ),
        (
            "httpclient4",
            &[
                "org.apache.http.pool.AbstractConnPool.getPoolEntryBlocking",
                "org.apache.http.impl.conn.PoolingHttpClientConnectionManager.leaseConnection",
            ],
        ),
        (
            "httpclient5",
            &[
                "org.apache.hc.core5.pool.StrictConnPool",
                "org.apache.hc.core5.pool.LaxConnPool",
                "org.apache.hc.client5.http.impl.classic.InternalExecRuntime.acquireEndpoint",
            ],
        ),
        (
            "lettuce",
            &["io.lettuce.core.support.BoundedAsyncPool.acquire"],
        ),
        (
            "commons-pool2",
            &[
                "org.apache.commons.pool2.impl.GenericObjectPool.borrowObject",
                "org.apache.commons.pool2.impl.GenericKeyedObjectPool.borrowObject",
            ],
        ),
    ];
    for (kind, frames) in rules {
        let idx = frames.iter().filter_map(|p| has(p)).max();
        if let Some(i) = idx {
            let kind = if *kind == "commons-pool2" {
                // DBCP2 and Jedis borrow through commons-pool2.
                if has("org.apache.commons.dbcp2.").is_some() {
                    "dbcp2"
                } else if has("redis.clients.jedis.").is_some() {
                    "jedis"
                } else {
                    kind
                }
            } else {
                kind
            };
            // Deepest frame of the pool library, so the app frame is the caller.
            let lib = match kind {
                "dbcp2" => "org.apache.commons.dbcp2.",
                "jedis" => "redis.clients.jedis.",
                _ => "",
            };
            let i = if lib.is_empty() {
                i
            } else {
                t.frames
                    .iter()
                    .rposition(|f| f.method.starts_with(lib))
                    .unwrap_or(i)
                    .max(i)
            };
            return Some((kind.to_string(), i));
        }
    }
    None
}

/// Deadlock cycles in a waits-for graph built from the dump itself (thread →
/// monitor or ownable synchronizer → its holder), for dumps where the JVM
/// did not report them (JSON dumps).
pub fn wait_cycles(threads: &[ThreadInfo]) -> Vec<super::model::Deadlock> {
    use super::model::{Deadlock, DeadlockEdge};
    // For each thread: the lock it waits for and that lock's holder (index).
    let edge: Vec<Option<(usize, &super::model::LockLine)>> = threads
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

/// All findings of one dump.
pub fn dump_findings(d: &ThreadDump, opts: &Options) -> Vec<Finding> {
    let mut out = vec![];
    let app_threads: Vec<&ThreadInfo> = d.threads.iter().filter(|t| !t.internal).collect();

    // Thread states, overall and per pool.
    let mut states: BTreeMap<String, usize> = BTreeMap::new();
    let mut pools: BTreeMap<String, PoolStates> = BTreeMap::new();
    for t in &app_threads {
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
        "{} threads: {}",
        app_threads.len(),
        states
            .iter()
            .map(|(s, n)| format!("{n} {s}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    out.push(Finding {
        severity: Severity::Info,
        summary,
        key: "thread-states".into(),
        evidence: evidence(d, vec![]),
        detail: Detail::ThreadStates {
            total: app_threads.len(),
            states,
            pools: pool_list,
        },
    });

    // Deadlocks (as the JVM reported them).
    for dl in &d.deadlocks {
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
        out.push(Finding {
            severity: Severity::Critical,
            summary: format!("deadlock between {} threads: {desc}", dl.edges.len()),
            key: format!("deadlock:{}", key_names.join(",")),
            evidence: evidence(d, names),
            detail: Detail::Deadlock {
                cycle: dl.edges.clone(),
            },
        });
    }

    // Lock contention: monitors (`waiting to lock`) and ownable synchronizers (parked on a Sync).
    let mut by_lock: BTreeMap<(String, String), Vec<&ThreadInfo>> = BTreeMap::new();
    let mut lock_class: HashMap<String, String> = HashMap::new();
    for t in &app_threads {
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
        let holder = app_threads.iter().find(|t| {
            if ty == "monitor" {
                t.held_monitors()
                    .iter()
                    .any(|l| l.addr.as_ref() == Some(&addr))
            } else {
                t.ownable_synchronizers
                    .iter()
                    .any(|l| l.addr.as_ref() == Some(&addr))
            }
        });
        let class = lock_class.get(&addr).cloned().unwrap_or_else(|| "?".into());
        let names: Vec<String> = waiters.iter().map(|w| w.name.clone()).collect();
        let entry_frames = top_counts(waiters.iter().map(|w| {
            // The frame at which it blocks; for park-based locks, the app frame.
            if ty == "monitor" {
                w.frames
                    .iter()
                    .find(|f| {
                        f.locks.iter().any(|l| {
                            matches!(l.kind, LockKind::WaitingToLock | LockKind::WaitingToRelock)
                        })
                    })
                    .map(Frame::short)
                    .unwrap_or_default()
            } else {
                app_frame(&w.frames, 0).unwrap_or_default()
            }
        }));
        let pools = top_counts(waiters.iter().map(|w| pool_of(&w.name)));
        let pool = pools.first().map(|p| p.0.clone());
        let psize = pool.as_ref().and_then(|p| pool_size.get(p).copied());
        let n = waiters.len();
        let in_pool = pools.first().map(|p| p.1).unwrap_or(n);
        let severity = if n >= 10 || psize.is_some_and(|s| s >= 4 && in_pool * 2 >= s) {
            Severity::High
        } else if n >= 3 {
            Severity::Medium
        } else {
            Severity::Low
        };
        let holder_frame = holder.and_then(|h| {
            // The frame that locked it, or the top application frame.
            h.frames
                .iter()
                .find(|f| f.locks.iter().any(|l| l.addr.as_ref() == Some(&addr)))
                .or_else(|| h.frames.iter().find(|f| !is_internal_frame(&f.method)))
                .map(Frame::short)
        });
        let who = match (pool.as_deref(), psize) {
            (Some(p), Some(s)) if p.ends_with('*') => {
                format!(
                    "{in_pool} of {s} `{}` threads",
                    p.trim_end_matches(['-', '*'])
                )
            }
            _ => format!("{n} thread{}", if n == 1 { "" } else { "s" }),
        };
        let extra = if n > in_pool {
            format!(" (+{} other)", n - in_pool)
        } else {
            String::new()
        };
        let verb = if ty == "monitor" {
            "BLOCKED on"
        } else {
            "waiting for"
        };
        let held = match (holder, &holder_frame) {
            (Some(h), Some(f)) => format!(", held by `{}` in `{f}`", h.name),
            (Some(h), None) => format!(", held by `{}`", h.name),
            _ => ", holder not in the dump".into(),
        };
        contention.push(Finding {
            severity,
            summary: format!("{who}{extra} {verb} `{class}` ({addr}){held}"),
            key: format!("lock:{class}@{addr}"),
            evidence: evidence(d, names.clone()),
            detail: Detail::LockContention {
                lock_type: ty,
                address: addr.clone(),
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
        });
    }
    contention.sort_by_key(|f| std::cmp::Reverse(waiters_of(f)));
    out.extend(contention);

    // Pool-borrow waits.
    let mut by_pool: BTreeMap<String, Vec<(&ThreadInfo, usize)>> = BTreeMap::new();
    for t in &app_threads {
        if let Some((kind, i)) = pool_wait_kind(t, &opts.pool_patterns) {
            by_pool.entry(kind).or_default().push((t, i));
        }
    }
    for (kind, ws) in by_pool {
        let n = ws.len();
        let names: Vec<String> = ws.iter().map(|(t, _)| t.name.clone()).collect();
        let app_frames = top_counts(ws.iter().map(|(t, i)| {
            app_frame(&t.frames, i + 1).unwrap_or_else(|| "(no application frame)".into())
        }));
        let severity = if n >= 10 {
            Severity::High
        } else if n >= 3 {
            Severity::Medium
        } else {
            Severity::Low
        };
        let from = app_frames
            .first()
            .map(|(f, _)| format!(", called from `{f}`"))
            .unwrap_or_default();
        out.push(Finding {
            severity,
            summary: format!(
                "{n} thread{} waiting to borrow from a {kind} pool{from}",
                if n == 1 { "" } else { "s" }
            ),
            key: format!("pool:{kind}"),
            evidence: evidence(d, names.clone()),
            detail: Detail::PoolWait {
                pool_kind: kind,
                waiters: names,
                app_frames,
            },
        });
    }

    // Identical-stack clusters.
    let mut clusters: HashMap<(ThreadState, Vec<String>), Vec<&ThreadInfo>> = HashMap::new();
    for t in &app_threads {
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
        .map(|((state, stack), ts)| {
            let idle = super::jfr::is_idle_stack_lines(&stack);
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
                    "{n} threads {} in the same stack at `{site}`{}",
                    state.as_str(),
                    if idle {
                        " (idle, waiting for work)"
                    } else {
                        ""
                    }
                ),
                key: format!("cluster:{}:{site}", state.as_str()),
                evidence: evidence(d, ts.iter().map(|t| t.name.clone()).collect()),
                detail: Detail::StackCluster {
                    state: state.as_str().to_string(),
                    count: n,
                    stack,
                    idle,
                },
            }
        })
        .collect();
    cl.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(b.evidence.threads.len().cmp(&a.evidence.threads.len()))
    });
    out.extend(cl);
    out
}

fn waiters_of(f: &Finding) -> usize {
    match &f.detail {
        Detail::LockContention { waiters, .. } => waiters.len(),
        _ => 0,
    }
}

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

/// Pinning sites from `-Djdk.tracePinnedThreads` output (sites, not counts).
pub fn pinning_findings(events: &[PinEvent]) -> Vec<Finding> {
    let mut by_site: BTreeMap<String, (Vec<&PinEvent>, Option<String>)> = BTreeMap::new();
    for e in events {
        let site = site_of(&e.frames);
        let mon = e
            .monitor_frames
            .first()
            .and_then(|(i, _)| e.frames.get(*i))
            .map(Frame::display);
        by_site.entry(site).or_insert((vec![], mon)).0.push(e);
    }
    by_site
        .into_iter()
        .map(|(site, (es, mon))| {
            let first = es.first().copied();
            Finding {
                severity: Severity::Medium,
                summary: format!(
                    "virtual thread pinned at `{site}`{} ({} trace{}; the JVM prints each stack once)",
                    mon.as_deref().map(|m| format!(", monitor held in `{m}`")).unwrap_or_default(),
                    es.len(),
                    if es.len() == 1 { "" } else { "s" }
                ),
                key: format!("pin:{site}"),
                evidence: Evidence {
                    file: first.map(|e| e.source.clone()).unwrap_or_default(),
                    threads: es.iter().map(|e| e.thread.clone()).collect(),
                    ..Evidence::default()
                },
                detail: Detail::Pinning {
                    site,
                    monitor_frame: mon,
                    count: es.len() as u64,
                    total_ms: None,
                    stack: first
                        .map(|e| e.frames.iter().take(16).map(Frame::display).collect())
                        .unwrap_or_default(),
                    from: "trace".into(),
                },
            }
        })
        .collect()
}

/// Contention, pinning, heap and hot methods from one JFR recording.
pub fn jfr_findings(r: &JfrRecording) -> Vec<Finding> {
    let mut out = vec![];
    let ev = |threads: Vec<String>, unix: Option<f64>| Evidence {
        file: r.source.clone(),
        time_unix: unix,
        time: unix.map(|u| {
            chrono::DateTime::from_timestamp_millis((u * 1000.0) as i64)
                .map(|t| t.to_rfc3339())
                .unwrap_or_default()
        }),
        threads,
        ..Evidence::default()
    };
    let mut per_phase: BTreeMap<Option<&str>, usize> = BTreeMap::new();
    for s in r.sites.iter().filter(|s| !s.idle) {
        // The ten heaviest sites of each phase (of the whole recording without phases).
        let n = per_phase.entry(s.phase.as_deref()).or_default();
        *n += 1;
        if *n > 10 {
            continue;
        }
        let what = match s.event.as_str() {
            "jdk.JavaMonitorEnter" => "blocked entering",
            "jdk.JavaMonitorWait" => "waited on",
            _ => "parked on",
        };
        let class = s.class.as_deref().unwrap_or("?");
        let owners = s
            .previous_owners
            .first()
            .map(|(o, _)| format!(", mostly after `{o}`"))
            .unwrap_or_default();
        let severity = if s.event == "jdk.JavaMonitorEnter" && s.total_ms >= 1000.0 {
            Severity::High
        } else if s.total_ms >= 1000.0 {
            Severity::Medium
        } else {
            Severity::Low
        };
        out.push(Finding {
            severity,
            summary: format!(
                "{} × {what} `{class}` at `{}`: {:.0} ms total, max {:.0} ms{owners}",
                s.count, s.site, s.total_ms, s.max_ms
            ),
            key: format!("jfr:{}:{class}:{}", s.event, s.site),
            evidence: Evidence {
                phase: s.phase.clone(),
                ..ev(vec![], Some(s.first_unix))
            },
            detail: Detail::JfrContention {
                event: s.event.clone(),
                class: s.class.clone(),
                site: s.site.clone(),
                count: s.count,
                total_ms: s.total_ms,
                max_ms: s.max_ms,
                previous_owners: s.previous_owners.clone(),
                stack: s.stack.clone(),
            },
        });
    }
    for s in &r.pinned {
        // jdk.VirtualThreadPinned does not say which frame holds the monitor
        // (the pinning trace does): leave it unknown rather than guess.
        let mon = None;
        out.push(Finding {
            severity: if s.count >= 100 || s.total_ms >= 1000.0 {
                Severity::High
            } else {
                Severity::Medium
            },
            summary: format!(
                "{} virtual-thread pinning events at `{}`: {:.0} ms pinned in total",
                s.count, s.site, s.total_ms
            ),
            key: format!("pin:{}", s.site),
            evidence: Evidence {
                phase: s.phase.clone(),
                ..ev(vec![], Some(s.first_unix))
            },
            detail: Detail::Pinning {
                site: s.site.clone(),
                monitor_frame: mon,
                count: s.count,
                total_ms: Some(s.total_ms),
                stack: s.stack.clone(),
                from: "jfr".into(),
            },
        });
    }
    let after: Vec<&super::jfr::HeapSample> =
        r.heap.iter().filter(|h| h.when == "After GC").collect();
    if let (Some(first), Some(last)) = (after.first(), after.last()) {
        let max = after.iter().map(|h| h.heap_used).max().unwrap_or(0);
        out.push(Finding {
            severity: Severity::Info,
            summary: format!(
                "heap after GC: {} → {} MiB over {} collections (max {} MiB)",
                first.heap_used >> 20,
                last.heap_used >> 20,
                after.len(),
                max >> 20
            ),
            key: "jfr:heap-after-gc".into(),
            evidence: ev(vec![], Some(first.unix)),
            detail: Detail::HeapAfterGc {
                samples: after.len(),
                first_bytes: first.heap_used,
                last_bytes: last.heap_used,
                max_bytes: max,
            },
        });
    }
    if !r.hot_methods.is_empty() {
        let top: Vec<(String, u64)> = r.hot_methods.iter().take(10).cloned().collect();
        out.push(Finding {
            severity: Severity::Info,
            summary: format!(
                "hottest method: `{}` ({} samples)",
                top.first().map(|t| t.0.as_str()).unwrap_or(""),
                top.first().map(|t| t.1).unwrap_or(0)
            ),
            key: "jfr:hot-methods".into(),
            evidence: ev(vec![], r.start_unix),
            detail: Detail::HotMethods { methods: top },
        });
    }
    out
}
