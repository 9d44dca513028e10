//! nginx from apt (`apt-get install nginx-light`; `tests/setup.sh` does it)
//! on 127.0.0.1 with its own config, logs and a self-signed certificate in
//! a scratch directory: the system config is never read. The access log
//! says, per request, the protocol, whether the TLS session was resumed
//! and the connection's serial number, so tests count on the server side.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Nginx {
    child: Child,
    pub dir: tempfile::TempDir,
}

/// One access log line.
#[derive(Debug)]
pub struct Logged {
    /// `HTTP/2.0`, `HTTP/1.1`.
    pub protocol: String,
    /// `r` when the TLS session was resumed, `.` otherwise.
    pub reused: String,
    /// nginx's connection serial number.
    pub connection: u64,
}

/// Scripted TCP servers, for the binaries that load this file (one copy of `tcp.rs`).
#[path = "tcp.rs"]
pub mod tcp;
// Not every binary that loads this file picks a port through it.
#[allow(unused_imports)]
pub use tcp::free_port;

fn nginx_bin() -> PathBuf {
    for p in ["/usr/sbin/nginx", "/usr/bin/nginx"] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!("nginx is missing: apt-get install -y nginx-light (tests/setup.sh installs it)");
}

/// A self-signed certificate for 127.0.0.1 (cert.pem, key.pem) made by openssl.
pub fn make_cert(dir: &Path) {
    let o = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            "key.pem",
            "-out",
            "cert.pem",
        ])
        .current_dir(dir)
        .output()
        .expect("openssl must be installed: apt-get install -y openssl");
    assert!(
        o.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

impl Nginx {
    /// Start nginx with these `server { … }` blocks (each says what it
    /// answers); `{dir}` in them is the scratch directory (where `cert.pem`
    /// and `key.pem` are). Every server logs to `{dir}/access.log`. Waits
    /// until each port in `ports` accepts connections.
    pub fn start(servers: &str, ports: &[u16]) -> Nginx {
        let bin = nginx_bin();
        let dir = tempfile::tempdir().expect("tempdir");
        make_cert(dir.path());
        let d = dir.path().display().to_string();
        std::fs::create_dir_all(dir.path().join("tmp")).expect("tmp dir");
        let conf = format!(
            r#"
worker_processes 1;
daemon off;
master_process off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    log_format brunt '$server_protocol $ssl_session_reused $connection';
    access_log {d}/access.log brunt;
    keepalive_requests 100000000;
    keepalive_timeout 300s;
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    ssl_certificate {d}/cert.pem;
    ssl_certificate_key {d}/key.pem;
    ssl_session_cache shared:brunt:1m;
    {servers}
}}
"#,
            servers = servers.replace("{dir}", &d)
        );
        let path = dir.path().join("nginx.conf");
        std::fs::write(&path, conf).expect("write nginx.conf");
        let child = Command::new(bin)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&path)
            .arg("-e")
            .arg(dir.path().join("error.log"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nginx");
        let mut n = Nginx { child, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        for &p in ports {
            while std::net::TcpStream::connect(("127.0.0.1", p)).is_err() {
                if let Ok(Some(st)) = n.child.try_wait() {
                    panic!("nginx exited ({st}): {}", n.error_log());
                }
                assert!(
                    Instant::now() < deadline,
                    "nginx did not listen on {p}: {}",
                    n.error_log()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        // The readiness probes above are in the log: start counting after them.
        let _ = std::fs::write(n.dir.path().join("access.log"), "");
        n
    }

    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }

    /// Every request logged so far.
    pub fn log(&self) -> Vec<Logged> {
        let text = std::fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default();
        text.lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                Some(Logged {
                    protocol: f.next()?.to_string(),
                    reused: f.next()?.to_string(),
                    connection: f.next()?.parse().ok()?,
                })
            })
            .collect()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
