//! The `--set key.path=value` override language: a value set into the YAML
//! tree before it is read, so it is checked like the same value in the file.

use std::path::Path;

use super::load::parse_options;
use super::{Profile, ProfileError};

impl Profile {
    /// [`Profile::load`] with `--set key.path=value` overrides applied to the
    /// YAML tree before it is read into a profile, so an override is checked
    /// exactly like the same value written in the file.
    pub fn load_with(path: &Path, sets: &[(String, String)]) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Profile::from_yaml_with(&text, path, sets)
    }

    /// [`Profile::from_yaml`] with overrides (see [`Profile::load_with`]).
    pub fn from_yaml_with(
        text: &str,
        path: &Path,
        sets: &[(String, String)],
    ) -> Result<Profile, ProfileError> {
        // The file on its own first: its errors keep their line and column.
        let profile = Profile::from_yaml(text, path)?;
        if sets.is_empty() {
            return Ok(profile);
        }
        let mut tree: serde_json::Value =
            serde_saphyr::from_str_with_options(text, parse_options()).map_err(|e| {
                ProfileError::Invalid {
                    path: path.to_path_buf(),
                    message: e.to_string(),
                }
            })?;
        for (key, value) in sets {
            let fail = |message: String| ProfileError::Override {
                key: key.clone(),
                value: value.clone(),
                message,
            };
            // The value is read as YAML would read it: `500` a number, `500/s` text.
            let v: serde_json::Value = serde_saphyr::from_str(value)
                .unwrap_or_else(|_| serde_json::Value::String(value.clone()));
            set_path(&mut tree, key, v).map_err(fail)?;
        }
        let patched = serde_saphyr::to_string(&tree).map_err(|e| ProfileError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Profile::from_yaml(&patched, path).map_err(|e| {
            let message = match e {
                ProfileError::Syntax { message, .. } | ProfileError::Invalid { message, .. } => {
                    message
                }
                other => other.to_string(),
            };
            let (key, value) = sets
                .iter()
                .find(|(k, _)| message.contains(k.as_str()))
                .or(sets.last())
                .cloned()
                .unwrap_or_default();
            ProfileError::Override {
                key,
                value,
                message,
            }
        })
    }
}

/// Set `key` (dotted; a number indexes a list: `requests.0.weight`) in a
/// YAML tree. Only keys that lead through existing mappings or lists are
/// accepted, except the last, which may be new (the profile check then says
/// whether it is a field).
fn set_path(tree: &mut serde_json::Value, key: &str, v: serde_json::Value) -> Result<(), String> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err("expected a dotted key such as shape.constant.rate".into());
    }
    let mut node = tree;
    for (i, p) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let so_far = parts[..=i].join(".");
        node = match node {
            serde_json::Value::Object(m) => {
                if last {
                    m.insert(p.to_string(), v);
                    return Ok(());
                }
                m.get_mut(*p)
                    .ok_or_else(|| format!("the profile has no `{so_far}`"))?
            }
            serde_json::Value::Array(a) => {
                let idx: usize = p
                    .parse()
                    .map_err(|_| format!("`{so_far}`: a list, index it with a number"))?;
                let len = a.len();
                let slot = a
                    .get_mut(idx)
                    .ok_or_else(|| format!("`{so_far}`: the list has {len} entries"))?;
                if last {
                    *slot = v;
                    return Ok(());
                }
                slot
            }
            _ => {
                return Err(format!(
                    "`{}` is a value, not a section",
                    parts[..i].join(".")
                ))
            }
        };
    }
    Ok(())
}
