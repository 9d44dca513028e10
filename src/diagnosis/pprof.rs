//! Go's pprof profiles (`profile.proto`, gzip-compressed, as
//! `/debug/pprof/{mutex,block}` serve them) read into stacks with their
//! values, and what each stack waits on.
//!
//! Why not a pprof crate: the `pprof` crate makes CPU profiles of the Rust
//! process itself (its proto types come with its profiler), and the
//! generated-code crates need `protoc` or a build script; the five messages
//! a reader needs are declared here with `prost` derives (already a
//! dependency, for remote-write), and `flate2` (already in the tree, under
//! `hdrhistogram`) inflates them. Mapping, label and comment fields are
//! skipped by prost as unknown.
//!
//! The mutex and block profiles count from the process start; the
//! collector takes them at each phase start and on a schedule, and
//! [`Chain::deltas`] diffs consecutive ones of the same probe.

use std::collections::BTreeMap;
use std::io::Read;

use super::goroutines::is_app_frame;

/// A profile inflated to more than this is refused (a gzip bomb, or not a
/// mutex/block profile: those are kilobytes).
const MAX_INFLATED: u64 = 256 << 20;
/// A gzip file larger than this is not read as a profile.
pub const MAX_FILE: u64 = 64 << 20;

#[derive(Debug, thiserror::Error)]
pub enum PprofError {
    #[error("not a gzip-compressed pprof profile: {0}")]
    Gzip(std::io::Error),
    #[error("gzip data larger than a pprof profile ({} MiB, {} MiB inflated): not read", MAX_FILE >> 20, MAX_INFLATED >> 20)]
    TooLarge,
    #[error("not a pprof profile (profile.proto): {0}")]
    Proto(#[from] prost::DecodeError),
    #[error("pprof profile without sample types")]
    NoSampleTypes,
    #[error("pprof profile refers to a missing {0}")]
    Dangling(&'static str),
}

/// `profile.proto` (github.com/google/pprof/proto/profile.proto), the
/// fields a reader of Go's profiles needs.
mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        #[prost(int64, tag = "9")]
        pub time_nanos: i64,
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        #[prost(int64, tag = "12")]
        pub period: i64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        #[prost(int64, tag = "2")]
        pub line: i64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(int64, tag = "2")]
        pub name: i64,
        #[prost(int64, tag = "4")]
        pub filename: i64,
    }
}

/// One profile, stacks resolved to function names (leaf first, inlined
/// functions expanded) and summed per stack.
#[derive(Debug, Clone, PartialEq)]
pub struct GoProfile {
    pub source: String,
    /// Unix seconds it was taken (`time_nanos`).
    pub time_unix: Option<f64>,
    /// `contentions/count`, `delay/nanoseconds`, …
    pub sample_types: Vec<(String, String)>,
    pub period: i64,
    /// Stack (leaf first) → values, one per sample type.
    pub stacks: BTreeMap<Vec<String>, Vec<i64>>,
}

/// True for gzip's magic bytes (how Go serves every profile).
pub fn looks_like_gzip(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b])
}

/// Reads a profile: gzip-compressed (as served) or already inflated.
pub fn parse_profile(bytes: &[u8], source: &str) -> Result<GoProfile, PprofError> {
    let raw = if looks_like_gzip(bytes) {
        let mut out = vec![];
        flate2::read::GzDecoder::new(bytes)
            .take(MAX_INFLATED + 1)
            .read_to_end(&mut out)
            .map_err(PprofError::Gzip)?;
        if out.len() as u64 > MAX_INFLATED {
            return Err(PprofError::TooLarge);
        }
        out
    } else {
        bytes.to_vec()
    };
    let p: proto::Profile = prost::Message::decode(raw.as_slice())?;
    if p.sample_type.is_empty() {
        return Err(PprofError::NoSampleTypes);
    }
    let s = |i: i64| -> Result<String, PprofError> {
        usize::try_from(i)
            .ok()
            .and_then(|i| p.string_table.get(i))
            .cloned()
            .ok_or(PprofError::Dangling("string"))
    };
    let mut funcs: BTreeMap<u64, String> = BTreeMap::new();
    for f in &p.function {
        funcs.insert(f.id, s(f.name)?);
    }
    let mut locs: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for l in &p.location {
        // `line` is innermost first: an inlined callee before its caller.
        let names = l
            .line
            .iter()
            .map(|ln| {
                funcs
                    .get(&ln.function_id)
                    .cloned()
                    .ok_or(PprofError::Dangling("function"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        locs.insert(l.id, names);
    }
    let mut stacks: BTreeMap<Vec<String>, Vec<i64>> = BTreeMap::new();
    for sm in &p.sample {
        let mut stack = vec![];
        for id in &sm.location_id {
            stack.extend(
                locs.get(id)
                    .ok_or(PprofError::Dangling("location"))?
                    .iter()
                    .cloned(),
            );
        }
        let v = stacks
            .entry(stack)
            .or_insert_with(|| vec![0; sm.value.len()]);
        for (a, b) in v.iter_mut().zip(&sm.value) {
            *a = a.saturating_add(*b);
        }
    }
    Ok(GoProfile {
        source: source.to_string(),
        time_unix: (p.time_nanos > 0).then(|| p.time_nanos as f64 / 1e9),
        sample_types: p
            .sample_type
            .iter()
            .map(|t| Ok((s(t.r#type)?, s(t.unit)?)))
            .collect::<Result<_, PprofError>>()?,
        period: p.period,
        stacks,
    })
}

impl GoProfile {
    /// The index of the value of `kind` (`delay`, `contentions`).
    pub fn value_index(&self, kind: &str) -> Option<usize> {
        self.sample_types.iter().position(|(t, _)| t == kind)
    }

    /// Stack → (count, delay ns) for a contention profile (mutex, block).
    pub fn waits(&self) -> Option<BTreeMap<Vec<String>, (i64, i64)>> {
        let c = self.value_index("contentions")?;
        let d = self.value_index("delay")?;
        Some(
            self.stacks
                .iter()
                .map(|(k, v)| {
                    let get = |i: usize| v.get(i).copied().unwrap_or(0);
                    (k.clone(), (get(c), get(d)))
                })
                .collect(),
        )
    }
}

/// What a contention stack waits on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct WaitSite {
    /// `lock` or `channel` (or `other`: a `sync.Cond`, a `WaitGroup`).
    pub wait: &'static str,
    /// `sync.(*Mutex).Lock`, `chan send`, `chan receive`, `select`.
    pub primitive: String,
    /// The first application frame (or the first past runtime and `sync`).
    pub site: String,
    /// The mutex profile's stack is the holder's (where it unlocked).
    pub held: bool,
    /// A worker loop receiving, or no application frame at all: idle.
    pub idle: bool,
}

/// Classifies a stack (leaf first) of a mutex or block profile.
pub fn wait_site(stack: &[String]) -> WaitSite {
    let has = |f: &str| stack.iter().take(4).any(|s| s == f);
    let rw = stack
        .iter()
        .take(4)
        .any(|s| s.starts_with("sync.(*RWMutex)."));
    let (wait, primitive, held) = if has("sync.(*Mutex).Unlock") {
        ("lock", "sync.(*Mutex).Lock", true)
    } else if rw && (has("sync.(*RWMutex).Unlock") || has("sync.(*RWMutex).RUnlock")) {
        ("lock", "sync.(*RWMutex).Lock", true)
    } else if has("sync.(*Mutex).Lock") || has("sync.(*Mutex).lockSlow") {
        ("lock", "sync.(*Mutex).Lock", false)
    } else if rw {
        ("lock", "sync.(*RWMutex).Lock", false)
    } else if has("runtime.chansend1") || has("runtime.chansend") || has("runtime.selectnbsend") {
        ("channel", "chan send", false)
    } else if has("runtime.chanrecv1") || has("runtime.chanrecv2") || has("runtime.chanrecv") {
        ("channel", "chan receive", false)
    } else if has("runtime.selectgo") {
        ("channel", "select", false)
    } else {
        (
            "other",
            stack.first().map(String::as_str).unwrap_or("?"),
            false,
        )
    };
    let app = stack.iter().position(|f| is_app_frame(f));
    let site = app
        .or_else(|| {
            stack
                .iter()
                .position(|f| !f.starts_with("runtime.") && !f.starts_with("sync."))
        })
        .and_then(|i| stack.get(i))
        .cloned()
        .unwrap_or_else(|| "?".into());
    let receiving = primitive == "chan receive" || primitive == "select";
    // The goroutine's own function (the stack's bottom) receiving: a worker loop.
    let loop_wait = app.is_some_and(|i| i + 1 == stack.len());
    WaitSite {
        wait,
        primitive: primitive.to_string(),
        site,
        held,
        idle: app.is_none() || (receiving && loop_wait),
    }
}

/// Profiles of one probe (`mutex`, `block`) in time order.
#[derive(Debug, Clone, Default)]
pub struct Chain<'a> {
    pub probe: String,
    pub profiles: Vec<&'a GoProfile>,
}

/// One difference of two consecutive profiles of a chain.
#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    pub from_unix: f64,
    pub to_unix: f64,
    /// The later profile's file.
    pub source: String,
    /// Stack → (contentions, delay ns) added between the two.
    pub waits: BTreeMap<Vec<String>, (i64, i64)>,
}

/// The probe a file came from, by brunt's artifact name
/// (`mutex-t0012.3-step-2-003.pprof` → `mutex`); else the file name.
pub fn probe_of(source: &str) -> String {
    let name = std::path::Path::new(source)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.find("-t") {
        Some(i) if crate::vocab::files::artifact_time(&name).is_some() => name[..i].to_string(),
        _ => name,
    }
}

/// Profiles grouped by probe, each in time order (untimed ones dropped).
pub fn chains(profiles: &[GoProfile]) -> Vec<Chain<'_>> {
    let mut m: BTreeMap<String, Vec<&GoProfile>> = BTreeMap::new();
    for p in profiles.iter().filter(|p| p.time_unix.is_some()) {
        m.entry(probe_of(&p.source)).or_default().push(p);
    }
    m.into_iter()
        .map(|(probe, mut profiles)| {
            profiles.sort_by(|a, b| {
                a.time_unix
                    .unwrap_or(0.0)
                    .total_cmp(&b.time_unix.unwrap_or(0.0))
            });
            Chain { probe, profiles }
        })
        .collect()
}

impl Chain<'_> {
    /// Consecutive differences; a pair whose counts went down (the process
    /// restarted) is left out.
    pub fn deltas(&self) -> Vec<Delta> {
        let mut out = vec![];
        for w in self.profiles.windows(2) {
            let (Some(a), Some(b)) = (w.first(), w.get(1)) else {
                continue;
            };
            let (Some(wa), Some(wb)) = (a.waits(), b.waits()) else {
                continue;
            };
            let total =
                |m: &BTreeMap<Vec<String>, (i64, i64)>| m.values().map(|v| v.0).sum::<i64>();
            if total(&wb) < total(&wa) {
                continue;
            }
            let mut waits = BTreeMap::new();
            for (k, (c, d)) in wb {
                let (c0, d0) = wa.get(&k).copied().unwrap_or((0, 0));
                if c > c0 || d > d0 {
                    waits.insert(k, ((c - c0).max(0), (d - d0).max(0)));
                }
            }
            out.push(Delta {
                from_unix: a.time_unix.unwrap_or(0.0),
                to_unix: b.time_unix.unwrap_or(0.0),
                source: b.source.clone(),
                waits,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MUTEX: &[u8] = include_bytes!("../../tests/fixtures/go/mutex.pprof");
    const BLOCK: &[u8] = include_bytes!("../../tests/fixtures/go/block.pprof");

    #[test]
    fn real_mutex_and_block_profiles_read_and_classify() {
        let m = parse_profile(MUTEX, "mutex.pprof").expect("mutex profile");
        assert_eq!(
            m.sample_types,
            vec![
                ("contentions".to_string(), "count".to_string()),
                ("delay".to_string(), "nanoseconds".to_string())
            ]
        );
        assert!(m.time_unix.is_some());
        let waits = m.waits().expect("contention values");
        let (stack, (n, ns)) = waits.iter().max_by_key(|(_, v)| v.1).expect("a stack");
        let w = wait_site(stack);
        assert_eq!(
            (w.wait, w.primitive.as_str(), w.held),
            ("lock", "sync.(*Mutex).Lock", true)
        );
        assert_eq!(w.site, "main.(*ledger).post");
        assert!(*n > 0 && *ns > 0);
        let b = parse_profile(BLOCK, "block.pprof").expect("block profile");
        let sites: Vec<WaitSite> = b
            .waits()
            .expect("values")
            .keys()
            .map(|k| wait_site(k))
            .collect();
        // The Lock is inlined into post: expanded, the waiter's site is post.
        assert!(
            sites
                .iter()
                .any(|s| s.wait == "lock" && !s.held && s.site == "main.(*ledger).post" && !s.idle),
            "{sites:?}"
        );
        assert!(
            sites
                .iter()
                .any(|s| s.primitive == "chan send" && s.site == "main.main.func2" && !s.idle),
            "{sites:?}"
        );
        // The worker loop receiving is idle.
        assert!(
            sites
                .iter()
                .any(|s| s.primitive == "chan receive" && s.site == "main.worker" && s.idle),
            "{sites:?}"
        );
    }

    #[test]
    fn broken_profiles_are_errors() {
        assert!(matches!(
            parse_profile(&MUTEX[..MUTEX.len() / 2], "x"),
            Err(PprofError::Gzip(_))
        ));
        assert!(parse_profile(b"\x1f\x8bnot gzip at all", "x").is_err());
        assert!(parse_profile(b"\x08\x01\x12", "x").is_err());
        let mut flipped = MUTEX.to_vec();
        for i in (20..flipped.len()).step_by(31) {
            flipped[i] ^= 0x55;
        }
        let _ = parse_profile(&flipped, "x");
        // Random mutations of the inflated protobuf (bounded, seeded).
        let mut raw = vec![];
        flate2::read::GzDecoder::new(BLOCK)
            .read_to_end(&mut raw)
            .expect("inflate");
        let mut rng = fastrand::Rng::with_seed(24);
        for _ in 0..300 {
            let mut b = raw.clone();
            for _ in 0..rng.usize(1..6) {
                let i = rng.usize(..b.len());
                b[i] = rng.u8(..);
            }
            let _ = parse_profile(&b, "x");
        }
        assert_eq!(
            probe_of("/r/diagnostics/mutex-t0012.3-step-2-003.pprof"),
            "mutex"
        );
        assert_eq!(probe_of("/x/my.pprof"), "my.pprof");
    }
}
