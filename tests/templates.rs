//! Realistic load: templates and feeders, against real servers on 127.0.0.1
//! (the built-in demo target, which counts `/cache/{id}` requests per id),
//! and the CLI's handling of their errors. Every load is bounded in count
//! and time.

#[path = "support/load.rs"]
mod load;

#[path = "support/cmd.rs"]
mod cmd;
use cmd::{brunt, out as text, write};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::SystemTime;

use brunt::demo::DemoConfig;
use brunt::profile::{Profile, ProfileError};

fn summary(dir: &Path) -> serde_json::Value {
    let t = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json");
    serde_json::from_str(&t).expect("summary parses")
}

/// Pearson's chi-square of `counts` against a uniform spread.
fn chi_square(counts: &[u64]) -> f64 {
    let n: u64 = counts.iter().sum();
    let e = n as f64 / counts.len() as f64;
    counts.iter().map(|c| (*c as f64 - e).powi(2) / e).sum()
}

#[test]
fn random_values_spread_uniformly_at_the_server() {
    let _g = load::serial();
    // 3000 arrivals in 2 s, half on each request.
    let load::DemoRun { srv: server, r, .. } = load::demo_run(
        DemoConfig::default(),
        r#"
name: spread
target: { url: "{url}" }
requests:
  - { path: "/cache/{{ random.int(1, 20) }}" }
  - { path: "/cache/c-{{ random.choice(a, b, 'c') }}" }
load: { model: open, workers: 2, connections: 16 }
shape: { constant: { rate: 1500/s, duration: 2s } }
"#,
    );
    assert_eq!(r.summary.totals.errors, 0, "no errors");
    let counts = server.cache_counts();
    let ints: Vec<u64> = (1..=20)
        .map(|i| counts.get(&i.to_string()).copied().unwrap_or(0))
        .collect();
    let choices: Vec<u64> = ["c-a", "c-b", "c-c"]
        .iter()
        .map(|k| counts.get(*k).copied().unwrap_or(0))
        .collect();
    let total: u64 = counts.values().sum();
    assert_eq!(
        ints.iter().sum::<u64>() + choices.iter().sum::<u64>(),
        total,
        "no id outside the range: {counts:?}"
    );
    assert!(
        total >= 2500,
        "most of the 3000 arrivals were sent ({total})"
    );
    assert!(
        ints.iter().all(|c| *c > 0),
        "every id 1..=20 drawn: {ints:?}"
    );
    // 19 and 2 degrees of freedom: the 0.1 % critical values.
    let (x_int, x_choice) = (chi_square(&ints), chi_square(&choices));
    assert!(x_int < 43.8, "random.int spread: chi² {x_int:.1} {ints:?}");
    assert!(
        x_choice < 13.8,
        "random.choice spread: chi² {x_choice:.1} {choices:?}"
    );
    assert_eq!(server.stats().cache_entries, 23);
}

#[test]
fn circular_jsonl_feeder_hands_rows_round_and_round() {
    let _g = load::serial();
    let server = load::demo(DemoConfig::default());
    let tmp = tempfile::tempdir().expect("tmp");
    let rows = write(
        tmp.path(),
        "ids.jsonl",
        "{\"id\": \"a\", \"n\": 1}\n{\"id\": \"b\", \"n\": 2}\n\n{\"id\": \"c d\", \"n\": 3}\n",
    );
    let yaml = format!(
        r#"
name: circular
target: {{ url: "{{url}}" }}
feeders: {{ ids: {{ file: "{}" }} }}
requests: [ {{ path: "/cache/{{{{ feeder.ids.id }}}}-{{{{ feeder.ids.n }}}}" }} ]
load: {{ model: closed, workers: 1 }}
shape: {{ constant: {{ vus: 1, duration: 1s }} }}
"#,
        rows.display()
    );
    let p = load::profile(&yaml, &server.base_url());
    let _ = load::run(&p, &tmp.path().join("run"));
    let counts = server.cache_counts();
    let mut keys: Vec<&String> = counts.keys().collect();
    keys.sort();
    // Columns of one row together; values percent-encoded in the path.
    assert_eq!(keys, ["a-1", "b-2", "c%20d-3"]);
    let (lo, hi) = (
        counts.values().min().copied().unwrap_or(0),
        counts.values().max().copied().unwrap_or(0),
    );
    assert!(lo > 10 && hi - lo <= 1, "round and round: {counts:?}");
}

#[test]
fn templated_bodies_reach_the_server_filled_in() {
    let _g = load::serial();
    let server = load::demo(DemoConfig::default());
    let tmp = tempfile::tempdir().expect("tmp");
    let users = write(
        tmp.path(),
        "u.csv",
        "name,plan\nada,pro\n\"o'neil, j\",free\n",
    );
    // /echo answers the body: every answer is checked against the shape it must have.
    let yaml = format!(
        r#"
name: bodies
target: {{ url: "{{url}}" }}
feeders: {{ users: {{ file: "{}", mode: random }} }}
requests:
  - method: POST
    path: /echo
    headers: {{ Content-Type: application/json }}
    body: '{{"n": {{{{ random.int(5, 9) }}}}, "u": "{{{{ feeder.users.name }}}}", "p": "{{{{ feeder.users.plan }}}}", "id": "{{{{ uuid }}}}", "s": {{{{ seq }}}}, "t": {{{{ now.unix_ms }}}}}}'
    expect:
      status: [200]
      body_regex: '^\{{"n": [5-9], "u": "(ada", "p": "pro|o''neil, j", "p": "free)", "id": "[0-9a-f]{{8}}-[0-9a-f]{{4}}-4[0-9a-f]{{3}}-[89ab][0-9a-f]{{3}}-[0-9a-f]{{12}}", "s": \d+, "t": 1\d{{12}}\}}$'
      sample: 100%
load: {{ model: open, workers: 2, connections: 4 }}
shape: {{ constant: {{ rate: 200/s, duration: 1s }} }}
"#,
        users.display()
    );
    let p = load::profile(&yaml, &server.base_url());
    let r = load::run(&p, &tmp.path().join("run"));
    assert!(
        r.summary.totals.requests >= 180,
        "{}",
        r.summary.totals.requests
    );
    assert_eq!(
        r.summary.totals.errors, 0,
        "every body filled in as expected"
    );
    assert_eq!(server.stats().echo.requests, r.summary.totals.requests);
}

/// 4 shard processes (2 workers each) share one `unique` feeder of 400
/// rows: the server sees every row exactly once, and each shard stops when
/// its share runs out, saying so.
#[test]
fn unique_feeder_rows_are_never_repeated_across_shards() {
    let _g = load::serial();
    let server = load::demo(DemoConfig {
        threads: 2,
        ..DemoConfig::default()
    });
    let tmp = tempfile::tempdir().expect("tmp");
    let mut csv = String::from("id,name\n");
    for i in 0..400 {
        csv.push_str(&format!("u{i},n{i}\n"));
    }
    write(tmp.path(), "users.csv", &csv);
    // 800/s in total for up to 5 s: the 400 rows run out after ~0.5 s.
    let profile = write(
        tmp.path(),
        "unique.yaml",
        r#"
name: unique
target: { url: "http://127.0.0.1:9" }
feeders: { users: { file: users.csv, mode: unique } }
requests: [ { path: "/cache/{{ feeder.users.id }}-{{ feeder.users.name }}" } ]
load: { model: open, workers: 2, connections: 32 }
shape: { constant: { rate: 800/s, duration: 5s } }
"#,
    );
    let start = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64()
        + 1.5;
    let children: Vec<(PathBuf, std::process::Child)> = (1..=4)
        .map(|i| {
            let dir = tmp.path().join(format!("shard-{i}"));
            let child = brunt()
                .args(["run", "--quiet", "--target", &server.base_url()])
                .arg(&profile)
                .args(["--shard", &format!("{i}/4")])
                .args(["--start-at", &format!("{start:.3}")])
                .arg("--out")
                .arg(&dir)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("brunt run starts");
            (dir, child)
        })
        .collect();
    for (dir, child) in children {
        let o = child.wait_with_output().expect("shard ends");
        assert!(
            matches!(o.status.code(), Some(0) | Some(99)),
            "{}",
            text(&o)
        );
        let s = summary(&dir);
        let reason = s["stopped_reason"].as_str().unwrap_or("");
        assert!(
            reason.contains("feeder `users`") && reason.contains("100"),
            "{}: {reason:?}",
            dir.display()
        );
        // Exactly its 100 rows were sent; an arrival that fell due between
        // the last row and the stop reaching the other worker is accounted
        // for as unfinished (never sent), not as a request.
        let p = &s["phases"][0];
        assert_eq!(
            p["ok"].as_u64(),
            Some(100),
            "each shard sent its 100 rows: {s}"
        );
        let unfinished = p["by_class"]["unfinished"]["count"].as_u64().unwrap_or(0);
        assert_eq!(
            p["requests"].as_u64(),
            Some(100 + unfinished),
            "nothing but unfinished beyond the rows: {s}"
        );
        assert!(unfinished <= 8, "a few arrivals at most: {s}");
    }
    // Merged, they stopped by design (not as if someone pressed Ctrl-C).
    let dirs: Vec<PathBuf> = (1..=4)
        .map(|i| tmp.path().join(format!("shard-{i}")))
        .collect();
    let merged = tmp.path().join("merged");
    let o = brunt()
        .arg("merge")
        .args(&dirs)
        .arg("--out")
        .arg(&merged)
        .output()
        .expect("brunt merge");
    assert!(
        matches!(o.status.code(), Some(0) | Some(99)),
        "{}",
        text(&o)
    );
    let m = summary(&merged);
    assert_eq!(m["stop_kind"], "data_exhausted", "{m}");
    assert_eq!(m["interrupted"], false, "{m}");
    let reason = m["stopped_reason"].as_str().unwrap_or("");
    assert!(
        reason.contains("shard 1: ") && reason.contains("feeder `users`"),
        "{reason}"
    );
    let counts: HashMap<String, u64> = server.cache_counts();
    assert_eq!(counts.len(), 400, "every row used");
    for i in 0..400 {
        let key = format!("u{i}-n{i}");
        assert_eq!(counts.get(&key), Some(&1), "row {key} exactly once");
    }
}

const SECRET_PROFILE: &str = r#"
name: secret
target:
  url: builtin
  headers: { Authorization: "Bearer {{ env.BRUNT_TEST_SECRET }}" }
requests:
  - method: POST
    path: /echo
    body: "token={{ env.BRUNT_TEST_SECRET }}"
    expect: { status: [200], body_contains: "token=", sample: 100% }
load: { model: open, workers: 1, connections: 4 }
shape: { constant: { rate: 100/s, duration: 1s } }
"#;

#[test]
fn a_missing_environment_variable_exits_2_naming_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let p = write(tmp.path(), "secret.yaml", SECRET_PROFILE);
    let run_dir = tmp.path().join("run");
    for cmd in ["validate", "run"] {
        let mut c = brunt();
        c.arg(cmd).arg(&p).env_remove("BRUNT_TEST_SECRET");
        if cmd == "run" {
            c.arg("--out").arg(&run_dir);
        }
        let o = c.output().expect("brunt runs");
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", text(&o));
        assert!(
            text(&o).contains("BRUNT_TEST_SECRET"),
            "{cmd}: {}",
            text(&o)
        );
    }
    assert!(!tmp.path().join("run").exists(), "nothing written");
    // --env supplies it; it beats the process environment.
    let o = brunt()
        .arg("validate")
        .arg(&p)
        .args(["--env", "BRUNT_TEST_SECRET=x"])
        .env_remove("BRUNT_TEST_SECRET")
        .output()
        .expect("brunt runs");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn the_secret_never_reaches_the_run_directory() {
    let _g = load::serial();
    let tmp = tempfile::tempdir().expect("tmp");
    let p = write(tmp.path(), "secret.yaml", SECRET_PROFILE);
    let secret = "s3cr3t-7f2c9a-value";
    let run = tmp.path().join("run");
    let o = brunt()
        .args(["run", "--quiet"])
        .arg(&p)
        .arg("--out")
        .arg(&run)
        // The process environment has a decoy; --env wins.
        .env("BRUNT_TEST_SECRET", "decoy-from-environment")
        .args(["--env", &format!("BRUNT_TEST_SECRET={secret}")])
        .output()
        .expect("brunt runs");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s = summary(&run);
    assert_eq!(s["totals"]["errors"].as_u64(), Some(0), "sent and checked");
    assert!(s["totals"]["requests"].as_u64().unwrap_or(0) >= 90);
    let mut all = Vec::new();
    files(&run, &mut all);
    assert!(all.len() >= 4, "{all:?}");
    for f in &all {
        let bytes = std::fs::read(f).expect("read");
        let t = String::from_utf8_lossy(&bytes);
        assert!(!t.contains(secret), "{} holds the secret", f.display());
        assert!(!t.contains("decoy-from-environment"), "{}", f.display());
    }
    let kept = std::fs::read_to_string(run.join("profile.yaml")).expect("profile.yaml");
    assert!(kept.contains("{{ env.BRUNT_TEST_SECRET }}"), "{kept}");
    assert!(!text(&o).contains(secret));
}

#[test]
fn template_errors_carry_file_line_and_column() {
    let tmp = tempfile::tempdir().expect("tmp");
    let cases = [
        // (the request line, the column of `{{`, a word of the message)
        (
            r#"  - { path: "/a/{{ random.int(1) }}" }"#,
            17,
            "two integers",
        ),
        (r#"  - { path: "/a/{{ nope }}" }"#, 17, "unknown expression"),
        (r#"  - { path: "/a/{{ uuid" }"#, 17, "closing"),
        (
            r#"  - { path: "/a", headers: { X: "{{ feeder.nobody.id }}" } }"#,
            34,
            "no feeder named `nobody`",
        ),
    ];
    for (line, col, word) in cases {
        let yaml = format!(
            "name: bad\ntarget: {{ url: builtin }}\nrequests:\n{line}\nshape: {{ constant: {{ rate: 1/s, duration: 1s }} }}\n"
        );
        match Profile::from_yaml(&yaml, Path::new("bad.yaml")) {
            Err(ProfileError::Syntax {
                line: l,
                column: c,
                message,
                ..
            }) => {
                assert_eq!((l, c), (4, col), "{line}: {message}");
                assert!(message.contains(word), "{message}");
            }
            other => panic!("{line}: {other:?}"),
        }
        let p = write(tmp.path(), "bad.yaml", &yaml);
        let o = brunt().arg("validate").arg(&p).output().expect("runs");
        assert_eq!(o.status.code(), Some(2));
        assert!(
            text(&o).contains(&format!("bad.yaml:4:{col}:")),
            "{}",
            text(&o)
        );
    }
}

#[test]
fn set_overrides_are_checked_like_the_file() {
    let tmp = tempfile::tempdir().expect("tmp");
    let p = write(
        tmp.path(),
        "p.yaml",
        "name: s\ntarget: { url: builtin }\nrequests: [ { path: /fast } ]\nshape: { constant: { rate: 10/s, duration: 1s } }\n",
    );
    let validate = |args: &[&str]| {
        brunt()
            .arg("validate")
            .arg(&p)
            .args(args)
            .output()
            .expect("runs")
    };
    let o = validate(&[
        "--set",
        "shape.constant.rate=500/s",
        "--set",
        "shape.constant.duration=3s",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("500/s") && text(&o).contains("3s total"),
        "{}",
        text(&o)
    );
    for (set, word) in [
        ("shape.constant.rate=fast", "shape.constant.rate"),
        ("shape.constant.rat=5/s", "shape.constant.rat"),
        ("shape.stress.start=5/s", "shape.stress"),
        ("load.workers=0", "load.workers"),
        ("requests.3.weight=2", "requests.3"),
        ("noequals", "KEY=VALUE"),
    ] {
        let o = validate(&["--set", set]);
        assert_eq!(o.status.code(), Some(2), "{set}: {}", text(&o));
        assert!(text(&o).contains(word), "{set}: {}", text(&o));
    }
}

#[test]
fn feeder_problems_are_clear_errors() {
    let tmp = tempfile::tempdir().expect("tmp");
    write(tmp.path(), "u.csv", "id,name\n1,a\n");
    let profile = |feeder: &str, expr: &str| {
        write(
            tmp.path(),
            "f.yaml",
            &format!(
                "name: f\ntarget: {{ url: builtin }}\nfeeders: {{ users: {{ file: {feeder} }} }}\nrequests: [ {{ path: \"/cache/{{{{ {expr} }}}}\" }} ]\nshape: {{ constant: {{ rate: 1/s, duration: 1s }} }}\n"
            ),
        )
    };
    for (file, expr, word) in [
        ("missing.csv", "feeder.users.id", "missing.csv"),
        ("u.csv", "feeder.users.email", "no column `email`"),
    ] {
        let p = profile(file, expr);
        let o = brunt().arg("validate").arg(&p).output().expect("runs");
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains(word), "{}", text(&o));
    }
    let p = profile("u.csv", "feeder.users.name");
    let o = brunt().arg("validate").arg(&p).output().expect("runs");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// A scenario logs in, then uses the token three ways: every step of every
/// iteration answers 200 at the demo (which answers 401 to a bad token).
#[test]
fn scenario_steps_carry_extracted_values_forward() {
    let _g = load::serial();
    let load::DemoRun { srv: server, r, .. } = load::demo_run(
        DemoConfig::default(),
        r#"
name: scenario
target: { url: "{url}" }
requests:
  - { name: plain, path: /fast }
scenarios:
  - name: shop
    weight: 3
    steps:
      - name: login
        method: POST
        path: /login
        extract:
          token: { json: /token }
          again: { regex: '"token":"([0-9a-f]+)"' }
          ctype: { header: content-type }
      - name: item
        path: "/items/{{ random.int(1, 100) }}"
        headers: { Authorization: "Bearer {{ vars.token }}" }
        expect: { status: [200] }
      - name: item-again
        path: /items/7
        headers: { Authorization: "Bearer {{ vars.again }}" }
        expect: { status: [200], body_contains: '"id":"7"', sample: 100% }
      - name: by-type
        path: "/cache/{{ vars.ctype }}"
load: { model: open, workers: 2, connections: 8 }
shape: { constant: { rate: 200/s, duration: 2s } }
"#,
    );
    let t = &r.summary.totals;
    assert_eq!(t.errors, 0, "every step answered as expected");
    let st = server.stats();
    let logins = st.login.requests;
    assert!(logins >= 200, "about 300 iterations: {logins}");
    assert_eq!(st.items.requests, 2 * logins, "two item steps per login");
    assert_eq!(st.fast.requests + 4 * logins, t.requests);
    assert_eq!(
        server.cache_counts().get("application%2Fjson"),
        Some(&logins),
        "the header value, percent-encoded in the path"
    );
    let names: Vec<&str> = r.summary.requests.iter().map(|q| q.name.as_str()).collect();
    for n in [
        "plain",
        "shop/login",
        "shop/item",
        "shop/item-again",
        "shop/by-type",
    ] {
        assert!(names.contains(&n), "{n} in {names:?}");
    }
}

#[test]
fn a_var_no_earlier_step_extracts_is_a_located_error() {
    let yaml = "name: s\ntarget: { url: builtin }\nscenarios:\n  - name: a\n    steps:\n      - { path: \"/items/{{ vars.token }}\" }\n      - { path: /login, method: POST, extract: { token: { json: /token } } }\nshape: { constant: { rate: 1/s, duration: 1s } }\n";
    match Profile::from_yaml(yaml, Path::new("s.yaml")) {
        Err(ProfileError::Syntax {
            line,
            column,
            message,
            ..
        }) => {
            assert_eq!((line, column), (6, 25), "{message}");
            assert!(message.contains("vars.token"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let bad = yaml.replace("{ json: /token }", "{ json: /token, header: x }");
    let e = Profile::from_yaml(&bad, Path::new("s.yaml")).expect_err("two sources");
    assert!(e.to_string().contains("exactly one of"), "{e}");
}
