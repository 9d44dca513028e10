//! Printing that never kills a run. A closed pipe (`brunt run … | head -1`)
//! or a terminal that went away makes writes fail (EPIPE, EIO), and
//! `println!` would panic mid-run, losing the summary, the report and the
//! JUnit file. Here a failed write turns that stream off for the rest of
//! the process; the run goes on, writes every file and exits with its own
//! code.

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_GONE: AtomicBool = AtomicBool::new(false);
static STDERR_GONE: AtomicBool = AtomicBool::new(false);

/// Write to stdout, or nothing once stdout has failed.
pub fn stdout(args: fmt::Arguments<'_>) {
    write(&mut std::io::stdout().lock(), &STDOUT_GONE, args);
}

/// Write to stderr, or nothing once stderr has failed.
pub fn stderr(args: fmt::Arguments<'_>) {
    write(&mut std::io::stderr().lock(), &STDERR_GONE, args);
}

fn write(w: &mut dyn Write, gone: &AtomicBool, args: fmt::Arguments<'_>) {
    if gone.load(Ordering::Relaxed) {
        return;
    }
    // Flushed each time, so a closed reader is noticed at once.
    if w.write_fmt(args).and_then(|()| w.flush()).is_err() {
        gone.store(true, Ordering::Relaxed);
    }
}

/// `print!` to stdout through [`stdout`].
macro_rules! out {
    ($($t:tt)*) => { $crate::cli::out::stdout(format_args!($($t)*)) };
}

/// `println!` to stdout through [`stdout`].
macro_rules! outln {
    () => { $crate::cli::out::stdout(format_args!("\n")) };
    ($($t:tt)*) => { $crate::cli::out::stdout(format_args!("{}\n", format_args!($($t)*))) };
}

/// `eprintln!` through [`stderr`].
macro_rules! errln {
    () => { $crate::cli::out::stderr(format_args!("\n")) };
    ($($t:tt)*) => { $crate::cli::out::stderr(format_args!("{}\n", format_args!($($t)*))) };
}

pub(crate) use {errln, out, outln};
