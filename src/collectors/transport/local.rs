//! The `local` transport: commands run on brunt's own machine.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::process::{run_with_input, run_with_timeout};
use super::{ExecOutput, Transport};
use crate::collectors::error::CollectorError;

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
    fn exec_input(&mut self, cmd: &str, input: &[u8]) -> Result<ExecOutput, CollectorError> {
        let mut c = Command::new("sh");
        c.arg("-c").arg(cmd);
        run_with_input(c, self.timeout, cmd, None, Some(input.to_vec()))
    }
    fn own_pid(&self) -> Option<u32> {
        Some(std::process::id())
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
