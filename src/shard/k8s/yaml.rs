//! The ordered YAML tree the manifest is serialized from, so documents read
//! in the usual `apiVersion, kind, metadata, spec` order and every value
//! reaches YAML through the serializer.

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

/// An ordered YAML node.
pub(super) enum Y {
    S(String),
    I(i64),
    B(bool),
    L(Vec<Y>),
    M(Vec<(String, Y)>),
}

impl Serialize for Y {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        match self {
            Y::S(s) => ser.serialize_str(s),
            Y::I(i) => ser.serialize_i64(*i),
            Y::B(b) => ser.serialize_bool(*b),
            Y::L(v) => {
                let mut seq = ser.serialize_seq(Some(v.len()))?;
                for x in v {
                    seq.serialize_element(x)?;
                }
                seq.end()
            }
            Y::M(v) => {
                let mut map = ser.serialize_map(Some(v.len()))?;
                for (k, x) in v {
                    map.serialize_entry(k, x)?;
                }
                map.end()
            }
        }
    }
}

pub(super) fn s(v: impl Into<String>) -> Y {
    Y::S(v.into())
}

pub(super) fn m<const K: usize>(entries: [(&str, Y); K]) -> Y {
    Y::M(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}
