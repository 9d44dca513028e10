//! `brunt analyze`: the terminal text of a diagnosis [`Analysis`], and the
//! command itself (diagnosis only reads and judges; printing lives here).

use std::path::{Path, PathBuf};

use crate::diagnosis::flame::{self, FlameError};
use crate::diagnosis::jfr::FlameKind;
use crate::diagnosis::{Analysis, Detail, DiagError, InputKind, Options};

/// The terminal report of an analysis: inputs with their warnings, then findings.
pub fn render_text(a: &Analysis) -> String {
    let mut s = String::new();
    s.push_str("Inputs\n");
    for i in &a.inputs {
        let what = match i.kind {
            InputKind::ThreadDumpText | InputKind::ThreadDumpJson => {
                format!("{} dump(s), {} threads", i.dumps, i.threads)
            }
            InputKind::Jfr => format!("JFR, {} events", i.events),
            InputKind::PinningTrace => format!("{} pinning traces", i.events),
            InputKind::Unreadable => {
                format!("unreadable: {}", i.error.as_deref().unwrap_or("?"))
            }
        };
        s.push_str(&format!("  {}  {what}\n", i.file));
        for w in &i.warnings {
            s.push_str(&format!("    warning: {w}\n"));
        }
    }
    s.push_str("\nFindings\n");
    if a.findings.is_empty() {
        s.push_str("  none\n");
    }
    for f in &a.findings {
        let when = match (&f.evidence.phase, &f.evidence.time) {
            (Some(p), Some(t)) => format!(" [{p}, {t}]"),
            (None, Some(t)) => format!(" [{t}]"),
            (Some(p), None) => format!(" [{p}]"),
            (None, None) => String::new(),
        };
        s.push_str(&format!(
            "  {:<8} {}{when}\n",
            f.severity.as_str().to_uppercase(),
            f.summary
        ));
        match &f.detail {
            Detail::LockContention { holder_stack, .. } if !holder_stack.is_empty() => {
                s.push_str("           holder stack:\n");
                for fr in holder_stack.iter().take(6) {
                    s.push_str(&format!("             at {fr}\n"));
                }
            }
            Detail::HotMethods {
                app_self,
                app_total,
                samples,
                ..
            } if !app_self.is_empty() => {
                s.push_str("           application frames, self (of all samples):\n");
                for h in app_self.iter().take(5) {
                    let jdk = h
                        .jdk_top
                        .as_ref()
                        .map(|(f, n)| format!("  in `{f}` ×{n}"))
                        .unwrap_or_default();
                    s.push_str(&format!(
                        "             {:>6} {:>5.1}%  {}{jdk}\n",
                        h.samples,
                        100.0 * h.samples as f64 / (*samples).max(1) as f64,
                        h.method
                    ));
                }
                s.push_str("           application frames, total:\n");
                for (m, n) in app_total.iter().take(5) {
                    s.push_str(&format!(
                        "             {n:>6} {:>5.1}%  {m}\n",
                        100.0 * *n as f64 / (*samples).max(1) as f64
                    ));
                }
            }
            Detail::Deadlock { cycle } => {
                for e in cycle {
                    s.push_str(&format!(
                        "           `{}` waits for {} ({}) held by `{}`\n",
                        e.thread,
                        e.waiting_for.as_deref().unwrap_or("?"),
                        e.lock_class.as_deref().unwrap_or("?"),
                        e.held_by.as_deref().unwrap_or("?")
                    ));
                }
            }
            _ => {}
        }
    }
    s
}

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
                println!("{}", serde_json::to_string_pretty(&a)?);
            } else {
                print!("{}", render_text(&a));
            }
            match flamegraph {
                Some(out) => write_flamegraphs(&a, out),
                None => Ok(0),
            }
        }
        Err(e @ (DiagError::NoInput(_) | DiagError::Io { .. })) => {
            eprintln!("brunt analyze: {e}");
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
                eprintln!("wrote {} and {}", path.display(), folded.display());
                wrote += 1;
            }
            Err(FlameError::Empty(k)) => eprintln!(
                "no {k} stacks in the inputs: {} not written",
                path.display()
            ),
            Err(e) => return Err(e.into()),
        }
    }
    if wrote == 0 {
        eprintln!("brunt analyze: --flamegraph needs a JFR recording with execution samples or waiting events");
        return Ok(2);
    }
    Ok(0)
}
