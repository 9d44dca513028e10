//! Who is writing a run directory: the process's identity on its machine
//! (`run.json`'s `writer`), so `brunt watch` can tell a run that is still
//! working (a long drain, the diagnosis) from one that was killed, within
//! seconds instead of waiting out the plan.
//!
//! A PID alone is not an identity (PIDs are reused), nor is it meaningful on
//! another machine or in another PID namespace: the process's start time
//! (`/proc/PID/stat` field 22, clock ticks since boot), the kernel's
//! `boot_id` and the hostname make it one. Linux only; elsewhere nothing is
//! recorded and liveness is unknown.

use serde::{Deserialize, Serialize};

/// The process writing a run directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Writer {
    pub pid: u32,
    /// Start time in clock ticks since boot (`/proc/PID/stat` field 22).
    pub start_ticks: u64,
    /// `/proc/sys/kernel/random/boot_id`: this boot of this machine.
    pub boot_id: String,
    pub hostname: String,
}

impl Writer {
    /// This process, where `/proc` can say who it is.
    pub fn this() -> Option<Writer> {
        let pid = std::process::id();
        Some(Writer {
            pid,
            start_ticks: start_ticks(pid)?,
            boot_id: proc_line("/proc/sys/kernel/random/boot_id")?,
            hostname: proc_line("/proc/sys/kernel/hostname")?,
        })
    }

    /// Whether the writer still runs: `None` when this machine cannot tell
    /// (another host or boot, no `/proc`).
    pub fn alive(&self) -> Option<bool> {
        let here = proc_line("/proc/sys/kernel/random/boot_id")? == self.boot_id
            && proc_line("/proc/sys/kernel/hostname")? == self.hostname;
        if !here {
            return None;
        }
        // Gone, or its PID now belongs to another process.
        Some(start_ticks(self.pid) == Some(self.start_ticks))
    }
}

fn proc_line(path: &str) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    Some(s.trim().to_string())
}

/// Field 22 of `/proc/PID/stat`; the command name (field 2) may hold spaces
/// and parentheses, so fields are counted after its last `)`.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_start_ticks(&stat)
}

fn parse_start_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After the name: field 3 (state) is the first; field 22 is the 20th.
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_ticks_are_read_after_the_command_name() {
        let stat =
            "4711 (a (b) c) S 1 4711 4711 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 987654 1000 200";
        assert_eq!(parse_start_ticks(stat), Some(987654));
        assert_eq!(parse_start_ticks("garbled"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_reused_pid_is_not() {
        let me = Writer::this().expect("/proc on Linux");
        assert_eq!(me.alive(), Some(true));
        let reused = Writer {
            start_ticks: me.start_ticks + 1,
            ..me.clone()
        };
        assert_eq!(reused.alive(), Some(false));
        let elsewhere = Writer {
            boot_id: "another boot".into(),
            ..me
        };
        assert_eq!(elsewhere.alive(), None);
    }
}
