//! The Python test service (`tests/python/ledger.py`) on 127.0.0.1, killed
//! on drop; and `py-spy`, which the `python` collector runs (a missing one
//! is an error that says how to install it).
//!
//! Use from an integration test with `#[path = "support/python.rs"] mod python;`.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

pub const SOURCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/ledger.py");

/// Panics, saying how to install it, unless `py-spy` runs.
pub fn require_py_spy() {
    let ok = Command::new("py-spy")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "`py-spy` not found: install it (`python3 -m pip install py-spy`, or run tests/setup.sh)"
    );
}

pub struct Service {
    child: Child,
    pub addr: String,
}

impl Service {
    pub fn start() -> Service {
        Service::start_script(SOURCE, &[])
    }

    /// Another Python script of the tests that prints `service=HOST:PORT`
    /// once it listens, started with `args`.
    pub fn start_script(source: &str, args: &[&str]) -> Service {
        let mut child = Command::new("python3")
            .arg(source)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs");
        let addr = announced(&mut child, "service=", "the Python service");
        Service { child, addr }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// What a starting service prints after `prefix` on its first line (its
/// address); the service is killed and the test fails when it prints none.
pub fn announced(child: &mut Child, prefix: &str, what: &str) -> String {
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = BufReader::new(out).read_line(&mut line);
    }
    match line.trim().strip_prefix(prefix) {
        Some(addr) => addr.to_string(),
        None => {
            let _ = child.kill();
            panic!("{what} did not say where it listens: `{line}`");
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
