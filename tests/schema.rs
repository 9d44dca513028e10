//! The profiles' JSON Schema (`brunt schema`, shipped as
//! `profiles/brunt.schema.json`): it is the one the binary prints, it accepts
//! every shipped profile and the README's, and it rejects the mistakes the
//! parser rejects — checked by an independent validator (Python `jsonschema`).

#[path = "support/cmd.rs"]
mod cmd;
use cmd::{brunt, out, write};

use std::path::Path;
use std::process::Command;

const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/brunt.schema.json");

/// Validates each YAML file named on the command line against the schema
/// (argv[1]); prints `FILE: OK` or `FILE: INVALID path: message`.
const CHECK: &str = r#"
import json, sys
try:
    import jsonschema, yaml
except ImportError as e:
    sys.exit(f"missing {e.name}: run tests/setup.sh (or python3 -m pip install jsonschema pyyaml)")
v = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))
for f in sys.argv[2:]:
    errs = sorted(v.iter_errors(yaml.safe_load(open(f))), key=lambda e: list(e.path))
    print(f + (": OK" if not errs else ": INVALID " + "; ".join(f"{list(e.path)}: {e.message}" for e in errs[:3])))
"#;

fn check(files: &[&Path]) -> Vec<String> {
    let o = Command::new("python3")
        .args(["-c", CHECK, SHIPPED])
        .args(files)
        .output()
        .expect("python3 runs (tests/setup.sh installs it)");
    assert!(o.status.success(), "the schema check ran: {}", out(&o));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_shipped_schema_is_the_one_brunt_prints() {
    let o = brunt().arg("schema").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let printed = String::from_utf8_lossy(&o.stdout);
    let shipped = std::fs::read_to_string(SHIPPED).unwrap();
    assert!(
        printed.trim_end() == shipped.trim_end(),
        "profiles/brunt.schema.json is stale: regenerate it with \
         `cargo run -q -- schema > profiles/brunt.schema.json`"
    );
    let v: serde_json::Value = serde_json::from_str(&shipped).unwrap();
    assert_eq!(
        v["$schema"], "https://json-schema.org/draft/2020-12/schema",
        "{v}"
    );
    assert_eq!(
        v["additionalProperties"], false,
        "unknown top-level keys are errors, as in the parser"
    );
}

#[test]
fn every_shipped_and_readme_profile_is_valid_under_the_schema() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let d = tempfile::tempdir().unwrap();
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(root.join("profiles"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    // The README's whole profiles (a `target:` and a `shape:`), as a reader copies them.
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    for (i, block) in readme.split("```yaml\n").skip(1).enumerate() {
        let body = block.split("```").next().unwrap_or_default();
        let whole = body.lines().any(|l| l.starts_with("target:"))
            && body.lines().any(|l| l.starts_with("shape:"));
        if whole {
            files.push(write(d.path(), &format!("readme-{i}.yaml"), body));
        }
    }
    assert!(
        files.len() >= 7,
        "the shipped profiles and at least one README profile: {files:?}"
    );
    let refs: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let lines = check(&refs);
    assert_eq!(lines.len(), files.len(), "{lines:?}");
    for l in &lines {
        assert!(l.ends_with(": OK"), "{l}");
    }
    // And brunt itself reads each shipped one (the README's reference block
    // lists open- and closed-model keys side by side: the schema checks keys
    // and types, the semantic checks stay brunt's).
    for f in files.iter().filter(|f| f.starts_with(root)) {
        let o = brunt().arg("validate").arg(f).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}: {}", f.display(), out(&o));
    }
}

#[test]
fn the_schema_rejects_the_mistakes_the_parser_rejects() {
    let d = tempfile::tempdir().unwrap();
    let ok = "name: x\ntarget:\n  url: http://127.0.0.1:9/\nshape:\n  constant: { rate: 10, duration: 2s }\n";
    let wrong = [
        ("top-typo", format!("{ok}shpae: 1\n")),
        ("target-typo", ok.replace("  url:", "  ulr:")),
        ("shape-kind", ok.replace("constant:", "constnat:")),
        ("model", format!("{ok}load:\n  model: opened\n")),
        (
            "http",
            ok.replace(
                "  url: http://127.0.0.1:9/",
                "  url: http://127.0.0.1:9/\n  http: 3",
            ),
        ),
        ("budget", format!("{ok}budgets:\n  - 5\n")),
        (
            "request-method-list",
            format!("{ok}requests:\n  - path: /\n    method: [GET]\n"),
        ),
    ];
    let mut files = vec![write(d.path(), "ok.yaml", ok)];
    for (name, body) in &wrong {
        files.push(write(d.path(), &format!("{name}.yaml"), body));
    }
    let refs: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let lines = check(&refs);
    assert!(lines[0].ends_with("ok.yaml: OK"), "{lines:?}");
    for (l, f) in lines.iter().zip(&files).skip(1) {
        assert!(l.contains(": INVALID "), "the schema flags {l}");
        let o = brunt().arg("validate").arg(f).output().unwrap();
        assert_ne!(
            o.status.code(),
            Some(0),
            "brunt refuses {} too: {}",
            f.display(),
            out(&o)
        );
    }
}
