//! Beyond one machine, with real processes on 127.0.0.1: the same open-model
//! profile run once by one `brunt` process and once by 4 shard processes
//! (`--shard i/4 --start-at T`) at the same total rate, merged with
//! `brunt merge`, and compared; directories that do not belong together
//! refused; clock skew reported; a sharded stress run with collectors
//! whose merge keeps shard 1's server side; a killed shard never merged as
//! complete; four shards that stop together (`--control`). (The `brunt k8s`
//! manifest is tests/k8s.rs's.)

#[path = "support/load.rs"]
mod load;

#[path = "support/cmd.rs"]
mod cmd;
#[path = "support/shards.rs"]
mod shards;
use cmd::{brunt, out as text};
use shards::{copy_dir, free_port, json, merge, spawn_shard, unix_now, SHARDS};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use brunt::metrics::{hlog, new_hist, pct_us, series};

/// Total rate and duration: modest, the machine has two cores for five processes.
const RATE: u64 = 800;
const SECS: u64 = 5;

/// Budgets chosen around one shard's count (~1000) and the union's (~4000):
/// the first two no shard meets but the union does, the third every shard
/// meets but the union breaks — so the merged verdict must come from the union.
const PROFILE: &str = r#"
name: sharded
target: { url: "http://127.0.0.1:9" }   # replaced by --target
requests:                               # 2 % answer in 200 ms: the server sets p99
  - { path: "/slow?ms=20", weight: 49 }
  - { path: "/slow?ms=200", weight: 1 }
load: { model: open, workers: 1, connections: 64, max_in_flight: 5000 }
shape: { constant: { rate: 800/s, duration: 5s } }
budgets:
  - requests >= 3000
  - throughput >= 600/s
  - requests < 2000
"#;

const OTHER: &str = r#"
name: other
target: { url: "http://127.0.0.1:9" }
requests: [ { path: /fast } ]
load: { model: open, workers: 1 }
shape: { constant: { rate: 40/s, duration: 1s } }
"#;

/// Run the shards `which` (1-based) of `profile` as processes starting together; returns their directories.
fn run_shards(
    profile: &Path,
    url: &str,
    root: &Path,
    which: &[u32],
    start_at: f64,
) -> Vec<PathBuf> {
    let children: Vec<(PathBuf, std::process::Child)> = which
        .iter()
        .map(|i| spawn_shard(profile, url, root, *i, start_at, &[]))
        .collect();
    children
        .into_iter()
        .map(|(dir, child)| {
            let o = child.wait_with_output().expect("shard finishes");
            // Each shard alone fails `requests >= 3000`: 99 is its expected verdict.
            assert_eq!(o.status.code(), Some(99), "{}", text(&o));
            dir
        })
        .collect()
}

/// Counts per (tag, absolute second from `base`) of a run directory's interval log.
fn interval_counts(dir: &Path, base: f64) -> BTreeMap<(String, u64), u64> {
    let started = json(&dir.join("run.json"))["started_at"]
        .as_f64()
        .expect("run.json has started_at");
    let shift = (started - base).round() as u64;
    let mut out = BTreeMap::new();
    for iv in hlog::read(&dir.join("latency.hlog")).expect("hlog reads back") {
        let key = (
            iv.tag.clone().unwrap_or_default(),
            iv.start.as_secs_f64().round() as u64 + shift,
        );
        *out.entry(key).or_default() += iv.hist.len();
    }
    out
}

/// Every merged interval's count is the sum of the shards' counts for that tag and second.
fn assert_intervals_add_up(shards: &[PathBuf], merged: &Path) {
    let base = json(&merged.join("run.json"))["started_at"]
        .as_f64()
        .expect("merged started_at");
    let mut summed: BTreeMap<(String, u64), u64> = BTreeMap::new();
    for s in shards {
        for (k, v) in interval_counts(s, base) {
            *summed.entry(k).or_default() += v;
        }
    }
    let got = interval_counts(merged, base);
    // Empty histograms carry no information; compare the non-empty ones.
    summed.retain(|_, v| *v > 0);
    let got: BTreeMap<_, _> = got.into_iter().filter(|(_, v)| *v > 0).collect();
    assert!(
        summed.len() > SECS as usize,
        "too few intervals: {summed:?}"
    );
    assert_eq!(got, summed, "merged interval counts != sum of the shards'");
}

fn totals(summary: &serde_json::Value) -> (u64, f64, f64) {
    let t = &summary["totals"];
    (
        t["requests"].as_u64().expect("requests"),
        t["latency"]["p50"].as_f64().expect("p50"),
        t["latency"]["p99"].as_f64().expect("p99"),
    )
}

fn budget_passes(summary: &serde_json::Value) -> Vec<(String, bool)> {
    summary["budgets"]
        .as_array()
        .expect("budgets")
        .iter()
        .map(|v| {
            (
                v["budget"].as_str().unwrap_or_default().to_string(),
                v["pass"].as_bool().expect("pass"),
            )
        })
        .collect()
}

#[test]
fn four_shards_merge_to_what_one_process_measures() {
    let _g = load::serial();
    let demo = brunt::demo::DemoServer::start(Default::default()).expect("demo target starts");
    let url = demo.base_url();
    let d = tempfile::tempdir().expect("tempdir");
    let profile = d.path().join("sharded.yaml");
    std::fs::write(&profile, PROFILE).expect("write profile");
    assert!(PROFILE.contains(&format!("rate: {RATE}/s, duration: {SECS}s")));

    // One process, the whole rate.
    let single = d.path().join("single");
    let o = brunt()
        .args(["run", "--quiet", "--target", &url])
        .arg(&profile)
        .arg("--out")
        .arg(&single)
        .output()
        .expect("brunt run");
    assert_eq!(o.status.code(), Some(99), "{}", text(&o)); // `requests < 2000` fails
    let single_sum = json(&single.join("summary.json"));

    // Four processes, a quarter each, stepping together.
    let start_at = unix_now() + 2.0;
    let shards = run_shards(&profile, &url, d.path(), &[1, 2, 3, 4], start_at);
    for s in &shards {
        let meta = json(&s.join("run.json"));
        let agreed = meta["start_at"]
            .as_f64()
            .expect("run.json records start_at");
        assert!((agreed - start_at).abs() < 1e-3, "{meta}");
        let late = meta["started_at"].as_f64().expect("started_at") - agreed;
        assert!(
            (0.0..0.5).contains(&late),
            "started {late} s after --start-at"
        );
    }

    let merged = d.path().join("merged");
    let refs: Vec<&Path> = shards.iter().map(PathBuf::as_path).collect();
    let o = merge(&refs, &merged);
    let out = text(&o);
    // Exit by the merged budgets: only the union breaks `requests < 2000`.
    assert_eq!(o.status.code(), Some(99), "{out}");
    assert!(out.contains("result: FAIL"), "{out}");
    assert!(out.contains("merged from 4 shards"), "{out}");
    let sum = json(&merged.join("summary.json"));
    assert_eq!(
        budget_passes(&sum),
        vec![
            ("requests >= 3000".to_string(), true),
            ("throughput >= 600/s".to_string(), true),
            ("requests < 2000".to_string(), false),
        ],
        "{sum}"
    );
    for s in &shards {
        // …whereas each shard alone met `requests < 2000` and failed the other two.
        let b = budget_passes(&json(&s.join("summary.json")));
        assert_eq!(
            b.iter().map(|x| x.1).collect::<Vec<_>>(),
            vec![false, false, true]
        );
    }
    let meta = &sum["meta"];
    assert_eq!(meta["shard_count"], 1);
    assert_eq!(meta["merged"]["shard_count"], SHARDS);
    let skew = meta["merged"]["skew_ms"].as_f64().expect("skew_ms");
    assert!(skew < 100.0, "common --start-at yet {skew} ms skew");
    assert!(
        !sum["notes"].to_string().contains("clock skew"),
        "{}",
        sum["notes"]
    );

    // Total requests within 1 % of the single run, and exactly the shards' sum.
    let (n1, p50_1, p99_1) = totals(&single_sum);
    let (nm, p50_m, p99_m) = totals(&sum);
    let shard_total: u64 = shards
        .iter()
        .map(|s| totals(&json(&s.join("summary.json"))).0)
        .sum();
    assert_eq!(nm, shard_total);
    assert!(
        (nm as f64 - n1 as f64).abs() <= 0.01 * n1 as f64,
        "merged {nm} vs single {n1}"
    );
    assert!(
        (nm as f64 - (RATE * SECS) as f64).abs() <= 0.01 * (RATE * SECS) as f64,
        "merged {nm} vs {}",
        RATE * SECS
    );

    // Exact: the merged percentiles are those of the added histograms…
    let mut all = new_hist();
    let mut shard_p99 = Vec::new();
    for s in &shards {
        let mut one = new_hist();
        for iv in hlog::read(&s.join("latency.hlog")).expect("shard hlog") {
            // Latency lines only: not service time, not the wait for a lane.
            if iv
                .tag
                .as_deref()
                .is_some_and(|t| !t.ends_with(".svc") && !t.ends_with(".wait"))
            {
                one.add(&iv.hist).expect("same bounds");
            }
        }
        shard_p99.push(pct_us(&one, 0.99) as f64 / 1000.0);
        all.add(&one).expect("same bounds");
    }
    assert_eq!(p99_m, pct_us(&all, 0.99) as f64 / 1000.0);
    assert_eq!(p50_m, pct_us(&all, 0.50) as f64 / 1000.0);
    // …so the union's p99 lies between the shards' (a mean of percentiles need not).
    let lo = shard_p99.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = shard_p99.iter().copied().fold(0.0, f64::max);
    assert!(
        (lo..=hi).contains(&p99_m),
        "p99 {p99_m} outside shards' {shard_p99:?}"
    );
    // Close to one process. The server sets both: half the answers take
    // 20 ms (p50), 2 % take 200 ms (so p99 falls among them). Both must agree
    // within 15 % (or 3 ms): what is left is CPU scheduling on a 2-core
    // machine shared by five processes, which on a /fast endpoint alone
    // moved p99 by 3× between identical runs. A wrong merge (averaged
    // percentiles, a shard's tail lost) is caught exactly by the checks above.
    eprintln!("single p50 {p50_1} p99 {p99_1} · merged p50 {p50_m} p99 {p99_m} · shards' p99 {shard_p99:?}");
    let close = |a: f64, b: f64| (a - b).abs() <= 3f64.max(0.15 * a.max(b));
    assert!(close(p50_m, p50_1), "p50 merged {p50_m} vs single {p50_1}");
    assert!(close(p99_m, p99_1), "p99 merged {p99_m} vs single {p99_1}");

    // Interval by interval, tag by tag: merged = sum of the shards.
    assert_intervals_add_up(&shards, &merged);
    // The time series sums the shards' rows.
    let rows = |dir: &Path| series::read(&dir.join("timeseries.csv")).expect("series");
    let sum_rows = |rs: &[series::Row]| -> (u64, u64) {
        (
            rs.iter().map(|r| r.offered).sum(),
            rs.iter().map(|r| r.completed()).sum(),
        )
    };
    let mut expect = (0, 0);
    for s in &shards {
        let (o, c) = sum_rows(&rows(s));
        expect = (expect.0 + o, expect.1 + c);
    }
    assert_eq!(sum_rows(&rows(&merged)), expect);
    assert_eq!(expect.1, nm);
    for f in [
        "profile.yaml",
        "events.jsonl",
        "diagnostics/shard-1",
        "diagnostics/shard-4",
    ] {
        assert!(merged.join(f).exists(), "merged dir lacks {f}");
    }
    // `brunt report` on the merged directory agrees with the merge.
    let o = brunt().arg("report").arg(&merged).output().expect("report");
    assert_eq!(o.status.code(), Some(99), "{}", text(&o));

    budgets_are_rejudged_from_the_merged_data(&shards, d.path());
    skew_is_measured_and_windows_line_up(&shards, d.path());
    mismatched_directories_are_refused(&shards, d.path(), &url);
}

/// With only the budget the union meets, the same shards merge to exit 0.
fn budgets_are_rejudged_from_the_merged_data(shards: &[PathBuf], root: &Path) {
    let mut copies = Vec::new();
    for (i, s) in shards.iter().enumerate() {
        let c = root.join(format!("pass-{}", i + 1));
        copy_dir(s, &c);
        let path = c.join("profile.yaml");
        let mut p = brunt::profile::Profile::from_yaml(
            &std::fs::read_to_string(&path).expect("profile"),
            &path,
        )
        .expect("saved profile parses");
        p.budgets.retain(|b| b.expr() == "requests >= 3000");
        assert_eq!(p.budgets.len(), 1);
        std::fs::write(&path, serde_saphyr::to_string(&p).expect("yaml")).expect("write");
        copies.push(c);
    }
    let refs: Vec<&Path> = copies.iter().map(PathBuf::as_path).collect();
    let o = merge(&refs, &root.join("merged-pass"));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("PASS requests >= 3000"), "{}", text(&o));
}

/// A shard that started 0.7 s late: reported as skew, its windows shifted by
/// a second so every interval still adds up by absolute time.
fn skew_is_measured_and_windows_line_up(shards: &[PathBuf], root: &Path) {
    let mut copies = Vec::new();
    for (i, s) in shards.iter().enumerate() {
        let c = root.join(format!("skew-{}", i + 1));
        copy_dir(s, &c);
        if i == 2 {
            let mut meta = json(&c.join("run.json"));
            let t = meta["started_at"].as_f64().expect("started_at");
            meta["started_at"] = (t + 0.7).into();
            std::fs::write(c.join("run.json"), meta.to_string()).expect("write");
        }
        copies.push(c);
    }
    let refs: Vec<&Path> = copies.iter().map(PathBuf::as_path).collect();
    let merged = root.join("merged-skew");
    let o = merge(&refs, &merged);
    assert_eq!(o.status.code(), Some(99), "{}", text(&o));
    let sum = json(&merged.join("summary.json"));
    let skew = sum["meta"]["merged"]["skew_ms"].as_f64().expect("skew_ms");
    assert!(skew > 600.0, "skew {skew}");
    let notes = sum["notes"].to_string();
    assert!(notes.contains("clock skew"), "{notes}");
    assert!(notes.contains("shard 3 by 1 s"), "{notes}");
    assert!(text(&o).contains("clock skew"), "{}", text(&o));
    assert_intervals_add_up(&copies, &merged);
    // The warning comes from run.json, so `brunt report` repeats it.
    let o = brunt().arg("report").arg(&merged).output().expect("report");
    assert!(text(&o).contains("clock skew"), "{}", text(&o));
}

fn mismatched_directories_are_refused(shards: &[PathBuf], root: &Path, url: &str) {
    let refused = |dirs: &[&Path], out: &str, why: &str| {
        let existed = root.join(out).exists();
        let o = merge(dirs, &root.join(out));
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains(why), "expected {why:?} in {}", text(&o));
        assert!(existed || !root.join(out).exists(), "{out} written");
    };
    let [s1, s2, s3, s4] = [&shards[0], &shards[1], &shards[2], &shards[3]].map(PathBuf::as_path);
    refused(&[s1, s2, s3], "m-missing", "shard 4/4 missing");
    refused(&[s1, s1, s3, s4], "m-dup", "are both shard 1/4");
    refused(
        &[s1, s2, s3, &root.join("nope")],
        "m-nodir",
        "not a run directory",
    );
    // A real shard 2/4 of another profile.
    let other = root.join("other.yaml");
    std::fs::write(&other, OTHER).expect("write");
    let o = brunt()
        .args(["run", "--quiet", "--target", url])
        .arg(&other)
        .args(["--shard", "2/4", "--out"])
        .arg(root.join("other-2"))
        .output()
        .expect("brunt run");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    refused(
        &[s1, &root.join("other-2"), s3, s4],
        "m-other",
        "shards of different profiles cannot be merged",
    );
    // Never overwrite a directory that holds something.
    refused(&[s1, s2, s3, s4], "merged", "exists and is not empty");
}

/// A merge decides completeness from the shards' data: a shard killed
/// mid-run (no summary) makes the merged run interrupted (exit 105, the
/// shard named), and a shard's cut last line is said on stderr and in the
/// notes, as `brunt report` says it.
#[test]
fn a_killed_or_cut_shard_is_never_merged_as_complete() {
    let _g = load::serial();
    let root = tempfile::tempdir().expect("tempdir");
    let profile = root.path().join("p.yaml");
    std::fs::write(
        &profile,
        "name: halves\ntarget: { url: builtin }\nrequests: [ { path: /fast } ]\nshape: { constant: { rate: 100/s, duration: 5s } }\n",
    )
    .expect("profile");
    let shard = |i: u32, dir: &Path| {
        brunt()
            .args(["run", "--quiet", "--shard", &format!("{i}/2"), "--out"])
            .arg(dir)
            .arg(&profile)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("brunt run starts")
    };
    let (one, two, killed) = (
        root.path().join("one"),
        root.path().join("two"),
        root.path().join("killed"),
    );
    let mut a = shard(1, &one);
    let mut b = shard(2, &two);
    let mut k = shard(2, &killed);
    cmd::wait_lines(&killed.join("timeseries.csv"), 3, Duration::from_secs(20));
    k.kill().expect("kill -9 shard 2");
    k.wait().expect("reaped");
    assert_eq!(a.wait().expect("shard 1").code(), Some(0));
    assert_eq!(b.wait().expect("shard 2").code(), Some(0));

    // Shard 1 complete, shard 2 killed: interrupted, never a PASS.
    let out = root.path().join("m-killed");
    let o = merge(&[&one, &killed], &out);
    assert_eq!(o.status.code(), Some(105), "{}", text(&o));
    assert!(
        text(&o).contains("shard 2: no summary.json (killed?)"),
        "{}",
        text(&o)
    );
    let s = json(&out.join("summary.json"));
    assert_eq!(s["interrupted"], true, "{s}");
    assert!(
        s["stopped_reason"].to_string().contains("shard 2"),
        "{}",
        s["stopped_reason"]
    );

    // Both complete: a PASS; with shard 2's last log line cut, a warning too.
    let o = merge(&[&one, &two], &root.path().join("m-whole"));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!text(&o).contains("warning"), "{}", text(&o));
    let hlog = two.join("latency.hlog");
    let t = std::fs::read_to_string(&hlog).expect("log");
    std::fs::write(&hlog, &t[..t.trim_end().len() - 5]).expect("cut the last line");
    let out = root.path().join("m-cut");
    let o = merge(&[&one, &two], &out);
    let said = text(&o);
    assert!(
        said.contains("warning: shard 2: ") && said.contains("cut"),
        "{said}"
    );
    let notes = json(&out.join("summary.json"))["notes"].to_string();
    assert!(notes.contains("shard 2: "), "{notes}");
}

/// Four shards of a stress run with `--control`: shard 3 loads a target
/// that stalls, breaks its first step and stops at the breach; the other
/// three, whose target is healthy, stop with it within a bounded time and
/// say why; the merge is a designed stop that names shard 3.
#[test]
fn one_shards_breach_stops_all_four_and_the_merge_says_which() {
    let healthy = load::demo(brunt::demo::DemoConfig::default());
    let stalling = load::demo(brunt::demo::DemoConfig {
        stall_every: Some(Duration::from_millis(1500)),
        stall_for: Duration::from_millis(700),
        ..Default::default()
    });
    let root = tempfile::tempdir().expect("tmp");
    let profile = root.path().join("stress.yaml");
    std::fs::write(
        &profile,
        "
name: together
target: { url: \"http://127.0.0.1:9\" }
requests: [ { path: /fast } ]
load: { model: open, workers: 1, connections: 64 }
shape: { stress: { start: 80/s, step: 80/s, max: 800/s, step_duration: 3s, stop_on_breach: true } }
budgets: [ 'p99 < 300ms' ]
",
    )
    .expect("profile");
    let control = format!("127.0.0.1:{}", free_port());
    let start_at = unix_now() + 2.0;
    let children: Vec<(u32, PathBuf, std::process::Child)> = (1..=SHARDS)
        .map(|i| {
            let url = if i == 3 {
                stalling.base_url()
            } else {
                healthy.base_url()
            };
            let (dir, child) = spawn_shard(
                &profile,
                &url,
                root.path(),
                i,
                start_at,
                &["--control", &control],
            );
            (i, dir, child)
        })
        .collect();
    let done: Vec<(u32, PathBuf, Output)> = children
        .into_iter()
        .map(|(i, dir, child)| (i, dir, cmd::wait_with_limit(child, Duration::from_secs(60))))
        .collect();
    let how: Vec<String> = done
        .iter()
        .map(|(i, dir, _)| {
            let s = json(&dir.join("summary.json"));
            format!(
                "shard {i}: {} {} {:?}",
                s["stop_kind"], s["stopped_reason"], s["notes"]
            )
        })
        .collect();
    let mut ends = BTreeMap::new();
    let mut dirs = vec![];
    for (i, dir, o) in done {
        let s = json(&dir.join("summary.json"));
        assert_eq!(
            s["stop_kind"],
            "breach",
            "shard {i} ({how:?}): {}",
            text(&o)
        );
        let reason = s["stopped_reason"].as_str().unwrap_or_default();
        if i == 3 {
            assert!(
                reason.contains("broke p99 < 300ms"),
                "shard 3 broke it: {reason}"
            );
        } else {
            assert!(
                reason.starts_with("stopped with shard 3: ") && reason.contains("broke p99"),
                "shard {i} stopped with shard 3: {reason}"
            );
        }
        let last = s["phases"]
            .as_array()
            .expect("phases")
            .iter()
            .filter(|p| p["requests"].as_u64() > Some(0))
            .count();
        ends.insert(i, (s["totals"]["duration_s"].as_f64().unwrap_or(0.0), last));
        dirs.push(dir);
    }
    // All four stopped within a bounded time of each other, far before the plan's 30 s.
    let durations: Vec<f64> = ends.values().map(|e| e.0).collect();
    let (lo, hi) = durations
        .iter()
        .fold((f64::MAX, 0f64), |(a, b), d| (a.min(*d), b.max(*d)));
    assert!(hi < 12.0, "stopped early: {ends:?}");
    assert!(hi - lo <= 1.5, "within 1.5 s of each other: {ends:?}");
    // The merge is a designed stop that names shard 3.
    let out = root.path().join("merged");
    let refs: Vec<&Path> = dirs.iter().map(|d| d.as_path()).collect();
    let o = merge(&refs, &out);
    assert_ne!(
        o.status.code(),
        Some(105),
        "a designed stop, not an interruption: {}",
        text(&o)
    );
    let m = json(&out.join("summary.json"));
    assert_eq!(m["stop_kind"], "breach", "{m}");
    assert!(
        m["stopped_reason"]
            .as_str()
            .unwrap_or_default()
            .contains("(shard 3's breach; the other shards stopped with it)"),
        "{}",
        m["stopped_reason"]
    );
}
