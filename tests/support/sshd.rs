//! A real OpenSSH `sshd` on 127.0.0.1 for tests: host and user keys generated
//! per run with `ssh-keygen`, its own config (no PAM, `StrictModes no`,
//! authorized_keys in the temp dir), a free port, a known_hosts file, and
//! kill-on-drop (the daemon and every session process it forked).
//!
//! Use from a test crate with `#[path = "support/sshd.rs"] mod sshd;`.
#![allow(dead_code)]

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use brunt::profile::collectors::{HostKeyPolicy, TransportConfig, TransportKind};

pub struct Sshd {
    pub dir: tempfile::TempDir,
    pub port: u16,
    pub user: String,
    /// Private key accepted by the server (no passphrase).
    pub client_key: PathBuf,
    /// known_hosts with the server's real host key for `[127.0.0.1]:port`.
    pub known_hosts: PathBuf,
    /// The server's host public key line (`ssh-ed25519 AAAA…`).
    pub host_pub: String,
    config: PathBuf,
    child: Option<Child>,
}

fn find_sshd() -> PathBuf {
    for p in ["/usr/sbin/sshd", "/usr/bin/sshd", "/usr/local/sbin/sshd"] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!("sshd not found: install it with `apt-get install -y openssh-server`");
}

/// Generate an ed25519 key pair; returns the private key path.
pub fn keygen(dir: &Path, name: &str, passphrase: &str) -> PathBuf {
    let key = dir.join(name);
    let st = Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            passphrase,
            "-C",
            "brunt-test",
            "-f",
        ])
        .arg(&key)
        .stdin(Stdio::null())
        .status()
        .expect("ssh-keygen not found: install it with `apt-get install -y openssh-client`");
    assert!(st.success(), "ssh-keygen failed for {name}");
    key
}

pub fn pub_line(key: &Path) -> String {
    let p = key.with_extension("pub");
    let s = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut w = s.split_whitespace();
    format!(
        "{} {}",
        w.next().expect("key type"),
        w.next().expect("key data")
    )
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free loopback port")
}

fn current_user() -> String {
    let out = Command::new("id").arg("-un").output().expect("id -un");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// All descendants of `pid` (children first found via /proc/*/stat's ppid).
fn descendants(pid: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
                continue;
            };
            let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
                continue;
            };
            if let Some(pp) = rest
                .split_whitespace()
                .nth(1)
                .and_then(|x| x.parse::<u32>().ok())
            {
                parent_of.push((p, pp));
            }
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(x) = frontier.pop() {
        for &(c, pp) in &parent_of {
            if pp == x && !out.contains(&c) {
                out.push(c);
                frontier.push(c);
            }
        }
    }
    out
}

impl Sshd {
    pub fn start() -> Sshd {
        let sshd = find_sshd();
        // sshd refuses to start without its privilege-separation directory.
        let _ = std::fs::create_dir_all("/run/sshd");
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let host_key = keygen(d, "host_ed25519", "");
        let client_key = keygen(d, "id_ed25519", "");
        std::fs::write(
            d.join("authorized_keys"),
            format!("{}\n", pub_line(&client_key)),
        )
        .expect("authorized_keys");
        let port = free_port();
        let user = current_user();
        let config = d.join("sshd_config");
        // SetEnv: sessions run root's own rc files; a link-drop test that kills
        // one mid-`pyenv init` leaves pyenv's rehash lock behind, and every later
        // session would wait 60 s for it.
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nPidFile {pid}\n\
                 AuthorizedKeysFile {ak}\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
                 PermitRootLogin prohibit-password\nAllowUsers {user}\n\
                 Subsystem sftp internal-sftp\nLogLevel ERROR\nMaxStartups 100\nMaxSessions 100\n\
                 SetEnv PYENV_REHASH_TIMEOUT=2\n",
                hk = host_key.display(),
                pid = d.join("sshd.pid").display(),
                ak = d.join("authorized_keys").display(),
            ),
        )
        .expect("sshd_config");
        let host_pub = pub_line(&host_key);
        let known_hosts = d.join("known_hosts");
        std::fs::write(&known_hosts, format!("[127.0.0.1]:{port} {host_pub}\n"))
            .expect("known_hosts");
        let _ = sshd;
        let mut s = Sshd {
            dir,
            port,
            user,
            client_key,
            known_hosts,
            host_pub,
            config,
            child: None,
        };
        s.spawn();
        s
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("sshd.log"))
            .expect("sshd.log");
        let child = Command::new(find_sshd())
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starting sshd");
        self.child = Some(child);
        // Ready = the port answers with an SSH banner.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(mut c) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
                let mut b = [0u8; 4];
                if c.read_exact(&mut b).is_ok() && &b == b"SSH-" {
                    return;
                }
            }
            if let Some(ch) = self.child.as_mut() {
                if let Ok(Some(st)) = ch.try_wait() {
                    let log = std::fs::read_to_string(self.dir.path().join("sshd.log"))
                        .unwrap_or_default();
                    panic!("sshd exited at start ({st}): {log}");
                }
            }
            assert!(
                Instant::now() < deadline,
                "sshd did not come up on port {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kill the daemon and every session process it forked: a dropped link.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let kids = descendants(c.id());
            let _ = c.kill();
            let _ = c.wait();
            for k in kids {
                // By PID: only processes this sshd forked.
                let _ = Command::new("kill").arg("-9").arg(k.to_string()).status();
            }
        }
    }

    /// Start again on the same port with the same keys.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// A strict-host-key `ssh` transport config for this server.
    pub fn transport(&self) -> TransportConfig {
        TransportConfig {
            kind: TransportKind::Ssh,
            host: Some("127.0.0.1".into()),
            port: Some(self.port),
            user: Some(self.user.clone()),
            key: Some(self.client_key.clone()),
            known_hosts: Some(self.known_hosts.clone()),
            host_key: HostKeyPolicy::Strict,
            connect_timeout: Duration::from_secs(5),
            command_timeout: Duration::from_secs(30),
            max_backoff: Duration::from_secs(1),
            ..TransportConfig::default()
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.kill();
    }
}
