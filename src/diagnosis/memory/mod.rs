//! What a JVM's memory is made of, read from `jcmd` output: the class
//! histogram (`GC.class_histogram`: instances and bytes per class, taken
//! right after the full collection the command forces, so its total is a
//! true live-set point) and Native Memory Tracking (`VM.native_memory
//! summary`: reserved and committed bytes per native category). The soak
//! verdict compares these through a run to say *what* grows.
//!
//! | module | owns |
//! |---|---|
//! | [`histogram`] | `GC.class_histogram` (JDK 8–25 layouts) |
//! | [`nmt`] | `VM.native_memory summary` (JDK 11–25), "not enabled" said as such |
//!
//! Hand-written: no crate reads either format, and both are a few dozen
//! lines of fixed layout. Garbled input is an error naming the line, never
//! a panic or a half-read result taken as whole.

pub mod histogram;
pub mod nmt;

pub use histogram::{ClassHistogram, ClassRow};
pub use nmt::{NativeMemory, NmtCategory};

/// Why a memory report could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    #[error("empty output")]
    Empty,
    #[error("line {line}: {what} (`{text}`)")]
    Garbled {
        line: usize,
        what: &'static str,
        text: String,
    },
    #[error("no `Total` line: the output was cut short")]
    Truncated,
    #[error("Native Memory Tracking is not enabled in the target JVM: start it with -XX:NativeMemoryTracking=summary")]
    NmtOff,
    /// jcmd answered with an error of its own (no such command, no JVM).
    #[error("jcmd: {0}")]
    Jcmd(String),
}

/// The first line of jcmd output is `PID:`; what follows it.
fn body(text: &str) -> Result<impl Iterator<Item = (usize, &str)>, MemoryError> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l)).peekable();
    while lines.peek().is_some_and(|(_, l)| l.trim().is_empty()) {
        lines.next();
    }
    if lines.peek().is_none() {
        return Err(MemoryError::Empty);
    }
    if lines.peek().is_some_and(|(_, l)| {
        l.trim_end()
            .strip_suffix(':')
            .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
    }) {
        lines.next();
    }
    Ok(lines)
}

/// `7723229KB` / `12MB` / `0B` in bytes (NMT's `scale=` units; KB by default).
fn scaled_bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (n, unit) = s.split_at(digits);
    let n: u64 = n.parse().ok()?;
    let mult = match unit {
        "B" | "" => 1,
        "KB" => 1 << 10,
        "MB" => 1 << 20,
        "GB" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// A captured jcmd output under `tests/fixtures/jvm/`.
#[cfg(test)]
fn fixture(name: &str) -> String {
    let p = format!("{}/tests/fixtures/jvm/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}
