//! The `openssh` transport: the system `ssh` binary behind a ControlMaster.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::process::{run_with_input, run_with_timeout};
use super::{expand_home, ExecOutput, Transport};
use crate::collectors::error::CollectorError;
use crate::collectors::quote::sh_quote;
use crate::profile::collectors::{HostKeyPolicy, TransportConfig};

/// The system `ssh` binary with a ControlMaster, so `~/.ssh/config`,
/// ProxyJump and bastions work as they do for the user.
pub struct OpensshTransport {
    /// False after ssh itself failed (exit 255) until a probe succeeds.
    up: bool,
    base_args: Vec<String>,
    dest: String,
    timeout: Duration,
    // Holds the ControlMaster socket; removed with the transport.
    control_dir: tempfile_dir::Dir,
}

impl OpensshTransport {
    pub fn new(cfg: &TransportConfig) -> Result<Self, CollectorError> {
        let host = cfg
            .host
            .clone()
            .ok_or_else(|| CollectorError::Config("transport openssh needs `host`".into()))?;
        let control_dir = tempfile_dir::Dir::new()?;
        let mut a: Vec<String> = vec![
            "-o".into(),
            "BatchMode=yes".into(),
            "-o".into(),
            "ControlMaster=auto".into(),
            "-o".into(),
            format!("ControlPath={}/cm-%C", control_dir.path().display()),
            "-o".into(),
            "ControlPersist=120".into(),
            "-o".into(),
            format!("ConnectTimeout={}", cfg.connect_timeout.as_secs().max(1)),
            "-o".into(),
            format!(
                "ServerAliveInterval={}",
                cfg.keepalive.as_secs().clamp(1, 3600)
            ),
            "-o".into(),
            match cfg.host_key {
                HostKeyPolicy::Strict => "StrictHostKeyChecking=yes".into(),
                HostKeyPolicy::AcceptNew => "StrictHostKeyChecking=accept-new".into(),
                HostKeyPolicy::Insecure => "StrictHostKeyChecking=no".into(),
            },
        ];
        if cfg.host_key == HostKeyPolicy::Insecure {
            a.extend(["-o".into(), "UserKnownHostsFile=/dev/null".into()]);
        } else if let Some(kh) = &cfg.known_hosts {
            a.extend([
                "-o".into(),
                format!("UserKnownHostsFile={}", expand_home(kh).display()),
            ]);
        }
        if let Some(p) = cfg.port {
            a.extend(["-p".into(), p.to_string()]);
        }
        if let Some(u) = &cfg.user {
            a.extend(["-l".into(), u.clone()]);
        }
        if let Some(k) = &cfg.key {
            a.extend([
                "-i".into(),
                expand_home(k).display().to_string(),
                "-o".into(),
                "IdentitiesOnly=yes".into(),
            ]);
        }
        for o in &cfg.ssh_options {
            a.extend(["-o".into(), o.clone()]);
        }
        Ok(OpensshTransport {
            up: true,
            base_args: a,
            dest: host,
            timeout: cfg.command_timeout,
            control_dir,
        })
    }

    fn command(&self, remote_cmd: &str) -> Command {
        let mut c = Command::new("ssh");
        c.args(&self.base_args)
            .arg("--")
            .arg(&self.dest)
            // ssh joins its arguments with spaces for the remote shell: pass one, already quoted.
            .arg(remote_cmd);
        c
    }
}

impl Transport for OpensshTransport {
    fn describe(&self) -> String {
        format!("openssh {}", self.dest)
    }
    fn is_connected(&self) -> bool {
        self.up
    }
    fn reconnect(&mut self) -> Result<(), CollectorError> {
        // ControlMaster=auto opens a fresh master when the old one died.
        let out = run_with_timeout(self.command("true"), self.timeout, "ssh true", None)?;
        if out.status == 0 {
            self.up = true;
            Ok(())
        } else {
            Err(match self.ssh_failure(&out.stderr) {
                CollectorError::Link { addr, msg } => CollectorError::Connect { addr, msg },
                e => e,
            })
        }
    }
    fn exec(&mut self, cmd: &str) -> Result<ExecOutput, CollectorError> {
        self.exec_with(cmd, None)
    }
    fn exec_input(&mut self, cmd: &str, input: &[u8]) -> Result<ExecOutput, CollectorError> {
        self.exec_with(cmd, Some(input.to_vec()))
    }
    fn download(&mut self, remote: &str, local: &Path) -> Result<u64, CollectorError> {
        let cmd = format!("cat -- {}", sh_quote(remote));
        let f = File::create(local).map_err(|e| CollectorError::io(local, e))?;
        let out = run_with_timeout(self.command(&cmd), self.timeout * 4, &cmd, Some(f))?;
        if out.status == 255 {
            self.up = false;
            return Err(self.ssh_failure(&out.stderr));
        }
        out.check(&cmd)?;
        std::fs::metadata(local)
            .map(|m| m.len())
            .map_err(|e| CollectorError::io(local, e))
    }
}

impl OpensshTransport {
    fn exec_with(
        &mut self,
        cmd: &str,
        input: Option<Vec<u8>>,
    ) -> Result<ExecOutput, CollectorError> {
        let out = run_with_input(self.command(cmd), self.timeout, cmd, None, input)?;
        // ssh itself exits 255 when the link (not the command) failed.
        if out.status == 255 {
            self.up = false;
            return Err(self.ssh_failure(&out.stderr));
        }
        Ok(out)
    }

    /// What made `ssh` itself fail: security refusals are permanent, the rest is the link.
    fn ssh_failure(&self, stderr: &[u8]) -> CollectorError {
        let mut msg = String::from_utf8_lossy(stderr).trim().to_string();
        if msg.is_empty() {
            msg = "ssh exited with 255 (connection lost)".into();
        }
        let kh = "the known_hosts file".to_string();
        if msg.contains("IDENTIFICATION HAS CHANGED") {
            CollectorError::HostKeyChanged {
                host: self.dest.clone(),
                known_hosts: kh,
            }
        } else if msg.contains("Host key verification failed") {
            CollectorError::UnknownHostKey {
                host: self.dest.clone(),
                known_hosts: kh,
            }
        } else if msg.contains("Permission denied") {
            CollectorError::Auth {
                user: String::new(),
                host: self.dest.clone(),
                msg,
            }
        } else {
            CollectorError::Link {
                addr: self.dest.clone(),
                msg,
            }
        }
    }
}

impl Drop for OpensshTransport {
    fn drop(&mut self) {
        // Stop the ControlMaster we started (if any) before its socket dir goes.
        let mut c = Command::new("ssh");
        c.args(&self.base_args)
            .args(["-O", "exit", "--", &self.dest])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let _ = run_with_timeout(c, Duration::from_secs(5), "ssh -O exit", None);
        let _ = &self.control_dir;
    }
}

/// A private temporary directory removed on drop (tempfile is a dev-dependency only).
mod tempfile_dir {
    use super::CollectorError;
    use std::path::{Path, PathBuf};

    pub struct Dir(PathBuf);

    impl Dir {
        pub fn new() -> Result<Self, CollectorError> {
            use std::sync::atomic::{AtomicU64, Ordering};
            static N: AtomicU64 = AtomicU64::new(0);
            // Short path: ControlPath sockets are limited to ~100 bytes.
            let p = std::env::temp_dir().join(format!(
                "brunt-ssh-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&p).map_err(|e| CollectorError::io(&p, e))?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700));
            }
            Ok(Dir(p))
        }
        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
