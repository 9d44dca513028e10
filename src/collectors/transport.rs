//! Transports: how a collector's command reaches the target. [`Transport`] is
//! implemented by [`LocalTransport`] (this machine), [`crate::collectors::ssh::SshTransport`]
//! (libssh2), [`OpensshTransport`] (the system `ssh` binary) and
//! [`Prefixed`] (`docker exec NAME` / `kubectl exec POD --` in front of any of them).
//! All calls block: they run on collector threads only.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::config::{HostKeyPolicy, TransportConfig, TransportKind};
use super::error::CollectorError;
use super::quote::{sh_join, sh_quote};
use super::ssh::SshTransport;

/// What a remote command produced.
#[derive(Debug, Clone, Default)]
pub struct ExecOutput {
    pub status: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl ExecOutput {
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    /// Ok(self) when the exit status is 0, a [`CollectorError::Command`] otherwise.
    pub fn check(self, cmd: &str) -> Result<ExecOutput, CollectorError> {
        if self.status == 0 {
            Ok(self)
        } else {
            // First non-empty line only (jcmd prints whole Java stack traces).
            let first = |b: &[u8]| {
                String::from_utf8_lossy(b)
                    .lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .unwrap_or("")
                    .chars()
                    .take(300)
                    .collect::<String>()
            };
            let mut stderr = first(&self.stderr);
            if stderr.is_empty() {
                stderr = first(&self.stdout);
            }
            Err(CollectorError::Command {
                status: self.status,
                cmd: cmd.to_string(),
                stderr,
            })
        }
    }
}

/// A way to run shell commands on the target and fetch its files.
pub trait Transport: Send {
    /// Human description for logs and the summary (no secrets).
    fn describe(&self) -> String;
    /// Run `cmd` (a complete POSIX shell command line, already quoted) on the target.
    fn exec(&mut self, cmd: &str) -> Result<ExecOutput, CollectorError>;
    /// Copy a file from the target to `local`; returns the byte count.
    fn download(&mut self, remote: &str, local: &Path) -> Result<u64, CollectorError>;
    /// Remove a file on the target.
    fn remove(&mut self, remote: &str) -> Result<(), CollectorError> {
        let cmd = format!("rm -f -- {}", sh_quote(remote));
        self.exec(&cmd)?.check(&cmd).map(|_| ())
    }
    /// Keep an idle link alive (no-op for transports without one).
    fn keepalive(&mut self) -> Result<(), CollectorError> {
        Ok(())
    }
    /// Is the link up (always true for transports without a persistent link)?
    fn is_connected(&self) -> bool {
        true
    }
    /// Drop a broken link and open a new one.
    fn reconnect(&mut self) -> Result<(), CollectorError> {
        Ok(())
    }
}

/// Build the transport a config asks for. SSH connects lazily (on the
/// collector thread), so this never blocks on the network.
pub fn from_config(cfg: &TransportConfig) -> Result<Box<dyn Transport>, CollectorError> {
    let base: Box<dyn Transport> = match cfg.kind {
        TransportKind::Local => Box::new(LocalTransport::new(cfg.command_timeout)),
        TransportKind::Ssh => Box::new(SshTransport::new(cfg.clone())?),
        TransportKind::Openssh => Box::new(OpensshTransport::new(cfg)?),
    };
    if cfg.prefix.is_empty() {
        Ok(base)
    } else {
        Ok(Box::new(Prefixed::new(base, cfg.prefix.clone())))
    }
}

/// Run a child process, collecting stdout/stderr, killing it after `timeout`.
pub(crate) fn run_with_timeout(
    mut cmd: Command,
    timeout: Duration,
    what: &str,
    stdout_to: Option<File>,
) -> Result<ExecOutput, CollectorError> {
    cmd.stdin(Stdio::null()).stderr(Stdio::piped());
    match &stdout_to {
        Some(f) => {
            let f = f
                .try_clone()
                .map_err(|e| CollectorError::Other(format!("{what}: {e}")))?;
            cmd.stdout(Stdio::from(f));
        }
        None => {
            cmd.stdout(Stdio::piped());
        }
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| CollectorError::Other(format!("starting {what}: {e}")))?;
    // Readers on their own threads so a chatty child never blocks on a full pipe.
    let out_reader = child.stdout.take().map(|mut s| {
        thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = s.read_to_end(&mut buf);
            buf
        })
    });
    let err_reader = child.stderr.take().map(|mut s| {
        thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = s.read_to_end(&mut buf);
            buf
        })
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(CollectorError::Timeout {
                    secs: timeout.as_secs_f64(),
                    cmd: what.to_string(),
                });
            }
            Ok(None) => thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(CollectorError::Other(format!("waiting for {what}: {e}"))),
        }
    };
    let stdout = out_reader.and_then(|h| h.join().ok()).unwrap_or_default();
    let stderr = err_reader.and_then(|h| h.join().ok()).unwrap_or_default();
    Ok(ExecOutput {
        // A signal death has no code: report it as 128+, like a shell would.
        status: status.code().unwrap_or(255),
        stdout,
        stderr,
    })
}

/// Commands on the generator's own machine, through `sh -c`.
pub struct LocalTransport {
    timeout: Duration,
}

impl LocalTransport {
    pub fn new(timeout: Duration) -> Self {
        LocalTransport { timeout }
    }
}

impl Transport for LocalTransport {
    fn describe(&self) -> String {
        "local".to_string()
    }
    fn exec(&mut self, cmd: &str) -> Result<ExecOutput, CollectorError> {
        let mut c = Command::new("sh");
        c.arg("-c").arg(cmd);
        run_with_timeout(c, self.timeout, cmd, None)
    }
    fn download(&mut self, remote: &str, local: &Path) -> Result<u64, CollectorError> {
        std::fs::copy(remote, local).map_err(|e| CollectorError::io(remote, e))
    }
    fn remove(&mut self, remote: &str) -> Result<(), CollectorError> {
        match std::fs::remove_file(remote) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(CollectorError::io(remote, e)),
        }
    }
}

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
        let out = run_with_timeout(self.command(cmd), self.timeout, cmd, None)?;
        // ssh itself exits 255 when the link (not the command) failed.
        if out.status == 255 {
            self.up = false;
            return Err(self.ssh_failure(&out.stderr));
        }
        Ok(out)
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

/// A command prefix (`docker exec app`, `kubectl exec pod-0 --`) in front of
/// every command: the command runs as `PREFIX sh -c 'CMD'` and files are
/// fetched with `cat`, since SFTP cannot see inside a container.
pub struct Prefixed {
    inner: Box<dyn Transport>,
    prefix: Vec<String>,
}

impl Prefixed {
    pub fn new(inner: Box<dyn Transport>, prefix: Vec<String>) -> Self {
        Prefixed { inner, prefix }
    }
    /// The full command line sent to the inner transport.
    pub fn wrap(&self, cmd: &str) -> String {
        format!("{} sh -c {}", sh_join(&self.prefix), sh_quote(cmd))
    }
}

impl Transport for Prefixed {
    fn describe(&self) -> String {
        format!("{} via `{}`", self.inner.describe(), self.prefix.join(" "))
    }
    fn exec(&mut self, cmd: &str) -> Result<ExecOutput, CollectorError> {
        let wrapped = self.wrap(cmd);
        self.inner.exec(&wrapped)
    }
    fn download(&mut self, remote: &str, local: &Path) -> Result<u64, CollectorError> {
        let cmd = format!("cat -- {}", sh_quote(remote));
        let out = self.exec(&cmd)?.check(&cmd)?;
        let mut f = File::create(local).map_err(|e| CollectorError::io(local, e))?;
        f.write_all(&out.stdout)
            .map_err(|e| CollectorError::io(local, e))?;
        Ok(out.stdout.len() as u64)
    }
    fn keepalive(&mut self) -> Result<(), CollectorError> {
        self.inner.keepalive()
    }
    fn is_connected(&self) -> bool {
        self.inner.is_connected()
    }
    fn reconnect(&mut self) -> Result<(), CollectorError> {
        self.inner.reconnect()
    }
}

/// `~/x` → `$HOME/x`.
pub fn expand_home(p: &Path) -> PathBuf {
    if let Ok(rest) = p.strip_prefix("~") {
        if let Some(home) = std::env::var_os("HOME") {
            return PathBuf::from(home).join(rest);
        }
    }
    p.to_path_buf()
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
