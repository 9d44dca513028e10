//! Pinning traces printed by `-Djdk.tracePinnedThreads=full|short` (JDK 21–23),
//! usually mixed into the target's stdout/log. Each event names the virtual
//! thread and its carrier and lists frames; frames that hold a monitor end in
//! `<== monitors:N`. The JVM prints each distinct stack only once, so these
//! give pinning *sites*; JFR `jdk.VirtualThreadPinned` gives counts.

use serde::{Deserialize, Serialize};

use super::model::{split_frame, Frame};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PinEvent {
    pub source: String,
    /// Line number (1-based) of the event's first line.
    pub line: usize,
    /// `VirtualThread[#30,vthread-1]/runnable@ForkJoinPool-1-worker-1` as printed.
    pub thread: String,
    pub carrier: Option<String>,
    pub reason: Option<String>,
    pub frames: Vec<Frame>,
    /// Indices into `frames` of the frames holding monitors, with the count.
    pub monitor_frames: Vec<(usize, u32)>,
}

pub fn looks_like_pinning(text: &str) -> bool {
    text.contains("<== monitors:")
        || text
            .lines()
            .take(5000)
            .any(|l| l.starts_with("VirtualThread[#") && l.contains("reason:"))
}

fn is_event_start(l: &str) -> bool {
    (l.starts_with("VirtualThread[#") || l.starts_with("Thread[#")) && !l.starts_with(' ')
}

pub fn parse_pinning(text: &str, source: &str) -> Vec<PinEvent> {
    let mut out: Vec<PinEvent> = vec![];
    let mut cur: Option<PinEvent> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if is_event_start(line) {
            // JDK 21.0.0 printed the carrier `Thread[#…]` line, then the virtual thread's.
            if let Some(c) = cur.as_mut() {
                if c.frames.is_empty() && line.starts_with("VirtualThread[") {
                    c.carrier = c.carrier.take().or(Some(c.thread.clone()));
                    c.thread = line.to_string();
                    continue;
                }
            }
            out.extend(cur.take());
            let (thread, reason) = match line.find(" reason:") {
                Some(p) => (
                    line.get(..p).unwrap_or(line),
                    line.get(p + 8..).map(|r| r.trim().to_string()),
                ),
                None => (line, None),
            };
            let carrier = thread
                .rsplit_once('@')
                .map(|(_, c)| c.to_string())
                .filter(|_| thread.starts_with("VirtualThread"));
            cur = Some(PinEvent {
                source: source.to_string(),
                line: i + 1,
                thread: thread.to_string(),
                carrier,
                reason,
                frames: vec![],
                monitor_frames: vec![],
            });
            continue;
        }
        let Some(c) = cur.as_mut() else {
            continue;
        };
        if line.starts_with("    ") || line.starts_with('\t') {
            let t = line.trim();
            let (frame, monitors) = match t.find(" <== monitors:") {
                Some(p) => (
                    t.get(..p).unwrap_or(t),
                    t.get(p + 14..).and_then(|n| n.trim().parse::<u32>().ok()),
                ),
                None => (t, None),
            };
            if let Some(n) = monitors {
                c.monitor_frames.push((c.frames.len(), n));
            }
            c.frames.push(split_frame(frame));
        } else {
            out.extend(cur.take());
        }
    }
    out.extend(cur);
    out.retain(|e| !e.frames.is_empty());
    out
}
