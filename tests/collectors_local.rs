//! The `local` transport end to end through `start`/`finish`: a user's own
//! definition file (a `lines` sample and an artifact with a `max` cap and
//! phase-start runs), a `tail` probe following a file written during the run,
//! a command prefix, and bad input refused by `start` with clear messages.

use std::collections::BTreeMap;
use std::io::Write;
use std::thread;
use std::time::Duration;

use brunt::collectors::{start, CollectorContext, CollectorError};
use brunt::profile::collectors::{
    CollectEntry, CollectorsConfig, ProbeOverride, TargetConfig, TransportConfig,
};
use brunt::vocab::{PhaseInfo, RunClock};

fn ctx(dir: &std::path::Path, phases: Vec<PhaseInfo>) -> CollectorContext {
    CollectorContext {
        clock: RunClock::now(),
        run_dir: dir.to_path_buf(),
        phases,
        p99_threshold: None,
        base_dir: Some(dir.to_path_buf()),
    }
}

#[test]
fn custom_definition_tail_and_prefix_locally() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(
        d.join("mine.yaml"),
        r#"
name: mine
description: a user's own collector
probes:
  - name: uptime
    kind: sample
    parser: lines
    stream: uptime
    every: 300ms
    command: "cat /proc/uptime; echo \"$BRUNT_VIA\""
  - name: ps
    kind: artifact
    extension: txt
    at_phase_start: true
    max: 2
    command: "ps -o pid,comm -p {pid}"
  - name: app-log
    kind: tail
    pid: optional
    every: 200ms
    file: /nonexistent
    command: "tail -c +{offset} {file} | head -c 1048576"
"#,
    )
    .expect("write definition");
    let log = d.join("app log's.txt");
    std::fs::write(&log, "before the run\n").expect("write log");
    let mut probes = BTreeMap::new();
    probes.insert(
        "app-log".to_string(),
        ProbeOverride {
            file: Some(log.display().to_string()),
            ..Default::default()
        },
    );
    let cfg = CollectorsConfig {
        transport: TransportConfig {
            prefix: vec!["env".into(), "BRUNT_VIA=prefix ok".into()],
            ..Default::default()
        },
        target: TargetConfig {
            pid: Some(std::process::id()),
            ..Default::default()
        },
        collect: vec![CollectEntry {
            use_: "mine.yaml".into(),
            probes,
        }],
        ..Default::default()
    };
    let phases: Vec<PhaseInfo> = (0..3)
        .map(|i| PhaseInfo {
            index: i,
            name: format!("step-{}", i + 1),
            label: format!("{}/s", 100 * (i + 1)),
            start: Duration::from_millis(500 * i as u64),
            duration: Duration::from_millis(500),
            level: None,
        })
        .collect();
    let c = ctx(d, phases.clone());
    let clock = c.clock;
    let set = start(&cfg, c).expect("start");
    let obs = set.observer();
    // The run's warm-up: the tail has found the file's end by now.
    thread::sleep(Duration::from_millis(300));
    for p in &phases {
        obs.phase_started(p, &clock);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .expect("open log");
        writeln!(f, "pinned in {}", p.name).expect("append");
        thread::sleep(Duration::from_millis(500));
    }
    let s = set.finish();
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(s.transport, "local via `env BRUNT_VIA=prefix ok`");

    let rows = std::fs::read_to_string(d.join("diagnostics/uptime.jsonl")).expect("uptime.jsonl");
    assert!(rows.lines().count() >= 3);
    assert!(rows.contains("prefix ok"), "prefix not applied: {rows}");
    assert!(rows.contains("\"phase\":\"step-2\""));

    let ps: Vec<_> = s.artifacts.iter().filter(|a| a.probe == "ps").collect();
    assert_eq!(ps.len(), 2, "max: 2 not respected: {ps:?}");
    assert_eq!(ps[0].phase, "step-1");
    assert_eq!(ps[0].reason, "phase-start");
    assert!(ps[0].file.starts_with("diagnostics/ps-t") && ps[0].file.contains("-step-1-"));
    let text = std::fs::read_to_string(d.join(&ps[0].file)).expect("artifact");
    assert!(text.contains(&std::process::id().to_string()));

    let tail = std::fs::read_to_string(d.join("diagnostics/app-log.log")).expect("tail output");
    assert!(
        !tail.contains("before the run"),
        "tail must start at the end of the file"
    );
    for p in &phases {
        assert!(tail.contains(&format!("pinned in {}", p.name)), "{tail}");
    }
    assert!(tail.contains("# brunt t="));
}

#[test]
fn bad_collector_config_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases: Vec<(CollectorsConfig, &str)> = vec![
        (
            CollectorsConfig {
                collect: vec![CollectEntry {
                    use_: "nope".into(),
                    probes: BTreeMap::new(),
                }],
                ..Default::default()
            },
            "unknown collector `nope`",
        ),
        (
            CollectorsConfig {
                collect: vec![CollectEntry {
                    use_: "jvm".into(),
                    probes: [("thread-dumps".to_string(), ProbeOverride::default())]
                        .into_iter()
                        .collect(),
                }],
                target: TargetConfig {
                    pid: Some(1),
                    ..Default::default()
                },
                ..Default::default()
            },
            "no probe `thread-dumps`",
        ),
        (
            CollectorsConfig {
                collect: vec![CollectEntry {
                    use_: "jvm".into(),
                    probes: BTreeMap::new(),
                }],
                ..Default::default()
            },
            "needs the target process",
        ),
        (
            CollectorsConfig {
                collect: vec![CollectEntry {
                    use_: "missing/def.yaml".into(),
                    probes: BTreeMap::new(),
                }],
                ..Default::default()
            },
            "def.yaml",
        ),
        (
            CollectorsConfig {
                collect: vec![CollectEntry {
                    use_: "linux-host".into(),
                    probes: BTreeMap::new(),
                }],
                transport: TransportConfig {
                    kind: brunt::profile::collectors::TransportKind::Ssh,
                    ..Default::default()
                },
                ..Default::default()
            },
            "needs `host`",
        ),
    ];
    for (cfg, want) in cases {
        match start(&cfg, ctx(dir.path(), vec![])) {
            Err(e) => {
                assert!(e.to_string().contains(want), "{e} (wanted {want})");
                assert!(e.is_bad_input(), "{e}: bad input must map to exit code 2");
            }
            Ok(s) => {
                s.finish();
                panic!("accepted a config that should fail with `{want}`");
            }
        }
    }
    std::fs::write(dir.path().join("bad.yaml"), "name: x\nprobes:\n  - name: a\n    command: \"cat {nope}\"\n    parser: lines\n    every: 1s\n")
        .expect("write");
    let cfg = CollectorsConfig {
        collect: vec![CollectEntry {
            use_: "bad.yaml".into(),
            probes: BTreeMap::new(),
        }],
        ..Default::default()
    };
    assert!(matches!(
        start(&cfg, ctx(dir.path(), vec![])),
        Err(CollectorError::Definition { .. })
    ));
}

/// A saturated generator is flagged: spinning threads push brunt's own CPU
/// over the (lowered) threshold, and the summary says latencies are suspect.
#[test]
fn saturated_generator_is_flagged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = CollectorsConfig {
        generator: brunt::profile::collectors::GeneratorConfig {
            cpu_saturation_pct: 25.0,
            ..Default::default()
        },
        ..Default::default()
    };
    let set = start(&cfg, ctx(dir.path(), vec![])).expect("start");
    let n = thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        * 2;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Busy threads, bounded in time (5 s).
    let spinners: Vec<_> = (0..n)
        .map(|_| {
            let stop = stop.clone();
            thread::spawn(move || {
                let t0 = std::time::Instant::now();
                let mut x = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed)
                    && t0.elapsed() < Duration::from_secs(5)
                {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                }
                x
            })
        })
        .collect();
    // The live flag is per second: it must be up at some point while spinning.
    let mut live = false;
    for _ in 0..45 {
        thread::sleep(Duration::from_millis(100));
        live |= set.generator_saturated();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for s in spinners {
        let _ = s.join();
    }
    let s = set.finish();
    let g = s.generator.expect("generator summary");
    eprintln!("{}", g.verdict);
    assert!(live, "not saturated while spinning: {g:?}");
    assert!(g.saturated && g.saturated_seconds >= 2, "{g:?}");
    assert!(g.verdict.contains("SATURATED"));
    let rows = std::fs::read_to_string(dir.path().join("diagnostics/generator.jsonl"))
        .expect("generator.jsonl");
    assert!(rows.contains("\"saturated\":true"));
}
