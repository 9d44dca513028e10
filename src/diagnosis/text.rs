//! HotSpot text thread dumps as `jstack -l`, `jcmd PID Thread.print -l` and
//! SIGQUIT print them (JDK 8 through 25), one or many per file (a JVM log with
//! repeated SIGQUIT output yields one [`ThreadDump`] per `Full thread dump`).
//!
//! A line-oriented scanner without regexes (~90 MB/s with findings, see bench/parse.sh):
//! unknown lines are skipped, a thread cut off by truncation keeps what was
//! read, and the dump gets a warning instead of an error.

use super::model::{
    split_frame, Deadlock, DeadlockEdge, DumpFormat, Frame, LockKind, LockLine, ThreadDump,
    ThreadInfo, ThreadState,
};

/// True when `text` looks like a HotSpot text dump (used by format detection).
pub fn looks_like_text_dump(text: &str) -> bool {
    text.contains("Full thread dump")
        || text
            .lines()
            .take(2000)
            .any(|l| l.starts_with('"') && l.contains(" tid=") && l.contains("nid="))
}

/// Parses every dump in `text`. `source` names the file in findings.
pub fn parse_text_dumps(text: &str, source: &str) -> Vec<ThreadDump> {
    let mut p = Parser::new(source);
    let mut prev: [&str; 2] = ["", ""];
    for raw in text.lines() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        p.line(line, &prev);
        prev = [prev[1], line];
    }
    p.finish()
}

#[derive(PartialEq)]
enum Section {
    /// Before any thread, or between threads.
    Threads,
    /// Inside `Locked ownable synchronizers:`.
    Synchronizers,
    /// From `Found one Java-level deadlock:` to the end of the dump.
    Deadlocks,
}

struct Parser<'s> {
    source: &'s str,
    dumps: Vec<ThreadDump>,
    cur: Option<ThreadDump>,
    thread: Option<ThreadInfo>,
    section: Section,
    /// Deadlock edge being read: thread name, then waiting-for and held-by lines.
    edge: Option<DeadlockEdge>,
    pending_pid: Option<u32>,
}

impl<'s> Parser<'s> {
    fn new(source: &'s str) -> Self {
        Parser {
            source,
            dumps: vec![],
            cur: None,
            thread: None,
            section: Section::Threads,
            edge: None,
            pending_pid: None,
        }
    }

    fn dump(&mut self) -> &mut ThreadDump {
        let (source, index) = (self.source, self.dumps.len());
        self.cur.get_or_insert_with(|| {
            let mut d = ThreadDump::new(source, index, DumpFormat::Text);
            d.warnings
                .push("no `Full thread dump` header: a fragment of a dump".to_string());
            d
        })
    }

    fn end_thread(&mut self) {
        if let Some(t) = self.thread.take() {
            self.dump().threads.push(t);
        }
        self.section = match self.section {
            Section::Deadlocks => Section::Deadlocks,
            _ => Section::Threads,
        };
    }

    fn end_edge(&mut self) {
        if let Some(e) = self.edge.take() {
            let d = self.dump();
            match d.deadlocks.last_mut() {
                Some(dl) => dl.edges.push(e),
                None => d.deadlocks.push(Deadlock { edges: vec![e] }),
            }
        }
    }

    fn end_dump(&mut self) {
        self.end_thread();
        self.end_edge();
        if let Some(mut d) = self.cur.take() {
            let footer = d.warnings.iter().any(|w| w == FOOTER_SEEN);
            d.warnings.retain(|w| w != FOOTER_SEEN);
            // Every complete HotSpot dump ends its thread list with the JNI footer.
            if d.jvm.is_some() && !footer {
                d.warnings.push(
                    "dump ends without the `JNI global refs` footer: it may be truncated".into(),
                );
            }
            d.deadlocks.retain(|dl| !dl.edges.is_empty());
            self.dumps.push(d);
        }
    }

    fn finish(mut self) -> Vec<ThreadDump> {
        self.end_dump();
        self.dumps
    }

    fn line(&mut self, line: &str, prev: &[&str; 2]) {
        if let Some(rest) = line.strip_prefix("Full thread dump") {
            self.end_dump();
            let mut d = ThreadDump::new(self.source, self.dumps.len(), DumpFormat::Text);
            d.jvm = Some(rest.trim().trim_end_matches(':').to_string());
            d.pid = self.pending_pid.take();
            // jstack/jcmd print the time on the line before; SIGQUIT output too.
            if let Some(ts) = prev.iter().rev().find_map(|l| parse_timestamp(l)) {
                d.time = Some(ts.0);
                d.time_unix = ts.1;
            }
            self.cur = Some(d);
            self.section = Section::Threads;
            return;
        }
        if let Some(pid) = line.strip_prefix("PID:").or_else(|| {
            // `jcmd` prints `12345:` alone on its first line.
            line.strip_suffix(':')
                .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        }) {
            self.pending_pid = pid.trim().parse().ok();
            return;
        }
        if line.starts_with("Found one Java-level deadlock")
            || (line.starts_with("Found ") && line.contains("deadlock"))
        {
            self.end_thread();
            self.end_edge();
            self.section = Section::Deadlocks;
            if line.starts_with("Found one") {
                self.dump().deadlocks.push(Deadlock { edges: vec![] });
            }
            return;
        }
        if line.starts_with("JNI global refs") || line.starts_with("JNI global references") {
            self.end_thread();
            self.dump().warnings.push(FOOTER_SEEN.into());
            return;
        }
        if self.section == Section::Deadlocks {
            self.deadlock_line(line);
            return;
        }
        if line.starts_with('"') || line.starts_with("os_prio=") {
            if let Some(t) = parse_header(line) {
                self.end_thread();
                self.thread = Some(t);
                return;
            }
        }
        let trimmed = line.trim_start();
        if trimmed.is_empty() {
            if self.section == Section::Synchronizers {
                self.end_thread();
            }
            return;
        }
        let Some(t) = self.thread.as_mut() else {
            return; // SMR info, headers of other tools, log lines: not ours
        };
        if let Some(rest) = trimmed.strip_prefix("java.lang.Thread.State:") {
            let rest = rest.trim();
            let (word, detail) = match rest.find(' ') {
                Some(i) => (
                    rest.get(..i).unwrap_or(rest),
                    rest.get(i..)
                        .map(|d| d.trim().trim_matches(['(', ')']).to_string()),
                ),
                None => (rest, None),
            };
            t.state = Some(ThreadState::parse(word));
            t.state_detail = detail.filter(|d| !d.is_empty());
        } else if let Some(rest) = trimmed.strip_prefix("Carrying virtual thread #") {
            t.carrying = rest.trim().parse().ok();
        } else if let Some(rest) = trimmed.strip_prefix("at ") {
            t.frames.push(split_frame(rest));
        } else if let Some(rest) = trimmed.strip_prefix("- ") {
            if self.section == Section::Synchronizers {
                if rest.trim() != "None" {
                    let (addr, class) = addr_and_class(rest);
                    t.ownable_synchronizers.push(LockLine {
                        kind: LockKind::Locked,
                        addr,
                        class,
                    });
                }
            } else if let Some(l) = parse_lock_line(rest) {
                match t.frames.last_mut() {
                    Some(f) => f.locks.push(l),
                    None => t.frames.push(Frame {
                        method: String::new(),
                        location: String::new(),
                        locks: vec![l],
                    }),
                }
            }
        } else if trimmed.starts_with("Locked ownable synchronizers") {
            self.section = Section::Synchronizers;
        }
    }

    fn deadlock_line(&mut self, line: &str) {
        if line.starts_with("Java stack information") {
            self.end_edge();
            return;
        }
        if let Some(name) = line.strip_prefix('"').and_then(|l| l.strip_suffix("\":")) {
            // Names repeat in the stack part that follows the cycle; edges only come first.
            let in_cycle = self
                .cur
                .as_ref()
                .and_then(|d| d.deadlocks.last())
                .is_some_and(|dl| !dl.edges.iter().any(|e| e.thread == name));
            self.end_edge();
            if in_cycle {
                self.edge = Some(DeadlockEdge {
                    thread: name.to_string(),
                    waiting_for: None,
                    lock_class: None,
                    held_by: None,
                });
            }
            return;
        }
        let Some(e) = self.edge.as_mut() else {
            return;
        };
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("waiting to lock monitor ") {
            // `0x… (object 0x…, a com.Foo),`
            e.waiting_for = rest
                .split("(object ")
                .nth(1)
                .and_then(|r| r.split([',', ')']).next())
                .map(|s| s.trim().to_string());
            e.lock_class = class_after_a(rest);
        } else if let Some(rest) = t.strip_prefix("waiting for ownable synchronizer ") {
            // `0x…, (a java.util.concurrent.locks.ReentrantLock$NonfairSync),`
            e.waiting_for = rest.split(',').next().map(|s| s.trim().to_string());
            e.lock_class = class_after_a(rest);
        } else if let Some(rest) = t.strip_prefix("which is held by ") {
            e.held_by = Some(rest.trim().trim_matches('"').to_string());
        } else if t.starts_with("which is held by UNKNOWN_owner") {
            e.held_by = None;
        }
    }
}

/// Marker between `JNI global refs` and `finish`.
const FOOTER_SEEN: &str = "\u{0}footer";

fn class_after_a(s: &str) -> Option<String> {
    let i = s.find("a ")?;
    let rest = s.get(i + 2..)?;
    let end = rest.find([')', ',']).unwrap_or(rest.len());
    rest.get(..end).map(|c| c.trim().to_string())
}

/// `<0x…> (a Class)` → address and class.
fn addr_and_class(s: &str) -> (Option<String>, Option<String>) {
    let addr = s
        .find('<')
        .and_then(|i| {
            let rest = s.get(i + 1..)?;
            rest.get(..rest.find('>')?)
        })
        .filter(|a| a.starts_with("0x"))
        .map(str::to_string);
    let class = s
        .find("(a ")
        .and_then(|i| s.get(i + 3..))
        .map(|r| r.trim_end().trim_end_matches(')').to_string())
        .filter(|c| !c.is_empty());
    (addr, class)
}

fn parse_lock_line(rest: &str) -> Option<LockLine> {
    const KINDS: &[(&str, LockKind)] = &[
        ("waiting to lock", LockKind::WaitingToLock),
        ("waiting to re-lock in wait()", LockKind::WaitingToRelock),
        ("locked", LockKind::Locked),
        ("waiting on", LockKind::WaitingOn),
        ("parking to wait for", LockKind::ParkingFor),
        ("eliminated", LockKind::Eliminated),
    ];
    let (kind, tail) = KINDS
        .iter()
        .find_map(|(p, k)| rest.strip_prefix(p).map(|t| (*k, t)))?;
    let (addr, class) = addr_and_class(tail);
    Some(LockLine { kind, addr, class })
}

/// A thread header line: `"name" #12 [4711] daemon prio=5 os_prio=0 cpu=… elapsed=… tid=0x… nid=… state [0x…]`.
/// Returns None for quoted lines that are not headers.
pub fn parse_header(line: &str) -> Option<ThreadInfo> {
    let (name, rest) = if let Some(after) = line.strip_prefix('"') {
        // Names may contain quotes; the header's tail never does.
        let end = after.rfind('"')?;
        (after.get(..end)?, after.get(end + 1..)?)
    } else {
        ("", line) // JVM-internal thread printed without a name
    };
    if !(rest.contains("tid=") || rest.contains("nid=") || rest.contains("prio=")) {
        return None;
    }
    let mut t = ThreadInfo {
        name: name.to_string(),
        ..ThreadInfo::default()
    };
    let mut after_nid = None;
    let mut offset = 0;
    for tok in rest.split(' ') {
        let tok_start = offset;
        offset += tok.len() + 1;
        if let Some(id) = tok.strip_prefix('#') {
            t.id = id.parse().ok();
        } else if tok == "daemon" {
            t.daemon = true;
        } else if tok.starts_with("nid=") {
            after_nid = rest.get(tok_start + tok.len()..);
            break;
        }
    }
    let tail = after_nid.unwrap_or("").trim();
    // Strip the trailing `[0x…]` (last known Java SP).
    let tail = match tail
        .rfind(" [0x")
        .or_else(|| tail.starts_with("[0x").then_some(0))
    {
        Some(i) if tail.ends_with(']') => tail.get(..i).unwrap_or(tail),
        _ => tail,
    };
    t.header_state = tail.trim().to_string();
    t.internal = t.id.is_none();
    Some(t)
}

/// A dump timestamp line `2026-11-30 11:33:55`: as printed, and as Unix seconds in local time.
fn parse_timestamp(line: &str) -> Option<(String, Option<f64>)> {
    let l = line.trim();
    if l.len() != 19 {
        return None;
    }
    let naive = chrono::NaiveDateTime::parse_from_str(l, "%Y-%m-%d %H:%M:%S").ok()?;
    let unix = naive
        .and_local_timezone(chrono::Local)
        .earliest()
        .map(|t| t.timestamp() as f64);
    Some((l.to_string(), unix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_variants() {
        let h = parse_header("\"http-worker-3\" #25 [12345] prio=5 os_prio=0 cpu=1.2ms elapsed=3.4s tid=0x00007f nid=12345 waiting for monitor entry  [0x00007f4a]").unwrap_or_default();
        assert_eq!(h.name, "http-worker-3");
        assert_eq!(h.id, Some(25));
        assert_eq!(h.header_state, "waiting for monitor entry");
        let h = parse_header(
            "\"VM Thread\" os_prio=0 cpu=5.03ms elapsed=7.95s tid=0x00007 nid=11283 runnable  ",
        )
        .unwrap_or_default();
        assert!(h.internal);
        assert_eq!(h.header_state, "runnable");
        let h = parse_header(
            "\"main\" #1 prio=5 os_prio=0 tid=0x00007f1 nid=0x1a2b waiting on condition [0x00007f]",
        )
        .unwrap_or_default();
        assert_eq!(h.id, Some(1));
        let h = parse_header("os_prio=0 cpu=0.1ms elapsed=1s tid=0x1 nid=5 runnable")
            .unwrap_or_default();
        assert!(h.internal && h.name.is_empty());
        assert!(parse_header("\"deadlock-1-a\":").is_none());
    }
}
