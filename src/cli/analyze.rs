//! `brunt analyze FILE…`: diagnose the files, print the text or JSON of the
//! analysis (rendered by `report::analysis`) and write flame graphs.

use super::out::{errln, out, outln};
use std::path::{Path, PathBuf};

use crate::diagnosis::flame::{self, FlameError};
use crate::diagnosis::jfr::FlameKind;
use crate::diagnosis::{Analysis, DiagError, Options};
use crate::report::analysis::render_text;

/// `brunt analyze FILE… [--json] [--flamegraph OUT.svg]`: prints the
/// analysis to stdout. Returns the exit code: 0 analysed, 2 when no input
/// could be read (bad input) or a flame graph was asked of inputs without
/// JFR stacks.
pub fn analyze_cli(
    paths: &[PathBuf],
    json: bool,
    flamegraph: Option<&Path>,
) -> anyhow::Result<i32> {
    match Analysis::from_paths(paths, &Options::default()) {
        Ok(a) => {
            if json {
                outln!("{}", serde_json::to_string_pretty(&a)?);
            } else {
                out!("{}", render_text(&a));
            }
            match flamegraph {
                Some(out) => write_flamegraphs(&a, out),
                None => Ok(0),
            }
        }
        Err(e @ (DiagError::NoInput(_) | DiagError::Io { .. })) => {
            errln!("brunt analyze: {e}");
            Ok(2)
        }
        Err(e) => Err(e.into()),
    }
}

/// `--flamegraph OUT.svg`: the CPU graph of every recording given (stacks
/// added) into OUT.svg, the waiting graph into OUT.wait.svg, each with its
/// `.folded` stacks beside it; the files written go to stderr.
fn write_flamegraphs(a: &Analysis, out: &Path) -> anyhow::Result<i32> {
    let mut wrote = 0;
    for kind in [FlameKind::Cpu, FlameKind::Wait] {
        let stacks = flame::merge(
            a.flames
                .iter()
                .filter(|f| f.kind == Some(kind))
                .map(|f| &f.stacks),
        );
        let path = match kind {
            FlameKind::Cpu => out.to_path_buf(),
            FlameKind::Wait => out.with_extension("wait.svg"),
        };
        let title = format!(
            "{} ({} {})",
            flame::kind_title(kind),
            flame::total(&stacks),
            kind.unit()
        );
        match flame::svg(&stacks, &title, kind, true) {
            Ok(svg) => {
                std::fs::write(&path, svg)?;
                let folded = path.with_extension("folded");
                std::fs::write(&folded, flame::to_folded(&stacks))?;
                errln!("wrote {} and {}", path.display(), folded.display());
                wrote += 1;
            }
            Err(FlameError::Empty(k)) => errln!(
                "no {k} stacks in the inputs: {} not written",
                path.display()
            ),
            Err(e) => return Err(e.into()),
        }
    }
    if wrote == 0 {
        errln!("brunt analyze: --flamegraph needs a JFR recording with execution samples or waiting events");
        return Ok(2);
    }
    Ok(0)
}
