//! What grows in a soak: the parts of a target that can leak (a heap class,
//! a thread-name group, sockets in one state to one peer, a kind of file
//! descriptor, a native-memory category, direct buffers, Metaspace), as series over the run
//! ([`PartSeries`], what the diagnosis and the collectors hand the judge
//! through the evidence) and as judged items ([`Growth`], what the soak
//! verdict, `summary.json`'s `soak.grows`, the terminal and `report.html`
//! show).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::series::Unit;

/// Which kind of part grows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartKind {
    /// One class of the heap (`GC.class_histogram`): bytes, with its instances.
    HeapClass,
    /// Threads whose names share a pattern (`export-worker-N`): count.
    ThreadGroup,
    /// TCP sockets in one state to one peer (`CLOSE_WAIT 127.0.0.1:8080`): count.
    Sockets,
    /// File descriptors of one kind (`pipe`, `file:/var/log`): count.
    FdKind,
    /// A Native Memory Tracking category (`Other`, `Thread`): committed bytes.
    NativeCategory,
    /// The direct buffer pool (`java.nio:type=BufferPool,name=direct`):
    /// bytes used, with the buffers' count.
    DirectBuffers,
    /// Metaspace (class metadata) used after GC, with the loaded classes' count.
    Metaspace,
}

impl PartKind {
    /// How a line names the kind: "heap class", "threads", …
    pub fn label(self) -> &'static str {
        match self {
            PartKind::HeapClass => "heap class",
            PartKind::ThreadGroup => "threads",
            PartKind::Sockets => "sockets",
            PartKind::FdKind => "file descriptors",
            PartKind::NativeCategory => "native memory",
            PartKind::DirectBuffers => "direct buffers",
            PartKind::Metaspace => "Metaspace",
        }
    }

    /// The unit its values are in.
    pub fn unit(self) -> Unit {
        match self {
            PartKind::HeapClass
            | PartKind::NativeCategory
            | PartKind::DirectBuffers
            | PartKind::Metaspace => Unit::Bytes,
            _ => Unit::Count,
        }
    }
}

/// One part of the target over the run: samples `(seconds since the run
/// start, value)` in time order. A part absent from a sample that would have
/// listed it (a class not in one histogram) is a 0 there, not a gap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartSeries {
    pub kind: PartKind,
    /// `com.acme.CacheEntry`, `export-worker-N`, `CLOSE_WAIT 127.0.0.1:8080`.
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// What the bytes are made of, counted: a heap class's instances (at the
    /// same times as `points`), the direct buffers, the loaded classes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<(f64, f64)>,
    /// Where it comes from, as the newest sample says it: a thread group's
    /// state and common frame ("WAITING in com.acme.Exporter.run").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The files it was read from (`diagnostics/class-histogram-*.txt`).
    pub evidence: String,
}

/// One thing that grows steadily through a soak, judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Growth {
    pub kind: PartKind,
    pub name: String,
    pub unit: Unit,
    /// Theil–Sen slope, in `unit` per hour.
    pub slope_per_hour: f64,
    /// Least-squares fit.
    pub r2: f64,
    /// The share (0–1) of its kind's whole growth this part explains (the
    /// heap's live set, all threads, all descriptors, NMT's committed total).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    /// Per hour: a heap class's instances, direct buffers, loaded classes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instances_per_hour: Option<f64>,
    /// Where it comes from (a frame, a state, the arrays it owns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The files it was read from.
    pub evidence: String,
    /// The verdict's line: the name first, then the slope.
    pub text: String,
    /// The samples judged (at most [`MAX_CHART_POINTS`]), for the report's chart.
    pub points: Vec<(f64, f64)>,
    /// The trend line through them: `(t, value)` at the first and last sample.
    pub line: [(f64, f64); 2],
}

/// Points a [`Growth`] keeps for its chart.
pub const MAX_CHART_POINTS: usize = 120;

/// One sample of many parts: its time and `name → (value, detail)`.
pub type GrowthSample = (f64, BTreeMap<String, (f64, Option<String>)>);

/// One series per name over samples of `name → (value, detail)`: the
/// `keep` that grew most from the first sample to the last, 0
/// where a sample lists a name not, the newest detail kept.
pub fn line_up(
    kind: PartKind,
    samples: &[GrowthSample],
    evidence: &str,
    keep: usize,
) -> Vec<PartSeries> {
    let (Some((_, first)), Some((_, last))) = (samples.first(), samples.last()) else {
        return vec![];
    };
    let v = |m: &BTreeMap<String, (f64, Option<String>)>, k: &str| m.get(k).map_or(0.0, |x| x.0);
    let mut grown: Vec<(&String, f64)> =
        last.keys().map(|k| (k, v(last, k) - v(first, k))).collect();
    grown.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    grown
        .into_iter()
        .take(keep)
        .map(|(k, _)| PartSeries {
            kind,
            name: k.clone(),
            points: samples.iter().map(|(t, m)| (*t, v(m, k))).collect(),
            instances: vec![],
            detail: samples.iter().rev().find_map(|(_, m)| m.get(k)?.1.clone()),
            evidence: evidence.to_string(),
        })
        .collect()
}

/// One row of `diagnostics/fds.jsonl` (the `proc-fds` parser's sample): the
/// target's descriptors by kind and its TCP sockets by state and peer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FdRow {
    /// `socket`, `pipe`, `anon_inode:[eventpoll]`, `file:/var/log`, `other` → count.
    #[serde(default)]
    pub kinds: BTreeMap<String, u64>,
    #[serde(default)]
    pub sockets: Vec<SocketCount>,
}

/// Sockets of one state to one peer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SocketCount {
    /// Accepted on a port the process listens on (the peer is a client).
    pub inbound: bool,
    /// `ESTABLISHED`, `CLOSE_WAIT`, …
    pub state: String,
    /// Inbound: the listening port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_port: Option<u16>,
    /// Inbound: the client's address; outbound: the peer's `address:port`.
    pub peer: String,
    pub count: u64,
}

impl SocketCount {
    /// The part's name: `CLOSE_WAIT to 127.0.0.1:8080`, `ESTABLISHED from 10.0.0.7 on :8080`.
    pub fn part_name(&self) -> String {
        match (self.inbound, self.local_port) {
            (true, Some(p)) => format!("{} from {} on :{p}", self.state, self.peer),
            (true, None) => format!("{} from {}", self.state, self.peer),
            (false, _) => format!("{} to {}", self.state, self.peer),
        }
    }
}
