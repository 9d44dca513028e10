//! The per-phase thread table (`summary.json`'s `threads_by_phase`): for
//! every load phase, what its threads were doing in its most contended dump
//! and the JFR waits in it, so contention is seen building step by step.
//!
//! Which dump stands for a phase with several: the one with the most
//! threads held up by others (BLOCKED, parked in a pool or on a lock), the
//! later one on ties. A dump is an instant and contention comes in bursts;
//! the worst instant says how far it got in that phase, and a dump taken
//! just as the phase began (still showing the phase before) cannot hide a
//! worse one later. One whole dump, not a maximum per column, so a row's
//! counts add up to its threads. A phase without a dump says so, never zeros.

use serde::{Deserialize, Serialize};

use crate::evidence::{DumpSnapshot, ServerEvidence};
use crate::vocab::threads::JfrPhase;
use crate::vocab::PhaseInfo;

/// One load phase's row.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PhaseThreads {
    pub phase: String,
    pub label: String,
    /// Thread dumps taken in the phase (0: no dump, `dump` is absent).
    pub dumps: usize,
    /// Threads held up by others (BLOCKED, in a pool, parked on a lock) in
    /// each of the phase's dumps, in time order: a burst (`0, 0, 9`) reads
    /// apart from a steady state (`9, 9, 9`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contended_per_dump: Vec<usize>,
    /// The phase's most contended dump (see the module doc).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dump: Option<DumpSnapshot>,
    /// JFR waits, when a recording covered the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jfr: Option<JfrPhase>,
}

/// The table, one row per phase; empty when the run has no thread evidence
/// (no dump and no recording): nothing to show, rather than a table of "no dump".
pub fn by_phase(phases: &[PhaseInfo], server: Option<&ServerEvidence>) -> Vec<PhaseThreads> {
    let Some(ev) = server.map(|s| &s.threads).filter(|t| !t.is_empty()) else {
        return vec![];
    };
    phases
        .iter()
        .map(|p| {
            let (from, to) = (p.start.as_secs_f64(), (p.start + p.duration).as_secs_f64());
            let inside: Vec<&DumpSnapshot> = ev
                .dumps
                .iter()
                .filter(|d| match &d.phase {
                    Some(ph) => *ph == p.name,
                    None => d.at_s >= from && d.at_s < to,
                })
                .collect();
            let dump = inside
                .iter()
                .max_by(|a, b| {
                    let key = |d: &DumpSnapshot| {
                        let lock = d.activity.top_lock.as_ref().map_or(0, |l| l.waiters);
                        (d.activity.contended(), lock)
                    };
                    key(a).cmp(&key(b)).then(a.at_s.total_cmp(&b.at_s))
                })
                .map(|d| (*d).clone());
            PhaseThreads {
                phase: p.name.clone(),
                label: p.label.clone(),
                dumps: inside.len(),
                contended_per_dump: inside.iter().map(|d| d.activity.contended()).collect(),
                dump,
                jfr: ev.jfr.iter().find(|j| j.phase == p.name).cloned(),
            }
        })
        .collect()
}

impl PhaseThreads {
    /// The dump part of a row in words: `12 BLOCKED, 2 in pool, 3 idle of
    /// 16; lock com.acme.Inventory ×12 (held by http-7)`, or `no dump`.
    pub fn dump_text(&self) -> String {
        let Some(d) = &self.dump else {
            return "no dump".into();
        };
        let a = &d.activity;
        let other = if a.other > 0 {
            format!(", {} other", a.other)
        } else {
            String::new()
        };
        let channel = if a.in_channel > 0 {
            format!(", {} on a channel", a.in_channel)
        } else {
            String::new()
        };
        let mut s = format!(
            "{} RUNNABLE, {} BLOCKED, {} in pool{channel}, {} waiting, {} idle{other} of {}",
            a.runnable, a.blocked, a.in_pool, a.waiting, a.idle, a.threads
        );
        if let Some(l) = &a.top_lock {
            s.push_str(&format!("; lock {} ×{}", l.class, l.waiters));
            if let Some(h) = &l.holder {
                s.push_str(&format!(" (held by {h})"));
            }
        }
        if let Some(p) = &a.top_pool {
            s.push_str(&format!("; pool {} ×{}", p.pool, p.waiters));
        }
        if self.dumps > 1 {
            let per: Vec<String> = self
                .contended_per_dump
                .iter()
                .map(|n| n.to_string())
                .collect();
            s.push_str(&format!(
                " [worst of {} dumps; contended in each: {}]",
                self.dumps,
                per.join(", ")
            ));
        }
        s
    }

    /// The JFR part in words, or `no JFR`.
    pub fn jfr_text(&self) -> String {
        let Some(j) = &self.jfr else {
            return "no JFR".into();
        };
        let mut s = format!(
            "{} blocked entries, {:.0} ms",
            j.monitor_entries, j.monitor_ms
        );
        if let Some(m) = &j.top_monitor {
            s.push_str(&format!(" (most on {})", m.class.as_deref().unwrap_or("?")));
        }
        if let Some(w) = j.waits.first() {
            s.push_str(&format!(
                "; parks: {} × {:.0} ms at {}",
                w.count, w.total_ms, w.site
            ));
        }
        if j.covered_s + 0.5 < j.phase_s {
            s.push_str(&format!(
                " [{:.0} of {:.0} s recorded]",
                j.covered_s, j.phase_s
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnosis::{Analysis, Options, PhaseWindow};
    use std::time::Duration;

    /// A `jcmd Thread.print -l` dump at `time`: `blocked` workers BLOCKED on
    /// the Inventory monitor `http-worker-1` holds, and three idle workers.
    fn dump(time: &str, blocked: usize) -> String {
        let mut s = format!("4242:\n{time}\nFull thread dump OpenJDK 64-Bit Server VM (21.0.2+13 mixed mode, sharing):\n\n");
        let head = |n: usize, what: &str| {
            format!("\"http-worker-{n}\" #{} [{}] prio=5 os_prio=0 cpu=1.00ms elapsed=3.00s tid=0x00007f00{n:02} nid={} {what}  [0x00007f]\n", 20 + n, 1000 + n, 1000 + n)
        };
        s.push_str(&head(1, "waiting on condition"));
        s.push_str("   java.lang.Thread.State: TIMED_WAITING (sleeping)\n\tat java.lang.Thread.sleep0(java.base@21/Native Method)\n\tat java.lang.Thread.sleep(java.base@21/Thread.java:509)\n\tat com.brunt.target.Inventory.reserve(Inventory.java:20)\n\t- locked <0x0000000712345678> (a com.brunt.target.Inventory)\n\tat com.brunt.target.Target.contended(Target.java:121)\n\n");
        for n in 2..2 + blocked {
            s.push_str(&head(n, "waiting for monitor entry"));
            s.push_str("   java.lang.Thread.State: BLOCKED (on object monitor)\n\tat com.brunt.target.Inventory.reserve(Inventory.java:18)\n\t- waiting to lock <0x0000000712345678> (a com.brunt.target.Inventory)\n\tat com.brunt.target.Target.contended(Target.java:121)\n\n");
        }
        for n in 2 + blocked..5 + blocked {
            s.push_str(&head(n, "waiting on condition"));
            s.push_str("   java.lang.Thread.State: WAITING (parking)\n\tat jdk.internal.misc.Unsafe.park(java.base@21/Native Method)\n\t- parking to wait for  <0x0000000799999999> (a java.util.concurrent.locks.AbstractQueuedSynchronizer$ConditionObject)\n\tat java.util.concurrent.locks.LockSupport.park(java.base@21/LockSupport.java:371)\n\tat java.util.concurrent.LinkedBlockingQueue.take(java.base@21/LinkedBlockingQueue.java:435)\n\tat java.util.concurrent.ThreadPoolExecutor.getTask(java.base@21/ThreadPoolExecutor.java:1070)\n\tat java.util.concurrent.ThreadPoolExecutor.runWorker(java.base@21/ThreadPoolExecutor.java:1130)\n\tat java.lang.Thread.run(java.base@21/Thread.java:1583)\n\n");
        }
        s.push_str("JNI global refs: 10, weak refs: 0\n\n");
        s
    }

    fn unix(local: &str) -> f64 {
        chrono::NaiveDateTime::parse_from_str(local, "%Y-%m-%d %H:%M:%S")
            .ok()
            .and_then(|n| n.and_local_timezone(chrono::Local).earliest())
            .map(|t| t.timestamp() as f64)
            .expect("a local time")
    }

    fn phase(index: usize, start: u64) -> PhaseInfo {
        PhaseInfo {
            index,
            name: format!("step-{}", index + 1),
            label: format!("{}/s", 10 * (index + 1)),
            start: Duration::from_secs(start),
            duration: Duration::from_secs(10),
            level: Some(10.0 * (index + 1) as f64),
        }
    }

    /// Fixed dumps through the diagnosis and the evidence into the table:
    /// step-1 has two dumps (the worst stands for it), step-2 none, step-3 one.
    #[test]
    fn table_from_fixed_dumps_says_no_dump_for_a_phase_without_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let t0 = "2026-12-01 10:00:00";
        let start = unix(t0);
        let files = [
            ("dump-a.txt", dump("2026-12-01 10:00:02", 1)),
            ("dump-b.txt", dump("2026-12-01 10:00:06", 4)),
            ("dump-c.txt", dump("2026-12-01 10:00:25", 9)),
        ];
        let mut paths = vec![];
        for (n, text) in &files {
            let p = dir.path().join(n);
            std::fs::write(&p, text).expect("write dump");
            paths.push(p);
        }
        let phases = [phase(0, 0), phase(1, 10), phase(2, 20)];
        let opts = Options {
            phases: phases
                .iter()
                .map(|p| PhaseWindow {
                    name: p.name.clone(),
                    start_unix: start + p.start.as_secs_f64(),
                    end_unix: start + (p.start + p.duration).as_secs_f64(),
                })
                .collect(),
            ..Options::default()
        };
        let a = Analysis::from_paths(&paths, &opts).expect("analysis");
        let ev = crate::evidence::from_analysis(&a, start);
        // Through evidence.json's form and back, as `brunt report` reads it.
        let text = serde_json::to_string(&ev).expect("serialize");
        let ev: ServerEvidence = serde_json::from_str(&text).expect("read back");
        let rows = by_phase(&phases, Some(&ev));
        assert_eq!(rows.len(), 3);
        let (r1, r2, r3) = (&rows[0], &rows[1], &rows[2]);
        assert_eq!((r1.dumps, &r1.contended_per_dump[..]), (2, &[1, 4][..]));
        let d1 = r1.dump.as_ref().expect("step-1 dump");
        assert_eq!(d1.activity.blocked, 4, "the worst of the two: {d1:?}");
        assert_eq!(
            d1.activity.idle, 3,
            "executor workers waiting for a task are idle"
        );
        assert_eq!(d1.activity.waiting, 1, "the holder sleeps");
        assert_eq!(d1.activity.threads, 8);
        let lock = d1.activity.top_lock.as_ref().expect("top lock");
        assert_eq!(lock.class, "com.brunt.target.Inventory");
        assert_eq!(
            (lock.waiters, lock.holder.as_deref()),
            (4, Some("http-worker-1"))
        );
        assert_eq!((r2.dumps, r2.dump.is_none()), (0, true));
        assert_eq!(r2.dump_text(), "no dump");
        assert_eq!(r2.jfr_text(), "no JFR");
        let d3 = r3.dump.as_ref().expect("step-3 dump");
        assert_eq!(d3.activity.blocked, 9);
        assert!(
            r3.dump_text().contains("9 BLOCKED") && r3.dump_text().contains("Inventory ×9"),
            "{}",
            r3.dump_text()
        );
        // No thread evidence at all: no table (not a column of "no dump").
        assert!(by_phase(&phases, Some(&ServerEvidence::default())).is_empty());
        assert!(by_phase(&phases, None).is_empty());
        // An evidence file written before `threads` existed still reads.
        let old: ServerEvidence =
            serde_json::from_str(r#"{"series": {}, "findings": []}"#).expect("old");
        assert!(old.threads.is_empty());
    }
}
