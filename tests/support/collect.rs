//! Collector settings as tests write them (probe overrides), and the JSON
//! files a run leaves, read back.
//!
//! Use from an integration test with
//! `#[path = "support/collect.rs"] mod collect;`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use brunt::profile::collectors::ProbeOverride;

/// A probe taken every `ms` milliseconds.
pub fn every(ms: u64) -> ProbeOverride {
    ProbeOverride {
        every: Some(Duration::from_millis(ms)),
        ..Default::default()
    }
}

/// A probe switched off.
pub fn off() -> ProbeOverride {
    ProbeOverride {
        enabled: Some(false),
        ..Default::default()
    }
}

/// Probe overrides by name.
pub fn probes(list: Vec<(&str, ProbeOverride)>) -> BTreeMap<String, ProbeOverride> {
    list.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// A JSON file the run wrote; panics naming the file.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Starts the collectors of `cfg` into `run_dir` on `clock` with `phases`
/// (no p99 threshold, no base dir), as a run would.
pub fn start(
    cfg: &brunt::profile::collectors::CollectorsConfig,
    run_dir: &Path,
    clock: brunt::vocab::RunClock,
    phases: Vec<brunt::vocab::PhaseInfo>,
) -> brunt::collectors::CollectorSet {
    brunt::collectors::start(
        cfg,
        brunt::collectors::CollectorContext {
            clock,
            run_dir: run_dir.to_path_buf(),
            phases,
            p99_threshold: None,
            base_dir: None,
        },
    )
    .expect("start collectors")
}

/// One `collect:` entry: the definition `use_` with its probe overrides.
pub fn entry(
    use_: impl Into<String>,
    probes: BTreeMap<String, ProbeOverride>,
) -> brunt::profile::collectors::CollectEntry {
    brunt::profile::collectors::CollectEntry {
        use_: use_.into(),
        probes,
    }
}

/// A temp dir with the collectors' remote temp dir in it (`remote-tmp`,
/// created) and the path for the run directory (`run`).
pub fn run_dirs() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let remote = dir.path().join("remote-tmp");
    std::fs::create_dir_all(&remote).expect("remote dir");
    let run_dir = dir.path().join("run");
    (dir, remote, run_dir)
}

/// The collectors cleaned up their remote temp dir: nothing is left in it.
pub fn assert_no_remote_files(remote: &Path, context: &str) {
    let left: Vec<String> = std::fs::read_dir(remote)
        .expect("remote dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        left.is_empty(),
        "{context}remote temp files left behind: {left:?}"
    );
}

/// The linux-host collector's `host` probe every `every_ms` over
/// `transport`, aimed at this test process and `port` (the load it serves).
pub fn host_of_this_process(
    transport: brunt::profile::collectors::TransportConfig,
    port: u16,
    every_ms: u64,
) -> brunt::profile::collectors::CollectorsConfig {
    brunt::profile::collectors::CollectorsConfig {
        transport,
        target: brunt::profile::collectors::TargetConfig {
            pid: Some(std::process::id()),
            port: Some(port),
            ..Default::default()
        },
        collect: vec![entry("linux-host", probes(vec![("host", every(every_ms))]))],
        ..Default::default()
    }
}
