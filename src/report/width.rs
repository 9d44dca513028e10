//! Text for a terminal: every line within [`COLUMNS`] (a line too long is
//! cut with `…` where it is one item, wrapped at spaces where it is prose),
//! and PASS/FAIL in colour when the caller's stream is a terminal.

/// The width every line of brunt's terminal output fits.
pub const COLUMNS: usize = 80;

/// `s` in at most `w` characters: cut with `…` when longer, control
/// characters (newlines, tabs) as spaces.
pub fn fit(s: &str, w: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= w {
        return flat;
    }
    let mut out: String = flat.chars().take(w.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Every line longer than `w` wrapped at spaces; continuation lines are
/// indented 4 more than the line's own indent. A single word longer than
/// the room (a path, a URL) stays whole: cut, it would no longer work.
pub fn wrap(text: &str, w: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if body.chars().count() <= w {
            out.push_str(line);
            continue;
        }
        let indent = body.len() - body.trim_start().len();
        let pad = " ".repeat((indent + 4).min(w / 2));
        let mut cur = body[..indent].to_string();
        let mut lead = indent;
        for word in body[indent..].split(' ') {
            let len = cur.chars().count();
            let has_words = len > lead;
            if has_words && len + 1 + word.chars().count() > w {
                out.push_str(&cur);
                out.push('\n');
                cur.clone_from(&pad);
                lead = pad.len();
            } else if has_words {
                cur.push(' ');
            }
            cur.push_str(word);
        }
        out.push_str(&cur);
        out.push_str(nl);
    }
    out
}

/// Whole words `PASS`, `FAIL`, `NO DATA`, `LEAK` and `INTERRUPTED` in
/// colour (ANSI SGR: zero width, so tables stay aligned).
pub fn colour(text: &str) -> String {
    const GREEN: &str = "\x1b[32m";
    const RED: &str = "\x1b[1;31m";
    const YELLOW: &str = "\x1b[33m";
    const RESET: &str = "\x1b[0m";
    let mut out = text.to_string();
    for (word, c) in [
        ("PASS", GREEN),
        ("FAIL", RED),
        ("LEAK", RED),
        ("NO DATA", YELLOW),
        ("INTERRUPTED", YELLOW),
    ] {
        out = replace_words(&out, word, &format!("{c}{word}{RESET}"));
    }
    out
}

/// Every whole-word `word` in `text` as `with`.
pub(crate) fn replace_words(text: &str, word: &str, with: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let is_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    while let Some(i) = rest.find(word) {
        let before = rest[..i].chars().next_back();
        let after = rest[i + word.len()..].chars().next();
        out.push_str(&rest[..i]);
        out.push_str(if is_word(before) || is_word(after) {
            word
        } else {
            with
        });
        rest = &rest[i + word.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_wraps_at_spaces_with_a_hanging_indent_and_long_words_stay_whole() {
        let line = format!("  note: {}", "word ".repeat(40));
        let w = wrap(&line, 40);
        for l in w.lines() {
            assert!(l.chars().count() <= 40, "{l}");
        }
        assert!(w.lines().nth(1).unwrap().starts_with("      word"), "{w}");
        assert_eq!(
            w.split_whitespace().count(),
            line.split_whitespace().count()
        );
        let url = format!("report: file:///{}", "x".repeat(90));
        assert_eq!(
            wrap(&url, 80),
            format!("report:\n    file:///{}", "x".repeat(90))
        );
        assert_eq!(wrap("short\n", 80), "short\n");
        assert_eq!(fit("abcdef", 4), "abc…");
    }

    #[test]
    fn colour_marks_whole_words_only() {
        let c = colour("PASS p99 · FAILED · NO DATA x · PASSED");
        assert!(c.starts_with("\x1b[32mPASS\x1b[0m p99"), "{c:?}");
        assert!(c.contains("FAILED") && c.contains("PASSED"), "{c:?}");
        assert!(c.contains("\x1b[33mNO DATA\x1b[0m"), "{c:?}");
    }
}
