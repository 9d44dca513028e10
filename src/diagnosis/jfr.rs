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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::model::Frame;

pub const MAGIC: &[u8; 4] = b"FLR\0";
const HEADER_SIZE: u64 = 68;
const MAX_DEPTH: u32 = 24;
const MAX_CP_EVENTS: usize = 1 << 20;
const EVENT_METADATA: u64 = 0;
const EVENT_CHECKPOINT: u64 = 1;

#[derive(Debug, thiserror::Error)]
pub enum JfrError {
    #[error("read {0}")]
    Io(#[from] std::io::Error),
    #[error("not a JFR recording (no FLR magic)")]
    NotJfr,
    #[error("unsupported JFR format version {0}.{1} (brunt reads 2.x: JDK 11+)")]
    Version(u16, u16),
    #[error("corrupt recording: {0}")]
    Corrupt(String),
}

fn corrupt(msg: impl Into<String>) -> JfrError {
    JfrError::Corrupt(msg.into())
}

/// Monitor entry, wait, park or pinning aggregated by class and call site.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JfrSite {
    /// `jdk.JavaMonitorEnter`, `jdk.ThreadPark`, …
    pub event: String,
    /// Monitor class (`monitorClass`) or parked class (`parkedClass`).
    pub class: Option<String>,
    /// First application frame (JDK internals such as `Unsafe.park` skipped).
    pub site: String,
    /// Top frames of the first stack seen, for the report.
    pub stack: Vec<String>,
    pub count: u64,
    pub total_ms: f64,
    pub max_ms: f64,
    /// Previous monitor owners (JavaMonitorEnter) by thread name, most frequent first.
    pub previous_owners: Vec<(String, u64)>,
    pub first_unix: f64,
    pub last_unix: f64,
    /// Threads parked waiting for work (executor queues): not contention.
    pub idle: bool,
    /// Load phase the events fell in, when phases were given (one site per phase).
    #[serde(default)]
    pub phase: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeapSample {
    pub unix: f64,
    pub gc_id: i64,
    /// `Before GC` or `After GC`.
    pub when: String,
    pub heap_used: u64,
}

/// What brunt reads from one recording.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JfrRecording {
    pub source: String,
    pub chunks: usize,
    pub events: u64,
    pub events_by_type: BTreeMap<String, u64>,
    pub start_unix: Option<f64>,
    pub duration_s: f64,
    /// JavaMonitorEnter / JavaMonitorWait / ThreadPark sites, by total time.
    pub sites: Vec<JfrSite>,
    /// VirtualThreadPinned sites, by total time.
    pub pinned: Vec<JfrSite>,
    pub heap: Vec<HeapSample>,
    /// Top frames of jdk.ExecutionSample, most samples first.
    pub hot_methods: Vec<(String, u64)>,
    pub warnings: Vec<String>,
}

pub fn looks_like_jfr(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

// ---------------------------------------------------------------- values

/// FxHash-style hasher for the integer keys of constant pools (SipHash cost
/// a tenth of the parse time); input is a local file, not a network peer.
#[derive(Default, Clone, Copy)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }
}

type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<IdHasher>>;

#[derive(Debug, Clone)]
enum Value {
    Null,
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    /// Constant-pool reference: (class id, index).
    Ref(u64, i64),
    Obj(u64, Box<[Value]>),
    Arr(Vec<Value>),
}

#[derive(Debug, Clone)]
struct FieldDesc {
    name: String,
    class: u64,
    cp: bool,
    array: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Prim {
    Bool,
    Byte,
    Short,
    Char,
    Int,
    Long,
    Float,
    Double,
    Str,
}

#[derive(Debug, Clone, Default)]
struct ClassDesc {
    name: String,
    prim: Option<Prim>,
    fields: Vec<FieldDesc>,
}

impl ClassDesc {
    fn pos(&self, field: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == field)
    }
}

/// A bounds-checked reader over one event's bytes.
struct Buf<'a> {
    b: &'a [u8],
    pos: usize,
    compressed: bool,
}

impl<'a> Buf<'a> {
    fn remaining(&self) -> usize {
        self.b.len().saturating_sub(self.pos)
    }
    fn u8(&mut self) -> Result<u8, JfrError> {
        let v = *self
            .b
            .get(self.pos)
            .ok_or_else(|| corrupt("value runs past its event"))?;
        self.pos += 1;
        Ok(v)
    }
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], JfrError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.b.len())
            .ok_or_else(|| corrupt("value runs past its event"))?;
        let s = self.b.get(self.pos..end).unwrap_or_default();
        self.pos = end;
        Ok(s)
    }
    /// LEB128-style varint, up to 9 bytes (the 9th carries 8 bits).
    fn varlong(&mut self) -> Result<i64, JfrError> {
        let mut v: u64 = 0;
        for i in 0..8 {
            let b = self.u8()?;
            v |= ((b & 0x7f) as u64) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v as i64);
            }
        }
        let b = self.u8()?;
        v |= (b as u64) << 56;
        Ok(v as i64)
    }
    fn long(&mut self) -> Result<i64, JfrError> {
        if self.compressed {
            self.varlong()
        } else {
            let s = self.bytes(8)?;
            Ok(i64::from_be_bytes(
                s.try_into().map_err(|_| corrupt("long"))?,
            ))
        }
    }
    fn int(&mut self) -> Result<i64, JfrError> {
        if self.compressed {
            // An int is written as its 32 bits: -1 arrives as 0xffffffff.
            Ok(self.varlong()? as i32 as i64)
        } else {
            let s = self.bytes(4)?;
            Ok(i32::from_be_bytes(s.try_into().map_err(|_| corrupt("int"))?) as i64)
        }
    }
    fn short(&mut self) -> Result<i64, JfrError> {
        if self.compressed {
            Ok(self.varlong()? as i16 as i64)
        } else {
            let s = self.bytes(2)?;
            Ok(i16::from_be_bytes(s.try_into().map_err(|_| corrupt("short"))?) as i64)
        }
    }
    /// A length or count: must be non-negative and fit in what is left.
    fn count(&mut self) -> Result<usize, JfrError> {
        let n = self.int()?;
        usize::try_from(n)
            .ok()
            .filter(|n| *n <= self.remaining())
            .ok_or_else(|| corrupt(format!("count {n} exceeds its event")))
    }
    /// Strings: 0 null, 1 empty, 2 constant pool, 3 UTF-8, 4 char array, 5 Latin-1.
    fn string(&mut self, string_class: u64) -> Result<Value, JfrError> {
        match self.u8()? {
            0 => Ok(Value::Null),
            1 => Ok(Value::Str(Rc::from(""))),
            2 => Ok(Value::Ref(string_class, self.long()?)),
            3 => {
                let n = self.count()?;
                let b = self.bytes(n)?;
                Ok(Value::Str(Rc::from(String::from_utf8_lossy(b).as_ref())))
            }
            4 => {
                let n = self.count()?;
                let mut s = String::with_capacity(n);
                for _ in 0..n {
                    let c = self.varlong()?;
                    s.push(char::from_u32(c as u32).unwrap_or('\u{fffd}'));
                }
                Ok(Value::Str(Rc::from(s)))
            }
            5 => {
                let n = self.count()?;
                let b = self.bytes(n)?;
                Ok(Value::Str(Rc::from(
                    b.iter().map(|&c| c as char).collect::<String>(),
                )))
            }
            e => Err(corrupt(format!("unknown string encoding {e}"))),
        }
    }
}

// ------------------------------------------------------------- metadata

struct Element {
    name: String,
    attrs: Vec<(String, String)>,
    children: Vec<Element>,
}

impl Element {
    fn attr(&self, k: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(a, _)| a == k)
            .map(|(_, v)| v.as_str())
    }
}

fn read_element(b: &mut Buf, strings: &[Rc<str>], depth: u32) -> Result<Element, JfrError> {
    if depth > MAX_DEPTH {
        return Err(corrupt("metadata nested too deep"));
    }
    let s = |i: i64| -> Result<String, JfrError> {
        usize::try_from(i)
            .ok()
            .and_then(|i| strings.get(i))
            .map(|s| s.to_string())
            .ok_or_else(|| corrupt(format!("metadata string index {i}")))
    };
    let name = s(b.int()?)?;
    let n_attrs = b.count()?;
    let mut attrs = Vec::with_capacity(n_attrs.min(64));
    for _ in 0..n_attrs {
        attrs.push((s(b.int()?)?, s(b.int()?)?));
    }
    let n_children = b.count()?;
    let mut children = Vec::with_capacity(n_children.min(1024));
    for _ in 0..n_children {
        children.push(read_element(b, strings, depth + 1)?);
    }
    Ok(Element {
        name,
        attrs,
        children,
    })
}

struct Metadata {
    classes: FastMap<u64, ClassDesc>,
    string_class: u64,
}

/// The last metadata read and its bytes: consecutive chunks of a recording
/// usually carry the same metadata, which then is parsed once.
type MetaCache = Option<(Vec<u8>, Rc<Metadata>)>;

fn read_metadata(b: &mut Buf, cache: &mut MetaCache) -> Result<Rc<Metadata>, JfrError> {
    // size, type, start, duration, metadata id
    b.int()?;
    if b.long()? as u64 != EVENT_METADATA {
        return Err(corrupt(
            "metadata offset does not point at the metadata event",
        ));
    }
    b.long()?;
    b.long()?;
    b.long()?;
    let body = b.b.get(b.pos..).unwrap_or_default();
    if let Some((bytes, meta)) = cache.as_ref() {
        if bytes.as_slice() == body {
            return Ok(meta.clone());
        }
    }
    let meta = Rc::new(parse_metadata_body(b)?);
    *cache = Some((body.to_vec(), meta.clone()));
    Ok(meta)
}

fn parse_metadata_body(b: &mut Buf) -> Result<Metadata, JfrError> {
    let n = b.count()?;
    let mut strings = Vec::with_capacity(n);
    for _ in 0..n {
        strings.push(match b.string(u64::MAX)? {
            Value::Str(s) => s,
            Value::Null => Rc::from(""),
            _ => return Err(corrupt("metadata string by reference")),
        });
    }
    let root = read_element(b, &strings, 0)?;
    let mut classes = FastMap::default();
    let mut string_class = u64::MAX;
    for meta in root.children.iter().filter(|e| e.name == "metadata") {
        for c in meta.children.iter().filter(|e| e.name == "class") {
            let Some(id) = c.attr("id").and_then(|v| v.parse::<u64>().ok()) else {
                continue;
            };
            let name = c.attr("name").unwrap_or_default().to_string();
            let prim = match name.as_str() {
                "boolean" => Some(Prim::Bool),
                "byte" => Some(Prim::Byte),
                "short" => Some(Prim::Short),
                "char" => Some(Prim::Char),
                "int" => Some(Prim::Int),
                "long" => Some(Prim::Long),
                "float" => Some(Prim::Float),
                "double" => Some(Prim::Double),
                "java.lang.String" => Some(Prim::Str),
                _ => None,
            };
            if prim == Some(Prim::Str) {
                string_class = id;
            }
            let fields = c
                .children
                .iter()
                .filter(|f| f.name == "field")
                .map(|f| FieldDesc {
                    name: f.attr("name").unwrap_or_default().to_string(),
                    class: f
                        .attr("class")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(u64::MAX),
                    cp: f.attr("constantPool") == Some("true"),
                    array: f.attr("dimension") == Some("1"),
                })
                .collect();
            classes.insert(id, ClassDesc { name, prim, fields });
        }
    }
    Ok(Metadata {
        classes,
        string_class,
    })
}

impl Metadata {
    fn read_value(&self, b: &mut Buf, class: u64, depth: u32) -> Result<Value, JfrError> {
        if depth > MAX_DEPTH {
            return Err(corrupt("values nested too deep"));
        }
        let c = self
            .classes
            .get(&class)
            .ok_or_else(|| corrupt(format!("unknown class id {class}")))?;
        if let Some(p) = c.prim {
            return Ok(match p {
                Prim::Bool | Prim::Byte => Value::Int(b.u8()? as i8 as i64),
                Prim::Short | Prim::Char => Value::Int(b.short()?),
                Prim::Int => Value::Int(b.int()?),
                Prim::Long => Value::Int(b.long()?),
                Prim::Float => {
                    let s = b.bytes(4)?;
                    Value::Float(
                        f32::from_be_bytes(s.try_into().map_err(|_| corrupt("f32"))?) as f64,
                    )
                }
                Prim::Double => {
                    let s = b.bytes(8)?;
                    Value::Float(f64::from_be_bytes(
                        s.try_into().map_err(|_| corrupt("f64"))?,
                    ))
                }
                Prim::Str => b.string(self.string_class)?,
            });
        }
        let mut fields = Vec::with_capacity(c.fields.len());
        for f in &c.fields {
            let one = |b: &mut Buf| -> Result<Value, JfrError> {
                if f.cp {
                    Ok(Value::Ref(f.class, b.long()?))
                } else {
                    self.read_value(b, f.class, depth + 1)
                }
            };
            if f.array {
                let n = b.count()?;
                let mut v = Vec::with_capacity(n.min(4096));
                for _ in 0..n {
                    v.push(one(b)?);
                }
                fields.push(Value::Arr(v));
            } else {
                fields.push(one(b)?);
            }
        }
        Ok(Value::Obj(class, fields.into_boxed_slice()))
    }
}

// ------------------------------------------------------------- chunk state

struct Chunk {
    meta: Rc<Metadata>,
    pool: FastMap<(u64, i64), Value>,
    start_nanos: i64,
    start_ticks: i64,
    ticks_per_sec: f64,
    stacks: FastMap<i64, Rc<Vec<Frame>>>,
    threads: FastMap<i64, Rc<str>>,
}

impl Chunk {
    fn resolve<'v>(&'v self, mut v: &'v Value) -> &'v Value {
        for _ in 0..4 {
            match v {
                Value::Ref(c, i) => match self.pool.get(&(*c, *i)) {
                    Some(x) => v = x,
                    None => return &Value::Null,
                },
                _ => return v,
            }
        }
        v
    }
    fn get<'v>(&'v self, v: &'v Value, field: &str) -> Option<&'v Value> {
        match self.resolve(v) {
            Value::Obj(c, fields) => {
                let i = self.meta.classes.get(c)?.pos(field)?;
                fields.get(i)
            }
            _ => None,
        }
    }
    fn string(&self, v: &Value) -> Option<String> {
        match self.resolve(v) {
            Value::Str(s) => Some(s.to_string()),
            // A Symbol / an object with a `string` field.
            o @ Value::Obj(..) => self.get(o, "string").and_then(|s| self.string(s)),
            _ => None,
        }
    }
    fn int(&self, v: Option<&Value>) -> Option<i64> {
        match v.map(|v| self.resolve(v)) {
            Some(Value::Int(i)) => Some(*i),
            Some(Value::Float(f)) => Some(*f as i64),
            _ => None,
        }
    }
    /// `jdk.types.Class` → `com.acme.Inventory`.
    fn class_name(&self, v: &Value) -> Option<String> {
        let n = self.get(v, "name")?;
        self.string(n).map(|s| s.replace('/', "."))
    }
    fn ticks_to_unix(&self, ticks: i64) -> f64 {
        let ns = self.start_nanos as f64
            + (ticks.saturating_sub(self.start_ticks)) as f64 * 1e9 / self.ticks_per_sec;
        ns / 1e9
    }
    fn ticks_to_ms(&self, ticks: i64) -> f64 {
        ticks as f64 * 1e3 / self.ticks_per_sec
    }
    fn thread_name(&mut self, v: &Value) -> Option<Rc<str>> {
        let key = match v {
            Value::Ref(_, i) => Some(*i),
            _ => None,
        };
        if let Some(k) = key {
            if let Some(n) = self.threads.get(&k) {
                return Some(n.clone());
            }
        }
        let name: Rc<str> = self
            .get(v, "javaName")
            .and_then(|n| self.string(n))
            .or_else(|| self.get(v, "osName").and_then(|n| self.string(n)))
            .map(Rc::from)?;
        if let Some(k) = key {
            self.threads.insert(k, name.clone());
        }
        Some(name)
    }
    fn stack(&mut self, v: &Value) -> Rc<Vec<Frame>> {
        let key = match v {
            Value::Ref(_, i) => Some(*i),
            _ => None,
        };
        if let Some(s) = key.and_then(|k| self.stacks.get(&k)) {
            return s.clone();
        }
        let mut frames = vec![];
        if let Some(Value::Arr(fs)) = self.get(v, "frames").map(|f| self.resolve(f)) {
            for f in fs.iter().take(64) {
                let method = self.get(f, "method");
                let class = method
                    .and_then(|m| self.get(m, "type"))
                    .and_then(|c| self.class_name(c))
                    .unwrap_or_default();
                let name = method
                    .and_then(|m| self.get(m, "name"))
                    .and_then(|n| self.string(n))
                    .unwrap_or_default();
                let line = self.int(self.get(f, "lineNumber")).unwrap_or(-1);
                frames.push(Frame {
                    method: format!("{class}.{name}"),
                    location: if line >= 0 {
                        format!("line:{line}")
                    } else {
                        String::new()
                    },
                    locks: vec![],
                });
            }
        }
        let rc = Rc::new(frames);
        if let Some(k) = key {
            self.stacks.insert(k, rc.clone());
        }
        rc
    }
}

// ------------------------------------------------------------- aggregation

const WANTED: &[&str] = &[
    "jdk.JavaMonitorEnter",
    "jdk.JavaMonitorWait",
    "jdk.ThreadPark",
    "jdk.VirtualThreadPinned",
    "jdk.GCHeapSummary",
    "jdk.ExecutionSample",
];

/// Frames that say nothing about the application: skipped to find the call site.
pub fn is_internal_frame(method: &str) -> bool {
    const P: &[&str] = &[
        "java.", "javax.", "jdk.", "sun.", "com.sun.", "kotlin.", "scala.",
    ];
    P.iter().any(|p| method.starts_with(p)) || method.contains("$$Lambda")
}

fn is_idle_stack(frames: &[Frame]) -> bool {
    is_idle_methods(frames.iter().map(|f| f.method.as_str()), frames.len())
}

/// The same test on frames as displayed (`pkg.Class.method(Loc)`).
pub fn is_idle_stack_lines(lines: &[String]) -> bool {
    is_idle_methods(
        lines.iter().map(|l| l.split('(').next().unwrap_or(l)),
        lines.len(),
    )
}

/// Threads waiting for work (executor queues, reference handlers, JFR, the
/// JDK HTTP server's dispatcher): parked, but not contention.
fn is_idle_methods<'a>(mut methods: impl Iterator<Item = &'a str>, depth: usize) -> bool {
    methods.any(|m| {
        m.ends_with("ThreadPoolExecutor.getTask")
            || m.ends_with("ForkJoinPool.awaitWork")
            || (m.ends_with("ForkJoinPool.runWorker") && depth < 8)
            || m.ends_with("ScheduledThreadPoolExecutor$DelayedWorkQueue.take")
            || m.starts_with("jdk.internal.misc.InnocuousThread")
            || m.starts_with("java.lang.ref.")
            || m.starts_with("jdk.jfr.")
            || m.starts_with("sun.net.httpserver.ServerImpl$Dispatcher")
            || m.starts_with("sun.net.httpserver.ServerImpl$DefaultExecutor")
    })
}

/// First application frame; else the first frame past park/wait internals.
pub fn site_of(frames: &[Frame]) -> String {
    frames
        .iter()
        .find(|f| !is_internal_frame(&f.method))
        .or_else(|| {
            frames.iter().find(|f| {
                !(f.method.starts_with("jdk.internal.misc.Unsafe")
                    || f.method
                        .starts_with("java.util.concurrent.locks.LockSupport")
                    || f.method.starts_with("java.lang.Object.wait")
                    || f.method.contains("AbstractQueuedSynchronizer"))
            })
        })
        .or(frames.first())
        .map(Frame::display)
        .unwrap_or_else(|| "(no stack)".into())
}

/// (event, class, site, phase) → the site and its previous owners' counts.
type SiteKey = (String, Option<String>, String, Option<String>);
type SiteMap = HashMap<SiteKey, (JfrSite, HashMap<String, u64>)>;

#[derive(Default)]
struct Agg<'p> {
    sites: SiteMap,
    hot: HashMap<String, u64>,
    phases: &'p [super::PhaseWindow],
}

impl Agg<'_> {
    fn add(
        &mut self,
        event: &str,
        class: Option<String>,
        frames: &[Frame],
        ms: f64,
        unix: f64,
        owner: Option<Rc<str>>,
    ) {
        let site = site_of(frames);
        let phase = super::phase_at(self.phases, unix).map(str::to_string);
        let e = self
            .sites
            .entry((
                event.to_string(),
                class.clone(),
                site.clone(),
                phase.clone(),
            ))
            .or_insert_with(|| {
                (
                    JfrSite {
                        event: event.to_string(),
                        class,
                        site,
                        phase,
                        stack: frames.iter().take(12).map(Frame::display).collect(),
                        first_unix: unix,
                        last_unix: unix,
                        idle: is_idle_stack(frames),
                        ..JfrSite::default()
                    },
                    HashMap::new(),
                )
            });
        e.0.count += 1;
        e.0.total_ms += ms;
        e.0.max_ms = e.0.max_ms.max(ms);
        e.0.first_unix = e.0.first_unix.min(unix);
        e.0.last_unix = e.0.last_unix.max(unix);
        if let Some(o) = owner {
            *e.1.entry(o.to_string()).or_default() += 1;
        }
    }
}

// ------------------------------------------------------------- reading

/// Reads a varint from a byte stream (the event size and type before an event's body).
fn read_varint(
    r: &mut impl Read,
    compressed: bool,
    raw_len: usize,
) -> Result<(u64, u64), JfrError> {
    let mut one = [0u8; 1];
    if !compressed {
        let mut b = [0u8; 8];
        let s = b.get_mut(..raw_len).ok_or_else(|| corrupt("raw int"))?;
        r.read_exact(s)?;
        let v = s.iter().fold(0u64, |a, &x| (a << 8) | x as u64);
        return Ok((v, raw_len as u64));
    }
    let mut v: u64 = 0;
    for i in 0..9u64 {
        r.read_exact(&mut one)?;
        let b = one[0];
        if i == 8 {
            v |= (b as u64) << 56;
            return Ok((v, 9));
        }
        v |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((v, i + 1));
        }
    }
    Ok((v, 9))
}

fn be_u64(h: &[u8], at: usize) -> u64 {
    h.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map(u64::from_be_bytes)
        .unwrap_or(0)
}

/// Parses a recording file. Errors only when nothing could be read (not a
/// JFR file, first chunk unreadable); later damage becomes warnings.
pub fn parse_jfr_file(path: &Path) -> Result<JfrRecording, JfrError> {
    parse_jfr_file_phased(path, &[])
}

/// As [`parse_jfr_file`], aggregating sites per load phase.
pub fn parse_jfr_file_phased(
    path: &Path,
    phases: &[super::PhaseWindow],
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
    mut r: R,
    file_len: u64,
    source: &str,
    phases: &[super::PhaseWindow],
) -> Result<JfrRecording, JfrError> {
    let mut rec = JfrRecording {
        source: source.to_string(),
        ..JfrRecording::default()
    };
    let mut agg = Agg {
        phases,
        ..Agg::default()
    };
    let mut pos: u64 = 0;
    let mut end_unix: f64 = 0.0;
    let mut meta_cache: MetaCache = None;
    while pos < file_len {
        let index = rec.chunks;
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
    let mut sites: Vec<JfrSite> = agg
        .sites
        .into_values()
        .map(|(mut s, owners)| {
            let mut o: Vec<(String, u64)> = owners.into_iter().collect();
            o.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            o.truncate(5);
            s.previous_owners = o;
            s
        })
        .collect();
    sites.sort_by(|a, b| {
        b.total_ms
            .total_cmp(&a.total_ms)
            .then(b.count.cmp(&a.count))
    });
    let (pinned, sites): (Vec<JfrSite>, Vec<JfrSite>) = sites
        .into_iter()
        .partition(|s| s.event == "jdk.VirtualThreadPinned");
    rec.sites = sites;
    rec.pinned = pinned;
    let mut hot: Vec<(String, u64)> = agg.hot.into_iter().collect();
    hot.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    hot.truncate(20);
    rec.hot_methods = hot;
    rec.heap.sort_by(|a, b| a.unix.total_cmp(&b.unix));
    Ok(rec)
}

/// Reads one chunk at `pos`; returns its size.
fn read_chunk<R: Read + Seek>(
    r: &mut R,
    pos: u64,
    file_len: u64,
    rec: &mut JfrRecording,
    agg: &mut Agg,
    end_unix: &mut f64,
    meta_cache: &mut MetaCache,
) -> Result<u64, JfrError> {
    r.seek(SeekFrom::Start(pos))?;
    let mut h = [0u8; HEADER_SIZE as usize];
    let avail = file_len - pos;
    if avail < HEADER_SIZE {
        if pos == 0 {
            return Err(if avail >= 4 {
                let mut m = [0u8; 4];
                r.read_exact(&mut m)?;
                if &m != MAGIC {
                    JfrError::NotJfr
                } else {
                    corrupt(format!(
                        "file is {file_len} bytes, shorter than a chunk header"
                    ))
                }
            } else {
                JfrError::NotJfr
            });
        }
        return Err(corrupt(format!("{avail} trailing bytes, not a chunk")));
    }
    r.read_exact(&mut h)?;
    if h.get(..4) != Some(MAGIC.as_slice()) {
        return Err(if pos == 0 {
            JfrError::NotJfr
        } else {
            corrupt("no FLR magic where the next chunk should start")
        });
    }
    let major = u16::from_be_bytes([h[4], h[5]]);
    let minor = u16::from_be_bytes([h[6], h[7]]);
    if major != 2 {
        return Err(JfrError::Version(major, minor));
    }
    let size = be_u64(&h, 8);
    let cp_off = be_u64(&h, 16);
    let meta_off = be_u64(&h, 24);
    let start_nanos = be_u64(&h, 32) as i64;
    let duration_nanos = be_u64(&h, 40) as i64;
    let start_ticks = be_u64(&h, 48) as i64;
    let tps = be_u64(&h, 56);
    let features = u32::from_be_bytes([h[64], h[65], h[66], h[67]]);
    let compressed = features & 1 != 0;
    if size == 0 {
        return Err(corrupt(
            "chunk size 0: the recording was still being written (chunk not finished)",
        ));
    }
    if size < HEADER_SIZE || size > avail {
        return Err(corrupt(format!(
            "chunk says {size} bytes but {avail} remain in the file: truncated; its events are lost \
             (metadata and constant pools sit at a chunk's end)"
        )));
    }
    if !(HEADER_SIZE..size).contains(&meta_off) || !(HEADER_SIZE..size).contains(&cp_off) {
        return Err(corrupt(
            "metadata or constant-pool offset outside the chunk",
        ));
    }
    if tps == 0 {
        return Err(corrupt("ticks per second is 0"));
    }
    let mut buf = Vec::new();
    // Metadata event.
    let meta = {
        read_event_at(r, pos, meta_off, size, compressed, &mut buf)?;
        let mut b = Buf {
            b: &buf,
            pos: 0,
            compressed,
        };
        read_metadata(&mut b, meta_cache)?
    };
    let mut chunk = Chunk {
        meta,
        pool: FastMap::default(),
        start_nanos,
        start_ticks,
        ticks_per_sec: tps as f64,
        stacks: FastMap::default(),
        threads: FastMap::default(),
    };
    // Constant pools: a chain of checkpoint events linked by backwards deltas.
    let mut off = cp_off;
    let mut seen = HashSet::new();
    while seen.len() < MAX_CP_EVENTS {
        if !seen.insert(off) {
            return Err(corrupt("constant-pool chain loops"));
        }
        read_event_at(r, pos, off, size, compressed, &mut buf)?;
        let mut b = Buf {
            b: &buf,
            pos: 0,
            compressed,
        };
        b.int()?;
        if b.long()? as u64 != EVENT_CHECKPOINT {
            return Err(corrupt(
                "constant-pool chain points at a non-checkpoint event",
            ));
        }
        b.long()?;
        b.long()?;
        let delta = b.long()?;
        b.u8()?; // flush / type flags
        let pools = b.count()?;
        for _ in 0..pools {
            let class = b.long()? as u64;
            let n = b.count()?;
            for _ in 0..n {
                let idx = b.long()?;
                let v = chunk.meta.read_value(&mut b, class, 0)?;
                chunk.pool.insert((class, idx), v);
            }
        }
        if delta == 0 {
            break;
        }
        let next = (off as i64).checked_add(delta).unwrap_or(-1);
        if next < HEADER_SIZE as i64 || next as u64 >= size {
            return Err(corrupt("constant-pool delta leaves the chunk"));
        }
        off = next as u64;
    }
    let chunk_start_unix = start_nanos as f64 / 1e9;
    rec.start_unix = Some(
        rec.start_unix
            .map_or(chunk_start_unix, |s: f64| s.min(chunk_start_unix)),
    );
    *end_unix = end_unix.max((start_nanos.saturating_add(duration_nanos)) as f64 / 1e9);

    // Which event types to decode; all others are counted and skipped unread.
    let wanted: HashMap<u64, &'static str> = chunk
        .meta
        .classes
        .iter()
        .filter_map(|(id, c)| WANTED.iter().find(|w| **w == c.name).map(|w| (*id, *w)))
        .collect();
    let mut names: HashMap<u64, String> = HashMap::new();
    r.seek(SeekFrom::Start(pos + HEADER_SIZE))?;
    let mut at = HEADER_SIZE;
    let raw_len = 4;
    while at < size {
        let (ev_size, n1) = read_varint(r, compressed, raw_len)?;
        if ev_size <= n1 || ev_size > size - at {
            rec.warnings.push(format!(
                "chunk at byte {pos}: event at offset {at} has impossible size {ev_size}; rest of chunk skipped"
            ));
            break;
        }
        let (ty, n2) = read_varint(r, compressed, 8)?;
        if n1 + n2 > ev_size {
            rec.warnings.push(format!(
                "chunk at byte {pos}: event at offset {at} is shorter than its header"
            ));
            break;
        }
        let body_len = ev_size - n1 - n2;
        if ty > EVENT_CHECKPOINT {
            rec.events += 1;
            let name = names.entry(ty).or_insert_with(|| {
                chunk
                    .meta
                    .classes
                    .get(&ty)
                    .map(|c| c.name.clone())
                    .unwrap_or_else(|| format!("unknown type {ty}"))
            });
            *rec.events_by_type.entry(name.clone()).or_default() += 1;
        }
        match wanted.get(&ty) {
            Some(kind) => {
                buf.resize(body_len as usize, 0);
                r.read_exact(&mut buf)?;
                let mut b = Buf {
                    b: &buf,
                    pos: 0,
                    compressed,
                };
                match chunk.meta.read_value(&mut b, ty, 0) {
                    Ok(v) => handle_event(kind, &v, &mut chunk, rec, agg),
                    Err(e) => rec
                        .warnings
                        .push(format!("chunk at byte {pos}: {kind} at offset {at}: {e}")),
                }
            }
            None => {
                // Read past it rather than seek: a seek empties a BufReader's buffer.
                let skipped = std::io::copy(&mut r.by_ref().take(body_len), &mut std::io::sink())?;
                if skipped < body_len {
                    return Err(corrupt("event runs past the end of the file"));
                }
            }
        }
        at += ev_size;
    }
    Ok(size)
}

/// Reads the event at chunk offset `off` whole into `buf` (size checked against the chunk).
fn read_event_at<R: Read + Seek>(
    r: &mut R,
    chunk_pos: u64,
    off: u64,
    chunk_size: u64,
    compressed: bool,
    buf: &mut Vec<u8>,
) -> Result<(), JfrError> {
    r.seek(SeekFrom::Start(chunk_pos + off))?;
    let (size, _) = read_varint(r, compressed, 4)?;
    if size == 0 || size > chunk_size - off {
        return Err(corrupt(format!(
            "event at offset {off} has impossible size {size}"
        )));
    }
    r.seek(SeekFrom::Start(chunk_pos + off))?;
    buf.resize(size as usize, 0);
    r.read_exact(buf)?;
    Ok(())
}

fn handle_event(kind: &str, v: &Value, chunk: &mut Chunk, rec: &mut JfrRecording, agg: &mut Agg) {
    let start = chunk
        .int(chunk.get(v, "startTime"))
        .unwrap_or(chunk.start_ticks);
    let unix = chunk.ticks_to_unix(start);
    let ms = chunk
        .int(chunk.get(v, "duration"))
        .map(|d| chunk.ticks_to_ms(d))
        .unwrap_or(0.0);
    let stack = chunk
        .get(v, "stackTrace")
        .cloned()
        .map(|s| chunk.stack(&s))
        .unwrap_or_default();
    match kind {
        "jdk.JavaMonitorEnter" | "jdk.JavaMonitorWait" | "jdk.ThreadPark" => {
            let class_field = if kind == "jdk.ThreadPark" {
                "parkedClass"
            } else {
                "monitorClass"
            };
            let class = chunk.get(v, class_field).and_then(|c| chunk.class_name(c));
            let owner = match chunk.get(v, "previousOwner").cloned() {
                Some(o) if kind == "jdk.JavaMonitorEnter" => chunk.thread_name(&o),
                _ => None,
            };
            agg.add(kind, class, &stack, ms, unix, owner);
        }
        "jdk.VirtualThreadPinned" => agg.add(kind, None, &stack, ms, unix, None),
        "jdk.GCHeapSummary" => {
            let when = chunk
                .get(v, "when")
                .and_then(|w| chunk.get(w, "when").or(Some(w)))
                .and_then(|w| chunk.string(w))
                .unwrap_or_default();
            rec.heap.push(HeapSample {
                unix,
                gc_id: chunk.int(chunk.get(v, "gcId")).unwrap_or(-1),
                when,
                heap_used: chunk.int(chunk.get(v, "heapUsed")).unwrap_or(0).max(0) as u64,
            });
        }
        "jdk.ExecutionSample" => {
            if let Some(f) = stack.first() {
                *agg.hot.entry(f.display()).or_default() += 1;
            }
        }
        _ => {}
    }
}
