//! Sessions in scenarios against the built-in demo target on 127.0.0.1: the
//! cookie jar (`POST /login` sets `sid`, `/items/{id}` answers 401 without
//! it), counted at the server, and no cookie value left in the run
//! directory. Every load is bounded (a few dozen iterations over ~1.5 s).

#[path = "support/load.rs"]
mod load;

use std::path::Path;

use brunt::demo::DemoConfig;
use brunt::judge::Summary;

/// Login (its cookie kept, no token extracted), then two item pages.
fn shop(cookies: &str, model: &str) -> String {
    format!(
        r#"
name: cookies
target: {{ url: "{{url}}" }}
scenarios:
  - name: shop
    {cookies}
    steps:
      - {{ name: login, method: POST, path: /login, expect: {{ status: [200] }} }}
      - {{ name: item, path: /items/7, expect: {{ status: [200] }}, optional: true }}
      - {{ name: other, path: /items/8, expect: {{ status: [200] }} }}
{model}
"#
    )
}

const OPEN: &str = "load: { model: open, workers: 1, connections: 16 }
shape: { constant: { rate: 30/s, duration: 1500ms } }";

fn row<'a>(s: &'a Summary, name: &str) -> &'a brunt::judge::summary::RequestSummary {
    s.requests
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no row {name} in {:?}", s.requests))
}

/// Every file under `dir`, read as bytes.
fn files(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for e in std::fs::read_dir(dir).expect("read run dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if let Ok(b) = std::fs::read(&p) {
            out.push((p.display().to_string(), b));
        }
    }
}

#[test]
fn a_session_cookie_from_login_authorises_later_steps_and_is_never_written() {
    let _g = load::serial();
    let load::DemoRun { srv, dir, r } = load::demo_run(DemoConfig::default(), &shop("", OPEN));
    let s = &r.summary;
    let (login, item) = (row(s, "shop/login"), row(s, "shop/item"));
    assert!(login.requests >= 30, "{:?}", s.requests);
    assert_eq!(login.ok, login.requests, "{:?}", s.requests);
    assert_eq!(item.requests, login.requests, "{:?}", s.requests);
    assert_eq!(
        item.ok, item.requests,
        "the cookie went along: {:?}",
        s.requests
    );
    assert_eq!(row(s, "shop/other").ok, login.requests);
    // At the server: one login and two authorised item pages per iteration.
    let st = srv.stats();
    assert_eq!(st.login.requests, login.requests);
    assert_eq!(st.items.requests, 2 * login.requests);
    assert_eq!(s.totals.errors, 0, "{:?}", s.totals);

    // No cookie value in any file of the run directory.
    let tokens = srv.tokens();
    assert_eq!(tokens.len() as u64, login.requests);
    let mut all = Vec::new();
    files(dir.path(), &mut all);
    assert!(
        all.len() > 3,
        "{all:?}",
        all = all.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for (name, bytes) in &all {
        let text = String::from_utf8_lossy(bytes);
        for t in &tokens {
            assert!(!text.contains(t.as_str()), "{name} carries a cookie value");
        }
        assert!(!text.contains("sid="), "{name} carries a cookie");
    }
}

#[test]
fn the_cookie_goes_along_over_http2_too() {
    let _g = load::serial();
    let yaml = shop("", OPEN).replace(
        r#"target: { url: "{url}" }"#,
        r#"target: { url: "{url}", http: "2" }"#,
    );
    let load::DemoRun { srv, r, .. } = load::demo_run(DemoConfig::default(), &yaml);
    let s = &r.summary;
    let login = row(s, "shop/login");
    assert!(login.requests >= 30, "{:?}", s.requests);
    assert_eq!(row(s, "shop/other").ok, login.requests, "{:?}", s.requests);
    assert_eq!(srv.stats().unauthorized, 0);
}

#[test]
fn cookies_false_sends_none_and_the_server_answers_401() {
    let _g = load::serial();
    let load::DemoRun { srv, r, .. } =
        load::demo_run(DemoConfig::default(), &shop("cookies: false", OPEN));
    let s = &r.summary;
    let (login, item) = (row(s, "shop/login"), row(s, "shop/item"));
    assert!(login.requests >= 30, "{:?}", s.requests);
    assert_eq!(login.ok, login.requests);
    // `item` is optional: the iteration goes on to `other`, which ends it.
    assert_eq!(item.ok, 0, "no cookie, no authorisation: {:?}", s.requests);
    assert_eq!(item.errors, item.requests);
    assert_eq!(row(s, "shop/other").ok, 0);
    let st = srv.stats();
    assert_eq!(st.items.requests, 2 * login.requests);
    assert_eq!(st.unauthorized, st.items.requests);
    assert_eq!(s.iterations[0].ok, 0);
}

#[test]
fn a_virtual_user_keeps_its_cookie_across_iterations_and_an_open_lane_only_with_per_lane() {
    let _g = load::serial();
    // Two scenarios: `login` only, and `browse` only. A virtual user that
    // logged in once browses with its cookie in later iterations.
    let two = |cookies: &str, load: &str| {
        format!(
            r#"
name: lanes
target: {{ url: "{{url}}" }}
scenarios:
  - name: login
    weight: 1
    {cookies}
    steps: [ {{ name: login, method: POST, path: /login }} ]
  - name: browse
    weight: 3
    {cookies}
    steps: [ {{ name: item, path: /items/1, expect: {{ status: [200] }} }} ]
{load}
"#
        )
    };
    let closed = "load: { model: closed, workers: 1, think_time: 10ms }
shape: { constant: { vus: 2, duration: 1500ms } }";
    let r = load::demo_run(DemoConfig::default(), &two("", closed)).r;
    let item = row(&r.summary, "browse/item");
    assert!(item.requests >= 20, "{:?}", r.summary.requests);
    // Only a VU's browses before its first login fail.
    assert!(
        item.ok * 10 >= item.requests * 8,
        "{:?}",
        r.summary.requests
    );

    // Open model, one lane: a jar per iteration forgets the login...
    let open = "load: { model: open, workers: 1, connections: 1 }
shape: { constant: { rate: 30/s, duration: 1500ms } }";
    let r = load::demo_run(DemoConfig::default(), &two("", open)).r;
    let item = row(&r.summary, "browse/item");
    assert!(item.requests >= 20, "{:?}", r.summary.requests);
    assert_eq!(item.ok, 0, "{:?}", r.summary.requests);
    // ...and a lane's jar keeps it.
    let r = load::demo_run(DemoConfig::default(), &two("cookies: per_lane", open)).r;
    let item = row(&r.summary, "browse/item");
    assert!(
        item.ok * 10 >= item.requests * 8,
        "{:?}",
        r.summary.requests
    );
}

#[test]
fn repeat_blocks_and_counters_reach_the_server_as_often_as_written() {
    let _g = load::serial();
    let load::DemoRun { srv, r, .. } = load::demo_run(
        DemoConfig::default(),
        r#"
name: loops
target: { url: "{url}" }
scenarios:
  - name: shop
    steps:
      - { name: login, method: POST, path: /login }
      - repeat: 3
        steps:
          - { name: a, path: "/cache/a{{ repeat.index }}" }
          - { name: b, path: /items/1, expect: { status: [200] }, think_time: 2ms }
      - { name: c, path: "/cache/c{{ repeat.index }}", repeat: "2..4" }
      - { name: it, path: "/cache/it{{ iteration }}-{{ repeat.index }}" }
load: { model: closed, workers: 1 }
shape: { constant: { vus: 2, duration: 1s } }
"#,
    );
    let s = &r.summary;
    let n = s.iterations[0].iterations;
    assert!(n >= 10, "{:?}", s.iterations);
    assert_eq!(s.iterations[0].ok, n, "{:?} {:?}", s.iterations, s.requests);
    assert_eq!(row(s, "shop/a").requests, 3 * n);
    assert_eq!(row(s, "shop/b").ok, 3 * n, "the cookie holds in a loop");
    let c = row(s, "shop/c").requests;
    assert!((2 * n..=4 * n).contains(&c), "c {c} for {n} iterations");
    // At the server: every repetition, with its index.
    let counts = srv.cache_counts();
    let at = |id: &str| counts.get(id).copied().unwrap_or(0);
    for i in 0..3 {
        assert_eq!(at(&format!("a{i}")), n, "{counts:?}");
    }
    assert_eq!(at("a3"), 0);
    assert_eq!((at("c0"), at("c1")), (n, n), "{counts:?}");
    assert!(
        at("c2") >= at("c3") && at("c2") > 0 && at("c3") > 0,
        "uniform 2..4: {counts:?}"
    );
    assert_eq!(at("c0") + at("c1") + at("c2") + at("c3"), c);
    assert_eq!(at("c4"), 0);
    assert_eq!(srv.stats().items.requests, 3 * n);
    // `iteration` counts each virtual user's picks from 0; outside a repeat the index is 0.
    assert_eq!(at("it0-0"), 2, "{counts:?}");
    let its: u64 = counts
        .iter()
        .filter(|(k, _)| k.starts_with("it"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(its, n);
    let top = (0..n)
        .rev()
        .find(|i| at(&format!("it{i}-0")) > 0)
        .unwrap_or(0);
    for i in 0..=top {
        assert!(
            at(&format!("it{i}-0")) >= 1,
            "iteration {i} missing: {counts:?}"
        );
    }
}

/// The line, column and message of the located error `yaml` is.
fn located(yaml: &str) -> (usize, usize, String) {
    match brunt::profile::Profile::from_yaml(yaml, Path::new("bad.yaml")) {
        Err(brunt::profile::ProfileError::Syntax {
            line,
            column,
            message,
            ..
        }) => (line as usize, column as usize, message),
        other => panic!("expected a located error, got {other:?}"),
    }
}

#[test]
fn bad_repeat_values_are_located_errors() {
    use brunt::profile::Profile;
    let base = r#"name: bad
target: { url: "http://127.0.0.1:1" }
scenarios:
  - name: shop
    steps:
      - { name: login, method: POST, path: /login }
      - STEP
shape: { constant: { rate: 1/s, duration: 1s } }
"#;
    for (step, want, at) in [
        ("{ path: /a, repeat: 0 }", "counts start at 1", (7, 29)),
        (
            "{ path: /a, repeat: \"9..2\" }",
            "the low end is above",
            (7, 29),
        ),
        (
            "{ path: /a, repeat: \"2-5\" }",
            "neither a count nor a range",
            (7, 29),
        ),
        ("{ path: /a, repeat: 2000000 }", "over the limit", (7, 29)),
        ("{ steps: [ { path: /a } ] }", "needs `repeat`", (7, 18)),
        (
            "{ repeat: 2, steps: [ { path: /a, repeat: 2 } ] }",
            "cannot repeat again",
            (7, 29),
        ),
        (
            "{ repeat: 2, path: /x, steps: [ { path: /a } ] }",
            "holds only `repeat` and `steps`",
            (7, 39),
        ),
        (
            "{ path: /a, refresh: { from: nope, on_status: [401] } }",
            "no step named `nope` in this scenario",
            (7, 32),
        ),
        (
            "{ path: /a, refresh: { from: login } }",
            "give on_status, body_regex, after, after_uses or expires_in",
            (7, 30),
        ),
        (
            "{ path: /a, refresh: { from: login, on_status: [42] } }",
            "on_status 42 is not an HTTP status",
            (7, 30),
        ),
    ] {
        let (line, column, message) = located(&base.replace("STEP", step));
        assert!(message.contains(want), "{step}: {message}");
        assert_eq!((line, column), at, "{step}: {message}");
    }
    // `repeat` belongs to scenario steps.
    let plain = "name: p\ntarget: { url: \"http://127.0.0.1:1\" }\nrequests: [ { path: /a, repeat: 2 } ]\nshape: { constant: { rate: 1/s, duration: 1s } }\n";
    let e = Profile::from_yaml(plain, Path::new("p.yaml")).expect_err("plain repeat");
    assert!(e.to_string().contains("scenario steps only"), "{e}");
}

/// Runs a login with a token good for `login_query`'s limit, then `n` item
/// pages with the bearer token, refreshed as `refresh` says; the run and its
/// iterations (at least `min`).
fn tokens(login_query: &str, n: u32, think: &str, refresh: &str, min: u64) -> (load::DemoRun, u64) {
    let yaml = format!(
        r#"
name: tokens
target: {{ url: "{{url}}" }}
scenarios:
  - name: soak
    cookies: false
    steps:
      - {{ name: login, method: POST, path: "/login?{login_query}", extract: {{ token: {{ json: /token }} }} }}
      - repeat: {n}
        steps:
          - name: item
            path: /items/1
            headers: {{ Authorization: "Bearer {{{{ vars.token }}}}" }}
            expect: {{ status: [200] }}
            {think}
            refresh: {refresh}
load: {{ model: closed, workers: 1 }}
shape: {{ constant: {{ vus: 2, duration: 1500ms }} }}
"#
    );
    let run = load::demo_run(DemoConfig::default(), &yaml);
    let n = run.r.summary.iterations[0].iterations;
    assert!(n >= min, "{:?}", run.r.summary.iterations);
    (run, n)
}

#[test]
fn an_expired_token_is_refreshed_and_the_request_retried_once() {
    let _g = load::serial();
    // Good for 5 uses: 20 pages take 3 refreshes, each after a 401.
    expired_and_retried("{ from: login, on_status: [401] }");
}

#[test]
fn a_body_that_says_expired_is_refreshed_and_retried_too() {
    let _g = load::serial();
    // The demo's 401 answers `unauthorized`: the body alone says it.
    expired_and_retried("{ from: login, body_regex: '^unauth' }");
}

/// 20 pages with a token good for 5 uses, refreshed by `refresh`'s trigger
/// after each answer that said no: counted at the server and in the summary.
fn expired_and_retried(refresh: &str) {
    let (load::DemoRun { srv, r, dir }, n) = tokens("uses=5", 20, "", refresh, 4);
    let s = &r.summary;
    // `brunt report` reads the same counts back from the run directory.
    let again = brunt::run::rebuild::rebuild(dir.path()).expect("rebuild");
    assert_eq!(
        (again.totals.retried, again.totals.refreshes),
        (s.totals.retried, s.totals.refreshes)
    );
    assert_eq!(again.phases, s.phases);
    assert_eq!(s.iterations[0].ok, n, "{:?} {:?}", s.iterations, s.requests);
    let item = row(s, "soak/item");
    assert_eq!(item.ok, 20 * n, "{:?}", s.requests);
    assert_eq!(item.requests, 23 * n, "every 401 was sent again once");
    assert_eq!(item.errors, 0, "`retried` is not an error");
    assert_eq!(row(s, "soak/login").requests, 4 * n);
    let t = &s.totals;
    assert_eq!((t.retried, t.refreshes), (3 * n, 3 * n), "{t:?}");
    assert_eq!(t.by_class.get("retried").map(|c| c.count), Some(3 * n));
    assert_eq!(t.errors, 0);
    assert_eq!(t.error_rate, 0.0);
    let phases: u64 = s.phases.iter().map(|p| p.refreshes).sum();
    assert_eq!(phases, 3 * n, "refreshes per phase add up");
    // At the server: logins and 401s as the budget says.
    let st = srv.stats();
    assert_eq!(st.login.requests, 4 * n);
    assert_eq!(st.items.requests, 23 * n);
    assert_eq!(st.unauthorized, 3 * n);
    // The terminal says so.
    let term = brunt::report::terminal::render(s);
    assert!(
        term.contains(&format!("credentials refreshed {} times", 3 * n)),
        "{term}"
    );
}

#[test]
fn a_uses_budget_refreshes_before_the_token_runs_out() {
    let _g = load::serial();
    let refresh = "{ from: login, on_status: [401], after_uses: 5 }";
    let (load::DemoRun { srv, r, .. }, n) = tokens("uses=5", 20, "", refresh, 4);
    let s = &r.summary;
    assert_eq!(row(s, "soak/item").ok, 20 * n, "{:?}", s.requests);
    assert_eq!((s.totals.retried, s.totals.refreshes), (0, 3 * n));
    let st = srv.stats();
    assert_eq!((st.login.requests, st.items.requests), (4 * n, 20 * n));
    assert_eq!(st.unauthorized, 0, "refreshed before the server said no");
}

#[test]
fn a_token_that_expires_in_time_is_refreshed_from_its_expires_in() {
    let _g = load::serial();
    // 300 ms tokens, refreshed at 270 ms; 16 pages 40 ms apart take
    // ~0.65 s: two refreshes each (at 270 and 540 ms).
    let refresh = "{ from: login, on_status: [401], expires_in: /expires_in }";
    let (load::DemoRun { srv, r, .. }, n) =
        tokens("ttl_ms=300", 16, "think_time: 40ms", refresh, 2);
    let s = &r.summary;
    let st = srv.stats();
    let authorised = st.items.requests - st.unauthorized;
    assert!(
        authorised * 100 >= st.items.requests * 95,
        "{} of {} authorised",
        authorised,
        st.items.requests
    );
    // One login per iteration, then one per 270 ms of it (90 % of 300 ms);
    // a busy machine may stretch an iteration past a third.
    let (lo, hi) = (3 * n, 4 * n);
    assert!(
        (lo..=hi).contains(&st.login.requests),
        "{} logins for {n} iterations, expected {lo}..={hi}",
        st.login.requests
    );
    assert_eq!(row(s, "soak/item").ok, 16 * n, "{:?}", s.requests);
    assert_eq!(s.totals.refreshes, st.login.requests - n);
}

#[path = "support/cmd.rs"]
mod cmd;

#[test]
fn the_shipped_sessions_profile_logs_in_carries_its_cookie_and_refreshes() {
    let _g = load::serial();
    let d = tempfile::tempdir().expect("tmp");
    let run = d.path().join("sessions");
    let profile = concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/sessions.yaml");
    let o = cmd::brunt()
        .args(["run", "--plain", profile, "--out"])
        .arg(&run)
        .args([
            "--set",
            "shape.constant.duration=3s",
            "--set",
            "shape.constant.rate=4",
        ])
        .output()
        .expect("brunt runs");
    let text = cmd::out(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    let s: Summary =
        serde_json::from_slice(&std::fs::read(run.join("summary.json")).expect("summary"))
            .expect("summary.json");
    let item = row(&s, "visit/item");
    assert!(item.requests >= 40, "{:?}", s.requests);
    assert_eq!(item.errors, 0, "{:?}", s.requests);
    assert!(s.totals.refreshes >= 4, "{:?}", s.totals);
    assert!(text.contains("credentials refreshed"), "{text}");
}
