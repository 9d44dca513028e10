//! JDK 21+ JSON thread dumps (`jcmd PID Thread.dump_to_file -format=json`),
//! the only dump that shows virtual threads. JDK 21 threads carry `tid`,
//! `name`, `stack`; JDK 25 adds `state`, `blockedOn`, `waitingOn`,
//! `parkBlocker`, `monitorsOwned`, `carrier`, `virtual`. Read leniently:
//! unknown fields are ignored, a malformed thread is skipped with a warning.
//! Where a dump carries no state (JDK 21), it is inferred from the top frames
//! when they make it certain ([`infer_state`]) and marked as inferred.

use serde_json::Value;

use super::model::{
    split_frame, DumpFormat, Frame, LockKind, LockLine, ThreadDump, ThreadInfo, ThreadState,
};
use super::DiagError;

pub fn looks_like_json_dump(text: &str) -> bool {
    let head = text.get(..text.len().min(4096)).unwrap_or("");
    head.trim_start().starts_with('{') && head.contains("\"threadDump\"")
}

pub fn parse_json_dump(text: &str, source: &str) -> Result<ThreadDump, DiagError> {
    let v: Value = serde_json::from_str(text).map_err(|e| DiagError::Json {
        file: source.to_string(),
        message: e.to_string(),
    })?;
    let td = v.get("threadDump").ok_or_else(|| DiagError::Json {
        file: source.to_string(),
        message: "no `threadDump` object".into(),
    })?;
    let mut d = ThreadDump::new(source, 0, DumpFormat::Json);
    d.pid = td.get("processId").and_then(|p| {
        p.as_str()
            .and_then(|s| s.parse().ok())
            .or(p.as_u64().map(|n| n as u32))
    });
    d.time = td.get("time").and_then(Value::as_str).map(str::to_string);
    d.time_unix = d
        .time
        .as_deref()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.timestamp_millis() as f64 / 1000.0);
    d.jvm = td
        .get("runtimeVersion")
        .and_then(Value::as_str)
        .map(str::to_string);
    let containers = td
        .get("threadContainers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    // JDK 25 may name a parked-on lock's owner by tid: record it like
    // "Locked ownable synchronizers" so ReentrantLock holders are found.
    let mut owners: Vec<(u64, LockLine)> = vec![];
    for c in &containers {
        let Some(threads) = c.get("threads").and_then(Value::as_array) else {
            continue;
        };
        for t in threads {
            match thread(t) {
                Some(info) => {
                    let pb = t.get("parkBlocker");
                    if let (Some(owner), Some(obj)) = (
                        str_or_num(pb.and_then(|p| p.get("owner")))
                            .and_then(|o| o.parse::<u64>().ok()),
                        pb.and_then(|p| p.get("object")).and_then(Value::as_str),
                    ) {
                        owners.push((
                            owner,
                            LockLine {
                                kind: LockKind::Locked,
                                addr: Some(obj.to_string()),
                                class: obj.split('@').next().map(str::to_string),
                            },
                        ));
                    }
                    d.threads.push(info)
                }
                None => d.warnings.push(format!(
                    "skipped a malformed thread entry in container {}",
                    c.get("container").and_then(Value::as_str).unwrap_or("?")
                )),
            }
        }
    }
    for (owner, lock) in owners {
        if let Some(t) = d.threads.iter_mut().find(|t| t.id == Some(owner)) {
            if !t.ownable_synchronizers.contains(&lock) {
                t.ownable_synchronizers.push(lock);
            }
        }
    }
    // JSON dumps carry no "Found one Java-level deadlock" section: find cycles.
    d.deadlocks = super::findings::wait_cycles(&d.threads);
    Ok(d)
}

fn str_or_num(v: Option<&Value>) -> Option<String> {
    v.and_then(|v| {
        v.as_str()
            .map(str::to_string)
            .or_else(|| v.as_u64().map(|n| n.to_string()))
    })
}

/// The state the top frames make certain: parked (`LockSupport.park` →
/// WAITING, `parkNanos`/`parkUntil` → TIMED_WAITING), sleeping
/// (TIMED_WAITING), in `Object.wait` (WAITING: timed or not, the stack
/// cannot tell), or in a native method other than those (RUNNABLE, as
/// HotSpot reports native code). Anything else stays unknown: a thread
/// blocked entering a monitor looks like one running its frame.
pub fn infer_state(frames: &[Frame]) -> Option<ThreadState> {
    let top = frames.first()?;
    for f in frames.iter().take(8) {
        let m = f.method.as_str();
        if m == "java.util.concurrent.locks.LockSupport.park" {
            return Some(ThreadState::Waiting);
        }
        if m.starts_with("java.util.concurrent.locks.LockSupport.park") {
            return Some(ThreadState::TimedWaiting);
        }
        if m.starts_with("java.lang.Thread.sleep") || m == "java.lang.VirtualThread.sleepNanos" {
            return Some(ThreadState::TimedWaiting);
        }
        if m.starts_with("java.lang.Object.wait") {
            return Some(ThreadState::Waiting);
        }
        // Only the JDK's own park/wait machinery may sit above those frames.
        let machinery = m.starts_with("jdk.internal.misc.")
            || m.starts_with("java.lang.VirtualThread.")
            || m.starts_with("java.lang.System$")
            || m.starts_with("jdk.internal.vm.Continuation");
        if !machinery {
            break;
        }
    }
    (top.location == "Native Method"
        && !top.method.starts_with("jdk.internal.misc.Unsafe.park")
        && !top.method.starts_with("java.lang.Object.wait"))
    .then_some(ThreadState::Runnable)
}

fn thread(t: &Value) -> Option<ThreadInfo> {
    let name = t.get("name")?.as_str()?.to_string();
    let mut info = ThreadInfo {
        name,
        id: str_or_num(t.get("tid")).and_then(|s| s.parse().ok()),
        ..ThreadInfo::default()
    };
    info.frames = t
        .get("stack")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(split_frame)
                .collect()
        })
        .unwrap_or_default();
    info.state = t
        .get("state")
        .and_then(Value::as_str)
        .map(ThreadState::parse);
    if info.state.is_none() {
        info.state = infer_state(&info.frames);
        info.state_inferred = info.state.is_some();
    }
    info.is_virtual = t
        .get("virtual")
        .and_then(Value::as_bool)
        .unwrap_or_else(|| {
            // JDK 21 does not say; a virtual thread's stack bottoms out in VirtualThread.run.
            info.frames
                .last()
                .is_some_and(|f| f.method == "java.lang.VirtualThread.run")
        });
    info.carrier = str_or_num(t.get("carrier")).and_then(|s| s.parse().ok());
    let lock = |kind: LockKind, v: Option<&Value>| -> Option<LockLine> {
        let s = v?.as_str()?;
        Some(LockLine {
            kind,
            addr: Some(s.to_string()),
            class: s.split('@').next().map(str::to_string),
        })
    };
    let mut top_locks = vec![];
    top_locks.extend(lock(LockKind::WaitingToLock, t.get("blockedOn")));
    top_locks.extend(lock(LockKind::WaitingOn, t.get("waitingOn")));
    let park = t
        .get("parkBlocker")
        .and_then(|p| p.get("object").or(Some(p)));
    top_locks.extend(lock(LockKind::ParkingFor, park));
    if let Some(f) = info.frames.first_mut() {
        f.locks.extend(top_locks);
    }
    // monitorsOwned: [{ "depth": n, "locks": ["Cls@hash", …] }]
    if let Some(owned) = t.get("monitorsOwned").and_then(Value::as_array) {
        for m in owned {
            let depth = m.get("depth").and_then(Value::as_u64).unwrap_or(0) as usize;
            let locks = m
                .get("locks")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for l in &locks {
                if let (Some(line), Some(f)) =
                    (lock(LockKind::Locked, Some(l)), info.frames.get_mut(depth))
                {
                    f.locks.push(line);
                }
            }
        }
    }
    Some(info)
}
