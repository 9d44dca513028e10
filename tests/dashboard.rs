//! The live dashboard (`brunt run --dashboard`, `brunt watch --dashboard`):
//! served while the run runs, its figures the recorder's own (they add up
//! to `summary.json`'s), its page drawn by a real browser, a busy port
//! refused before any load, and the final page kept up for the linger time.

#[path = "support/chromium.rs"]
mod chromium;
#[path = "support/cmd.rs"]
mod cmd;
use cmd::{brunt, out, wait_with_limit, write};

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const PROFILE: &str = "
name: dash
target: { url: builtin }
requests: [ { path: /fast } ]
shape: { constant: { rate: 100/s, duration: 8s } }
budgets: [ 'p99 < 2s' ]
collectors:
  transport: { kind: local }
  collect:
    - use: linux-host
      probes: { host: { every: 1s } }
";

fn get(url: &str) -> Result<(u16, String), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(5)))
        .http_status_as_error(false)
        .build()
        .into();
    let mut r = agent.get(url).call().map_err(|e| e.to_string())?;
    let code = r.status().as_u16();
    let body = r.body_mut().read_to_string().map_err(|e| e.to_string())?;
    Ok((code, body))
}

/// The dashboard's URL from the first stderr line that names it.
fn dashboard_url(child: &mut Child) -> String {
    let err = child.stderr.take().expect("stderr piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(u) = line
                .strip_prefix("dashboard: ")
                .and_then(|l| l.split(' ').next())
            {
                let _ = tx.send(u.trim_end_matches('/').to_string());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("brunt names the dashboard's URL on stderr")
}

/// Poll `/api/state` (bounded) until `done` holds for it.
fn state_until(base: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let t0 = Instant::now();
    loop {
        if let Ok((200, body)) = get(&format!("{base}/api/state?since=0")) {
            let v: Value = serde_json::from_str(&body).expect("the state is JSON");
            if done(&v) {
                return v;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(40),
            "the dashboard never showed {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Each second's counts on the page add up to the summary's totals.
fn assert_adds_up(state: &Value, summary: &Value) {
    let secs = state["seconds"].as_array().expect("seconds");
    let sum = |k: &str| secs.iter().map(|s| s[k].as_u64().unwrap_or(0)).sum::<u64>();
    let t = &summary["totals"];
    for (page, sum_key) in [
        ("offered", "offered"),
        ("ok", "ok"),
        ("shed", "shed"),
        ("dropped", "dropped"),
    ] {
        assert_eq!(
            Some(sum(page)),
            t[sum_key].as_u64(),
            "{page} per second adds up to summary.json's {sum_key}"
        );
    }
    assert_eq!(
        &state["final"], summary,
        "the final page carries summary.json as written"
    );
}

#[test]
fn a_run_serves_its_live_page_with_the_recorders_figures_and_keeps_the_final_page_up() {
    let d = tempfile::tempdir().unwrap();
    let profile = write(d.path(), "dash.yaml", PROFILE);
    let run = d.path().join("run");
    let mut child = brunt()
        .arg("run")
        .arg(&profile)
        .arg("--out")
        .arg(&run)
        .args([
            "--plain",
            "--dashboard=127.0.0.1:0",
            "--dashboard-linger",
            "60s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let base = dashboard_url(&mut child);
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    // While it runs: the plan, then seconds as the recorder writes them.
    let live = state_until(&base, "two seconds", |v| {
        v["seconds_total"].as_u64() >= Some(2)
    });
    assert_eq!(live["plan"]["name"], "dash");
    assert_eq!(live["plan"]["phases"][0]["duration_s"], 8.0);
    assert!(
        live["final"].is_null(),
        "no summary while the load runs: {live}"
    );
    let (code, page) = get(&format!("{base}/")).unwrap();
    assert_eq!(code, 200);
    assert!(
        page.contains("<svg id=\"lat\"") && !page.contains("http://"),
        "the page is self-contained (no CDN)"
    );
    assert_eq!(get(&format!("{base}/nope")).unwrap().0, 404);
    // The gates as they stand, judged on the seconds so far (every 5 s).
    let judged = state_until(&base, "the gates so far", |v| !v["gates_so_far"].is_null());
    let g = &judged["gates_so_far"];
    assert_eq!(g["gates"][0]["name"], "p99 < 2s [run]", "{g}");
    assert_eq!(g["gates"][0]["status"], "PASS", "{g}");
    assert!(
        g["at_s"].as_u64().is_some_and(|t| (1..=8).contains(&t)),
        "{g}"
    );
    // A browser mid-run: the clock and the charts, no result yet.
    let mid = chromium::dump_dom(&format!("{base}/"), Duration::from_millis(1500), d.path());
    assert!(
        mid.contains(" s of 8 s ("),
        "the run's clock: {}",
        &mid[..mid.len().min(3000)]
    );
    assert!(
        mid.contains("<polyline") && mid.contains(r#"id="final" hidden"#),
        "charts, no result yet"
    );
    // `since` returns only what the page has not seen.
    let (_, tail) = get(&format!("{base}/api/state?since=1")).unwrap();
    let tail: Value = serde_json::from_str(&tail).unwrap();
    assert_eq!(tail["seconds"][0]["t"], 1, "{tail}");
    // The server side over time: the host collector's samples as they come.
    let srv = state_until(&base, "two server points", |v| {
        v["server_points_total"].as_u64() >= Some(2)
    });
    let p = &srv["server_points"][0];
    assert!(
        p["host_cpu_pct"]
            .as_f64()
            .is_some_and(|c| (0.0..=100.0).contains(&c)),
        "{srv}"
    );
    let (_, later) = get(&format!("{base}/api/state?since=0&server=1")).unwrap();
    let later: Value = serde_json::from_str(&later).unwrap();
    assert_eq!(
        later["server_points"].as_array().map(Vec::len),
        later["server_points_total"]
            .as_u64()
            .map(|n| n as usize - 1),
        "`server` skips the points the page has: {later}"
    );
    // The end: the summary on the page, equal to the file, the seconds adding up to it.
    let end = state_until(&base, "the summary", |v| !v["final"].is_null());
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_adds_up(&end, &summary);
    // A real browser draws it: the charts' lines and the gates' result.
    let dom = chromium::dump_dom(&format!("{base}/"), Duration::from_secs(4), d.path());
    assert!(
        dom.contains("<polyline"),
        "charts drawn: {}",
        &dom[..dom.len().min(2000)]
    );
    assert!(
        dom.contains("Result: <span class=\"PASS\">PASS</span>"),
        "{}",
        &dom[..dom.len().min(4000)]
    );
    assert!(
        dom.contains("budget: p99 &lt; 2s") || dom.contains("p99 &lt; 2s"),
        "the gate is listed"
    );
    // Still lingering (60 s asked); Ctrl-C ends it at once, with the run's exit code.
    assert!(
        child.try_wait().unwrap().is_none(),
        "the final page stays up for the linger time"
    );
    cmd::kill("-INT", child.id());
    let o = wait_with_limit(child, Duration::from_secs(10));
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
}

#[test]
fn watch_serves_the_dashboard_of_a_run_it_follows() {
    let d = tempfile::tempdir().unwrap();
    let profile = write(d.path(), "dash.yaml", PROFILE);
    let run = d.path().join("run");
    let runner = cmd::spawn_run_unheard(&profile, &run);
    let mut watcher = brunt()
        .arg("watch")
        .arg(&run)
        .args(["--dashboard=127.0.0.1:0", "--dashboard-linger", "3s"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let base = dashboard_url(&mut watcher);
    let end = state_until(&base, "the summary", |v| !v["final"].is_null());
    let o = wait_with_limit(runner, Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_adds_up(&end, &summary);
    let o = wait_with_limit(watcher, Duration::from_secs(20));
    assert_eq!(
        o.status.code(),
        Some(0),
        "watch ends with the run: {}",
        out(&o)
    );
}

#[test]
fn a_busy_dashboard_port_is_refused_before_any_load() {
    let d = tempfile::tempdir().unwrap();
    let profile = write(d.path(), "dash.yaml", PROFILE);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let run = d.path().join("run");
    let o = brunt()
        .arg("run")
        .arg(&profile)
        .arg("--out")
        .arg(&run)
        .arg(format!("--dashboard=127.0.0.1:{port}"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(
        out(&o).contains(&format!("--dashboard=127.0.0.1:{port}")),
        "{}",
        out(&o)
    );
    assert!(!Path::new(&run).exists(), "nothing was run or written");
    let o = brunt()
        .arg("run")
        .arg(&profile)
        .arg("--dashboard=not-an-address")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(out(&o).contains("expected HOST:PORT"), "{}", out(&o));
}
