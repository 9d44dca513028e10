//! A custom collector definition used from code: a user-written YAML
//! definition (a `lines` sample stream and an artifact taken at every phase
//! start) runs on this machine next to brunt's own health while a pretend
//! two-phase run goes by; then the summary is printed as JSON.
//!
//! `cargo run --example custom_collector`

use std::time::Duration;

use brunt::collectors::{start, CollectorContext};
use brunt::profile::collectors::CollectorsConfig;
use brunt::vocab::{PhaseInfo, RunClock};

/// What a user would put in `collectors/net-sockets.yaml`.
const DEFINITION: &str = r#"
name: net-sockets
description: socket summary every second, full socket list at each phase start
probes:
  - name: sockstat
    kind: sample
    parser: lines            # each output line kept as a string
    stream: sockstat         # -> diagnostics/sockstat.jsonl
    every: 1s
    command: "cat /proc/net/sockstat"
  - name: tcp-table
    kind: artifact
    extension: txt
    at_phase_start: true
    max: 10
    command: "cat /proc/net/tcp"
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let run_dir = std::env::temp_dir().join(format!("brunt-example-{}", std::process::id()));
    std::fs::create_dir_all(&run_dir)?;
    let def = run_dir.join("net-sockets.yaml");
    std::fs::write(&def, DEFINITION)?;

    // The profile's `collectors:` section, as YAML.
    let cfg: CollectorsConfig = serde_saphyr::from_str(&format!(
        "collect:\n  - use: {}\n  - use: linux-host\n    probes:\n      host: {{ every: 1s }}\n",
        def.display()
    ))?;

    let phases = vec![
        PhaseInfo {
            index: 0,
            name: "warm".into(),
            label: "10/s".into(),
            start: Duration::ZERO,
            duration: Duration::from_secs(2),
            level: None,
        },
        PhaseInfo {
            index: 1,
            name: "peak".into(),
            label: "100/s".into(),
            start: Duration::from_secs(2),
            duration: Duration::from_secs(2),
            level: None,
        },
    ];
    let clock = RunClock::now();
    let set = start(
        &cfg,
        CollectorContext {
            clock,
            run_dir: run_dir.clone(),
            phases: phases.clone(),
            p99_threshold: None,
            base_dir: None,
        },
    )?;
    let observer = set.observer();
    for p in &phases {
        observer.phase_started(p, &clock);
        std::thread::sleep(p.duration);
    }
    let summary = set.finish();
    println!("{}", serde_json::to_string_pretty(&summary)?);
    println!("run directory: {}", run_dir.display());
    Ok(())
}
