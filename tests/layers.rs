//! The module layers of `src/lib.rs` hold: every `crate::` path between
//! top-level modules is one the layer table allows, so no import cycle can
//! come back unnoticed. (Code after `#[cfg(test)]` may reach anywhere.)

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

/// `crate::a::…` paths outside comments and test code, by top-level module.
fn edges(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(src).expect("under src");
        let first = rel.components().next().expect("a component");
        let me = first
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if me == "lib" || me == "main" || me == "cli" {
            continue; // the crate root and the CLI may reach everything
        }
        let text = std::fs::read_to_string(&f).expect("read source");
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for line in code.lines() {
            let line = line.split("//").next().unwrap_or("");
            for (i, _) in line.match_indices("crate::") {
                let rest = &line[i + "crate::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if !name.is_empty() && name != me {
                    edges.entry(me.clone()).or_default().insert(name);
                }
            }
        }
    }
    edges
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
