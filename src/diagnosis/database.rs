//! The database samples (`diagnostics/postgres.jsonl`) read into what they
//! mean: who waits on what, where, held by whom, in which phase. Per phase:
//! the worst blocking chain (waiters followed through `pg_blocking_pids()`
//! to the backend at its root, the one not itself waiting for a lock), an
//! idle-in-transaction holder, connection saturation, the top wait events
//! and `pg_stat_statements` deltas. Series: backends waiting for a lock,
//! connections in use (% of the usable `max_connections`), the oldest
//! transaction's age.
//!
//! Every text here comes from the samples' statement text, which the
//! collector normalised before storing it: no parameter value reaches a
//! finding.

use std::collections::{BTreeMap, BTreeSet};

use crate::vocab::findings::{FindingKind, Severity};
use crate::vocab::samples::Stamped;
use crate::vocab::samples_db::{DbBackend, DbPhase, DbSample, DbStatementDelta, DbWait};
use crate::vocab::series::{self, Series};

/// An idle-in-transaction holder is a finding from this long in that state.
const IDLE_IN_XACT_S: f64 = 1.0;
/// Connections in use at or above this share of the usable slots.
const CONNECTIONS_HIGH_PCT: f64 = 90.0;
/// Statements kept per phase.
const TOP_STATEMENTS: usize = 5;
const TOP_WAITS: usize = 5;
/// A statement "got slower" from one phase to the next at this factor…
const SLOWER_FACTOR: f64 = 5.0;
/// …and at least this mean time per call.
const SLOWER_MIN_MS: f64 = 5.0;

/// One database finding on the run clock.
#[derive(Debug, Clone, PartialEq)]
pub struct DbFinding {
    pub at_s: f64,
    pub phase: String,
    pub severity: Severity,
    pub kind: FindingKind,
    pub summary: String,
}

/// What the samples add up to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DbAnalysis {
    pub series: BTreeMap<String, Vec<(f64, f64)>>,
    pub findings: Vec<DbFinding>,
    pub phases: Vec<DbPhase>,
}

/// One blocking chain in a sample: the waiters whose chain ends at one root.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    pub waiters: usize,
    /// `row lock`, `table lock (AccessExclusiveLock)`, …
    pub lock: String,
    pub relation: Option<String>,
    pub statement: Option<String>,
    /// The backend at the root; `None` when the chain loops (a deadlock
    /// the server has not broken yet) or the root was not sampled.
    pub root: Option<DbBackend>,
    pub root_pid: Option<u32>,
}

/// Read the samples, in time order.
pub fn analyze(rows: &[Stamped<DbSample>]) -> DbAnalysis {
    let mut out = DbAnalysis::default();
    let mut push = |s: Series, t: f64, v: Option<f64>| {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            out.series.entry(s.name.into()).or_default().push((t, v));
        }
    };
    for r in rows {
        let s = &r.row;
        push(
            series::DB_BACKENDS_WAITING_LOCK,
            r.t,
            Some(s.waiting_lock() as f64),
        );
        push(
            series::DB_CONNECTIONS_USED_PCT,
            r.t,
            s.connections_used_pct(),
        );
        push(
            series::DB_OLDEST_XACT_S,
            r.t,
            Some(s.oldest_xact_s.unwrap_or(0.0)),
        );
    }
    let mut order: Vec<&str> = Vec::new();
    for r in rows {
        if !order.contains(&r.phase.as_str()) {
            order.push(&r.phase);
        }
    }
    let mut before: Option<&DbSample> = None;
    for name in order {
        let in_phase: Vec<&Stamped<DbSample>> = rows.iter().filter(|r| r.phase == name).collect();
        let (phase, findings) = one_phase(name, &in_phase, before);
        before = in_phase.last().map(|r| &r.row);
        out.findings.extend(findings);
        if let Some(f) = out
            .phases
            .last()
            .and_then(|prev| slower(prev, &phase, in_phase.last()))
        {
            out.findings.push(f);
        }
        out.phases.push(phase);
    }
    out
}

/// The statement whose mean time grew the most from one phase to the next
/// (at least [`SLOWER_FACTOR`]× and [`SLOWER_MIN_MS`]): what got slower at the knee.
fn slower(prev: &DbPhase, now: &DbPhase, last: Option<&&Stamped<DbSample>>) -> Option<DbFinding> {
    let (before, after) = (prev.statements.as_ref()?, now.statements.as_ref()?);
    let (b, a) = after
        .iter()
        .filter_map(|a| before.iter().find(|b| b.query == a.query).map(|b| (b, a)))
        .filter(|(b, a)| a.mean_ms >= SLOWER_MIN_MS && a.mean_ms >= SLOWER_FACTOR * b.mean_ms)
        .max_by(|x, y| {
            (x.1.mean_ms / x.0.mean_ms.max(1e-6)).total_cmp(&(y.1.mean_ms / y.0.mean_ms.max(1e-6)))
        })?;
    Some(DbFinding {
        at_s: last?.t,
        phase: now.phase.clone(),
        severity: Severity::Warning,
        kind: FindingKind::from("slow_statement"),
        summary: format!(
            "`{}` took {:.2} ms per call in {} against {:.2} ms in {} ({} calls, {:.0} ms in all)",
            a.query, a.mean_ms, now.phase, b.mean_ms, prev.phase, a.calls, a.total_ms
        ),
    })
}

fn one_phase(
    name: &str,
    rows: &[&Stamped<DbSample>],
    before: Option<&DbSample>,
) -> (DbPhase, Vec<DbFinding>) {
    let mut findings = Vec::new();
    let finding = |r: &Stamped<DbSample>, severity, kind, summary| DbFinding {
        at_s: r.t,
        phase: name.to_string(),
        severity,
        kind,
        summary,
    };
    let max_f = |f: &dyn Fn(&DbSample) -> Option<f64>| {
        rows.iter().filter_map(|r| f(&r.row)).reduce(f64::max)
    };
    let mut phase = DbPhase {
        phase: name.to_string(),
        samples: rows.len() as u64,
        max_waiting_lock: rows.iter().map(|r| r.row.waiting_lock()).max().unwrap_or(0),
        max_connections_used_pct: max_f(&|s| s.connections_used_pct()),
        max_connections: rows.iter().find_map(|r| r.row.max_connections),
        max_oldest_xact_s: max_f(&|s| s.oldest_xact_s),
        top_waits: top_waits(rows),
        ..Default::default()
    };
    // The worst blocking chain: the sample with the most waiters behind one root.
    let worst = rows
        .iter()
        .filter_map(|r| chains(&r.row).into_iter().next().map(|c| (r, c)))
        .max_by_key(|(_, c)| c.waiters);
    if let Some((r, c)) = worst {
        let sev = match c.waiters {
            n if n >= 5 => Severity::Critical,
            n if n >= 2 => Severity::High,
            _ => Severity::Warning,
        };
        let text = chain_text(&c);
        phase.lock_chain = Some(text.clone());
        findings.push(finding(r, sev, FindingKind::Lock, text));
    }
    // The longest idle-in-transaction holder.
    let idle = rows
        .iter()
        .filter_map(|r| {
            r.row
                .idle_in_xact
                .iter()
                .filter(|b| b.state_s.unwrap_or(0.0) >= IDLE_IN_XACT_S)
                .max_by(|a, b| {
                    a.state_s
                        .unwrap_or(0.0)
                        .total_cmp(&b.state_s.unwrap_or(0.0))
                })
                .map(|b| (r, b))
        })
        .max_by(|a, b| {
            a.1.state_s
                .unwrap_or(0.0)
                .total_cmp(&b.1.state_s.unwrap_or(0.0))
        });
    if let Some((r, b)) = idle {
        // Every waiter whose chain ends at it, not only those right behind it.
        let blocking: usize = chains(&r.row)
            .iter()
            .filter(|c| c.root_pid == Some(b.pid))
            .map(|c| c.waiters)
            .sum();
        let (sev, also) = match blocking {
            0 => (Severity::Warning, String::new()),
            n => (
                Severity::High,
                format!(", blocking {n} backend{}", plural(n)),
            ),
        };
        let text = format!(
            "pid {}{} idle in transaction for {:.1} s (transaction open {:.1} s){also}; last statement {}",
            b.pid,
            app(b.app.as_deref()),
            b.state_s.unwrap_or(0.0),
            b.xact_s.unwrap_or(0.0),
            stmt(b.query.as_deref()),
        );
        findings.push(finding(
            r,
            sev,
            FindingKind::from("idle_in_transaction"),
            text,
        ));
    }
    // Connection saturation.
    let conn = rows
        .iter()
        .filter_map(|r| r.row.connections_used_pct().map(|p| (r, p)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((r, pct)) = conn.filter(|(_, p)| *p >= CONNECTIONS_HIGH_PCT) {
        let s = &r.row;
        let usable = s.max_connections.unwrap_or(0)
            - s.reserved_connections
                .unwrap_or(0)
                .min(s.max_connections.unwrap_or(0));
        let sev = if pct >= 100.0 {
            Severity::Critical
        } else {
            Severity::High
        };
        let text = format!(
            "database connections saturated: {} of {usable} usable connections in use ({pct:.0}%; max_connections {}, {} reserved for superusers) — new connections are refused",
            s.connections.unwrap_or(0),
            s.max_connections.unwrap_or(0),
            s.reserved_connections.unwrap_or(0),
        );
        findings.push(finding(r, sev, FindingKind::from("connections"), text));
    }
    // A role or database at its own limit.
    let own = rows
        .iter()
        .flat_map(|r| r.row.limits.iter().map(move |l| (r, l)))
        .filter(|(_, l)| l.conn_limit > 0)
        .max_by(|a, b| (a.1.used * 1000 / a.1.conn_limit).cmp(&(b.1.used * 1000 / b.1.conn_limit)));
    if let Some((r, l)) = own {
        let pct = 100.0 * l.used as f64 / l.conn_limit as f64;
        if pct >= CONNECTIONS_HIGH_PCT {
            let sev = if pct >= 100.0 {
                Severity::Critical
            } else {
                Severity::High
            };
            let text = format!(
                "{} `{}` at its own connection limit: {} of {} in use ({pct:.0}%) — its new connections are refused",
                l.kind, l.name, l.used, l.conn_limit
            );
            findings.push(finding(r, sev, FindingKind::from("connections"), text));
        }
    }
    if let (Some(r), false) = (rows.last(), phase.top_waits.is_empty()) {
        let waits: Vec<String> = phase
            .top_waits
            .iter()
            .map(|w| format!("{} {:.1}", w.wait, w.backends))
            .collect();
        let text = format!(
            "database waits in {name} (mean backends per sample): {}",
            waits.join(", ")
        );
        findings.push(finding(
            r,
            Severity::Info,
            FindingKind::from("db_waits"),
            text,
        ));
    }
    phase.statements = statements(rows, before);
    (phase, findings)
}

/// Non-idle backends by wait, mean per sample, most first.
fn top_waits(rows: &[&Stamped<DbSample>]) -> Vec<DbWait> {
    let mut sum: BTreeMap<String, f64> = BTreeMap::new();
    for r in rows {
        for b in &r.row.backends {
            if b.state.as_deref().is_none_or(|s| s == "idle") {
                continue;
            }
            let w = match (&b.wait_type, &b.wait) {
                (Some(t), Some(w)) => format!("{t}:{w}"),
                (Some(t), None) => t.clone(),
                _ => "CPU".to_string(),
            };
            *sum.entry(w).or_default() += b.n as f64;
        }
    }
    let n = rows.len().max(1) as f64;
    let mut v: Vec<DbWait> = sum
        .into_iter()
        .map(|(wait, s)| DbWait {
            wait,
            backends: s / n,
        })
        .collect();
    v.sort_by(|a, b| b.backends.total_cmp(&a.backends).then(a.wait.cmp(&b.wait)));
    v.truncate(TOP_WAITS);
    v
}

/// The blocking chains of one sample, most waiters first.
pub fn chains(s: &DbSample) -> Vec<Chain> {
    let waiting: BTreeSet<u32> = s.lock_waits.iter().map(|w| w.pid).collect();
    let blocked_by: BTreeMap<u32, &Vec<u32>> = s
        .lock_waits
        .iter()
        .map(|w| (w.pid, &w.blocked_by))
        .collect();
    // Follow the blockers until one that is not itself waiting — or one
    // that no longer was when `pg_blocking_pids()` ran (it got the lock
    // between the activity snapshot and the lock scan: the holder now).
    // Only a chain that comes back on itself has no root.
    let root_of = |pid: u32| -> Option<u32> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![pid];
        while let Some(p) = todo.pop() {
            if !seen.insert(p) {
                continue;
            }
            let by = blocked_by.get(&p).map(|v| v.as_slice()).unwrap_or(&[]);
            if by.is_empty() && p != pid {
                return Some(p);
            }
            for b in by {
                if !waiting.contains(b) {
                    return Some(*b);
                }
                todo.insert(0, *b);
            }
        }
        None
    };
    let mut groups: BTreeMap<Option<u32>, Vec<&crate::vocab::samples_db::DbLockWait>> =
        BTreeMap::new();
    // A waiter nothing blocked any more (it got its lock meanwhile) waits for nothing.
    for w in s.lock_waits.iter().filter(|w| !w.blocked_by.is_empty()) {
        groups.entry(root_of(w.pid)).or_default().push(w);
    }
    let mut out: Vec<Chain> = groups
        .into_iter()
        .map(|(root_pid, ws)| Chain {
            waiters: ws.len(),
            lock: most(
                ws.iter()
                    .map(|w| lock_name(w.locktype.as_deref(), w.mode.as_deref())),
            )
            .unwrap_or_else(|| "lock".into()),
            relation: most(ws.iter().filter_map(|w| w.relation.clone())),
            statement: most(ws.iter().filter_map(|w| w.query.clone())),
            root: root_pid.and_then(|p| s.blockers.iter().find(|b| b.pid == p).cloned()),
            root_pid,
        })
        .collect();
    out.sort_by_key(|c| std::cmp::Reverse(c.waiters));
    out
}

/// "12 backends waiting on a row lock of `orders` (`UPDATE orders …`), held
/// by pid 4711 (`api`, idle in transaction) `SELECT … FOR UPDATE` in a
/// transaction open 2.1 s".
pub fn chain_text(c: &Chain) -> String {
    let n = c.waiters;
    let rel = c
        .relation
        .as_ref()
        .map(|r| format!(" of `{r}`"))
        .unwrap_or_default();
    let st = c
        .statement
        .as_ref()
        .map(|q| format!(" ({})", stmt(Some(q))))
        .unwrap_or_default();
    let held = match (&c.root, c.root_pid) {
        (Some(b), _) => format!(
            ", held by pid {}{} {} in a transaction open {:.1} s",
            b.pid,
            match b.state.as_deref() {
                Some(s) if s != "active" => format!(" ({}{s})", app_prefix(b.app.as_deref())),
                _ => app(b.app.as_deref()),
            },
            stmt(b.query.as_deref()),
            b.xact_s.unwrap_or(0.0)
        ),
        (None, Some(p)) => format!(", held by pid {p}"),
        (None, None) => {
            ", the waiters block each other (a deadlock until the server breaks it)".into()
        }
    };
    format!(
        "{n} backend{} waiting on a {}{rel}{st}{held}",
        plural(n),
        c.lock
    )
}

/// `pg_stat_statements` over the phase: from the sample before it (the
/// previous phase's last) to its last; `None` without the extension.
fn statements(
    rows: &[&Stamped<DbSample>],
    before: Option<&DbSample>,
) -> Option<Vec<DbStatementDelta>> {
    let last = rows.iter().rev().find_map(|r| r.row.statements.as_ref())?;
    let first = before
        .and_then(|b| b.statements.as_ref())
        .or_else(|| rows.iter().find_map(|r| r.row.statements.as_ref()))?;
    let base: BTreeMap<(&str, &str), _> = first
        .iter()
        .map(|s| ((s.id.as_str(), s.query.as_str()), s))
        .collect();
    let mut v: Vec<DbStatementDelta> = last
        .iter()
        .filter_map(|s| {
            let b = base.get(&(s.id.as_str(), s.query.as_str()));
            let d = |f: fn(&crate::vocab::samples_db::DbStatement) -> f64| {
                (f(s) - b.map(|b| f(b)).unwrap_or(0.0)).max(0.0)
            };
            let calls = d(|x| x.calls);
            (calls > 0.0).then(|| DbStatementDelta {
                query: s.query.clone(),
                calls,
                total_ms: d(|x| x.total_ms),
                mean_ms: d(|x| x.total_ms) / calls,
                rows: d(|x| x.rows),
            })
        })
        .filter(|s| !s.query.contains("brunt_pgss") && !s.query.starts_with("WITH act AS"))
        .collect();
    v.sort_by(|a, b| b.total_ms.total_cmp(&a.total_ms));
    v.truncate(TOP_STATEMENTS);
    Some(v)
}

fn lock_name(locktype: Option<&str>, mode: Option<&str>) -> String {
    match locktype {
        Some("transactionid" | "tuple") => "row lock".into(),
        Some("relation") => format!("table lock ({})", mode.unwrap_or("?")),
        Some("advisory") => "advisory lock".into(),
        Some(t) => format!("{t} lock"),
        None => "lock".into(),
    }
}

/// The most frequent value (the first among equals).
fn most<T: Ord + Clone>(it: impl Iterator<Item = T>) -> Option<T> {
    let mut n: BTreeMap<T, usize> = BTreeMap::new();
    for x in it {
        *n.entry(x).or_default() += 1;
    }
    n.into_iter().max_by_key(|(_, c)| *c).map(|(x, _)| x)
}

fn stmt(q: Option<&str>) -> String {
    match q {
        Some(q) if !q.is_empty() => format!("`{q}`"),
        _ => "(statement not seen)".into(),
    }
}

fn app(a: Option<&str>) -> String {
    match a {
        Some(a) if !a.is_empty() => format!(" (`{a}`)"),
        _ => String::new(),
    }
}

fn app_prefix(a: Option<&str>) -> String {
    match a {
        Some(a) if !a.is_empty() => format!("`{a}`, "),
        _ => String::new(),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOT_ROW: &str = r#"{"max_connections":20,"reserved_connections":3,"connections":17,
      "oldest_xact_s":2.1,
      "backends":[{"state":"active","wait_type":"Lock","wait":"tuple","n":11},
                  {"state":"active","wait_type":"Lock","wait":"transactionid","n":1},
                  {"state":"idle in transaction","wait_type":"Client","wait":"ClientRead","n":1},
                  {"state":"idle","wait_type":"Client","wait":"ClientRead","n":3}],
      "lock_waits":[
        {"pid":10,"locktype":"transactionid","mode":"ShareLock","relation":"orders","query":"UPDATE orders SET n = n + ? WHERE id = ?","blocked_by":[4711]},
        {"pid":11,"locktype":"tuple","mode":"ExclusiveLock","relation":"orders","query":"UPDATE orders SET n = n + ? WHERE id = ?","blocked_by":[10]},
        {"pid":12,"locktype":"tuple","mode":"ExclusiveLock","relation":"orders","query":"UPDATE orders SET n = n + ? WHERE id = ?","blocked_by":[10, 11]}],
      "blockers":[{"pid":4711,"app":"api","state":"idle in transaction","xact_s":2.1,"state_s":1.8,"query":"SELECT * FROM orders WHERE id = ? FOR UPDATE"},
                  {"pid":10,"state":"active","xact_s":1.0,"query":"UPDATE orders SET n = n + ? WHERE id = ?"}],
      "idle_in_xact":[{"pid":4711,"app":"api","xact_s":2.1,"state_s":1.8,"query":"SELECT * FROM orders WHERE id = ? FOR UPDATE"}],
      "statements":[{"id":"1","query":"UPDATE orders SET n = n + $1 WHERE id = $2","calls":30,"total_ms":900,"rows":30}]}"#;

    fn row(t: f64, phase: &str, doc: &str) -> Stamped<DbSample> {
        Stamped {
            t,
            phase: phase.into(),
            row: serde_json::from_str(doc).expect("sample"),
        }
    }

    #[test]
    fn a_hot_row_names_the_lock_the_relation_and_the_blocker() {
        let quiet = r#"{"max_connections":20,"reserved_connections":3,"connections":2,"backends":[],
          "lock_waits":[],"blockers":[],"idle_in_xact":[],
          "statements":[{"id":"1","query":"UPDATE orders SET n = n + $1 WHERE id = $2","calls":10,"total_ms":10,"rows":10}]}"#;
        let earlier = quiet.replace(r#""calls":10,"total_ms":10"#, r#""calls":5,"total_ms":5"#);
        let rows = [
            row(0.5, "step-1", &earlier),
            row(1.0, "step-1", quiet),
            row(3.0, "step-2", HOT_ROW),
        ];
        let a = analyze(&rows);
        let lock = a
            .findings
            .iter()
            .find(|f| f.kind == FindingKind::Lock)
            .expect("a lock finding");
        assert_eq!(lock.phase, "step-2");
        assert_eq!(
            lock.summary,
            "3 backends waiting on a row lock of `orders` (`UPDATE orders SET n = n + ? WHERE id = ?`), held by pid 4711 (`api`, idle in transaction) `SELECT * FROM orders WHERE id = ? FOR UPDATE` in a transaction open 2.1 s"
        );
        assert_eq!(lock.severity, Severity::High);
        let idle = a
            .findings
            .iter()
            .find(|f| f.kind == "idle_in_transaction")
            .expect("idle");
        assert!(
            idle.summary.contains("blocking 3 backends"),
            "{}",
            idle.summary
        );
        let slow = a
            .findings
            .iter()
            .find(|f| f.kind == "slow_statement")
            .expect("slower");
        assert_eq!(
            slow.summary,
            "`UPDATE orders SET n = n + $1 WHERE id = $2` took 44.50 ms per call in step-2 against 1.00 ms in step-1 (20 calls, 890 ms in all)"
        );
        let conn = a
            .findings
            .iter()
            .find(|f| f.kind == "connections")
            .expect("saturation");
        assert!(conn.summary.contains("17 of 17 usable"), "{}", conn.summary);
        let p2 = &a.phases[1];
        assert_eq!(p2.max_waiting_lock, 3);
        assert_eq!(p2.top_waits[0].wait, "Lock:tuple");
        let st = p2.statements.as_ref().expect("statements");
        assert_eq!(
            (st[0].calls, st[0].total_ms, st[0].mean_ms),
            (20.0, 890.0, 44.5)
        );
        assert_eq!(
            a.series[series::DB_BACKENDS_WAITING_LOCK.name],
            vec![(0.5, 0.0), (1.0, 0.0), (3.0, 3.0)]
        );
        assert!(a.phases[0].lock_chain.is_none());
    }

    #[test]
    fn waiters_in_a_loop_are_said_as_such() {
        let doc = r#"{"lock_waits":[{"pid":1,"locktype":"transactionid","blocked_by":[2]},
                                    {"pid":2,"locktype":"transactionid","blocked_by":[1]}]}"#;
        let c = chains(&serde_json::from_str(doc).expect("sample"));
        assert_eq!(c.len(), 1);
        assert!(
            chain_text(&c[0]).contains("block each other"),
            "{}",
            chain_text(&c[0])
        );
        // A head of the queue that got its lock while the sample was taken
        // is the root, not a loop.
        let doc = r#"{"lock_waits":[{"pid":1,"locktype":"transactionid","blocked_by":[]},
                                    {"pid":2,"locktype":"tuple","blocked_by":[1]},
                                    {"pid":3,"locktype":"tuple","blocked_by":[1, 2]}],
                      "blockers":[{"pid":1,"state":"active","xact_s":0.3,"query":"SELECT 1"}]}"#;
        let c = chains(&serde_json::from_str(doc).expect("sample"));
        assert_eq!((c[0].waiters, c[0].root_pid), (2, Some(1)), "{c:?}");
        assert_eq!(c.len(), 1, "the head is no waiter of its own: {c:?}");
        assert!(
            chain_text(&c[0]).contains("held by pid 1 `SELECT 1`"),
            "{}",
            chain_text(&c[0])
        );
    }
}
