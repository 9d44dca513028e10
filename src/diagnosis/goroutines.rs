//! Go goroutine dumps (`/debug/pprof/goroutine?debug=2`, the traceback a
//! Go process prints on SIGQUIT or a panic) read into the same
//! [`ThreadDump`] the JVM dumps make, one [`ThreadInfo`] per goroutine, so
//! the findings, the per-phase thread table and the knee's cause read them
//! unchanged.
//!
//! What a goroutine waits on comes from its header's wait reason
//! (`[semacquire, 3 minutes]`) and its frames:
//! - a `sync.Mutex` / `sync.RWMutex` waiter (`semacquire`, or Go 1.20+'s
//!   `sync.Mutex.Lock`) is BLOCKED, with a lock line naming the mutex's
//!   address (the receiver of `lockSlow` / `Lock`) and type;
//! - `running`, `runnable`, `syscall` are RUNNABLE; `sleep` is TIMED_WAITING;
//!   other waits (channels, `select`, `IO wait`, `sync.Cond`, `WaitGroup`) WAITING;
//! - idle, never contention: `IO wait` of an idle keep-alive connection
//!   (`net/http.(*conn).readRequest`, `(*connReader).backgroundRead`), of
//!   a listener's `Accept` or an HTTP client's idle `readLoop`; a channel
//!   receive or `select` in the function the goroutine runs (a worker loop
//!   waiting for work) or in library code only; `select (no cases)`;
//! - runtime goroutines (only `runtime.` frames) are internal.
//!
//! A dump with no goroutine, a header without frames, a function without
//! its file line (cut short) is an error, never a partial guess.

use std::sync::OnceLock;

use regex::Regex;

use super::model::{DumpFormat, Frame, LockKind, LockLine, ThreadDump, ThreadInfo, ThreadState};

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum GoDumpError {
    #[error("not a goroutine dump: no `goroutine N [...]:` header")]
    NoGoroutine,
    #[error("goroutine dump garbled at line {line}: {what}")]
    Garbled { line: usize, what: String },
}

/// The file's first header says so: `goroutine 1 [running]:` (after
/// brunt's `#` comment lines and blank lines).
pub fn looks_like_goroutine_dump(text: &str) -> bool {
    text.lines()
        .map(str::trim_end)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .is_some_and(|l| header(l).is_some())
}

fn header_re() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^goroutine (\d+)(?: [^\[]*)?\[([^\]]*)\]:$").ok())
        .as_ref()
}

/// `goroutine 7 [semacquire, 3 minutes]:` → (7, `semacquire, 3 minutes`).
fn header(line: &str) -> Option<(u64, &str)> {
    let c = header_re()?.captures(line)?;
    Some((c.get(1)?.as_str().parse().ok()?, c.get(2)?.as_str()))
}

/// The wait reason alone (`semacquire`), and minutes waited when printed.
fn reason_of(bracket: &str) -> (&str, Option<u64>) {
    let mut parts = bracket.split(", ");
    let reason = parts.next().unwrap_or_default();
    let minutes = parts.find_map(|p| {
        let n = p.strip_suffix(" minutes").or(p.strip_suffix(" minute"))?;
        n.trim().parse().ok()
    });
    (reason, minutes)
}

/// Reads a goroutine dump; `source` names it in the findings. The time is
/// brunt's `# brunt go-goroutines unix=…` line when present (the collector
/// writes it before the dump), else none.
pub fn parse_goroutine_dump(text: &str, source: &str) -> Result<ThreadDump, GoDumpError> {
    let mut d = ThreadDump::new(source, 0, DumpFormat::Goroutine);
    let mut lines = text.lines().enumerate().peekable();
    // The goroutine being read, its header's line, and whether its
    // `created by` line was seen.
    let mut current: Option<(ThreadInfo, usize, bool)> = None;
    let garbled = |line: usize, what: String| GoDumpError::Garbled {
        line: line + 1,
        what,
    };
    while let Some((n, raw)) = lines.next() {
        let line = raw.trim_end();
        if line.is_empty() {
            if let Some((g, at, created)) = current.take() {
                d.threads.push(finish(g, at, created)?);
            }
            continue;
        }
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
        if let Some((id, bracket)) = header(line) {
            if let Some((g, at, created)) = current.take() {
                d.threads.push(finish(g, at, created)?);
            }
            let (reason, _) = reason_of(bracket);
            let g = ThreadInfo {
                name: format!("goroutine {id}"),
                id: Some(id),
                header_state: bracket.to_string(),
                state_detail: Some(reason.to_string()),
                ..ThreadInfo::default()
            };
            current = Some((g, n, false));
            continue;
        }
        let Some((g, _, created)) = current.as_mut() else {
            return Err(garbled(
                n,
                format!("`{}` before any goroutine header", cut(line)),
            ));
        };
        if line.starts_with('\t') || line.starts_with("...") || line.contains("stack unavailable") {
            // A file line without a function, the `...additional frames
            // elided...` marker, or `goroutine running on other thread`.
            continue;
        }
        let creator = line.strip_prefix("created by ");
        let func = creator.unwrap_or(line);
        // Every function (and `created by`) line has its file line next.
        let file = match lines.peek() {
            Some((_, f)) if f.starts_with('\t') => f.trim(),
            _ => {
                return Err(garbled(
                    n,
                    format!("`{}` without its file line: cut short", cut(line)),
                ))
            }
        };
        if !file_line_complete(file) {
            return Err(garbled(
                n + 1,
                format!("file line `{}` is cut short", cut(file)),
            ));
        }
        if creator.is_some() {
            // The creator's frame is not on this goroutine's stack; its
            // line ends a complete goroutine.
            *created = true;
            continue;
        }
        g.frames.push(
            frame(func, file)
                .ok_or_else(|| garbled(n, format!("`{}` is not a Go frame", cut(line))))?,
        );
    }
    if let Some((g, at, created)) = current.take() {
        d.threads.push(finish(g, at, created)?);
    }
    if d.threads.is_empty() {
        return Err(GoDumpError::NoGoroutine);
    }
    d.jvm = Some("go".into());
    Ok(d)
}

/// `/src/ledger.go:32 +0x59` or `/src/sync/mutex.go:90`: a path, a colon,
/// a line number, and the pc offset when printed.
fn file_line_complete(file: &str) -> bool {
    let loc = file.split(" +0x").next().unwrap_or(file);
    let offset_ok = file
        .split_once(" +0x")
        .is_none_or(|(_, h)| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()));
    loc.rsplit_once(':')
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        && offset_ok
}

/// A goroutine's stack ends at `created by …`, or at the function a
/// goroutine the runtime started runs (`main.main`, `runtime.main`).
fn ends_complete(g: &ThreadInfo, created: bool) -> bool {
    created
        || g.frames.last().is_some_and(|f| {
            matches!(
                f.method.as_str(),
                "main.main" | "runtime.main" | "runtime.goexit" | "runtime.mstart"
            )
        })
}

fn cut(s: &str) -> String {
    s.chars().take(80).collect()
}

/// `main.(*ledger).post(0xc0000a4940, 0x5?)` and its file line
/// `/src/ledger.go:32 +0x59` → method `main.(*ledger).post`, location
/// `ledger.go:32`; the first argument kept as the receiver's address.
fn frame(func: &str, file: &str) -> Option<Frame> {
    let (method, args) = match func.rfind('(') {
        Some(i) if func.ends_with(')') => (&func[..i], &func[i + 1..func.len() - 1]),
        _ => (func, ""),
    };
    if method.is_empty() || method.contains(char::is_whitespace) {
        return None;
    }
    let path = file.split(" +0x").next().unwrap_or(file);
    let location = path.rsplit('/').next().unwrap_or(path).to_string();
    let mut f = Frame {
        method: method.to_string(),
        location,
        locks: vec![],
    };
    let first = args
        .split(',')
        .next()
        .unwrap_or("")
        .trim()
        .trim_end_matches('?');
    if first.starts_with("0x") && first.len() > 3 {
        // Not a lock yet: `finish` turns the mutex frame's receiver into one.
        f.locks.push(LockLine {
            kind: LockKind::Locked,
            addr: Some(first.to_string()),
            class: None,
        });
    }
    Some(f)
}

/// The mutex a waiter is queued on: the receiver of the first
/// `sync.(*Mutex)` / `sync.(*RWMutex)` frame, and its type.
fn mutex_of(frames: &[Frame]) -> Option<(Option<String>, &'static str)> {
    frames.iter().find_map(|f| {
        let class = if f.method.starts_with("sync.(*Mutex).") {
            "sync.Mutex"
        } else if f.method.starts_with("sync.(*RWMutex).") {
            "sync.RWMutex"
        } else {
            return None;
        };
        let addr = f.locks.first().and_then(|l| l.addr.clone());
        Some((addr, class))
    })
}

/// A frame of the service itself, not of Go's standard library: `main.`,
/// or a package path whose first element has a dot (`github.com/…`) —
/// less the Go project's own (`golang.org/x/`, `google.golang.org/`: gRPC,
/// protobuf, HTTP/2).
pub fn is_app_frame(method: &str) -> bool {
    if method.starts_with("main.") {
        return true;
    }
    if method.starts_with("golang.org/x/") || method.starts_with("google.golang.org/") {
        return false;
    }
    let path = method.split(".(").next().unwrap_or(method);
    let first = path.split('/').next().unwrap_or(path);
    path.contains('/') && first.contains('.')
}

/// The first application frame (`main.(*ledger).post (ledger.go:32)`),
/// else the first frame past the runtime's own.
pub fn site(frames: &[Frame]) -> String {
    frames
        .iter()
        .find(|f| is_app_frame(&f.method))
        .or_else(|| frames.iter().find(|f| !f.method.starts_with("runtime.")))
        .or(frames.first())
        .map(|f| format!("{} ({})", f.method, f.location))
        .unwrap_or_else(|| "?".into())
}

/// Minutes waited, when the header says (`[chan receive, 12 minutes]`).
pub fn waited_minutes(g: &ThreadInfo) -> Option<u64> {
    reason_of(&g.header_state).1
}

/// How a goroutine waits, for the findings: on a lock, on a channel, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoWait {
    Lock,
    /// `chan send`, `chan receive`, `select` outside the idle cases.
    Channel,
    Other,
}

/// How `g` (a goroutine of a Go dump) waits.
pub fn wait_of(g: &ThreadInfo) -> GoWait {
    if g.idle || g.internal {
        return GoWait::Other;
    }
    if g.waiting_to_lock().is_some() {
        return GoWait::Lock;
    }
    let reason = g.state_detail.as_deref().unwrap_or_default();
    if reason.starts_with("chan ") || reason.starts_with("select") {
        return GoWait::Channel;
    }
    GoWait::Other
}

/// Sets state, lock line, idleness and `internal` from the reason and frames.
fn finish(mut g: ThreadInfo, at: usize, created: bool) -> Result<ThreadInfo, GoDumpError> {
    let (reason, _) = reason_of(&g.header_state);
    let reason = reason.to_string();
    if !g.frames.is_empty() && !ends_complete(&g, created) {
        return Err(GoDumpError::Garbled {
            line: at + 1,
            what: format!(
                "goroutine {} ends without `created by`: cut short",
                g.id.unwrap_or(0)
            ),
        });
    }
    if g.frames.is_empty() {
        if reason == "running" {
            // `goroutine running on other thread; stack unavailable`.
            g.state = Some(ThreadState::Runnable);
            return Ok(g);
        }
        return Err(GoDumpError::Garbled {
            line: at + 1,
            what: format!("goroutine {} has no frames", g.id.unwrap_or(0)),
        });
    }
    let lock_reason = reason == "semacquire"
        || reason.starts_with("sync.Mutex")
        || reason.starts_with("sync.RWMutex");
    let state = match reason.as_str() {
        "running" | "runnable" | "syscall" => ThreadState::Runnable,
        "sleep" => ThreadState::TimedWaiting,
        _ if lock_reason && mutex_of(&g.frames).is_some() => ThreadState::Blocked,
        _ => ThreadState::Waiting,
    };
    g.state = Some(state);
    // Receivers seen while parsing are addresses, not locks: clear them,
    // then give a mutex waiter its one lock line.
    let mutex = (state == ThreadState::Blocked)
        .then(|| mutex_of(&g.frames))
        .flatten();
    for f in &mut g.frames {
        f.locks.clear();
    }
    if let Some((addr, class)) = mutex {
        let site = site(&g.frames);
        if let Some(f) = g.frames.iter_mut().find(|f| f.method.starts_with("sync.")) {
            f.locks.push(LockLine {
                kind: LockKind::WaitingToLock,
                // Without a printed receiver the site stands for the lock.
                addr: Some(addr.unwrap_or(site)),
                class: Some(class.to_string()),
            });
        }
    }
    g.internal = g.frames.iter().all(|f| f.method.starts_with("runtime."));
    let waiting_on_channel = reason.starts_with("chan receive") || reason.starts_with("select");
    // The function the goroutine runs (its bottom frame) waiting on a
    // channel is a worker loop waiting for work.
    let app: Vec<&Frame> = g
        .frames
        .iter()
        .filter(|f| is_app_frame(&f.method))
        .collect();
    let loop_wait = app.len() == 1 && g.frames.last().is_some_and(|f| is_app_frame(&f.method));
    let has = |p: &str| g.frames.iter().any(|f| f.method.contains(p));
    let in_request = has("net/http.(*conn).serve");
    g.idle = match reason.as_str() {
        "IO wait" => {
            has("net/http.(*conn).readRequest")
                || has("net/http.(*connReader).backgroundRead")
                || has(".Accept")
                || has("net/http.(*persistConn).readLoop")
        }
        "select (no cases)" => true,
        _ if waiting_on_channel => !in_request && (app.is_empty() || loop_wait),
        _ => false,
    };
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMP: &str = include_str!("../../tests/fixtures/go/goroutines.txt");

    #[test]
    fn a_real_dump_reads_into_threads() {
        assert!(looks_like_goroutine_dump(DUMP));
        let d = parse_goroutine_dump(DUMP, "goroutines.txt").expect("dump");
        assert_eq!(d.format, DumpFormat::Goroutine);
        assert_eq!(d.threads.len(), DUMP.matches("\ngoroutine ").count() + 1);
        let blocked: Vec<&ThreadInfo> = d
            .threads
            .iter()
            .filter(|t| t.state() == ThreadState::Blocked)
            .collect();
        assert!(blocked.len() >= 5, "mutex waiters: {}", blocked.len());
        for t in &blocked {
            let l = t.waiting_to_lock().expect("lock line");
            assert_eq!(l.class.as_deref(), Some("sync.Mutex"));
            assert!(
                l.addr.as_deref().is_some_and(|a| a.starts_with("0xc")),
                "{l:?}"
            );
            assert!(
                site(&t.frames).starts_with("main.(*ledger).post ("),
                "{}",
                site(&t.frames)
            );
            assert_eq!(wait_of(t), GoWait::Lock);
        }
        // The idle workers and keep-alive readers are idle, never contention.
        let idle_workers = d
            .threads
            .iter()
            .filter(|t| t.frames.iter().any(|f| f.method == "main.idleWorker"))
            .collect::<Vec<_>>();
        assert_eq!(idle_workers.len(), 8);
        assert!(idle_workers
            .iter()
            .all(|t| t.idle && wait_of(t) == GoWait::Other));
        assert!(d
            .threads
            .iter()
            .filter(|t| t.header_state.starts_with("IO wait"))
            .all(|t| t.idle));
        // Handlers queued on the worker channel wait on a channel.
        let senders = d
            .threads
            .iter()
            .filter(|t| t.header_state.starts_with("chan send"))
            .collect::<Vec<_>>();
        assert!(!senders.is_empty());
        assert!(senders
            .iter()
            .all(|t| !t.idle && wait_of(t) == GoWait::Channel));
    }

    #[test]
    fn headers_with_durations_and_later_go_versions() {
        let text = "goroutine 7 [sync.Mutex.Lock, 3 minutes]:\nsync.runtime_SemacquireMutex(0x0?, 0x0?, 0x0?)\n\t/go/src/runtime/sema.go:77 +0x25\nsync.(*Mutex).lockSlow(0xc000012345)\n\t/go/src/sync/mutex.go:171 +0x165\nsync.(*Mutex).Lock(...)\n\t/go/src/sync/mutex.go:90\ngithub.com/acme/shop.(*Cart).Add(0xc000012340)\n\t/src/cart.go:12 +0x1\ncreated by net/http.(*Server).Serve in goroutine 1\n\t/go/src/net/http/server.go:3102 +0x4db\n\ngoroutine 9 [running]:\n\tgoroutine running on other thread; stack unavailable\n";
        let d = parse_goroutine_dump(text, "x").expect("dump");
        assert_eq!(d.threads.len(), 2);
        let g = &d.threads[0];
        assert_eq!(g.state(), ThreadState::Blocked);
        assert_eq!(waited_minutes(g), Some(3));
        assert_eq!(
            site(&g.frames),
            "github.com/acme/shop.(*Cart).Add (cart.go:12)"
        );
        assert_eq!(
            g.waiting_to_lock().and_then(|l| l.addr.clone()).as_deref(),
            Some("0xc000012345")
        );
        assert_eq!(d.threads[1].state(), ThreadState::Runnable);
        assert!(is_app_frame("github.com/acme/shop.Handler"));
        assert!(!is_app_frame("net/http.(*conn).serve"));
        assert!(!is_app_frame(
            "google.golang.org/grpc.(*Server).serveStreams"
        ));
    }

    #[test]
    fn garbled_and_cut_dumps_are_errors() {
        assert_eq!(parse_goroutine_dump("", "x"), Err(GoDumpError::NoGoroutine));
        assert_eq!(
            parse_goroutine_dump("hello\n", "x")
                .map(|_| ())
                .unwrap_err()
                .to_string(),
            "goroutine dump garbled at line 1: `hello` before any goroutine header"
        );
        // Cut in the middle of a frame: a function without its file line.
        let cut_at = DUMP.find("main.(*ledger).post(").expect("a post frame") + 10;
        let e = parse_goroutine_dump(&DUMP[..cut_at], "x").expect_err("cut");
        assert!(e.to_string().contains("cut short"), "{e}");
        // Cut at a line's end inside a goroutine: its stack ends early.
        let post = DUMP.find("main.(*ledger).post(").expect("a post frame");
        let line_end = post + DUMP[post..].find(" +0x").expect("file line") + 8;
        let end = line_end + DUMP[line_end..].find('\n').unwrap_or(0);
        let e = parse_goroutine_dump(&DUMP[..end], "x").expect_err("cut at a frame");
        assert!(e.to_string().contains("cut short"), "{e}");
        // A file line cut in the middle.
        let e = parse_goroutine_dump(&DUMP[..line_end - 9], "x").expect_err("cut in a file line");
        assert!(e.to_string().contains("cut short"), "{e}");
        // A header with nothing under it.
        assert!(
            parse_goroutine_dump("goroutine 1 [chan receive]:\n\ngoroutine 2 [sleep]:\n", "x")
                .is_err()
        );
        // Every prefix and some byte flips of a real dump: an answer or an error, never a panic.
        for end in (0..DUMP.len()).step_by(97) {
            if let Some(p) = DUMP.get(..end) {
                let _ = parse_goroutine_dump(p, "x");
            }
        }
        let mut b = DUMP.as_bytes().to_vec();
        for i in (0..b.len()).step_by(53) {
            b[i] = b[i].wrapping_add(7);
        }
        let _ = parse_goroutine_dump(&String::from_utf8_lossy(&b), "x");
        // Random mutations (bounded, seeded): an answer or an error.
        let mut rng = fastrand::Rng::with_seed(24);
        for _ in 0..300 {
            let mut b = DUMP.as_bytes().to_vec();
            for _ in 0..rng.usize(1..8) {
                let i = rng.usize(..b.len());
                match rng.u8(..3) {
                    0 => b[i] = rng.u8(..),
                    1 => b.truncate(i),
                    _ => b.insert(i, b'\n'),
                }
                if b.is_empty() {
                    break;
                }
            }
            let _ = parse_goroutine_dump(&String::from_utf8_lossy(&b), "x");
        }
    }
}
