//! Helpers for tests that run the `brunt` binary itself: the command, and
//! its stdout and stderr as one text to match on.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
