//! The live view (issue 15) through a real pseudo-terminal: `brunt run` and
//! `brunt watch DIR` run inside a tmux session (a private tmux server per
//! test, on its own socket), and `tmux capture-pane -p` shows what a user
//! sees — the phase and time left, offered and achieved rates, p50/p99 with
//! the sparkline, outcomes, the server side (the local host collector's
//! CPU) — then the summary once the run has ended. Piped, `brunt watch`
//! prints plain lines and the summary. Load: the built-in demo target on
//! 127.0.0.1, 10 s at most 50/s; and the Java test target (JDK 17, local
//! transport) past its one-monitor capacity, where the view shows the
//! BLOCKED threads of the newest `jcmd Thread.print` and its finding.

#[path = "support/java.rs"]
mod java;
#[path = "support/load.rs"]
mod load;

#[path = "support/cmd.rs"]
mod cmd;
use cmd::{out, spawn_run, spawn_run_unheard, wait_lines, wait_with_limit, write};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use brunt::vocab::exit;

const BIN: &str = env!("CARGO_BIN_EXE_brunt");

/// 4 s ramp to 50/s, then 6 s at 50/s named `hold`; written with
/// `load::HOST_EVERY_SECOND`, the local host collector sampling every second
/// (the view's `target CPU`).
const PROFILE: &str = r#"
name: live
target: { url: builtin }
requests: [ { path: "/slow?ms=20" } ]
shape: { stages: { start: 0, stages: [ { duration: 4s, target: 50/s }, { name: hold, duration: 6s, target: 50/s } ] } }
"#;

/// A tmux server of this test alone; killed (with its session) on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(name: &str, cmd: &str) -> Tmux {
        Tmux::sized(name, cmd, 200)
    }

    /// A session `cols` columns wide (45 rows).
    fn sized(name: &str, cmd: &str, cols: u16) -> Tmux {
        let socket = format!("brunt-test-{}-{name}", std::process::id());
        let cols = cols.to_string();
        let o = Command::new("tmux")
            .args(["-L", &socket, "new-session", "-d", "-x", &cols, "-y", "45", cmd])
            .output()
            .unwrap_or_else(|e| {
                panic!("tmux is needed for the live-view tests ({e}): run tests/setup.sh or `apt-get install tmux`")
            });
        assert!(o.status.success(), "tmux new-session: {}", out(&o));
        Tmux { socket }
    }

    fn capture(&self) -> String {
        self.capture_with(&[])
    }

    /// `capture-pane -p` with more flags: `-J` joins lines the terminal
    /// wrapped (so a line too wide shows as one), `-e` keeps colours.
    fn capture_with(&self, flags: &[&str]) -> String {
        let o = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-S", "-200"])
            .args(flags)
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&o.stdout).to_string()
    }

    /// Capture until `pred` holds (at most `limit`), returning that screen.
    fn wait_for(&self, limit: Duration, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let t0 = Instant::now();
        loop {
            let screen = self.capture();
            if pred(&screen) {
                return screen;
            }
            assert!(
                t0.elapsed() < limit,
                "no {what} within {limit:?}; the pane shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// `brunt run PROFILE --out RUN` for a terminal, its exit code kept on screen.
fn run_cmd(profile: &Path, run: &Path) -> String {
    format!(
        "{BIN} run {} --out {}; echo EXIT $?; sleep 60",
        profile.display(),
        run.display()
    )
}

fn setup(dir: &Path) -> (PathBuf, PathBuf) {
    let p = write(
        dir,
        "live.yaml",
        &format!("{PROFILE}{}", load::HOST_EVERY_SECOND),
    );
    (p, dir.join("run"))
}

/// A view showing the `hold` phase with its rates, percentiles and the host CPU.
fn is_live_view(s: &str) -> bool {
    let has = |w: &str| s.contains(w);
    has("phase    hold (50/s)")
        && has("left in run")
        && has("rate     offered ")
        && has("/s · achieved ")
        && has("in flight ")
        && has("latency  p50 ")
        && has(" · p99 ")
        && has("(last second)")
        && has("outcomes ok ")
        && has("target CPU ")
}

fn check_view(screen: &str) {
    // The rates are numbers, the p99 a time.
    let line = |prefix: &str| {
        screen
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line:\n{screen}"))
            .to_string()
    };
    let rate = line("rate");
    let offered: u64 = rate
        .split("offered ")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("offered rate: {rate}"));
    assert!((20..=80).contains(&offered), "offered near 50/s: {rate}");
    let lat = line("latency");
    assert!(lat.contains("ms"), "p99 in ms: {lat}");
    assert!(
        lat.contains(['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█']),
        "sparkline: {lat}"
    );
}

#[test]
fn brunt_run_on_a_terminal_shows_the_live_view_then_the_summary() {
    let d = tempfile::tempdir().expect("tempdir");
    let (profile, run) = setup(d.path());
    let cmd = run_cmd(&profile, &run);
    let tmux = Tmux::start("run", &cmd);
    let view = tmux.wait_for(Duration::from_secs(30), "live view", is_live_view);
    check_view(&view);
    let end = tmux.wait_for(Duration::from_secs(60), "end of the run", |s| {
        s.contains("EXIT ")
    });
    assert!(
        end.contains("result: PASS") && end.contains("EXIT 0"),
        "{end}"
    );
    // The view is cleared before the summary: no stale view lines after it.
    let after = &end[end.find("result: PASS").unwrap()..];
    assert!(!after.contains("left in run"), "{end}");
}

#[test]
fn brunt_watch_shows_the_same_view_from_another_terminal_then_exits() {
    let d = tempfile::tempdir().expect("tempdir");
    let (profile, run) = setup(d.path());
    // The run itself writes to pipes (a CI job, say); watch runs on a terminal.
    let child = spawn_run(&profile, &run, "--quiet");
    let cmd = format!("{BIN} watch {}; echo EXIT $?; sleep 60", run.display());
    let tmux = Tmux::start("watch", &cmd);
    let view = tmux.wait_for(Duration::from_secs(30), "live view", is_live_view);
    check_view(&view);
    let end = tmux.wait_for(Duration::from_secs(60), "watch to exit", |s| {
        s.contains("EXIT ")
    });
    let o = child.wait_with_output().expect("brunt run ends");
    assert_eq!(o.status.code(), Some(exit::PASS), "{}", out(&o));
    assert!(
        end.contains("result: PASS") && end.contains("EXIT 0"),
        "{end}"
    );
    assert!(end.contains("phase ") && end.contains("hold"), "{end}");

    // Piped, after the end: the summary at once, with the run's exit code.
    let o = Command::new(BIN)
        .arg("watch")
        .arg(&run)
        .output()
        .expect("brunt watch");
    assert_eq!(o.status.code(), Some(exit::PASS), "{}", out(&o));
    assert!(out(&o).contains("result: PASS"), "{}", out(&o));
}

#[test]
fn brunt_watch_piped_prints_plain_lines_while_the_run_goes_on() {
    let d = tempfile::tempdir().expect("tempdir");
    let (profile, run) = setup(d.path());
    let mut child = spawn_run_unheard(&profile, &run);
    let o = Command::new(BIN)
        .arg("watch")
        .arg(&run)
        .output()
        .expect("brunt watch");
    let status = child.wait().expect("brunt run ends");
    let text = out(&o);
    assert_eq!(status.code(), Some(exit::PASS));
    assert_eq!(o.status.code(), Some(exit::PASS), "{text}");
    assert!(
        !text.contains('\u{1b}'),
        "no escape codes when piped: {text}"
    );
    let plain: Vec<&str> = text.lines().filter(|l| l.starts_with('[')).collect();
    assert!(
        plain
            .iter()
            .any(|l| l.contains("hold 50/s | offered ") && l.contains("p99 ")),
        "plain progress lines: {text}"
    );
    assert!(text.contains("result: PASS"), "{text}");

    // Nothing writing there: exit 2 after the wait, saying so.
    let o = Command::new(BIN)
        .arg("watch")
        .arg(d.path().join("nothing"))
        .args(["--wait", "1s"])
        .output()
        .expect("brunt watch");
    assert_eq!(o.status.code(), Some(exit::BAD_INPUT), "{}", out(&o));
    assert!(out(&o).contains("no run is writing here"), "{}", out(&o));
}

#[test]
fn the_view_shows_blocked_threads_and_the_finding_of_the_newest_dump() {
    let _g = load::serial();
    let jdk = java::jdk17();
    let marker = format!("live-view-{}", std::process::id());
    let jvm = java::JavaTarget::marked(&jdk, &["-Xmx256m"], 16, &marker);
    let port = jvm.port;
    let d = tempfile::tempdir().expect("tempdir");
    // One monitor held 10 ms per request: ≈ 100/s at most; 150/s queues
    // the 16 workers on it (BLOCKED) for the whole run.
    let profile = write(
        d.path(),
        "jvm.yaml",
        &format!(
            r#"
name: live-jvm
target: {{ url: "http://127.0.0.1:{port}", timeout: 10s }}
requests: [ {{ path: "/contended?ms=10" }} ]
load: {{ connections: 64 }}
shape: {{ constant: {{ rate: 150/s, duration: 12s }} }}
collectors:
  transport: {{ kind: local }}
  target: {{ pgrep: "java .*{marker}", port: {port}, jcmd: "{jcmd}" }}
  collect:
    - use: linux-host
      probes: {{ host: {{ every: 1s }} }}
    - use: jvm
      probes: {{ thread-dump: {{ every: 2s, max: 8 }}, thread-dump-json: {{ enabled: false }}, heap: {{ enabled: false }}, jfr: {{ enabled: false }} }}
"#,
            jcmd = jdk.jcmd().display()
        ),
    );
    let run = d.path().join("run");
    let cmd = run_cmd(&profile, &run);
    let tmux = Tmux::start("jvm", &cmd);
    // The newest frame's lines (the view redraws in place).
    let last_line = |s: &str, prefix: &str| {
        s.lines()
            .rfind(|l| l.starts_with(prefix))
            .unwrap_or("")
            .to_string()
    };
    // The first dumps may show start-up contention (class initialisation);
    // the steady state is the Inventory monitor.
    let view = tmux.wait_for(
        Duration::from_secs(40),
        "BLOCKED threads in the view",
        |s| {
            let l = last_line(s, "server");
            l.contains("threads BLOCKED in the last dump")
                && l.contains("target CPU ")
                && last_line(s, "finding").contains("BLOCKED on `com.brunt.target.Inventory`")
        },
    );
    let server = last_line(&view, "server");
    let blocked: usize = server
        .split(" threads BLOCKED")
        .next()
        .and_then(|h| h.rsplit(" · ").next())
        .and_then(|h| h.split(" of ").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("blocked count: {server}\n---\n{view}"));
    assert!(blocked >= 2, "workers queue on the monitor: {server}");
    tmux.wait_for(Duration::from_secs(90), "end of the run", |s| {
        s.contains("EXIT ")
    });
}

/// A run killed early in a long plan: `brunt watch` notices within seconds
/// (the writer's process is gone), not at the plan's end.
#[test]
fn brunt_watch_notices_a_killed_run_within_seconds() {
    let d = tempfile::tempdir().expect("tempdir");
    let p = d.path().join("hour.yaml");
    std::fs::write(
        &p,
        "name: hour\ntarget: { url: builtin }\nrequests: [ { path: /fast } ]\nshape: { constant: { rate: 20/s, duration: 1h } }\n",
    )
    .expect("write profile");
    let run = d.path().join("run");
    let mut child = spawn_run_unheard(&p, &run);
    wait_lines(&run.join("timeseries.csv"), 1, Duration::from_secs(20));
    let watch = Command::new(BIN)
        .arg("watch")
        .arg(&run)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("brunt watch");
    std::thread::sleep(Duration::from_secs(2));
    child.kill().expect("kill -9 the run");
    child.wait().expect("reaped");
    let t = Instant::now();
    // Bounded: a watch still waiting after 20 s is killed and fails the test.
    let o = wait_with_limit(watch, Duration::from_secs(20));
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "noticed in {:?}",
        t.elapsed()
    );
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(
        out(&o).contains("is gone and left no summary"),
        "{}",
        out(&o)
    );
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert!(meta["writer"]["pid"].as_u64().is_some(), "{meta}");
}

/// Lines wider than 80 columns (as the terminal joined them back).
fn too_wide(screen: &str) -> Vec<String> {
    screen
        .lines()
        .map(|l| l.trim_end().to_string())
        .filter(|l| l.chars().count() > 80)
        .collect()
}

/// At 80 columns the live view and the summary after it fit line by line
/// (nothing wraps), PASS is green on the terminal, and `NO_COLOR` turns
/// colour off.
#[test]
fn at_80_columns_nothing_wraps_and_pass_is_coloured_unless_no_color() {
    let d = tempfile::tempdir().expect("tempdir");
    let (profile, run) = setup(d.path());
    let cmd = run_cmd(&profile, &run);
    let tmux = Tmux::sized("narrow", &cmd, 80);
    tmux.wait_for(Duration::from_secs(30), "live view", |s| {
        is_live_view(s) && s.contains("latency  p50 ") && s.contains('▁')
    });
    // indicatif pads the view's lines to the width, so the terminal marks
    // them wrapped: instead, no row of the view may be a line's remainder.
    let view = tmux.capture();
    let rows: Vec<&str> = view
        .lines()
        .skip_while(|l| !l.starts_with("brunt · live"))
        .take_while(|l| !l.trim().is_empty())
        .collect();
    let heads = [
        "brunt · ",
        "phase    ",
        "rate     ",
        "latency  ",
        "outcomes ",
        "errors   ",
        "server   ",
        "process  ",
        "finding  ",
    ];
    assert!(rows.len() >= 6, "{view}");
    for r in &rows {
        assert!(
            heads.iter().any(|h| r.starts_with(h)),
            "a wrapped line: {r:?}\n{view}"
        );
    }
    let end = tmux.wait_for(Duration::from_secs(60), "end of the run", |s| {
        s.contains("EXIT ")
    });
    assert!(end.contains("EXIT 0"), "{end}");
    let joined = tmux.capture_with(&["-J"]);
    let summary = &joined[joined.find("\nphase ").expect("the phase table")..];
    assert!(
        too_wide(summary).is_empty(),
        "{:?}\n{summary}",
        too_wide(summary)
    );
    assert!(joined.contains("report: file:///"), "{joined}");
    let coloured = tmux.capture_with(&["-e"]);
    assert!(
        coloured.contains("\u{1b}[32mPASS"),
        "PASS in green on a terminal:\n{coloured}"
    );
    drop(tmux);
    // The same summary with NO_COLOR set: no colour.
    let cmd = format!(
        "NO_COLOR=1 {BIN} report {}; echo EXIT $?; sleep 60",
        run.display()
    );
    let tmux = Tmux::sized("nocolor", &cmd, 80);
    tmux.wait_for(Duration::from_secs(30), "report", |s| s.contains("EXIT "));
    let plain = tmux.capture_with(&["-e"]);
    assert!(plain.contains("result: PASS"), "{plain}");
    assert!(!plain.contains("\u{1b}[32m"), "NO_COLOR: {plain}");
}
