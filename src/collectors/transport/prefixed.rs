//! The command prefix (`docker exec`, `kubectl exec`) that wraps any transport.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use super::{ExecOutput, Transport};
use crate::collectors::error::CollectorError;
use crate::collectors::quote::{sh_join, sh_quote};

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
    /// The prefix must pass standard input on (`docker exec -i`, `kubectl exec -i`).
    fn exec_input(&mut self, cmd: &str, input: &[u8]) -> Result<ExecOutput, CollectorError> {
        let wrapped = self.wrap(cmd);
        self.inner.exec_input(&wrapped, input)
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
