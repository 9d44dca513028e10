//! The shape of `src/` holds: every `crate::` path between top-level modules
//! is one the layer table of `src/lib.rs` allows, so no import cycle can come
//! back unnoticed (code after `#[cfg(test)]` may reach anywhere), and no
//! source file grows over 800 lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module → the modules it may import. Keep in step with the table in `src/lib.rs`.
const ALLOWED: &[(&str, &[&str])] = &[
    ("vocab", &[]),
    ("demo", &[]),
    ("diagnosis", &["vocab"]),
    ("metrics", &["vocab"]),
    ("budgets", &["metrics", "vocab"]),
    ("profile", &["budgets", "demo", "vocab"]),
    ("collectors", &["profile", "vocab"]),
    ("engine", &["profile", "metrics", "vocab"]),
    ("evidence", &["diagnosis", "vocab"]),
    ("rundir", &["evidence", "metrics", "vocab"]),
    ("export", &["metrics", "vocab"]),
    (
        "judge",
        &[
            "rundir", "evidence", "profile", "metrics", "budgets", "vocab",
        ],
    ),
    (
        "report",
        &[
            "judge",
            "rundir",
            "evidence",
            "diagnosis",
            "metrics",
            "budgets",
            "vocab",
        ],
    ),
    (
        "shard",
        &["judge", "rundir", "profile", "metrics", "budgets", "vocab"],
    ),
    (
        "run",
        &[
            "budgets",
            "collectors",
            "demo",
            "diagnosis",
            "engine",
            "evidence",
            "export",
            "judge",
            "metrics",
            "profile",
            "report",
            "rundir",
            "vocab",
        ],
    ),
];

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read src") {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level modules that `code` names through `crate::` paths: plain
/// paths (`crate::a::b`, in imports or expressions) and grouped imports
/// (`crate::{a::b, c}`, nested `crate::{a::{b, c}, d::e}`, over several lines),
/// as `../shared/tools/module-cycles.py` reads them. Comments are not code.
fn crate_modules(code: &str) -> BTreeSet<String> {
    let code: String = code
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect()
    };
    let mut found = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            found.insert(ident(rest));
            continue;
        };
        // Each item at depth 0 of the group starts with its top-level module.
        let mut depth = 0usize;
        let mut item_start = 0;
        for (j, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    found.insert(ident(&group[item_start..j]));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    found.insert(ident(&group[item_start..j]));
                    item_start = j + 1;
                }
                _ => {}
            }
        }
    }
    found.retain(|m| !m.is_empty() && m != "self");
    found
}

/// Every `.rs` file under `src` with its top-level module (`a` for `src/a.rs`
/// and `src/a/…`) and its text.
fn sources(src: &Path) -> Vec<(std::path::PathBuf, String, String)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let rel = f.strip_prefix(src).expect("under src");
            let first = rel.components().next().expect("a component");
            let me = first
                .as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string();
            let text = std::fs::read_to_string(&f).expect("read source");
            (f, me, text)
        })
        .collect()
}

/// `crate::a::…` paths outside comments and test code, by top-level module.
fn edges(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, me, text) in sources(src) {
        if me == "lib" || me == "main" || me == "cli" {
            continue; // the crate root and the CLI may reach everything
        }
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for name in crate_modules(code) {
            if name != me {
                edges.entry(me.clone()).or_default().insert(name);
            }
        }
    }
    edges
}

#[test]
fn the_import_reader_reads_grouped_and_expression_paths() {
    let read = |code: &str| -> Vec<String> { crate_modules(code).into_iter().collect() };
    assert_eq!(read("use crate::a::b;"), ["a"]);
    assert_eq!(read("use crate::{a::b, c};"), ["a", "c"]);
    assert_eq!(read("use crate::{a::{b, c}, d::e};"), ["a", "d"]);
    assert_eq!(
        read("use crate::{\n    a::{b, c::{D, E}},\n    self,\n    f,\n};"),
        ["a", "f"]
    );
    assert_eq!(read("let x = crate::g::h(1) + crate::k::L;"), ["g", "k"]);
    assert_eq!(read("use crate::m::{n, o};"), ["m"]);
    assert!(read("// see crate::p::q\nlet y = 1; // crate::r").is_empty());
}

/// No file under `src/` is over this many lines: a file that long does several jobs.
const MAX_LINES: usize = 800;

#[test]
fn no_source_file_is_over_800_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let long: Vec<String> = sources(&src)
        .iter()
        .map(|(f, _, text)| (f, text.lines().count()))
        .filter(|(_, n)| *n > MAX_LINES)
        .map(|(f, n)| format!("{}: {n} lines", f.strip_prefix(root).unwrap_or(f).display()))
        .collect();
    assert!(
        long.is_empty(),
        "source files over {MAX_LINES} lines (split them by job): {long:?}"
    );
}

#[test]
fn imports_point_down_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut wrong = Vec::new();
    let found = edges(&src);
    for (from, tos) in &found {
        let Some(ok) = allowed.get(from.as_str()) else {
            wrong.push(format!(
                "{from}: a top-level module missing from the layer table"
            ));
            continue;
        };
        for to in tos {
            if !ok.contains(&to.as_str()) {
                wrong.push(format!("{from} → {to}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layers of src/lib.rs: {wrong:?}"
    );
    // The table is not vacuous: the known downward edges are seen.
    assert!(found["run"].contains("engine") && found["judge"].contains("rundir"));
}
