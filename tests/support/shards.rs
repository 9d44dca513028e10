//! Helpers for the sharded-run tests (tests/shard.rs, tests/shard_evidence.rs):
//! shard processes started together, `brunt merge`, and reading what they wrote.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::SystemTime;

use super::cmd::brunt;

/// How many shards the tests split a run into.
pub const SHARDS: u32 = 4;

pub fn json(path: &Path) -> serde_json::Value {
    let t = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&t).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs_f64()
}

pub fn merge(dirs: &[&Path], out: &Path) -> Output {
    brunt()
        .arg("merge")
        .args(dirs)
        .arg("--out")
        .arg(out)
        .output()
        .expect("brunt merge starts")
}

/// Shard `i` (1-based) of `profile` against `url`, starting at `start_at`,
/// into `root/shard-i`, with `extra` arguments; its output piped.
pub fn spawn_shard(
    profile: &Path,
    url: &str,
    root: &Path,
    i: u32,
    start_at: f64,
    extra: &[&str],
) -> (PathBuf, std::process::Child) {
    let dir = root.join(format!("shard-{i}"));
    let child = brunt()
        .args(["run", "--quiet", "--target", url])
        .arg(profile)
        .args(["--shard", &format!("{i}/{SHARDS}")])
        .args(extra)
        .args(["--start-at", &format!("{start_at:.3}")])
        .arg("--out")
        .arg(&dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("brunt run starts");
    (dir, child)
}

/// A copy of a run directory (to change one file of it).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        if e.path().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).expect("copy");
        }
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
