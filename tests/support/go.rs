//! The Go test service (`tests/go/ledger.go`), built with the system `go`
//! (Debian `golang-go`) once per test run and started on 127.0.0.1 with
//! its pprof listener; killed on drop.
//!
//! Use from an integration test with `#[path = "support/go.rs"] mod go;`.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

const SOURCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/go/ledger.go");

/// `go build`s the service once (into the cargo target's tmp dir); a
/// missing `go` is an error that says how to install it.
pub fn binary() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("go-ledger");
        std::fs::create_dir_all(&dir).expect("go build dir");
        let bin = dir.join(format!("ledger-{}", std::process::id()));
        let out = Command::new("go")
            .args(["build", "-o"])
            .arg(&bin)
            .arg(SOURCE)
            .env("GOCACHE", dir.join("cache"))
            .env("GOPATH", dir.join("gopath"))
            .output()
            .unwrap_or_else(|e| {
                panic!("`go` not found ({e}): install Go 1.19+ (`apt-get install golang-go`, or run tests/setup.sh)")
            });
        assert!(
            out.status.success(),
            "go build {SOURCE}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        bin
    })
    .clone()
}

/// A running service: its address and its pprof listener's.
pub struct Service {
    child: Child,
    pub bin: PathBuf,
    pub addr: String,
    pub pprof: String,
}

impl Service {
    pub fn start() -> Service {
        let bin = binary();
        let mut child = Command::new(&bin)
            .args(["-addr", "127.0.0.1:0", "-pprof", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the Go service");
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            let _ = BufReader::new(out).read_line(&mut line);
        }
        let field = |k: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(k))
                .map(str::to_string)
        };
        let (Some(addr), Some(pprof)) = (field("service="), field("pprof=")) else {
            let _ = child.kill();
            panic!("the Go service did not say where it listens: `{line}`");
        };
        Service {
            child,
            bin,
            addr,
            pprof,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn pprof_url(&self) -> String {
        format!("http://{}", self.pprof)
    }

    /// GET `path` on the pprof listener with curl (as the collector does).
    pub fn pprof_get(&self, path: &str) -> Vec<u8> {
        let out = Command::new("curl")
            .args(["-fsS", "--max-time", "10"])
            .arg(format!("{}{path}", self.pprof_url()))
            .output()
            .expect("curl runs");
        assert!(
            out.status.success(),
            "curl {path}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
