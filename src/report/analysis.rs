//! `brunt analyze`: the terminal text of a diagnosis [`Analysis`], and the
//! command itself (diagnosis only reads and judges; printing lives here).

use std::path::PathBuf;

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

/// `brunt analyze FILE… [--json]`: prints the analysis to stdout. Returns the
/// exit code: 0 analysed, 2 when no input could be read (bad input).
pub fn analyze_cli(paths: &[PathBuf], json: bool) -> anyhow::Result<i32> {
    match Analysis::from_paths(paths, &Options::default()) {
        Ok(a) => {
            if json {
                println!("{}", serde_json::to_string_pretty(&a)?);
            } else {
                print!("{}", render_text(&a));
            }
            Ok(0)
        }
        Err(e @ (DiagError::NoInput(_) | DiagError::Io { .. })) => {
            eprintln!("brunt analyze: {e}");
            Ok(2)
        }
        Err(e) => Err(e.into()),
    }
}
