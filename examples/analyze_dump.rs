//! Analyze thread dumps, JFR recordings or pinning traces from code:
//! `cargo run --example analyze_dump -- FILE_OR_DIR… [--json] [--bench]`.
//! `--bench` prints only the input size and the time taken (bench/parse.sh).

use std::path::PathBuf;

use brunt::diagnosis::jfr::FlameKind;
use brunt::diagnosis::{flame, Analysis, Options, Severity};
use brunt::report::analysis::render_text;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let bench = args.iter().any(|a| a == "--bench");
    let paths: Vec<PathBuf> = args
        .iter()
        .filter(|a| !a.starts_with("--"))
        .map(PathBuf::from)
        .collect();
    if paths.is_empty() {
        anyhow::bail!("usage: analyze_dump FILE_OR_DIR… [--json]");
    }
    let started = std::time::Instant::now();
    let analysis = Analysis::from_paths(&paths, &Options::default())?;
    if bench {
        let bytes: u64 = paths
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum();
        let secs = started.elapsed().as_secs_f64();
        let threads: usize = analysis.inputs.iter().map(|i| i.threads).sum();
        let events: u64 = analysis.inputs.iter().map(|i| i.events).sum();
        println!(
            "{bytes} bytes, {threads} threads, {events} events, {} findings in {:.3} s = {:.1} MB/s",
            analysis.findings.len(),
            secs,
            bytes as f64 / 1e6 / secs
        );
        // Folding into collapsed stacks happens while parsing (timed above);
        // drawing the whole-input CPU graph is timed apart.
        if !analysis.flames.is_empty() {
            let cpu = flame::merge(
                analysis
                    .flames
                    .iter()
                    .filter(|f| f.kind == Some(FlameKind::Cpu))
                    .map(|f| &f.stacks),
            );
            let t = std::time::Instant::now();
            let svg = flame::svg(&cpu, "bench", FlameKind::Cpu, true).map(|s| s.len());
            println!(
                "  folded: {} CPU stacks, {} samples; SVG {:?} bytes in {:.3} s",
                cpu.len(),
                flame::total(&cpu),
                svg.ok(),
                t.elapsed().as_secs_f64()
            );
        }
        return Ok(());
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&analysis)?);
    } else {
        print!("{}", render_text(&analysis));
        let serious = analysis.findings_at_least(Severity::High).count();
        println!("\n{serious} finding(s) of high severity or worse");
    }
    Ok(())
}
