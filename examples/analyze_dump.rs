//! Analyze thread dumps, JFR recordings or pinning traces from code:
//! `cargo run --example analyze_dump -- FILE_OR_DIR… [--json]`.

use std::path::PathBuf;

use brunt::diagnosis::{Analysis, Options, Severity};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let paths: Vec<PathBuf> = args
        .iter()
        .filter(|a| !a.starts_with("--"))
        .map(PathBuf::from)
        .collect();
    if paths.is_empty() {
        anyhow::bail!("usage: analyze_dump FILE_OR_DIR… [--json]");
    }
    let analysis = Analysis::from_paths(&paths, &Options::default())?;
    if json {
        println!("{}", serde_json::to_string_pretty(&analysis)?);
    } else {
        print!("{}", analysis.render_text());
        let serious = analysis.findings_at_least(Severity::High).count();
        println!("\n{serious} finding(s) of high severity or worse");
    }
    Ok(())
}
