//! Shell quoting for remote commands: every value that came from a profile or
//! a definition's placeholders goes through [`sh_quote`] before it reaches a
//! POSIX shell (the ssh server runs commands with the user's shell `-c`).

/// Quote one word for a POSIX shell so that the shell passes it through as
/// exactly one argument, byte for byte.
///
/// Single quotes disable every expansion; a single quote inside is written as
/// `'\''` (close, escaped quote, reopen). Plain words that need no quoting
/// are left alone to keep logged commands readable.
pub fn sh_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:,+@%^".contains(&b));
    if plain {
        return word.to_string();
    }
    let mut out = String::with_capacity(word.len() + 2);
    out.push('\'');
    for c in word.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// Quote each word and join them with spaces: an argv as one shell command.
pub fn sh_join<S: AsRef<str>>(argv: &[S]) -> String {
    argv.iter()
        .map(|w| sh_quote(w.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_stay_readable() {
        assert_eq!(sh_quote("jcmd"), "jcmd");
        assert_eq!(sh_quote("/tmp/a.jfr"), "/tmp/a.jfr");
        // `=` is quoted: at command position `A=b` would be an assignment.
        assert_eq!(sh_quote("settings=profile"), "'settings=profile'");
    }

    #[test]
    fn hostile_words_are_single_quoted() {
        assert_eq!(sh_quote(""), "''");
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
        assert_eq!(sh_quote("$(rm -rf /)"), "'$(rm -rf /)'");
        assert_eq!(sh_quote("-- ;|&`\n"), "'-- ;|&`\n'");
    }
}
