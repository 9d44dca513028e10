//! The `pg-json` parser: one `psql` answer (one JSON document, see
//! `collectors/postgres.yaml`) into a [`DbSample`], with every statement
//! text normalised ([`normalize_sql`]) before it is stored.
//!
//! **Why `psql` through the transports, not a Rust client.** The database
//! is rarely reachable from the generator: it sits behind the service, on
//! a private network or inside a container. `psql` runs where the
//! collectors already run (local, SSH, `docker exec`, `kubectl exec`), so
//! every transport works with no new port opened and no new dependency in
//! brunt (`tokio-postgres` would add ~25 crates and reach only what the
//! generator can reach). One `psql` per sample sends one script and gets
//! one JSON document back: measured here (2 vCPUs, PostgreSQL 15, 20
//! backends) ~33 ms wall and ~32 ms of target CPU per sample (psql and its
//! shell ~24 ms, the backend ~8 ms, connection start included): 1.6% of one
//! core at the default `every: 2s` (see the README's "Database").
//! The password travels on the command's standard input
//! ([`crate::collectors::transport::Transport::exec_input`]), never on a
//! command line or into the run directory.

use super::error::CollectorError;
use crate::vocab::samples_db::DbSample;

/// Longest statement text kept (characters, `…` appended when cut).
pub const MAX_SQL_CHARS: usize = 160;

/// Read one sample; statement texts come out normalised.
pub fn parse(text: &str) -> Result<DbSample, CollectorError> {
    let doc = text.trim();
    let mut s: DbSample = serde_json::from_str(doc).map_err(|e| CollectorError::Parse {
        parser: "pg-json".into(),
        msg: format!(
            "not the collector's JSON document ({e}): {}",
            doc.chars().take(120).collect::<String>()
        ),
    })?;
    let norm = |q: &mut Option<String>| {
        if let Some(t) = q.as_mut() {
            *t = normalize_sql(t);
        }
    };
    for w in &mut s.lock_waits {
        norm(&mut w.query);
    }
    for b in s.blockers.iter_mut().chain(s.idle_in_xact.iter_mut()) {
        norm(&mut b.query);
    }
    for st in s.statements.iter_mut().flatten() {
        st.query = normalize_sql(&st.query);
    }
    Ok(s)
}

/// Statement text without its values: string, dollar-quoted and numeric
/// literals become `?`, comments go, whitespace collapses, and the text is
/// cut at [`MAX_SQL_CHARS`]. `$1` parameters stay (they hold no value).
pub fn normalize_sql(sql: &str) -> String {
    let c: Vec<char> = sql.chars().collect();
    let mut out = String::with_capacity(sql.len().min(MAX_SQL_CHARS * 2));
    let mut i = 0;
    // Was the previous output char part of a word (so a digit belongs to an identifier)?
    let word = |o: &String| {
        o.chars()
            .last()
            .is_some_and(|p| p.is_alphanumeric() || p == '_' || p == '$')
    };
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch == '-' && next == Some('-') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            i += 2;
            while i < c.len() && !(c[i] == '*' && c.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
        } else if ch == '\'' {
            // A string (E'…', B'…', X'…' prefixes included): `''` is a quote inside.
            if matches!(out.chars().last(), Some('E' | 'e' | 'B' | 'b' | 'X' | 'x'))
                && !out.chars().rev().nth(1).is_some_and(char::is_alphanumeric)
            {
                out.pop();
            }
            i += 1;
            while i < c.len() {
                if c[i] == '\\' {
                    i += 2;
                    continue;
                }
                if c[i] == '\'' {
                    if c.get(i + 1) == Some(&'\'') {
                        i += 2;
                        continue;
                    }
                    break;
                }
                i += 1;
            }
            i += 1;
            out.push('?');
        } else if ch == '$' && !word(&out) {
            // `$tag$ … $tag$` (or `$$`) is a literal; `$1` is a parameter.
            let tag_end = (i + 1..c.len()).find(|&k| !(c[k].is_alphanumeric() || c[k] == '_'));
            match tag_end {
                Some(e) if c[e] == '$' && !c[i + 1].is_ascii_digit() => {
                    let tag: String = c[i..=e].iter().collect();
                    let rest: String = c[e + 1..].iter().collect();
                    let skip = rest.find(&tag).map(|p| p + tag.len()).unwrap_or(rest.len());
                    i = e + 1 + rest[..skip].chars().count();
                    out.push('?');
                }
                _ => {
                    out.push('$');
                    i += 1;
                    while i < c.len() && c[i].is_ascii_digit() {
                        out.push(c[i]);
                        i += 1;
                    }
                }
            }
        } else if ch.is_ascii_digit() && !word(&out) {
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '.') {
                i += 1;
            }
            out.push('?');
        } else if ch == '"' {
            // A quoted identifier is a name, not a value: kept.
            out.push(ch);
            i += 1;
            while i < c.len() {
                out.push(c[i]);
                i += 1;
                if c[i - 1] == '"' {
                    break;
                }
            }
        } else if ch.is_whitespace() {
            if !out.ends_with(' ') && !out.is_empty() {
                out.push(' ');
            }
            i += 1;
        } else {
            out.push(ch);
            i += 1;
        }
    }
    let t = out.trim().trim_end_matches(';').trim_end();
    if t.chars().count() > MAX_SQL_CHARS {
        let mut s: String = t.chars().take(MAX_SQL_CHARS).collect();
        s.push('…');
        s
    } else {
        t.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_never_survive() {
        let cases = [
            (
                "UPDATE orders SET n = n + 1, note = 'card 4111-1111' WHERE id = 42",
                "UPDATE orders SET n = n + ?, note = ? WHERE id = ?",
            ),
            (
                "select * from t2 where a = E'it\\'s' and b in (1, 2.5, -3e4)",
                "select * from t2 where a = ? and b in (?, ?, -?)",
            ),
            ("SELECT $1, $body$ secret $body$, $$x$$", "SELECT $1, ?, ?"),
            (
                "-- who\nSELECT /* hi 9 */ \"Col1\"  FROM x WHERE y='a''b'",
                "SELECT \"Col1\" FROM x WHERE y=?",
            ),
        ];
        for (sql, want) in cases {
            assert_eq!(normalize_sql(sql), want, "{sql}");
        }
        let long = format!("SELECT {} FROM t", "a, ".repeat(200));
        let n = normalize_sql(&long);
        assert!(n.ends_with('…') && n.chars().count() == MAX_SQL_CHARS + 1);
    }

    #[test]
    fn a_sample_reads_and_is_normalised() {
        let doc = r#"{"max_connections":100,"reserved_connections":3,"connections":10,
          "pg_stat_statements":false,"oldest_xact_s":5.8,"oldest_query_s":null,
          "backends":[{"db":"shop","app":"api","state":"active","wait_type":"Lock","wait":"tuple","n":6}],
          "lock_waits":[{"pid":7,"locktype":"tuple","mode":"ExclusiveLock","relation":"orders",
            "query":"update orders set n=n+1 where id=1","wait_s":1.5,"blocked_by":[4]}],
          "blockers":[{"pid":4,"state":"idle in transaction","xact_s":2.1,
            "query":"SELECT * FROM orders WHERE id = 1 FOR UPDATE"}],
          "idle_in_xact":[],"statements":null}"#;
        let s = parse(doc).expect("a sample");
        assert_eq!(s.waiting_lock(), 1);
        assert_eq!(
            s.lock_waits[0].query.as_deref(),
            Some("update orders set n=n+? where id=?")
        );
        assert_eq!(
            s.blockers[0].query.as_deref(),
            Some("SELECT * FROM orders WHERE id = ? FOR UPDATE")
        );
        assert!(s.statements.is_none());
        let pct = s.connections_used_pct().expect("pct");
        assert!((pct - 100.0 * 10.0 / 97.0).abs() < 1e-9);
        let e = parse("psql: error: connection refused").unwrap_err();
        assert!(e.to_string().contains("pg-json"), "{e}");
    }
}
