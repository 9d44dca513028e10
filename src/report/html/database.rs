//! The "Database" section: summary.json's `database_by_phase`, one row per
//! load phase (lock waits, connections, oldest transaction, top waits and
//! the worst blocking chain), the knee and the first breaking step of a
//! stress run highlighted, then the statements that took the most time
//! in each phase (`pg_stat_statements` deltas) where the extension exists.

use std::fmt::Write as _;

use super::charts::esc;
use crate::judge::Summary;

/// Nothing without a database collector.
pub(super) fn section(o: &mut String, s: &Summary) {
    let rows = &s.database_by_phase;
    if rows.is_empty() {
        return;
    }
    let knee = s.stress.as_ref().and_then(|st| st.knee.as_deref());
    let breach = s.stress.as_ref().and_then(|st| st.first_breach.as_deref());
    let mark = |p: &str| {
        if Some(p) == breach {
            (" style=\"background:#fdecea\"", " <b>first breach</b>")
        } else if Some(p) == knee {
            (" style=\"background:#fff4e0\"", " <b>knee</b>")
        } else {
            ("", "")
        }
    };
    let _ = writeln!(
        o,
        "<h2 id=\"database\">Database</h2><p class=\"meta\">from the <code>postgres</code> collector (pg_stat_activity, pg_locks with pg_blocking_pids(), pg_stat_statements): per phase the most backends waiting for a lock in one sample, connections in use (% of max_connections less the superuser-reserved slots), the oldest open transaction, the waits of non-idle backends (mean per sample) and the worst blocking chain, followed to the backend at its root. Statement text has its literals replaced by <code>?</code>.</p>"
    );
    let _ = writeln!(o, "<table id=\"table-database\"><tr><th class=\"l\">phase</th><th>samples</th><th>waiting for a lock</th><th>connections used</th><th>oldest xact</th><th class=\"l\">top waits (mean backends)</th><th class=\"l\">blocking chain</th></tr>");
    for r in rows {
        let (style, m) = mark(&r.phase);
        let waits: Vec<String> = r
            .top_waits
            .iter()
            .map(|w| format!("{} {:.1}", w.wait, w.backends))
            .collect();
        let _ = writeln!(
            o,
            "<tr{style}><td class=\"l\">{}{m}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            esc(&r.phase),
            r.samples,
            r.max_waiting_lock,
            r.max_connections_used_pct
                .map(|p| format!("{p:.0}%"))
                .unwrap_or_else(|| "-".into()),
            r.max_oldest_xact_s
                .map(|x| format!("{x:.1} s"))
                .unwrap_or_else(|| "-".into()),
            esc(&if waits.is_empty() { "-".into() } else { waits.join(", ") }),
            esc(r.lock_chain.as_deref().unwrap_or("-")),
        );
    }
    let _ = writeln!(o, "</table>");
    if rows.iter().all(|r| r.statements.is_none()) {
        let _ = writeln!(o, "<p class=\"meta\">pg_stat_statements is not installed in the collector's database: no per-statement figures (add it to <code>shared_preload_libraries</code> and <code>CREATE EXTENSION pg_stat_statements</code>).</p>");
        return;
    }
    let _ = writeln!(o, "<h3 id=\"database-statements\">Statements by phase (pg_stat_statements)</h3><table id=\"table-database-statements\"><tr><th class=\"l\">phase</th><th class=\"l\">statement</th><th>calls</th><th>total ms</th><th>mean ms</th><th>rows</th></tr>");
    for r in rows {
        let (style, m) = mark(&r.phase);
        for st in r.statements.iter().flatten() {
            let _ = writeln!(
                o,
                "<tr{style}><td class=\"l\">{}{m}</td><td class=\"l\"><code>{}</code></td><td>{:.0}</td><td>{:.1}</td><td>{:.2}</td><td>{:.0}</td></tr>",
                esc(&r.phase),
                esc(&st.query),
                st.calls,
                st.total_ms,
                st.mean_ms,
                st.rows
            );
        }
    }
    let _ = writeln!(o, "</table>");
}
