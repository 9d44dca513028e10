//! `py-spy dump --native --pid P` (CPython, py-spy 0.3+) read into the same
//! [`ThreadDump`] the JVM and Go dumps make, one [`ThreadInfo`] per thread,
//! Python frames only (the native ones decide what the thread waits on):
//! - waiting to acquire a `threading.Lock`/`RLock` (`lock_PyThread_acquire_lock`,
//!   `rlock_acquire` under an application frame): BLOCKED on that lock, at
//!   its site (CPython prints no lock address);
//! - waiting for the GIL (`active` without `+gil`, or parked on the GIL's
//!   condition right under a Python frame): BLOCKED on the `GIL`;
//! - `active+gil`: RUNNABLE; `time.sleep`: TIMED_WAITING;
//! - idle, never contention: the server loop in `select`/`poll`/`accept`,
//!   a handler thread reading the next request of a keep-alive
//!   connection, a pool worker waiting on its queue;
//! - anything else WAITING (I/O, `Condition.wait`, `Event.wait`).
//!
//! Without `--native` a lock wait cannot be told from other waits: those
//! threads are WAITING. A dump with no thread, or a thread without frames,
//! is an error.

use std::sync::OnceLock;

use regex::Regex;

use super::model::{DumpFormat, Frame, LockKind, LockLine, ThreadDump, ThreadInfo, ThreadState};

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PySpyError {
    #[error("not a py-spy dump: no `Thread N (state): \"name\"` line")]
    NoThread,
    #[error("py-spy dump garbled at line {line}: {what}")]
    Garbled { line: usize, what: String },
}

/// `Process 123: python3 app.py` then `Python v3.11.7 (…)` (after brunt's
/// `#` comment lines).
pub fn looks_like_pyspy_dump(text: &str) -> bool {
    let mut lines = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty() && !l.starts_with('#'));
    lines
        .next()
        .is_some_and(|l| l.starts_with("Process ") && l.contains(": "))
        && lines.next().is_some_and(|l| l.starts_with("Python v"))
}

fn thread_re() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r#"^Thread (\S+) \(([a-z+]+)\)(?:: "(.*)")?$"#).ok())
        .as_ref()
}

/// Reads a `py-spy dump`; the time is brunt's `# brunt py-spy unix=…` line.
pub fn parse_pyspy_dump(text: &str, source: &str) -> Result<ThreadDump, PySpyError> {
    let mut d = ThreadDump::new(source, 0, DumpFormat::PySpy);
    let mut cur: Option<(ThreadInfo, Vec<String>, usize)> = None;
    let re = thread_re().ok_or(PySpyError::NoThread)?;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        if let Some(rest) = line.strip_prefix('#') {
            if let Some(u) = rest
                .split_whitespace()
                .find_map(|w| w.strip_prefix("unix="))
            {
                d.time_unix = u.parse().ok();
                d.time = Some(u.to_string());
            }
            continue;
        }
        if line.is_empty() || line.starts_with("Process ") || line.starts_with("Python v") {
            if line.starts_with("Process ") {
                d.pid = line
                    .trim_start_matches("Process ")
                    .split(':')
                    .next()
                    .and_then(|p| p.trim().parse().ok());
            }
            continue;
        }
        if let Some(c) = re.captures(line) {
            if let Some((t, natives, at)) = cur.take() {
                d.threads.push(finish(t, &natives, at)?);
            }
            let id = c.get(1).map_or("", |m| m.as_str());
            let t = ThreadInfo {
                name: c
                    .get(3)
                    .map(|m| m.as_str().to_string())
                    .unwrap_or_else(|| format!("Thread {id}")),
                id: id.parse().ok(),
                header_state: c.get(2).map_or("", |m| m.as_str()).to_string(),
                ..ThreadInfo::default()
            };
            cur = Some((t, vec![], n));
            continue;
        }
        let Some((t, natives, _)) = cur.as_mut() else {
            return Err(PySpyError::Garbled {
                line: n + 1,
                what: format!("`{}` before any thread", cut(line)),
            });
        };
        if line.starts_with("        ") {
            continue; // --locals: arguments and locals under a frame
        }
        let Some(f) = frame(line.trim()) else {
            return Err(PySpyError::Garbled {
                line: n + 1,
                what: format!("`{}` is not a frame", cut(line)),
            });
        };
        if is_python(&f) {
            t.frames.push(f);
        } else if t.frames.is_empty() {
            // Native frames above the first Python frame say what it waits on.
            natives.push(f.method);
        }
    }
    if let Some((t, natives, at)) = cur.take() {
        d.threads.push(finish(t, &natives, at)?);
    }
    if d.threads.is_empty() {
        return Err(PySpyError::NoThread);
    }
    d.jvm = Some("python".into());
    Ok(d)
}

fn cut(s: &str) -> String {
    s.chars().take(80).collect()
}

/// `Ledger.post (ledger.py:10)`, `poll (libc.so.6)`, `0x7f24a7c9af16 (libc.so.6)`.
fn frame(line: &str) -> Option<Frame> {
    let (name, rest) = line.rsplit_once(" (")?;
    let loc = rest.strip_suffix(')')?;
    if name.is_empty() {
        return None;
    }
    Some(Frame {
        method: name.to_string(),
        location: loc.to_string(),
        locks: vec![],
    })
}

fn is_python(f: &Frame) -> bool {
    f.location
        .rsplit_once(':')
        .is_some_and(|(file, _)| file.ends_with(".py") || file.starts_with('<'))
}

/// Where a thread waits: its first frame outside the standard library's
/// threading, queue, socket and server modules (py-spy prints their short paths).
pub fn site(frames: &[Frame]) -> Option<&Frame> {
    const LIB: &[&str] = &[
        "threading.py:",
        "queue.py:",
        "socket.py:",
        "selectors.py:",
        "socketserver.py:",
        "http/server.py:",
        "ssl.py:",
    ];
    frames
        .iter()
        .find(|f| !LIB.iter().any(|l| f.location.starts_with(l)))
        .or(frames.first())
}

fn finish(mut t: ThreadInfo, natives: &[String], at: usize) -> Result<ThreadInfo, PySpyError> {
    if t.frames.is_empty() {
        return Err(PySpyError::Garbled {
            line: at + 1,
            what: format!("thread `{}` has no Python frame", t.name),
        });
    }
    let native = |p: &str| natives.iter().any(|n| n.contains(p));
    let py = |p: &str| {
        t.frames
            .iter()
            .any(|f| f.method.contains(p) || f.location.starts_with(p))
    };
    let top = t
        .frames
        .first()
        .map(|f| f.location.clone())
        .unwrap_or_default();
    let stdlib_top = ["threading.py", "queue.py"]
        .iter()
        .any(|l| top.starts_with(l));
    let status = t.header_state.clone();
    let reading = native("recv") || native("sock_recv") || py("readinto") || py("readline");
    let idle_shape = py("serve_forever")
        || native("accept")
        || (reading && py("handle_one_request") && !py("do_"))
        || py("_worker")
        || (stdlib_top && py("Thread.run") && !py("handle"));
    let lock_native = native("lock_PyThread_acquire_lock") || native("PyThread_acquire_lock");
    let gil_native = native("take_gil")
        || (!lock_native
            && natives
                .iter()
                .rev()
                .find(|n| !n.starts_with("0x"))
                .is_some_and(|n| n.starts_with("pthread_cond_")));
    let (state, lock) = if status.contains("gil") {
        (ThreadState::Runnable, None)
    } else if lock_native && !stdlib_top {
        let class = if native("rlock_acquire") {
            "threading.RLock"
        } else {
            "threading.Lock"
        };
        (ThreadState::Blocked, Some(class))
    } else if gil_native || status == "active" {
        (ThreadState::Blocked, Some("GIL"))
    } else if native("sleep") {
        (ThreadState::TimedWaiting, None)
    } else {
        (ThreadState::Waiting, None)
    };
    t.state = Some(state);
    t.state_detail = Some(match lock {
        Some("GIL") => "GIL".to_string(),
        Some(_) => "lock".to_string(),
        None => status.clone(),
    });
    if let Some(class) = lock {
        let at = site(&t.frames).map(|f| format!("{} ({})", f.method, f.location));
        if let Some(f) = t.frames.first_mut() {
            f.locks.push(LockLine {
                kind: LockKind::WaitingToLock,
                // No address: the site stands for the lock (the GIL is one).
                addr: Some(if class == "GIL" {
                    "GIL".into()
                } else {
                    at.unwrap_or_default()
                }),
                class: Some(class.to_string()),
            });
        }
    }
    t.idle = state == ThreadState::Waiting && idle_shape;
    Ok(t)
}

/// `py-spy record -f raw` output: collapsed stacks, root first, each frame
/// `func (file.py:N)`, a count at the end of the line.
pub fn looks_like_raw_record(text: &str) -> bool {
    // A sample with no Python frame (a thread in native code holding the
    // GIL) is a line with an empty stack: ` 3`.
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(5)
        .collect();
    let frames = |stack: &str| stack.ends_with(')') && stack.contains(".py:");
    lines
        .iter()
        .any(|l| l.rsplit_once(' ').is_some_and(|(s, _)| frames(s)))
        && lines.iter().all(|l| {
            l.rsplit_once(' ').is_some_and(|(stack, n)| {
                n.parse::<u64>().is_ok() && (stack.trim().is_empty() || frames(stack))
            })
        })
}

/// The phase of a brunt artifact name (`py-spy-record-t0012.3-step-2-003.txt`
/// → `step-2`); none for other names.
pub fn artifact_phase(name: &str) -> Option<String> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    let re = RE
        .get_or_init(|| Regex::new(r"^.+?-t\d{4,}\.\d-(.+)-\d{3,}\.[A-Za-z0-9]+$").ok())
        .as_ref()?;
    Some(re.captures(name)?.get(1)?.as_str().to_string())
}

/// A `py-spy record -f raw` file as CPU samples per stack for the flame
/// graphs, in the phase its artifact name says, under the name `py-spy`
/// beside it. Lines without a count are an error (a cut file).
pub fn parse_raw_record(text: &str, source: &str) -> Result<super::jfr::FoldedStacks, PySpyError> {
    let mut stacks = std::collections::BTreeMap::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let (stack, count) = line
            .rsplit_once(' ')
            .and_then(|(s, c)| Some((s, c.parse::<u64>().ok()?)))
            .ok_or_else(|| PySpyError::Garbled {
                line: n + 1,
                what: format!("`{}` has no sample count: cut short", cut(line)),
            })?;
        if !stack.trim().is_empty() {
            *stacks.entry(stack.to_string()).or_default() += count;
        }
    }
    if stacks.is_empty() {
        return Err(PySpyError::NoThread);
    }
    let path = std::path::Path::new(source);
    let phase = path
        .file_name()
        .and_then(|n| artifact_phase(&n.to_string_lossy()));
    Ok(super::jfr::FoldedStacks {
        source: path.with_file_name("py-spy").display().to_string(),
        phase,
        kind: Some(super::jfr::FlameKind::Cpu),
        stacks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMP: &str = include_str!("../../tests/fixtures/python/py-spy-dump.txt");

    #[test]
    fn a_real_dump_reads_lock_and_gil_waiters() {
        assert!(looks_like_pyspy_dump(DUMP));
        let d = parse_pyspy_dump(DUMP, "py-spy.txt").expect("dump");
        assert_eq!(d.format, DumpFormat::PySpy);
        assert_eq!(d.pid, Some(6025));
        let class = |t: &ThreadInfo| t.waiting_to_lock().and_then(|l| l.class.clone());
        let locks: Vec<&ThreadInfo> = d
            .threads
            .iter()
            .filter(|t| class(t).as_deref() == Some("threading.Lock"))
            .collect();
        assert!(locks.len() >= 5, "{}", locks.len());
        for t in &locks {
            assert_eq!(t.state(), ThreadState::Blocked);
            let l = t
                .waiting_to_lock()
                .and_then(|l| l.addr.clone())
                .unwrap_or_default();
            assert_eq!(l, "Ledger.post (ledger.py:10)");
        }
        let gil = d
            .threads
            .iter()
            .filter(|t| class(t).as_deref() == Some("GIL"))
            .count();
        assert!(gil >= 1, "GIL waiters");
        let running = d
            .threads
            .iter()
            .filter(|t| t.state() == ThreadState::Runnable)
            .count();
        assert_eq!(running, 1, "one thread holds the GIL");
        let main = d
            .threads
            .iter()
            .find(|t| t.name == "MainThread")
            .expect("main");
        assert!(main.idle, "the server loop is idle: {main:?}");
    }

    #[test]
    fn a_real_record_is_cpu_stacks_of_its_phase() {
        let text = include_str!("../../tests/fixtures/python/py-spy-record.txt");
        assert!(looks_like_raw_record(text));
        assert!(!looks_like_raw_record(DUMP));
        let f = parse_raw_record(text, "/r/diagnostics/py-spy-record-t0012.3-step-2-003.txt")
            .expect("record");
        assert_eq!(f.phase.as_deref(), Some("step-2"));
        assert_eq!(f.source, "/r/diagnostics/py-spy");
        assert!(f
            .stacks
            .keys()
            .any(|k| k.ends_with(")") && k.contains("spin (")));
        let cut = &text[..text.len() - 3];
        assert!(parse_raw_record(&format!("{cut} x\n"), "x").is_err());
    }

    #[test]
    fn garbled_and_empty_dumps_are_errors() {
        assert_eq!(parse_pyspy_dump("", "x"), Err(PySpyError::NoThread));
        assert!(parse_pyspy_dump("Process 1: x\nPython v3\nhello\n", "x").is_err());
        assert!(parse_pyspy_dump("Thread 1 (idle): \"a\"\n    poll (libc.so.6)\n", "x").is_err());
        for end in (0..DUMP.len()).step_by(89) {
            if let Some(p) = DUMP.get(..end) {
                let _ = parse_pyspy_dump(p, "x");
            }
        }
    }
}
