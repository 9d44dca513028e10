//! Diagnosis: reads what the collectors captured — HotSpot text thread dumps
//! (JDK 8–25, several per file), JDK 21+ JSON thread dumps, pinning traces
//! and JFR recordings, Go goroutine dumps and mutex/block/CPU profiles,
//! `py-spy` dumps of Python services — into findings ([`Analysis`]) for the report,
//! `findings.json` and `brunt analyze`.
//!
//! | module | owns |
//! |---|---|
//! | [`model`] | the parsed dump: threads, frames, lock lines, deadlocks |
//! | [`goroutines`] | Go goroutine dumps (`/debug/pprof/goroutine?debug=2`) into the same dump |
//! | [`text`] | text dumps (`jstack -l`, `jcmd Thread.print -l`, SIGQUIT) |
//! | [`json`] | `Thread.dump_to_file -format=json` |
//! | [`pinning`] | `-Djdk.tracePinnedThreads` output |
//! | [`pyspy`] | `py-spy dump --native` of a CPython process into the same dump (lock and GIL waits) |
//! | [`pprof`] | Go's pprof profiles (gzip `profile.proto`): mutex and block waits by stack |
//! | [`jfr`] | JFR recordings (own streaming parser; why: see its doc) |
//! | [`flame`] | flame graphs of recordings: `.folded` stacks, SVG, differential |
//! | [`database`] | the database collector's samples read into lock-wait chains, idle-in-transaction holders, connection saturation, waits and statements per phase |
//! | [`findings`] | what it all means: contention, pool waits, pinning, deadlocks, clusters, persistence |
//! | [`phases`] | what each dump's threads were doing, and JFR waits per load phase |
//! | [`memory`] | class histograms and Native Memory Tracking summaries (what a soak's memory is made of) |
//! | [`growth`] | the parts a soak watches grow, lined up over the run (classes, thread groups, NMT categories); young vs full GCs |
//! | [`thread_groups`] | threads grouped by name pattern (`export-worker-N`) with their common frame |
//!
//! Input from outside never panics the parser: unreadable parts become
//! warnings on a partial result, and a file that yields nothing is an error
//! for that file only.
//!
//! From a run (after the load, on its run directory):
//! ```no_run
//! use brunt::diagnosis::{Analysis, Options, PhaseWindow, PoolPattern};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let run_dir = std::path::Path::new("runs/2026-11-30T12-00-00");
//! let opts = Options {
//!     // From the profile: extra pool recognisers.
//!     pool_patterns: vec![PoolPattern {
//!         name: "acme-pool".into(),
//!         frame: regex::Regex::new(r"com\.acme\.pool\.Pool\.acquire")?,
//!     }],
//!     ..Options::default()
//! };
//! // Either give the phases up front (JFR sites are then split per phase
//! // and every finding is tagged) …
//! let opts = Options {
//!     phases: vec![PhaseWindow { name: "step-3".into(), start_unix: 1.8e9, end_unix: 1.8e9 + 30.0 }],
//!     ..opts
//! };
//! let mut analysis = Analysis::from_run_dir(run_dir, &opts)?;
//! // … or map each finding's time to a phase afterwards.
//! analysis.tag_phases(|_at: std::time::SystemTime| Some("step-3".to_string()));
//! analysis.write_findings_json(run_dir)?;
//! # Ok(()) }
//! ```

pub mod database;
pub mod findings;
pub mod flame;
pub mod goroutines;
pub mod growth;
pub mod jfr;
pub mod json;
pub mod memory;
pub mod model;
pub mod phases;
pub mod pinning;
pub mod pprof;
pub mod pyspy;
pub mod text;
pub mod thread_groups;

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

pub use findings::{Detail, Evidence, Finding, Options, PoolPattern, Severity};
pub use jfr::{HeapSample, JfrRecording, JvmGauges};
pub use model::{ThreadDump, ThreadInfo, ThreadState};

#[derive(Debug, thiserror::Error)]
pub enum DiagError {
    #[error("{file}: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}: not a valid JSON thread dump: {message}")]
    Json { file: String, message: String },
    #[error("{file}: {source}")]
    Jfr { file: String, source: jfr::JfrError },
    #[error("{file}: empty file")]
    Empty { file: String },
    #[error("{file}: not a thread dump, JFR recording or pinning trace")]
    Unrecognized { file: String },
    /// Refused from its first bytes: not text, and not a JFR recording.
    #[error("{file}: not a thread dump, JFR recording or pinning trace: binary data ({why})")]
    Binary { file: String, why: String },
    #[error("{file}: {message}")]
    Memory { file: String, message: String },
    #[error("{file}: {source}")]
    Pprof {
        file: String,
        source: pprof::PprofError,
    },
    #[error("{file}: {source}")]
    PySpy {
        file: String,
        source: pyspy::PySpyError,
    },
    #[error("{file}: {source}")]
    GoDump {
        file: String,
        source: goroutines::GoDumpError,
    },
    #[error("no diagnostics could be read: {0}")]
    NoInput(String),
}

/// What kind of file an input was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InputKind {
    ThreadDumpText,
    ThreadDumpJson,
    Jfr,
    PinningTrace,
    /// A class histogram or a Native Memory Tracking summary.
    Memory,
    /// A Go pprof profile (mutex, block, CPU).
    Pprof,
    /// Collapsed stacks (`py-spy record -f raw`).
    Stacks,
    Unreadable,
}

/// One input file and what was read from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputFile {
    pub file: String,
    pub kind: InputKind,
    pub dumps: usize,
    pub threads: usize,
    /// JFR events or pinning traces.
    pub events: u64,
    pub warnings: Vec<String>,
    pub error: Option<String>,
}

/// Thread-state counts of one dump, for the report's threads-over-time chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DumpStates {
    pub file: String,
    pub index: usize,
    pub time: Option<String>,
    pub time_unix: Option<f64>,
    pub phase: Option<String>,
    pub threads: usize,
    pub states: BTreeMap<String, usize>,
    /// What the threads were doing: idle told apart from contention.
    #[serde(default)]
    pub activity: Option<crate::vocab::threads::Activity>,
}

/// Everything brunt read from a set of diagnostic files. Serializable as
/// `findings.json` and into `summary.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// Schema version of this structure.
    pub version: u32,
    pub inputs: Vec<InputFile>,
    /// Findings, most severe first.
    pub findings: Vec<Finding>,
    pub dumps: Vec<DumpStates>,
    /// Heap before/after GC from JFR recordings, in time order.
    pub heap: Vec<HeapSample>,
    /// Direct buffers, Metaspace and loaded classes from JFR recordings.
    #[serde(default, skip_serializing_if = "JvmGauges::is_empty")]
    pub gauges: JvmGauges,
    /// JFR waits per load phase a recording covers (with phases given).
    #[serde(default)]
    pub jfr_phases: Vec<crate::vocab::threads::JfrPhase>,
    /// Collapsed stacks of the recordings, per phase and kind (not in
    /// `findings.json`: they are written beside the recording, see [`flame`]).
    #[serde(skip)]
    pub flames: Vec<jfr::FoldedStacks>,
    /// Class histograms and NMT summaries, in the order read (not in
    /// `findings.json`: thousands of rows each; the files stay in `diagnostics/`).
    #[serde(skip)]
    pub memory: Vec<growth::MemorySample>,
    /// Each dump's threads grouped by name pattern.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thread_groups: Vec<growth::GroupSample>,
}

pub const ANALYSIS_VERSION: u32 = 1;

/// A load phase in wall-clock time, so findings (and JFR sites, which are
/// aggregated while parsing) can be split and named by phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseWindow {
    pub name: String,
    /// Unix seconds, start inclusive, end exclusive.
    pub start_unix: f64,
    pub end_unix: f64,
}

/// The phase whose window holds `unix`.
pub fn phase_at(phases: &[PhaseWindow], unix: f64) -> Option<&str> {
    phases
        .iter()
        .find(|p| unix >= p.start_unix && unix < p.end_unix)
        .map(|p| p.name.as_str())
}

enum Parsed {
    Dumps(Vec<ThreadDump>),
    Pins(Vec<pinning::PinEvent>),
    Jfr(Box<JfrRecording>),
    Memory(growth::MemoryReport),
    Pprof(Box<pprof::GoProfile>),
    Stacks(jfr::FoldedStacks),
}

fn io_err(file: &str) -> impl Fn(std::io::Error) -> DiagError + '_ {
    move |source| DiagError::Io {
        file: file.to_string(),
        source,
    }
}

/// Reads one file of any supported kind (detected by content, not by name).
fn parse_file(
    path: &Path,
    phases: &[PhaseWindow],
) -> Result<(InputKind, Parsed, Vec<String>), DiagError> {
    let name = path.display().to_string();
    let mut head = [0u8; 8];
    let n = fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(io_err(&name))?;
    if n == 0 {
        return Err(DiagError::Empty { file: name });
    }
    if jfr::looks_like_jfr(head.get(..n).unwrap_or_default()) {
        let rec = jfr::parse_jfr_file_phased(path, phases).map_err(|source| DiagError::Jfr {
            file: name.clone(),
            source,
        })?;
        let w = rec.warnings.clone();
        return Ok((InputKind::Jfr, Parsed::Jfr(Box::new(rec)), w));
    }
    if pprof::looks_like_gzip(head.get(..n).unwrap_or_default()) {
        // Read whole only when it can be a profile (those are kilobytes).
        let len = fs::metadata(path).map_err(io_err(&name))?.len();
        if len > pprof::MAX_FILE {
            return Err(DiagError::Pprof {
                file: name,
                source: pprof::PprofError::TooLarge,
            });
        }
        let bytes = fs::read(path).map_err(io_err(&name))?;
        let p = pprof::parse_profile(&bytes, &name).map_err(|source| DiagError::Pprof {
            file: name.clone(),
            source,
        })?;
        return Ok((InputKind::Pprof, Parsed::Pprof(Box::new(p)), vec![]));
    }
    if let Some(m) = memory_report(path, &name)? {
        return Ok((InputKind::Memory, Parsed::Memory(m), vec![]));
    }
    // Only a file that can be one of the text formats is read whole.
    sniff_text(path, &name)?;
    let bytes = fs::read(path).map_err(io_err(&name))?;
    let text = String::from_utf8_lossy(&bytes);
    let mut warnings = vec![];
    if matches!(text, std::borrow::Cow::Owned(_)) {
        warnings.push("invalid UTF-8 replaced".to_string());
    }
    if goroutines::looks_like_goroutine_dump(&text) {
        let d =
            goroutines::parse_goroutine_dump(&text, &name).map_err(|source| DiagError::GoDump {
                file: name.clone(),
                source,
            })?;
        return Ok((InputKind::ThreadDumpText, Parsed::Dumps(vec![d]), warnings));
    }
    if pyspy::looks_like_raw_record(&text) {
        let f = pyspy::parse_raw_record(&text, &name).map_err(|source| DiagError::PySpy {
            file: name.clone(),
            source,
        })?;
        return Ok((InputKind::Stacks, Parsed::Stacks(f), warnings));
    }
    if pyspy::looks_like_pyspy_dump(&text) {
        let d = pyspy::parse_pyspy_dump(&text, &name).map_err(|source| DiagError::PySpy {
            file: name.clone(),
            source,
        })?;
        return Ok((InputKind::ThreadDumpText, Parsed::Dumps(vec![d]), warnings));
    }
    if json::looks_like_json_dump(&text) {
        let d = json::parse_json_dump(&text, &name)?;
        warnings.extend(d.warnings.iter().cloned());
        return Ok((InputKind::ThreadDumpJson, Parsed::Dumps(vec![d]), warnings));
    }
    // A target's log can hold both SIGQUIT dumps and pinning traces.
    if text::looks_like_text_dump(&text) {
        let dumps = text::parse_text_dumps(&text, &name);
        if !dumps.is_empty() {
            for d in &dumps {
                warnings.extend(d.warnings.iter().map(|w| format!("dump {}: {w}", d.index)));
            }
            let pins = if pinning::looks_like_pinning(&text) {
                pinning::parse_pinning(&text, &name)
            } else {
                vec![]
            };
            if !pins.is_empty() {
                warnings.push(format!("also holds {} pinning traces", pins.len()));
            }
            return Ok((InputKind::ThreadDumpText, Parsed::Dumps(dumps), warnings));
        }
    }
    if pinning::looks_like_pinning(&text) {
        let pins = pinning::parse_pinning(&text, &name);
        if !pins.is_empty() {
            return Ok((InputKind::PinningTrace, Parsed::Pins(pins), warnings));
        }
    }
    Err(DiagError::Unrecognized { file: name })
}

/// A class histogram or an NMT summary, told by its header in the first
/// 4 KiB (`#instances … #bytes`, `Native Memory Tracking`); `None` for
/// anything else. A cut or garbled one is an error for this file.
fn memory_report(path: &Path, name: &str) -> Result<Option<growth::MemoryReport>, DiagError> {
    let mut head = vec![0u8; 4096];
    let n = fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(io_err(name))?;
    let head = String::from_utf8_lossy(&head[..n]);
    let hist = head.contains("#instances") && head.contains("#bytes");
    let nmt = head.contains("Native Memory Tracking")
        || head.contains("Native memory tracking is not enabled");
    if !hist && !nmt {
        return Ok(None);
    }
    let text = fs::read_to_string(path).map_err(io_err(name))?;
    let bad = |e: memory::MemoryError| DiagError::Memory {
        file: name.to_string(),
        message: e.to_string(),
    };
    Ok(Some(if hist {
        growth::MemoryReport::Histogram(memory::ClassHistogram::parse(&text).map_err(bad)?)
    } else {
        match memory::NativeMemory::parse(&text) {
            Ok(m) => growth::MemoryReport::Native(m),
            Err(memory::MemoryError::NmtOff) => growth::MemoryReport::NativeOff,
            Err(e) => return Err(bad(e)),
        }
    }))
}

/// Adds one file's stacks to those of the same source, phase and kind.
fn add_stacks(flames: &mut Vec<jfr::FoldedStacks>, f: jfr::FoldedStacks) {
    match flames
        .iter_mut()
        .find(|g| g.source == f.source && g.phase == f.phase && g.kind == f.kind)
    {
        Some(g) => g.stacks = flame::merge([&g.stacks, &f.stacks]),
        None => flames.push(f),
    }
}

/// Flame-graph files brunt wrote beside a recording: outputs, not inputs.
fn is_flame_output(p: &Path) -> bool {
    p.extension()
        .and_then(|x| x.to_str())
        .is_some_and(|x| flame::OUTPUT_EXTENSIONS.contains(&x))
}

/// How much of a file's start decides whether it is text at all.
const SNIFF_HEAD: usize = 64 * 1024;
/// The chunk a marker scan reads at a time (memory stays at one chunk).
const SNIFF_CHUNK: usize = 1 << 20;

/// Whether a (non-JFR) file can be a text dump, a JSON dump or a pinning
/// log, decided from its first bytes and a streaming scan — never by reading
/// it whole: binary data (a NUL byte, or invalid UTF-8 in more than 10 % of
/// the first 64 KiB) is refused from its head, and text without any of the
/// formats' markers after one pass of 1-MiB chunks. Looser than the parsers'
/// own `looks_like_*` checks, which still decide afterwards.
fn sniff_text(path: &Path, name: &str) -> Result<(), DiagError> {
    let mut f = fs::File::open(path).map_err(io_err(name))?;
    let mut buf = vec![0u8; SNIFF_CHUNK];
    let mut filled = 0;
    while filled < SNIFF_HEAD {
        let n = f.read(&mut buf[filled..]).map_err(io_err(name))?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    let head = &buf[..filled.min(SNIFF_HEAD)];
    if let Some(at) = head.iter().position(|b| *b == 0) {
        return Err(DiagError::Binary {
            file: name.to_string(),
            why: format!("a NUL byte at offset {at}"),
        });
    }
    let invalid = invalid_utf8_bytes(head);
    if invalid * 10 > head.len() {
        return Err(DiagError::Binary {
            file: name.to_string(),
            why: format!("{invalid} of its first {} bytes are not UTF-8", head.len()),
        });
    }
    let trimmed = head.trim_ascii_start();
    if trimmed.starts_with(b"{") && contains(&head[..head.len().min(8192)], b"\"threadDump\"") {
        return Ok(());
    }
    // Markers of the text formats; a chunk keeps the tail of the one before,
    // so a marker across two chunks is found.
    static MARKERS: std::sync::OnceLock<Option<regex::bytes::Regex>> = std::sync::OnceLock::new();
    let markers = MARKERS.get_or_init(|| {
        regex::bytes::Regex::new(
            r"Full thread dump| tid=|<== monitors:|VirtualThread\[#|(?m:^goroutine \d+ .*\[)|(?m:^Python v\d)|\.py:\d+\)[; ]",
        )
        .ok()
    });
    let Some(markers) = markers else {
        return Ok(()); // cannot happen (a fixed pattern); the parsers decide
    };
    let keep = "Full thread dump".len();
    loop {
        if markers.is_match(&buf[..filled]) {
            return Ok(());
        }
        let tail = filled.min(keep);
        buf.copy_within(filled - tail..filled, 0);
        filled = tail;
        let n = f.read(&mut buf[filled..]).map_err(io_err(name))?;
        if n == 0 {
            return Err(DiagError::Unrecognized {
                file: name.to_string(),
            });
        }
        filled += n;
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Bytes of `b` in invalid UTF-8 sequences (a sequence cut at the end counts not).
fn invalid_utf8_bytes(mut b: &[u8]) -> usize {
    let mut bad = 0;
    loop {
        match std::str::from_utf8(b) {
            Ok(_) => return bad,
            Err(e) => match e.error_len() {
                Some(n) => {
                    bad += n;
                    b = &b[e.valid_up_to() + n..];
                }
                None => return bad,
            },
        }
    }
}

/// Files under `path`: a file itself; a run directory's `diagnostics/`; or a directory's files (3 levels).
fn expand(path: &Path, out: &mut Vec<PathBuf>, depth: u32) -> Result<(), DiagError> {
    let name = path.display().to_string();
    let meta = fs::metadata(path).map_err(io_err(&name))?;
    if meta.is_file() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    if depth == 0 {
        let diag = path.join("diagnostics");
        if diag.is_dir() {
            return expand(&diag, out, depth + 1);
        }
    }
    if depth > 3 {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = fs::read_dir(path)
        .map_err(io_err(&name))?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for e in entries {
        if e.is_dir() {
            expand(&e, out, depth + 1)?;
        } else if !is_flame_output(&e) {
            out.push(e);
        }
    }
    Ok(())
}

/// The files a windowed JFR collector writes, one per window of one
/// recording (`collectors/engine/jfr_window.rs` names them).
const WINDOW_PREFIX: &str = "jfr-window-";

/// Folds the windows of one recording (same directory) into one, so a lock
/// held through the night is one finding per phase, not one per window.
fn merge_windows(recs: Vec<JfrRecording>) -> Vec<JfrRecording> {
    let mut out: Vec<JfrRecording> = vec![];
    let mut windows: BTreeMap<PathBuf, JfrRecording> = BTreeMap::new();
    for r in recs {
        let p = Path::new(&r.source);
        let is_window = p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(WINDOW_PREFIX));
        if !is_window {
            out.push(r);
            continue;
        }
        let dir = p.parent().map(Path::to_path_buf).unwrap_or_default();
        match windows.get_mut(&dir) {
            Some(w) => w.absorb(r),
            None => {
                let mut r = r;
                // Not a file: the name the merged windows go by (findings,
                // `jfr-windows.<phase>.cpu.folded` flame graphs).
                r.source = dir.join("jfr-windows").display().to_string();
                for f in &mut r.flames {
                    f.source = r.source.clone();
                }
                windows.insert(dir, r);
            }
        }
    }
    out.extend(windows.into_values());
    out
}

impl Analysis {
    /// Reads any mix of files and directories (a run directory reads its
    /// `diagnostics/`). Unreadable files are listed in `inputs` with their
    /// error; only when nothing at all could be read is it an error.
    pub fn from_paths(paths: &[PathBuf], opts: &Options) -> Result<Analysis, DiagError> {
        let mut files = vec![];
        for p in paths {
            expand(p, &mut files, 0)?;
        }
        let mut a = Analysis {
            version: ANALYSIS_VERSION,
            ..Analysis::default()
        };
        let mut dumps: Vec<ThreadDump> = vec![];
        let mut pins = vec![];
        let mut recs = vec![];
        let mut profiles = vec![];
        for f in &files {
            let name = f.display().to_string();
            match parse_file(f, &opts.phases) {
                Ok((kind, parsed, warnings)) => {
                    let mut input = InputFile {
                        file: name,
                        kind,
                        dumps: 0,
                        threads: 0,
                        events: 0,
                        warnings,
                        error: None,
                    };
                    match parsed {
                        Parsed::Dumps(ds) => {
                            input.dumps = ds.len();
                            input.threads = ds.iter().map(|d| d.threads.len()).sum();
                            dumps.extend(ds);
                        }
                        Parsed::Pins(ps) => {
                            input.events = ps.len() as u64;
                            pins.extend(ps);
                        }
                        Parsed::Jfr(r) => {
                            input.events = r.events;
                            recs.push(*r);
                        }
                        Parsed::Pprof(p) => {
                            input.events = p.stacks.len() as u64;
                            profiles.push(*p);
                        }
                        Parsed::Stacks(f) => {
                            input.events = f.stacks.values().sum();
                            add_stacks(&mut a.flames, f);
                        }
                        Parsed::Memory(report) => a.memory.push(growth::MemorySample {
                            at_s: f.file_name().and_then(|n| {
                                crate::vocab::files::artifact_time(&n.to_string_lossy())
                            }),
                            file: input.file.clone(),
                            report,
                        }),
                    }
                    a.inputs.push(input);
                }
                Err(e) => a.inputs.push(InputFile {
                    file: name,
                    kind: InputKind::Unreadable,
                    dumps: 0,
                    threads: 0,
                    events: 0,
                    warnings: vec![],
                    error: Some(e.to_string()),
                }),
            }
        }
        if a.inputs.iter().all(|i| i.kind == InputKind::Unreadable) {
            let why: Vec<String> = a.inputs.iter().filter_map(|i| i.error.clone()).collect();
            return Err(DiagError::NoInput(if why.is_empty() {
                "no files given".into()
            } else {
                why.join("; ")
            }));
        }
        a.add_dumps(dumps, opts);
        a.findings.extend(findings::pinning_findings(&pins));
        let (go_waits, go_flames) = findings::profile_findings(&profiles, &opts.phases);
        a.findings.extend(go_waits);
        a.flames.extend(go_flames);
        // Coverage per file (a failed window is a hole), facts once per recording.
        a.jfr_phases = phases::jfr_phases(&recs, &opts.phases);
        let mut recs = merge_windows(recs);
        for r in &mut recs {
            a.findings.extend(findings::jfr_findings(r));
            a.heap.extend(r.heap.iter().cloned());
            a.gauges.absorb(std::mem::take(&mut r.gauges));
            a.flames.append(&mut r.flames);
        }
        a.heap.sort_by(|x, y| x.unix.total_cmp(&y.unix));
        // Most severe first; stable, so each kind keeps its own ranking.
        a.findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
        if !opts.phases.is_empty() {
            a.tag_phases(|t| {
                let u = t
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map(|d| d.as_secs_f64())
                    .unwrap_or(0.0);
                phase_at(&opts.phases, u).map(str::to_string)
            });
        }
        Ok(a)
    }

    fn add_dumps(&mut self, mut dumps: Vec<ThreadDump>, opts: &Options) {
        dumps.sort_by(|x, y| {
            x.time_unix
                .unwrap_or(f64::MAX)
                .total_cmp(&y.time_unix.unwrap_or(f64::MAX))
                .then(x.source.cmp(&y.source))
                .then(x.index.cmp(&y.index))
        });
        let per_dump: Vec<Vec<Finding>> = dumps
            .iter()
            .map(|d| findings::dump_findings(d, opts))
            .collect();
        // Persistence per JVM (pid when known), and only over the same dump format.
        let mut groups: BTreeMap<(Option<u32>, bool), Vec<usize>> = BTreeMap::new();
        for (i, d) in dumps.iter().enumerate() {
            groups
                .entry((d.pid, d.format == model::DumpFormat::Json))
                .or_default()
                .push(i);
        }
        for idx in groups.values() {
            let ds: Vec<&ThreadDump> = idx.iter().filter_map(|i| dumps.get(*i)).collect();
            let fs: Vec<Vec<Finding>> = idx
                .iter()
                .filter_map(|i| per_dump.get(*i).cloned())
                .collect();
            self.findings.extend(findings::persistence(&ds, &fs));
        }
        for (d, fs) in dumps.iter().zip(per_dump) {
            self.thread_groups.push(growth::GroupSample {
                file: d.source.clone(),
                index: d.index,
                time_unix: d.time_unix,
                json: d.format == model::DumpFormat::Json,
                groups: thread_groups::groups(d),
            });
            for f in &fs {
                if let Detail::ThreadStates { total, states, .. } = &f.detail {
                    self.dumps.push(DumpStates {
                        file: d.source.clone(),
                        index: d.index,
                        time: d.time.clone(),
                        time_unix: d.time_unix,
                        phase: None,
                        threads: *total,
                        states: states.clone(),
                        activity: Some(phases::dump_activity(d, &fs)),
                    });
                }
            }
            self.findings.extend(fs);
        }
    }

    /// Reads a run directory's `diagnostics/`.
    pub fn from_run_dir(dir: &Path, opts: &Options) -> Result<Analysis, DiagError> {
        Analysis::from_paths(&[dir.to_path_buf()], opts)
    }

    /// Tags every finding and dump with the load phase running at its time.
    pub fn tag_phases(&mut self, phase_of: impl Fn(SystemTime) -> Option<String>) {
        let at = |u: Option<f64>| {
            u.filter(|u| u.is_finite() && *u >= 0.0)
                .map(|u| SystemTime::UNIX_EPOCH + Duration::from_secs_f64(u))
        };
        for f in &mut self.findings {
            if let Some(t) = at(f.evidence.time_unix) {
                f.evidence.phase = phase_of(t);
            }
        }
        for d in &mut self.dumps {
            if let Some(t) = at(d.time_unix) {
                d.phase = phase_of(t);
            }
        }
    }

    /// Writes `findings.json` (this structure, pretty-printed) into `dir`.
    pub fn write_findings_json(&self, dir: &Path) -> std::io::Result<PathBuf> {
        let path = dir.join("findings.json");
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        fs::write(&path, text)?;
        Ok(path)
    }

    /// Findings at or above `min`.
    pub fn findings_at_least(&self, min: Severity) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(move |f| f.severity >= min)
    }
}
