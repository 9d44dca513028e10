//! Thread pools: a thread's pool by name, which connection/object pool a
//! waiting thread borrows from, and the pool-borrow-wait findings.

use std::collections::{BTreeMap, HashMap};

use super::finding::{dump_evidence, threads, waiting_severity, Detail, Finding, PoolPattern};
use crate::diagnosis::jfr::is_internal_frame;
use crate::diagnosis::model::{Frame, ThreadDump, ThreadInfo, ThreadState};

/// Pool name of a thread: trailing number replaced by `*` (`http-worker-12` → `http-worker-*`).
pub fn pool_of(name: &str) -> String {
    let trimmed = name.trim_end_matches(|c: char| c.is_ascii_digit());
    if trimmed.len() < name.len() && !trimmed.is_empty() {
        format!("{trimmed}*")
    } else {
        name.to_string()
    }
}

/// The first application frame at or below `from` (JDK and pool libraries skipped).
pub fn app_frame(frames: &[Frame], from: usize) -> Option<String> {
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

/// The five most frequent items, with their counts.
pub(super) fn top_counts(items: impl Iterator<Item = String>) -> Vec<(String, usize)> {
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
    // The JDK-internal top of a parked thread first: a pool frame must sit
    // below a wait. A parked virtual thread has no `Unsafe.park` frame
    // (it yields its carrier): `LockSupport.park*` is common to both.
    let waiting_top = t.frames.iter().take(12).any(|f| {
        f.method.starts_with("jdk.internal.misc.Unsafe.park")
            || f.method.starts_with("sun.misc.Unsafe.park")
            || f.method
                .starts_with("java.util.concurrent.locks.LockSupport.park")
            || f.method.starts_with("java.lang.VirtualThread.park")
            || f.method.starts_with("java.lang.Object.wait")
    });
    if !waiting_top {
        return None;
    }
    for (kind, frames) in POOL_RULES {
        let idx = frames.iter().filter_map(|p| has(p)).max();
        if let Some(i) = idx {
            return Some(refine_kind(t, kind, i));
        }
    }
    None
}

/// DBCP2 and Jedis borrow through commons-pool2: name them, and move the
/// index to their own deepest frame so the app frame is the caller.
fn refine_kind(t: &ThreadInfo, kind: &str, i: usize) -> (String, usize) {
    let has = |p: &str| t.frames.iter().position(|f| f.method.starts_with(p));
    let kind = if kind == "commons-pool2" {
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
    (kind.to_string(), i)
}

/// Pool kinds by the frames of their borrow call, first match wins.
const POOL_RULES: &[(&str, &[&str])] = &[
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

/// Pool-borrow waits: one finding per pool kind with waiting threads.
pub(super) fn pool_waits(
    d: &ThreadDump,
    app_threads: &[&ThreadInfo],
    patterns: &[PoolPattern],
) -> Vec<Finding> {
    let mut by_pool: BTreeMap<String, Vec<(&ThreadInfo, usize)>> = BTreeMap::new();
    for &t in app_threads {
        if let Some((kind, i)) = pool_wait_kind(t, patterns) {
            by_pool.entry(kind).or_default().push((t, i));
        }
    }
    by_pool
        .into_iter()
        .map(|(kind, ws)| pool_wait_finding(d, kind, &ws))
        .collect()
}

fn pool_wait_finding(d: &ThreadDump, kind: String, ws: &[(&ThreadInfo, usize)]) -> Finding {
    let n = ws.len();
    let names: Vec<String> = ws.iter().map(|(t, _)| t.name.clone()).collect();
    let app_frames = top_counts(ws.iter().map(|(t, i)| {
        app_frame(&t.frames, i + 1).unwrap_or_else(|| "(no application frame)".into())
    }));
    let from = app_frames
        .first()
        .map(|(f, _)| format!(", called from `{f}`"))
        .unwrap_or_default();
    Finding {
        severity: waiting_severity(n),
        summary: format!("{} waiting to borrow from a {kind} pool{from}", threads(n)),
        key: format!("pool:{kind}"),
        evidence: dump_evidence(d, names.clone()),
        detail: Detail::PoolWait {
            pool_kind: kind,
            waiters: names,
            app_frames,
        },
    }
}
