//! Child processes with a deadline: the `local` and `openssh` transports run
//! every command through [`run_with_timeout`].

use std::fs::File;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::{ExecOutput, HELPER_ENV};
use crate::collectors::error::CollectorError;

/// Run a child process, collecting stdout/stderr, killing it after `timeout`.
pub(super) fn run_with_timeout(
    cmd: Command,
    timeout: Duration,
    what: &str,
    stdout_to: Option<File>,
) -> Result<ExecOutput, CollectorError> {
    run_with_input(cmd, timeout, what, stdout_to, None)
}

/// [`run_with_timeout`] with `input` written to the child's standard input
/// (on a thread of its own, so a child that never reads cannot block us).
pub(super) fn run_with_input(
    mut cmd: Command,
    timeout: Duration,
    what: &str,
    stdout_to: Option<File>,
    input: Option<Vec<u8>>,
) -> Result<ExecOutput, CollectorError> {
    // Marks the helper and all it starts as brunt's own (see `jvm::find_pid`).
    cmd.env(HELPER_ENV, std::process::id().to_string());
    match input {
        Some(_) => cmd.stdin(Stdio::piped()),
        None => cmd.stdin(Stdio::null()),
    };
    cmd.stderr(Stdio::piped());
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
    if let (Some(mut w), Some(data)) = (child.stdin.take(), input) {
        // Dropped at the end: the child sees end-of-file.
        thread::spawn(move || {
            let _ = w.write_all(&data);
        });
    }
    // Readers on their own threads so a chatty child never blocks on a full pipe.
    let out_reader = child.stdout.take().map(read_on_thread);
    let err_reader = child.stderr.take().map(read_on_thread);
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

/// Read `r` to its end on a new thread (errors end the read early).
fn read_on_thread<R: Read + Send + 'static>(mut r: R) -> JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        buf
    })
}
