//! One chunk's decoding state: its constant pool and resolving values
//! through it, its clock, and caches of decoded stacks and thread names.

use std::rc::Rc;

use super::buf::{FastMap, Value};
use super::metadata::Metadata;
use crate::diagnosis::model::Frame;

/// Decoding state of the chunk being read.
pub(super) struct Chunk {
    pub(super) meta: Rc<Metadata>,
    pub(super) pool: FastMap<(u64, i64), Value>,
    pub(super) start_nanos: i64,
    pub(super) start_ticks: i64,
    pub(super) ticks_per_sec: f64,
    pub(super) stacks: FastMap<i64, Rc<Vec<Frame>>>,
    pub(super) threads: FastMap<i64, Rc<str>>,
}

impl Chunk {
    pub(super) fn resolve<'v>(&'v self, mut v: &'v Value) -> &'v Value {
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
    pub(super) fn get<'v>(&'v self, v: &'v Value, field: &str) -> Option<&'v Value> {
        match self.resolve(v) {
            Value::Obj(c, fields) => {
                let i = self.meta.classes.get(c)?.pos(field)?;
                fields.get(i)
            }
            _ => None,
        }
    }
    pub(super) fn string(&self, v: &Value) -> Option<String> {
        match self.resolve(v) {
            Value::Str(s) => Some(s.to_string()),
            // A Symbol / an object with a `string` field.
            o @ Value::Obj(..) => self.get(o, "string").and_then(|s| self.string(s)),
            _ => None,
        }
    }
    pub(super) fn int(&self, v: Option<&Value>) -> Option<i64> {
        match v.map(|v| self.resolve(v)) {
            Some(Value::Int(i)) => Some(*i),
            Some(Value::Float(f)) => Some(*f as i64),
            _ => None,
        }
    }
    /// `jdk.types.Class` → `com.acme.Inventory`.
    pub(super) fn class_name(&self, v: &Value) -> Option<String> {
        let n = self.get(v, "name")?;
        self.string(n).map(|s| s.replace('/', "."))
    }
    pub(super) fn ticks_to_unix(&self, ticks: i64) -> f64 {
        let ns = self.start_nanos as f64
            + (ticks.saturating_sub(self.start_ticks)) as f64 * 1e9 / self.ticks_per_sec;
        ns / 1e9
    }
    pub(super) fn ticks_to_ms(&self, ticks: i64) -> f64 {
        ticks as f64 * 1e3 / self.ticks_per_sec
    }
    pub(super) fn thread_name(&mut self, v: &Value) -> Option<Rc<str>> {
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
    pub(super) fn stack(&mut self, v: &Value) -> Rc<Vec<Frame>> {
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
