//! JFR recordings (`.jfr`, format 2.x: JDK 11–25), read by brunt's own
//! streaming chunk parser into aggregated contention, pinning, heap and hot
//! method figures.
//!
//! Why not the `jfrs` crate (0.2.5)? It matches `jfr print` on event counts
//! and is fast, but on input from outside it is unsafe to run: it loads each
//! whole chunk with a size taken from the file (a corrupted size of 2^40
//! aborted the process on allocation), sizes vectors from unchecked counts
//! (`Vec::with_capacity(len as usize)` on negative/huge lengths), advances the
//! event iterator by the event's own size (size 0 repeats one event forever),
//! follows the constant-pool delta chain without a bound (a cycle never ends),
//! and after one error its chunk iterator repeats that error forever. Those
//! cannot all be guarded from outside, so this parser:
//! - checks every size, offset and count against the chunk and the file
//!   before using it, and bounds recursion and the constant-pool chain;
//! - streams: per chunk it holds the metadata and constant pools (as the
//!   format requires: they sit at the chunk's end), then reads events one at
//!   a time through a buffered reader, skipping uninteresting ones unread;
//!   a 100 MB recording never sits in memory;
//! - turns a truncated or corrupt chunk into a warning and keeps the events
//!   of every complete chunk (a truncated chunk has lost its metadata and
//!   constant pools, which the JVM writes at the chunk's end, so its events
//!   cannot be decoded by anyone).
//!
//! | module | owns |
//! |---|---|
//! | `recording` | the result types ([`JfrRecording`], [`JfrSite`], [`HeapSample`], [`JvmGauges`]) and [`JfrError`] |
//! | `buf` | bounds-checked reading of varints, strings and values |
//! | `metadata` | the metadata event: class descriptions, decoding a value of a class |
//! | `pool` | one chunk's constant pool, clock and decoded-stack caches |
//! | `chunk` | one chunk: header, metadata, constant-pool chain, the event loop |
//! | `events` | decoding the events brunt reads |
//! | `sites` | aggregating events into sites; call-site and idle-thread tests |

mod buf;
mod chunk;
mod events;
mod metadata;
mod pool;
mod recording;
mod sites;

use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::Path;

use super::PhaseWindow;
use chunk::{read_chunk, HEADER_SIZE};
use metadata::MetaCache;
use sites::Agg;

pub use chunk::MAGIC;
pub use recording::{
    FlameKind, FoldedStacks, HeapSample, HotFrame, JfrError, JfrRecording, JfrSite, JfrTotals,
    JvmGauges,
};
pub use sites::{is_idle_stack, is_idle_stack_lines, is_internal_frame, site_of};

pub fn looks_like_jfr(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

/// Parses a recording file. Errors only when nothing could be read (not a
/// JFR file, first chunk unreadable); later damage becomes warnings.
pub fn parse_jfr_file(path: &Path) -> Result<JfrRecording, JfrError> {
    parse_jfr_file_phased(path, &[])
}

/// As [`parse_jfr_file`], aggregating sites per load phase.
pub fn parse_jfr_file_phased(
    path: &Path,
    phases: &[PhaseWindow],
) -> Result<JfrRecording, JfrError> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    parse_jfr_phased(
        BufReader::with_capacity(1 << 16, file),
        len,
        &path.display().to_string(),
        phases,
    )
}

/// As [`parse_jfr_file`], with [`JfrRecording::totals`] counting only
/// events that ended after `cut_unix` (the target's clock): one window of a
/// recording dumped again and again, whose dump may repeat the chunk the
/// previous window already counted.
pub fn parse_jfr_window(path: &Path, cut_unix: f64) -> Result<JfrRecording, JfrError> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    parse_inner(
        BufReader::with_capacity(1 << 16, file),
        len,
        &path.display().to_string(),
        &[],
        cut_unix,
    )
}

pub fn parse_jfr<R: Read + Seek>(
    r: R,
    file_len: u64,
    source: &str,
) -> Result<JfrRecording, JfrError> {
    parse_jfr_phased(r, file_len, source, &[])
}

/// Parses a recording from any seekable reader of `file_len` bytes;
/// contention and pinning sites are kept apart per phase of `phases`.
pub fn parse_jfr_phased<R: Read + Seek>(
    r: R,
    file_len: u64,
    source: &str,
    phases: &[PhaseWindow],
) -> Result<JfrRecording, JfrError> {
    parse_inner(r, file_len, source, phases, f64::NEG_INFINITY)
}

fn parse_inner<R: Read + Seek>(
    mut r: R,
    file_len: u64,
    source: &str,
    phases: &[PhaseWindow],
    cut_unix: f64,
) -> Result<JfrRecording, JfrError> {
    let mut rec = JfrRecording {
        source: source.to_string(),
        ..JfrRecording::default()
    };
    let mut agg = Agg::new(phases);
    agg.cut_unix = cut_unix;
    let mut pos: u64 = 0;
    let mut end_unix: f64 = 0.0;
    let mut meta_cache: MetaCache = None;
    while pos < file_len {
        let index = rec.chunks;
        // Stacks are per chunk: their cached facts go with it (memory stays flat).
        agg.end_chunk();
        match read_chunk(
            &mut r,
            pos,
            file_len,
            &mut rec,
            &mut agg,
            &mut end_unix,
            &mut meta_cache,
        ) {
            Ok(size) => {
                rec.chunks += 1;
                pos += size;
            }
            Err(e) if index == 0 && !matches!(e, JfrError::Corrupt(_)) => return Err(e),
            Err(e) if index == 0 && rec.events == 0 => {
                // Nothing readable at all: the header itself is bad.
                if pos == 0 && file_len < HEADER_SIZE {
                    return Err(e);
                }
                rec.warnings
                    .push(format!("chunk {index} at byte {pos}: {e}"));
                break;
            }
            Err(e) => {
                rec.warnings
                    .push(format!("chunk {index} at byte {pos}: {e}"));
                break; // a chunk size can no longer be trusted: stop, keep what was read
            }
        }
    }
    if let Some(s) = rec.start_unix {
        rec.duration_s = (end_unix - s).max(0.0);
    }
    agg.finish(&mut rec);
    rec.name_gcs();
    Ok(rec)
}
