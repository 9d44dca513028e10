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
