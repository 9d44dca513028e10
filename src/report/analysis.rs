//! `brunt analyze`: the terminal text of a diagnosis [`Analysis`] (the
//! command itself, which prints it, is `cli::analyze`).

use crate::diagnosis::{Analysis, Detail, InputKind};

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
            InputKind::Memory => "class histogram or NMT summary".to_string(),
            InputKind::Pprof => format!("pprof profile, {} stacks", i.events),
            InputKind::Stacks => format!("collapsed stacks, {} samples", i.events),
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
