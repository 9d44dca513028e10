//! Bounds-checked reading of the format's values: varints, strings and the
//! decoded [`Value`] tree, plus the fast hasher for constant-pool keys.

use std::collections::HashMap;
use std::io::Read;
use std::rc::Rc;

use super::recording::{corrupt, JfrError};

/// FxHash-style hasher for the integer keys of constant pools (SipHash cost
/// a tenth of the parse time); input is a local file, not a network peer.
#[derive(Default, Clone, Copy)]
pub(super) struct IdHasher(u64);

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

pub(super) type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<IdHasher>>;

#[derive(Debug, Clone)]
pub(super) enum Value {
    Null,
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    /// Constant-pool reference: (class id, index).
    Ref(u64, i64),
    Obj(u64, Box<[Value]>),
    Arr(Vec<Value>),
}

/// A bounds-checked reader over one event's bytes.
pub(super) struct Buf<'a> {
    b: &'a [u8],
    pos: usize,
    compressed: bool,
}

impl<'a> Buf<'a> {
    pub(super) fn new(b: &'a [u8], compressed: bool) -> Self {
        Buf {
            b,
            pos: 0,
            compressed,
        }
    }
    /// The bytes not read yet.
    pub(super) fn rest(&self) -> &'a [u8] {
        self.b.get(self.pos..).unwrap_or_default()
    }
    fn remaining(&self) -> usize {
        self.b.len().saturating_sub(self.pos)
    }
    pub(super) fn u8(&mut self) -> Result<u8, JfrError> {
        let v = *self
            .b
            .get(self.pos)
            .ok_or_else(|| corrupt("value runs past its event"))?;
        self.pos += 1;
        Ok(v)
    }
    pub(super) fn bytes(&mut self, n: usize) -> Result<&'a [u8], JfrError> {
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
    pub(super) fn varlong(&mut self) -> Result<i64, JfrError> {
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
    pub(super) fn long(&mut self) -> Result<i64, JfrError> {
        if self.compressed {
            self.varlong()
        } else {
            let s = self.bytes(8)?;
            Ok(i64::from_be_bytes(
                s.try_into().map_err(|_| corrupt("long"))?,
            ))
        }
    }
    pub(super) fn int(&mut self) -> Result<i64, JfrError> {
        if self.compressed {
            // An int is written as its 32 bits: -1 arrives as 0xffffffff.
            Ok(self.varlong()? as i32 as i64)
        } else {
            let s = self.bytes(4)?;
            Ok(i32::from_be_bytes(s.try_into().map_err(|_| corrupt("int"))?) as i64)
        }
    }
    pub(super) fn short(&mut self) -> Result<i64, JfrError> {
        if self.compressed {
            Ok(self.varlong()? as i16 as i64)
        } else {
            let s = self.bytes(2)?;
            Ok(i16::from_be_bytes(s.try_into().map_err(|_| corrupt("short"))?) as i64)
        }
    }
    /// A length or count: must be non-negative and fit in what is left.
    pub(super) fn count(&mut self) -> Result<usize, JfrError> {
        let n = self.int()?;
        usize::try_from(n)
            .ok()
            .filter(|n| *n <= self.remaining())
            .ok_or_else(|| corrupt(format!("count {n} exceeds its event")))
    }
    /// Strings: 0 null, 1 empty, 2 constant pool, 3 UTF-8, 4 char array, 5 Latin-1.
    pub(super) fn string(&mut self, string_class: u64) -> Result<Value, JfrError> {
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

/// Reads a varint from a byte stream (the event size and type before an event's body).
pub(super) fn read_varint(
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
