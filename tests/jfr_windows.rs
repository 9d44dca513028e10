//! Windowed JFR (`window:` on the jvm collector's jfr probe) end to end
//! against the Java target (`tests/java`): a time-compressed soak while the
//! test adds rising contention at `/contended` (one more looping client every
//! few seconds, each holding the `Inventory` monitor 5 ms), the recording
//! dumped every 6 or 8 s and at the soak's start:
//! - every window is downloaded, removed on the target, analysed at once,
//!   its figures kept in `jfr-windows.jsonl`; at most `keep_windows` window
//!   files stay; the blocked-entry series rise window after window and the
//!   soak verdict and the report carry their trend (JDK 17 over the local
//!   transport, JDK 21 over a per-test sshd);
//! - the JVM killed mid-window: the windows before it are kept, the window
//!   in progress is a gap and an error, and the run ends with what it measured;
//! - a window that comes back truncated: a gap and an error of that window,
//!   the next windows start where it ended.

#[path = "support/collect.rs"]
mod collect;
#[path = "support/java.rs"]
mod java;
#[path = "support/load.rs"]
mod load;
#[path = "support/sshd.rs"]
mod sshd;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use brunt::profile::collectors::{
    CollectEntry, CollectorsConfig, ProbeOverride, TargetConfig, TransportConfig,
};
use collect::{off, read_json};
use java::Jdk;

/// The Java target with a marker naming this test (`pgrep -f` finds this test's JVM, no other).
fn target(jdk: &Jdk, tag: &str) -> java::JavaTarget {
    let marker = format!("jfrwin-{tag}-{}-{}", jdk.major, std::process::id());
    java::JavaTarget::marked(jdk, &["-Xmx256m"], 16, &marker)
}

/// Only the jfr probe, in windows of `window`.
fn collectors(
    transport: TransportConfig,
    target: TargetConfig,
    remote: &Path,
    window: Duration,
    keep: u32,
) -> CollectorsConfig {
    let probes: BTreeMap<String, ProbeOverride> = [
        (
            "jfr",
            ProbeOverride {
                phase: Some("run".into()),
                settings: Some("profile".into()),
                window: Some(window),
                keep_windows: Some(keep),
                ..Default::default()
            },
        ),
        ("thread-dump", off()),
        ("thread-dump-json", off()),
        ("heap", off()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    CollectorsConfig {
        transport,
        target,
        collect: vec![collect::entry("jvm", probes)],
        remote_dir: remote.display().to_string(),
        ..Default::default()
    }
}

/// Rising contention beside the run's own load: client `k` starts `k × step`
/// after the start and loops `/contended?ms=5` until `stop` or `deadline`
/// (and at most 20 000 requests each). Returns the requests answered.
fn rising_contention(
    addr: std::net::SocketAddr,
    clients: u32,
    step: Duration,
    deadline: Instant,
    stop: Arc<AtomicBool>,
) -> (Vec<thread::JoinHandle<()>>, Arc<AtomicU64>) {
    let ok = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    let hs = (0..clients)
        .map(|k| {
            let (stop, ok) = (stop.clone(), ok.clone());
            thread::spawn(move || {
                let start = t0 + step * k;
                while Instant::now() < start && !stop.load(Ordering::Relaxed) {
                    thread::sleep(Duration::from_millis(50));
                }
                for _ in 0..20_000 {
                    if stop.load(Ordering::Relaxed) || Instant::now() >= deadline {
                        break;
                    }
                    match java::http_get(addr, "/contended?ms=5", Duration::from_secs(5)) {
                        Ok((200, _)) => {
                            ok.fetch_add(1, Ordering::Relaxed);
                        }
                        // The JVM killed on purpose: back off, do not spin.
                        _ => thread::sleep(Duration::from_millis(100)),
                    }
                }
            })
        })
        .collect();
    (hs, ok)
}

/// Four connections on the target's `path` (a `/contended` hold) under
/// `p99 < 5s`, shaped by `shape`; its collectors are set by each test.
fn contended(
    t: &java::JavaTarget,
    name: &str,
    timeout: &str,
    path: &str,
    shape: &str,
) -> brunt::profile::Profile {
    load::profile(
        &format!(
            r#"
name: {name}
target: {{ url: "{{url}}", timeout: {timeout} }}
requests: [ {{ path: "{path}" }} ]
load: {{ connections: 4 }}
shape: {shape}
budgets: [ "p99 < 5s" ]
"#
        ),
        &t.url(),
    )
}

/// The one gap of the `jfr` probe in the collectors' summary.
fn the_jfr_gap(c: &serde_json::Value) -> &serde_json::Value {
    let gaps: Vec<&serde_json::Value> = c["gaps"]
        .as_array()
        .expect("gaps")
        .iter()
        .filter(|g| g["probe"] == "jfr")
        .collect();
    assert_eq!(gaps.len(), 1, "gaps {}", c["gaps"]);
    gaps[0]
}

fn window_rows(run_dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run_dir.join("diagnostics/jfr-windows.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("jfr-windows.jsonl: {e}: {l}")))
        .collect()
}

fn files_in(dir: &Path, pred: impl Fn(&str) -> bool) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| pred(n))
        .collect();
    v.sort();
    v
}

fn series(ev: &serde_json::Value, name: &str) -> Vec<(f64, f64)> {
    ev["series"][name]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| Some((p[0].as_f64()?, p[1].as_f64()?)))
                .collect()
        })
        .unwrap_or_default()
}

fn mean(v: &[(f64, f64)]) -> f64 {
    v.iter().map(|p| p.1).sum::<f64>() / v.len().max(1) as f64
}

// ---------------------------------------------------------------------------
// A soak with contention growing through it

/// A soak of `soak_s` (its first 6 s the warm-up) in windows of `window_s`.
fn growing_contention(jdk: Jdk, over_ssh: bool, soak_s: u64, window_s: u64) {
    let _g = load::serial();
    let m = jdk.major;
    let sshd = over_ssh.then(sshd::Sshd::start);
    let t = target(&jdk, "grow");
    t.warm("/contended?ms=1", 50);
    let mut profile = contended(
        &t,
        "jfr-windows-soak",
        "10s",
        "/contended?ms=1",
        &format!("{{ soak: {{ rate: 20/s, duration: {soak_s}s, warmup: 6s }} }}"),
    );
    let (_dir, remote, run_dir) = collect::run_dirs();
    let transport = sshd.as_ref().map(|s| s.transport()).unwrap_or_default();
    profile.collectors = collectors(
        transport,
        t.collectors_target(),
        &remote,
        Duration::from_secs(window_s),
        3,
    );
    let stop = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + Duration::from_secs(soak_s + 20);
    // One more client every ninth of the run: 1 → 8 threads queueing on one
    // 5-ms monitor, rising to the end.
    let (hs, ok) = rising_contention(
        t.addr(),
        8,
        Duration::from_secs(soak_s) / 9,
        deadline,
        stop.clone(),
    );
    let t0 = Instant::now();
    let r = load::run(&profile, &run_dir);
    let elapsed = t0.elapsed();
    stop.store(true, Ordering::Relaxed);
    for h in hs {
        h.join().expect("contention client");
    }
    assert!(
        ok.load(Ordering::Relaxed) > 500,
        "JDK {m}: side load answered"
    );
    assert!(
        elapsed < Duration::from_secs(soak_s + 50),
        "JDK {m}: run took {elapsed:?}"
    );

    let c = serde_json::to_value(&r.summary.collectors).unwrap_or_default();
    assert!(
        c["errors"].as_array().is_some_and(|e| e.is_empty()),
        "JDK {m}: collector errors {}",
        c["errors"]
    );
    // Windows of 8 s, the first cut short at the soak's start (6 s: no
    // window mixes two phases), plus the last one at the end.
    let rows = window_rows(&run_dir);
    for row in &rows {
        eprintln!("JDK {m}: window {row}");
    }
    assert!(rows.len() >= 5, "JDK {m}: {} windows", rows.len());
    assert!(
        rows[1..].iter().all(|r| r["phase"] == "soak"),
        "JDK {m}: windows after the warm-up are the soak's"
    );
    let first_end = rows[0]["to_t"].as_f64().unwrap_or(0.0);
    assert!(
        (6.0..7.9).contains(&first_end),
        "JDK {m}: the first window should end at the soak's start, not at 8 s: {first_end}"
    );
    for w in rows.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        assert_eq!(a["to_t"], b["from_t"], "JDK {m}: windows follow each other");
    }
    // Only the last 3 window files stay (and are listed), all readable by `jfr`.
    let diag = run_dir.join("diagnostics");
    let kept = files_in(&diag, |n| {
        n.starts_with("jfr-window-") && n.ends_with(".jfr")
    });
    assert_eq!(kept.len(), 3, "JDK {m}: kept {kept:?}");
    let listed: Vec<String> = c["artifacts"]
        .as_array()
        .expect("artifacts")
        .iter()
        .filter(|a| a["reason"] == "jfr-window")
        .filter_map(|a| {
            a["file"]
                .as_str()
                .map(|f| f.trim_start_matches("diagnostics/").to_string())
        })
        .collect();
    let mut listed_sorted = listed.clone();
    listed_sorted.sort();
    assert_eq!(listed_sorted, kept, "JDK {m}: listed windows");
    for f in &kept {
        jdk.jfr_read(&["summary"], &diag.join(f));
    }
    // The cut: a window's totals count only events that ended after it
    // (the oldest kept window: a full one).
    let win = diag.join(kept.first().expect("a kept window"));
    let all = brunt::diagnosis::jfr::parse_jfr_window(&win, f64::NEG_INFINITY).expect("parse");
    let tot = all.totals;
    assert!(
        tot.monitor_enter > 0 && tot.alloc_samples > 0,
        "JDK {m}: {tot:?}"
    );
    let (a, b) = (tot.first_unix.expect("first"), tot.last_unix.expect("last"));
    let mid = brunt::diagnosis::jfr::parse_jfr_window(&win, (a + b) / 2.0).expect("parse");
    assert!(
        mid.totals.monitor_enter < tot.monitor_enter && mid.totals.first_unix > Some((a + b) / 2.0),
        "JDK {m}: {:?} vs {tot:?}",
        mid.totals
    );
    let none = brunt::diagnosis::jfr::parse_jfr_window(&win, b).expect("parse");
    assert_eq!(
        none.totals.monitor_enter + none.totals.alloc_samples,
        0,
        "JDK {m}"
    );
    // No whole-run recording, and nothing left on the target's side.
    let other = files_in(&diag, |n| {
        n.ends_with(".jfr") && !n.starts_with("jfr-window-")
    });
    assert!(other.is_empty(), "JDK {m}: {other:?}");
    let left = files_in(&remote, |_| true);
    assert!(left.is_empty(), "JDK {m}: left on the target: {left:?}");
    // The recording is over in the JVM.
    let check = t.proc.jcmd(&["JFR.check"]);
    assert!(!check.contains("name=brunt"), "JDK {m}: {check}");

    // Contention rose window after window: the second half's mean blocked
    // entries well above the first half's, and the last window above the first.
    let ev = read_json(&diag.join("evidence.json"));
    let blocked = series(&ev, "jvm.jfr.monitor_blocked_per_s");
    let threads = series(&ev, "jvm.jfr.monitor_blocked_threads");
    eprintln!("JDK {m}: blocked/s {blocked:?}\nJDK {m}: blocked threads {threads:?}");
    assert_eq!(blocked.len(), rows.len(), "JDK {m}: one point per window");
    let half = blocked.len() / 2;
    let (first, second) = blocked.split_at(half);
    assert!(
        mean(second) > 2.0 * mean(first) + 5.0,
        "JDK {m}: blocked entries did not rise: {blocked:?}"
    );
    assert!(
        threads.last().map(|p| p.1) > threads.first().map(|p| p.1 + 0.5),
        "JDK {m}: blocked threads did not rise: {threads:?}"
    );
    let alloc = series(&ev, "jvm.jfr.alloc_bytes_per_s");
    assert!(
        !alloc.is_empty() && alloc.iter().all(|p| p.1 > 0.0),
        "JDK {m}: allocation rate {alloc:?}"
    );
    assert_eq!(
        series(&ev, "jvm.jfr.gc_pause_ms_per_s").len(),
        rows.len(),
        "JDK {m}: GC pause per window"
    );

    // The soak verdict carries the trend, and the report shows it.
    let v = r.summary.verdicts.clone().expect("verdicts");
    let so = v.soak.expect("a soak verdict");
    let tr = so
        .trends
        .iter()
        .find(|t| t.series == "jvm.jfr.monitor_blocked_threads")
        .unwrap_or_else(|| panic!("JDK {m}: no trend of blocked threads: {:?}", so.trends));
    eprintln!("JDK {m}: trend {tr:?}");
    assert!(tr.slope_per_hour > 0.0, "JDK {m}: {tr:?}");
    // With ≥ 60 s and ≥ 10 windows after the warm-up the trend is
    // conclusive, and the verdict says the contention rose.
    eprintln!("JDK {m}: soak verdict: {}", so.text);
    if tr.note.is_none() {
        assert!(
            so.text.contains(
                "rising steadily through the soak (JFR windows): jvm.jfr.monitor_blocked"
            ),
            "JDK {m}: {}",
            so.text
        );
    } else {
        assert!(
            soak_s < 66,
            "JDK {m}: inconclusive over a {soak_s}-s soak: {tr:?}"
        );
    }
    // The windows are one recording to the diagnosis: each fact once per
    // phase (not once per window), the Inventory monitor among them.
    let fj = read_json(&run_dir.join("findings.json"));
    let mut seen = std::collections::BTreeSet::new();
    for f in fj["findings"].as_array().expect("findings") {
        let k = (f["key"].to_string(), f["evidence"]["phase"].to_string());
        assert!(seen.insert(k.clone()), "JDK {m}: twice: {k:?}");
    }
    let inventory: Vec<&serde_json::Value> = fj["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| {
            f["evidence"]["file"]
                .as_str()
                .is_some_and(|p| p.ends_with("jfr-windows"))
                && f["detail"]["kind"] == "jfr_contention"
                && f["detail"]["site"]
                    .as_str()
                    .is_some_and(|s| s.contains("Inventory.reserve"))
                && f["evidence"]["phase"] == "soak"
        })
        .collect();
    assert_eq!(inventory.len(), 1, "JDK {m}: {inventory:#?}");
    let html = std::fs::read_to_string(run_dir.join("report.html")).expect("report.html");
    assert!(
        html.contains("jvm.jfr.monitor_blocked_threads"),
        "JDK {m}: the report misses the window series"
    );
}

#[test]
fn windows_show_growing_contention_jdk17_local() {
    growing_contention(java::jdk17(), false, 72, 6);
}

#[test]
fn windows_show_growing_contention_jdk21_ssh() {
    growing_contention(java::jdk21(), true, 34, 8);
}

// ---------------------------------------------------------------------------
// The JVM killed mid-window

#[test]
fn jvm_killed_mid_window_is_a_gap() {
    let _g = load::serial();
    let jdk = java::jdk17();
    let t = target(&jdk, "kill");
    let mut profile = contended(
        &t,
        "jfr-windows-kill",
        "2s",
        "/contended?ms=2",
        "{ soak: { rate: 20/s, duration: 24s, warmup: 1s } }",
    );
    let (_dir, remote, run_dir) = collect::run_dirs();
    profile.collectors = collectors(
        TransportConfig::default(),
        t.collectors_target(),
        &remote,
        Duration::from_secs(6),
        12,
    );
    // Killed 15 s in: the windows end at 6 and 12 s, the third is in progress.
    let pid = t.proc.pid;
    let killer = thread::spawn(move || {
        thread::sleep(Duration::from_secs(15));
        let st = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(st.success(), "kill -9 {pid}");
    });
    let t0 = Instant::now();
    let r = load::run(&profile, &run_dir);
    let elapsed = t0.elapsed();
    killer.join().expect("killer");
    assert!(elapsed < Duration::from_secs(60), "run took {elapsed:?}");
    assert!(r.summary.totals.requests > 0, "the run measured nothing");

    let rows = window_rows(&run_dir);
    for row in &rows {
        eprintln!("window {row}");
    }
    assert!(
        (1..=3).contains(&rows.len()),
        "windows before the kill: {}",
        rows.len()
    );
    assert!(
        rows.iter()
            .all(|r| r["to_t"].as_f64().is_some_and(|t| t < 16.0)),
        "a window after the kill: {rows:?}"
    );
    let c = serde_json::to_value(&r.summary.collectors).unwrap_or_default();
    let g = the_jfr_gap(&c);
    let last_to = rows.last().and_then(|r| r["to_t"].as_f64()).unwrap_or(0.0);
    assert!(
        (g["from_t"].as_f64().unwrap_or(-1.0) - last_to).abs() < 0.01,
        "the gap starts at the last window's end ({last_to}): {g}"
    );
    assert!(
        g["reason"]
            .as_str()
            .is_some_and(|r| r.contains("JFR window")),
        "{g}"
    );
    let errors = c["errors"].as_array().expect("errors");
    assert!(
        errors.iter().any(|e| e["message"]
            .as_str()
            .is_some_and(|m| m.contains("JFR window"))),
        "errors {errors:?}"
    );
    // What the windows measured is still evidence, one point per window.
    let ev = read_json(&run_dir.join("diagnostics/evidence.json"));
    assert_eq!(
        series(&ev, "jvm.jfr.monitor_blocked_per_s").len(),
        rows.len(),
        "{}",
        ev["series"]
    );
    let kept = files_in(&run_dir.join("diagnostics"), |n| {
        n.starts_with("jfr-window-") && n.ends_with(".jfr")
    });
    assert_eq!(kept.len(), rows.len(), "{kept:?}");
    assert!(files_in(&remote, |_| true).is_empty(), "left on the target");
}

// ---------------------------------------------------------------------------
// A window that comes back truncated

#[test]
fn truncated_window_is_a_gap_and_the_next_ones_still_come() {
    let _g = load::serial();
    let jdk = java::jdk17();
    let t = target(&jdk, "trunc");
    let (dir, remote, run_dir) = collect::run_dirs();
    // The built-in jfr probe, but the first window's file is cut to 3000
    // bytes on the target (a disk that filled, a copy cut short).
    let once = dir.path().join("truncated-once");
    let def = dir.path().join("jfr-trunc.yaml");
    std::fs::write(
        &def,
        format!(
            r#"
name: jfr-trunc
probes:
  - name: jfr
    kind: jfr
    phase: run
    settings: profile
    extension: jfr
    command: "{{jcmd}} {{pid}} JFR.start name=brunt settings={{settings}} filename={{remote_file}}"
    stop_command: "{{jcmd}} {{pid}} JFR.stop name=brunt filename={{remote_file}}"
    windows:
      start_command: "{{jcmd}} {{pid}} JFR.start name=brunt settings={{settings}} maxage={{maxage}} maxsize=64m disk=true"
      dump_command: "{{jcmd}} {{pid}} JFR.dump name=brunt filename={{remote_file}} begin={{begin}} && if [ ! -e {once} ]; then touch {once}; head -c 3000 {{remote_file}} > {{remote_file}}.cut && mv {{remote_file}}.cut {{remote_file}}; fi"
      stop_command: "{{jcmd}} {{pid}} JFR.stop name=brunt"
"#,
            once = once.display()
        ),
    )
    .expect("write jfr-trunc.yaml");
    let mut profile = contended(
        &t,
        "jfr-windows-trunc",
        "5s",
        "/contended?ms=2",
        "{ constant: { rate: 20/s, duration: 22s } }",
    );
    let mut c = collectors(
        TransportConfig::default(),
        t.collectors_target(),
        &remote,
        Duration::from_secs(6),
        12,
    );
    c.collect = vec![CollectEntry {
        use_: def.display().to_string(),
        probes: [(
            "jfr".to_string(),
            ProbeOverride {
                window: Some(Duration::from_secs(6)),
                ..Default::default()
            },
        )]
        .into_iter()
        .collect(),
    }];
    profile.collectors = c;
    let t0 = Instant::now();
    let r = load::run(&profile, &run_dir);
    assert!(
        t0.elapsed() < Duration::from_secs(60),
        "run took {:?}",
        t0.elapsed()
    );
    assert!(once.exists(), "the dump command never ran");

    let rows = window_rows(&run_dir);
    for row in &rows {
        eprintln!("window {row}");
    }
    // Window 1 lost; 2, 3 and the last one at the end kept, numbered on.
    assert!(
        rows.len() >= 2,
        "windows after the truncated one: {}",
        rows.len()
    );
    assert!(rows.iter().all(|r| r["n"].as_u64() > Some(1)), "{rows:?}");
    let c = serde_json::to_value(&r.summary.collectors).unwrap_or_default();
    let g = the_jfr_gap(&c);
    assert!(
        g["reason"]
            .as_str()
            .is_some_and(|r| r.contains("JFR window 1")),
        "{g}"
    );
    // The next window starts where the lost one ended: a gap, not a double count.
    let (gap_to, next_from) = (g["to_t"].as_f64(), rows[0]["from_t"].as_f64());
    assert!(
        gap_to
            .zip(next_from)
            .is_some_and(|(a, b)| (a - b).abs() < 0.002),
        "{g} / {}",
        rows[0]
    );
    assert!(
        c["errors"]
            .as_array()
            .is_some_and(|e| e.iter().any(|e| e["message"]
                .as_str()
                .is_some_and(|m| m.contains("JFR window 1")))),
        "errors {}",
        c["errors"]
    );
    let kept = files_in(&run_dir.join("diagnostics"), |n| {
        n.starts_with("jfr-window-") && n.ends_with(".jfr")
    });
    assert_eq!(
        kept.len(),
        rows.len(),
        "the truncated file is not kept: {kept:?}"
    );
    assert!(files_in(&remote, |_| true).is_empty(), "left on the target");
}
