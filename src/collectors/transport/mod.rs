//! Transports: how a collector's command reaches the target. [`Transport`] is
//! implemented by [`LocalTransport`] (this machine), [`SshTransport`]
//! (libssh2), [`OpensshTransport`] (the system `ssh` binary) and
//! [`Prefixed`] (`docker exec NAME` / `kubectl exec POD --` in front of any of them).
//! All calls block: they run on collector threads only.
//!
//! This file holds what every transport shares ([`Transport`], [`ExecOutput`],
//! [`expand_home`]) and [`from_config`]; each transport lives in its own file
//! and imports only from here and `process`, never from a sibling.

mod local;
mod openssh;
mod prefixed;
mod process;
mod ssh;

use std::path::{Path, PathBuf};

pub use local::LocalTransport;
pub use openssh::OpensshTransport;
pub use prefixed::Prefixed;
pub use ssh::SshTransport;

use super::error::CollectorError;
use super::quote::sh_quote;
use crate::profile::collectors::{TransportConfig, TransportKind};

/// Set in the environment of every command the `local` and `openssh`
/// transports start (`process::run_with_timeout`), so those helpers and
/// whatever they start (a `jcmd`) are known as brunt's own, never as the
/// target (`jvm::find_pid`).
pub const HELPER_ENV: &str = "BRUNT_COLLECTOR_HELPER";

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
    /// Run `cmd` with `input` on its standard input (a secret, a script):
    /// what never belongs on a command line. A transport that cannot feed
    /// a command's input says so.
    fn exec_input(&mut self, cmd: &str, input: &[u8]) -> Result<ExecOutput, CollectorError> {
        let _ = (cmd, input);
        Err(CollectorError::Config(format!(
            "the {} transport cannot pass a command's standard input",
            self.describe()
        )))
    }
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
    /// brunt's own PID when commands run in brunt's own process namespace
    /// (`local`): never a target, whatever a `pgrep` pattern matches.
    fn own_pid(&self) -> Option<u32> {
        None
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

/// `~/x` → `$HOME/x`.
pub fn expand_home(p: &Path) -> PathBuf {
    if let Ok(rest) = p.strip_prefix("~") {
        if let Some(home) = std::env::var_os("HOME") {
            return PathBuf::from(home).join(rest);
        }
    }
    p.to_path_buf()
}
