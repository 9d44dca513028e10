//! Soak verdicts that name what leaks, against the Java target's leaks of
//! known kind and size (`tests/java/.../Leaks.java`: one leaked thing per
//! request, so the truth is the rate × the size) through the shipped
//! collectors (`linux-host`, `jvm`, `jvm-memory`), local and over SSH:
//!
//! - a heap class leak: the class is named, with its slope, its share of
//!   the live set's growth and its instances per hour;
//! - a clean service on the Serial collector with a small initial heap: heap
//!   after *young* GCs is not the live set, so no leak is called on it;
//!   clean services on G1 and ZGC with the histogram on settle, named nothing;
//!   the heap leak is named on ZGC too;
//! - a class-histogram probe that fails mid-run: a gap, never a wrong verdict;
//! - a thread leak and a socket leak in one soak (JDK 21 locally, JDK 17
//!   over SSH): the thread group `export-worker-N` with the frame its
//!   threads park in, and the CLOSE_WAIT sockets with their peer;
//! - direct buffers with NMT on (NMT's `Other` named);
//! - three leaks outside the heap in one soak, NMT off (JDK 21 locally
//!   through a command prefix as `docker exec` runs probes, JDK 17 over
//!   SSH): direct buffers, Metaspace with its classes (a class-loader
//!   leak) and ESTABLISHED connections to one peer (a pool that never gets
//!   them back), each named with its rate; RSS said to grow outside the
//!   heap, with how to turn NMT on.
//!
//! Soaks are compressed to 68 s (62 s after the warm-up, the least a per-hour
//! verdict takes plus 2 s), so every per-hour figure is ~50× what the same
//! growth would be over an hour; the thresholds are e2e_java's.

#[path = "support/collect.rs"]
mod collect;
#[path = "support/java.rs"]
mod java;
#[path = "support/load.rs"]
mod load;
#[path = "support/leaks.rs"]
mod soaks;
#[path = "support/sshd.rs"]
mod sshd;
#[path = "support/tcp.rs"]
mod tcp;
use soaks::*;

use std::path::Path;
use std::time::{Duration, Instant};

use brunt::judge::LeakStatus;
use brunt::vocab::growth::PartKind;
use collect::every;
use java::Jdk;

const ENTRY: &str = "com.brunt.target.Leaks$CacheEntry";
/// Each request keeps one entry and its `byte[32 KiB]`.
const ENTRY_KB: u64 = 32;

/// The heap leak is named by its class, with the rate and size it was built with.
fn heap_class_named(jdk: Jdk) {
    heap_class_named_on(jdk, "-XX:+UseG1GC");
}

/// As [`heap_class_named`], on the collector `gc`.
fn heap_class_named_on(jdk: Jdk, gc: &str) {
    let _g = load::serial();
    let m = jdk.major;
    let t = target(&jdk, &["-Xms64m", "-Xmx1g", gc], "heap");
    let s = soak(
        &t,
        "heap",
        &format!(r#"{{ path: "/grow/entries?kb={ENTRY_KB}" }}"#),
        |r| collectors(&t, r, false, Some(histograms())),
    );
    let so = &s.verdict;
    assert_eq!(so.status, LeakStatus::Leak, "JDK {m}: {}", so.text);
    let g = so
        .grows
        .first()
        .unwrap_or_else(|| panic!("JDK {m}: nothing named: {}", so.text));
    assert_eq!(
        (g.kind, g.name.as_str()),
        (PartKind::HeapClass, ENTRY),
        "JDK {m}: {}",
        so.text
    );
    // Truth by construction: RATE entries per second, each its own bytes
    // plus its array's (sizes as the JVM reports them in the last histogram).
    let (entry_bytes, entries) = last_histogram(s.dir.path(), ENTRY);
    let each = entry_bytes as f64 / entries as f64 + (ENTRY_KB * 1024 + 16) as f64;
    near(g, RATE * 3600.0 * each, 0.2, &format!("JDK {m} heap"));
    let inst = g.instances_per_hour.expect("instances per hour");
    assert!(
        (inst / (RATE * 3600.0) - 1.0).abs() < 0.2,
        "JDK {m}: {inst}/h"
    );
    assert!(
        g.share.is_some_and(|x| x > 0.8),
        "JDK {m}: share {:?}",
        g.share
    );
    assert!(
        g.detail.as_deref().is_some_and(|d| d.contains("byte[]")),
        "JDK {m}: the payload array is counted with its owner: {:?}",
        g.detail
    );
    // The text leads with the name, then the slope; summary.json and the
    // terminal carry the same item.
    assert!(
        so.text
            .starts_with(&format!("LEAK: heap class `{ENTRY}` +")),
        "JDK {m}: {}",
        so.text
    );
    assert_eq!(
        s.summary["verdicts"]["soak"]["grows"][0]["name"], ENTRY,
        "JDK {m}"
    );
    assert_eq!(
        s.summary["verdicts"]["soak"]["grows"][0]["kind"], "heap_class",
        "JDK {m}"
    );
    assert!(
        s.terminal.contains(&format!("GROWS heap class `{ENTRY}`")),
        "JDK {m}: {}",
        s.terminal
    );
    // report.html: the section, the line, a chart with its trend line.
    let html = std::fs::read_to_string(s.dir.path().join("run/report.html")).expect("report.html");
    let section = html
        .split("What grows")
        .nth(1)
        .unwrap_or_else(|| panic!("JDK {m}: no What grows section"));
    assert!(section.contains("Leaks$CacheEntry"), "JDK {m}");
    assert!(
        section.contains("<figure id=\"grows-0\"><svg"),
        "JDK {m}: no chart"
    );
    assert!(
        section.contains(">\ntrend\n</text>"),
        "JDK {m}: no trend line legend"
    );
    // Nothing else is named: the histogram's other classes hold still.
    assert!(
        so.grows
            .iter()
            .skip(1)
            .all(|g| g.kind != PartKind::HeapClass),
        "JDK {m}: {:?}",
        so.grows.iter().map(|g| &g.text).collect::<Vec<_>>()
    );
}

java::per_jdk!(heap_class_named:
    heap_class_named_jdk21 => jdk21,
    heap_class_named_jdk17 => jdk17,
);

/// ZGC's every cycle is a whole-heap one: its heap after GC is the live set too.
#[test]
fn heap_class_named_on_zgc() {
    heap_class_named_on(java::jdk21(), "-XX:+UseZGC");
}

/// A service that keeps nothing, with the class histogram on (each a full
/// GC, so the live set is measured): no class, no series is a leak — on G1
/// (JDK 21) and ZGC (JDK 17).
fn clean_settles(jdk: Jdk, gc: &str) {
    let _g = load::serial();
    let m = jdk.major;
    // The heap committed and touched up front: RSS settles at once, so the
    // verdict is about what the heap keeps, not about it growing into -Xmx.
    let t = target(
        &jdk,
        &["-Xms256m", "-Xmx256m", "-XX:+AlwaysPreTouch", gc],
        "clean",
    );
    let s = soak(&t, "clean", r#"{ path: "/churn?kb=64" }"#, |r| {
        collectors(&t, r, true, Some(histograms()))
    });
    let so = &s.verdict;
    assert_eq!(so.status, LeakStatus::NoLeak, "JDK {m} {gc}: {}", so.text);
    assert!(so.grows.is_empty(), "JDK {m} {gc}: {:?}", so.grows);
    // The live set was measured, not left unknown.
    assert!(
        so.trends
            .iter()
            .any(|t| t.series == "jvm.live_set_bytes" && t.note.is_none() && !t.flagged),
        "JDK {m} {gc}: {}",
        so.text
    );
}

#[test]
fn clean_settles_g1_jdk21() {
    clean_settles(java::jdk21(), "-XX:+UseG1GC");
}

#[test]
fn clean_settles_zgc_jdk17() {
    clean_settles(java::jdk17(), "-XX:+UseZGC");
}

/// A service that keeps nothing, on the Serial collector with a small
/// initial heap: heap after young GCs may creep while the old generation
/// fills with garbage, which the next full GC frees. Judged on full
/// collections only, it is never a leak; without enough full collections
/// the live set is said to be unknown.
#[test]
fn serial_gc_churn_is_not_a_leak() {
    let _g = load::serial();
    let jdk = java::jdk17();
    let t = target(
        &jdk,
        &["-XX:+UseSerialGC", "-Xms8m", "-Xmn4m", "-Xmx512m"],
        "serial",
    );
    let s = soak(&t, "serial", r#"{ path: "/churn?kb=64" }"#, |r| {
        collectors(&t, r, false, None)
    });
    let so = &s.verdict;
    assert_ne!(so.status, LeakStatus::Leak, "{}", so.text);
    assert!(so.grows.is_empty(), "{:?}", so.grows);
    let trend = |name: &str| so.trends.iter().find(|t| t.series == name);
    let young = trend("jvm.heap_after_young_gc_bytes").unwrap_or_else(|| {
        panic!(
            "no young-GC series: JFR's GC events were not read: {}",
            so.text
        )
    });
    assert!(young.points >= 10, "{young:?}");
    assert!(!young.flagged, "{young:?}");
    match trend("jvm.heap_after_gc_bytes") {
        Some(full) if full.points >= 10 => assert!(!full.flagged, "{full:?}"),
        _ => assert!(
            so.text.contains("no full collection in the window"),
            "{}",
            so.text
        ),
    }
}

/// `jcmd` that fails while `marker` exists, as a JVM that stops answering
/// attach requests for a while does.
fn flaky_jcmd(dir: &Path, real: &Path, marker: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("jcmd-flaky.sh");
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\nif [ -e '{}' ]; then echo 'attach failed (test)' >&2; exit 1; fi\nexec '{}' \"$@\"\n",
            marker.display(),
            real.display()
        ),
    )
    .expect("write jcmd wrapper");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    p
}

/// The histogram probe fails for 14 s in the middle of the soak: a gap in
/// the class's series, the collectors' errors say so, and the verdict still
/// names the class that leaks at the rate it leaks — never another.
#[test]
fn a_histogram_gap_is_a_gap_not_a_wrong_verdict() {
    let _g = load::serial();
    let jdk = java::jdk21();
    let t = target(&jdk, &["-Xms64m", "-Xmx1g", "-XX:+UseG1GC"], "gap");
    let tmp = tempfile::tempdir().expect("tempdir");
    let marker = tmp.path().join("jcmd-down");
    let wrapper = flaky_jcmd(tmp.path(), &jdk.jcmd(), &marker);
    let (m2, stop) = (
        marker.clone(),
        std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
    );
    let stop2 = stop.clone();
    // Down from 30 s to 44 s after the run starts (bounded: the thread ends by then).
    let outage = std::thread::spawn(move || {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(30)
            && !stop2.load(std::sync::atomic::Ordering::Relaxed)
        {
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = std::fs::write(&m2, b"");
        std::thread::sleep(Duration::from_secs(14));
        let _ = std::fs::remove_file(&m2);
    });
    let s = soak(
        &t,
        "gap",
        &format!(r#"{{ path: "/grow/entries?kb={ENTRY_KB}" }}"#),
        |r| {
            let mut c = collectors(&t, r, false, Some(histograms()));
            c.target.jcmd = wrapper.display().to_string();
            c
        },
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = outage.join();
    let errors = s.summary["collectors"]["errors"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        errors
            .iter()
            .any(|e| e.to_string().contains("class-histogram")),
        "the outage is in the collectors' errors: {errors:?}"
    );
    let so = &s.verdict;
    let hist_files = std::fs::read_dir(s.dir.path().join("run/diagnostics"))
        .expect("diagnostics/")
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("class-histogram-")
        })
        .count();
    eprintln!("{hist_files} histograms; {}", so.text);
    for g in &so.grows {
        assert!(
            g.kind != PartKind::HeapClass || g.name == ENTRY,
            "a wrong class named: {}",
            g.text
        );
    }
    match so.grows.iter().find(|g| g.name == ENTRY) {
        Some(g) => near(
            g,
            RATE * 3600.0 * (ENTRY_KB * 1024 + 16 + 24) as f64,
            0.25,
            "JDK 21 gap",
        ),
        // Too few histograms left for a per-hour verdict: not named, and not another.
        None => assert!(
            hist_files < 10,
            "{hist_files} histograms and no class named: {}",
            so.text
        ),
    }
}

/// The kinds of summary.json's `verdicts.soak.grows[]`, in order.
fn grown_kinds(summary: &serde_json::Value) -> Vec<&str> {
    summary["verdicts"]["soak"]["grows"]
        .as_array()
        .map(|a| a.iter().filter_map(|g| g["kind"].as_str()).collect())
        .unwrap_or_default()
}

/// `GET path` once more after the run: the count the target answers
/// (`threads 1234`) is how many it made.
fn count_after(t: &java::JavaTarget, path: &str) -> f64 {
    let (status, body) = t.get(path, Duration::from_secs(5)).expect("count request");
    assert_eq!(status, 200, "{body}");
    let n: f64 = body
        .lines()
        .last()
        .and_then(|l| l.split_whitespace().last())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {body:?}"));
    n - 1.0 // this request's own
}

/// One thread and one socket leaked per request (half the requests each):
/// both are named, with their slopes, the thread group's frame and the
/// sockets' peer.
fn threads_and_sockets_named(jdk: Jdk, over_ssh: bool) {
    let _g = load::serial();
    let m = jdk.major;
    let sshd = over_ssh.then(sshd::Sshd::start);
    let t = target(&jdk, &["-Xmx256m"], "threads-sockets");
    let t0 = Instant::now();
    let s = soak(
        &t,
        "threads-sockets",
        r#"{ path: "/grow/threads" }, { path: "/grow/sockets" }"#,
        |r| {
            let mut c = collectors(&t, r, true, None);
            if let Some(sshd) = &sshd {
                c.transport = sshd.transport();
            }
            c
        },
    );
    let secs = t0.elapsed().as_secs_f64();
    let (threads, sockets) = (
        count_after(&t, "/grow/threads"),
        count_after(&t, "/grow/sockets"),
    );
    let so = &s.verdict;
    assert_eq!(so.status, LeakStatus::Leak, "JDK {m}: {}", so.text);
    let find = |k: PartKind| named(so, k, &s.evidence, m);
    // Threads: the group, its rate, where its threads wait. The rate is
    // the target's own count over the soak (the run's clock runs from just
    // after the warm requests to the end: `secs` bounds it from above).
    let g = find(PartKind::ThreadGroup);
    assert_eq!(g.name, "export-worker-N", "JDK {m}: {}", g.text);
    near(
        g,
        threads / secs * 3600.0,
        0.25,
        &format!("JDK {m} threads"),
    );
    assert!(
        g.detail
            .as_deref()
            .is_some_and(|d| d.contains("Leaks$Exporter.run")),
        "JDK {m}: {:?}",
        g.detail
    );
    assert!(g.share.is_some_and(|x| x > 0.8), "JDK {m}: {:?}", g.share);
    // Sockets: CLOSE_WAIT, to the peer on 127.0.0.1.
    let c = find(PartKind::Sockets);
    assert!(
        c.name.starts_with("CLOSE_WAIT to 127.0.0.1:"),
        "JDK {m}: {}",
        c.text
    );
    near(
        c,
        sockets / secs * 3600.0,
        0.25,
        &format!("JDK {m} sockets"),
    );
    assert!(
        c.text.contains("the application never did"),
        "JDK {m}: {}",
        c.text
    );
    // The text leads with what grows; both are in summary.json.
    assert!(so.text.starts_with("LEAK: "), "JDK {m}: {}", so.text);
    for name in ["export-worker-N", "CLOSE_WAIT to 127.0.0.1:"] {
        assert!(
            so.text
                .find(name)
                .is_some_and(|i| i < so.text.find("target.").unwrap_or(usize::MAX)),
            "JDK {m}: {name} not before the series: {}",
            so.text
        );
    }
    let kinds = grown_kinds(&s.summary);
    assert!(
        kinds.contains(&"thread_group") && kinds.contains(&"sockets"),
        "JDK {m}: {kinds:?}"
    );
    // No heap class is called a leak: the heap holds threads' and sockets' small objects only.
    assert!(
        !so.grows.iter().any(|g| g.kind == PartKind::HeapClass),
        "JDK {m}"
    );
}

#[test]
fn threads_and_sockets_named_jdk21_local() {
    threads_and_sockets_named(java::jdk21(), false);
}

#[test]
fn threads_and_sockets_named_jdk17_ssh() {
    threads_and_sockets_named(java::jdk17(), true);
}

/// Direct buffers (native memory) kept per request, with Native Memory
/// Tracking on: RSS grows while the live set does not — said as "outside
/// the Java heap" — and NMT's `Other` category is named with its rate, as
/// is the direct buffer pool JFR reads.
#[test]
fn direct_buffers_are_named_outside_the_heap() {
    let _g = load::serial();
    let jdk = java::jdk21();
    let t = target(
        &jdk,
        &[
            "-Xms64m",
            "-Xmx256m",
            "-XX:+UseG1GC",
            "-XX:NativeMemoryTracking=summary",
        ],
        "direct",
    );
    let kb = 64.0;
    let t0 = Instant::now();
    let s = soak(&t, "direct", r#"{ path: "/grow/direct?kb=64" }"#, |r| {
        collectors(
            &t,
            r,
            false,
            Some(vec![("class-histogram", every(4000)), ("nmt", every(4000))]),
        )
    });
    let secs = t0.elapsed().as_secs_f64();
    let buffers = count_after(&t, "/grow/direct?kb=64");
    let so = &s.verdict;
    assert_eq!(so.status, LeakStatus::Leak, "{}", so.text);
    let g = named(so, PartKind::NativeCategory, &s.evidence, 21);
    assert_eq!(g.name, "Other", "{}", g.text);
    near(
        g,
        buffers * kb * 1024.0 / secs * 3600.0,
        0.25,
        "JDK 21 native",
    );
    assert!(so.text.contains("outside the Java heap"), "{}", so.text);
    assert!(
        !so.grows.iter().any(|g| g.kind == PartKind::HeapClass),
        "the heap's small DirectByteBuffer objects are not the leak: {}",
        so.text
    );
    // JFR's direct buffer pool says the same as NMT, with the buffers' count.
    let d = named(so, PartKind::DirectBuffers, &s.evidence, 21);
    near(
        d,
        buffers * kb * 1024.0 / secs * 3600.0,
        0.25,
        "JDK 21 direct buffers",
    );
    assert!(d.instances_per_hour.is_some(), "{}", d.text);
}

/// Classes each `/grow/classes` request defines, each in its own loader.
const CLASSES_PER_REQUEST: u32 = 8;

/// Direct buffers, a class-loader leak and connections borrowed from a pool
/// and never returned, one of each per three requests, Native Memory
/// Tracking off: each is named with its rate (truth: the target's own
/// counts), RSS is said to grow outside the heap, and the verdict says how
/// to turn NMT on. `prefix` runs every probe as `PREFIX sh -c '…'`, as
/// `docker exec`/`kubectl exec` do.
fn off_heap_named(jdk: Jdk, over_ssh: bool, prefix: &[&str]) {
    let _g = load::serial();
    let m = jdk.major;
    let sshd = over_ssh.then(sshd::Sshd::start);
    // The pool's peer: holds every connection open until the test ends.
    let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let h2 = held.clone();
    let (peer, accept) = tcp::serve(stop.clone(), move |c| {
        if let Ok(mut v) = h2.lock() {
            v.push(c);
        }
    });
    let t = target(&jdk, &["-Xms64m", "-Xmx256m", "-XX:+UseG1GC"], "off-heap");
    let t0 = Instant::now();
    let s = soak(
        &t,
        "off-heap",
        &format!(
            r#"{{ path: "/grow/direct?kb=64" }}, {{ path: "/grow/pool?port={peer}" }}, {{ path: "/grow/classes?n={CLASSES_PER_REQUEST}" }}"#
        ),
        |r| {
            let mut c = collectors(
                &t,
                r,
                false,
                Some(vec![("class-histogram", every(4000)), ("nmt", every(4000))]),
            );
            if let Some(sshd) = &sshd {
                c.transport = sshd.transport();
            }
            c.transport.prefix = prefix.iter().map(|p| p.to_string()).collect();
            c
        },
    );
    let secs = t0.elapsed().as_secs_f64();
    let per_h = |n: f64| n / secs * 3600.0;
    let buffers = count_after(&t, "/grow/direct?kb=64");
    let borrowed = count_after(&t, &format!("/grow/pool?port={peer}"));
    let classes = count_after(&t, "/grow/classes?n=1");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = accept.join();
    drop(held);
    let so = &s.verdict;
    assert_eq!(so.status, LeakStatus::Leak, "JDK {m}: {}", so.text);
    let find = |k: PartKind| named(so, k, &s.evidence, m);
    // Direct buffers: the pool's bytes and count, 64 KiB each.
    let d = find(PartKind::DirectBuffers);
    near(
        d,
        per_h(buffers) * 65536.0,
        0.25,
        &format!("JDK {m} direct"),
    );
    let n = d.instances_per_hour.expect("buffers per hour");
    assert!(
        (n / per_h(buffers) - 1.0).abs() < 0.25,
        "JDK {m}: {}",
        d.text
    );
    assert!(
        d.text.starts_with("direct buffers +"),
        "JDK {m}: {}",
        d.text
    );
    assert!(
        (d.slope_per_hour / n / 65536.0 - 1.0).abs() < 0.05 && d.text.contains("KB each"),
        "JDK {m}: each buffer is 64 KiB: {}",
        d.text
    );
    // Metaspace: the classes defined and kept, counted by JFR.
    let c = find(PartKind::Metaspace);
    let k = c.instances_per_hour.expect("classes per hour");
    assert!(
        (k / per_h(classes) - 1.0).abs() < 0.25,
        "JDK {m}: {k}/h vs {}/h: {}",
        per_h(classes),
        c.text
    );
    assert!(c.slope_per_hour > 0.0, "JDK {m}: {}", c.text);
    assert!(c.text.contains("class-loader leak"), "JDK {m}: {}", c.text);
    // Connections never given back: ESTABLISHED to the peer, with its port.
    let e = find(PartKind::Sockets);
    assert_eq!(
        e.name,
        format!("ESTABLISHED to 127.0.0.1:{peer}"),
        "JDK {m}: {}",
        e.text
    );
    near(e, per_h(borrowed), 0.25, &format!("JDK {m} pool"));
    assert!(e.text.contains("never closed"), "JDK {m}: {}", e.text);
    // Outside the heap, said plainly, with how to see more.
    // The nmt probe ran and the JVM answered NMT off: only the flag is missing.
    for said in [
        "outside the Java heap",
        "the nmt probe found Native Memory Tracking off",
        "-XX:NativeMemoryTracking=summary",
    ] {
        assert!(so.text.contains(said), "JDK {m}: no {said:?}: {}", so.text);
    }
    assert!(
        !so.grows.iter().any(|g| g.kind == PartKind::HeapClass),
        "JDK {m}: a heap class called a leak: {}",
        so.text
    );
    let kinds = grown_kinds(&s.summary);
    for k in ["direct_buffers", "metaspace", "sockets"] {
        assert!(kinds.contains(&k), "JDK {m}: {k} not in {kinds:?}");
    }
    assert!(
        s.terminal.contains("GROWS direct buffers +"),
        "JDK {m}: {}",
        s.terminal
    );
}

#[test]
fn off_heap_named_jdk21_through_a_prefix() {
    off_heap_named(java::jdk21(), false, &["env", "BRUNT_VIA=exec"]);
}

#[test]
fn off_heap_named_jdk17_ssh() {
    off_heap_named(java::jdk17(), true, &[]);
}
