//! What grows in a soak, named: each part of the evidence
//! ([`crate::vocab::growth::PartSeries`]: heap classes, thread groups,
//! sockets by state and peer, fd kinds, NMT categories, direct buffers,
//! Metaspace) is put through the
//! same trend test as the series ([`super::trend::trend`]: Theil–Sen over
//! the window and in each half, R², 3σ of the noise) against its kind's
//! leak threshold (a class against `heap_after_gc`, a thread group against
//! `threads`, CLOSE_WAIT sockets against `close_wait`, …). What passes is a
//! [`Growth`]: its name first, then its slope, its share of its kind's
//! whole growth, and where it comes from.
//!
//! Primitive arrays have no owner in a class histogram; an array class
//! whose instances grow at the rate (±10 %) of one non-array class's is
//! taken to be that class's payload and counted with it (one `byte[]` per
//! `CacheEntry`): a heuristic, said as such in the item's detail.

use super::trend::{theil_sen, trend, MIN_LEAK_POINTS};
use super::verdict::Trend;
use crate::evidence::ServerEvidence;
use crate::profile::verdicts::LeakThresholds;
use crate::vocab::growth::{Growth, PartKind, PartSeries, MAX_CHART_POINTS};
use crate::vocab::series::{self, Series};

/// What the parts say about a soak window.
#[derive(Debug, Default)]
pub(super) struct Parts {
    /// The parts that grow, most growth (by share, then slope) first.
    pub grows: Vec<Growth>,
    /// Said beside the verdict: why the live set is unknown, where RSS grows.
    pub notes: Vec<String>,
}

/// How close (relative) two instance rates must be for an array to be
/// counted as another class's payload.
const OWNER_MATCH: f64 = 0.10;

/// The series whose threshold a part is judged against.
fn threshold_series(p: &PartSeries) -> Series {
    match p.kind {
        PartKind::HeapClass => series::JVM_HEAP_AFTER_GC,
        PartKind::NativeCategory | PartKind::DirectBuffers => series::TARGET_RSS,
        PartKind::Metaspace => series::JVM_METASPACE,
        PartKind::ThreadGroup => series::TARGET_THREADS,
        PartKind::Sockets if p.name.starts_with("CLOSE_WAIT") => series::TARGET_TCP_CLOSE_WAIT,
        PartKind::Sockets if p.name.starts_with("ESTABLISHED") => series::TARGET_TCP_ESTABLISHED,
        PartKind::Sockets | PartKind::FdKind => series::TARGET_FDS,
    }
}

/// The series whose growth a part's share is of.
fn total_series(k: PartKind) -> Series {
    match k {
        PartKind::HeapClass => series::JVM_LIVE_SET,
        PartKind::NativeCategory => series::JVM_NMT_COMMITTED,
        PartKind::DirectBuffers | PartKind::Metaspace => series::TARGET_RSS,
        PartKind::ThreadGroup => series::TARGET_THREADS,
        PartKind::Sockets | PartKind::FdKind => series::TARGET_FDS,
    }
}

fn in_window(pts: &[(f64, f64)], from: f64, to: f64) -> Vec<(f64, f64)> {
    pts.iter()
        .copied()
        .filter(|(t, _)| *t >= from && *t < to)
        .collect()
}

/// Per-hour Theil–Sen slope of `pts` in the window.
fn slope_h(pts: &[(f64, f64)], from: f64, to: f64) -> Option<f64> {
    theil_sen(&in_window(pts, from, to)).map(|s| s * 3600.0)
}

/// Judge the parts of `server` over `[from, to)`; `trends` are the series'.
pub(super) fn judge(
    server: Option<&ServerEvidence>,
    trends: &[Trend],
    from: f64,
    to: f64,
    th: &LeakThresholds,
) -> Parts {
    let Some(sv) = server else {
        return Parts::default();
    };
    let mut grows = vec![];
    let classes: Vec<&PartSeries> = sv
        .parts
        .iter()
        .filter(|p| p.kind == PartKind::HeapClass)
        .collect();
    let owned = owners(&classes, from, to);
    for p in &sv.parts {
        if owned.iter().any(|(array, _)| *array == p.name.as_str()) && p.kind == PartKind::HeapClass
        {
            continue; // counted with its owner
        }
        let payload: Vec<&PartSeries> = owned
            .iter()
            .filter(|(_, owner)| *owner == p.name.as_str() && p.kind == PartKind::HeapClass)
            .filter_map(|(array, _)| classes.iter().find(|c| c.name == *array).copied())
            .collect();
        let points = with_payload(p, &payload);
        let t = trend(threshold_series(p).name, &points, from, to, th);
        if !t.flagged {
            continue;
        }
        let total = sv
            .series
            .get(total_series(p.kind).name)
            .and_then(|s| slope_h(s, from, to))
            .filter(|s| *s > 0.0);
        let share = total.map(|tot| (t.slope_per_hour / tot).clamp(0.0, 1.0));
        let instances = (!p.instances.is_empty())
            .then(|| slope_h(&p.instances, from, to))
            .flatten();
        let arrays: Vec<String> = payload.iter().map(|a| java_name(&a.name)).collect();
        let detail = match counted(p.kind) {
            Some(what) => {
                let each = instances
                    .filter(|i| *i > 0.0)
                    .map(|i| format!("{} each", bytes(t.slope_per_hour / i)));
                let with = (!arrays.is_empty()).then(|| {
                    format!(
                        "with its {} (same instance rate: its payload)",
                        arrays.join(", ")
                    )
                });
                let parts: Vec<String> = [
                    instances.map(|i| format!("{} {what}/h", count(i))),
                    each,
                    with,
                ]
                .into_iter()
                .flatten()
                .collect();
                (!parts.is_empty()).then(|| parts.join(", "))
            }
            None => p.detail.clone(),
        };
        let w = in_window(&points, from, to);
        let line = fit_line(&w, t.slope_per_hour / 3600.0);
        let classes_kept = p.kind == PartKind::Metaspace && instances.is_some_and(|i| i > 0.0);
        let text = item_text(p, t.slope_per_hour, share, detail.as_deref(), classes_kept);
        grows.push(Growth {
            kind: p.kind,
            name: p.name.clone(),
            unit: p.kind.unit(),
            slope_per_hour: t.slope_per_hour,
            r2: t.r2,
            share,
            instances_per_hour: instances,
            detail,
            evidence: p.evidence.clone(),
            text,
            points: thin(&w),
            line,
        });
    }
    grows.sort_by(|a, b| {
        b.share
            .unwrap_or(0.0)
            .total_cmp(&a.share.unwrap_or(0.0))
            .then(b.slope_per_hour.total_cmp(&a.slope_per_hour))
    });
    Parts {
        notes: notes(sv, trends, &grows, from, to),
        grows,
    }
}

/// What a part's instances count, for the parts that have them.
fn counted(k: PartKind) -> Option<&'static str> {
    match k {
        PartKind::HeapClass => Some("instances"),
        PartKind::DirectBuffers => Some("buffers"),
        PartKind::Metaspace => Some("classes"),
        _ => None,
    }
}

/// Arrays counted as a class's payload: `(array class, owner class)`.
fn owners<'a>(classes: &[&'a PartSeries], from: f64, to: f64) -> Vec<(&'a str, &'a str)> {
    let rate = |p: &PartSeries| slope_h(&p.instances, from, to).filter(|r| *r > 0.0);
    let mut out = vec![];
    for a in classes.iter().filter(|c| is_primitive_array(&c.name)) {
        let Some(ra) = rate(a) else { continue };
        let matches: Vec<&str> = classes
            .iter()
            .filter(|c| !c.name.starts_with('['))
            .filter(|c| rate(c).is_some_and(|rc| (rc - ra).abs() <= OWNER_MATCH * ra))
            .map(|c| c.name.as_str())
            .collect();
        // Only one candidate: two classes at the same rate leave the owner unknown.
        if let [owner] = matches.as_slice() {
            out.push((a.name.as_str(), *owner));
        }
    }
    out
}

fn is_primitive_array(c: &str) -> bool {
    let b = c.as_bytes();
    b.len() == 2 && b[0] == b'[' && b"ZBCSIJFD".contains(&b[1])
}

/// `[B` → `byte[]`.
fn java_name(c: &str) -> String {
    let base = match c.as_bytes().get(1) {
        Some(b'Z') => "boolean",
        Some(b'B') => "byte",
        Some(b'C') => "char",
        Some(b'S') => "short",
        Some(b'I') => "int",
        Some(b'J') => "long",
        Some(b'F') => "float",
        Some(b'D') => "double",
        _ => return c.to_string(),
    };
    format!("{base}[]")
}

/// A class's bytes with its payload arrays' added, sample by sample.
fn with_payload(p: &PartSeries, payload: &[&PartSeries]) -> Vec<(f64, f64)> {
    p.points
        .iter()
        .enumerate()
        .map(|(i, (t, v))| {
            let extra: f64 = payload
                .iter()
                .filter_map(|a| a.points.get(i).filter(|q| q.0 == *t).map(|q| q.1))
                .sum();
            (*t, v + extra)
        })
        .collect()
}

/// The Theil–Sen line through `w` at its first and last time.
fn fit_line(w: &[(f64, f64)], slope: f64) -> [(f64, f64); 2] {
    let mut r: Vec<f64> = w.iter().map(|(t, y)| y - slope * t).collect();
    r.sort_by(f64::total_cmp);
    let b = r.get(r.len() / 2).copied().unwrap_or(0.0);
    let (a, z) = (
        w.first().map_or(0.0, |p| p.0),
        w.last().map_or(0.0, |p| p.0),
    );
    [(a, b + slope * a), (z, b + slope * z)]
}

/// At most [`MAX_CHART_POINTS`], evenly spaced, first and last kept.
fn thin(w: &[(f64, f64)]) -> Vec<(f64, f64)> {
    if w.len() <= MAX_CHART_POINTS {
        return w.to_vec();
    }
    (0..MAX_CHART_POINTS)
        .map(|i| w[i * (w.len() - 1) / (MAX_CHART_POINTS - 1)])
        .collect()
}

/// The verdict's line for one part: its name, then its slope.
fn item_text(
    p: &PartSeries,
    slope_h: f64,
    share: Option<f64>,
    detail: Option<&str>,
    classes_kept: bool,
) -> String {
    let rate = match p.kind.unit() {
        series::Unit::Bytes => format!("+{}/h", bytes(slope_h)),
        _ => format!("{}/h", count(slope_h)),
    };
    let of = match p.kind {
        PartKind::HeapClass => "of the live set's growth",
        PartKind::ThreadGroup => "of the threads' growth",
        PartKind::Sockets | PartKind::FdKind => "of the descriptors' growth",
        PartKind::NativeCategory => "of NMT's committed growth",
        PartKind::DirectBuffers | PartKind::Metaspace => "of RSS's growth",
    };
    let share = share
        .map(|s| format!(" ({:.0} % {of})", s * 100.0))
        .unwrap_or_default();
    let (what, tail) = match p.kind {
        PartKind::HeapClass => (format!("heap class `{}`", java_name(&p.name)), None),
        PartKind::ThreadGroup => (format!("threads `{}`", p.name), None),
        PartKind::Sockets if p.name.starts_with("CLOSE_WAIT") => (
            format!("sockets {}", p.name),
            Some("the peer closed them, the application never did"),
        ),
        PartKind::Sockets if p.name.starts_with("ESTABLISHED to ") => (
            format!("sockets {}", p.name),
            Some("opened and never closed: connections kept (a pool that never gets them back, or a client made per request)"),
        ),
        PartKind::Sockets => (format!("sockets {}", p.name), None),
        PartKind::FdKind => (format!("file descriptors `{}`", p.name), None),
        PartKind::NativeCategory => (format!("native memory `{}` (NMT)", p.name), None),
        PartKind::DirectBuffers => ("direct buffers".to_string(), None),
        PartKind::Metaspace => (
            "Metaspace".to_string(),
            classes_kept.then_some(
                "classes loaded and never unloaded: their class loaders stay reachable (a class-loader leak)",
            ),
        ),
    };
    let mut s = format!("{what} {rate}{share}");
    for d in [detail, tail].into_iter().flatten() {
        s.push_str(", ");
        s.push_str(d);
    }
    s
}

/// What the series say beside the parts: a live set that cannot be judged
/// (young collections only), RSS that grows outside the Java heap.
fn notes(
    sv: &ServerEvidence,
    trends: &[Trend],
    grows: &[Growth],
    from: f64,
    to: f64,
) -> Vec<String> {
    let n = |s: Series| {
        sv.series
            .get(s.name)
            .map_or(0, |p| in_window(p, from, to).len())
    };
    let mut out = vec![];
    let full = n(series::JVM_HEAP_AFTER_GC).max(n(series::JVM_LIVE_SET));
    let young = n(series::JVM_HEAP_AFTER_YOUNG_GC);
    if full < MIN_LEAK_POINTS && young > 0 {
        out.push(format!(
            "heap after GC inconclusive: no full collection in the window ({young} young collections, {full} full; heap after a young GC is not the live set — the jvm-memory collector's class histogram forces one)"
        ));
    }
    let flagged = |s: Series| trends.iter().any(|t| t.series == s.name && t.flagged);
    let measured = |s: Series| {
        trends
            .iter()
            .any(|t| t.series == s.name && t.note.is_none())
    };
    let heap = [series::JVM_HEAP_AFTER_GC, series::JVM_LIVE_SET];
    if flagged(series::TARGET_RSS)
        && heap.iter().any(|s| measured(*s))
        && !heap.iter().any(|s| flagged(*s))
        && !grows.iter().any(|g| g.kind == PartKind::HeapClass)
    {
        // How much of RSS's growth the live heap is: none, or a part.
        let slope = |s: Series| {
            trends
                .iter()
                .find(|t| t.series == s.name && t.note.is_none())
                .map(|t| t.slope_per_hour)
        };
        let rss = slope(series::TARGET_RSS).unwrap_or(0.0);
        let live = heap.iter().filter_map(|s| slope(*s)).fold(0.0, f64::max);
        let heap_part = if live > 0.01 * rss {
            format!(
                "of its +{}/h the live heap is +{}/h",
                bytes(rss),
                bytes(live)
            )
        } else {
            "the live heap does not".to_string()
        };
        // NMT ran when its committed total is a series; named or not, the
        // how-to is for a JVM that runs without it.
        let nmt = sv.series.contains_key(series::JVM_NMT_COMMITTED.name);
        out.push(if nmt {
            format!("RSS grows outside the Java heap ({heap_part})")
        } else if sv.nmt_off {
            format!("RSS grows outside the Java heap ({heap_part}); the nmt probe found Native Memory Tracking off in the JVM: to name the native category, start it with -XX:NativeMemoryTracking=summary")
        } else {
            format!("RSS grows outside the Java heap ({heap_part}); no Native Memory Tracking summary was read: to name the native category, start the JVM with -XX:NativeMemoryTracking=summary and add the jvm-memory collector (its nmt probe)")
        });
    }
    out
}

/// Bytes for people: `10.3 KB`, `11.8 GB`.
fn bytes(v: f64) -> String {
    let a = v.abs();
    let (d, u) = if a >= 1e9 {
        (1e9, "GB")
    } else if a >= 1e6 {
        (1e6, "MB")
    } else if a >= 1e3 {
        (1e3, "KB")
    } else {
        (1.0, "B")
    };
    format!("{:.1} {u}", v / d)
}

/// A count per hour for people: `+72,028`, `+1.08 M`.
fn count(v: f64) -> String {
    let sign = if v < 0.0 { "-" } else { "+" };
    let a = v.abs();
    if a >= 1e6 {
        return format!("{sign}{:.2} M", a / 1e6);
    }
    let n = a.round() as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(kind: PartKind, name: &str, f: impl Fn(f64) -> f64) -> PartSeries {
        PartSeries {
            kind,
            name: name.into(),
            points: (0..14)
                .map(|i| (i as f64 * 5.0, f(i as f64 * 5.0)))
                .collect(),
            instances: vec![],
            detail: None,
            evidence: "diagnostics/x".into(),
        }
    }

    #[test]
    fn a_class_with_its_payload_is_named_with_its_share() {
        let th = LeakThresholds::default();
        // 100 entries/s, 32 B each, each holding a 10,000-B byte[].
        let mut entry = part(PartKind::HeapClass, "com.acme.CacheEntry", |t| {
            32.0 * 100.0 * t
        });
        entry.instances = entry.points.iter().map(|(t, _)| (*t, 100.0 * t)).collect();
        let mut arr = part(PartKind::HeapClass, "[B", |t| 1e6 + 1e4 * 100.0 * t);
        arr.instances = arr
            .points
            .iter()
            .map(|(t, _)| (*t, 5000.0 + 100.0 * t))
            .collect();
        let flat = part(PartKind::HeapClass, "java.lang.String", |t| 1e5 + (t % 2.0));
        let mut sv = ServerEvidence::default();
        sv.series.insert(
            series::JVM_LIVE_SET.name.into(),
            (0..14)
                .map(|i| (i as f64 * 5.0, 5e6 + 10_032.0 * 100.0 * i as f64 * 5.0))
                .collect(),
        );
        sv.parts = vec![entry, arr, flat];
        let p = judge(Some(&sv), &[], 0.0, 70.0, &th);
        assert_eq!(p.grows.len(), 1, "{:?}", p.grows);
        let g = &p.grows[0];
        assert_eq!(g.name, "com.acme.CacheEntry");
        assert!(
            (g.slope_per_hour - 10_032.0 * 100.0 * 3600.0).abs() < 1.0,
            "{g:?}"
        );
        assert!(g.share.is_some_and(|s| s > 0.99), "{g:?}");
        assert!(
            g.text.starts_with("heap class `com.acme.CacheEntry` +3.6 GB/h (100 % of the live set's growth), +360,000 instances/h, 10.0 KB each, with its byte[]"),
            "{}",
            g.text
        );
    }

    #[test]
    fn young_collections_only_are_inconclusive() {
        let mut sv = ServerEvidence::default();
        sv.series.insert(
            series::JVM_HEAP_AFTER_YOUNG_GC.name.into(),
            (0..30).map(|i| (i as f64 * 2.0, 1e6 * i as f64)).collect(),
        );
        let p = judge(Some(&sv), &[], 0.0, 70.0, &LeakThresholds::default());
        assert!(p.grows.is_empty());
        assert!(
            p.notes[0].contains("no full collection in the window"),
            "{:?}",
            p.notes
        );
    }

    #[test]
    fn rss_outside_the_heap_is_said_with_how_to_see_more() {
        // The live heap grows too, below its threshold.
        let th = LeakThresholds {
            heap_after_gc: crate::vocab::units::PerHour(1e9),
            ..Default::default()
        };
        let line = |per_s: f64| -> Vec<(f64, f64)> {
            (0..30)
                .map(|i| (i as f64 * 3.0, 1e8 + per_s * i as f64 * 3.0))
                .collect()
        };
        let notes = |sv: &ServerEvidence| {
            let trends: Vec<Trend> = sv
                .series
                .iter()
                .map(|(k, p)| trend(k, p, 0.0, 90.0, &th))
                .collect();
            judge(Some(sv), &trends, 0.0, 90.0, &th).notes
        };
        let mut sv = ServerEvidence::default();
        sv.series.insert(series::TARGET_RSS.name.into(), line(1e6));
        sv.series
            .insert(series::JVM_LIVE_SET.name.into(), line(1e5));
        assert_eq!(
            notes(&sv),
            vec!["RSS grows outside the Java heap (of its +3.6 GB/h the live heap is +360.0 MB/h); no Native Memory Tracking summary was read: to name the native category, start the JVM with -XX:NativeMemoryTracking=summary and add the jvm-memory collector (its nmt probe)"]
        );
        // The probe ran and NMT is off in the JVM: only the flag is missing.
        sv.nmt_off = true;
        assert_eq!(
            notes(&sv),
            vec!["RSS grows outside the Java heap (of its +3.6 GB/h the live heap is +360.0 MB/h); the nmt probe found Native Memory Tracking off in the JVM: to name the native category, start it with -XX:NativeMemoryTracking=summary"]
        );
        // With NMT read, and a live heap that holds still: said shorter.
        sv.series
            .insert(series::JVM_LIVE_SET.name.into(), line(0.0));
        sv.series
            .insert(series::JVM_NMT_COMMITTED.name.into(), line(1e6));
        assert_eq!(
            notes(&sv),
            vec!["RSS grows outside the Java heap (the live heap does not)"]
        );
    }

    #[test]
    fn counts_read_as_people_write_them() {
        assert_eq!(count(72_028.4), "+72,028");
        assert_eq!(count(1_080_000.0), "+1.08 M");
        assert_eq!(count(999.0), "+999");
        assert_eq!(bytes(10_300.0), "10.3 KB");
    }
}
