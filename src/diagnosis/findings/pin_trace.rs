//! Findings from `-Djdk.tracePinnedThreads` output: one per pinning site.

use std::collections::BTreeMap;

use super::finding::{Detail, Evidence, Finding, Severity};
use crate::diagnosis::jfr::site_of;
use crate::diagnosis::model::Frame;
use crate::diagnosis::pinning::PinEvent;

/// Pinning sites from `-Djdk.tracePinnedThreads` output (sites, not counts).
pub fn pinning_findings(events: &[PinEvent]) -> Vec<Finding> {
    let mut by_site: BTreeMap<String, (Vec<&PinEvent>, Option<String>)> = BTreeMap::new();
    for e in events {
        let site = site_of(&e.frames);
        let mon = e
            .monitor_frames
            .first()
            .and_then(|(i, _)| e.frames.get(*i))
            .map(Frame::display);
        by_site.entry(site).or_insert((vec![], mon)).0.push(e);
    }
    by_site
        .into_iter()
        .map(|(site, (es, mon))| {
            let first = es.first().copied();
            Finding {
                severity: Severity::Medium,
                summary: format!(
                    "virtual thread pinned at `{site}`{} ({} trace{}; the JVM prints each stack once)",
                    mon.as_deref().map(|m| format!(", monitor held in `{m}`")).unwrap_or_default(),
                    es.len(),
                    if es.len() == 1 { "" } else { "s" }
                ),
                key: format!("pin:{site}"),
                evidence: Evidence {
                    file: first.map(|e| e.source.clone()).unwrap_or_default(),
                    threads: es.iter().map(|e| e.thread.clone()).collect(),
                    ..Evidence::default()
                },
                detail: Detail::Pinning {
                    site,
                    monitor_frame: mon,
                    count: es.len() as u64,
                    total_ms: None,
                    stack: first
                        .map(|e| e.frames.iter().take(16).map(Frame::display).collect())
                        .unwrap_or_default(),
                    from: "trace".into(),
                },
            }
        })
        .collect()
}
