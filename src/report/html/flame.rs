//! The flame-graph section of `report.html`: the run's CPU and waiting
//! graphs (every recording's `.folded` stacks beside it in `diagnostics/`,
//! as `rundir` read them, added), and for a stress run the differential graphs from the last step
//! within budget to the first breaking step — what the service started
//! burning or waiting on at the knee. Embedded as `<img>` of a script-free
//! SVG (the page runs no script); the interactive per-phase files beside the
//! recording are linked.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use base64::Engine as _;

use super::esc;
use crate::diagnosis::flame::{self, file_part};
use crate::diagnosis::jfr::FlameKind;
use crate::judge::Summary;
use crate::rundir::{self, data::FlameFile};

type Stacks = BTreeMap<String, u64>;
/// (phase, kind) → stacks; `None` = the whole recording.
type Graphs = BTreeMap<(Option<String>, FlameKind), Stacks>;

/// The `.folded` files as (phase, kind) → stacks added over recordings
/// (`None` = whole recording), and the files whose name the diagnosis wrote.
fn graphs(files: &[FlameFile]) -> (Graphs, Vec<&FlameFile>) {
    let mut m: Graphs = BTreeMap::new();
    let mut named = vec![];
    for f in files {
        let Some((_, phase, kind)) = flame::parse_name(&f.name) else {
            continue;
        };
        let e = m.entry((phase, kind)).or_default();
        *e = flame::merge([&*e, &flame::parse_folded(&f.text)]);
        named.push(f);
    }
    (m, named)
}

fn figure(o: &mut String, id: &str, caption: &str, svg: &str) {
    let b64 = base64::engine::general_purpose::STANDARD.encode(svg.as_bytes());
    let _ = writeln!(
        o,
        "<figure id=\"{id}\"><img style=\"width:100%\" alt=\"{}\" src=\"data:image/svg+xml;base64,{b64}\"><figcaption>{}</figcaption></figure>",
        esc(caption),
        esc(caption)
    );
}

/// Writes the section when the run left flame-graph stacks; nothing otherwise.
pub(super) fn section(o: &mut String, s: &Summary, flames: &[FlameFile]) {
    let (graphs, files) = graphs(flames);
    if graphs.is_empty() {
        return;
    }
    let _ = writeln!(o, "<h2>Flame graphs</h2>");
    for kind in [FlameKind::Cpu, FlameKind::Wait] {
        if let Some(st) = graphs.get(&(None, kind)) {
            let title = format!(
                "{}: whole run, {} {}",
                flame::kind_title(kind),
                flame::total(st),
                kind.unit()
            );
            if let Ok(svg) = flame::svg(st, &title, kind, false) {
                figure(o, &format!("flame-{}", kind.as_str()), &title, &svg);
            }
        }
    }
    let knee = s
        .verdicts
        .as_ref()
        .and_then(|v| v.stress.as_ref())
        .and_then(|st| Some((st.capacity_step.clone()?, st.first_breach.clone()?)));
    if let Some((last_ok, first_bad)) = knee {
        // The recording spans the run: a step without stacks of a kind had
        // none (no wait over JFR's threshold), so it compares as empty.
        let empty = Stacks::new();
        for kind in [FlameKind::Wait, FlameKind::Cpu] {
            let get = |p: &str| graphs.get(&(Some(file_part(p)), kind));
            let Some(after) = get(&first_bad) else {
                continue;
            };
            let before = get(&last_ok).unwrap_or(&empty);
            let title = format!(
                "{} at the knee: {last_ok} → {first_bad} (red grew, blue shrank)",
                flame::kind_title(kind)
            );
            if let Ok(svg) = flame::diff_svg(before, after, &title, kind, false) {
                figure(o, &format!("flame-diff-{}", kind.as_str()), &title, &svg);
            }
        }
    }
    let svgs: Vec<&String> = files.iter().filter_map(|f| f.svg.as_ref()).collect();
    if !svgs.is_empty() {
        let _ = write!(o, "<p>Interactive graphs per phase (zoom, search): ");
        let links: Vec<String> = svgs
            .iter()
            .map(|f| {
                format!(
                    "<a href=\"{}/{}\">{}</a>",
                    rundir::DIAGNOSTICS,
                    esc(f),
                    esc(f)
                )
            })
            .collect();
        let _ = writeln!(o, "{}</p>", links.join(" · "));
    }
}
