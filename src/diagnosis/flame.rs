//! Flame graphs of JFR recordings: collapsed stacks (`.folded`, the format
//! flamegraph.pl, inferno and speedscope read) per load phase and kind (CPU
//! samples; time waiting on monitors, parks and pinning), and their SVG —
//! plain and differential (what grew between two phases) — drawn by the
//! `inferno` crate rather than by hand.
//!
//! Files are written beside the recording they come from:
//! `<recording>.<phase>.<cpu|wait>.folded` and `.svg`, `all` for the whole
//! recording. [`super::Analysis::from_paths`] skips them as inputs.

use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use super::jfr::{FlameKind, FoldedStacks};

#[derive(Debug, thiserror::Error)]
pub enum FlameError {
    #[error("no {0} stacks to draw")]
    Empty(&'static str),
    #[error("flame graph: {0}")]
    Render(#[from] std::io::Error),
}

/// The extensions brunt writes for flame graphs (never diagnosis inputs).
pub const OUTPUT_EXTENSIONS: &[&str] = &["folded", "svg"];

/// Collapsed-stack text: one `root;…;leaf count` line per stack.
pub fn to_folded(stacks: &BTreeMap<String, u64>) -> String {
    let mut s = String::new();
    for (k, n) in stacks {
        s.push_str(k);
        s.push(' ');
        s.push_str(&n.to_string());
        s.push('\n');
    }
    s
}

/// Reads collapsed-stack text; lines without a trailing count are skipped.
pub fn parse_folded(text: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        if let Some((stack, n)) = line.trim_end().rsplit_once(' ') {
            if let Ok(n) = n.parse::<u64>() {
                *m.entry(stack.to_string()).or_default() += n;
            }
        }
    }
    m
}

/// Adds stacks of several recordings or phases (counts add; nothing is averaged).
pub fn merge<'a>(
    parts: impl IntoIterator<Item = &'a BTreeMap<String, u64>>,
) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for p in parts {
        for (k, n) in p {
            *m.entry(k.clone()).or_default() += n;
        }
    }
    m
}

/// The sum of a graph's counts: samples (CPU) or milliseconds (wait).
pub fn total(stacks: &BTreeMap<String, u64>) -> u64 {
    stacks.values().sum()
}

fn options(
    title: &str,
    kind: FlameKind,
    interactive: bool,
) -> inferno::flamegraph::Options<'static> {
    let mut o = inferno::flamegraph::Options::default();
    // Files beside the recording zoom and search; a copy inside report.html
    // (a page without scripts) is a picture.
    o.no_javascript = !interactive;
    o.title = title.to_string();
    o.count_name = kind.unit().to_string();
    // Java frames: inferno's java palette tells JDK, library and app apart.
    o.colors = inferno::flamegraph::Palette::Multi(inferno::flamegraph::color::MultiPalette::Java);
    o.deterministic = true;
    o
}

/// The SVG of folded stacks `text`.
fn render(
    text: &str,
    mut options: inferno::flamegraph::Options<'static>,
) -> Result<String, FlameError> {
    let mut out = vec![];
    inferno::flamegraph::from_lines(&mut options, text.lines(), &mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The SVG of one graph; `interactive` keeps inferno's zoom and search script.
pub fn svg(
    stacks: &BTreeMap<String, u64>,
    title: &str,
    kind: FlameKind,
    interactive: bool,
) -> Result<String, FlameError> {
    if stacks.is_empty() {
        return Err(FlameError::Empty(kind.as_str()));
    }
    render(&to_folded(stacks), options(title, kind, interactive))
}

/// A differential graph: the shape of `after`, coloured by the change from
/// `before` (red grew, blue shrank). Counts are compared as they are, not
/// normalised: stress steps last equally long, and waiting that grows
/// everywhere at the knee is the finding, not noise to scale away.
pub fn diff_svg(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
    title: &str,
    kind: FlameKind,
    interactive: bool,
) -> Result<String, FlameError> {
    if after.is_empty() {
        return Err(FlameError::Empty(kind.as_str()));
    }
    let (b, a) = (to_folded(before), to_folded(after));
    let mut lines = vec![];
    inferno::differential::from_readers(
        inferno::differential::Options {
            normalize: false,
            strip_hex: false,
        },
        BufReader::new(b.as_bytes()),
        BufReader::new(a.as_bytes()),
        &mut lines,
    )?;
    render(
        &String::from_utf8_lossy(&lines),
        options(title, kind, interactive),
    )
}

/// `a-z A-Z 0-9 - _` kept, anything else `_`: phase names into file names.
pub fn file_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `<recording>.<phase|all>.<kind>` beside the recording (no extension).
pub fn stem_for(recording: &Path, phase: Option<&str>, kind: FlameKind) -> PathBuf {
    let name = recording
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "recording".into());
    recording.with_file_name(format!(
        "{name}.{}.{}",
        file_part(phase.unwrap_or("all")),
        kind.as_str()
    ))
}

/// The phase and kind a `.folded` file written by [`write_beside`] holds.
pub fn parse_name(file: &str) -> Option<(String, Option<String>, FlameKind)> {
    let rest = file.strip_suffix(crate::vocab::files::FLAME_STACKS)?;
    let (rest, kind) = match rest.rsplit_once('.')? {
        (r, "cpu") => (r, FlameKind::Cpu),
        (r, "wait") => (r, FlameKind::Wait),
        _ => return None,
    };
    let (rec, phase) = rest.rsplit_once('.')?;
    let phase = (phase != "all").then(|| phase.to_string());
    Some((rec.to_string(), phase, kind))
}

/// Writes `.folded` and `.svg` beside each recording: per phase and kind,
/// and `all` (the phases added) when there are several. Returns the files.
pub fn write_beside(flames: &[FoldedStacks]) -> Result<Vec<PathBuf>, FlameError> {
    let mut by_rec: BTreeMap<(&str, FlameKind), Vec<&FoldedStacks>> = BTreeMap::new();
    for f in flames {
        if let Some(k) = f.kind {
            by_rec.entry((f.source.as_str(), k)).or_default().push(f);
        }
    }
    let mut written = vec![];
    for ((source, kind), parts) in by_rec {
        let rec = Path::new(source);
        // Per phase, and `all` (every phase added, and what fell outside them).
        let mut graphs: Vec<(Option<&str>, BTreeMap<String, u64>)> = parts
            .iter()
            .filter(|p| p.phase.is_some())
            .map(|p| (p.phase.as_deref(), p.stacks.clone()))
            .collect();
        graphs.push((None, merge(parts.iter().map(|p| &p.stacks))));
        for (phase, stacks) in graphs {
            if stacks.is_empty() {
                continue;
            }
            let stem = stem_for(rec, phase, kind);
            let folded = stem.with_extension(format!("{}.folded", kind.as_str()));
            let svg_path = stem.with_extension(format!("{}.svg", kind.as_str()));
            std::fs::write(&folded, to_folded(&stacks))?;
            let title = format!(
                "{} — {} ({} {})",
                kind_title(kind),
                phase.unwrap_or("whole recording"),
                total(&stacks),
                kind.unit()
            );
            std::fs::write(&svg_path, svg(&stacks, &title, kind, true)?)?;
            written.push(folded);
            written.push(svg_path);
        }
    }
    Ok(written)
}

pub fn kind_title(kind: FlameKind) -> &'static str {
    match kind {
        FlameKind::Cpu => "CPU samples",
        FlameKind::Wait => "Waiting (monitor entry, park, pinning)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folded_round_trips_and_names_parse() {
        let mut m = BTreeMap::new();
        m.insert("a;b;c".to_string(), 3);
        m.insert("a;d".to_string(), 2);
        assert_eq!(parse_folded(&to_folded(&m)), m);
        assert_eq!(total(&m), 5);
        let stem = stem_for(Path::new("/x/rec.jfr"), Some("step 2"), FlameKind::Wait);
        let f = stem.with_extension("wait.folded");
        assert_eq!(f, Path::new("/x/rec.jfr.step_2.wait.folded"));
        assert_eq!(
            parse_name("rec.jfr.step_2.wait.folded"),
            Some(("rec.jfr".into(), Some("step_2".into()), FlameKind::Wait))
        );
        assert_eq!(
            parse_name("rec.jfr.all.cpu.folded"),
            Some(("rec.jfr".into(), None, FlameKind::Cpu))
        );
        assert!(svg(&m, "t", FlameKind::Cpu, false)
            .unwrap()
            .contains("<svg"));
        assert!(matches!(
            svg(&BTreeMap::new(), "t", FlameKind::Cpu, true),
            Err(FlameError::Empty(_))
        ));
    }
}
