//! What a person reads first, end to end through the `brunt` binary: the
//! errors table of a server answering mixed failures on 127.0.0.1, the
//! shipped profiles showing their shape on the built-in target, and the
//! terminal within 80 columns (tmux), with colour only where it belongs.

#[path = "support/cmd.rs"]
mod cmd;
#[path = "support/tcp.rs"]
mod tcp;
use cmd::{brunt, out, write};

use std::path::{Path, PathBuf};
use std::time::Duration;

fn repo(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

fn summary(run: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap()
}

/// A server on 127.0.0.1 that answers by path, keeping connections alive:
/// `/ok` 200 "welcome", `/fail` 500 with a JSON body, `/missing` 404,
/// `/check` 200 without "welcome", `/reset` reads the request and resets
/// the connection (SO_LINGER 0).
fn mixed_failures(
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> (u16, std::thread::JoinHandle<()>) {
    use std::io::{BufRead, BufReader, Write};
    tcp::serve(stop, |c| {
        std::thread::spawn(move || {
            let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
            let Ok(w) = c.try_clone() else { return };
            let mut w = w;
            let mut r = BufReader::new(c);
            loop {
                let mut first = String::new();
                if r.read_line(&mut first).unwrap_or(0) == 0 {
                    return;
                }
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                        break;
                    }
                }
                let path = first.split(' ').nth(1).unwrap_or("/");
                let (status, body) = match path {
                    "/ok" => ("200 OK", "welcome"),
                    "/fail" => ("500 Internal Server Error", "{\"error\":\"db down\"}"),
                    "/missing" => ("404 Not Found", "no such page"),
                    "/check" => ("200 OK", "something else"),
                    _ => {
                        let s = socket2::Socket::from(w);
                        let _ = s.set_linger(Some(Duration::ZERO));
                        return;
                    }
                };
                let answer = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                if w.write_all(answer.as_bytes()).is_err() {
                    return;
                }
            }
        });
    })
}

#[test]
fn the_errors_table_names_statuses_messages_checks_and_samples_and_adds_up() {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (port, server) = mixed_failures(stop.clone());
    let d = tempfile::tempdir().unwrap();
    let check = r#"expect: { body_contains: welcome, sample: 100% }"#;
    let profile = write(
        d.path(),
        "mixed.yaml",
        &format!(
            r#"
name: mixed
target: {{ url: "http://127.0.0.1:{port}", timeout: 2s }}
requests:
  - {{ name: home, path: /ok, weight: 4, {check} }}
  - {{ name: order, path: /fail, weight: 2 }}
  - {{ name: lost, path: /missing, weight: 1 }}
  - {{ name: stale, path: /check, weight: 1, {check} }}
  - {{ name: cut, path: /reset, weight: 1, retry: never }}
load: {{ connections: 8, workers: 1 }}
shape: {{ constant: {{ rate: 200/s, duration: 2s }} }}
"#
        ),
    );
    let run = d.path().join("run");
    let o = brunt()
        .args(["run", "--plain"])
        .arg(&profile)
        .arg("--out")
        .arg(&run)
        .output()
        .unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = server.join();
    let text = out(&o);
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["meta"]["protocol"], "HTTP/1.1", "the protocol spoken");
    let table = &s["errors"];
    let rows = table["rows"].as_array().expect("an errors table");
    let count = |class: &str, field: &str, value: serde_json::Value| -> u64 {
        rows.iter()
            .filter(|r| r["class"] == class && r[field] == value)
            .map(|r| r["count"].as_u64().unwrap())
            .sum()
    };
    let by_class = &s["totals"]["by_class"];
    let n = |class: &str| by_class[class]["count"].as_u64().unwrap_or(0);
    // Every class's rows add up to its count, exactly.
    for class in ["http_error", "check_failed", "reset"] {
        let rows_sum: u64 = rows
            .iter()
            .filter(|r| r["class"] == class)
            .map(|r| r["count"].as_u64().unwrap())
            .sum();
        assert!(n(class) > 0, "{class}: {by_class}");
        assert_eq!(rows_sum, n(class), "{class}: {table}");
    }
    let statuses =
        count("http_error", "status", 500.into()) + count("http_error", "status", 404.into());
    assert_eq!(statuses, n("http_error"), "{table}");
    assert!(count("http_error", "status", 500.into()) > count("http_error", "status", 404.into()));
    assert_eq!(
        count("check_failed", "check", "body_contains \"welcome\"".into()),
        n("check_failed"),
        "{table}"
    );
    assert!(
        rows.iter()
            .all(|r| r["class"] != "check_failed" || r["request"] == "stale"),
        "{table}"
    );
    let resets: Vec<&str> = rows
        .iter()
        .filter(|r| r["class"] == "reset")
        .map(|r| r["message"].as_str().unwrap())
        .collect();
    assert!(
        resets
            .iter()
            .all(|m| m.contains("reset") || m.contains("closed")),
        "{resets:?}"
    );
    let samples = table["samples"].as_array().expect("samples");
    assert!(
        samples
            .iter()
            .any(|x| x["status"] == 500 && x["body"] == "{\"error\":\"db down\"}"),
        "{table}"
    );
    assert!(
        samples.iter().any(|x| x["body"] == "something else"),
        "{table}"
    );
    // Piped: no colour; the summary (after the plain progress lines)
    // within 80 columns, every line.
    assert!(
        !text.contains('\u{1b}'),
        "no escape codes when piped: {text}"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("result: "), "{text}");
    for l in stdout.lines() {
        assert!(
            l.chars().count() <= 80,
            "{} columns: {l}\n{stdout}",
            l.chars().count()
        );
    }
    assert!(text.contains("report: file:///"), "{text}");
    // The terminal shows the table.
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("errors ("))
        .collect();
    assert!(lines.len() > 4, "{text}");
    let five_hundreds = count("http_error", "status", 500.into());
    assert!(
        lines.iter().any(|l| l.contains("HTTP 500")
            && l.contains(&five_hundreds.to_string())
            && l.contains("order")),
        "{text}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("check body_contains \"welcome\"")),
        "{text}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("sample order · HTTP 500: {\"error\":\"db down\"}")),
        "{text}"
    );
    // And report.html.
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(
        html.contains("<h2 id=\"errors\">Errors</h2>"),
        "no errors section"
    );
    assert!(
        html.contains("{&quot;error&quot;:&quot;db down&quot;}"),
        "sample body in the page"
    );
}

/// `brunt run` of a shipped profile with its durations shortened (`--set`),
/// nothing else changed; its output and run directory.
fn shipped(name: &str, sets: &[&str], run: &Path) -> std::process::Output {
    let mut c = brunt();
    c.args(["run", "--plain"])
        .arg(repo(&format!("profiles/{name}")))
        .arg("--out")
        .arg(run);
    for s in sets {
        c.args(["--set", s]);
    }
    c.output().unwrap()
}

#[test]
fn the_shipped_spike_goes_past_the_demos_capacity_sheds_and_recovers() {
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("spike");
    let o = shipped(
        "spike.yaml",
        &[
            "shape.spike.baseline_duration=3s",
            "shape.spike.spike_duration=4s",
            "shape.spike.recovery_duration=4s",
        ],
        &run,
    );
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let s = summary(&run);
    let phase = |name: &str| {
        s["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()
            .clone()
    };
    let (base, spike, rec) = (phase("baseline"), phase("spike"), phase("recovery"));
    // Past capacity (4 admitted at 5 ms each: 800/s): a good part of the
    // spike is shed, the calm phases next to nothing.
    let shed_share =
        |p: &serde_json::Value| p["shed"].as_f64().unwrap() / p["requests"].as_f64().unwrap();
    assert!(shed_share(&spike) > 0.15, "spike sheds: {spike}");
    assert!(
        shed_share(&base) < 0.05 && shed_share(&rec) < 0.05,
        "{base} {rec}"
    );
    assert_eq!(s["totals"]["errors"], 0, "503s are shed, not errors");
    let text = s["verdicts"]["spike"]["text"].as_str().unwrap();
    assert!(text.contains("shed (503/429"), "{text}");
    assert!(
        s["verdicts"]["spike"]["back_after_end_s"].is_number(),
        "p99 came back after the spike: {text}"
    );
    assert_eq!(s["passed"], true);
    let o = out(&o);
    assert!(
        o.contains("HTTP 503"),
        "the errors table names the status: {o}"
    );
}

#[test]
fn the_shipped_soak_watches_the_demo_with_a_local_collector_and_passes() {
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("soak");
    // The shipped soak, shortened to a window a per-hour verdict can read
    // (≥ 60 s and ≥ 10 samples after the warm-up).
    let o = shipped(
        "soak.yaml",
        &[
            "shape.soak.ramp_up=2s",
            "shape.soak.warmup=10s",
            "shape.soak.duration=80s",
        ],
        &run,
    );
    let s = summary(&run);
    assert_eq!(s["server_side"]["status"], "ok", "{}", out(&o));
    let soak = &s["verdicts"]["soak"];
    let judged: Vec<&str> = soak["trends"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["threshold_per_hour"].is_number())
        .map(|t| t["series"].as_str().unwrap())
        .collect();
    for series in ["target.rss_bytes", "target.threads", "target.fds"] {
        assert!(judged.contains(&series), "{series} judged: {judged:?}");
    }
    assert_eq!(soak["status"], "no_leak", "{}", soak["text"]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
}
