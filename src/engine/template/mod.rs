//! Templated requests, compiled once at start: `env.*` is resolved then and
//! folded into the literal text, the rest becomes value generators that run
//! per request. A request whose fields hold no generator keeps the pre-built
//! bytes path of [`super::client`]; only the others are rendered per send.
//!
//! Per-worker state (random generator, `seq` counter, the run's stop flag)
//! lives in a thread-local set when the worker thread starts: each worker is
//! one thread with one current-thread runtime, so nothing is shared but the
//! feeders' counters.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderName, HeaderValue, CONTENT_LENGTH};
use hyper::Request;
use thiserror::Error;

use super::feeder::{Feeder, FeederError, Take};
use super::Shard;
use crate::profile::template::{Expr, Part, Template};
use crate::profile::Profile;

#[derive(Debug, Error)]
pub enum BindError {
    #[error("environment variable `{name}` is not set (used in `{field}`); export it or pass --env {name}=VALUE")]
    MissingEnv { name: String, field: String },
    #[error("`{field}`: {source}")]
    Feeder { field: String, source: FeederError },
    #[error(transparent)]
    Open(#[from] FeederError),
    #[error("`{field}`: {message}")]
    Invalid { field: String, message: String },
}

/// What templates are resolved against: `--env` values (before the process
/// environment) and the directory feeder files are relative to.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub env: BTreeMap<String, String>,
    pub base_dir: Option<PathBuf>,
}

impl Inputs {
    pub fn var(&self, name: &str) -> Option<String> {
        self.env
            .get(name)
            .cloned()
            .or_else(|| std::env::var(name).ok())
    }
}

/// One piece of a compiled template.
#[derive(Debug, Clone)]
enum Seg {
    Lit(Bytes),
    Int(i64, i64),
    Choice(Vec<Bytes>),
    Uuid,
    Seq,
    NowMs,
    Col {
        feeder: usize,
        col: usize,
    },
    /// A scenario variable (index into the iteration's values).
    Var(usize),
    /// A setup value (index into [`Shared`]'s, in [`scenario_vars`] order of `setup:`).
    Setup(usize),
    /// `{{ iteration }}`: the virtual user's or lane's pick number.
    Iteration,
    /// `{{ repeat.index }}`: the repetition under way.
    RepeatIndex,
}

/// What one send renders from beside the feeders: its scenario's values
/// and the counters of `{{ iteration }}` and `{{ repeat.index }}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ctx<'a> {
    pub vars: &'a [Option<Bytes>],
    pub iteration: u64,
    pub repeat: u64,
    /// The setup's values (bound once, before the load).
    pub setup: &'a [Bytes],
}

/// How values filled into a field are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    /// As they are (headers, bodies).
    Raw,
    /// Percent-encoded (path and query).
    Percent,
    /// Escaped for the inside of a JSON string (a gRPC call's message).
    Json,
}

/// A field compiled into segments.
#[derive(Debug, Clone)]
pub struct CompiledField {
    segs: Vec<Seg>,
    escape: Escape,
}

impl CompiledField {
    /// The whole text when nothing in it varies per request.
    fn literal(&self) -> Option<Bytes> {
        match self.segs.as_slice() {
            [] => Some(Bytes::new()),
            [Seg::Lit(b)] => Some(b.clone()),
            _ => None,
        }
    }

    fn feeders(&self) -> impl Iterator<Item = usize> + '_ {
        self.segs.iter().filter_map(|s| match s {
            Seg::Col { feeder, .. } => Some(*feeder),
            _ => None,
        })
    }

    fn render(
        &self,
        w: &mut WorkerState,
        feeders: &[Feeder],
        rows: &[(usize, u32)],
        ctx: &Ctx<'_>,
        out: &mut Vec<u8>,
    ) {
        for s in &self.segs {
            match s {
                Seg::Lit(b) => out.extend_from_slice(b),
                Seg::Int(lo, hi) => {
                    let v = w.rng.i64(*lo..=*hi);
                    push_display(out, v);
                }
                Seg::Choice(c) => {
                    let v = &c[w.rng.usize(0..c.len())];
                    out.extend_from_slice(v);
                }
                Seg::Uuid => push_uuid(out, &mut w.rng),
                Seg::Seq => {
                    let v = w.seq_next * w.stride + w.offset;
                    w.seq_next += 1;
                    push_display(out, v);
                }
                Seg::NowMs => {
                    let ms = SystemTime::now()
                        .duration_since(SystemTime::UNIX_EPOCH)
                        .map(|d| d.as_millis())
                        .unwrap_or(0);
                    push_display(out, ms);
                }
                Seg::Iteration => push_display(out, ctx.iteration),
                Seg::RepeatIndex => push_display(out, ctx.repeat),
                Seg::Var(i) => {
                    if let Some(Some(v)) = ctx.vars.get(*i) {
                        escape_into(out, v, self.escape);
                    }
                }
                Seg::Setup(i) => {
                    if let Some(v) = ctx.setup.get(*i) {
                        escape_into(out, v, self.escape);
                    }
                }
                Seg::Col { feeder, col } => {
                    if let (Some(f), Some((_, row))) =
                        (feeders.get(*feeder), rows.iter().find(|(i, _)| i == feeder))
                    {
                        if self.escape == Escape::Raw {
                            f.field(*row, *col, out);
                        } else {
                            let mut raw = Vec::new();
                            f.field(*row, *col, &mut raw);
                            escape_into(out, &raw, self.escape);
                        }
                    }
                }
            }
        }
    }
}

fn push_display(out: &mut Vec<u8>, v: impl std::fmt::Display) {
    use std::io::Write;
    let _ = write!(out, "{v}");
}

fn push_uuid(out: &mut Vec<u8>, rng: &mut fastrand::Rng) {
    let mut b = rng.u128(..).to_be_bytes();
    b[6] = (b[6] & 0x0f) | 0x40; // version 4
    b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (i, x) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push(b'-');
        }
        out.push(HEX[(x >> 4) as usize]);
        out.push(HEX[(x & 15) as usize]);
    }
}

/// Percent-encode everything but RFC 3986's unreserved characters.
fn encode_into(out: &mut Vec<u8>, raw: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in raw {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
        }
    }
}

/// `raw` written into `out` as `escape` says.
fn escape_into(out: &mut Vec<u8>, raw: &[u8], escape: Escape) {
    match escape {
        Escape::Raw => out.extend_from_slice(raw),
        Escape::Percent => encode_into(out, raw),
        Escape::Json => {
            // serde_json writes a string with its quotes: keep what is between.
            let s = serde_json::to_string(&String::from_utf8_lossy(raw)).unwrap_or_default();
            if let Some(inner) = s.len().checked_sub(1).and_then(|end| s.get(1..end)) {
                out.extend_from_slice(inner.as_bytes());
            }
        }
    }
}

/// What `{{ vars.NAME }}` and `{{ setup.NAME }}` compile to: each name's
/// index among the scenario's (or setup's) variables and the setup's values.
#[derive(Debug, Clone, Copy, Default)]
pub struct Names<'a> {
    pub vars: &'a [String],
    pub setup: &'a [String],
}

fn encoded(raw: &[u8], escape: Escape) -> Vec<u8> {
    let mut v = Vec::with_capacity(raw.len());
    escape_into(&mut v, raw, escape);
    v
}

/// Compile one field; `escape`: how generated values are written.
fn compile(
    text: &str,
    field: &str,
    escape: Escape,
    inputs: &Inputs,
    feeders: &[Feeder],
    names: Names<'_>,
) -> Result<CompiledField, BindError> {
    let vars = names.vars;
    let invalid = |message: String| BindError::Invalid {
        field: field.into(),
        message,
    };
    let t = if Template::has_template(text) {
        Template::parse(text).map_err(|e| invalid(e.message))?
    } else {
        Template {
            parts: vec![Part::Lit(text.into())],
        }
    };
    let mut segs: Vec<Seg> = Vec::new();
    let mut lit: Vec<u8> = Vec::new();
    let flush = |lit: &mut Vec<u8>, segs: &mut Vec<Seg>| {
        if !lit.is_empty() {
            segs.push(Seg::Lit(Bytes::from(std::mem::take(lit))));
        }
    };
    for part in &t.parts {
        let e = match part {
            Part::Lit(s) => {
                lit.extend_from_slice(s.as_bytes());
                continue;
            }
            Part::Expr(e) => e,
        };
        let seg = match e {
            Expr::Env(name, default) => {
                let v = inputs
                    .var(name)
                    .or_else(|| default.clone())
                    .ok_or_else(|| BindError::MissingEnv {
                        name: name.clone(),
                        field: field.into(),
                    })?;
                lit.extend_from_slice(&encoded(v.as_bytes(), escape));
                continue;
            }
            Expr::RandomInt(lo, hi) => Seg::Int(*lo, *hi),
            Expr::RandomChoice(c) => Seg::Choice(
                c.iter()
                    .map(|v| Bytes::from(encoded(v.as_bytes(), escape)))
                    .collect(),
            ),
            Expr::Var(name) => Seg::Var(vars.iter().position(|v| v == name).ok_or_else(|| {
                invalid(format!(
                    "`vars.{name}`: no step of this scenario extracts it"
                ))
            })?),
            Expr::Setup(name) => {
                Seg::Setup(
                    names.setup.iter().position(|v| v == name).ok_or_else(|| {
                        invalid(format!("`setup.{name}`: no setup step extracts it"))
                    })?,
                )
            }
            Expr::Uuid => Seg::Uuid,
            Expr::Seq => Seg::Seq,
            Expr::NowUnixMs => Seg::NowMs,
            Expr::Iteration => Seg::Iteration,
            Expr::RepeatIndex => Seg::RepeatIndex,
            Expr::Feeder { feeder, column } => {
                let (i, f) = feeders
                    .iter()
                    .enumerate()
                    .find(|(_, f)| &f.name == feeder)
                    .ok_or_else(|| invalid(format!("no feeder named `{feeder}`")))?;
                let col = f.column(column).map_err(|source| BindError::Feeder {
                    field: field.into(),
                    source,
                })?;
                Seg::Col { feeder: i, col }
            }
        };
        flush(&mut lit, &mut segs);
        segs.push(seg);
    }
    flush(&mut lit, &mut segs);
    Ok(CompiledField { segs, escape })
}

/// The variables a scenario's steps extract, in a fixed order (their index
/// is what `{{ vars.NAME }}` compiles to).
pub fn scenario_vars<'a>(
    steps: impl IntoIterator<Item = &'a crate::profile::RequestSpec>,
) -> Vec<String> {
    let mut v: Vec<String> = steps
        .into_iter()
        .flat_map(|s| {
            let ws = s.ws.iter().flat_map(crate::profile::ws::extracted);
            s.extract.keys().chain(ws.map(|(_, k)| k)).cloned()
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The feeders of a profile, opened and indexed.
pub fn open_feeders(
    profile: &Profile,
    inputs: &Inputs,
    shard: Shard,
) -> Result<Vec<Feeder>, BindError> {
    profile
        .feeders
        .iter()
        .map(|(name, spec)| Feeder::open(name, spec, inputs.base_dir.as_deref(), shard))
        .collect::<Result<Vec<_>, _>>()
        .map_err(BindError::from)
}

/// The templated parts of one request of the mix.
pub struct Dynamic {
    /// The request as pre-built, with the static fields in place.
    base: Request<Full<Bytes>>,
    /// The whole path and query (base prefix included), when templated.
    path: Option<CompiledField>,
    headers: Vec<(HeaderName, CompiledField)>,
    body: Option<CompiledField>,
    /// Feeders this request takes a row from (each once per request).
    feeders: Vec<usize>,
}

/// A request's fields compiled; `dynamic` is `None` when all are static.
pub struct RequestFields {
    pub path: Bytes,
    pub headers: Vec<(String, Bytes)>,
    pub body: Bytes,
    pub dynamic_path: Option<CompiledField>,
    pub dynamic_headers: Vec<(String, CompiledField)>,
    pub dynamic_body: Option<CompiledField>,
}

/// Compile the path (`base` + `path`), headers and body of a request
/// (`body_escape`: how values are filled into the body).
#[allow(clippy::too_many_arguments)]
pub fn compile_fields(
    key: &str,
    base: &str,
    path: &str,
    headers: &[(&str, &str, String)],
    body: Option<&str>,
    body_escape: Escape,
    inputs: &Inputs,
    feeders: &[Feeder],
    names: Names<'_>,
) -> Result<RequestFields, BindError> {
    let vars = names.vars;
    let p = compile(
        &format!("{base}{path}"),
        &format!("{key}.path"),
        Escape::Percent,
        inputs,
        feeders,
        names,
    )?;
    let mut out = RequestFields {
        path: Bytes::new(),
        headers: Vec::new(),
        body: Bytes::new(),
        dynamic_path: None,
        dynamic_headers: Vec::new(),
        dynamic_body: None,
    };
    match p.literal() {
        Some(b) => out.path = b,
        None => {
            // A sample render checks the literal text is a valid URI.
            let mut w = WorkerState::detached();
            let mut buf = Vec::new();
            let rows: Vec<(usize, u32)> = p.feeders().map(|f| (f, 0)).collect();
            let sample: Vec<Option<Bytes>> = vars
                .iter()
                .map(|_| Some(Bytes::from_static(b"x")))
                .collect();
            let setup: Vec<Bytes> = names
                .setup
                .iter()
                .map(|_| Bytes::from_static(b"x"))
                .collect();
            let ctx = Ctx {
                vars: &sample,
                setup: &setup,
                ..Ctx::default()
            };
            p.render(&mut w, feeders, &rows, &ctx, &mut buf);
            if let Err(e) = hyper::Uri::try_from(buf.as_slice()) {
                return Err(BindError::Invalid {
                    field: format!("{key}.path"),
                    message: format!("not a valid path once filled in: {e}"),
                });
            }
            out.dynamic_path = Some(p);
        }
    }
    for (name, value, field) in headers {
        let c = compile(value, field, Escape::Raw, inputs, feeders, names)?;
        match c.literal() {
            Some(b) => out.headers.push((name.to_string(), b)),
            None => out.dynamic_headers.push((name.to_string(), c)),
        }
    }
    if let Some(b) = body {
        let c = compile(
            b,
            &format!("{key}.body"),
            body_escape,
            inputs,
            feeders,
            names,
        )?;
        match c.literal() {
            Some(b) => out.body = b,
            None => out.dynamic_body = Some(c),
        }
    }
    Ok(out)
}

impl Dynamic {
    /// `None` when nothing varies.
    pub fn new(
        base: Request<Full<Bytes>>,
        path: Option<CompiledField>,
        headers: Vec<(HeaderName, CompiledField)>,
        body: Option<CompiledField>,
    ) -> Option<Dynamic> {
        if path.is_none() && headers.is_empty() && body.is_none() {
            return None;
        }
        let mut feeders: Vec<usize> = path
            .iter()
            .chain(headers.iter().map(|(_, c)| c))
            .chain(body.iter())
            .flat_map(|c| c.feeders())
            .collect();
        feeders.sort_unstable();
        feeders.dedup();
        Some(Dynamic {
            base,
            path,
            headers,
            body,
            feeders,
        })
    }

    /// Build this send's request; `None` when a `unique` feeder has run
    /// out (the run's stop flag is then set and the reason kept).
    pub fn render(&self, shared: &Shared, ctx: &Ctx<'_>) -> Option<Request<Full<Bytes>>> {
        WORKER.with(|cell| {
            let mut guard = cell.borrow_mut();
            let w = guard.get_or_insert_with(WorkerState::detached);
            let rows = shared.take_rows(&self.feeders, w)?;
            let ctx = &Ctx {
                setup: shared.setup_values(),
                ..*ctx
            };
            let mut req = self.base.clone();
            let mut buf = Vec::with_capacity(128);
            if let Some(p) = &self.path {
                p.render(w, &shared.feeders, &rows, ctx, &mut buf);
                if let Ok(uri) =
                    hyper::Uri::from_maybe_shared(Bytes::from(std::mem::take(&mut buf)))
                {
                    *req.uri_mut() = uri;
                }
            }
            for (name, c) in &self.headers {
                buf.clear();
                c.render(w, &shared.feeders, &rows, ctx, &mut buf);
                // Control characters cannot go into a header: drop them.
                buf.retain(|b| *b == b'\t' || (*b >= 32 && *b != 127));
                if let Ok(v) = HeaderValue::from_bytes(&buf) {
                    req.headers_mut().insert(name.clone(), v);
                }
            }
            if let Some(b) = &self.body {
                buf.clear();
                b.render(w, &shared.feeders, &rows, ctx, &mut buf);
                req.headers_mut()
                    .insert(CONTENT_LENGTH, HeaderValue::from(buf.len()));
                *req.body_mut() = Full::new(Bytes::from(buf));
            }
            Some(req)
        })
    }
}

/// One templated text outside a request (a WebSocket message): compiled
/// once, rendered per send.
pub struct Text {
    field: CompiledField,
    feeders: Vec<usize>,
}

impl Text {
    /// Compile `text` (named `field` in errors) against `inputs`,
    /// `feeders` and the scenario's variables `vars`.
    pub fn compile(
        text: &str,
        field: &str,
        inputs: &Inputs,
        feeders: &[Feeder],
        names: Names<'_>,
    ) -> Result<Text, BindError> {
        let field = compile(text, field, Escape::Raw, inputs, feeders, names)?;
        let mut used: Vec<usize> = field.feeders().collect();
        used.sort_unstable();
        used.dedup();
        Ok(Text {
            field,
            feeders: used,
        })
    }

    /// This send's text; `None` when a `unique` feeder has run out.
    pub fn render(&self, shared: &Shared, ctx: &Ctx<'_>) -> Option<Bytes> {
        if let Some(b) = self.field.literal() {
            return Some(b);
        }
        WORKER.with(|cell| {
            let mut guard = cell.borrow_mut();
            let w = guard.get_or_insert_with(WorkerState::detached);
            let rows = shared.take_rows(&self.feeders, w)?;
            let mut out = Vec::with_capacity(64);
            let ctx = Ctx {
                setup: shared.setup_values(),
                ..*ctx
            };
            self.field.render(w, &shared.feeders, &rows, &ctx, &mut out);
            Some(Bytes::from(out))
        })
    }
}

/// What rendering shares across workers: the feeders, the setup's values
/// (bound once, before the load) and why the run stopped.
#[derive(Default)]
pub struct Shared {
    pub feeders: Vec<Feeder>,
    reason: Mutex<Option<String>>,
    setup: OnceLock<Vec<Bytes>>,
}

impl Shared {
    pub fn new(feeders: Vec<Feeder>) -> Shared {
        Shared {
            feeders,
            reason: Mutex::new(None),
            setup: OnceLock::new(),
        }
    }

    /// Bind the setup's values (in [`scenario_vars`] order of `setup:`),
    /// once; `false` when they were bound already.
    pub fn bind_setup(&self, values: Vec<Bytes>) -> bool {
        self.setup.set(values).is_ok()
    }

    /// The setup's values; empty before they are bound (and without `setup:`).
    pub fn setup_values(&self) -> &[Bytes] {
        self.setup.get().map_or(&[], Vec::as_slice)
    }

    fn exhausted(&self, f: &Feeder, stop: &Option<Arc<AtomicBool>>) {
        if let Ok(mut r) = self.reason.lock() {
            if r.is_none() {
                *r = Some(format!(
                    "feeder `{}` (mode unique) ran out: all {} of its rows were used",
                    f.name,
                    f.unique_rows()
                ));
            }
        }
        if let Some(s) = stop {
            s.store(true, Ordering::Relaxed);
        }
    }

    /// One row of each of `feeders` for one send; `None` when a `unique`
    /// one has run out.
    fn take_rows(&self, feeders: &[usize], w: &mut WorkerState) -> Option<Vec<(usize, u32)>> {
        let mut rows: Vec<(usize, u32)> = Vec::with_capacity(feeders.len());
        for &f in feeders {
            let feeder = &self.feeders[f];
            match feeder.take(&mut w.rng) {
                Take::Row(r) => rows.push((f, r)),
                Take::Last(r) => {
                    self.exhausted(feeder, &w.stop);
                    rows.push((f, r));
                }
                Take::Exhausted => {
                    self.exhausted(feeder, &w.stop);
                    return None;
                }
            }
        }
        Some(rows)
    }

    /// Why the engine stopped the run itself (a unique feeder ran out), if it did.
    pub fn stopped_reason(&self) -> Option<String> {
        self.reason.lock().ok().and_then(|r| r.clone())
    }
}

/// A worker's generator state.
pub(super) struct WorkerState {
    rng: fastrand::Rng,
    /// `seq` = seq_next · stride + offset: interleaved like arrivals.
    seq_next: u64,
    stride: u64,
    offset: u64,
    stop: Option<Arc<AtomicBool>>,
}

impl WorkerState {
    fn detached() -> WorkerState {
        WorkerState {
            rng: fastrand::Rng::new(),
            seq_next: 0,
            stride: 1,
            offset: 0,
            stop: None,
        }
    }
}

thread_local! {
    static WORKER: RefCell<Option<WorkerState>> = const { RefCell::new(None) };
}

/// Set up this thread as load worker `worker` of `workers` in `shard`.
pub(super) fn enter_worker(worker: usize, workers: usize, shard: Shard, stop: Arc<AtomicBool>) {
    let stride = workers as u64 * shard.count as u64;
    let offset = shard.index as u64 * workers as u64 + worker as u64;
    WORKER.with(|cell| {
        *cell.borrow_mut() = Some(WorkerState {
            // Seeded afresh each run: `uuid`s must not repeat from one run to the next.
            rng: fastrand::Rng::with_seed(
                fastrand::u64(..) ^ offset.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            ),
            seq_next: 0,
            stride,
            offset,
            stop: Some(stop),
        });
    });
}

#[cfg(test)]
mod tests;
