//! Reading a run directory while its run still writes it (the live view of
//! `brunt run` and `brunt watch`): the time series as it grows, whole lines
//! and whole seconds only ([`LineTail`] for any file that grows by lines,
//! as `errors.jsonl` does); the last complete line of a sample stream; the
//! newest thread dump.

use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::TIME_SERIES;
use crate::metrics::series::{parse_row, Row};

/// The last complete line of a JSONL file, reading only its tail.
pub fn last_json_line(path: &Path) -> Option<serde_json::Value> {
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let from = len.saturating_sub(16 * 1024);
    f.seek(SeekFrom::Start(from)).ok()?;
    let mut buf = String::new();
    f.read_to_string(&mut buf).ok()?;
    // A line still being written has no newline yet: skip it.
    let complete = &buf[..buf.rfind('\n')?];
    complete
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l.trim()).ok())
}

/// The newest thread dump in `diagnostics/` (by modification time), and its size.
pub fn newest_dump(diag: &Path) -> Option<(PathBuf, u64)> {
    std::fs::read_dir(diag)
        .ok()?
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n.contains("thread-dump") && (n.ends_with(".txt") || n.ends_with(".json"))
        })
        .filter_map(|e| {
            let md = e.metadata().ok()?;
            Some((md.modified().ok()?, e.path(), md.len()))
        })
        .max()
        .map(|(_, p, n)| (p, n))
}

/// A file read as it grows: whole lines only, each once.
pub struct LineTail {
    path: PathBuf,
    offset: u64,
    partial: String,
}

impl LineTail {
    pub fn new(path: PathBuf) -> LineTail {
        LineTail {
            path,
            offset: 0,
            partial: String::new(),
        }
    }

    /// The lines completed since the last call (without their newline).
    pub fn lines(&mut self) -> Vec<String> {
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return Vec::new();
        };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return Vec::new();
        }
        let mut lines = Vec::new();
        let mut r = std::io::BufReader::new(&mut f);
        loop {
            let mut line = String::new();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    self.offset += n as u64;
                    if !line.ends_with('\n') {
                        self.partial.push_str(&line);
                        break;
                    }
                    let whole = std::mem::take(&mut self.partial) + &line;
                    lines.push(whole.trim_end().to_string());
                }
            }
        }
        lines
    }
}

/// `timeseries.csv` read as it grows: whole lines only, grouped by second.
pub struct SeriesTail {
    lines: LineTail,
    /// Rows of the newest second, held until a later second (or the end) shows it is complete.
    pending: Vec<Row>,
}

impl SeriesTail {
    pub fn new(dir: &Path) -> SeriesTail {
        SeriesTail {
            lines: LineTail::new(dir.join(TIME_SERIES)),
            pending: Vec::new(),
        }
    }

    /// Every second completed since the last call (all of them with `ended`).
    pub fn seconds(&mut self, ended: bool) -> Vec<Vec<Row>> {
        let mut out = Vec::new();
        for r in self.new_rows() {
            if self.pending.first().is_some_and(|p| p.second != r.second) {
                out.push(std::mem::take(&mut self.pending));
            }
            self.pending.push(r);
        }
        if ended && !self.pending.is_empty() {
            out.push(std::mem::take(&mut self.pending));
        }
        out
    }

    fn new_rows(&mut self) -> Vec<Row> {
        let lines = self.lines.lines();
        lines.iter().filter_map(|l| parse_row(l)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::series::test_row as row;

    #[test]
    fn the_tail_hands_over_whole_seconds_only() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join(TIME_SERIES);
        let mut w = crate::metrics::series::SeriesWriter::create(&path).unwrap();
        let mut tail = SeriesTail::new(d.path());
        w.row(&row(0, "main", 5, 1000)).unwrap();
        w.row(&row(1, "main", 6, 1000)).unwrap();
        w.flush().unwrap();
        let s = tail.seconds(false);
        assert_eq!(s.len(), 1, "second 1 may still get rows");
        assert_eq!(s[0][0].second, 0);
        w.row(&row(1, "next", 2, 1000)).unwrap();
        w.flush().unwrap();
        assert!(tail.seconds(false).is_empty());
        let s = tail.seconds(true);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].len(), 2, "both rows of second 1");
    }
}
