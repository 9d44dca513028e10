//! Threads grouped by name pattern, for the soak's "which threads grow":
//! every run of digits in a name is folded (`export-worker-17` →
//! `export-worker-N`, `pool-3-thread-9` → `pool-N-thread-N`), so one
//! executor's threads are one group across dumps, and the group's most
//! common application frame says where its threads wait (or who made them).

use std::collections::BTreeMap;

use super::findings::app_frame;
use super::model::{ThreadDump, ThreadState};

/// One name pattern in one dump.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ThreadGroup {
    /// The folded name: `export-worker-N`.
    pub pattern: String,
    pub count: usize,
    /// The most common thread state in the group.
    pub state: ThreadState,
    /// The most common first application frame of its threads, and how many share it.
    pub top_frame: Option<(String, usize)>,
}

/// A thread name with its digit runs folded to `N`.
pub fn name_pattern(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_digits = false;
    for c in name.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('N');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

/// The groups of one dump, largest first (ties by pattern). JVM-internal
/// threads (no Java id) are left out: they do not leak with the load.
pub fn groups(dump: &ThreadDump) -> Vec<ThreadGroup> {
    #[derive(Default)]
    struct Acc {
        count: usize,
        states: BTreeMap<ThreadState, usize>,
        frames: BTreeMap<String, usize>,
    }
    let mut by: BTreeMap<String, Acc> = BTreeMap::new();
    for t in dump.threads.iter().filter(|t| !t.internal) {
        let a = by.entry(name_pattern(&t.name)).or_default();
        a.count += 1;
        *a.states.entry(t.state()).or_default() += 1;
        if let Some(f) = app_frame(&t.frames, 0) {
            *a.frames.entry(f).or_default() += 1;
        }
    }
    fn most<K: Clone>(m: &BTreeMap<K, usize>) -> Option<(K, usize)> {
        // Ties go to the first key: deterministic.
        m.iter()
            .fold(None, |best: Option<(&K, usize)>, (k, n)| match best {
                Some((_, b)) if b >= *n => best,
                _ => Some((k, *n)),
            })
            .map(|(k, n)| (k.clone(), n))
    }
    let mut out: Vec<ThreadGroup> = by
        .into_iter()
        .map(|(pattern, a)| ThreadGroup {
            state: most(&a.states)
                .map(|(s, _)| s)
                .unwrap_or(ThreadState::Unknown),
            top_frame: most(&a.frames),
            pattern,
            count: a.count,
        })
        .collect();
    out.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.pattern.cmp(&b.pattern))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digit_runs_fold() {
        assert_eq!(name_pattern("export-worker-17"), "export-worker-N");
        assert_eq!(name_pattern("pool-3-thread-129"), "pool-N-thread-N");
        assert_eq!(name_pattern("http-nio-8080-exec-7"), "http-nio-N-exec-N");
        assert_eq!(name_pattern("main"), "main");
        assert_eq!(name_pattern(""), "");
    }

    #[test]
    fn groups_of_a_real_dump_shape() {
        let worker = |i: u32| {
            format!(
                "\"export-worker-{i}\" #{id} [{nid}] daemon prio=5 os_prio=0 cpu=0.10ms elapsed=3.00s tid=0x1 nid={nid} waiting on condition  [0x2]
   java.lang.Thread.State: WAITING (parking)
\tat jdk.internal.misc.Unsafe.park(java.base@21.0.8/Native Method)
\tat java.util.concurrent.locks.LockSupport.park(java.base@21.0.8/LockSupport.java:371)
\tat com.acme.Exporter.lambda$start$0(Exporter.java:22)
\tat java.lang.Thread.run(java.base@21.0.8/Thread.java:1583)

",
                id = 31 + i,
                nid = 4711 + i
            )
        };
        let text = format!(
            "2026-12-01 22:00:00
Full thread dump OpenJDK 64-Bit Server VM (21.0.8+9-LTS mixed mode, sharing):

{}{}\"main\" #1 [4700] prio=5 os_prio=0 cpu=50.00ms elapsed=3.10s tid=0x5 nid=4700 waiting on condition  [0x6]
   java.lang.Thread.State: TIMED_WAITING (sleeping)
\tat java.lang.Thread.sleep0(java.base@21.0.8/Native Method)
\tat com.acme.Main.main(Main.java:9)

\"VM Thread\" os_prio=0 cpu=1.00ms elapsed=3.10s tid=0x7 nid=4701 runnable
",
            worker(0),
            worker(1)
        );
        let dumps = crate::diagnosis::text::parse_text_dumps(&text, "t.txt");
        let d = dumps.first().expect("a dump");
        let g = groups(d);
        assert_eq!(g.len(), 2, "{g:?}");
        assert_eq!(g[0].pattern, "export-worker-N");
        assert_eq!(g[0].count, 2);
        assert_eq!(g[0].state, ThreadState::Waiting);
        assert_eq!(
            g[0].top_frame,
            Some(("Exporter.lambda$start$0(Exporter.java:22)".into(), 2))
        );
    }
}
