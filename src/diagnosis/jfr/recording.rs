//! What a recording yields: the public result types and the parser's error.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::vocab::jfr::JfrTotals;

#[derive(Debug, thiserror::Error)]
pub enum JfrError {
    #[error("read {0}")]
    Io(#[from] std::io::Error),
    #[error("not a JFR recording (no FLR magic)")]
    NotJfr,
    #[error("unsupported JFR format version {0}.{1} (brunt reads 2.x: JDK 11+)")]
    Version(u16, u16),
    #[error("corrupt recording: {0}")]
    Corrupt(String),
}

pub(super) fn corrupt(msg: impl Into<String>) -> JfrError {
    JfrError::Corrupt(msg.into())
}

/// Monitor entry, wait, park or pinning aggregated by class and call site.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JfrSite {
    /// `jdk.JavaMonitorEnter`, `jdk.ThreadPark`, …
    pub event: String,
    /// Monitor class (`monitorClass`) or parked class (`parkedClass`).
    pub class: Option<String>,
    /// First application frame (JDK internals such as `Unsafe.park` skipped).
    pub site: String,
    /// Top frames of the first stack seen, for the report.
    pub stack: Vec<String>,
    pub count: u64,
    pub total_ms: f64,
    pub max_ms: f64,
    /// Previous monitor owners (JavaMonitorEnter) by thread name, most frequent first.
    pub previous_owners: Vec<(String, u64)>,
    pub first_unix: f64,
    pub last_unix: f64,
    /// Threads parked waiting for work (executor queues): not contention.
    pub idle: bool,
    /// Load phase the events fell in, when phases were given (one site per phase).
    #[serde(default)]
    pub phase: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeapSample {
    pub unix: f64,
    pub gc_id: i64,
    /// `Before GC` or `After GC`.
    pub when: String,
    pub heap_used: u64,
    /// The collector that ran this GC (`jdk.GarbageCollection`'s name:
    /// `G1New`, `G1Full`, `DefNew`, `SerialOld`, `ZGC`…), when the
    /// recording has that event: it tells a young collection from a full one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gc: Option<String>,
}

/// What a soak watches outside the Java heap, from JFR's periodic and
/// per-GC events (all on in the `default` and `profile` settings), each
/// `(unix, …)` in time order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JvmGauges {
    /// `jdk.DirectBufferStatistics` (every 5 s): `(unix, buffers, bytes
    /// used)` of the `direct` pool `java.nio:type=BufferPool` shows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub direct_buffers: Vec<(f64, u64, u64)>,
    /// `jdk.MetaspaceSummary` after each GC: `(unix, Metaspace used bytes)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metaspace: Vec<(f64, u64)>,
    /// `jdk.ClassLoadingStatistics` (every second, kept at most every
    /// [`CLASS_COUNT_EVERY_S`]): `(unix, classes loaded − unloaded)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<(f64, u64)>,
}

/// Seconds between two loaded-class counts kept: an 8-h recording keeps
/// 5,760 of its 28,800.
pub const CLASS_COUNT_EVERY_S: f64 = 5.0;

impl JvmGauges {
    pub fn is_empty(&self) -> bool {
        self.direct_buffers.is_empty() && self.metaspace.is_empty() && self.classes.is_empty()
    }

    /// Adds `other`'s samples (another window, another recording), in time order.
    pub fn absorb(&mut self, other: JvmGauges) {
        self.direct_buffers.extend(other.direct_buffers);
        self.metaspace.extend(other.metaspace);
        self.classes.extend(other.classes);
        self.direct_buffers.sort_by(|a, b| a.0.total_cmp(&b.0));
        self.metaspace.sort_by(|a, b| a.0.total_cmp(&b.0));
        self.classes.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
}

/// What brunt reads from one recording.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JfrRecording {
    pub source: String,
    pub chunks: usize,
    pub events: u64,
    pub events_by_type: BTreeMap<String, u64>,
    pub start_unix: Option<f64>,
    pub duration_s: f64,
    /// JavaMonitorEnter / JavaMonitorWait / ThreadPark sites, by total time.
    pub sites: Vec<JfrSite>,
    /// VirtualThreadPinned sites, by total time.
    pub pinned: Vec<JfrSite>,
    pub heap: Vec<HeapSample>,
    /// Direct buffers, Metaspace and loaded classes over the recording.
    #[serde(default, skip_serializing_if = "JvmGauges::is_empty")]
    pub gauges: JvmGauges,
    /// `jdk.GarbageCollection`'s collector name by GC id (joined into
    /// [`HeapSample::gc`] once the recording is read).
    #[serde(skip)]
    pub gc_names: BTreeMap<i64, String>,
    /// Top frames of jdk.ExecutionSample, most samples first.
    pub hot_methods: Vec<(String, u64)>,
    /// `jdk.ExecutionSample` events read.
    #[serde(default)]
    pub samples: u64,
    /// Top application frames of the samples (JDK frames skipped), most
    /// samples first, each with the JDK frame it was mostly running in.
    #[serde(default)]
    pub hot_self: Vec<HotFrame>,
    /// Application frames by samples anywhere in the stack (once per sample).
    #[serde(default)]
    pub hot_total: Vec<(String, u64)>,
    /// Run-wide figures (monitor entries, park waits, allocation, GC pauses)
    /// of the events that ended after [`super::parse_jfr_window`]'s cut.
    #[serde(default)]
    pub totals: JfrTotals,
    /// Collapsed stacks per phase and kind, for flame graphs.
    #[serde(default, skip_serializing)]
    pub flames: Vec<FoldedStacks>,
    pub warnings: Vec<String>,
}

/// An application method's own samples, and the JDK frame on top of it in
/// most of them (`Thread.sleep`, `HashMap.resize`), when there was one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HotFrame {
    pub method: String,
    pub samples: u64,
    pub jdk_top: Option<(String, u64)>,
}

/// What a flame graph shows: CPU samples, or time waiting (monitor entry,
/// park, pinning; idle waits left out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlameKind {
    Cpu,
    Wait,
}

impl FlameKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FlameKind::Cpu => "cpu",
            FlameKind::Wait => "wait",
        }
    }
    /// What one unit of a stack's count is.
    pub fn unit(self) -> &'static str {
        match self {
            FlameKind::Cpu => "samples",
            FlameKind::Wait => "ms",
        }
    }
}

/// Collapsed stacks (`root;…;leaf` → count, the format flamegraph.pl,
/// inferno and speedscope read) of one recording, phase and kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FoldedStacks {
    pub source: String,
    pub phase: Option<String>,
    pub kind: Option<FlameKind>,
    pub stacks: BTreeMap<String, u64>,
}

/// Adds `other`'s counts to `top` (name → count), most first, at most `keep`.
fn merge_counts(top: &mut Vec<(String, u64)>, other: Vec<(String, u64)>, keep: usize) {
    let mut m: BTreeMap<String, u64> = std::mem::take(top).into_iter().collect();
    for (k, n) in other {
        *m.entry(k).or_default() += n;
    }
    let mut v: Vec<(String, u64)> = m.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(keep);
    *top = v;
}

/// Folds sites of the same event, class, call site, phase and idleness into one.
fn merge_sites(sites: &mut Vec<JfrSite>, other: Vec<JfrSite>) {
    type Key = (String, Option<String>, String, Option<String>, bool);
    let key = |s: &JfrSite| -> Key {
        (
            s.event.clone(),
            s.class.clone(),
            s.site.clone(),
            s.phase.clone(),
            s.idle,
        )
    };
    let mut m: BTreeMap<Key, JfrSite> = BTreeMap::new();
    for s in std::mem::take(sites).into_iter().chain(other) {
        match m.entry(key(&s)) {
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(s);
            }
            std::collections::btree_map::Entry::Occupied(mut e) => {
                let t = e.get_mut();
                t.count += s.count;
                t.total_ms += s.total_ms;
                t.max_ms = t.max_ms.max(s.max_ms);
                t.first_unix = t.first_unix.min(s.first_unix);
                t.last_unix = t.last_unix.max(s.last_unix);
                let keep = t.previous_owners.len().max(s.previous_owners.len());
                merge_counts(&mut t.previous_owners, s.previous_owners, keep);
            }
        }
    }
    let mut v: Vec<JfrSite> = m.into_values().collect();
    v.sort_by(|a, b| {
        b.total_ms
            .total_cmp(&a.total_ms)
            .then(b.count.cmp(&a.count))
    });
    *sites = v;
}

impl JfrRecording {
    /// Joins each heap summary to its collector's name (by GC id), in time order.
    pub(super) fn name_gcs(&mut self) {
        for h in &mut self.heap {
            h.gc = h.gc.take().or_else(|| self.gc_names.get(&h.gc_id).cloned());
        }
        self.heap.sort_by(|a, b| a.unix.total_cmp(&b.unix));
    }

    /// Adds the next window of the same recording (a windowed JFR collector
    /// dumps one file per window) so its facts are read once, not once per
    /// window: sites, samples, flame graphs and totals add up; top-N lists
    /// are merged from each window's top N (a method just outside every
    /// window's top 20 can be missing from the merged one).
    pub fn absorb(&mut self, other: JfrRecording) {
        self.chunks += other.chunks;
        self.events += other.events;
        for (k, n) in other.events_by_type {
            *self.events_by_type.entry(k).or_default() += n;
        }
        self.start_unix = match (self.start_unix, other.start_unix) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.duration_s += other.duration_s;
        merge_sites(&mut self.sites, other.sites);
        merge_sites(&mut self.pinned, other.pinned);
        self.heap.extend(other.heap);
        self.gauges.absorb(other.gauges);
        self.gc_names.extend(other.gc_names);
        // A GC's event and its heap summary can fall in different windows.
        self.name_gcs();
        let keep = self.hot_methods.len().max(other.hot_methods.len());
        merge_counts(&mut self.hot_methods, other.hot_methods, keep);
        let keep = self.hot_total.len().max(other.hot_total.len());
        merge_counts(&mut self.hot_total, other.hot_total, keep);
        self.samples += other.samples;
        let keep = self.hot_self.len().max(other.hot_self.len());
        let mut hs: BTreeMap<String, HotFrame> = BTreeMap::new();
        for h in std::mem::take(&mut self.hot_self)
            .into_iter()
            .chain(other.hot_self)
        {
            match hs.get_mut(&h.method) {
                None => {
                    hs.insert(h.method.clone(), h);
                }
                Some(t) => {
                    t.samples += h.samples;
                    t.jdk_top = match (t.jdk_top.take(), h.jdk_top) {
                        (Some(a), Some(b)) if a.0 == b.0 => Some((a.0, a.1 + b.1)),
                        (Some(a), Some(b)) => Some(if b.1 > a.1 { b } else { a }),
                        (a, b) => a.or(b),
                    };
                }
            }
        }
        let mut hs: Vec<HotFrame> = hs.into_values().collect();
        hs.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.method.cmp(&b.method)));
        hs.truncate(keep);
        self.hot_self = hs;
        let t = &mut self.totals;
        let o = other.totals;
        t.monitor_enter += o.monitor_enter;
        t.monitor_enter_ms += o.monitor_enter_ms;
        t.park += o.park;
        t.park_ms += o.park_ms;
        t.pinned += o.pinned;
        t.pinned_ms += o.pinned_ms;
        t.alloc_bytes += o.alloc_bytes;
        t.alloc_samples += o.alloc_samples;
        t.gc += o.gc;
        t.gc_pause_ms += o.gc_pause_ms;
        t.first_unix = match (t.first_unix, o.first_unix) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        t.last_unix = match (t.last_unix, o.last_unix) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        for f in other.flames {
            match self
                .flames
                .iter_mut()
                .find(|g| g.phase == f.phase && g.kind == f.kind)
            {
                Some(g) => {
                    for (k, n) in f.stacks {
                        *g.stacks.entry(k).or_default() += n;
                    }
                }
                None => self.flames.push(FoldedStacks {
                    source: self.source.clone(),
                    ..f
                }),
            }
        }
        self.warnings.extend(other.warnings);
    }
}
