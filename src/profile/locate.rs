//! Placing an error in the profile's text: the key path of a line, the line
//! and column of a value or fragment, and the snippet shown under it; a
//! check that fails says where its cause stands as a [`Place`].

/// Where in the text a failed check points.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Place {
    /// The value of the `nth` occurrence of one of `keys` in a top-level section.
    Key(&'static str, &'static [&'static str], usize),
    /// The first occurrence of this text in a top-level section.
    Text(&'static str, String),
}

impl Place {
    /// 1-based line and column, when the text holds it.
    pub fn find(&self, text: &str) -> Option<(usize, usize)> {
        match self {
            Place::Key(sect, keys, nth) => locate_key(text, sect, keys, *nth),
            Place::Text(sect, needle) => locate_in_section(text, sect, needle),
        }
    }
}

/// The dotted key path of a block-style YAML line (`shape.constant.duration`),
/// found from indentation: serde's messages name neither the field nor its parents.
pub(super) fn key_path(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let key_of = |l: &str| -> Option<(usize, String)> {
        let body = l.trim_start();
        let indent = l.len() - body.len();
        let body = body.strip_prefix("- ").unwrap_or(body);
        if body.starts_with('#') || body.starts_with('{') {
            return None;
        }
        let (k, _) = body.split_once(':')?;
        let k = k.trim().trim_matches('"');
        (!k.is_empty() && !k.contains(' ')).then(|| (indent, k.to_string()))
    };
    let (mut indent, first) = key_of(lines.get(line.checked_sub(1)?)?)?;
    let mut path = vec![first];
    for l in lines[..line - 1].iter().rev() {
        if l.trim().is_empty() {
            continue;
        }
        if let Some((i, k)) = key_of(l) {
            if i < indent {
                path.push(k);
                indent = i;
                if i == 0 {
                    break;
                }
            }
        }
    }
    path.reverse();
    Some(path.join("."))
}

/// 1-based line and column (in characters) of the first occurrence of `needle` in `text`.
pub(super) fn locate(text: &str, needle: &str) -> Option<(u64, u64)> {
    let needle = needle.lines().next().filter(|n| !n.is_empty())?;
    text.lines().enumerate().find_map(|(i, l)| {
        l.find(needle)
            .map(|at| (i as u64 + 1, l[..at].chars().count() as u64 + 1))
    })
}

/// The `{{ … }}` of `value` holding `pat`, as written.
pub(super) fn t_fragment(value: &str, pat: &str) -> String {
    let pat = pat.to_string();
    value
        .find(&pat)
        .and_then(|at| {
            let start = value[..at].rfind("{{")?;
            let end = value[at..].find("}}").map(|e| at + e + 2)?;
            Some(value[start..end].to_string())
        })
        .unwrap_or(pat)
}

/// The lines of a top-level section (`shape:` … up to the next top-level key),
/// 1-based line numbers with their text.
pub(super) fn section<'a>(text: &'a str, name: &str) -> Vec<(usize, &'a str)> {
    let mut out = Vec::new();
    let mut inside = false;
    for (i, l) in text.lines().enumerate() {
        let top = !l.starts_with([' ', '\t', '#', '-']) && !l.trim().is_empty();
        if top {
            inside = l
                .strip_prefix(name)
                .is_some_and(|r| r.trim_start().starts_with(':'));
        }
        if inside {
            out.push((i + 1, l));
        }
    }
    out
}

/// A line without its comment (a `#` at the start or after a blank).
pub(super) fn code(l: &str) -> &str {
    let b = l.as_bytes();
    for i in 0..b.len() {
        if b[i] == b'#' && (i == 0 || b[i - 1] == b' ' || b[i - 1] == b'\t') {
            return &l[..i];
        }
    }
    l
}

/// Line and column (1-based, in characters) of the value of the `nth`
/// occurrence of any of `keys` within a top-level section, block or flow style.
pub(super) fn locate_key(
    text: &str,
    sect: &str,
    keys: &[&str],
    nth: usize,
) -> Option<(usize, usize)> {
    let mut found = Vec::new();
    for (n, l) in section(text, sect) {
        let c = code(l);
        for (i, _) in c.char_indices() {
            let before = c[..i].chars().next_back();
            if !before.is_none_or(|b| matches!(b, ' ' | '\t' | '{' | ',' | '-')) {
                continue;
            }
            let rest = &c[i..];
            if keys
                .iter()
                .any(|k| rest.strip_prefix(k).is_some_and(|r| r.starts_with(':')))
            {
                let colon = rest.find(':').unwrap_or(0);
                let after = &rest[colon + 1..];
                let value_at = i + colon + 1 + (after.len() - after.trim_start().len());
                found.push((n, c[..value_at].chars().count() + 1));
            }
        }
    }
    found.get(nth).copied()
}

/// Line and column of the first occurrence of `needle` in a top-level section.
pub(super) fn locate_in_section(text: &str, sect: &str, needle: &str) -> Option<(usize, usize)> {
    let needle = needle.trim();
    if needle.is_empty() {
        return None;
    }
    // Not inside a longer expression: `p99 < 5s` is not `recovery.p99 < 5s`.
    let starts_here = |c: &str, i: usize| {
        !c[..i]
            .chars()
            .next_back()
            .is_some_and(|b| b.is_alphanumeric() || b == '.' || b == '_')
    };
    section(text, sect).into_iter().find_map(|(n, l)| {
        let c = code(l);
        c.match_indices(needle)
            .map(|(i, _)| i)
            .find(|&i| starts_here(c, i))
            .map(|i| (n, c[..i].chars().count() + 1))
    })
}

/// The offending line with a caret under the column, as the parser shows its own.
pub(super) fn snippet(text: &str, line: usize, column: usize) -> String {
    let Some(l) = text.lines().nth(line.saturating_sub(1)) else {
        return String::new();
    };
    let num = line.to_string();
    format!(
        " {num} | {l}\n {} | {}^",
        " ".repeat(num.len()),
        " ".repeat(column.saturating_sub(1))
    )
}

/// 1-based line and column of `needle` nearest after the first `anchor`
/// (else the last one before it), or of `anchor` itself without a needle.
pub(super) fn near(text: &str, anchor: &str, needle: Option<&str>) -> Option<(usize, usize)> {
    let at = text.find(anchor)?;
    let offset = match needle {
        None => at,
        Some(n) => text[at..]
            .find(n)
            .map(|i| at + i)
            .or_else(|| text[..at].rfind(n))
            .unwrap_or(at),
    };
    let line = text[..offset].matches('\n').count() + 1;
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    Some((line, text[start..offset].chars().count() + 1))
}
