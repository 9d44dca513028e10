//! Collector faults with the real parts (issue 12, items 4, 6 and 7):
//!
//! - a `pgrep` pattern that matches nothing on the local transport finds no
//!   target (brunt's own helper shells are not targets), and one that matches
//!   a real process started here finds exactly that process;
//! - a JVM killed mid-recording and started again (over a real sshd on
//!   127.0.0.1): the JFR recording is re-armed on the new PID, the lost part
//!   is a gap, and no empty recording is listed;
//! - collectors refused by a wrong known_hosts entry: the run says plainly
//!   that the server side is missing (terminal, `summary.json`, report.html).

#[path = "support/collect.rs"]
mod collect;
#[path = "support/java.rs"]
mod java;
#[path = "support/load.rs"]
mod load;
#[path = "support/sshd.rs"]
mod sshd;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use brunt::collectors::CollectorsSummary;
use brunt::profile::collectors::{CollectorsConfig, GeneratorConfig, ProbeOverride, TargetConfig};
use brunt::vocab::{PhaseInfo, RunClock};
use collect::{every, off};

// JVMs and load runs take turns on the shared 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn one_phase(secs: u64) -> Vec<PhaseInfo> {
    vec![PhaseInfo {
        index: 0,
        name: "main".into(),
        label: "test".into(),
        start: Duration::ZERO,
        duration: Duration::from_secs(secs),
        level: None,
    }]
}

/// Local collectors with a fast host sample and a fast `heap` probe (both
/// need the PID; the heap one fails when the PID is not a JVM), for `secs`.
fn local_pgrep_run(pattern: &str, secs: u64) -> CollectorsSummary {
    let run_dir = tempfile::tempdir().expect("tempdir");
    let mut host = BTreeMap::new();
    host.insert("host".to_string(), every(200));
    let mut jvm = BTreeMap::new();
    jvm.insert("heap".to_string(), every(200));
    jvm.insert("thread-dump".to_string(), every(300));
    for p in ["thread-dump-json", "jfr"] {
        jvm.insert(p.to_string(), off());
    }
    let cfg = CollectorsConfig {
        target: TargetConfig {
            pgrep: Some(pattern.to_string()),
            ..Default::default()
        },
        collect: vec![
            collect::entry("linux-host", host),
            collect::entry("jvm", jvm),
        ],
        generator: GeneratorConfig {
            enabled: false,
            ..Default::default()
        },
        ..Default::default()
    };
    let clock = RunClock::now();
    let phases = one_phase(secs);
    let set = collect::start(&cfg, run_dir.path(), clock, phases.clone());
    set.observer().phase_started(&phases[0], &clock);
    thread::sleep(Duration::from_secs(secs));
    set.finish()
}

/// Item 7: nothing matches, so no target PID — not brunt's own helpers.
#[test]
fn pgrep_matching_nothing_finds_no_target() {
    let _s = serial();
    let pattern = format!("brunt-no-such-target-{}", std::process::id());
    let s = local_pgrep_run(&pattern, 4);
    assert!(
        s.target_pids.is_empty(),
        "pattern `{pattern}` matches no process, yet target PIDs were recorded: {:?}",
        s.target_pids
    );
    assert!(
        s.errors
            .iter()
            .any(|e| e.message.contains("target process not found")),
        "the missing target is not said: {:?}",
        s.errors
    );
}

/// Item 7: a real process started here is found, and only it.
#[test]
fn pgrep_matching_a_real_process_finds_exactly_it() {
    let _s = serial();
    // `sleep` with a unique duration: its command line is what the pattern matches.
    let secs = format!("{}.{}", 600 + std::process::id() % 1000, std::process::id());
    let mut child = Command::new("sleep")
        .arg(&secs)
        .stdin(Stdio::null())
        .spawn()
        .expect("sleep");
    let pattern = format!("^sleep {}$", secs.replace('.', "\\."));
    let s = local_pgrep_run(&pattern, 4);
    let _ = child.kill();
    let _ = child.wait();
    let pids: Vec<u32> = s.target_pids.iter().map(|p| p.pid).collect();
    assert_eq!(
        pids,
        vec![child.id()],
        "only the sleep process is the target: {:?}",
        s.errors
    );
}

/// The shared Java target with a marker, so only this test's JVM matches.
fn java_target(jdk: &java::Jdk, marker: &str) -> java::JavaTarget {
    java::JavaTarget::marked(jdk, &["-Xmx128m"], 4, marker)
}

/// Item 4: the JVM is killed mid-recording and started again. The recording
/// is started again on the new PID while its phase runs, the lost part is a
/// gap and an error, and no empty recording is listed. With thread dumps
/// running, a failed dump finds the new PID first.
#[test]
fn jfr_recording_is_rearmed_on_the_restarted_jvm() {
    jfr_restart(true);
}

/// Item 4, with the recording alone: its own watch sees the JVM gone.
#[test]
fn jfr_recording_alone_notices_its_jvm_gone() {
    jfr_restart(false);
}

/// Seconds of the `main` phase the JFR recording is for.
const MAIN_S: u64 = 20;

fn jfr_restart(with_dumps: bool) {
    let _s = serial();
    let jdk = java::jdk17();
    let sshd = sshd::Sshd::start();
    let run_dir = tempfile::tempdir().expect("tempdir");
    let remote_dir = run_dir.path().join("remote-tmp");
    std::fs::create_dir_all(&remote_dir).expect("mkdir");
    let marker = format!("faults-jfr-{}", std::process::id());
    let mut jvm = BTreeMap::new();
    jvm.insert(
        "thread-dump".to_string(),
        if with_dumps {
            ProbeOverride {
                every: Some(Duration::from_millis(1000)),
                max: Some(30),
                ..Default::default()
            }
        } else {
            off()
        },
    );
    jvm.insert("thread-dump-json".to_string(), off());
    jvm.insert("heap".to_string(), off());
    jvm.insert(
        "jfr".to_string(),
        ProbeOverride {
            phase: Some("main".into()),
            ..Default::default()
        },
    );
    let cfg = CollectorsConfig {
        transport: sshd.transport(),
        target: TargetConfig {
            pgrep: Some(format!("--marker {marker}")),
            jcmd: jdk.jcmd().display().to_string(),
            ..Default::default()
        },
        collect: vec![collect::entry("jvm", jvm)],
        generator: GeneratorConfig {
            enabled: false,
            ..Default::default()
        },
        remote_dir: remote_dir.display().to_string(),
        ..Default::default()
    };
    // `main` runs 0-20 s (the JVM is killed once its recording runs), then `tail` 20-22 s.
    let phases = vec![
        PhaseInfo {
            index: 0,
            name: "main".into(),
            label: "test".into(),
            start: Duration::ZERO,
            duration: Duration::from_secs(MAIN_S),
            level: None,
        },
        PhaseInfo {
            index: 1,
            name: "tail".into(),
            label: "test".into(),
            start: Duration::from_secs(MAIN_S),
            duration: Duration::from_secs(2),
            level: None,
        },
    ];
    let first = java_target(&jdk, &marker);
    let old = first.pid();
    let clock = RunClock::now();
    let set = collect::start(&cfg, run_dir.path(), clock, phases.clone());
    let obs = set.observer();
    obs.phase_started(&phases[0], &clock);
    // Kill only once the recording runs (a jcmd attach to a fresh JVM on a
    // busy machine can take seconds), bounded.
    let events = run_dir.path().join("diagnostics/collectors.jsonl");
    let wait = Instant::now() + Duration::from_secs(12);
    while !std::fs::read_to_string(&events)
        .unwrap_or_default()
        .contains("\"jfr-start\"")
    {
        assert!(
            Instant::now() < wait,
            "the first recording did not start within 12 s"
        );
        thread::sleep(Duration::from_millis(100));
    }
    thread::sleep(Duration::from_millis(500));
    let killed_at = clock.elapsed().as_secs_f64();
    drop(first); // SIGKILL: the JVM never gets to write its recording
    let second = java_target(&jdk, &marker);
    let restarted_at = clock.elapsed().as_secs_f64();
    assert!(
        restarted_at < MAIN_S as f64 - 5.0,
        "the second JVM took until {restarted_at:.1} s to start: too little of `main` left"
    );
    let deadline = Instant::now() + Duration::from_secs(MAIN_S + 5);
    while clock.elapsed() < Duration::from_secs(MAIN_S) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(100));
    }
    obs.phase_started(&phases[1], &clock);
    thread::sleep(Duration::from_secs(2));
    let s = set.finish();
    let log = std::fs::read_to_string(run_dir.path().join("diagnostics/collectors.jsonl"))
        .unwrap_or_default();
    let ctx = format!(
        "artifacts {:#?}\ngaps {:#?}\nerrors {:#?}\n{log}",
        s.artifacts, s.gaps, s.errors
    );

    let pids: Vec<u32> = s.target_pids.iter().map(|p| p.pid).collect();
    assert_eq!(pids, vec![old, second.pid()], "{ctx}");
    // No empty artifact is listed, and each listed file is there, whole.
    for a in &s.artifacts {
        assert!(a.bytes > 0, "an empty artifact is listed: {a:?}");
        let len = std::fs::metadata(run_dir.path().join(&a.file))
            .map(|m| m.len())
            .unwrap_or(0);
        assert_eq!(len, a.bytes, "{} on disk", a.file);
    }
    // One recording, from the new JVM, readable by the JDK's own `jfr`.
    let jfrs: Vec<_> = s.artifacts.iter().filter(|a| a.kind == "jfr").collect();
    assert_eq!(jfrs.len(), 1, "{ctx}");
    let rec = jfrs[0];
    assert_eq!(rec.pid, Some(second.pid()), "{ctx}");
    assert!(
        rec.t >= restarted_at - 0.5 && rec.t < MAIN_S as f64,
        "re-armed at {} s, not within `main` after the restart at {restarted_at:.1} s",
        rec.t
    );
    let text = jdk.jfr_read(&["summary"], &run_dir.path().join(&rec.file));
    assert!(
        text.contains("jdk.") && text.contains("Chunks"),
        "`jfr summary` does not read the recording: {text}"
    );
    // The lost part is a gap of the `jfr` probe, from the first recording's
    // start (before the kill) to the new one's start.
    let gap = s
        .gaps
        .iter()
        .find(|g| g.probe.as_deref() == Some("jfr"))
        .unwrap_or_else(|| panic!("no gap recorded for the lost recording\n{ctx}"));
    assert!(
        gap.from_t < killed_at && (gap.to_t - rec.t).abs() < 0.01,
        "gap {gap:?} against the kill at {killed_at:.1} s and the restart at {} s",
        rec.t
    );
    assert!(
        gap.reason.contains(&format!("PID {old}")),
        "the gap says which JVM was lost: {gap:?}"
    );
    assert!(
        s.errors
            .iter()
            .any(|e| e.message.contains("lost") && e.message.contains("JFR")),
        "the loss is not in collectors.errors\n{ctx}"
    );
    collect::assert_no_remote_files(&remote_dir, "");
}

/// `brunt run` (the binary) of a short profile against the built-in target
/// whose collectors reach the real sshd through `known_hosts`; returns the
/// run directory, stdout and summary.json.
fn run_with_known_hosts(
    sshd: &sshd::Sshd,
    known_hosts: &std::path::Path,
) -> (tempfile::TempDir, String, serde_json::Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let profile = dir.path().join("p.yaml");
    std::fs::write(
        &profile,
        format!(
            r#"name: server-side
target: {{ url: builtin }}
requests: [ {{ name: fast, path: /fast }} ]
load: {{ model: open, connections: 4, workers: 1 }}
shape: {{ constant: {{ rate: 20/s, duration: 3s }} }}
budgets: [ "p99 < 2s" ]
collectors:
  transport: {{ kind: ssh, host: 127.0.0.1, port: {port}, user: {user}, key: "{key}", known_hosts: "{kh}", connect_timeout: 3s }}
  collect:
    - {{ use: linux-host, probes: {{ host: {{ every: 500ms }} }} }}
"#,
            port = sshd.port,
            user = sshd.user,
            key = sshd.client_key.display(),
            kh = known_hosts.display(),
        ),
    )
    .expect("profile");
    let out_dir = dir.path().join("run");
    let out = Command::new(env!("CARGO_BIN_EXE_brunt"))
        .arg("run")
        .arg(&profile)
        .arg("--out")
        .arg(&out_dir)
        .arg("--plain")
        .stdin(Stdio::null())
        .output()
        .expect("run brunt");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "brunt run failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("summary.json")).expect("summary.json"),
    )
    .expect("summary.json parses");
    (dir, stdout, summary)
}

/// Item 6: the collectors are refused (the target's host key is not the one
/// in known_hosts, as after a reinstall or an attack): the run says plainly
/// that it has no server side — summary.json, the terminal and report.html.
#[test]
fn refused_collectors_say_the_server_side_is_missing() {
    let _s = serial();
    let sshd = sshd::Sshd::start();
    let other = sshd::keygen(sshd.dir.path(), "other_host", "");
    let wrong = sshd.dir.path().join("known_hosts_wrong");
    std::fs::write(
        &wrong,
        format!("[127.0.0.1]:{} {}\n", sshd.port, sshd::pub_line(&other)),
    )
    .expect("known_hosts");
    let (dir, stdout, summary) = run_with_known_hosts(&sshd, &wrong);
    let ss = &summary["server_side"];
    assert_eq!(ss["status"], "missing", "{ss}");
    let reason = ss["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains("host key") && reason.contains("127.0.0.1"),
        "the reason names the refused host key: {ss}"
    );
    assert!(
        stdout.contains("server side MISSING") && stdout.contains("host key"),
        "the terminal does not say it:\n{stdout}"
    );
    let html = std::fs::read_to_string(dir.path().join("run/report.html")).expect("report.html");
    assert!(
        html.contains("server side MISSING"),
        "report.html does not say it"
    );
    assert!(
        !html.contains("no server-side collectors configured"),
        "report.html says no collectors were configured: they were, and were refused"
    );

    // The same run with the right known_hosts: the server side is there.
    let (_dir, stdout, summary) = run_with_known_hosts(&sshd, &sshd.known_hosts);
    assert_eq!(
        summary["server_side"]["status"], "ok",
        "{}",
        summary["server_side"]
    );
    assert!(!stdout.contains("server side MISSING"), "{stdout}");
}
