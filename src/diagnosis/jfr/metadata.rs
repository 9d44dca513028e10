//! The metadata event: the chunk's class descriptions, and decoding a value
//! of a described class from an event's bytes.

use std::rc::Rc;

use super::buf::{Buf, FastMap, Value};
use super::recording::{corrupt, JfrError};

const MAX_DEPTH: u32 = 24;
const EVENT_METADATA: u64 = 0;

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
pub(super) struct ClassDesc {
    pub(super) name: String,
    prim: Option<Prim>,
    fields: Vec<FieldDesc>,
}

impl ClassDesc {
    pub(super) fn pos(&self, field: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == field)
    }
}

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

pub(super) struct Metadata {
    pub(super) classes: FastMap<u64, ClassDesc>,
    string_class: u64,
}

/// The last metadata read and its bytes: consecutive chunks of a recording
/// usually carry the same metadata, which then is parsed once.
pub(super) type MetaCache = Option<(Vec<u8>, Rc<Metadata>)>;

pub(super) fn read_metadata(b: &mut Buf, cache: &mut MetaCache) -> Result<Rc<Metadata>, JfrError> {
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
    let body = b.rest();
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
            let Some((id, desc)) = class_desc(c) else {
                continue;
            };
            if desc.prim == Some(Prim::Str) {
                string_class = id;
            }
            classes.insert(id, desc);
        }
    }
    Ok(Metadata {
        classes,
        string_class,
    })
}

/// A `class` element: its id and description (`None` without a numeric id).
fn class_desc(c: &Element) -> Option<(u64, ClassDesc)> {
    let id = c.attr("id").and_then(|v| v.parse::<u64>().ok())?;
    let name = c.attr("name").unwrap_or_default().to_string();
    let prim = prim_of(&name);
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
    Some((id, ClassDesc { name, prim, fields }))
}

fn prim_of(class_name: &str) -> Option<Prim> {
    match class_name {
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
    }
}

impl Metadata {
    pub(super) fn read_value(
        &self,
        b: &mut Buf,
        class: u64,
        depth: u32,
    ) -> Result<Value, JfrError> {
        if depth > MAX_DEPTH {
            return Err(corrupt("values nested too deep"));
        }
        let c = self
            .classes
            .get(&class)
            .ok_or_else(|| corrupt(format!("unknown class id {class}")))?;
        if let Some(p) = c.prim {
            return self.read_prim(b, p);
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

    fn read_prim(&self, b: &mut Buf, p: Prim) -> Result<Value, JfrError> {
        Ok(match p {
            Prim::Bool | Prim::Byte => Value::Int(b.u8()? as i8 as i64),
            Prim::Short | Prim::Char => Value::Int(b.short()?),
            Prim::Int => Value::Int(b.int()?),
            Prim::Long => Value::Int(b.long()?),
            Prim::Float => {
                let s = b.bytes(4)?;
                Value::Float(f32::from_be_bytes(s.try_into().map_err(|_| corrupt("f32"))?) as f64)
            }
            Prim::Double => {
                let s = b.bytes(8)?;
                Value::Float(f64::from_be_bytes(
                    s.try_into().map_err(|_| corrupt("f64"))?,
                ))
            }
            Prim::Str => b.string(self.string_class)?,
        })
    }
}
