//! The run directory: the one owner of its file names and of reading and
//! writing them. Everything else asks here instead of joining paths itself.
//!
//! ```text
//! RUN/
//!   profile.yaml      the profile as run (templates, never secrets)
//!   run.json          [`RunMeta`]: what was planned, written before the load
//!   events.jsonl      phase starts, breaches, the end ([`EventLog`])
//!   latency.hlog      HdrHistogram interval log, one line per phase × class × second
//!   timeseries.csv    one row per phase and second
//!   errors.jsonl      what went wrong, per phase and second with errors ([`errors`])
//!   setup.json        what `setup:` and `teardown:` did ([`read_setup`]; names, never values)
//!   traces.jsonl      the slowest traced requests, per phase and second ([`traces`])
//!   summary.json      the judged result (`judge::Summary`), written atomically
//!   findings.json     the diagnosis' findings
//!   report.html       the rendered report
//!   diagnostics/      collectors' samples (*.jsonl), dumps, JFR, and evidence.json
//! ```
//!
//! Every read of a run directory happens here. [`RunData::read`] reads one
//! once into what the judge and the renderers take ([`data`]); the latency
//! log and the series are mapped onto the phases in one loop
//! ([`read::for_each_part`], streamed one interval at a time), the
//! per-second rows are merged in one place ([`read::seconds`]), and
//! `evidence.json` has one loader ([`evidence::load`]); a directory still
//! being written is read as it grows through [`tail`], and whether its
//! writer still runs is told by [`writer`]. A last line cut short (a full
//! disk, a kill mid-write) is skipped, and
//! [`read::measured_noting`] says so.

pub mod data;
pub mod errors;
pub mod evidence;
pub mod fds;
pub mod read;
pub mod tail;
pub mod traces;
pub mod writer;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use thiserror::Error;

use crate::metrics::hlog::HlogError;
use crate::vocab::{Model, PhaseInfo, ShapeKind};

pub use crate::vocab::files::*;
pub use data::RunData;

#[derive(Debug, Error)]
pub enum RundirError {
    #[error("{path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Hlog(#[from] HlogError),
}

/// What `run.json` records at the start of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunMeta {
    pub name: String,
    pub target: String,
    pub model: Model,
    pub shape: ShapeKind,
    pub phases: Vec<PhaseInfo>,
    /// Unix seconds.
    pub started_at: f64,
    pub time_scale: f64,
    pub shard_index: u32,
    pub shard_count: u32,
    pub workers: usize,
    pub brunt_version: String,
    /// Names of the requests of the mix, in profile order, then the
    /// outcomes WebSocket steps record apart (`STEP connect`, `STEP MESSAGE`).
    #[serde(default)]
    pub requests: Vec<String>,
    /// The HTTP protocol the run spoke (`HTTP/1.1`, `HTTP/2 over TLS`, …),
    /// as the preflight settled it; `WebSocket` (`HTTP/1.1 + WebSocket`)
    /// when the mix has WebSocket steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Names of the scenarios, in profile order (the `.sK` tags of the latency log).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<String>,
    /// The `--start-at` the shards agreed on (Unix seconds); `started_at` is
    /// when this process actually started, so the two give its lateness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<f64>,
    /// Set on a run directory written by `brunt merge`: which shards it adds up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergedFrom>,
    /// The process writing the directory (`brunt watch` tells a killed run
    /// from a busy one by it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer: Option<writer::Writer>,
    /// `load.connections`: the lanes a due request waits for in the open
    /// model (absent from directories written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<usize>,
    /// `target.trace`, when the run sent trace context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<traces::TraceMeta>,
}

impl RunMeta {
    /// Planned length of the load.
    pub fn planned(&self) -> std::time::Duration {
        self.phases.last().map(|p| p.end()).unwrap_or_default()
    }
    pub fn phase_index(&self, name: &str) -> Option<usize> {
        self.phases.iter().position(|p| p.name == name)
    }
}

/// Recorded in a merged directory's `run.json` (`merged`): the shards it adds up.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MergedFrom {
    pub shard_count: u32,
    pub shards: Vec<ShardStart>,
    /// Latest minus earliest actual start, milliseconds.
    pub skew_ms: f64,
}

/// When one shard started, as its own `run.json` says.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ShardStart {
    /// 1-based, as on the command line.
    pub shard: u32,
    pub dir: String,
    /// Actual start, Unix seconds.
    pub started_at: f64,
    /// The `--start-at` it was given, if any.
    pub start_at: Option<f64>,
    /// Whole seconds its windows were shifted to line up with the earliest shard.
    pub shift_s: u64,
}

/// A file of the run directory as text.
pub fn read_text(dir: &Path, name: &str) -> Result<String, RundirError> {
    let path = dir.join(name);
    std::fs::read_to_string(&path).map_err(|e| RundirError::Read {
        path,
        message: e.to_string(),
    })
}

/// A JSON file of the run directory.
pub fn read_json<T: DeserializeOwned>(dir: &Path, name: &str) -> Result<T, RundirError> {
    let text = read_text(dir, name)?;
    serde_json::from_str(&text).map_err(|e| RundirError::Read {
        path: dir.join(name),
        message: e.to_string(),
    })
}

pub fn read_meta(dir: &Path) -> Result<RunMeta, RundirError> {
    read_json(dir, RUN_JSON)
}

/// `setup.json`: empty for a run without `setup:` or `teardown:` (or
/// whose file cannot be read: the record is a report, not the result).
pub fn read_setup(dir: &Path) -> crate::vocab::setup::OnceFile {
    read_json(dir, SETUP).unwrap_or_default()
}

/// Change `setup.json` (read, edit, written atomically).
pub fn edit_setup(
    dir: &Path,
    edit: impl FnOnce(&mut crate::vocab::setup::OnceFile),
) -> Result<(), RundirError> {
    let mut f = read_setup(dir);
    edit(&mut f);
    write_json(&dir.join(SETUP), &f)
}

/// Write `value` as pretty JSON through a temporary file and a rename, so a
/// reader (or a kill) never sees half a file.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), RundirError> {
    let err = |source| RundirError::Write {
        path: path.to_path_buf(),
        source,
    };
    let text = serde_json::to_string_pretty(value).map_err(|e| err(std::io::Error::other(e)))?;
    write_atomic(path, (text + "\n").as_bytes())
}

/// `streams.json`: the server-streaming gRPC calls' rows (no file without any).
pub fn write_streams(
    dir: &Path,
    rows: &[crate::vocab::streams::StreamRow],
) -> Result<(), RundirError> {
    if rows.is_empty() {
        return Ok(());
    }
    write_json(&dir.join(STREAMS), &rows)
}

/// Write bytes through a temporary file beside `path` and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RundirError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|source| RundirError::Write {
            path: path.to_path_buf(),
            source,
        })
}

/// Hand each event of `events.jsonl` to `f`, in order, streamed; a line
/// that is not a JSON object (the torn last line of a killed run) is
/// skipped, and a run without the file has no events.
pub fn for_each_event<E>(
    dir: &Path,
    mut f: impl FnMut(serde_json::Map<String, serde_json::Value>) -> Result<(), E>,
) -> Result<(), E> {
    use std::io::BufRead as _;
    let Ok(file) = std::fs::File::open(dir.join(EVENTS)) else {
        return Ok(());
    };
    for line in std::io::BufReader::new(file).lines().map_while(Result::ok) {
        if let Ok(serde_json::Value::Object(ev)) = serde_json::from_str(&line) {
            f(ev)?;
        }
    }
    Ok(())
}

/// A JSON Lines file created with its first line (a run with nothing to
/// say has no file), each line flushed as written so a killed run keeps it.
pub struct LazyLog {
    path: PathBuf,
    file: Option<std::io::BufWriter<std::fs::File>>,
}

impl LazyLog {
    pub fn new(path: PathBuf) -> LazyLog {
        LazyLog { path, file: None }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a line has been written (the file exists).
    pub fn started(&self) -> bool {
        self.file.is_some()
    }

    /// Append one line (creating the file first).
    pub fn push<T: Serialize>(&mut self, line: &T) -> Result<(), RundirError> {
        let failed = |source| RundirError::Write {
            path: self.path.clone(),
            source,
        };
        let file = match &mut self.file {
            Some(f) => f,
            None => {
                let f = std::fs::File::create(&self.path).map_err(failed)?;
                self.file.insert(std::io::BufWriter::new(f))
            }
        };
        serde_json::to_writer(&mut *file, line)
            .map_err(std::io::Error::other)
            .and_then(|()| writeln!(file))
            .and_then(|()| file.flush())
            .map_err(failed)
    }
}

/// `events.jsonl`: one JSON object per line, appended as things happen.
pub struct EventLog {
    file: std::io::BufWriter<std::fs::File>,
    path: PathBuf,
}

impl EventLog {
    pub fn create(dir: &Path) -> Result<EventLog, RundirError> {
        let path = dir.join(EVENTS);
        let file = std::fs::File::create(&path).map_err(|source| RundirError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(EventLog {
            file: std::io::BufWriter::new(file),
            path,
        })
    }
    /// Append one event and flush it, so a killed run keeps it.
    pub fn push(&mut self, event: &serde_json::Value) -> Result<(), RundirError> {
        writeln!(self.file, "{event}")
            .and_then(|()| self.file.flush())
            .map_err(|source| RundirError::Write {
                path: self.path.clone(),
                source,
            })
    }
}
