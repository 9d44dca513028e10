//! Helpers for tests that run the `brunt` binary itself: the command, its
//! stdout and stderr as one text to match on, a run started in the
//! background, and waiting on the files it writes or on its exit.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The `brunt` binary that cargo built for this test run.
pub fn brunt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_brunt"))
}

/// stdout then stderr, lossily decoded.
pub fn out(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Write `body` to `dir/name` and return the path.
pub fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).expect("write test file");
    p
}

/// `brunt run PROFILE --out RUN FLAG` (`--plain`, `--quiet`) in the
/// background, its output piped.
pub fn spawn_run(profile: &Path, run: &Path, flag: &str) -> Child {
    spawn(profile, run, flag, Stdio::piped)
}

/// `brunt run PROFILE --out RUN --quiet` in the background, its output discarded.
pub fn spawn_run_unheard(profile: &Path, run: &Path) -> Child {
    spawn(profile, run, "--quiet", Stdio::null)
}

fn spawn(profile: &Path, run: &Path, flag: &str, output: fn() -> Stdio) -> Child {
    brunt()
        .arg("run")
        .arg(profile)
        .arg("--out")
        .arg(run)
        .arg(flag)
        .stdout(output())
        .stderr(output())
        .spawn()
        .expect("spawn brunt run")
}

/// `brunt run --quiet PROFILE --out RUN` to its end.
pub fn run_quiet(profile: &Path, run: &Path) -> Output {
    brunt()
        .args(["run", "--quiet"])
        .arg(profile)
        .arg("--out")
        .arg(run)
        .output()
        .expect("brunt runs")
}

/// Lines in a file (0 while it does not exist).
pub fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// Waits until `path` has `n` lines (a CSV's header counts), failing after `limit`.
pub fn wait_lines(path: &Path, n: usize, limit: Duration) {
    let t = Instant::now();
    while lines(path) < n {
        assert!(
            t.elapsed() < limit,
            "{} never got {n} lines",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `kill SIG PID` (e.g. `-TERM`), which must succeed.
pub fn kill(sig: &str, pid: u32) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {sig} {pid}");
}

/// Waits for the child, killing it (and failing) after `limit`.
pub fn wait_with_limit(mut child: Child, limit: Duration) -> Output {
    let t = Instant::now();
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let o = child.wait_with_output().expect("output");
            panic!("brunt still running after {limit:?}: {}", out(&o));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `c` to its end; it must exit 0, else the test fails with `what`
/// and its stderr.
pub fn succeeded(c: &mut Command, what: &str) -> Output {
    let o = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        o.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// A rebuilt run's books close: `offered = requests + dropped + unknown`
/// in its totals. Returns `unknown` (the outcomes a hard stop lost).
pub fn books_close(summary: &serde_json::Value) -> u64 {
    let t = &summary["totals"];
    let n = |k: &str| t[k].as_u64().unwrap_or(0);
    assert_eq!(
        n("offered"),
        n("requests") + n("dropped") + n("unknown"),
        "{t}"
    );
    n("unknown")
}
