//! `latency.hlog`: the HdrHistogram interval log (format 1.3), readable by
//! the standard HdrHistogram tools (HistogramLogProcessor, HdrHistogramVisualizer).
//!
//! Lines are written by hand because the crate's `IntervalLogWriter` borrows
//! its output for its whole life and re-emits headers per instance; a run
//! needs one owned, long-lived writer flushed each second. Reading uses the
//! crate's `IntervalLogIterator`.
//!
//! Layout: values are nanoseconds (`MaxValueDivisor` 1e6 so maxima read in
//! ms); timestamps are seconds since `StartTime`. Per window: one untagged
//! line with every completed request's latency (what tools show by
//! default), then `Tag=<phase>.<class>` latency lines,
//! `Tag=<phase>.<class>.svc` service-time lines and, when the mix has
//! several requests, `Tag=<phase>.<class>.r<i>` latency of request `i`;
//! with scenarios, `Tag=<phase>.<class>.s<k>` durations of the whole
//! iterations of scenario `k` that ended in that class.

use std::fs::File;
use std::io::{self, BufRead, BufWriter, Write};
use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use thiserror::Error;

use super::{new_hist, Class, Stats};

const MAX_DIVISOR: f64 = 1e6;

#[derive(Debug, Error)]
pub enum HlogError {
    #[error("interval log I/O: {0}")]
    Io(#[from] io::Error),
    #[error("interval log: cannot encode histogram: {0}")]
    Encode(String),
    #[error("interval log {path}: line {line}: {message}")]
    Parse {
        path: String,
        line: usize,
        message: String,
    },
}

pub struct HlogWriter {
    out: BufWriter<File>,
    ser: V2DeflateSerializer,
    buf: Vec<u8>,
}

impl HlogWriter {
    pub fn create(path: &Path, start_unix: f64, comment: &str) -> Result<Self, HlogError> {
        let mut out = BufWriter::new(File::create(path)?);
        writeln!(out, "#[{comment}]")?;
        writeln!(out, "#[Histogram log format version 1.3]")?;
        let when = chrono::DateTime::from_timestamp(start_unix as i64, 0)
            .map(|d| d.to_rfc3339())
            .unwrap_or_default();
        writeln!(
            out,
            "#[StartTime: {start_unix:.3} (seconds since epoch), {when}]"
        )?;
        writeln!(out, "#[MaxValueDivisor: {MAX_DIVISOR:.3}]")?;
        writeln!(
            out,
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
        )?;
        out.flush()?;
        Ok(HlogWriter {
            out,
            ser: V2DeflateSerializer::new(),
            buf: Vec::new(),
        })
    }

    fn line(
        &mut self,
        tag: Option<&str>,
        start: f64,
        len: f64,
        h: &Histogram<u64>,
    ) -> Result<(), HlogError> {
        self.buf.clear();
        self.ser
            .serialize(h, &mut self.buf)
            .map_err(|e| HlogError::Encode(format!("{e:?}")))?;
        if let Some(t) = tag {
            write!(self.out, "Tag={t},")?;
        }
        let enc = base64::engine::general_purpose::STANDARD.encode(&self.buf);
        writeln!(
            self.out,
            "{start:.3},{len:.3},{:.3},{enc}",
            h.max() as f64 / MAX_DIVISOR
        )?;
        Ok(())
    }

    /// Write one window: `phases` pairs a phase name with its stats.
    pub fn window(&mut self, second: u64, phases: &[(&str, &Stats)]) -> Result<(), HlogError> {
        let start = second as f64;
        let mut all = new_hist();
        for (_, s) in phases {
            for h in s.classes.values() {
                let _ = all.add(&h.latency);
            }
        }
        self.line(None, start, 1.0, &all)?;
        for (name, s) in phases {
            for (c, h) in &s.classes {
                self.line(
                    Some(&format!("{name}.{}", c.name())),
                    start,
                    1.0,
                    &h.latency,
                )?;
                self.line(
                    Some(&format!("{name}.{}.svc", c.name())),
                    start,
                    1.0,
                    &h.service,
                )?;
                for (i, r) in h.by_request.iter().enumerate() {
                    if let Some(r) = r {
                        self.line(Some(&format!("{name}.{}.r{i}", c.name())), start, 1.0, r)?;
                    }
                }
                for (k, it) in h.by_scenario.iter().enumerate() {
                    if let Some(it) = it {
                        self.line(Some(&format!("{name}.{}.s{k}", c.name())), start, 1.0, it)?;
                    }
                }
            }
        }
        self.out.flush()?;
        Ok(())
    }
}

/// One interval read back from a log.
#[derive(Debug)]
pub struct Interval {
    /// Seconds since the log's StartTime.
    pub start: Duration,
    pub tag: Option<String>,
    pub hist: Histogram<u64>,
}

/// Read every interval of a log into memory (fine for short runs; long
/// soaks should stream with [`for_each`]).
pub fn read(path: &Path) -> Result<Vec<Interval>, HlogError> {
    let mut out = Vec::new();
    for_each(path, |iv| out.push(iv))?;
    Ok(out)
}

/// Stream the intervals of a log line by line, so a caller that merges them
/// holds one line and one decoded histogram at a time, never the whole file
/// (an 8-hour soak's log is ~100 MB, ~10^5 lines of ~184 KiB each once decoded).
pub fn for_each(path: &Path, mut f: impl FnMut(Interval)) -> Result<(), HlogError> {
    let mut input = io::BufReader::new(File::open(path)?);
    let mut de = Deserializer::new();
    let name = path.display().to_string();
    let mut line = Vec::with_capacity(4096);
    let mut no = 0usize;
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        no += 1;
        let parse = |message: String| HlogError::Parse {
            path: name.clone(),
            line: no,
            message,
        };
        // Each line parses on its own: the crate keeps no state across lines
        // (StartTime and BaseTime come back as entries, timestamps stay raw).
        for entry in IntervalLogIterator::new(&line) {
            let entry = entry.map_err(|e| parse(format!("{e:?}")))?;
            if let LogEntry::Interval(ih) = entry {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(ih.encoded_histogram())
                    .map_err(|e| parse(format!("base64: {e}")))?;
                let hist: Histogram<u64> = de
                    .deserialize(&mut bytes.as_slice())
                    .map_err(|e| parse(format!("histogram: {e:?}")))?;
                f(Interval {
                    start: ih.start_timestamp(),
                    tag: ih.tag().map(|t| t.as_str().to_string()),
                    hist,
                });
            }
        }
    }
}

/// What a tagged line holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagKind {
    /// `<phase>.<class>`: latency from the intended start.
    Latency,
    /// `<phase>.<class>.svc`: service time from the actual send.
    Service,
    /// `<phase>.<class>.r<i>`: latency of request `i` of the mix.
    Request(usize),
    /// `<phase>.<class>.s<k>`: whole iterations of scenario `k`.
    Iteration(usize),
}

/// Split a `phase.class[.svc|.rN|.sK]` tag.
pub fn parse_tag(tag: &str) -> Option<(&str, Class, TagKind)> {
    let (rest, kind) = match tag.rsplit_once('.') {
        Some((r, "svc")) => (r, TagKind::Service),
        Some((r, last))
            if last.len() > 1
                && last.starts_with('r')
                && last[1..].bytes().all(|b| b.is_ascii_digit()) =>
        {
            (r, TagKind::Request(last[1..].parse().ok()?))
        }
        Some((r, last))
            if last.len() > 1
                && last.starts_with('s')
                && last[1..].bytes().all(|b| b.is_ascii_digit()) =>
        {
            (r, TagKind::Iteration(last[1..].parse().ok()?))
        }
        _ => (tag, TagKind::Latency),
    };
    let (phase, class) = rest.rsplit_once('.')?;
    Some((phase, Class::from_name(class)?, kind))
}
