//! The profile's JSON Schema (`brunt schema`), for editors that complete and
//! check YAML as it is typed (e.g. `# yaml-language-server: $schema=…`).
//! Generated from the section types themselves with `schemars`, so it cannot
//! drift from what the parser accepts; the few types read by hand (durations,
//! `http`, numbers with units) describe here what their readers take.

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};

use super::{HttpVersion, Profile};

/// A duration as `humantime` reads it: `90s`, `250ms`, `5m`, `1h 30m`.
pub struct Duration;

impl JsonSchema for Duration {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "a duration such as `90s`, `250ms`, `5m` or `1h 30m`"
        })
    }
}

impl JsonSchema for HttpVersion {
    fn schema_name() -> Cow<'static, str> {
        "HttpVersion".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "the HTTP version: `1.1`, `2` (h2 over TLS, h2c without) or `auto` (ALPN)",
            "enum": ["1.1", "1", "http/1.1", "2", "2.0", "h2", "h2c", "auto", 1, 1.1, 2]
        })
    }
}

/// The whole profile's schema as pretty JSON (draft 2020-12).
pub fn profile_schema() -> String {
    let mut schema = schemars::schema_for!(Profile);
    schema.insert(
        "title".into(),
        serde_json::Value::String("brunt profile".into()),
    );
    // Pretty JSON of a `serde_json::Value` cannot fail.
    serde_json::to_string_pretty(&schema).unwrap_or_default()
}
