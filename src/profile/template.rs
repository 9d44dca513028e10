//! Template syntax of request fields: `{{ expr }}` in `path`, header values
//! and `body`. This module only parses (so `brunt validate` reports a bad
//! template with its file, line and column); `engine::template` compiles
//! the parsed form into literal segments and value generators.
//!
//! | expression | value |
//! |---|---|
//! | `env.NAME` | the variable (`--env NAME=…` first, then the process environment), resolved once at start |
//! | `env.NAME \| default("text")` | the same, or `text` when it is not set |
//! | `random.int(lo, hi)` | a uniform integer in `lo..=hi` |
//! | `random.choice(a, b, "c d")` | one of the arguments, uniformly |
//! | `uuid` | a random UUID (version 4) |
//! | `seq` | 0, 1, 2, … unique across workers and shards |
//! | `now.unix_ms` | wall-clock milliseconds since 1970 at send time |
//! | `feeder.NAME.COLUMN` | a column of the row feeder NAME hands this request |
//! | `vars.NAME` | in a scenario step: the value an earlier step's `extract` took |
//! | `setup.NAME` | what a `setup:` step extracted, once before the load (not in `setup:` itself) |
//! | `iteration` | this virtual user's (closed model) or lane's (open model) pick of the mix, 0-based (k6's `__ITER`) |
//! | `repeat.index` | in a repeated step or block: the repetition, 0-based (0 outside a repeat) |
//! | `"text"` / `'text'` | the text itself (write a literal `{{` as `{{ "{{" }}`) |

use thiserror::Error;

/// A parsed template: literal text and expressions, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Lit(String),
    Expr(Expr),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A variable, with the text used when it is not set.
    Env(String, Option<String>),
    RandomInt(i64, i64),
    RandomChoice(Vec<String>),
    Uuid,
    Seq,
    NowUnixMs,
    Feeder {
        feeder: String,
        column: String,
    },
    /// A value extracted by an earlier step of the scenario.
    Var(String),
    /// A value a `setup:` step extracted, once before the load.
    Setup(String),
    /// The virtual user's or lane's pick number (0-based).
    Iteration,
    /// The repetition of the innermost `repeat` (0-based).
    RepeatIndex,
}

/// A template that does not parse: what is wrong and where in the string.
#[derive(Debug, Clone, Error, PartialEq)]
#[error("{message}")]
pub struct TemplateError {
    /// Byte offset of the offending `{{` in the template string.
    pub offset: usize,
    /// The offending expression as written (from `{{` to `}}` or to the end of the line).
    pub fragment: String,
    pub message: String,
}

const EXPECTED: &str = "expected env.NAME, random.int(lo, hi), random.choice(a, b, …), uuid, seq, now.unix_ms, feeder.NAME.COLUMN, vars.NAME, setup.NAME, iteration or repeat.index";

impl Template {
    /// Whether the text holds any `{{` at all (fields without one are kept as they are).
    pub fn has_template(s: &str) -> bool {
        s.contains("{{")
    }

    /// Parse `s`; text without `{{` is one literal part.
    pub fn parse(s: &str) -> Result<Template, TemplateError> {
        let mut parts = Vec::new();
        let mut rest = s;
        let mut at = 0usize;
        while let Some(i) = rest.find("{{") {
            if i > 0 {
                parts.push(Part::Lit(rest[..i].to_string()));
            }
            let start = at + i;
            let after = &rest[i + 2..];
            let Some(end) = find_close(after) else {
                let frag = s[start..].lines().next().unwrap_or("").to_string();
                return Err(TemplateError {
                    offset: start,
                    fragment: frag,
                    message: "`{{` without its closing `}}`".into(),
                });
            };
            let inner = &after[..end];
            let fragment = format!("{{{{{inner}}}}}");
            let expr = parse_expr(inner.trim()).map_err(|message| TemplateError {
                offset: start,
                fragment: fragment.clone(),
                message: format!("`{fragment}`: {message}"),
            })?;
            parts.push(expr);
            let consumed = i + 2 + end + 2;
            at += consumed;
            rest = &rest[consumed..];
        }
        if !rest.is_empty() {
            parts.push(Part::Lit(rest.to_string()));
        }
        Ok(Template { parts })
    }

    /// Every expression of the template.
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        self.parts.iter().filter_map(|p| match p {
            Part::Expr(e) => Some(e),
            Part::Lit(_) => None,
        })
    }
}

/// Offset of the `}}` closing an expression, skipping quoted text.
fn find_close(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < b.len() {
        match (quote, b[i]) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, b'"') | (None, b'\'') => quote = Some(b[i]),
            (None, b'}') if b.get(i + 1) == Some(&b'}') => return Some(i),
            (None, b'\n') => return None,
            _ => {}
        }
        i += 1;
    }
    None
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn parse_expr(e: &str) -> Result<Part, String> {
    if e.is_empty() {
        return Err(format!("empty expression; {EXPECTED}"));
    }
    if let Some(s) = unquote(e) {
        return Ok(Part::Lit(s?));
    }
    let expr = if let Some(args) = call(e, "random.int") {
        let args = args?;
        let ints: Vec<i64> = args.iter().filter_map(|a| a.parse().ok()).collect();
        if args.len() != 2 || ints.len() != 2 {
            return Err("random.int takes two integers: random.int(lo, hi)".into());
        }
        if ints[0] > ints[1] {
            return Err(format!(
                "random.int({}, {}): lo is above hi",
                ints[0], ints[1]
            ));
        }
        Expr::RandomInt(ints[0], ints[1])
    } else if let Some(args) = call(e, "random.choice") {
        let args = args?;
        if args.is_empty() {
            return Err("random.choice needs at least one value".into());
        }
        Expr::RandomChoice(args)
    } else if let Some(rest) = e.strip_prefix("env.") {
        let (name, default) = match rest.split_once('|') {
            None => (rest, None),
            Some((n, d)) => {
                let d = d.trim();
                match call(d, "default") {
                    Some(Ok(a)) if a.len() == 1 => (n.trim(), Some(a[0].clone())),
                    Some(Err(m)) => return Err(m),
                    _ => return Err("after `|` expected default(\"text\")".into()),
                }
            }
        };
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || name.is_empty() {
            return Err(format!("`{name}` is not an environment variable name"));
        }
        Expr::Env(name.to_string(), default)
    } else if let Some(name) = e.strip_prefix("vars.") {
        if !is_ident(name) {
            return Err("expected vars.NAME".into());
        }
        Expr::Var(name.to_string())
    } else if let Some(name) = e.strip_prefix("setup.") {
        if !is_ident(name) {
            return Err("expected setup.NAME".into());
        }
        Expr::Setup(name.to_string())
    } else if let Some(rest) = e.strip_prefix("feeder.") {
        match rest.split_once('.') {
            Some((f, c)) if is_ident(f) && is_ident(c) => Expr::Feeder {
                feeder: f.to_string(),
                column: c.to_string(),
            },
            _ => return Err("expected feeder.NAME.COLUMN".into()),
        }
    } else {
        match e {
            "uuid" => Expr::Uuid,
            "seq" => Expr::Seq,
            "now.unix_ms" => Expr::NowUnixMs,
            "iteration" => Expr::Iteration,
            "repeat.index" => Expr::RepeatIndex,
            _ => return Err(unknown(e)),
        }
    };
    Ok(Part::Expr(expr))
}

/// `"text"` or `'text'` (no escapes inside), or `None` when not quoted.
fn unquote(s: &str) -> Option<Result<String, String>> {
    let q = s.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    Some(if s.len() >= 2 && s.ends_with(q) {
        let inner = &s[1..s.len() - 1];
        if inner.contains(q) {
            Err(format!("stray {q} inside a quoted value"))
        } else {
            Ok(inner.to_string())
        }
    } else {
        Err(format!("unclosed quote {q}"))
    })
}

/// An unknown expression, with the nearest known one when a typo is likely
/// (`random.integer` → `random.int(lo, hi)`).
fn unknown(e: &str) -> String {
    const KNOWN: [(&str, &str); 9] = [
        ("random.int", "random.int(lo, hi)"),
        ("random.choice", "random.choice(a, b, …)"),
        ("uuid", "uuid"),
        ("seq", "seq"),
        ("now.unix_ms", "now.unix_ms"),
        ("now", "now.unix_ms"),
        ("iteration", "iteration"),
        ("repeat.index", "repeat.index"),
        ("repeat", "repeat.index"),
    ];
    let head = e.split(['(', ' ']).next().unwrap_or(e);
    let near = KNOWN
        .iter()
        .map(|(k, shown)| (strsim::jaro_winkler(head, k), *shown))
        .filter(|(score, _)| *score > 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match near {
        Some((_, shown)) => format!("unknown expression `{head}`: did you mean `{shown}`?"),
        None => format!("unknown expression `{head}`; {EXPECTED}"),
    }
}

/// The arguments of `name(a, b, …)` if `e` is a call of `name` (and not of
/// a longer name that starts like it: `random.integer` is no `random.int`).
fn call(e: &str, name: &str) -> Option<Result<Vec<String>, String>> {
    let rest = e.strip_prefix(name)?;
    if rest.starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '.') {
        return None;
    }
    let rest = rest.trim_start();
    if !rest.starts_with('(') {
        return Some(Err(format!("{name} needs its arguments: {name}(…)")));
    }
    Some(match rest[1..].strip_suffix(')') {
        None => Err(format!("{name}(…: missing `)`")),
        Some(inner) => args(inner, name),
    })
}

/// Comma-separated arguments, each bare (trimmed) or quoted.
fn args(inner: &str, name: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    if inner.trim().is_empty() {
        return Ok(out);
    }
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut quoted = false;
    for c in inner.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"') | (None, '\'') if cur.trim().is_empty() && !quoted => {
                cur.clear();
                quote = Some(c);
                quoted = true;
            }
            (None, ',') => {
                out.push(finish_arg(&cur, quoted, name)?);
                cur.clear();
                quoted = false;
            }
            (None, c) if quoted && !c.is_whitespace() => {
                return Err(format!("{name}: text after a quoted value"));
            }
            (None, '(') | (None, ')') => {
                return Err(format!("{name}: quote a value holding `(` or `)`"))
            }
            (None, c) => cur.push(c),
        }
    }
    if quote.is_some() {
        return Err(format!("{name}: unclosed quote"));
    }
    out.push(finish_arg(&cur, quoted, name)?);
    Ok(out)
}

fn finish_arg(cur: &str, quoted: bool, name: &str) -> Result<String, String> {
    if quoted {
        return Ok(cur.to_string());
    }
    let a = cur.trim();
    if a.is_empty() {
        return Err(format!("{name}: an empty argument"));
    }
    Ok(a.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_expression() {
        let t = Template::parse(
            "/u/{{ random.int(1, 1000) }}?c={{random.choice(a, 'b c', \"d\")}}&{{ uuid }}{{seq}}{{ now.unix_ms }}{{ env.TOKEN }}{{ feeder.users.name }}{{ setup.token }}{{ \"{{\" }}",
        )
        .expect("parses");
        let exprs: Vec<&Expr> = t.exprs().collect();
        assert_eq!(
            exprs,
            vec![
                &Expr::RandomInt(1, 1000),
                &Expr::RandomChoice(vec!["a".into(), "b c".into(), "d".into()]),
                &Expr::Uuid,
                &Expr::Seq,
                &Expr::NowUnixMs,
                &Expr::Env("TOKEN".into(), None),
                &Expr::Feeder {
                    feeder: "users".into(),
                    column: "name".into()
                },
                &Expr::Setup("token".into()),
            ]
        );
        assert_eq!(t.parts.last(), Some(&Part::Lit("{{".into())));
        assert_eq!(t.parts[0], Part::Lit("/u/".into()));
    }

    #[test]
    fn errors_name_the_fragment_and_offset() {
        for (s, off, needle) in [
            ("/a/{{ random.int(1) }}", 3, "two integers"),
            ("/a/{{ random.int(9, 1) }}", 3, "lo is above hi"),
            (
                "/a/{{ random.integer(1, 5) }}",
                3,
                "unknown expression `random.integer`: did you mean `random.int(lo, hi)`?",
            ),
            (
                "/a/{{ random.choise(a, b) }}",
                3,
                "did you mean `random.choice(a, b, …)`?",
            ),
            ("/a/{{ uuid4 }}", 3, "did you mean `uuid`?"),
            (
                "/a/{{ lunch }}",
                3,
                "unknown expression `lunch`; expected env.NAME",
            ),
            ("x{{ nope }}", 1, "unknown expression"),
            ("{{ uuid ", 0, "closing"),
            ("{{ feeder.users }}", 0, "feeder.NAME.COLUMN"),
            ("{{ random.choice() }}", 0, "at least one"),
            ("{{ random.choice(a,,b) }}", 0, "empty argument"),
            ("{{ }}", 0, "empty expression"),
        ] {
            let e = Template::parse(s).expect_err(s);
            assert_eq!(e.offset, off, "{s}");
            assert!(e.message.contains(needle), "{s}: {}", e.message);
        }
    }

    #[test]
    fn env_with_a_default() {
        let t = Template::parse("{{ env.T | default('dev token') }}").expect("parses");
        assert_eq!(
            t.exprs().next(),
            Some(&Expr::Env("T".into(), Some("dev token".into())))
        );
        assert!(Template::parse("{{ env.T | upper }}").is_err());
    }

    #[test]
    fn text_without_braces_is_one_literal() {
        let t = Template::parse("/fast?x=1").expect("parses");
        assert_eq!(t.parts, vec![Part::Lit("/fast?x=1".into())]);
        assert!(!Template::has_template("/fast"));
    }
}
