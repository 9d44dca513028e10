//! Run a profile from code and read its summary: brunt's engine is a library.
//!
//! `cargo run --example run_profile` runs a 3-second open-model load at the
//! built-in demo target and prints the p99 and the budget verdicts.

use std::path::Path;

use brunt::profile::Profile;
use brunt::run::{execute, Progress, RunOptions};

const PROFILE: &str = r#"
name: from-code
target: { url: builtin }
requests: [ { path: /fast, weight: 9 }, { path: "/slow?ms=20" } ]
shape: { constant: { rate: 300/s, duration: 3s } }
budgets: [ "p99 < 100ms", "error_rate < 0.1%" ]
"#;

fn main() -> anyhow::Result<()> {
    let profile = Profile::from_yaml(PROFILE, Path::new("inline.yaml"))?;
    let out = std::env::temp_dir().join("brunt-example-run");
    let result = execute(
        &profile,
        RunOptions {
            out: Some(out),
            progress: Progress::Quiet,
            ..Default::default()
        },
    )?;
    let t = &result.summary.totals;
    println!(
        "{} requests, {:.1}/s, p99 {:.2} ms",
        t.requests, t.rps, t.latency.p99
    );
    for v in &result.summary.budgets {
        println!("{v}");
    }
    println!("run directory: {}", result.dir.display());
    std::process::exit(result.exit_code());
}
