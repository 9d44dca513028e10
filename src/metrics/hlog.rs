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
//! `Tag=<phase>.<class>.svc` service-time lines, `Tag=<phase>.<class>.wait`
//! lines (the wait from the intended start to the send: brunt's own queue
//! for a lane; absent from logs written before it) and, when the mix has
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
                if !h.wait.is_empty() {
                    let tag = format!("{name}.{}.wait", c.name());
                    self.line(Some(&tag), start, 1.0, &h.wait)?;
                }
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

/// The log's last second, left out because its final line was cut short
/// (a full disk, a kill mid-write): what reached the disk before it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutSecond {
    pub path: String,
    /// The cut line's number (1-based).
    pub line: usize,
    /// The second it belonged to, left out whole (its other lines too), so
    /// that second's tagged and untagged lines never disagree.
    pub second: Option<u64>,
}

impl std::fmt::Display for CutSecond {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: line {} is cut short (the write stopped mid-line)",
            self.path, self.line
        )?;
        match self.second {
            Some(s) => write!(
                f,
                "; second {s} is left out, every second before it is read"
            ),
            None => write!(f, "; it is skipped"),
        }
    }
}

/// Stream the intervals of a log; a cut final line is skipped (see
/// [`for_each_noting`] to learn whether one was).
pub fn for_each(path: &Path, f: impl FnMut(Interval)) -> Result<(), HlogError> {
    for_each_noting(path, f).map(|_| ())
}

/// Stream the intervals of a log line by line, so a caller that merges them
/// holds one line and one decoded histogram at a time, never the whole file
/// (an 8-hour soak's log is ~100 MB, ~10^5 lines of ~184 KiB each once
/// decoded). A final line that does not parse was cut short: it and the
/// other lines of its second are left out, and it is returned; a bad line
/// anywhere else is an error.
pub fn for_each_noting(
    path: &Path,
    mut f: impl FnMut(Interval),
) -> Result<Option<CutSecond>, HlogError> {
    let name = path.display().to_string();
    // Which second a cut last line ends, known before streaming, so its
    // earlier lines are never handed on.
    let cut = last_line_cut(path)?;
    let mut input = io::BufReader::new(File::open(path)?);
    let mut de = Deserializer::new();
    let mut line = Vec::with_capacity(4096);
    let mut no = 0usize;
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(None);
        }
        no += 1;
        match parse_line(&line, &mut de) {
            Ok(Some(iv)) => {
                if cut.is_none_or(|c| c != Some(iv.start.as_secs())) {
                    f(iv);
                }
            }
            Ok(None) => {}
            Err(message) => {
                if cut.is_some() && input.fill_buf()?.is_empty() {
                    return Ok(Some(CutSecond {
                        path: name,
                        line: no,
                        second: cut.flatten(),
                    }));
                }
                return Err(HlogError::Parse {
                    path: name,
                    line: no,
                    message,
                });
            }
        }
    }
}

/// Whether the log's last line is cut short (does not parse): `Some` with
/// the second it belongs to — its own start when that much of it is there,
/// else the line before's, the safe side — or `None` when it is whole.
fn last_line_cut(path: &Path) -> Result<Option<Option<u64>>, HlogError> {
    use std::io::{Read, Seek, SeekFrom};
    // A line holds one compressed histogram: far below this.
    const TAIL: u64 = 1 << 20;
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(TAIL)))?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail)?;
    // Split after each newline, so a whole line keeps it (the parser needs
    // it) and a cut one lacks it.
    let mut lines = tail
        .split_inclusive(|b| *b == b'\n')
        .rev()
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace));
    let Some(last) = lines.next() else {
        return Ok(None);
    };
    if parse_line(last, &mut Deserializer::new()).is_ok() {
        return Ok(None);
    }
    Ok(Some(
        leading_second(last).or_else(|| lines.next().and_then(leading_second)),
    ))
}

/// One line: `Some` interval, `None` for comments and the legend.
fn parse_line(line: &[u8], de: &mut Deserializer) -> Result<Option<Interval>, String> {
    let mut out = None;
    // Each line parses on its own: the crate keeps no state across lines
    // (StartTime and BaseTime come back as entries, timestamps stay raw).
    for entry in IntervalLogIterator::new(line) {
        let entry = entry.map_err(|e| format!("{e:?}"))?;
        if let LogEntry::Interval(ih) = entry {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(ih.encoded_histogram())
                .map_err(|e| format!("base64: {e}"))?;
            let hist: Histogram<u64> = de
                .deserialize(&mut bytes.as_slice())
                .map_err(|e| format!("histogram: {e:?}"))?;
            out = Some(Interval {
                start: ih.start_timestamp(),
                tag: ih.tag().map(|t| t.as_str().to_string()),
                hist,
            });
        }
    }
    Ok(out)
}

/// The whole seconds a (possibly cut) interval line starts at, if that much
/// of it is there: `[Tag=…,]<start>,<len>,…`.
fn leading_second(line: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(line).ok()?;
    let rest = match text.strip_prefix("Tag=") {
        Some(r) => r.split_once(',')?.1,
        None => text,
    };
    let (start, _) = rest.split_once(',')?;
    start
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| s as u64)
}

/// What a tagged line holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagKind {
    /// `<phase>.<class>`: latency from the intended start.
    Latency,
    /// `<phase>.<class>.svc`: service time from the actual send.
    Service,
    /// `<phase>.<class>.wait`: from the intended start to the actual send.
    Wait,
    /// `<phase>.<class>.r<i>`: latency of request `i` of the mix.
    Request(usize),
    /// `<phase>.<class>.s<k>`: whole iterations of scenario `k`.
    Iteration(usize),
}

/// Split a `phase.class[.svc|.wait|.rN|.sK]` tag.
pub fn parse_tag(tag: &str) -> Option<(&str, Class, TagKind)> {
    let (rest, kind) = match tag.rsplit_once('.') {
        Some((r, "svc")) => (r, TagKind::Service),
        Some((r, "wait")) => (r, TagKind::Wait),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A log of `secs` seconds, one `main.ok` latency of `i + 1` ms in second `i`.
    fn log(path: &Path, secs: u64) {
        let mut w = HlogWriter::create(path, 1.8e9, "test").expect("create");
        for i in 0..secs {
            let mut s = Stats::default();
            let mut h = new_hist();
            let _ = h.record((i + 1) * 1_000_000);
            s.add_hist(Class::Ok, &h, TagKind::Latency);
            w.window(i, &[("main", &s)]).expect("window");
        }
    }

    fn seconds(path: &Path) -> (Vec<(u64, bool)>, Option<CutSecond>) {
        let mut v = vec![];
        let cut = for_each_noting(path, |iv| v.push((iv.start.as_secs(), iv.tag.is_some())))
            .expect("reads");
        (v, cut)
    }

    #[test]
    fn a_whole_log_reads_every_second_and_a_cut_last_line_drops_only_its_second() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("latency.hlog");
        log(&p, 3);
        let (whole, cut) = seconds(&p);
        assert_eq!(cut, None);
        assert_eq!(
            whole.iter().filter(|(s, _)| *s == 2).count(),
            3,
            "{whole:?}"
        );
        // Cut the last line (second 2's service line) in its histogram.
        let text = std::fs::read(&p).expect("read");
        std::fs::write(&p, &text[..text.len() - 20]).expect("write");
        let (part, cut) = seconds(&p);
        let cut = cut.expect("the cut is reported");
        assert_eq!(cut.second, Some(2));
        assert!(part.iter().all(|(s, _)| *s < 2), "{part:?}");
        assert_eq!(part.len(), 6);
        // A line cut within its start field: the line before decides.
        let lines: Vec<&[u8]> = text.split_inclusive(|b| *b == b'\n').collect();
        let mut short: Vec<u8> = lines[..lines.len() - 1].concat();
        short.extend_from_slice(b"Tag=main.ok.sv");
        std::fs::write(&p, &short).expect("write");
        assert_eq!(seconds(&p).1.and_then(|c| c.second), Some(2));
        // Damage before the last line is an error, not data.
        let mut bad: Vec<u8> = lines[..6].concat();
        bad.extend_from_slice(b"Tag=main.ok,1.000,1.000,0.5,HISTFAAAAB\n");
        bad.extend(lines[7..].concat());
        std::fs::write(&p, &bad).expect("write");
        assert!(matches!(
            for_each_noting(&p, |_| {}),
            Err(HlogError::Parse { line: 7, .. })
        ));
    }
}
