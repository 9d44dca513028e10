//! Findings from a JFR recording: contention and pinning sites, heap after
//! GC, hot methods.

use std::collections::BTreeMap;

use super::finding::{Detail, Evidence, Finding, Severity};
use crate::diagnosis::jfr::{HeapSample, JfrRecording, JfrSite};

/// Contention, pinning, heap and hot methods from one JFR recording.
pub fn jfr_findings(r: &JfrRecording) -> Vec<Finding> {
    let mut out = contention_sites(r);
    out.extend(r.pinned.iter().map(|s| pinned_site(r, s)));
    out.extend(heap_after_gc(r));
    out.extend(hot_methods(r));
    out
}

fn jfr_evidence(r: &JfrRecording, unix: Option<f64>) -> Evidence {
    Evidence {
        file: r.source.clone(),
        time_unix: unix,
        time: unix.map(|u| {
            chrono::DateTime::from_timestamp_millis((u * 1000.0) as i64)
                .map(|t| t.to_rfc3339())
                .unwrap_or_default()
        }),
        ..Evidence::default()
    }
}

/// The ten heaviest non-idle sites of each phase (of the whole recording without phases).
fn contention_sites(r: &JfrRecording) -> Vec<Finding> {
    let mut per_phase: BTreeMap<Option<&str>, usize> = BTreeMap::new();
    let mut out = vec![];
    // A pinned virtual thread parks its carrier (`parkOnCarrierThread`):
    // that park is the pinning finding's fact, not a second one.
    let pinned_park = |s: &JfrSite| {
        s.event == "jdk.ThreadPark"
            && s.stack
                .iter()
                .any(|f| f.contains("VirtualThread.parkOnCarrierThread"))
            && r.pinned
                .iter()
                .any(|p| p.site == s.site && p.phase == s.phase)
    };
    for s in r.sites.iter().filter(|s| !s.idle && !pinned_park(s)) {
        let n = per_phase.entry(s.phase.as_deref()).or_default();
        *n += 1;
        if *n <= 10 {
            out.push(contention_site(r, s));
        }
    }
    out
}

fn contention_site(r: &JfrRecording, s: &JfrSite) -> Finding {
    let what = match s.event.as_str() {
        "jdk.JavaMonitorEnter" => "blocked entering",
        "jdk.JavaMonitorWait" => "waited on",
        _ => "parked on",
    };
    let class = s.class.as_deref().unwrap_or("?");
    let owners = s
        .previous_owners
        .first()
        .map(|(o, _)| format!(", mostly after `{o}`"))
        .unwrap_or_default();
    let severity = if s.event == "jdk.JavaMonitorEnter" && s.total_ms >= 1000.0 {
        Severity::High
    } else if s.total_ms >= 1000.0 {
        Severity::Medium
    } else {
        Severity::Low
    };
    Finding {
        severity,
        summary: format!(
            "{} × {what} `{class}` at `{}`: {:.0} ms total, max {:.0} ms{owners}",
            s.count, s.site, s.total_ms, s.max_ms
        ),
        key: format!("jfr:{}:{class}:{}", s.event, s.site),
        evidence: Evidence {
            phase: s.phase.clone(),
            ..jfr_evidence(r, Some(s.first_unix))
        },
        detail: Detail::JfrContention {
            event: s.event.clone(),
            class: s.class.clone(),
            site: s.site.clone(),
            count: s.count,
            total_ms: s.total_ms,
            max_ms: s.max_ms,
            previous_owners: s.previous_owners.clone(),
            stack: s.stack.clone(),
        },
    }
}

fn pinned_site(r: &JfrRecording, s: &JfrSite) -> Finding {
    Finding {
        severity: if s.count >= 100 || s.total_ms >= 1000.0 {
            Severity::High
        } else {
            Severity::Medium
        },
        summary: format!(
            "{} virtual-thread pinning events at `{}`: {:.0} ms pinned in total",
            s.count, s.site, s.total_ms
        ),
        key: format!("pin:{}", s.site),
        evidence: Evidence {
            phase: s.phase.clone(),
            ..jfr_evidence(r, Some(s.first_unix))
        },
        detail: Detail::Pinning {
            site: s.site.clone(),
            // jdk.VirtualThreadPinned does not say which frame holds the monitor
            // (the pinning trace does): leave it unknown rather than guess.
            monitor_frame: None,
            count: s.count,
            total_ms: Some(s.total_ms),
            stack: s.stack.clone(),
            from: "jfr".into(),
        },
    }
}

fn heap_after_gc(r: &JfrRecording) -> Option<Finding> {
    let after: Vec<&HeapSample> = r.heap.iter().filter(|h| h.when == "After GC").collect();
    let (first, last) = (after.first()?, after.last()?);
    let max = after.iter().map(|h| h.heap_used).max().unwrap_or(0);
    Some(Finding {
        severity: Severity::Info,
        summary: format!(
            "heap after GC: {} → {} MiB over {} collections (max {} MiB)",
            first.heap_used >> 20,
            last.heap_used >> 20,
            after.len(),
            max >> 20
        ),
        key: "jfr:heap-after-gc".into(),
        evidence: jfr_evidence(r, Some(first.unix)),
        detail: Detail::HeapAfterGc {
            samples: after.len(),
            first_bytes: first.heap_used,
            last_bytes: last.heap_used,
            max_bytes: max,
        },
    })
}

/// The hottest *application* methods: JFR's and the JDK's own frames are
/// where an application method spends its time, not what the user can
/// change, so they are named beneath it (`in Thread.sleep`), not instead.
fn hot_methods(r: &JfrRecording) -> Option<Finding> {
    if r.hot_methods.is_empty() {
        return None;
    }
    let top: Vec<(String, u64)> = r.hot_methods.iter().take(10).cloned().collect();
    let pct = |n: u64| 100.0 * n as f64 / r.samples.max(1) as f64;
    let summary = match r.hot_self.first() {
        Some(h) => {
            let beneath = h
                .jdk_top
                .as_ref()
                .filter(|(_, n)| *n * 2 >= h.samples)
                .map(|(f, _)| format!(", mostly in `{f}`"))
                .unwrap_or_default();
            let total = r
                .hot_total
                .first()
                .filter(|(m, _)| *m != h.method)
                .map(|(m, n)| format!("; most on stack: `{m}` ({:.0}%)", pct(*n)))
                .unwrap_or_default();
            format!(
                "hottest application method: `{}` ({} of {} samples, {:.0}%{beneath}){total}",
                h.method,
                h.samples,
                r.samples,
                pct(h.samples)
            )
        }
        None => format!(
            "no application frame in {} samples; hottest JDK method `{}`",
            r.samples,
            top.first().map(|t| t.0.as_str()).unwrap_or("")
        ),
    };
    Some(Finding {
        severity: Severity::Info,
        summary,
        key: "jfr:hot-methods".into(),
        evidence: jfr_evidence(r, r.start_unix),
        detail: Detail::HotMethods {
            methods: top,
            samples: r.samples,
            app_self: r.hot_self.iter().take(10).cloned().collect(),
            app_total: r.hot_total.iter().take(10).cloned().collect(),
        },
    })
}
