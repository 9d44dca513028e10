//! Reading one chunk: its header, metadata, constant-pool chain and events,
//! each size and offset checked against the chunk before use.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Seek, SeekFrom};
use std::rc::Rc;

use super::buf::{read_varint, Buf, FastMap};
use super::events::{handle_event, wanted_types};
use super::metadata::{read_metadata, MetaCache, Metadata};
use super::pool::Chunk;
use super::recording::{corrupt, JfrError, JfrRecording};
use super::sites::Agg;

pub const MAGIC: &[u8; 4] = b"FLR\0";
pub(super) const HEADER_SIZE: u64 = 68;
const MAX_CP_EVENTS: usize = 1 << 20;
const EVENT_CHECKPOINT: u64 = 1;

/// A chunk's fixed header, checked against the file.
struct Header {
    size: u64,
    cp_off: u64,
    meta_off: u64,
    start_nanos: i64,
    duration_nanos: i64,
    start_ticks: i64,
    ticks_per_sec: u64,
    compressed: bool,
}

/// The chunk at `pos` of a reader, with a buffer reused for each event read whole.
struct ChunkReader<'r, R> {
    r: &'r mut R,
    pos: u64,
    h: Header,
    buf: Vec<u8>,
}

/// Reads one chunk at `pos`; returns its size.
pub(super) fn read_chunk<R: Read + Seek>(
    r: &mut R,
    pos: u64,
    file_len: u64,
    rec: &mut JfrRecording,
    agg: &mut Agg,
    end_unix: &mut f64,
    meta_cache: &mut MetaCache,
) -> Result<u64, JfrError> {
    let h = read_header(r, pos, file_len)?;
    let mut cr = ChunkReader {
        r,
        pos,
        h,
        buf: Vec::new(),
    };
    let meta = cr.metadata(meta_cache)?;
    let mut chunk = Chunk {
        meta,
        pool: FastMap::default(),
        start_nanos: cr.h.start_nanos,
        start_ticks: cr.h.start_ticks,
        ticks_per_sec: cr.h.ticks_per_sec as f64,
        stacks: FastMap::default(),
        threads: FastMap::default(),
    };
    cr.constant_pools(&mut chunk)?;
    let chunk_start_unix = cr.h.start_nanos as f64 / 1e9;
    rec.start_unix = Some(
        rec.start_unix
            .map_or(chunk_start_unix, |s: f64| s.min(chunk_start_unix)),
    );
    *end_unix = end_unix.max((cr.h.start_nanos.saturating_add(cr.h.duration_nanos)) as f64 / 1e9);
    cr.events(&mut chunk, rec, agg)?;
    Ok(cr.h.size)
}

/// Reads and checks the header of the chunk at `pos`.
fn read_header<R: Read + Seek>(r: &mut R, pos: u64, file_len: u64) -> Result<Header, JfrError> {
    r.seek(SeekFrom::Start(pos))?;
    let avail = file_len - pos;
    if avail < HEADER_SIZE {
        return Err(short_chunk(r, pos, file_len, avail));
    }
    let mut b = [0u8; HEADER_SIZE as usize];
    r.read_exact(&mut b)?;
    if b.get(..4) != Some(MAGIC.as_slice()) {
        return Err(if pos == 0 {
            JfrError::NotJfr
        } else {
            corrupt("no FLR magic where the next chunk should start")
        });
    }
    let major = u16::from_be_bytes([b[4], b[5]]);
    let minor = u16::from_be_bytes([b[6], b[7]]);
    if major != 2 {
        return Err(JfrError::Version(major, minor));
    }
    let features = u32::from_be_bytes([b[64], b[65], b[66], b[67]]);
    let h = Header {
        size: be_u64(&b, 8),
        cp_off: be_u64(&b, 16),
        meta_off: be_u64(&b, 24),
        start_nanos: be_u64(&b, 32) as i64,
        duration_nanos: be_u64(&b, 40) as i64,
        start_ticks: be_u64(&b, 48) as i64,
        ticks_per_sec: be_u64(&b, 56),
        compressed: features & 1 != 0,
    };
    h.check(avail)?;
    Ok(h)
}

/// Why fewer than a header's bytes are left at `pos`.
fn short_chunk(r: &mut impl Read, pos: u64, file_len: u64, avail: u64) -> JfrError {
    if pos != 0 {
        return corrupt(format!("{avail} trailing bytes, not a chunk"));
    }
    if avail < 4 {
        return JfrError::NotJfr;
    }
    let mut m = [0u8; 4];
    if let Err(e) = r.read_exact(&mut m) {
        return e.into();
    }
    if &m != MAGIC {
        JfrError::NotJfr
    } else {
        corrupt(format!(
            "file is {file_len} bytes, shorter than a chunk header"
        ))
    }
}

impl Header {
    /// Sizes and offsets against the `avail` bytes left in the file.
    fn check(&self, avail: u64) -> Result<(), JfrError> {
        let size = self.size;
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
        if !(HEADER_SIZE..size).contains(&self.meta_off)
            || !(HEADER_SIZE..size).contains(&self.cp_off)
        {
            return Err(corrupt(
                "metadata or constant-pool offset outside the chunk",
            ));
        }
        if self.ticks_per_sec == 0 {
            return Err(corrupt("ticks per second is 0"));
        }
        Ok(())
    }
}

fn be_u64(h: &[u8], at: usize) -> u64 {
    h.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map(u64::from_be_bytes)
        .unwrap_or(0)
}

impl<R: Read + Seek> ChunkReader<'_, R> {
    fn metadata(&mut self, cache: &mut MetaCache) -> Result<Rc<Metadata>, JfrError> {
        self.read_event_at(self.h.meta_off)?;
        read_metadata(&mut Buf::new(&self.buf, self.h.compressed), cache)
    }

    /// Constant pools: a chain of checkpoint events linked by backwards deltas.
    fn constant_pools(&mut self, chunk: &mut Chunk) -> Result<(), JfrError> {
        let mut off = self.h.cp_off;
        let mut seen = HashSet::new();
        while seen.len() < MAX_CP_EVENTS {
            if !seen.insert(off) {
                return Err(corrupt("constant-pool chain loops"));
            }
            self.read_event_at(off)?;
            let delta = read_checkpoint(&mut Buf::new(&self.buf, self.h.compressed), chunk)?;
            if delta == 0 {
                break;
            }
            let next = (off as i64).checked_add(delta).unwrap_or(-1);
            if next < HEADER_SIZE as i64 || next as u64 >= self.h.size {
                return Err(corrupt("constant-pool delta leaves the chunk"));
            }
            off = next as u64;
        }
        Ok(())
    }

    /// Every event from the chunk's start, streamed: the wanted ones are
    /// decoded, all others counted and skipped unread.
    fn events(
        &mut self,
        chunk: &mut Chunk,
        rec: &mut JfrRecording,
        agg: &mut Agg,
    ) -> Result<(), JfrError> {
        let wanted = wanted_types(&chunk.meta);
        let mut names: HashMap<u64, String> = HashMap::new();
        let (pos, compressed) = (self.pos, self.h.compressed);
        self.r.seek(SeekFrom::Start(pos + HEADER_SIZE))?;
        let mut at = HEADER_SIZE;
        while at < self.h.size {
            let Some((ev_size, ty, body_len)) = self.event_header(at, &mut rec.warnings)? else {
                break;
            };
            count_event(ty, &chunk.meta, &mut names, rec);
            match wanted.get(&ty) {
                Some(kind) => {
                    self.buf.resize(body_len as usize, 0);
                    self.r.read_exact(&mut self.buf)?;
                    match chunk
                        .meta
                        .read_value(&mut Buf::new(&self.buf, compressed), ty, 0)
                    {
                        Ok(v) => handle_event(kind, &v, chunk, rec, agg),
                        Err(e) => rec
                            .warnings
                            .push(format!("chunk at byte {pos}: {kind} at offset {at}: {e}")),
                    }
                }
                None => self.skip(body_len)?,
            }
            at += ev_size;
        }
        Ok(())
    }

    /// Size, type and body length of the event at `at`; `None` (with a
    /// warning) when they cannot be right, which ends the chunk's events.
    fn event_header(
        &mut self,
        at: u64,
        warnings: &mut Vec<String>,
    ) -> Result<Option<(u64, u64, u64)>, JfrError> {
        let (pos, size, compressed) = (self.pos, self.h.size, self.h.compressed);
        let (ev_size, n1) = read_varint(self.r, compressed, 4)?;
        if ev_size <= n1 || ev_size > size - at {
            warnings.push(format!(
                "chunk at byte {pos}: event at offset {at} has impossible size {ev_size}; rest of chunk skipped"
            ));
            return Ok(None);
        }
        let (ty, n2) = read_varint(self.r, compressed, 8)?;
        if n1 + n2 > ev_size {
            warnings.push(format!(
                "chunk at byte {pos}: event at offset {at} is shorter than its header"
            ));
            return Ok(None);
        }
        Ok(Some((ev_size, ty, ev_size - n1 - n2)))
    }

    fn skip(&mut self, n: u64) -> Result<(), JfrError> {
        // Read past it rather than seek: a seek empties a BufReader's buffer.
        let skipped = std::io::copy(&mut self.r.by_ref().take(n), &mut std::io::sink())?;
        if skipped < n {
            return Err(corrupt("event runs past the end of the file"));
        }
        Ok(())
    }

    /// Reads the event at chunk offset `off` whole into `buf` (size checked against the chunk).
    fn read_event_at(&mut self, off: u64) -> Result<(), JfrError> {
        let (pos, compressed) = (self.pos, self.h.compressed);
        self.r.seek(SeekFrom::Start(pos + off))?;
        let (size, _) = read_varint(self.r, compressed, 4)?;
        if size == 0 || size > self.h.size - off {
            return Err(corrupt(format!(
                "event at offset {off} has impossible size {size}"
            )));
        }
        self.r.seek(SeekFrom::Start(pos + off))?;
        self.buf.resize(size as usize, 0);
        self.r.read_exact(&mut self.buf)?;
        Ok(())
    }
}

/// Reads one checkpoint event's pools into the chunk; returns its delta to the next.
fn read_checkpoint(b: &mut Buf, chunk: &mut Chunk) -> Result<i64, JfrError> {
    // size, type, start, duration, delta, flags
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
            let v = chunk.meta.read_value(b, class, 0)?;
            chunk.pool.insert((class, idx), v);
        }
    }
    Ok(delta)
}

/// Counts a real event (not metadata or checkpoint) under its type's name.
fn count_event(ty: u64, meta: &Metadata, names: &mut HashMap<u64, String>, rec: &mut JfrRecording) {
    if ty <= EVENT_CHECKPOINT {
        return;
    }
    rec.events += 1;
    let name = names.entry(ty).or_insert_with(|| {
        meta.classes
            .get(&ty)
            .map(|c| c.name.clone())
            .unwrap_or_else(|| format!("unknown type {ty}"))
    });
    *rec.events_by_type.entry(name.clone()).or_default() += 1;
}
