//! Reading a profile: the file, the YAML parse and its error turned into a
//! file/line/column message that names the key, then the checks.

use std::path::Path;

use super::locate::{key_path, snippet};
use super::{Profile, ProfileError};

/// Limits that stop hostile YAML (deep nesting, alias bombs) quickly.
pub(super) fn parse_options() -> serde_saphyr::Options {
    serde_saphyr::Options::default()
}

impl Profile {
    /// Read and validate a profile file (its own sections; the collector
    /// definitions it names are checked by `run::spec::RunSpec`).
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Profile::from_yaml(&text, path)
    }

    /// Parse and validate profile text; `path` only names it in errors.
    pub fn from_yaml(text: &str, path: &Path) -> Result<Profile, ProfileError> {
        let profile: Profile =
            serde_saphyr::from_str_with_options(text, parse_options()).map_err(|e| {
                let (line, column) = e
                    .location()
                    .map(|l| (l.line(), l.column()))
                    .unwrap_or((0, 0));
                let full = e.to_string();
                // First line of the rendering is "error: line L column C: message".
                let first = full.lines().next().unwrap_or("").to_string();
                let message = match first.split_once(": ") {
                    Some((_, rest)) => match rest.split_once(": ") {
                        Some((loc, msg)) if loc.starts_with("line ") => msg.to_string(),
                        _ => rest.to_string(),
                    },
                    None => first,
                };
                let snippet = full
                    .replace("<input>", &path.display().to_string())
                    .lines()
                    .skip(1)
                    .collect::<Vec<_>>()
                    .join("\n");
                let found = found_at(text, line as usize, column as usize);
                // "invalid u64" names neither what was wanted nor what was found.
                let message = if ["invalid u", "invalid i", "invalid f"]
                    .iter()
                    .any(|p| message.starts_with(p))
                {
                    format!("expected a number, found `{found}`")
                } else if found.starts_with("{{") {
                    // YAML read `{` as the start of a mapping.
                    format!("{message}: a `{{{{ … }}}}` template must be quoted in YAML, e.g. \"{found}\"")
                } else if message.starts_with("expected mapping") && !found.is_empty() {
                    // `target: builtin`: a section written as one value.
                    let hint = match key_path(text, line as usize).as_deref() {
                        Some("target") => format!(" — write `target: {{ url: {found} }}`"),
                        _ => String::new(),
                    };
                    format!("expected keys below this one (a mapping), found `{found}`{hint}")
                } else {
                    message
                };
                let message = match key_path(text, line as usize) {
                    Some(k) if !message.contains(&k) => format!("{message} (at `{k}`)"),
                    _ => message,
                };
                ProfileError::Syntax {
                    path: path.to_path_buf(),
                    line,
                    column,
                    message,
                    snippet,
                }
            })?;
        profile
            .validate_at(text)
            .map_err(|(message, at)| ProfileError::at(path, text, at, message))?;
        profile.check_templates(text, path)?;
        Ok(profile)
    }
}

/// The value written at `line`:`column` (1-based), up to a comment or the
/// end of its flow collection, for messages that say what was found.
fn found_at(text: &str, line: usize, column: usize) -> &str {
    text.lines()
        .nth(line.saturating_sub(1))
        .and_then(|l| l.get(column.saturating_sub(1)..))
        .map(|v| {
            let v = v.split(" #").next().unwrap_or(v).trim();
            // A template keeps its braces, up to its own `}}`; a number
            // loses the flow's closers.
            if v.starts_with("{{") {
                v.find("}}").map_or(v, |end| &v[..end + 2])
            } else {
                v.trim_end_matches([',', '}', ']']).trim()
            }
        })
        .unwrap_or("")
}

impl ProfileError {
    /// An error the engine's compile found in a field (a gRPC method or
    /// message field), placed in the profile's `text`: at `needle` nearest
    /// after the first `anchor` (else nearest before it), or at `anchor`.
    pub fn placed(
        path: &Path,
        text: &str,
        anchor: &str,
        needle: Option<&str>,
        message: String,
    ) -> ProfileError {
        ProfileError::at(
            path,
            text,
            super::locate::near(text, anchor, needle),
            message,
        )
    }

    /// `message` at 1-based `at` in `text` (with its snippet), or unplaced.
    fn at(path: &Path, text: &str, at: Option<(usize, usize)>, message: String) -> ProfileError {
        match at {
            Some((line, column)) => ProfileError::Syntax {
                path: path.to_path_buf(),
                line: line as u64,
                column: column as u64,
                snippet: snippet(text, line, column),
                message,
            },
            None => ProfileError::Invalid {
                path: path.to_path_buf(),
                message,
            },
        }
    }
}
