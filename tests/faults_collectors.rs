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

use brunt::collectors::{start, CollectorContext, CollectorsSummary};
use brunt::profile::collectors::{
    CollectEntry, CollectorsConfig, GeneratorConfig, ProbeOverride, TargetConfig,
};
use brunt::vocab::{PhaseInfo, RunClock};

// JVMs and load runs take turns on the shared 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn every(ms: u64) -> ProbeOverride {
    ProbeOverride {
        every: Some(Duration::from_millis(ms)),
        ..Default::default()
    }
}

fn off() -> ProbeOverride {
    ProbeOverride {
        enabled: Some(false),
        ..Default::default()
    }
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
            CollectEntry {
                use_: "linux-host".into(),
                probes: host,
            },
            CollectEntry {
                use_: "jvm".into(),
                probes: jvm,
            },
        ],
        generator: GeneratorConfig {
            enabled: false,
            ..Default::default()
        },
        ..Default::default()
    };
    let clock = RunClock::now();
    let phases = one_phase(secs);
    let set = start(
        &cfg,
        CollectorContext {
            clock,
            run_dir: run_dir.path().to_path_buf(),
            phases: phases.clone(),
            p99_threshold: None,
            base_dir: None,
        },
    )
    .expect("start collectors");
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
