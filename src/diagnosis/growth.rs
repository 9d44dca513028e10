//! The parts of a target a soak watches grow, read from what the collectors
//! captured: class histograms through the run become one series per class
//! (bytes and instances) and the live set; thread dumps become one series
//! per thread-name group ([`super::thread_groups`]); NMT summaries one per
//! native category and their committed total; JFR's direct-buffer,
//! Metaspace and class-loading events the direct buffer pool and Metaspace
//! (each with its count: buffers, loaded classes). The judge decides what of it
//! grows (`judge::growth`); this file only lines the samples up.
//!
//! Young and full collections are told apart by the collector's name in
//! JFR's `jdk.GarbageCollection` event, joined to `jdk.GCHeapSummary` by GC
//! id: the recording the `jvm` collector already takes has both, so no
//! further probe (or GC log) is needed, and it holds for every collector
//! (G1, Serial, Parallel, ZGC, Shenandoah) by name. Heap after a *young*
//! GC creeps up while the old generation fills with garbage the next full
//! GC frees; only full (and old) collections — and the full collection each
//! class histogram forces — measure the live set.

use std::collections::{BTreeMap, BTreeSet};

use super::jfr::{HeapSample, JvmGauges};
use super::memory::{ClassHistogram, NativeMemory};
use super::thread_groups::ThreadGroup;
use super::Analysis;
use crate::vocab::growth::{line_up, GrowthSample, PartKind, PartSeries};
use crate::vocab::series;

/// A class histogram or an NMT summary read from one file.
#[derive(Debug, Clone, PartialEq)]
pub enum MemoryReport {
    Histogram(ClassHistogram),
    Native(NativeMemory),
    /// `VM.native_memory` answered that tracking is off.
    NativeOff,
}

/// One [`MemoryReport`] with where and when it was taken.
#[derive(Debug, Clone, PartialEq)]
pub struct MemorySample {
    /// The file's name (`class-histogram-t0012.0-soak-001.txt`).
    pub file: String,
    /// Seconds since the run start, from the artifact's name (`None` for a
    /// file brunt did not name: it cannot be placed on the run's clock).
    pub at_s: Option<f64>,
    pub report: MemoryReport,
}

/// One dump's thread groups.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GroupSample {
    pub file: String,
    /// The dump's index in its file.
    #[serde(default)]
    pub index: usize,
    pub time_unix: Option<f64>,
    /// A JSON dump (JDK 21+, taken beside the text one): used only when a
    /// run has no text dumps, so two formats' counts never interleave.
    pub json: bool,
    pub groups: Vec<ThreadGroup>,
}

/// Classes kept per run: those whose bytes grew most from the first to the
/// last histogram, and the largest in the last one. A leak's class is in
/// the first set, so evidence stays small whatever the heap holds.
const KEEP_GROWING: usize = 20;
const KEEP_LARGEST: usize = 5;
/// Thread groups and NMT categories kept: the most grown.
const KEEP_GROUPS: usize = 10;

/// Whether a GC was a young collection, by its collector's name; a GC whose
/// collector is unknown (a recording without `jdk.GarbageCollection`)
/// counts as full, as every GC did before the names were read.
pub fn is_young(h: &HeapSample) -> bool {
    h.gc.as_deref().is_some_and(|n| {
        ["New", "Scavenge", "Minor", "Young"]
            .iter()
            .any(|w| n.contains(w))
    })
}

/// The growth evidence of an analysis on the run's clock (`start_unix` is
/// the run's start): the live set and NMT total as series, and the parts.
pub fn add_to(
    a: &Analysis,
    start_unix: f64,
    series: &mut BTreeMap<String, Vec<(f64, f64)>>,
    parts: &mut Vec<PartSeries>,
) {
    let mut hists: Vec<(f64, &ClassHistogram)> = vec![];
    let mut nmts: Vec<(f64, &NativeMemory)> = vec![];
    let mut files: BTreeMap<PartKind, BTreeSet<String>> = BTreeMap::new();
    for m in &a.memory {
        let Some(t) = m.at_s else { continue };
        match &m.report {
            MemoryReport::Histogram(h) => {
                hists.push((t, h));
                files
                    .entry(PartKind::HeapClass)
                    .or_default()
                    .insert(m.file.clone());
            }
            MemoryReport::Native(n) => {
                nmts.push((t, n));
                files
                    .entry(PartKind::NativeCategory)
                    .or_default()
                    .insert(m.file.clone());
            }
            MemoryReport::NativeOff => {}
        }
    }
    hists.sort_by(|a, b| a.0.total_cmp(&b.0));
    nmts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let evidence = |k: PartKind| evidence_of(files.get(&k));
    for (t, h) in &hists {
        push(series, series::JVM_LIVE_SET.name, *t, h.total_bytes as f64);
    }
    for (t, n) in &nmts {
        push(
            series,
            series::JVM_NMT_COMMITTED.name,
            *t,
            n.committed_bytes as f64,
        );
    }
    parts.extend(class_parts(&hists, &evidence(PartKind::HeapClass)));
    parts.extend(gauge_parts(&a.gauges, start_unix, series));
    let cats: Vec<GrowthSample> = nmts
        .iter()
        .map(|(t, n)| {
            let m = n
                .categories
                .iter()
                .filter(|c| c.name != "Java Heap")
                .map(|c| (c.name.clone(), (c.committed_bytes as f64, None)))
                .collect();
            (*t, m)
        })
        .collect();
    parts.extend(line_up(
        PartKind::NativeCategory,
        &cats,
        &evidence(PartKind::NativeCategory),
        KEEP_GROUPS,
    ));
    let mut dump_files = BTreeSet::new();
    let text = a.thread_groups.iter().any(|g| !g.json);
    let mut groups: Vec<GrowthSample> = a
        .thread_groups
        .iter()
        .filter(|g| g.json != text)
        .filter_map(|g| {
            // The dump's time as the analysis has it (retimed to when it was
            // asked for: a text dump's header has whole seconds only).
            let retimed = a
                .dumps
                .iter()
                .find(|d| d.file == g.file && d.index == g.index)
                .and_then(|d| d.time_unix);
            let t = retimed.or(g.time_unix)? - start_unix;
            dump_files.insert(g.file.clone());
            let m = g
                .groups
                .iter()
                .map(|x| {
                    let detail = match &x.top_frame {
                        Some((f, _)) => format!("{} in {f}", x.state.as_str()),
                        None => x.state.as_str().to_string(),
                    };
                    (x.pattern.clone(), (x.count as f64, Some(detail)))
                })
                .collect();
            Some((t.max(0.0), m))
        })
        .collect();
    groups.sort_by(|x, y| x.0.total_cmp(&y.0));
    parts.extend(line_up(
        PartKind::ThreadGroup,
        &groups,
        &evidence_of(Some(&dump_files)),
        KEEP_GROUPS,
    ));
}

/// JFR's direct buffer pool and Metaspace as series and as parts, each part
/// with its count (buffers, loaded classes) as its instances.
fn gauge_parts(
    g: &JvmGauges,
    start_unix: f64,
    series: &mut BTreeMap<String, Vec<(f64, f64)>>,
) -> Vec<PartSeries> {
    let at = |u: f64| (u - start_unix).max(0.0);
    let direct: Vec<(f64, f64, f64)> = g
        .direct_buffers
        .iter()
        .map(|(u, n, b)| (at(*u), *n as f64, *b as f64))
        .collect();
    let meta: Vec<(f64, f64)> = g
        .metaspace
        .iter()
        .map(|(u, b)| (at(*u), *b as f64))
        .collect();
    let classes: Vec<(f64, f64)> = g.classes.iter().map(|(u, n)| (at(*u), *n as f64)).collect();
    for (t, n, b) in &direct {
        push(series, series::JVM_DIRECT_BUFFER_BYTES.name, *t, *b);
        push(series, series::JVM_DIRECT_BUFFERS.name, *t, *n);
    }
    for (t, b) in &meta {
        push(series, series::JVM_METASPACE.name, *t, *b);
    }
    for (t, n) in &classes {
        push(series, series::JVM_CLASSES.name, *t, *n);
    }
    let part = |kind, name: &str, points: Vec<(f64, f64)>, instances, evidence: &str| PartSeries {
        kind,
        name: name.to_string(),
        points,
        instances,
        detail: None,
        evidence: evidence.to_string(),
    };
    let mut out = vec![];
    if !direct.is_empty() {
        out.push(part(
            PartKind::DirectBuffers,
            "direct",
            direct.iter().map(|(t, _, b)| (*t, *b)).collect(),
            direct.iter().map(|(t, n, _)| (*t, *n)).collect(),
            "diagnostics/*.jfr (jdk.DirectBufferStatistics)",
        ));
    }
    if !meta.is_empty() {
        out.push(part(
            PartKind::Metaspace,
            "Metaspace",
            meta,
            classes,
            "diagnostics/*.jfr (jdk.MetaspaceSummary, jdk.ClassLoadingStatistics)",
        ));
    }
    out
}

fn push(series: &mut BTreeMap<String, Vec<(f64, f64)>>, name: &str, t: f64, v: f64) {
    series.entry(name.to_string()).or_default().push((t, v));
}

/// `diagnostics/a.txt … (12 files)`: where a part's samples came from.
fn evidence_of(files: Option<&BTreeSet<String>>) -> String {
    let name = |f: &String| {
        let n = std::path::Path::new(f)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| f.clone());
        format!("diagnostics/{n}")
    };
    match files.map(|f| (f.first(), f.last(), f.len())) {
        Some((Some(a), _, 1)) => name(a),
        Some((Some(a), Some(b), n)) => format!("{} … {} ({n} files)", name(a), name(b)),
        _ => String::new(),
    }
}

/// One series per kept class, bytes and instances, 0 where a histogram
/// lists it not (a histogram lists every class with a live instance).
fn class_parts(hists: &[(f64, &ClassHistogram)], evidence: &str) -> Vec<PartSeries> {
    let (Some((_, first)), Some((_, last))) = (hists.first(), hists.last()) else {
        return vec![];
    };
    let bytes = |h: &ClassHistogram, c: &str| h.class(c).map_or(0, |r| r.bytes) as i128;
    let mut grown: Vec<(&str, i128)> = last
        .rows
        .iter()
        .map(|r| (r.class.as_str(), r.bytes as i128 - bytes(first, &r.class)))
        .collect();
    grown.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut keep: Vec<&str> = grown.iter().take(KEEP_GROWING).map(|(c, _)| *c).collect();
    for r in last.rows.iter().take(KEEP_LARGEST) {
        if !keep.contains(&r.class.as_str()) {
            keep.push(&r.class);
        }
    }
    keep.into_iter()
        .map(|c| {
            let at = |h: &ClassHistogram| h.class(c).map_or((0, 0), |r| (r.bytes, r.instances));
            PartSeries {
                kind: PartKind::HeapClass,
                name: c.to_string(),
                points: hists.iter().map(|(t, h)| (*t, at(h).0 as f64)).collect(),
                instances: hists.iter().map(|(t, h)| (*t, at(h).1 as f64)).collect(),
                detail: None,
                evidence: evidence.to_string(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heap(gc: Option<&str>) -> HeapSample {
        HeapSample {
            unix: 0.0,
            gc_id: 1,
            when: "After GC".into(),
            heap_used: 1,
            gc: gc.map(str::to_string),
        }
    }

    #[test]
    fn young_collections_by_collector_name() {
        for young in ["G1New", "DefNew", "ParNew", "ParallelScavenge", "ZGC Minor"] {
            assert!(is_young(&heap(Some(young))), "{young}");
        }
        for full in [
            "G1Full",
            "G1Old",
            "SerialOld",
            "ParallelOld",
            "ZGC",
            "ZGC Major",
            "Shenandoah",
        ] {
            assert!(!is_young(&heap(Some(full))), "{full}");
        }
        assert!(!is_young(&heap(None)));
    }

    #[test]
    fn classes_line_up_with_zeros_where_absent() {
        let h = |rows: &[(&str, u64, u64)]| ClassHistogram {
            rows: rows
                .iter()
                .map(|(c, i, b)| super::super::memory::ClassRow {
                    class: c.to_string(),
                    instances: *i,
                    bytes: *b,
                })
                .collect(),
            total_instances: rows.iter().map(|r| r.1).sum(),
            total_bytes: rows.iter().map(|r| r.2).sum(),
        };
        let a = h(&[("[B", 10, 1000), ("java.lang.String", 10, 240)]);
        let b = h(&[
            ("[B", 20, 2000),
            ("java.lang.String", 10, 240),
            ("com.acme.E", 5, 80),
        ]);
        let parts = class_parts(&[(1.0, &a), (2.0, &b)], "diagnostics/h.txt");
        let e = parts
            .iter()
            .find(|p| p.name == "com.acme.E")
            .expect("new class kept");
        assert_eq!(e.points, vec![(1.0, 0.0), (2.0, 80.0)]);
        assert_eq!(e.instances, vec![(1.0, 0.0), (2.0, 5.0)]);
        assert_eq!(parts[0].name, "[B", "most grown first");
    }
}
