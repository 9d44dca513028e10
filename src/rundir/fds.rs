//! `diagnostics/fds.jsonl` (the `proc-fds` probe's rows) as growth
//! evidence: one part per socket set (state × peer) and per descriptor
//! kind, lined up over the run.

use std::collections::BTreeMap;
use std::path::Path;

use super::{DIAGNOSTICS, FD_SAMPLES};
use crate::vocab::growth::{line_up, FdRow, GrowthSample, PartKind, PartSeries};
use crate::vocab::samples::{ProbeRow, Stamped};

/// Parts kept per kind: the most grown.
const KEEP: usize = 10;

/// The socket sets and descriptor kinds of the run's fd census.
pub fn parts(dir: &Path) -> Vec<PartSeries> {
    let path = dir.join(DIAGNOSTICS).join(FD_SAMPLES);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return vec![];
    };
    let mut sockets: Vec<GrowthSample> = vec![];
    let mut kinds: Vec<GrowthSample> = vec![];
    for line in text.lines() {
        // A torn or foreign line is skipped (a killed run may end mid-line).
        let Ok(Stamped { t, row, .. }) = serde_json::from_str::<Stamped<ProbeRow<FdRow>>>(line)
        else {
            continue;
        };
        let row = row.sample;
        if row.kinds.is_empty() {
            continue; // no target process: no census (not a process with no descriptors)
        }
        let mut s: BTreeMap<String, (f64, Option<String>)> = BTreeMap::new();
        for c in &row.sockets {
            s.entry(c.part_name()).or_insert((0.0, None)).0 += c.count as f64;
        }
        sockets.push((t, s));
        let k = row
            .kinds
            .iter()
            .filter(|(k, _)| k.as_str() != "socket") // told apart above
            .map(|(k, n)| (k.clone(), (*n as f64, None)))
            .collect();
        kinds.push((t, k));
    }
    sockets.sort_by(|a, b| a.0.total_cmp(&b.0));
    kinds.sort_by(|a, b| a.0.total_cmp(&b.0));
    let evidence = format!("{DIAGNOSTICS}/{FD_SAMPLES}");
    let mut out = line_up(PartKind::Sockets, &sockets, &evidence, KEEP);
    out.extend(line_up(PartKind::FdKind, &kinds, &evidence, KEEP));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockets_by_state_and_peer_line_up() {
        let dir = tempfile::tempdir().expect("tempdir");
        let diag = dir.path().join(DIAGNOSTICS);
        std::fs::create_dir_all(&diag).expect("mkdir");
        let rows = [
            r#"{"t":1.0,"phase":"soak","kinds":{"socket":3,"pipe":2},"sockets":[{"inbound":true,"state":"LISTEN","local_port":8080,"peer":"0.0.0.0","count":1}]}"#,
            // No target process then: no census, skipped.
            r#"{"t":3.0,"phase":"soak","kinds":{},"sockets":[]}"#,
            r#"{"t":6.0,"phase":"soak","kinds":{"socket":13,"pipe":2},"sockets":[{"inbound":false,"state":"CLOSE_WAIT","peer":"127.0.0.1:9000","count":10}]}"#,
            r#"{"t":11.0,"#,
        ];
        std::fs::write(diag.join(FD_SAMPLES), rows.join("\n")).expect("write");
        let p = parts(dir.path());
        let cw = p
            .iter()
            .find(|p| p.name == "CLOSE_WAIT to 127.0.0.1:9000")
            .expect("close_wait part");
        assert_eq!(cw.kind, PartKind::Sockets);
        assert_eq!(cw.points, vec![(1.0, 0.0), (6.0, 10.0)]);
        let pipe = p.iter().find(|p| p.name == "pipe").expect("pipes");
        assert_eq!(pipe.points, vec![(1.0, 2.0), (6.0, 2.0)]);
        assert!(!p.iter().any(|p| p.name == "socket"));
    }
}
