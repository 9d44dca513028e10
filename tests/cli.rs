//! The `brunt` binary as a user meets it: exit codes, profile errors with
//! line and column, Ctrl-C and kill -9 mid-run, `brunt report` on the
//! leftovers, an unreachable target, and every shipped profile validating.

#[path = "support/cmd.rs"]
mod cmd;
#[path = "support/load.rs"]
mod load;
#[path = "support/tcp.rs"]
mod tcp;
use cmd::{brunt, out, run_quiet, spawn_run, spawn_run_unheard, wait_lines, write};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn repo(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

const SHORT: &str = r#"
name: short
target: { url: builtin }
requests: [ { path: /fast } ]
shape: { constant: { rate: 100/s, duration: 2s } }
budgets:
  - BUDGET
"#;

#[test]
fn budgets_decide_the_exit_code() {
    let d = tempfile::tempdir().unwrap();
    let pass = write(d.path(), "pass.yaml", &SHORT.replace("BUDGET", "p99 < 5s"));
    let o = run_quiet(&pass, &d.path().join("r1"));
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(out(&o).contains("PASS p99 < 5s"), "{}", out(&o));

    let fail = write(
        d.path(),
        "fail.yaml",
        &SHORT.replace("BUDGET", "throughput >= 500/s"),
    );
    let o = run_quiet(&fail, &d.path().join("r2"));
    assert_eq!(o.status.code(), Some(99), "{}", out(&o));
    assert!(out(&o).contains("FAIL throughput >= 500/s"), "{}", out(&o));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("r2/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["schema"], "brunt.summary/1");
    assert_eq!(summary["passed"], false);
    assert_eq!(summary["budgets"][0]["pass"], false);
}

#[test]
fn bad_profiles_say_file_line_column_and_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let cases = [
        (
            "unknown.yaml",
            SHORT.replace("BUDGET", "p99 < 1s") + "colour: blue\n",
            ":8:1",
            "unknown field `colour`",
        ),
        (
            "duration.yaml",
            SHORT
                .replace("2s }", "2 fortnights }")
                .replace("BUDGET", "p99 < 1s"),
            ":5:",
            "expected a duration",
        ),
        (
            "type.yaml",
            SHORT
                .replace("BUDGET", "p99 < 1s")
                .replace("load: ", "x")
                .replace("name: short", "name: short\nload: { connections: many }"),
            ":3:",
            "invalid",
        ),
        (
            "scalar.yaml",
            SHORT
                .replace("target: { url: builtin }", "target: builtin")
                .replace("BUDGET", "p99 < 1s"),
            ":3:9",
            "found `builtin` — write `target: { url: builtin }`",
        ),
        (
            "rate.yaml",
            SHORT.replace("100/s", "fast").replace("BUDGET", "p99 < 1s"),
            ":5:",
            "not a rate",
        ),
        (
            "budget.yaml",
            SHORT.replace("BUDGET", "p99 is small"),
            "",
            "expected `metric < value`",
        ),
        (
            "phase.yaml",
            SHORT.replace("BUDGET", "spike.p99 < 1s"),
            "",
            "no phase named `spike`",
        ),
        // Checks serde cannot express point at their value too.
        (
            "path.yaml",
            SHORT
                .replace("path: /fast", "path: fast")
                .replace("BUDGET", "p99 < 1s"),
            ":4:21",
            "path `fast` must start with `/`",
        ),
        (
            "method.yaml",
            SHORT
                .replace("path: /fast", "path: /fast, method: \"GE T\"")
                .replace("BUDGET", "p99 < 1s"),
            ":4:37",
            "`GE T` is not an HTTP method",
        ),
        (
            "connections.yaml",
            SHORT
                .replace("name: short", "name: short\nload: { connections: 0 }")
                .replace("BUDGET", "p99 < 1s"),
            ":3:22",
            "load.connections must be at least 1",
        ),
        (
            "stress.yaml",
            SHORT
                .replace(
                    "constant: { rate: 100/s, duration: 2s }",
                    "stress: { start: 10/s, step: 10/s, step_duration: 1s, max: 5/s }",
                )
                .replace("BUDGET", "p99 < 1s"),
            ":5:",
            "max must be at least start",
        ),
        (
            "unquoted.yaml",
            SHORT
                .replace("path: /fast", "path: /fast, headers: { X-A: {{ uuid }} }")
                .replace("BUDGET", "p99 < 1s"),
            ":4:",
            "a `{{ … }}` template must be quoted in YAML, e.g. \"{{ uuid }}\"",
        ),
        (
            "typo.yaml",
            SHORT
                .replace("path: /fast", "path: \"/i/{{ random.integer(1, 5) }}\"")
                .replace("BUDGET", "p99 < 1s"),
            ":4:",
            "did you mean `random.int(lo, hi)`?",
        ),
    ];
    for (name, text, loc, what) in cases {
        let p = write(d.path(), name, &text);
        for cmd in ["validate", "run"] {
            let o = brunt().arg(cmd).arg(&p).output().unwrap();
            let s = out(&o);
            assert_eq!(o.status.code(), Some(2), "{name} {cmd}: {s}");
            assert!(
                s.contains(&format!("{}{loc}", p.display())),
                "{name} {cmd} names file:line:col `{loc}`: {s}"
            );
            assert!(s.contains(what), "{name} {cmd} says `{what}`: {s}");
            assert!(!s.contains("panicked"), "{s}");
        }
    }
    let o = brunt()
        .args(["validate", "/nonexistent/profile.yaml"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(out(&o).contains("/nonexistent/profile.yaml"));
    // k6's `${__ENV.X}` is valid text, sent as written: said, with the fix.
    let p = write(
        d.path(),
        "k6.yaml",
        &SHORT
            .replace("path: /fast", "path: \"/fast?k=${__ENV.KEY}\"")
            .replace("BUDGET", "p99 < 1s"),
    );
    let o = brunt().arg("validate").arg(&p).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("`${__ENV.KEY}` is sent as written; brunt's templates read `{{ env.KEY }}`"),
        "{}",
        out(&o)
    );
}

#[test]
fn every_shipped_profile_validates() {
    let mut n = 0;
    for e in std::fs::read_dir(repo("profiles")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "yaml") {
            let o = brunt().arg("validate").arg(&p).output().unwrap();
            assert_eq!(o.status.code(), Some(0), "{}: {}", p.display(), out(&o));
            n += 1;
        }
    }
    assert!(n >= 5, "quickstart, stress, soak, spike, overload");
}

#[test]
fn an_unreachable_target_is_a_quick_clear_error() {
    // Bind then drop a listener: nothing listens on that port now.
    let port = tcp::free_port();
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "p.yaml", &SHORT.replace("BUDGET", "p99 < 1s"));
    let t = Instant::now();
    let o = brunt()
        .arg("run")
        .arg(&p)
        .args(["--target", &format!("http://127.0.0.1:{port}")])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    assert!(out(&o).contains("unreachable"), "{}", out(&o));
    assert!(t.elapsed() < Duration::from_secs(10));
}

/// 200/s for a minute of the built-in target, within budget: a run to stop.
fn long() -> String {
    load::fast("long", "builtin", "200/s", "60s") + "budgets: [ \"p99 < 5s\" ]\n"
}

#[test]
fn ctrl_c_stops_gracefully_and_writes_the_report() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "long.yaml", &long());
    let run = d.path().join("run");
    let child = spawn_run(&p, &run, "--plain");
    wait_lines(&run.join("timeseries.csv"), 4, Duration::from_secs(20));
    let t = Instant::now();
    assert!(Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let o = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(8), "stopped promptly");
    // An interrupted run never passes: its own exit code (issue 11).
    assert_eq!(o.status.code(), Some(105), "{}", out(&o));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["interrupted"], true);
    let n = s["totals"]["requests"].as_u64().unwrap();
    assert!(n >= 600, "{n} requests measured before Ctrl-C");
    assert!(out(&o).contains("interrupted"));
}

#[test]
fn kill_9_leaves_a_directory_that_brunt_report_rebuilds() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "long.yaml", &long());
    let run = d.path().join("run");
    let mut child = spawn_run_unheard(&p, &run);
    wait_lines(&run.join("timeseries.csv"), 5, Duration::from_secs(20));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!run.join("summary.json").exists());
    let o = brunt().arg("report").arg(&run).output().unwrap();
    // The rebuilt run is interrupted, and says so in its exit code (issue 11).
    assert_eq!(o.status.code(), Some(105), "{}", out(&o));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["interrupted"], true);
    let n = s["totals"]["requests"].as_u64().unwrap();
    assert!(n >= 600, "{n}: every full second before the kill is kept");
    // The books close: offered = requests + dropped + unknown.
    cmd::books_close(&s);
    // A missing directory is bad input.
    let o = brunt()
        .arg("report")
        .arg(d.path().join("nope"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn target_override_and_time_scale() {
    let srv = brunt::demo::DemoServer::start(Default::default()).unwrap();
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "p.yaml",
        &SHORT.replace("BUDGET", "p99 < 5s").replace("2s }", "20s }"),
    );
    let o = brunt()
        .arg("run")
        .arg(&p)
        .args([
            "--target",
            &srv.base_url(),
            "--time-scale",
            "0.1",
            "--quiet",
        ])
        .arg("--out")
        .arg(d.path().join("r"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert_eq!(
        srv.stats().fast.completed,
        200,
        "20 s × 0.1 at 100/s against the overriding target"
    );
}

#[test]
fn help_states_the_exit_codes() {
    for args in [vec!["--help"], vec!["run", "--help"]] {
        let o = brunt().args(&args).output().unwrap();
        assert!(out(&o).contains("99 a budget failed"), "{args:?}");
    }
    let o = brunt().arg("frobnicate").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// Busy loops pinned to CPU 0, killed on drop. taskset execs the shell
/// itself, so the kill reaches the loop; the loop also ends by itself after a
/// bounded count (about a minute) should the test process die first.
struct Hogs(Vec<std::process::Child>);

impl Hogs {
    fn start(n: usize) -> Hogs {
        Hogs(
            (0..n)
                .map(|_| {
                    Command::new("taskset")
                        .args([
                            "-c",
                            "0",
                            "sh",
                            "-c",
                            "i=0; while [ $i -lt 500000000 ]; do i=$((i+1)); done",
                        ])
                        .spawn()
                        .expect("taskset (util-linux)")
                })
                .collect(),
        )
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn a_starved_generator_is_flagged_as_saturated() {
    // brunt at the lowest priority on a core that two busy loops hog: its
    // schedule slips, and the summary must say its latencies are not the server's.
    let srv = brunt::demo::DemoServer::start(Default::default()).unwrap();
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "p.yaml",
        "name: starved\ntarget: { url: builtin }\nrequests: [ { path: /fast } ]\nload: { workers: 1 }\nshape: { constant: { rate: 500/s, duration: 3s } }\n",
    );
    let hogs = Hogs::start(2);
    let o = Command::new("taskset")
        .args(["-c", "0", "nice", "-n", "19"])
        .arg(env!("CARGO_BIN_EXE_brunt"))
        .arg("run")
        .arg(&p)
        .args(["--target", &srv.base_url(), "--quiet", "--out"])
        .arg(d.path().join("r"))
        .output()
        .unwrap();
    drop(hogs);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("r/summary.json")).unwrap())
            .unwrap();
    let g = &s["generator"];
    assert!(g["late_seconds"].as_u64().unwrap() >= 1, "{g}");
    // Two hogs on its core are other processes: the note may name them (the
    // host busy) or brunt's own saturation; either way it is flagged.
    assert!(
        out(&o).contains("generator was saturated")
            || out(&o).contains("generator host was busy with other processes"),
        "{}",
        out(&o)
    );

    // The same load unhindered is not flagged.
    let o = brunt()
        .arg("run")
        .arg(&p)
        .args(["--target", &srv.base_url(), "--quiet", "--out"])
        .arg(d.path().join("calm"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("calm/summary.json")).unwrap())
            .unwrap();
    assert!(
        s["generator"]["max_sched_lag_ms"].as_f64().unwrap() < 1000.0,
        "{}",
        s["generator"]
    );
}

/// An unparsable port is an error, never the scheme's default port (which
/// would send the load to whatever listens on 80/443) — issue 12.
#[test]
fn a_bad_port_is_refused_not_defaulted() {
    let dir = tempfile::tempdir().unwrap();
    for url in [
        "http://127.0.0.1:99999",
        "http://127.0.0.1:65536",
        "http://127.0.0.1:abc",
        "http://127.0.0.1:",
        "https://127.0.0.1:/x",
    ] {
        let p = write(
            dir.path(),
            "p.yaml",
            &format!(
                "name: port\ntarget: {{ url: \"{url}\" }}\nrequests:\n  - path: /fast\nshape:\n  constant: {{ rate: 10/s, duration: 1s }}\n"
            ),
        );
        let o = brunt().arg("validate").arg(&p).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{url}: {}", out(&o));
        assert!(out(&o).contains("target.url"), "{url}: {}", out(&o));
        // The same URL given on the command line is refused before any load.
        let o = brunt()
            .args(["run", "--quiet", "--target", url])
            .arg(repo("profiles/quickstart.yaml"))
            .arg("--out")
            .arg(dir.path().join("never"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{url}: {}", out(&o));
        assert!(
            !dir.path().join("never").exists(),
            "{url}: no run directory"
        );
    }
    // A valid port and path still work.
    let p = write(
        dir.path(),
        "ok.yaml",
        "name: port\ntarget: { url: \"http://127.0.0.1:8080/api\" }\nrequests:\n  - path: /fast\nshape:\n  constant: { rate: 10/s, duration: 1s }\n",
    );
    let o = brunt().arg("validate").arg(&p).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
}

/// `--out` onto an existing run directory is refused (the old run's files
/// would mix into the new one); `--force` empties it first, and only a run
/// directory — issue 12.
#[test]
fn an_existing_out_is_refused_unless_forced() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "p.yaml", &SHORT.replace("BUDGET", "p99 < 5s"));
    let run = d.path().join("run");
    let go = |force: bool, out_dir: &Path| {
        let mut c = brunt();
        c.args(["run", "--quiet"]).arg(&p).arg("--out").arg(out_dir);
        if force {
            c.arg("--force");
        }
        c.output().unwrap()
    };
    assert_eq!(go(false, &run).status.code(), Some(0));
    // A leftover of the first run, which a second run must not inherit.
    std::fs::write(run.join("diagnostics/old-dump.txt"), "old").unwrap();
    let o = go(false, &run);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(out(&o).contains("--force"), "{}", out(&o));
    assert!(
        run.join("diagnostics/old-dump.txt").exists(),
        "nothing lost"
    );
    let o = go(true, &run);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert!(
        !run.join("diagnostics/old-dump.txt").exists(),
        "emptied first"
    );
    assert!(run.join("summary.json").exists());
    // --force never empties a directory that is not a run directory.
    let other = d.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    let o = go(true, &other);
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
    assert!(other.join("notes.txt").exists());
}

/// Signals close together are one request to stop (GNU `timeout` signals the
/// child and then its process group): the run still drains and writes its
/// report. (A signal well after the first quits at once:
/// `accounting::a_second_sigterm_during_the_drain_quits_at_once_with_143`.)
#[test]
fn a_burst_of_signals_stops_once() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "long.yaml", &long());
    let sigterm = |pid: u32| {
        assert!(Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap()
            .success());
    };
    // Two SIGTERMs 20 ms apart: one stop, exit 105 with the whole report.
    let run = d.path().join("burst");
    let child = spawn_run(&p, &run, "--plain");
    wait_lines(&run.join("timeseries.csv"), 3, Duration::from_secs(20));
    sigterm(child.id());
    std::thread::sleep(Duration::from_millis(20));
    sigterm(child.id());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(105), "{}", out(&o));
    assert!(run.join("summary.json").exists() && run.join("report.html").exists());
    // GNU timeout, as CI jobs use it: never a hard quit (12 runs, ~2 s each).
    for i in 0..12 {
        let run = d.path().join(format!("timeout-{i}"));
        // --preserve-status: brunt's own code, not timeout's 124.
        let o = Command::new("timeout")
            .args(["--preserve-status", "1.5"])
            .arg(env!("CARGO_BIN_EXE_brunt"))
            .args(["run", "--plain", "--out"])
            .arg(&run)
            .arg(&p)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(105), "run {i}: {}", out(&o));
        assert!(
            run.join("summary.json").exists(),
            "run {i}: summary written"
        );
    }
}

/// `brunt run … | head -1` and a terminal that went away: output that
/// cannot be written never kills the run; every file is written and the
/// exit code is the run's own.
#[test]
fn closed_stdout_and_stderr_never_kill_the_run() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "short.yaml",
        "name: short\ntarget: { url: builtin }\nrequests: [ { path: /fast } ]\nshape: { constant: { rate: 50/s, duration: 2s } }\nbudgets: [ \"p99 < 5s\" ]\n",
    );
    for plain in ["--plain", "--quiet"] {
        let run = d.path().join(format!("run{plain}"));
        let junit = d.path().join(format!("junit{plain}.xml"));
        let mut child = brunt()
            .arg("run")
            .arg(&p)
            .arg("--out")
            .arg(&run)
            .arg("--junit")
            .arg(&junit)
            .arg(plain)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Both readers gone before brunt writes a byte: every write fails.
        drop(child.stdout.take());
        drop(child.stderr.take());
        let t = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "the run ends by itself"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(status.code(), Some(0), "{plain}: the run's own exit code");
        for f in [
            "summary.json",
            "report.html",
            "latency.hlog",
            "timeseries.csv",
        ] {
            assert!(run.join(f).exists(), "{plain}: {f} written");
        }
        assert!(junit.exists(), "{plain}: the JUnit file written");
    }
}

/// Shell completions and the man page come from the same definitions the
/// CLI parses: every subcommand is in them, and bash reads the script.
#[test]
fn completions_and_man_page_cover_every_subcommand() {
    let subcommands = [
        "run",
        "validate",
        "demo-target",
        "analyze",
        "watch",
        "report",
        "merge",
        "k8s",
        "compare",
    ];
    for shell in ["bash", "zsh", "fish"] {
        let o = brunt().args(["completions", shell]).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", out(&o));
        let text = String::from_utf8_lossy(&o.stdout);
        for sub in subcommands {
            assert!(text.contains(sub), "{shell}: `{sub}` completes");
        }
        if shell == "bash" {
            let d = tempfile::tempdir().unwrap();
            let f = write(d.path(), "brunt.bash", &text);
            let ok = Command::new("bash").arg("-n").arg(&f).status().unwrap();
            assert!(ok.success(), "bash reads the completion script");
        }
    }
    let o = brunt().arg("man").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let man = String::from_utf8_lossy(&o.stdout);
    assert!(man.contains(".TH brunt 1"), "{man}");
    for sub in subcommands {
        assert!(
            man.contains(&format!(".TH brunt-{sub} ")),
            "a page for `{sub}`"
        );
    }
    // A shell that does not exist is bad input.
    let o = brunt().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", out(&o));
}
