//! The gRPC test service (`tests/grpc/server.py`, Python `grpcio`) on
//! 127.0.0.1: started with its options, stopped with SIGTERM so it writes
//! what it served, per method, which [`Service::stop`] returns.
//!
//! Use from an integration test with `#[path = "support/grpc.rs"] mod grpc;`
//! beside `#[path = "support/python.rs"] mod python;`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};

pub const SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/grpc/server.py");
pub const PROTO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/load_test.proto");

pub struct Service {
    child: Child,
    pub addr: String,
    stats: tempfile::NamedTempFile,
}

impl Service {
    /// Start it with `args` (`--capacity 4`, `--stall-every 5`, …).
    pub fn start(args: &[&str]) -> Service {
        let stats = tempfile::NamedTempFile::new().expect("temp file");
        let mut child = Command::new("python3")
            .arg(SERVER)
            .args(args)
            .arg("--stats")
            .arg(stats.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs");
        let what = "the gRPC service (is grpcio installed? run tests/setup.sh)";
        let addr = super::python::announced(&mut child, "grpc=", what);
        Service { child, addr, stats }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stop it and read what it served: calls answered per method, and
    /// `Stream.messages`, `Unary.names` (distinct names), `Limited.refused`, ….
    pub fn stop(mut self) -> BTreeMap<String, u64> {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let _ = self.child.wait();
        let text = std::fs::read_to_string(self.stats.path()).expect("the service wrote its stats");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("stats `{text}`: {e}"))
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
