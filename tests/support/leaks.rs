//! The soaks of tests/leaks.rs: the shipped collectors aimed at a Java
//! target, one compressed soak run, and reading what it named.

#![allow(dead_code)]

use std::path::Path;
use std::time::Instant;

use brunt::judge::SoakVerdict;
use brunt::profile::collectors::{CollectorsConfig, ProbeOverride};
use brunt::vocab::growth::PartKind;

use super::collect::{every, off, probes};
use super::java::{self, Jdk};
use super::{collect, load};

/// e2e_java's thresholds for a 68-s soak (see its `LEAK_THRESHOLDS`).
pub const LEAK_THRESHOLDS: &str = "{ rss: 2000MB/h, heap_after_gc: 1000MB/h, threads: 1000/h, \
     fds: 1000/h, established: 1000/h, close_wait: 1000/h, metaspace: 100MB/h, p99_drift: 100% }";

/// The request rate of every soak here.
pub const RATE: f64 = 50.0;

/// The shipped collectors aimed at `t`: host every second, the fd census
/// every 4 s (so a 62-s window holds ≥ 15 of them), the whole-run
/// JFR recording (its GC events tell young from full collections), thread
/// dumps every 4 s when `dumps`, and `memory` (the jvm-memory probes' overrides).
pub fn collectors(
    t: &java::JavaTarget,
    remote: &Path,
    dumps: bool,
    memory: Option<Vec<(&str, ProbeOverride)>>,
) -> CollectorsConfig {
    let dump = if dumps { every(4000) } else { off() };
    let mut collect = vec![
        collect::entry(
            "linux-host",
            probes(vec![("host", every(1000)), ("fds", every(4000))]),
        ),
        collect::entry(
            "jvm",
            probes(vec![
                (
                    "jfr",
                    ProbeOverride {
                        phase: Some("run".into()),
                        settings: Some("default".into()),
                        ..Default::default()
                    },
                ),
                ("thread-dump", dump),
                ("thread-dump-json", off()),
                ("heap", off()),
            ]),
        ),
    ];
    if let Some(m) = memory {
        collect.push(collect::entry("jvm-memory", probes(m)));
    }
    CollectorsConfig {
        target: t.collectors_target(),
        collect,
        remote_dir: remote.display().to_string(),
        ..Default::default()
    }
}

/// The class histogram every 4 s (and at the phase start), NMT off.
pub fn histograms() -> Vec<(&'static str, ProbeOverride)> {
    vec![("class-histogram", every(4000)), ("nmt", off())]
}

pub struct Soak {
    pub verdict: SoakVerdict,
    pub evidence: serde_json::Value,
    pub summary: serde_json::Value,
    pub terminal: String,
    pub dir: tempfile::TempDir,
}

/// A 68-s soak at [`RATE`] of `requests` (YAML list items) against `t` with
/// `cfg` for collectors.
pub fn soak(
    t: &java::JavaTarget,
    tag: &str,
    requests: &str,
    cfg: impl FnOnce(&Path) -> CollectorsConfig,
) -> Soak {
    let m = t.proc.jdk.major;
    let mut profile = load::profile(
        &java::soak_yaml(
            &format!("leaks-{tag}"),
            requests,
            RATE as u32,
            "2s",
            LEAK_THRESHOLDS,
        ),
        &t.url(),
    );
    let (dir, remote, run_dir) = collect::run_dirs();
    profile.collectors = cfg(&remote);
    let t0 = Instant::now();
    let r = load::run(&profile, &run_dir);
    let v = r.summary.verdicts.clone().expect("verdicts");
    let so = v.soak.expect("a soak verdict");
    for tr in &so.trends {
        eprintln!(
            "JDK {m} {tag}: {} n={} slope {:.1}/h r2 {:.2} flagged {} {:?} {:?}",
            tr.series, tr.points, tr.slope_per_hour, tr.r2, tr.flagged, tr.note, tr.reason
        );
    }
    eprintln!(
        "JDK {m} {tag} ({:?}): {:?} {}",
        t0.elapsed(),
        so.status,
        so.text
    );
    let ev = collect::read_json(&r.dir.join("diagnostics/evidence.json"));
    for p in ev["parts"].as_array().into_iter().flatten() {
        let pts = p["points"].as_array().map(Vec::len).unwrap_or(0);
        eprintln!(
            "JDK {m} {tag}: part {} {} ({pts} points, first {} last {})",
            p["kind"],
            p["name"],
            p["points"][0],
            p["points"][pts.saturating_sub(1)]
        );
    }
    Soak {
        evidence: ev,
        verdict: so,
        summary: collect::read_json(&r.dir.join("summary.json")),
        terminal: brunt::report::terminal::render(&r.summary),
        dir,
    }
}

/// The first item of kind `k` the verdict names; failing, the trend of
/// each part of that kind in the evidence, to say why it was not.
pub fn named<'a>(
    so: &'a SoakVerdict,
    k: PartKind,
    ev: &serde_json::Value,
    m: u32,
) -> &'a brunt::vocab::growth::Growth {
    so.grows.iter().find(|g| g.kind == k).unwrap_or_else(|| {
        let th: brunt::profile::verdicts::LeakThresholds =
            serde_saphyr::from_str(LEAK_THRESHOLDS).unwrap_or_else(|e| panic!("thresholds: {e}"));
        let why: Vec<String> = ev["parts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| {
                serde_json::from_value::<brunt::vocab::growth::PartSeries>(p.clone()).ok()
            })
            .filter(|p| p.kind == k)
            .map(|p| {
                let t = brunt::judge::trend(
                    "target.threads",
                    &p.points,
                    so.window_start_s,
                    so.window_end_s,
                    &th,
                );
                format!("{}: {t:?}", p.name)
            })
            .collect();
        panic!("JDK {m}: no {k:?} named: {}\n{}", so.text, why.join("\n"))
    })
}

/// `g`'s slope is within `tol` (relative) of `truth` (per hour).
pub fn near(g: &brunt::vocab::growth::Growth, truth: f64, tol: f64, ctx: &str) {
    eprintln!(
        "{ctx}: {} — {:.0}/h vs truth {truth:.0}/h",
        g.text, g.slope_per_hour
    );
    assert!(
        (g.slope_per_hour / truth - 1.0).abs() < tol,
        "{ctx}: {} vs truth {truth}/h",
        g.text
    );
}

pub fn target(jdk: &Jdk, jvm_args: &[&str], tag: &str) -> java::JavaTarget {
    let marker = format!("leaks-{tag}-{}-{}", jdk.major, std::process::id());
    let t = java::JavaTarget::marked(jdk, jvm_args, 16, &marker);
    t.warm("/fast", 200);
    t
}

/// The classes of the last histogram the run took: bytes and instances of `class`.
pub fn last_histogram(dir: &Path, class: &str) -> (u64, u64) {
    let diag = dir.join("run/diagnostics");
    let mut hists: Vec<_> = std::fs::read_dir(&diag)
        .expect("diagnostics/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("class-histogram-"))
        })
        .collect();
    hists.sort();
    let last = hists
        .last()
        .unwrap_or_else(|| panic!("no class histogram in {}", diag.display()));
    let text = std::fs::read_to_string(last).expect("histogram");
    let h = brunt::diagnosis::memory::ClassHistogram::parse(&text).expect("a whole histogram");
    h.class(class)
        .map(|r| (r.bytes, r.instances))
        .unwrap_or_else(|| panic!("{class} not in {}", last.display()))
}
