//! The "Threads by phase" section: summary.json's per-phase thread table,
//! one row per load phase, the knee (last step within budget) and the first
//! breaking step of a stress run highlighted.

use std::fmt::Write as _;

use super::charts::esc;
use crate::judge::threads::PhaseThreads;
use crate::judge::Summary;

/// Nothing without thread evidence (the server-side section says why).
pub(super) fn section(o: &mut String, s: &Summary) {
    if s.threads_by_phase.is_empty() {
        return;
    }
    let knee = s.stress.as_ref().and_then(|st| st.knee.as_deref());
    let breach = s.stress.as_ref().and_then(|st| st.first_breach.as_deref());
    table(o, &s.threads_by_phase, knee, breach);
}

/// The heading, a line on how to read it, and the table.
fn table(o: &mut String, rows: &[PhaseThreads], knee: Option<&str>, breach: Option<&str>) {
    let _ = writeln!(
        o,
        "<h2 id=\"threads-by-phase\">Threads by phase</h2><p class=\"meta\">from each phase's most contended thread dump (the most threads BLOCKED or parked on a pool or lock; the later on ties), and from JFR where a recording covered the phase. Idle threads (waiting for work: executor queues, timers, selectors) are counted apart, never as contention.</p>"
    );
    let _ = writeln!(o, "<table id=\"table-threads-by-phase\"><tr><th class=\"l\">phase</th><th>level</th><th>dumps</th><th>threads</th><th>RUNNABLE</th><th>BLOCKED</th><th>in pool</th><th>waiting</th><th>idle</th><th title=\"NEW, TERMINATED, no state, or no Java frame (JVM service threads)\">other</th><th class=\"l\">top lock (waiters, holder)</th><th class=\"l\">top pool (waiters)</th><th>JFR blocked entries</th><th>JFR blocked ms</th><th class=\"l\">JFR top parks/waits</th></tr>");
    for r in rows {
        let (style, mark) = if Some(r.phase.as_str()) == breach {
            (" style=\"background:#fdecea\"", " <b>first breach</b>")
        } else if Some(r.phase.as_str()) == knee {
            (" style=\"background:#fff4e0\"", " <b>knee</b>")
        } else {
            ("", "")
        };
        let _ = write!(
            o,
            "<tr{style}><td class=\"l\">{}{mark}</td><td>{}</td><td title=\"threads BLOCKED, in a pool or parked on a lock, in each dump\">{}{}</td>",
            esc(&r.phase),
            esc(&r.label),
            r.dumps,
            if r.dumps > 1 {
                let per: Vec<String> = r.contended_per_dump.iter().map(|n| n.to_string()).collect();
                format!(" <span class=\"meta\">(contended {})</span>", per.join(", "))
            } else {
                String::new()
            }
        );
        dump_cells(o, r);
        jfr_cells(o, r);
        let _ = writeln!(o, "</tr>");
    }
    let _ = writeln!(o, "</table>");
}

fn dump_cells(o: &mut String, r: &PhaseThreads) {
    let Some(d) = &r.dump else {
        let _ = write!(o, "<td class=\"na\" colspan=\"9\">no dump</td>");
        return;
    };
    let a = &d.activity;
    let lock = a
        .top_lock
        .as_ref()
        .map(|l| {
            format!(
                "{} ×{}{}",
                l.class,
                l.waiters,
                l.holder
                    .as_ref()
                    .map(|h| format!(", held by {h}"))
                    .unwrap_or_default()
            )
        })
        .unwrap_or_else(|| "-".into());
    let mut pool = a
        .top_pool
        .as_ref()
        .map(|p| format!("{} ×{}", p.pool, p.waiters))
        .unwrap_or_else(|| "-".into());
    if a.in_channel > 0 {
        // Waiting on a channel (Go): held up like a pool borrower.
        pool = format!("{pool}; channel ×{}", a.in_channel);
    }
    let _ = write!(
        o,
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\" title=\"{}\">{}</td><td class=\"l\">{}</td>",
        a.threads,
        a.runnable,
        a.blocked,
        a.in_pool,
        a.waiting,
        a.idle,
        a.other,
        esc(&d.file),
        esc(&lock),
        esc(&pool)
    );
}

fn jfr_cells(o: &mut String, r: &PhaseThreads) {
    let Some(j) = &r.jfr else {
        let _ = write!(o, "<td class=\"na\" colspan=\"3\">no JFR</td>");
        return;
    };
    let parks: Vec<String> = j
        .waits
        .iter()
        .map(|w| format!("{} × {:.0} ms at {}", w.count, w.total_ms, w.site))
        .collect();
    let partial = if j.covered_s + 0.5 < j.phase_s {
        format!(" ({:.0} of {:.0} s recorded)", j.covered_s, j.phase_s)
    } else {
        String::new()
    };
    let _ = write!(
        o,
        "<td>{}</td><td>{:.0}</td><td class=\"l\">{}{}</td>",
        j.monitor_entries,
        j.monitor_ms,
        esc(&if parks.is_empty() {
            "-".to_string()
        } else {
            parks.join("; ")
        }),
        esc(&partial)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::DumpSnapshot;
    use crate::vocab::threads::{Activity, LockTop};

    fn row(phase: &str, blocked: Option<usize>) -> PhaseThreads {
        PhaseThreads {
            phase: phase.into(),
            label: "50/s".into(),
            dumps: usize::from(blocked.is_some()),
            contended_per_dump: blocked.into_iter().collect(),
            dump: blocked.map(|b| DumpSnapshot {
                at_s: 1.0,
                phase: None,
                file: "thread-dump-t0001.0-step-1-001.txt".into(),
                activity: Activity {
                    threads: 16,
                    blocked: b,
                    idle: 16 - b,
                    top_lock: Some(LockTop {
                        lock_type: "monitor".into(),
                        class: "com.acme.Inventory<T>".into(),
                        holder: Some("http-1".into()),
                        waiters: b,
                    }),
                    ..Activity::default()
                },
            }),
            jfr: None,
        }
    }

    #[test]
    fn a_phase_without_a_dump_says_so_and_the_knee_is_marked() {
        let mut o = String::new();
        let rows = [
            row("step-1", Some(2)),
            row("step-2", None),
            row("step-3", Some(12)),
        ];
        table(&mut o, &rows, Some("step-1"), Some("step-3"));
        let tr: Vec<&str> = o.split("<tr").skip(2).collect();
        assert_eq!(tr.len(), 3, "{o}");
        assert!(
            tr[0].contains("<b>knee</b>") && tr[0].contains("<td>2</td>"),
            "{}",
            tr[0]
        );
        assert!(
            tr[1].contains(">no dump</td>") && tr[1].contains(">no JFR</td>"),
            "{}",
            tr[1]
        );
        assert!(
            !tr[1].contains("<td>0</td>"),
            "no zeros for a missing dump: {}",
            tr[1]
        );
        assert!(tr[2].contains("<b>first breach</b>"), "{}", tr[2]);
        assert!(
            tr[2].contains("com.acme.Inventory&lt;T&gt; ×12, held by http-1"),
            "{}",
            tr[2]
        );
    }
}
