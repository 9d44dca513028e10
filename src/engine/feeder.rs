//! Feeders: rows of a CSV (header row) or JSON Lines file handed to
//! templated requests (`{{ feeder.users.name }}`).
//!
//! Memory: the file is read once (at most [`MAX_FEEDER_BYTES`], a clear
//! error above) and indexed as one (start, end) pair of `u32` byte offsets
//! per row; a field is cut out of its row when a request needs it. So a
//! feeder costs its file size plus 8 bytes a row, and nothing per request.
//!
//! Modes: `circular` and `unique` hand rows out with one atomic counter per
//! feeder, interleaved across shards the way arrivals are (shard `i` of `N`
//! takes rows `i, i+N, i+2N, …`), so `unique` never repeats a row across
//! workers or shards; `random` draws a row from the worker's generator.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use thiserror::Error;

use super::Shard;
use crate::profile::{FeederFormat, FeederMode, FeederSpec};

/// Largest feeder file read (256 MiB): rows are indexed with 32-bit offsets
/// and the file is held in memory. Split a larger data set across shards.
pub const MAX_FEEDER_BYTES: u64 = 256 << 20;

#[derive(Debug, Error)]
pub enum FeederError {
    #[error("feeder `{name}`: cannot read {path}: {source}")]
    Read {
        name: String,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("feeder `{name}`: {path} is {size} bytes; feeders read at most {MAX_FEEDER_BYTES} bytes (256 MiB) — split the file, e.g. one part per shard")]
    TooLarge {
        name: String,
        path: PathBuf,
        size: u64,
    },
    #[error("feeder `{name}`: {path}:{line}: {message}")]
    Parse {
        name: String,
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("feeder `{name}`: {path} has no data rows")]
    Empty { name: String, path: PathBuf },
    #[error("feeder `{name}` has no column `{column}`; its columns are {columns}")]
    NoColumn {
        name: String,
        column: String,
        columns: String,
    },
}

/// One feeder's rows, read and indexed once.
pub struct Feeder {
    pub name: String,
    pub mode: FeederMode,
    format: FeederFormat,
    data: Vec<u8>,
    /// Byte range of each data row in `data` (line end excluded).
    rows: Vec<(u32, u32)>,
    columns: Vec<String>,
    next: AtomicU64,
    shard: Shard,
}

/// A row handed out, or why none was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    Row(u32),
    /// The last row of a `unique` feeder (for this shard): use it, then stop.
    Last(u32),
    /// A `unique` feeder has no row left.
    Exhausted,
}

impl Feeder {
    /// Read and index `spec.file` (relative to `base_dir`).
    pub fn open(
        name: &str,
        spec: &FeederSpec,
        base_dir: Option<&Path>,
        shard: Shard,
    ) -> Result<Feeder, FeederError> {
        let path = match base_dir {
            Some(b) if spec.file.is_relative() => b.join(&spec.file),
            _ => spec.file.clone(),
        };
        let read = |source| FeederError::Read {
            name: name.into(),
            path: path.clone(),
            source,
        };
        let size = std::fs::metadata(&path).map_err(read)?.len();
        if size > MAX_FEEDER_BYTES {
            return Err(FeederError::TooLarge {
                name: name.into(),
                path,
                size,
            });
        }
        let data = std::fs::read(&path).map_err(read)?;
        let parse = |line: usize, message: String| FeederError::Parse {
            name: name.into(),
            path: path.clone(),
            line,
            message,
        };
        let format = spec.format();
        let mut lines =
            row_ranges(&data, format == FeederFormat::Csv).map_err(|(line, m)| parse(line, m))?;
        let columns = match format {
            FeederFormat::Csv => {
                if lines.is_empty() {
                    return Err(parse(1, "no header row".into()));
                }
                let (s, e) = lines.remove(0);
                let mut cols = Vec::new();
                let mut buf = Vec::new();
                let row = &data[s as usize..e as usize];
                let mut i = 0;
                while let Some(()) = csv_field(row, i, &mut buf) {
                    cols.push(String::from_utf8_lossy(&buf).trim().to_string());
                    buf.clear();
                    i += 1;
                }
                // A ragged row would send an empty value, or the wrong one, unseen.
                for &(s, e) in &lines {
                    let n = csv_width(&data[s as usize..e as usize]);
                    if n != cols.len() {
                        let line = 1 + data[..s as usize].iter().filter(|&&b| b == b'\n').count();
                        return Err(parse(
                            line,
                            format!(
                                "{n} field{} where the header has {} ({})",
                                if n == 1 { "" } else { "s" },
                                cols.len(),
                                cols.join(", ")
                            ),
                        ));
                    }
                }
                cols
            }
            FeederFormat::Jsonl => {
                let mut cols = Vec::new();
                for (n, (s, e)) in lines.iter().enumerate() {
                    let v: serde_json::Map<String, serde_json::Value> =
                        serde_json::from_slice(&data[*s as usize..*e as usize])
                            .map_err(|e| parse(n + 1, format!("not a JSON object: {e}")))?;
                    if n == 0 {
                        cols = v.keys().cloned().collect();
                    }
                }
                cols
            }
        };
        if lines.is_empty() {
            return Err(FeederError::Empty {
                name: name.into(),
                path,
            });
        }
        Ok(Feeder {
            name: name.into(),
            mode: spec.mode,
            format,
            data,
            rows: lines,
            columns,
            next: AtomicU64::new(0),
            shard,
        })
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The index of `column`, or an error listing the columns there are.
    pub fn column(&self, column: &str) -> Result<usize, FeederError> {
        self.columns
            .iter()
            .position(|c| c == column)
            .ok_or_else(|| FeederError::NoColumn {
                name: self.name.clone(),
                column: column.into(),
                columns: self.columns.join(", "),
            })
    }

    /// The next row for one request.
    pub fn take(&self, rng: &mut fastrand::Rng) -> Take {
        let n = self.rows.len() as u64;
        let (i, count) = (self.shard.index as u64, self.shard.count.max(1) as u64);
        match self.mode {
            FeederMode::Random => Take::Row(rng.u64(0..n) as u32),
            FeederMode::Circular => {
                let c = self.next.fetch_add(1, Ordering::Relaxed);
                Take::Row((c.wrapping_mul(count).wrapping_add(i) % n) as u32)
            }
            FeederMode::Unique => {
                let c = self.next.fetch_add(1, Ordering::Relaxed);
                let row = c.saturating_mul(count).saturating_add(i);
                if row >= n {
                    Take::Exhausted
                } else if row + count >= n {
                    Take::Last(row as u32)
                } else {
                    Take::Row(row as u32)
                }
            }
        }
    }

    /// Rows this shard may use in `unique` mode.
    pub fn unique_rows(&self) -> u64 {
        let n = self.rows.len() as u64;
        let (i, count) = (self.shard.index as u64, self.shard.count.max(1) as u64);
        n.saturating_sub(i).div_ceil(count)
    }

    /// Append column `col` of row `row` to `out` (empty when the row lacks it).
    pub fn field(&self, row: u32, col: usize, out: &mut Vec<u8>) {
        let Some(&(s, e)) = self.rows.get(row as usize) else {
            return;
        };
        let line = &self.data[s as usize..e as usize];
        match self.format {
            FeederFormat::Csv => {
                let _ = csv_field(line, col, out);
            }
            FeederFormat::Jsonl => {
                let Some(key) = self.columns.get(col) else {
                    return;
                };
                let Ok(map) =
                    serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(line)
                else {
                    return;
                };
                match map.get(key) {
                    Some(serde_json::Value::String(s)) => out.extend_from_slice(s.as_bytes()),
                    Some(serde_json::Value::Null) | None => {}
                    Some(v) => out.extend_from_slice(v.to_string().as_bytes()),
                }
            }
        }
    }
}

/// The byte ranges of the non-blank lines of `data` (a CSV newline inside
/// quotes does not end a row); errors carry the 1-based line.
fn row_ranges(data: &[u8], csv: bool) -> Result<Vec<(u32, u32)>, (usize, String)> {
    let mut rows = Vec::new();
    let mut start = 0usize;
    let mut line = 1usize;
    let mut first_line = 1usize;
    let mut quoted = false;
    let push = |s: usize, e: usize, rows: &mut Vec<(u32, u32)>| {
        let mut e = e;
        if e > s && data[e - 1] == b'\r' {
            e -= 1;
        }
        if !data[s..e].iter().all(|b| b.is_ascii_whitespace()) {
            rows.push((s as u32, e as u32));
        }
    };
    for (i, &b) in data.iter().enumerate() {
        if csv && b == b'"' {
            quoted = !quoted;
        } else if b == b'\n' {
            line += 1;
            if !quoted {
                push(start, i, &mut rows);
                start = i + 1;
                first_line = line;
            }
        }
    }
    if quoted {
        return Err((first_line, "a quoted field is never closed".into()));
    }
    if start < data.len() {
        push(start, data.len(), &mut rows);
    }
    Ok(rows)
}

/// How many fields a CSV row has: commas outside quotes, plus one (`""`
/// inside quotes toggles twice, so it counts right).
fn csv_width(row: &[u8]) -> usize {
    let mut quoted = false;
    let mut n = 1;
    for &b in row {
        match b {
            b'"' => quoted = !quoted,
            b',' if !quoted => n += 1,
            _ => {}
        }
    }
    n
}

/// Append field `col` of a CSV row to `out` (RFC 4180 quoting, `""` for a
/// quote); `None` when the row has fewer fields.
fn csv_field(row: &[u8], col: usize, out: &mut Vec<u8>) -> Option<()> {
    let mut i = 0usize;
    let mut field = 0usize;
    loop {
        let want = field == col;
        let mut in_quotes = row.get(i) == Some(&b'"');
        if in_quotes {
            i += 1;
        }
        loop {
            match row.get(i) {
                None => return want.then_some(()),
                Some(b'"') if in_quotes => {
                    if row.get(i + 1) == Some(&b'"') {
                        if want {
                            out.push(b'"');
                        }
                        i += 2;
                    } else {
                        in_quotes = false;
                        i += 1;
                    }
                }
                Some(b',') if !in_quotes => break,
                Some(&b) => {
                    if want {
                        out.push(b);
                    }
                    i += 1;
                }
            }
        }
        if want {
            return Some(());
        }
        field += 1;
        i += 1; // past the comma
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(row: &str, col: usize) -> Option<String> {
        let mut out = Vec::new();
        csv_field(row.as_bytes(), col, &mut out).map(|_| String::from_utf8(out).expect("utf8"))
    }

    #[test]
    fn csv_fields_with_quotes() {
        assert_eq!(field("a,b,c", 0).as_deref(), Some("a"));
        assert_eq!(field("a,b,c", 2).as_deref(), Some("c"));
        assert_eq!(field("a,b,c", 3), None);
        assert_eq!(field("\"x, y\",z", 0).as_deref(), Some("x, y"));
        assert_eq!(field("\"x, y\",z", 1).as_deref(), Some("z"));
        assert_eq!(
            field("\"say \"\"hi\"\"\",2", 0).as_deref(),
            Some("say \"hi\"")
        );
        assert_eq!(field("a,,c", 1).as_deref(), Some(""));
        assert_eq!(field("a,", 1).as_deref(), Some(""));
    }

    #[test]
    fn rows_skip_blank_lines_and_keep_quoted_newlines() {
        let data = b"h\r\n1\n\n\"two\nlines\"\n3";
        let rows = row_ranges(data, true).expect("rows");
        let text: Vec<&[u8]> = rows
            .iter()
            .map(|(s, e)| &data[*s as usize..*e as usize])
            .collect();
        assert_eq!(
            text,
            vec![&b"h"[..], &b"1"[..], &b"\"two\nlines\""[..], &b"3"[..]]
        );
        assert!(row_ranges(b"a\n\"open\n", true).is_err());
    }

    #[test]
    fn ragged_csv_rows_are_refused_with_their_line() {
        assert_eq!(csv_width(b"a,b,c"), 3);
        assert_eq!(csv_width(b"\"x, y\",\"say \"\"hi, there\"\"\""), 2);
        assert_eq!(csv_width(b"a,,"), 3);
        let dir = tempfile::tempdir().expect("tmp");
        let f = dir.path().join("r.csv");
        // Line 5 is short (a quoted newline makes line 2 two lines, 4 is blank).
        std::fs::write(&f, "id,name\n1,\"two\nlines\"\n\n3\n4,d\n").expect("write");
        let spec = FeederSpec {
            file: f.clone(),
            mode: FeederMode::Circular,
            format: None,
        };
        let e = Feeder::open("r", &spec, None, Shard { index: 0, count: 1 })
            .err()
            .expect("a ragged row is an error");
        assert_eq!(
            e.to_string(),
            format!(
                "feeder `r`: {}:5: 1 field where the header has 2 (id, name)",
                f.display()
            )
        );
    }

    #[test]
    fn unique_rows_partition_across_shards() {
        let dir = std::env::temp_dir().join(format!("brunt-feeder-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("tmp");
        let f = dir.join("u.csv");
        let mut text = String::from("id\n");
        for i in 0..10 {
            text.push_str(&format!("{i}\n"));
        }
        std::fs::write(&f, text).expect("write");
        let spec = FeederSpec {
            file: f.clone(),
            mode: FeederMode::Unique,
            format: None,
        };
        let mut seen = Vec::new();
        let mut rng = fastrand::Rng::with_seed(1);
        for index in 0..3 {
            let feeder = Feeder::open("u", &spec, None, Shard { index, count: 3 }).expect("opens");
            let mut got = 0;
            loop {
                match feeder.take(&mut rng) {
                    Take::Row(r) => seen.push(r),
                    Take::Last(r) => {
                        seen.push(r);
                        got += 1;
                        assert_eq!(feeder.take(&mut rng), Take::Exhausted);
                        break;
                    }
                    Take::Exhausted => panic!("exhausted before the last row"),
                }
                got += 1;
            }
            assert_eq!(got as u64, feeder.unique_rows());
        }
        seen.sort();
        assert_eq!(seen, (0..10).collect::<Vec<u32>>());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
