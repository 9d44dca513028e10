//! Faults that must lose nothing and say nothing wrong (issue 12), with the
//! real parts on 127.0.0.1: a disk that fills mid-run (a real, small tmpfs;
//! needs root, and says so), a cut last line in the run directory's files,
//! `brunt report` after a double Ctrl-C (local collectors) or a kill -9 (a
//! real JVM's thread dumps), a target killed and restarted mid-run, and
//! `brunt analyze` on large files that are not diagnostics (peak memory
//! measured with `/usr/bin/time -v`).

#[path = "support/java.rs"]
mod java;
#[path = "support/load.rs"]
mod load;
#[path = "support/tcp.rs"]
mod tcp;

#[path = "support/cmd.rs"]
mod cmd;
use cmd::{brunt, lines, out, spawn_run, spawn_run_unheard, wait_lines, wait_with_limit, write};

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use brunt::metrics::hlog;
use brunt::vocab::exit;

fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every answer of the untagged per-second lines of a latency log, per second.
fn answers_per_second(path: &Path) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = vec![];
    for iv in hlog::read(path).expect("latency.hlog reads") {
        if iv.tag.is_none() {
            v.push((iv.start.as_secs(), iv.hist.len()));
        }
    }
    v
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).expect("copy");
        }
    }
}

/// A small tmpfs mounted for one test, unmounted on drop.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount(size: &str) -> Tmpfs {
        let root = std::process::Command::new("id")
            .arg("-u")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
            .unwrap_or(false);
        assert!(
            root,
            "the disk-full test needs root: it mounts a small tmpfs (`mount -t tmpfs -o size={size}`); run the suite as root, as .ci/run does"
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "mount -t tmpfs failed at {} (util-linux's mount, root, and a kernel that allows it are needed)",
            dir.path().display()
        );
        Tmpfs(dir)
    }
    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

const PAGE: usize = 4096;

/// Issue 12.1: a disk that fills mid-run stops the load at once with its
/// own exit code and a clear error; the run directory keeps every second
/// that reached the disk, and `brunt report` rebuilds it (a cut last line
/// skipped with a warning).
#[test]
fn a_disk_full_mid_run_stops_the_load_at_once_and_report_rebuilds_what_reached_the_disk() {
    let fs = Tmpfs::mount("1m");
    // Leave 8 pages: the run's first files take 6, the latency log and the
    // time series fill the rest within seconds (~700 bytes a second at 200/s).
    let filler = vec![0u8; 1024 * 1024 - 8 * PAGE];
    std::fs::write(fs.path().join("filler"), &filler).expect("filler");
    let work = tempfile::tempdir().expect("tempdir");
    let yaml = load::fast("full", "builtin", "200/s", "40s") + "budgets: [ \"p99 < 5s\" ]\n";
    let profile = write(work.path(), "full.yaml", &yaml);
    let run = fs.path().join("run");
    let t = Instant::now();
    let child = spawn_run(&profile, &run, "--plain");
    let o = wait_with_limit(child, Duration::from_secs(60));
    let took = t.elapsed();
    let text = out(&o);
    assert_eq!(o.status.code(), Some(exit::WRITE_FAILED), "{text}");
    assert!(text.contains("No space left on device"), "{text}");
    assert!(text.contains("the load was stopped at once"), "{text}");
    assert!(text.contains("brunt report"), "{text}");
    // Stopped at the fault, not after the planned 40 s.
    assert!(
        took < Duration::from_secs(20),
        "ran {took:?} on a full disk"
    );
    assert!(!run.join("summary.json").exists());

    // What reached the disk: copied off the full tmpfs and rebuilt there.
    let copy = work.path().join("copy");
    copy_dir(&run, &copy);
    let hlog_bytes = std::fs::read(copy.join("latency.hlog")).expect("latency.hlog");
    let cut = hlog_bytes.last() != Some(&b'\n');
    let o = brunt()
        .arg("report")
        .arg(&copy)
        .output()
        .expect("brunt report");
    let text = out(&o);
    // Rebuilt (not rejected), and never a pass: the run did not finish.
    assert_eq!(o.status.code(), Some(exit::INTERRUPTED), "{text}");
    let s = json(&copy.join("summary.json"));
    assert_eq!(s["interrupted"], true, "{text}");
    let requests = s["totals"]["requests"].as_u64().expect("totals.requests");
    // Every second that reached both files whole is in the summary, nothing
    // more than the log holds, and far from the planned 8000.
    let secs = answers_per_second_lossy(&copy.join("latency.hlog"));
    let rows = brunt::metrics::series::read(&copy.join("timeseries.csv")).expect("series");
    let last_row = rows
        .iter()
        .map(|r| r.second)
        .max()
        .expect("a second on disk");
    let before_last_row: u64 = secs
        .iter()
        .filter(|(sec, _)| *sec < last_row)
        .map(|(_, n)| n)
        .sum();
    let readable: u64 = secs.iter().map(|(_, n)| n).sum();
    assert!(requests > 0, "nothing rebuilt: {text}");
    assert!(
        (before_last_row..=readable).contains(&requests),
        "summary has {requests}; whole seconds on disk {before_last_row}, readable {readable}"
    );
    assert!(requests < 8000, "{requests} requests on a full disk");
    // The books close: what was offered and never recorded is `unknown`.
    cmd::books_close(&s);
    if cut {
        assert!(
            text.contains("latency.hlog") && text.contains("cut short"),
            "the cut last line is not reported: {text}"
        );
    }
}

/// The intervals of a log that may end in a cut line (the reader skips it).
fn answers_per_second_lossy(path: &Path) -> Vec<(u64, u64)> {
    let mut v = vec![];
    hlog::for_each(path, |iv| {
        if iv.tag.is_none() {
            v.push((iv.start.as_secs(), iv.hist.len()));
        }
    })
    .expect("latency.hlog reads up to its cut line");
    v
}

/// A short run of the built-in target into `dir/run`.
fn short_run(dir: &Path, yaml: &str) -> PathBuf {
    let p = write(dir, "p.yaml", yaml);
    let run = dir.join("run");
    let o = brunt()
        .arg("run")
        .arg(&p)
        .arg("--out")
        .arg(&run)
        .arg("--quiet")
        .output()
        .expect("brunt run");
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    run
}

/// Cut the file's last line in the middle (and its newline).
fn cut_last_line(path: &Path) {
    let b = std::fs::read(path).expect("read");
    let body = &b[..b.len() - 1];
    let start = body.iter().rposition(|c| *c == b'\n').map_or(0, |i| i + 1);
    let keep = start + (body.len() - start) / 2;
    std::fs::write(path, &b[..keep]).expect("write");
}

/// Issue 12.1: a cut last line of `latency.hlog` and of `timeseries.csv`
/// is skipped with a warning (stderr and the summary's notes); every
/// second before it is rebuilt.
#[test]
fn a_cut_last_line_of_the_latency_log_and_the_time_series_is_skipped_with_a_warning() {
    let d = tempfile::tempdir().expect("tempdir");
    let run = short_run(
        d.path(),
        "name: cut\ntarget: { url: builtin }\nrequests: [ { path: /fast } ]\nshape: { constant: { rate: 100/s, duration: 4s } }\nbudgets: [ \"p99 < 5s\" ]\n",
    );
    let log = run.join("latency.hlog");
    let per_second = answers_per_second(&log);
    let last = per_second.iter().map(|(s, _)| *s).max().expect("seconds");
    let before_last: u64 = per_second
        .iter()
        .filter(|(s, _)| *s < last)
        .map(|(_, n)| n)
        .sum();
    assert!(before_last > 0);

    // The latency log alone: its last second goes, the rest reads.
    let only_log = d.path().join("only-log");
    copy_dir(&run, &only_log);
    cut_last_line(&only_log.join("latency.hlog"));
    let o = brunt()
        .arg("report")
        .arg(&only_log)
        .output()
        .expect("report");
    let text = out(&o);
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains("latency.hlog: line") && text.contains("is cut short"),
        "{text}"
    );
    assert!(
        text.contains(&format!("second {last} is left out")),
        "last {last}: {text}\nlog:\n{}",
        std::fs::read_to_string(only_log.join("latency.hlog")).unwrap_or_default()
    );
    let s = json(&only_log.join("summary.json"));
    assert_eq!(
        s["totals"]["requests"].as_u64(),
        Some(before_last),
        "{text}"
    );
    let notes = s["notes"].to_string();
    assert!(notes.contains("cut short"), "{notes}");

    // Both files cut: the time series' cut second ends both.
    let both = d.path().join("both");
    copy_dir(&run, &both);
    cut_last_line(&both.join("latency.hlog"));
    cut_last_line(&both.join("timeseries.csv"));
    let o = brunt().arg("report").arg(&both).output().expect("report");
    let text = out(&o);
    assert!(o.status.code() != Some(exit::FAILURE), "{text}");
    assert!(
        text.contains("timeseries.csv: line") && text.contains("cut short and skipped"),
        "{text}"
    );
    assert!(text.contains("latency.hlog: line"), "{text}");
    let s = json(&both.join("summary.json"));
    let requests = s["totals"]["requests"].as_u64().expect("requests");
    assert_eq!(requests, before_last, "{text}");
    // Offered comes from the series: the same seconds, so it still adds up.
    // (Within the answers in flight across a second's edge.)
    let offered = s["totals"]["offered"].as_u64().expect("offered");
    let dropped = s["totals"]["dropped"].as_u64().unwrap_or(0);
    assert!(
        offered.abs_diff(requests + dropped) <= 20,
        "offered {offered}, requests {requests}: {text}"
    );
    let notes = s["notes"].to_string();
    assert!(notes.contains("timeseries.csv"), "{notes}");

    // A bad line that is not the last is still an error, not data.
    let mid = d.path().join("mid");
    copy_dir(&run, &mid);
    let text = std::fs::read_to_string(mid.join("latency.hlog")).expect("log");
    let mut ls: Vec<&str> = text.lines().collect();
    let at = ls.len() - 3;
    ls[at] = "Tag=main.ok,1.000,1.000,0.5,HISTFAAAAB";
    std::fs::write(mid.join("latency.hlog"), ls.join("\n") + "\n").expect("write");
    let o = brunt().arg("report").arg(&mid).output().expect("report");
    assert_eq!(o.status.code(), Some(exit::BAD_INPUT), "{}", out(&o));
    assert!(out(&o).contains(&format!("line {}", at + 1)), "{}", out(&o));
}

/// Issue 12.8: after a double Ctrl-C (no summary written), `brunt report`
/// fills `collectors` from what the collectors left in `diagnostics/`.
#[test]
fn report_after_a_double_ctrl_c_rebuilds_the_collectors_section_from_the_files() {
    let d = tempfile::tempdir().expect("tempdir");
    let p = write(
        d.path(),
        "collected.yaml",
        r#"
name: collected
target: { url: builtin, timeout: 10s }
requests: [ { path: "/slow?ms=2500" } ]
load: { connections: 64 }
shape: { constant: { rate: 20/s, duration: 30s } }
collectors:
  collect:
    - use: linux-host
      probes: { host: { every: 500ms } }
"#,
    );
    let run = d.path().join("run");
    let child = spawn_run(&p, &run, "--plain");
    let pid = child.id().to_string();
    wait_lines(
        &run.join("diagnostics").join("host.jsonl"),
        4,
        Duration::from_secs(30),
    );
    wait_lines(&run.join("timeseries.csv"), 4, Duration::from_secs(30));
    let sigint = || {
        let ok = Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill -INT {pid}");
    };
    // The first stops the load; the drain waits for the 2.5-s answers…
    sigint();
    // (past the 0.5-s window in which a second signal is the same request)
    std::thread::sleep(Duration::from_millis(800));
    // … and the second quits at once, before any summary.
    sigint();
    let o = wait_with_limit(child, Duration::from_secs(15));
    assert_eq!(o.status.code(), Some(130), "{}", out(&o));
    assert!(!run.join("summary.json").exists(), "{}", out(&o));
    let host_rows = lines(&run.join("diagnostics").join("host.jsonl")) as u64;
    let generator_rows = lines(&run.join("diagnostics").join("generator.jsonl")) as u64;

    let o = brunt().arg("report").arg(&run).output().expect("report");
    assert_eq!(o.status.code(), Some(exit::INTERRUPTED), "{}", out(&o));
    let s = json(&run.join("summary.json"));
    // The books close: the answers in flight at the quit are `unknown`.
    let unknown = cmd::books_close(&s);
    assert!(
        unknown > 0,
        "2.5-s answers were in flight at the quit: {}",
        s["totals"]
    );
    assert!(
        s["notes"].to_string().contains("no recorded outcome"),
        "{}",
        s["notes"]
    );
    let c = &s["collectors"];
    assert!(c.is_object(), "collectors: {c}");
    assert_eq!(c["transport"], "local", "{c}");
    let host = c["streams"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["name"] == "host"))
        .unwrap_or_else(|| panic!("no host stream: {c}"));
    assert_eq!(host["file"], "diagnostics/host.jsonl");
    // A torn last row (the quit came mid-write) is not counted.
    let rows = host["rows"].as_u64().expect("rows");
    assert!(
        rows + 1 >= host_rows && rows <= host_rows && rows >= 3,
        "{rows} of {host_rows}: {c}"
    );
    let g = &c["generator"];
    assert!(
        g["samples"]
            .as_u64()
            .is_some_and(|n| n >= 1 && n <= generator_rows),
        "{g}"
    );
    assert!(
        g["verdict"]
            .as_str()
            .is_some_and(|v| v.starts_with("generator ")),
        "{g}"
    );
    // The server side is back for the verdicts and the report as well.
    assert!(run.join("diagnostics").join("evidence.json").is_file());
    assert!(
        s["notes"].to_string().contains("collectors: rebuilt"),
        "{}",
        s["notes"]
    );
}

/// Peak RSS (KiB) and output of a command run under `/usr/bin/time -v`.
fn measured(args: &[&std::ffi::OsStr]) -> (Output, u64, Duration) {
    let time = Path::new("/usr/bin/time");
    assert!(
        time.is_file(),
        "/usr/bin/time is missing: apt-get install time (tests/setup.sh installs it)"
    );
    let t = Instant::now();
    let o = Command::new(time)
        .arg("-v")
        .arg(env!("CARGO_BIN_EXE_brunt"))
        .args(args)
        .output()
        .expect("run brunt under /usr/bin/time");
    let took = t.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    let kb = err
        .lines()
        .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS in /usr/bin/time output: {err}"));
    (o, kb, took)
}

/// Issue 12.10: `brunt analyze` detects the format from the first bytes
/// and streams what it scans: a 200 MB file of random bytes and a 64 MB
/// text file that is no diagnostic are refused (exit 2) fast, in bounded
/// memory; real dumps and recordings still analyse.
#[test]
fn analyze_refuses_large_files_that_are_not_diagnostics_in_bounded_memory() {
    const RSS_BOUND_KB: u64 = 48 * 1024;
    let d = tempfile::tempdir().expect("tempdir");
    let random = d.path().join("random.bin");
    {
        use std::io::Write;
        let mut rng = fastrand::Rng::with_seed(12);
        let mut f = std::io::BufWriter::new(std::fs::File::create(&random).expect("create"));
        let mut chunk = vec![0u8; 1 << 20];
        for _ in 0..200 {
            rng.fill(&mut chunk);
            f.write_all(&chunk).expect("write");
        }
        f.flush().expect("flush");
    }
    let (o, kb, took) = measured(&["analyze".as_ref(), random.as_os_str()]);
    let text = out(&o);
    assert!(text.contains("binary data"), "{text}");
    assert!(
        text.contains("not a thread dump, JFR recording or pinning trace"),
        "{text}"
    );
    assert!(
        kb < RSS_BOUND_KB,
        "peak RSS {kb} KiB on 200 MB of random bytes"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    // The exit code is brunt's own, not time's.
    assert!(text.contains("Exit status: 2"), "{text}");

    // Text, but none of the formats: scanned in chunks, refused.
    let prose = d.path().join("app.log");
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&prose).expect("create"));
        let line = b"2026-12-01 12:00:00 INFO  com.acme.Shop - order 42 placed by \"margaret\"\n";
        for _ in 0..(64 << 20) / line.len() {
            f.write_all(line).expect("write");
        }
        f.flush().expect("flush");
    }
    let (o, kb, took) = measured(&["analyze".as_ref(), prose.as_os_str()]);
    let text = out(&o);
    assert!(text.contains("Exit status: 2"), "{text}");
    assert!(
        text.contains("not a thread dump, JFR recording or pinning trace"),
        "{text}"
    );
    assert!(kb < RSS_BOUND_KB, "peak RSS {kb} KiB on 64 MB of log text");
    // (A debug build scans ~15 MB/s on a busy 2-core machine; release far faster.)
    assert!(took < Duration::from_secs(40), "{took:?}");

    // Real diagnostics from a real JVM still analyse through the same entry.
    let target = java::JavaTarget::start(&java::jdk17(), &java::TargetOpts::default());
    let jvm = &target.proc;
    let dump = jvm.save("dump.txt", &jvm.thread_print());
    jvm.jfr_start("r", "default");
    std::thread::sleep(Duration::from_millis(500));
    let rec = jvm.jfr_stop("r");
    let (o, _, _) = measured(&[
        "analyze".as_ref(),
        "--json".as_ref(),
        dump.as_os_str(),
        rec.as_os_str(),
    ]);
    assert!(out(&o).contains("Exit status: 0"), "{}", out(&o));
    let a: serde_json::Value = serde_json::from_slice(&o.stdout).expect("analysis JSON");
    let kinds: Vec<&str> = a["inputs"]
        .as_array()
        .expect("inputs")
        .iter()
        .filter_map(|i| i["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["thread-dump-text", "jfr"], "{a}");
    assert!(
        a["inputs"][0]["threads"].as_u64().is_some_and(|n| n > 5),
        "{a}"
    );
}

/// `brunt demo-target` on `port`, ready when it accepts; killed on drop.
struct DemoTarget(Child);

impl DemoTarget {
    fn start(port: u16) -> DemoTarget {
        let child = brunt()
            .args(["demo-target", "--listen", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn demo-target");
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "demo-target never listened on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        DemoTarget(child)
    }
}

impl Drop for DemoTarget {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Already survived (issue 12's fault table): a target killed and started
/// again mid-run costs counted failures, never the schedule; answers resume.
#[test]
fn a_target_killed_and_restarted_mid_run_is_counted_and_the_load_resumes() {
    let port = tcp::free_port();
    let first = DemoTarget::start(port);
    let d = tempfile::tempdir().expect("tempdir");
    let p = write(d.path(), "restart.yaml", &format!(
            "name: restart\ntarget: {{ url: \"http://127.0.0.1:{port}\", connect_timeout: 1s, timeout: 2s }}\nrequests: [ {{ path: /fast }} ]\nshape: {{ constant: {{ rate: 50/s, duration: 9s }} }}\n"
        ));
    let run = d.path().join("run");
    let child = spawn_run(&p, &run, "--plain");
    wait_lines(&run.join("timeseries.csv"), 3, Duration::from_secs(30));
    drop(first); // SIGKILL: connections die with it
    std::thread::sleep(Duration::from_secs(2));
    let killed_until = lines(&run.join("timeseries.csv")) as u64;
    let _second = DemoTarget::start(port);
    let o = wait_with_limit(child, Duration::from_secs(40));
    let text = out(&o);
    assert!(
        o.status.code().is_some_and(|c| c != exit::FAILURE),
        "{text}"
    );
    let s = json(&run.join("summary.json"));
    let t = &s["totals"];
    let class = |c: &str| t["by_class"][c]["count"].as_u64().unwrap_or(0);
    let failed = class("connect_error") + class("reset") + class("other_error");
    assert!(failed > 0, "the outage left no failure: {t}");
    // The schedule went on: every planned request offered, every one accounted.
    let offered = t["offered"].as_u64().expect("offered");
    assert!((400..=500).contains(&offered), "offered {offered} of 450");
    assert_eq!(
        offered,
        t["requests"].as_u64().unwrap_or(0) + t["dropped"].as_u64().unwrap_or(0),
        "{t}"
    );
    // Answers again once it was back.
    let rows = brunt::metrics::series::read(&run.join("timeseries.csv")).expect("series");
    let ok_after: u64 = rows
        .iter()
        .filter(|r| r.second >= killed_until)
        .map(|r| r.count(brunt::metrics::Class::Ok))
        .sum();
    assert!(ok_after > 0, "no ok answer after the restart: {rows:?}");
}

/// Issue 12.8 with a real JVM: after a `kill -9` mid-run, `brunt report`
/// rebuilds the collectors' artifacts and target PID from
/// `diagnostics/collectors.jsonl`, and diagnoses the dumps into findings.
#[test]
fn report_after_a_kill_rebuilds_the_jvm_collectors_artifacts_and_findings() {
    let jdk = java::jdk17();
    let target = java::JavaTarget::start(&jdk, &java::TargetOpts::default());
    let d = tempfile::tempdir().expect("tempdir");
    let p = write(
        d.path(),
        "jvm.yaml",
        &format!(
            r#"
name: jvm-killed
target: {{ url: "http://127.0.0.1:{port}", timeout: 5s }}
requests: [ {{ path: "/contended?ms=20" }} ]
load: {{ connections: 16 }}
shape: {{ constant: {{ rate: 20/s, duration: 40s }} }}
collectors:
  target: {{ pid: {pid}, port: {port}, jcmd: "{jcmd}" }}
  collect:
    - use: jvm
      probes:
        thread-dump: {{ every: 1s }}
        thread-dump-json: {{ enabled: false }}
        heap: {{ enabled: false }}
        jfr: {{ enabled: false }}
"#,
            port = target.port,
            pid = target.proc.pid,
            jcmd = jdk.jcmd().display()
        ),
    );
    let run = d.path().join("run");
    let mut child = spawn_run_unheard(&p, &run);
    let events = run.join("diagnostics").join("collectors.jsonl");
    let artifacts_logged = || {
        std::fs::read_to_string(&events)
            .unwrap_or_default()
            .matches("\"event\":\"artifact\"")
            .count()
    };
    let t = Instant::now();
    while artifacts_logged() < 2 {
        if t.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("no two thread dumps within 60 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().expect("kill -9 brunt");
    let _ = child.wait();
    assert!(!run.join("summary.json").exists());
    let logged = artifacts_logged();
    let dumps = std::fs::read_dir(run.join("diagnostics"))
        .expect("diagnostics")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("thread-dump-"))
        .count();

    let o = brunt().arg("report").arg(&run).output().expect("report");
    assert_eq!(o.status.code(), Some(exit::INTERRUPTED), "{}", out(&o));
    let s = json(&run.join("summary.json"));
    let c = &s["collectors"];
    let arts = c["artifacts"].as_array().expect("artifacts");
    assert_eq!(arts.len(), logged, "{c}");
    // A dump being written at the kill may be on disk without its event.
    assert!(
        dumps >= logged && dumps <= logged + 1,
        "{dumps} files, {logged} logged"
    );
    for a in arts {
        assert_eq!(a["collector"], "jvm", "{a}");
        assert_eq!(a["probe"], "thread-dump", "{a}");
        assert_eq!(a["pid"].as_u64(), Some(u64::from(target.proc.pid)), "{a}");
        let f = a["file"].as_str().expect("file");
        assert!(run.join(f).is_file(), "{f}");
    }
    let pids: Vec<u64> = c["target_pids"]
        .as_array()
        .expect("target_pids")
        .iter()
        .filter_map(|p| p["pid"].as_u64())
        .collect();
    assert_eq!(pids, [u64::from(target.proc.pid)], "{c}");
    assert!(
        s["findings"].as_array().is_some_and(|f| !f.is_empty()),
        "no findings from {logged} dumps: {}",
        s["findings"]
    );
    assert!(run.join("findings.json").is_file());
    assert!(run.join("diagnostics").join("evidence.json").is_file());
}
