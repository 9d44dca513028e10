//! `setup:` and `teardown:` run once, against a server on 127.0.0.1 that
//! counts its setups and teardowns and hands out a token the load must
//! carry (it answers 401 without it): one run sets up once, tears down once
//! and sends every request authorised; four shards with `--control` set up
//! once between them and all carry shard 1's token; a failed setup sends no
//! load and exits 1; a stopped run still tears down; a failed teardown is
//! reported and the verdict stands; `{{ setup.NAME }}` no setup step
//! extracts is a located profile error. The token never reaches a run
//! directory. Every load is bounded: 40 requests a second for at most 2 s
//! (the stopped run's 30 s plan is stopped after 0.8 s).

#[path = "support/cmd.rs"]
mod cmd;
#[path = "support/shards.rs"]
mod shards;
use cmd::{brunt, out as text, wait_with_limit, write};
use shards::{free_port, json, merge, spawn_shard, unix_now, SHARDS};

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use brunt::profile::{Profile, ProfileError};

/// What the server saw.
#[derive(Default)]
struct Counts {
    /// `POST /seed`, answered or refused.
    setups: AtomicU64,
    /// `DELETE /seed` with the token.
    teardowns: AtomicU64,
    /// `GET /item` with the token.
    authorised: AtomicU64,
    /// Anything without the token (or with another).
    unauthorised: AtomicU64,
    /// `authorised` when the teardown came: no load after it.
    authorised_at_teardown: AtomicU64,
}

/// A keep-alive HTTP/1.1 server: `POST /seed` hands out the token (or 500
/// when `fail`), `GET /item` and `DELETE /seed` want `Authorization: Bearer
/// <token>`.
struct AuthServer {
    port: u16,
    token: String,
    counts: Arc<Counts>,
    stop: Arc<AtomicBool>,
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl AuthServer {
    fn start(fail: bool) -> AuthServer {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = l.local_addr().expect("addr").port();
        l.set_nonblocking(true).expect("nonblocking");
        let token = format!("sekrit-{:016x}", fastrand::u64(..));
        let counts = Arc::new(Counts::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (t, c, s) = (token.clone(), counts.clone(), stop.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((conn, _)) => {
                        let (t, c) = (t.clone(), c.clone());
                        let _ = conn.set_nonblocking(false);
                        std::thread::spawn(move || serve(conn, &t, &c, fail));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        AuthServer {
            port,
            token,
            counts,
            stop,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn n(&self, f: impl Fn(&Counts) -> &AtomicU64) -> u64 {
        f(&self.counts).load(Ordering::Relaxed)
    }
}

/// One connection's requests, in turn, until the client closes it.
fn serve(conn: TcpStream, token: &str, counts: &Counts, fail: bool) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let mut w = match conn.try_clone() {
        Ok(w) => w,
        Err(_) => return,
    };
    let mut r = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, path) = (
            parts.next().unwrap_or("").to_string(),
            parts.next().unwrap_or("").to_string(),
        );
        let (mut auth, mut length) = (String::new(), 0usize);
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                match k.to_ascii_lowercase().as_str() {
                    "authorization" => auth = v.trim().to_string(),
                    "content-length" => length = v.trim().parse().unwrap_or(0),
                    _ => {}
                }
            }
        }
        let mut body = vec![0u8; length];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let authorised = auth == format!("Bearer {token}");
        let (status, answer) = match (method.as_str(), path.as_str()) {
            ("POST", "/seed") => {
                counts.setups.fetch_add(1, Ordering::Relaxed);
                if fail {
                    ("500 Internal Server Error", "seeding broke\n".to_string())
                } else {
                    ("201 Created", format!("{{\"token\":\"{token}\"}}"))
                }
            }
            (_, "/item") | ("DELETE", "/seed") if !authorised => {
                counts.unauthorised.fetch_add(1, Ordering::Relaxed);
                ("401 Unauthorized", "who are you\n".to_string())
            }
            ("GET", "/item") => {
                counts.authorised.fetch_add(1, Ordering::Relaxed);
                ("200 OK", "item\n".to_string())
            }
            ("DELETE", "/seed") => {
                counts.teardowns.fetch_add(1, Ordering::Relaxed);
                let seen = counts.authorised.load(Ordering::Relaxed);
                counts.authorised_at_teardown.store(seen, Ordering::Relaxed);
                ("200 OK", "gone\n".to_string())
            }
            _ => ("404 Not Found", "no\n".to_string()),
        };
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: application/json\r\n\r\n",
            answer.len()
        );
        if w.write_all(head.as_bytes())
            .and_then(|()| w.write_all(answer.as_bytes()))
            .is_err()
        {
            return;
        }
    }
}

/// Seeds, reads the token, sends it with every request (a target header),
/// and unseeds at the end (the teardown sends the target header too).
fn profile(url: &str) -> String {
    format!(
        r#"
name: once
target:
  url: "{url}"
  headers: {{ Authorization: "Bearer {{{{ setup.token }}}}" }}
setup:
  - name: seed
    method: POST
    path: /seed
    expect: {{ status: [201] }}
    extract: {{ token: {{ json: /token }} }}
requests:
  - {{ path: /item }}
teardown:
  - {{ name: unseed, method: DELETE, path: /seed }}
load: {{ model: open, workers: 1, connections: 8 }}
shape: {{ constant: {{ rate: 40/s, duration: 2s }} }}
"#
    )
}

/// `brunt run PROFILE --out DIR --plain` to its end.
fn run_plain(profile: &Path, dir: &Path) -> std::process::Output {
    brunt()
        .arg("run")
        .arg(profile)
        .arg("--out")
        .arg(dir)
        .arg("--plain")
        .output()
        .expect("brunt run")
}

/// Every file under `root` that holds `secret`.
fn files_holding(root: &Path, secret: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if std::fs::read(&p)
                .expect("read")
                .windows(secret.len())
                .any(|w| w == secret.as_bytes())
            {
                found.push(p.display().to_string());
            }
        }
    }
    found
}

/// Every shard of `prof`, talking through `control`: (number, run directory, process).
fn spawn_all(
    prof: &Path,
    url: &str,
    root: &Path,
    start_at: f64,
    control: &str,
) -> Vec<(u32, std::path::PathBuf, std::process::Child)> {
    (1..=SHARDS)
        .map(|i| {
            let (dir, child) = spawn_shard(prof, url, root, i, start_at, &["--control", control]);
            (i, dir, child)
        })
        .collect()
}

#[test]
fn one_run_sets_up_once_carries_the_token_and_tears_down_once() {
    let srv = AuthServer::start(false);
    let tmp = tempfile::tempdir().expect("tmp");
    let prof = write(tmp.path(), "once.yaml", &profile(&srv.url()));
    let v = brunt()
        .arg("validate")
        .arg(&prof)
        .output()
        .expect("validate");
    assert!(v.status.success(), "{}", text(&v));
    assert!(
        text(&v).contains("setup (once): seed") && text(&v).contains("teardown (once): unseed"),
        "{}",
        text(&v)
    );

    let dir = tmp.path().join("run");
    let o = run_plain(&prof, &dir);
    let said = text(&o);
    assert_eq!(o.status.code(), Some(0), "{said}");
    assert_eq!(srv.n(|c| &c.setups), 1, "{said}");
    assert_eq!(srv.n(|c| &c.teardowns), 1, "{said}");
    assert_eq!(srv.n(|c| &c.unauthorised), 0, "{said}");
    let s = json(&dir.join("summary.json"));
    let sent = s["totals"]["requests"].as_u64().unwrap_or(0);
    assert!(sent >= 60, "{sent} requests: {said}");
    assert_eq!(srv.n(|c| &c.authorised), sent, "the setup is not measured");
    assert_eq!(srv.n(|c| &c.authorised_at_teardown), sent);
    assert_eq!(s["totals"]["errors"], 0, "{}", s["totals"]);
    let setup = &s["setup"];
    assert_eq!(setup["ok"], true, "{setup}");
    assert_eq!(setup["steps"][0]["name"], "seed", "{setup}");
    assert_eq!(setup["steps"][0]["status"], 201, "{setup}");
    assert!(setup["took_ms"].as_f64().unwrap_or(-1.0) > 0.0, "{setup}");
    assert_eq!(setup["extracted"][0], "token", "{setup}");
    assert_eq!(s["teardown"]["ok"], true, "{}", s["teardown"]);
    assert!(said.contains("setup: 1 step(s) ok in"), "{said}");
    assert!(said.contains("teardown: 1 step(s) ok in"), "{said}");

    // `brunt report` judges the directory again and keeps the records.
    let r = brunt().arg("report").arg(&dir).output().expect("report");
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    assert_eq!(json(&dir.join("summary.json"))["setup"], *setup);
    assert_eq!(files_holding(&dir, &srv.token), Vec::<String>::new());
}

#[test]
fn a_failed_setup_sends_no_load_and_exits_1() {
    let srv = AuthServer::start(true);
    let tmp = tempfile::tempdir().expect("tmp");
    let prof = write(tmp.path(), "once.yaml", &profile(&srv.url()));
    let dir = tmp.path().join("run");
    let o = run_plain(&prof, &dir);
    let said = text(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(
        said.contains("setup FAILED: step seed: HTTP 500")
            && said.contains("nothing of the load was sent"),
        "{said}"
    );
    assert_eq!(srv.n(|c| &c.setups), 1);
    assert_eq!(srv.n(|c| &c.authorised) + srv.n(|c| &c.unauthorised), 0);
    assert_eq!(srv.n(|c| &c.teardowns), 0, "no teardown without a setup");
    // The run directory says why.
    let once = json(&dir.join("setup.json"));
    assert_eq!(once["setup"]["ok"], false, "{once}");
    assert_eq!(once["setup"]["steps"][0]["status"], 500, "{once}");
    let events = std::fs::read_to_string(dir.join("events.jsonl")).expect("events");
    assert!(events.contains("setup_failed"), "{events}");
    assert!(!dir.join("summary.json").exists());
}

#[test]
fn a_setup_name_no_setup_step_extracts_is_a_located_error() {
    let good = profile("http://127.0.0.1:9");
    for (text, line, needle) in [
        (
            good.replace(
                "  - { path: /item }",
                "  - { path: \"/item?{{ setup.nope }}\" }",
            ),
            13,
            "`setup.nope`: no `setup:` step extracts it",
        ),
        (
            // Written unlike the header's, so the error finds this one.
            good.replace("    path: /seed\n", "    path: \"/seed/{{setup.token}}\"\n"),
            9,
            "not known yet inside `setup:`",
        ),
        (
            // A socket is load: never a step sent once (it would go as a GET).
            good.replace(
                "  - { name: unseed, method: DELETE, path: /seed }",
                "  - { name: unseed, path: /ws, ws: { send: [bye] } }",
            ),
            15,
            "a `ws:` step cannot be a teardown step",
        ),
    ] {
        match Profile::from_yaml(&text, Path::new("once.yaml")) {
            Err(ProfileError::Syntax {
                line: l, message, ..
            }) => {
                assert_eq!(l, line, "{message}");
                assert!(message.contains(needle), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
    // Through the CLI: file, line and column, exit 2.
    let tmp = tempfile::tempdir().expect("tmp");
    let bad = good.replace(
        "  - { path: /item }",
        "  - { path: \"/item?{{ setup.nope }}\" }",
    );
    let prof = write(tmp.path(), "bad.yaml", &bad);
    let o = brunt()
        .arg("validate")
        .arg(&prof)
        .output()
        .expect("validate");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("bad.yaml:13:"), "{}", text(&o));
}

#[test]
fn four_shards_with_control_set_up_once_and_all_carry_shard_1s_token() {
    let srv = AuthServer::start(false);
    let root = tempfile::tempdir().expect("tmp");
    let prof = write(root.path(), "once.yaml", &profile(&srv.url()));

    // Without --control every shard would set up on its own: refused.
    let (_, lone) = spawn_shard(&prof, &srv.url(), root.path(), 2, unix_now(), &[]);
    let lone = wait_with_limit(lone, Duration::from_secs(20));
    assert_eq!(lone.status.code(), Some(2), "{}", text(&lone));
    assert!(text(&lone).contains("needs --control"), "{}", text(&lone));
    assert_eq!(srv.n(|c| &c.setups), 0);

    let control = format!("127.0.0.1:{}", free_port());
    let start_at = unix_now() + 3.0;
    let children = spawn_all(&prof, &srv.url(), root.path(), start_at, &control);
    let mut dirs = Vec::new();
    let mut sent = 0;
    for (i, dir, child) in children {
        let o = wait_with_limit(child, Duration::from_secs(40));
        assert_eq!(o.status.code(), Some(0), "shard {i}: {}", text(&o));
        assert!(!text(&o).contains("did not say"), "shard {i}: {}", text(&o));
        let s = json(&dir.join("summary.json"));
        let n = s["totals"]["requests"].as_u64().unwrap_or(0);
        assert!(n >= 10, "shard {i}: {n} requests");
        assert_eq!(s["totals"]["errors"], 0, "shard {i}: {}", s["totals"]);
        assert_eq!(s["setup"]["ok"], true, "shard {i}: {}", s["setup"]);
        assert_eq!(s["setup"]["shard"], 1, "shard {i}: {}", s["setup"]);
        assert_eq!(
            s["teardown"].is_null(),
            i != 1,
            "shard {i}: {}",
            s["teardown"]
        );
        sent += n;
        dirs.push(dir);
    }
    assert_eq!(srv.n(|c| &c.setups), 1, "one setup for the whole run");
    assert_eq!(srv.n(|c| &c.teardowns), 1, "one teardown for the whole run");
    assert_eq!(srv.n(|c| &c.unauthorised), 0);
    assert_eq!(srv.n(|c| &c.authorised), sent);
    assert_eq!(
        srv.n(|c| &c.authorised_at_teardown),
        sent,
        "the teardown came after every shard's load"
    );

    let merged = root.path().join("merged");
    let refs: Vec<&Path> = dirs.iter().map(|d| d.as_path()).collect();
    let m = merge(&refs, &merged);
    assert!(m.status.success(), "{}", text(&m));
    let s = json(&merged.join("summary.json"));
    assert_eq!(s["setup"]["shard"], 1, "{}", s["setup"]);
    assert_eq!(s["teardown"]["ok"], true, "{}", s["teardown"]);
    assert_eq!(files_holding(root.path(), &srv.token), Vec::<String>::new());
}

/// A run stopped mid-way (as by Ctrl-C) still tears down, and says it was interrupted.
#[test]
fn a_stopped_run_still_tears_down() {
    let srv = AuthServer::start(false);
    let tmp = tempfile::tempdir().expect("tmp");
    let text = profile(&srv.url()).replace("duration: 2s", "duration: 30s");
    let p = Profile::from_yaml(&text, Path::new("once.yaml")).expect("profile");
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(800));
        flag.store(true, Ordering::Relaxed);
    });
    let r = brunt::run::execute(
        &p,
        brunt::run::RunOptions {
            out: Some(tmp.path().join("run")),
            progress: brunt::run::Progress::Quiet,
            stop: Some(stop),
            ..Default::default()
        },
    )
    .expect("the run");
    assert!(r.summary.interrupted, "{:?}", r.summary.stopped_reason);
    assert_eq!(r.exit_code(), 105);
    assert_eq!(srv.n(|c| &c.setups), 1);
    assert_eq!(srv.n(|c| &c.teardowns), 1);
    assert!(r.summary.teardown.as_ref().is_some_and(|t| t.ok));
    assert_eq!(srv.n(|c| &c.unauthorised), 0);
}

/// A teardown that fails is reported and leaves the load's verdict (and exit code) as it is.
#[test]
fn a_failed_teardown_is_reported_and_the_verdict_stands() {
    let srv = AuthServer::start(false);
    let tmp = tempfile::tempdir().expect("tmp");
    let text = profile(&srv.url())
        .replace("duration: 2s", "duration: 1s")
        .replace("path: /seed }", "path: /nowhere }");
    let p = Profile::from_yaml(&text, Path::new("once.yaml")).expect("profile");
    let r = brunt::run::execute(
        &p,
        brunt::run::RunOptions {
            out: Some(tmp.path().join("run")),
            progress: brunt::run::Progress::Quiet,
            ..Default::default()
        },
    )
    .expect("the run");
    let t = r.summary.teardown.as_ref().expect("a teardown record");
    assert!(!t.ok, "{t:?}");
    assert_eq!(t.steps[0].status, Some(404), "{t:?}");
    assert!(r.summary.passed);
    assert_eq!(r.exit_code(), 0);
    assert!(
        r.summary
            .notes
            .iter()
            .any(|n| n.contains("teardown FAILED") && n.contains("the load's verdict stands")),
        "{:?}",
        r.summary.notes
    );
}

/// Shard 1's setup fails: every shard exits 1 with its reason, and no shard sends load.
#[test]
fn a_failed_setup_on_shard_1_stops_every_shard() {
    let srv = AuthServer::start(true);
    let root = tempfile::tempdir().expect("tmp");
    let prof = write(root.path(), "once.yaml", &profile(&srv.url()));
    let control = format!("127.0.0.1:{}", free_port());
    let start_at = unix_now() + 2.0;
    let children = spawn_all(&prof, &srv.url(), root.path(), start_at, &control);
    for (i, dir, child) in children {
        let o = wait_with_limit(child, Duration::from_secs(40));
        assert_eq!(o.status.code(), Some(1), "shard {i}: {}", text(&o));
        assert!(
            text(&o).contains("setup FAILED (on shard 1): step seed: HTTP 500"),
            "shard {i}: {}",
            text(&o)
        );
        let once = json(&dir.join("setup.json"));
        assert_eq!(once["setup"]["ok"], false, "shard {i}: {once}");
    }
    assert_eq!(srv.n(|c| &c.setups), 1);
    assert_eq!(srv.n(|c| &c.authorised) + srv.n(|c| &c.unauthorised), 0);
}
