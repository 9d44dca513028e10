//! A call's request message: its YAML/JSON object checked field by field
//! against the method's input type at compile (an unknown field or a value
//! of the wrong type is an error naming the field), and encoded into a
//! length-prefixed gRPC frame — once when static, per send when templated.

use bytes::{BufMut, Bytes, BytesMut};
use prost::Message as _;
use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, MessageDescriptor};
use serde_json::Value;

/// What is wrong with a message, and the field (dotted key under
/// `message`, and the name to point at in the profile).
#[derive(Debug)]
pub(super) struct Bad {
    pub key: String,
    pub field: String,
    pub why: String,
}

/// Check `v` (an object) against `desc`; `key` names it (`….grpc.message`).
pub(super) fn check(desc: &MessageDescriptor, v: &Value, key: &str) -> Result<(), Bad> {
    let Value::Object(m) = v else {
        return Err(Bad {
            key: key.into(),
            field: "message".into(),
            why: format!("expected an object (message `{}`)", desc.full_name()),
        });
    };
    for (name, value) in m {
        let here = format!("{key}.{name}");
        let Some(f) = desc
            .get_field_by_name(name)
            .or_else(|| desc.get_field_by_json_name(name))
        else {
            let fields: Vec<String> = desc.fields().map(|f| f.name().to_string()).collect();
            return Err(Bad {
                key: here,
                field: name.clone(),
                why: format!(
                    "message `{}` has no field `{name}` (its fields: {})",
                    desc.full_name(),
                    fields.join(", ")
                ),
            });
        };
        check_field(&f, value, &here).map_err(|why| Bad {
            key: here.clone(),
            field: name.clone(),
            why,
        })?;
        if let (Kind::Message(inner), Value::Object(_)) = (f.kind(), value) {
            if !f.is_map() && !is_well_known(&inner) {
                check(&inner, value, &here)?;
            }
        }
    }
    Ok(())
}

fn is_well_known(m: &MessageDescriptor) -> bool {
    m.full_name().starts_with("google.protobuf.")
}

/// A field's value of the right shape: a list for `repeated`, an object for
/// a map, else one value of its kind.
fn check_field(f: &FieldDescriptor, v: &Value, key: &str) -> Result<(), String> {
    if v.is_null() {
        return Ok(());
    }
    if f.is_map() {
        return match v {
            Value::Object(_) => Ok(()),
            _ => Err(format!("field `{}` is a map: expected an object", f.name())),
        };
    }
    if f.is_list() {
        let Value::Array(a) = v else {
            return Err(format!("field `{}` is repeated: expected a list", f.name()));
        };
        for (i, x) in a.iter().enumerate() {
            check_kind(&f.kind(), x).map_err(|e| format!("field `{}`[{i}]: {e}", f.name()))?;
            if let (Kind::Message(inner), Value::Object(_)) = (f.kind(), x) {
                if !is_well_known(&inner) {
                    check(&inner, x, &format!("{key}[{i}]")).map_err(|b| b.why)?;
                }
            }
        }
        return Ok(());
    }
    check_kind(&f.kind(), v).map_err(|e| format!("field `{}`: {e}", f.name()))
}

/// One value against a kind; a templated string passes for any scalar
/// (its text is parsed per send, as protobuf's JSON mapping reads strings).
fn check_kind(kind: &Kind, v: &Value) -> Result<(), String> {
    let templated = v.as_str().is_some_and(|s| s.contains("{{"));
    let found = || match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("`{b}`"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
    };
    let ok = match kind {
        Kind::Double | Kind::Float => {
            v.is_number()
                || templated
                || v.as_str().is_some_and(|s| {
                    s.parse::<f64>().is_ok() || matches!(s, "NaN" | "Infinity" | "-Infinity")
                })
        }
        Kind::Int32
        | Kind::Int64
        | Kind::Sint32
        | Kind::Sint64
        | Kind::Sfixed32
        | Kind::Sfixed64 => {
            v.as_i64().is_some()
                || templated
                || v.as_str().is_some_and(|s| s.parse::<i64>().is_ok())
        }
        Kind::Uint32 | Kind::Uint64 | Kind::Fixed32 | Kind::Fixed64 => {
            v.as_u64().is_some()
                || templated
                || v.as_str().is_some_and(|s| s.parse::<u64>().is_ok())
        }
        Kind::Bool => v.is_boolean() || templated,
        Kind::String | Kind::Bytes => v.is_string(),
        Kind::Enum(e) => {
            v.as_i64().is_some()
                || templated
                || v.as_str().is_some_and(|s| e.get_value_by_name(s).is_some())
        }
        Kind::Message(m) => v.is_object() || is_well_known(m),
    };
    if ok {
        return Ok(());
    }
    let want = match kind {
        Kind::Enum(e) => {
            let names: Vec<String> = e.values().map(|x| x.name().to_string()).collect();
            format!("enum {} ({})", e.full_name(), names.join(", "))
        }
        Kind::Message(m) => format!("message {} (an object)", m.full_name()),
        k => format!("{k:?}").to_lowercase(),
    };
    Err(format!("expected {want}, found {}", found()))
}

/// A message from its JSON text, as a gRPC frame: a zero compression flag,
/// the length (4 bytes, big-endian) and the encoded message.
pub(super) fn encode_json(desc: &MessageDescriptor, json: &[u8]) -> Result<Bytes, String> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let msg = DynamicMessage::deserialize(desc.clone(), &mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(frame(&msg))
}

fn frame(msg: &DynamicMessage) -> Bytes {
    let len = msg.encoded_len();
    let mut out = BytesMut::with_capacity(5 + len);
    out.put_u8(0);
    out.put_u32(len as u32);
    // Encoding into a buffer with room for it cannot fail.
    let _ = msg.encode(&mut out);
    out.freeze()
}
