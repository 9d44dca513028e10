//! `report.html`'s "What grows" section: one line per thing the soak
//! verdict named (a heap class, a thread group, sockets to a peer, an fd
//! kind, a native category, direct buffers, Metaspace) and a chart of its samples with the trend line
//! the verdict was judged on. Drawn from the verdict alone
//! (`soak.grows`), so it reads no file.

use std::fmt::Write as _;

use super::charts::{esc, fmt_num, linear, Chart, Line};
use crate::judge::SoakVerdict;
use crate::vocab::growth::PartKind;
use crate::vocab::series::Unit;

/// The section, after the soak's trends table; nothing when nothing grows.
pub(super) fn section(o: &mut String, so: &SoakVerdict) {
    if so.grows.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "<h3 id=\"what-grows\">What grows</h3><p class=\"meta\">each named part of the target judged like the series above (Theil–Sen per hour through the window and in each half, R², noise); the line is the trend the verdict was judged on</p><ul>"
    );
    for g in &so.grows {
        let _ = writeln!(
            o,
            "<li><b>{}</b> <span class=\"meta\">R² {:.2} · from {}</span></li>",
            esc(&g.text),
            g.r2,
            esc(&g.evidence)
        );
    }
    let _ = writeln!(o, "</ul>");
    for (i, g) in so.grows.iter().enumerate() {
        let id = format!("grows-{i}");
        let (a, z) = (g.line[0].0, g.line[1].0);
        let chart = Chart {
            id: &id,
            // The direct buffer pool and Metaspace are one each: their label says it.
            title: match g.kind {
                PartKind::DirectBuffers | PartKind::Metaspace => g.kind.label().to_string(),
                _ => format!("{} {}", g.kind.label(), g.name),
            },
            x_desc: "time since start",
            y_desc: match g.unit {
                Unit::Bytes => "bytes".into(),
                _ => "count".into(),
            },
            x: (a.min(z), z.max(a + 1.0)),
            lines: vec![
                Line {
                    name: "samples".into(),
                    pts: g.points.clone(),
                },
                Line {
                    name: "trend".into(),
                    pts: g.line.to_vec(),
                },
            ],
            bands: &[],
            x_fmt: None,
            x_labels: 8,
            y_labels: 6,
            y_fmt: &fmt_num,
        };
        match linear(&chart) {
            Ok(svg) => o.push_str(&svg),
            Err(e) => {
                let _ = writeln!(
                    o,
                    "<p class=\"na\">chart not drawn: {}</p>",
                    esc(&e.to_string())
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::LeakStatus;
    use crate::vocab::growth::{Growth, PartKind};

    #[test]
    fn a_chart_per_growing_part_with_its_trend() {
        let pts: Vec<(f64, f64)> = (0..12)
            .map(|i| (6.0 + i as f64 * 5.0, 1e6 * i as f64))
            .collect();
        let so = SoakVerdict {
            status: LeakStatus::Leak,
            window_start_s: 6.0,
            window_end_s: 68.0,
            trends: vec![],
            p99_first_ms: None,
            p99_last_ms: None,
            p99_drift: None,
            p99_drift_limit: 1.0,
            text: String::new(),
            grows: vec![Growth {
                kind: PartKind::HeapClass,
                name: "com.acme.CacheEntry".into(),
                unit: Unit::Bytes,
                slope_per_hour: 7.2e8,
                r2: 1.0,
                share: Some(1.0),
                instances_per_hour: None,
                detail: None,
                evidence: "diagnostics/h.txt".into(),
                text: "heap class `com.acme.CacheEntry` +720.0 MB/h".into(),
                line: [(6.0, 0.0), (61.0, 1.1e7)],
                points: pts,
            }],
        };
        let mut o = String::new();
        section(&mut o, &so);
        assert!(
            o.contains("What grows") && o.contains("com.acme.CacheEntry"),
            "{o}"
        );
        assert!(o.contains("<figure id=\"grows-0\"><svg"), "{o}");
        let legend = o.split("<svg").nth(1).unwrap_or_default();
        assert!(legend.contains(">\ntrend\n</text>"), "no trend legend");
        let mut none = String::new();
        section(
            &mut none,
            &SoakVerdict {
                grows: vec![],
                ..so
            },
        );
        assert!(none.is_empty());
    }
}
