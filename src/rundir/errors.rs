//! `errors.jsonl`: the errors table's tally, one line per phase and second
//! that had an answer not ok (`{"second", "phase", "counts", "samples"}`),
//! appended and flushed as the run goes, so a killed run keeps it and the
//! live view reads it as it grows ([`ErrorsTail`]); the whole file summed
//! is the run's table ([`read`]).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::tail::LineTail;
use super::{LazyLog, RundirError, ERRORS_LOG};
use crate::metrics::errors::ErrorTally;

/// One line of `errors.jsonl`.
#[derive(Debug, Serialize, Deserialize)]
pub struct ErrorsLine {
    pub second: u64,
    pub phase: String,
    #[serde(flatten)]
    pub tally: ErrorTally,
}

/// The writer, created with the first line (a run without errors has no file).
pub struct ErrorsLog(LazyLog);

impl ErrorsLog {
    pub fn new(dir: &Path) -> ErrorsLog {
        ErrorsLog(LazyLog::new(dir.join(ERRORS_LOG)))
    }

    /// Append the tally of `phase` in `second` (nothing when it is empty).
    pub fn push(
        &mut self,
        second: u64,
        phase: &str,
        tally: &ErrorTally,
    ) -> Result<(), RundirError> {
        if tally.is_empty() {
            return Ok(());
        }
        #[derive(Serialize)]
        struct Line<'a> {
            second: u64,
            phase: &'a str,
            #[serde(flatten)]
            tally: &'a ErrorTally,
        }
        self.0.push(&Line {
            second,
            phase,
            tally,
        })
    }
}

/// `errors.jsonl` read as it grows: the run's tally so far.
pub struct ErrorsTail {
    lines: LineTail,
    tally: ErrorTally,
}

impl ErrorsTail {
    pub fn new(dir: &Path) -> ErrorsTail {
        ErrorsTail {
            lines: LineTail::new(dir.join(ERRORS_LOG)),
            tally: ErrorTally::default(),
        }
    }

    /// The tally with every whole line written since the last call added.
    pub fn refresh(&mut self) -> &ErrorTally {
        for l in self.lines.lines() {
            if let Ok(line) = serde_json::from_str::<ErrorsLine>(&l) {
                self.tally.merge(&line.tally);
            }
        }
        &self.tally
    }
}

/// The whole run's tally (empty without the file; a line cut short is skipped).
pub fn read(dir: &Path) -> ErrorTally {
    ErrorsTail::new(dir).refresh().clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::errors::{ErrorKey, What};
    use crate::metrics::Class;
    use std::io::Write as _;

    #[test]
    fn lines_written_add_up_and_a_cut_line_is_skipped() {
        let d = tempfile::tempdir().unwrap();
        let mut w = ErrorsLog::new(d.path());
        let mut t = ErrorTally::default();
        w.push(0, "main", &t).unwrap();
        assert!(!d.path().join(ERRORS_LOG).exists(), "no errors, no file");
        let key = ErrorKey {
            class: Class::HttpError,
            request: 1,
            what: What::Status(500),
        };
        t.add(key.clone(), 3);
        t.sample(&key, b"boom");
        w.push(0, "main", &t).unwrap();
        let mut tail = ErrorsTail::new(d.path());
        assert_eq!(tail.refresh().counts[&key], 3);
        w.push(1, "main", &t).unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(d.path().join(ERRORS_LOG))
            .unwrap();
        write!(f, "{{\"second\":2,\"pha").unwrap();
        assert_eq!(tail.refresh().counts[&key], 6);
        let all = read(d.path());
        assert_eq!(all.counts[&key], 6);
        assert_eq!(all.samples.len(), 1);
        assert_eq!(all.samples[0].body, "boom");
    }
}
