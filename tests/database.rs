//! The PostgreSQL collector against a real throwaway cluster on 127.0.0.1
//! (tests/support/postgres.rs): a stress run against a small HTTP service
//! whose requests queue for one hot row names the knee, the lock, the
//! relation and the blocker; an idle-in-transaction holder and connection
//! exhaustion are findings; a bad password is an error before the load; the
//! database going away mid-run is a gap (through the SSH transport), never a
//! stall (and a database without pg_stat_statements says so); the
//! password never reaches the run directory. A Java service on
//! HikariCP shows the chain across tiers: its workers wait in the pool,
//! the pooled connections wait on the row lock.

#[path = "support/cmd.rs"]
mod cmd;
#[path = "support/collect.rs"]
mod collect;
#[path = "support/java.rs"]
mod java;
#[path = "support/postgres.rs"]
mod postgres;
#[path = "support/sshd.rs"]
mod sshd;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use brunt::profile::collectors::{CollectEntry, CollectorsConfig};
use brunt::vocab::{PhaseInfo, RunClock};
use postgres::{Postgres, PASSWORD};

const PW_VAR: &str = "BRUNT_TEST_PG_PASSWORD";

/// The hot-row service (Debian's python3 with psycopg2), ready to serve.
struct Service {
    child: Child,
    port: u16,
}

impl Service {
    fn start(db_port: u16, hold_ms: u32) -> Service {
        let py = "/usr/bin/python3";
        let ok = Command::new(py)
            .args(["-c", "import psycopg2"])
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "{py} cannot import psycopg2: install it with `apt-get install -y python3-psycopg2` (tests/setup.sh does)"
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("free port");
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hot_row_service.py");
        let mut child = Command::new(py)
            .arg(script)
            .args([port.to_string(), db_port.to_string(), hold_ms.to_string()])
            .env("PGPASSWORD", PASSWORD)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the service");
        let mut line = String::new();
        let out = child.stdout.take().expect("stdout");
        BufReader::new(out)
            .read_line(&mut line)
            .expect("ready line");
        assert_eq!(line.trim(), "ready", "the service did not start");
        Service { child, port }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn collect_postgres(every_ms: u64) -> Vec<CollectEntry> {
    vec![collect::entry(
        "postgres",
        collect::probes(vec![("postgres", collect::every(every_ms))]),
    )]
}

/// `brunt run --plain PROFILE --out RUN` with the password variable set
/// to `password` (unset when `None`).
fn brunt_run(prof: &Path, run: &Path, password: Option<&str>) -> (std::process::Output, String) {
    let mut c = cmd::brunt();
    c.args(["run", "--plain"]).arg(prof).arg("--out").arg(run);
    match password {
        Some(p) => c.env(PW_VAR, p),
        None => c.env_remove(PW_VAR),
    };
    let out = c.output().expect("brunt run");
    let text = cmd::out(&out);
    (out, text)
}

fn profile(svc: u16, pg: &Postgres, budget_p99: &str) -> String {
    shaped(
        svc,
        pg,
        budget_p99,
        "{ stress: { start: 10/s, step: 70/s, step_duration: 3s, max: 80/s } }",
    )
}

/// The hot-row profile with the postgres collector, in `shape`.
fn shaped(svc: u16, pg: &Postgres, budget_p99: &str, shape: &str) -> String {
    format!(
        r#"
name: hot-row
target: {{ url: "http://127.0.0.1:{svc}", timeout: 3s }}
requests: [ {{ path: /hot }} ]
load: {{ connections: 12 }}
shape: {shape}
budgets: [ "p99 < {budget_p99}" ]
collectors:
  database: {{ host: 127.0.0.1, port: {}, user: postgres, dbname: postgres, password_env: {PW_VAR} }}
  collect:
    - use: postgres
      probes: {{ postgres: {{ every: 500ms }} }}
"#,
        pg.port
    )
}

#[test]
fn a_hot_row_stress_run_names_the_knee_the_lock_the_relation_and_the_blocker() {
    let pg = Postgres::start(60);
    // 25 ms inside the row lock per request: about 40/s, whatever the CPU;
    // 10/s stays far below it (a generous budget: the machine may be busy),
    // 80/s queues for the row.
    let svc = Service::start(pg.port, 25);
    let dir = tempfile::tempdir().expect("tempdir");
    let prof = cmd::write(dir.path(), "hot.yaml", &profile(svc.port, &pg, "600ms"));
    let run = dir.path().join("run");
    let started = Instant::now();
    let (_, text) = brunt_run(&prof, &run, Some(PASSWORD));
    assert!(started.elapsed() < Duration::from_secs(40), "{text}");
    let s = collect::read_json(&run.join("summary.json"));
    let v = &s["verdicts"]["stress"];
    assert_eq!(v["capacity_step"], "step-1", "{text}");
    assert_eq!(v["first_breach"], "step-2", "{text}");
    assert_eq!(v["cause"], "contention", "{text}");
    let why = v["text"].as_str().expect("verdict text");
    for part in [
        "waiting on a row lock of `orders`",
        // The waiters queue on the lock the SELECT … FOR UPDATE takes.
        "(`SELECT n FROM orders WHERE id = ? FOR UPDATE`), held by pid ",
        "`hot-service`",
        "`SELECT n FROM orders WHERE id = ? FOR UPDATE`",
        "in a transaction open",
    ] {
        assert!(why.contains(part), "the cause lacks `{part}`: {why}");
    }
    // Per phase in summary.json, the terminal and the report.
    let db = s["database_by_phase"]
        .as_array()
        .expect("database_by_phase");
    let breach = db
        .iter()
        .find(|p| p["phase"] == "step-2")
        .expect("step-2 row");
    assert!(
        breach["max_waiting_lock"].as_u64().unwrap_or(0) >= 3,
        "{breach}"
    );
    assert!(breach["lock_chain"]
        .as_str()
        .is_some_and(|c| c.contains("orders")));
    let stm = breach["statements"]
        .as_array()
        .expect("pg_stat_statements deltas");
    assert!(
        stm.iter().any(|x| x["query"]
            .as_str()
            .is_some_and(|q| q.starts_with("UPDATE orders"))),
        "{stm:?}"
    );
    assert!(text.contains("database by phase"), "{text}");
    assert!(
        text.contains("└ ") && text.contains("row lock of `orders`"),
        "{text}"
    );
    let html = std::fs::read_to_string(run.join("report.html")).expect("report");
    assert!(html.contains("id=\"table-database\"") && html.contains("Statements by phase"));
    let ev = collect::read_json(&run.join("diagnostics/evidence.json"));
    assert!(ev["series"]["db.backends_waiting_lock"].is_array());
    assert!(ev["series"]["db.connections_used_pct"].is_array());
    assert!(ev["series"]["db.oldest_xact_s"].is_array());
    // The statement that got slower past the knee (pg_stat_statements).
    let slow = ev["findings"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["kind"] == "slow_statement"))
        .unwrap_or_else(|| panic!("no slow_statement finding: {}", ev["findings"]));
    let slow = slow["summary"].as_str().unwrap_or("");
    assert!(
        slow.starts_with("`SELECT n FROM orders WHERE id = $1 FOR UPDATE` took")
            && slow.contains("in step-2 against"),
        "{slow}"
    );
    postgres::assert_no_password(&run);
}

/// The same queueing service under an overload shape: it does not shed, its
/// admitted p99 breaks, and the verdict says what the server side showed
/// during the overload — the row lock its requests queued on.
#[test]
fn an_overload_on_a_queueing_service_names_the_row_lock_it_queued_on() {
    let pg = Postgres::start(60);
    let svc = Service::start(pg.port, 25);
    let dir = tempfile::tempdir().expect("tempdir");
    let shape = "{ overload: { baseline: 10/s, baseline_duration: 3s, rate: 80/s, duration: 5s, recovery_duration: 3s } }";
    let prof = cmd::write(
        dir.path(),
        "ov.yaml",
        &shaped(svc.port, &pg, "600ms", shape),
    );
    let run = dir.path().join("run");
    let (_, text) = brunt_run(&prof, &run, Some(PASSWORD));
    let s = collect::read_json(&run.join("summary.json"));
    let v = &s["verdicts"]["overload"];
    assert_eq!(v["pass"], false, "a queue is not shedding: {text}");
    let seen = v["server_finding"].as_str().unwrap_or_default();
    assert!(seen.contains("row lock of `orders`"), "{v}");
    let why = v["text"].as_str().unwrap_or_default();
    assert!(
        why.contains("during the overload the server side showed: ") && why.contains(seen),
        "{why}"
    );
}

#[test]
fn a_bad_password_is_an_error_before_the_load() {
    let pg = Postgres::start(20);
    let svc = Service::start(pg.port, 1);
    let dir = tempfile::tempdir().expect("tempdir");
    let prof = cmd::write(dir.path(), "hot.yaml", &profile(svc.port, &pg, "250ms"));
    let run = dir.path().join("run");
    let started = Instant::now();
    let (out, text) = brunt_run(&prof, &run, Some("not-the-password"));
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("could not query the database before the load")
            && text.contains("password authentication failed"),
        "{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(10), "{text}");
    assert!(!run.join("summary.json").exists(), "no load ran");
    assert_eq!(
        pg.sql("SELECT n FROM orders WHERE id = 1"),
        "0",
        "no request reached the service"
    );
    // The variable unset: said as such, also before the load.
    let (out, text) = brunt_run(&prof, &dir.path().join("run2"), None);
    assert!(
        !out.status.success() && text.contains(&format!("`{PW_VAR}` is not set")),
        "{text}"
    );
}

fn phase(name: &str, secs: u64) -> Vec<PhaseInfo> {
    vec![PhaseInfo {
        index: 0,
        name: name.into(),
        label: String::new(),
        start: Duration::ZERO,
        duration: Duration::from_secs(secs),
        level: None,
    }]
}

#[test]
fn an_idle_in_transaction_holder_and_exhausted_connections_are_findings() {
    // 10 slots, 3 reserved for superusers: the application gets 7.
    let mut pg = Postgres::start(10);
    pg.sql("ALTER ROLE app CONNECTION LIMIT 7");
    let holder = pg.hold(
        "app",
        "holder",
        "BEGIN; SELECT n FROM orders WHERE id = 1 FOR UPDATE;",
    );
    for i in 0..2 {
        pg.hold(
            "app",
            &format!("waiter-{i}"),
            "UPDATE orders SET n = n + 1 WHERE id = 1;",
        );
    }
    for i in 0..4 {
        pg.hold("app", &format!("idle-{i}"), "SELECT 1;");
    }
    // The eighth application connection is refused.
    let refused = pg
        .psql("app")
        .args(["-c", "SELECT 1"])
        .output()
        .expect("psql");
    assert!(!refused.status.success());
    assert!(
        // The role's own limit or the server's (reserved slots aside): both are full.
        String::from_utf8_lossy(&refused.stderr).contains("too many connections for role \"app\"")
            || String::from_utf8_lossy(&refused.stderr).contains("reserved"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let dir = tempfile::tempdir().expect("tempdir");
    std::env::set_var(PW_VAR, PASSWORD);
    // Locally through a command prefix (as `docker exec -i NAME` would be):
    // the password and the script pass through it on standard input.
    let cfg = CollectorsConfig {
        transport: brunt::profile::collectors::TransportConfig {
            prefix: vec!["env".into(), "BRUNT_VIA=prefix".into()],
            ..Default::default()
        },
        collect: collect_postgres(300),
        database: Some(pg.database(PW_VAR)),
        ..Default::default()
    };
    let set = collect::start(&cfg, dir.path(), RunClock::now(), phase("hold", 3));
    std::thread::sleep(Duration::from_millis(2500));
    let rep = set.finish();
    assert!(rep.errors.is_empty(), "{:?}", rep.errors);
    assert!(
        rep.transport.contains("env BRUNT_VIA=prefix"),
        "{}",
        rep.transport
    );
    let ev = brunt::rundir::evidence::from_collector_streams(dir.path());
    let find = |kind: &str| {
        ev.findings
            .iter()
            .find(|f| f.kind == kind)
            .unwrap_or_else(|| panic!("no {kind} finding: {:#?}", ev.findings))
    };
    let idle = find("idle_in_transaction");
    assert!(
        idle.summary
            .starts_with(&format!("pid {holder} (`holder`) idle in transaction"))
            && idle.summary.contains("blocking 2 backends")
            && idle
                .summary
                .contains("`SELECT n FROM orders WHERE id = ? FOR UPDATE`"),
        "{}",
        idle.summary
    );
    let lock = find("lock");
    assert!(
        lock.summary
            .starts_with("2 backends waiting on a row lock of `orders`")
            && lock.summary.contains(&format!(
                "held by pid {holder} (`holder`, idle in transaction)"
            )),
        "{}",
        lock.summary
    );
    let conn = find("connections");
    assert!(
        conn.summary.contains("7 of 7 usable connections"),
        "{}",
        conn.summary
    );
    assert_eq!(conn.severity, "critical");
    assert!(
        ev.findings.iter().any(|f| f.kind == "connections"
            && f.summary
                .starts_with("role `app` at its own connection limit: 7 of 7 in use (100%)")),
        "{:#?}",
        ev.findings
    );
    postgres::assert_no_password(dir.path());
}

#[test]
fn the_database_going_away_mid_run_is_a_gap_over_ssh_not_a_stall() {
    let mut pg = Postgres::start(20);
    // Without pg_stat_statements: said in every row, never an error.
    pg.sql("DROP EXTENSION pg_stat_statements");
    let sshd = sshd::Sshd::start();
    let dir = tempfile::tempdir().expect("tempdir");
    std::env::set_var(PW_VAR, PASSWORD);
    let cfg = CollectorsConfig {
        transport: sshd.transport(),
        collect: collect_postgres(300),
        database: Some(pg.database(PW_VAR)),
        ..Default::default()
    };
    let set = collect::start(&cfg, dir.path(), RunClock::now(), phase("run", 6));
    let rows = dir.path().join("diagnostics/postgres.jsonl");
    cmd::wait_lines(&rows, 2, Duration::from_secs(10));
    pg.down();
    std::thread::sleep(Duration::from_millis(1500));
    pg.up();
    let before = cmd::lines(&rows);
    cmd::wait_lines(&rows, before + 2, Duration::from_secs(10));
    let stop = Instant::now();
    let rep = set.finish();
    assert!(stop.elapsed() < Duration::from_secs(3), "finishing stalled");
    let gap = rep
        .gaps
        .iter()
        .find(|g| g.probe.as_deref() == Some("postgres"))
        .unwrap_or_else(|| panic!("no postgres gap: {:?}", rep.gaps));
    assert!(
        gap.missed >= 1 && gap.secs() >= 0.5 && gap.secs() < 10.0,
        "{gap:?}"
    );
    assert!(
        gap.reason.contains("127.0.0.1") || gap.reason.contains("connect"),
        "{}",
        gap.reason
    );
    assert!(
        rep.gaps.iter().all(|g| g.probe.is_some()),
        "the SSH link never broke: {:?}",
        rep.gaps
    );
    assert!(rep.transport.contains("ssh"), "{}", rep.transport);
    let text = std::fs::read_to_string(&rows).expect("rows");
    for line in text.lines() {
        let r: serde_json::Value = serde_json::from_str(line).expect("a row");
        assert_eq!(r["pg_stat_statements"], false, "{line}");
        assert!(
            r["statements"].is_null() && r["max_connections"] == 20,
            "{line}"
        );
    }
    postgres::assert_no_password(dir.path());
}

#[test]
fn a_java_service_on_hikaricp_chains_the_pool_wait_to_the_row_lock() {
    let pg = Postgres::start(60);
    std::env::set_var("PGPASSWORD", PASSWORD);
    let jdk = java::jdk17();
    let marker = format!("hot-row-db-{}", std::process::id());
    // 16 workers, 4 pooled connections, 25 ms inside the row lock: ~40/s.
    let svc = java::JavaProcess::start(
        &jdk,
        &["-Xmx256m"],
        "com.brunt.target.HotRowDb",
        &[
            "--port",
            "0",
            "--db-port",
            &pg.port.to_string(),
            "--pool-size",
            "4",
            "--workers",
            "16",
            "--hold-ms",
            "25",
            "--marker",
            &marker,
        ],
        "LISTENING ",
    );
    let port: u16 = svc
        .ready_line
        .trim_start_matches("LISTENING ")
        .trim()
        .parse()
        .expect("port");
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    for _ in 0..30 {
        let r = java::http_get(addr, "/hot", Duration::from_secs(5));
        assert!(matches!(r, Ok((200, _))), "warm-up: {r:?}");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let prof = format!(
        r#"
name: hot-row-java
target: {{ url: "http://127.0.0.1:{port}", timeout: 5s }}
requests: [ {{ path: /hot }} ]
load: {{ connections: 32 }}
shape: {{ stress: {{ start: 10/s, step: 70/s, step_duration: 4s, max: 80/s }} }}
budgets: [ "p99 < 600ms" ]
collectors:
  target: {{ pgrep: "java .*{marker}", jcmd: "{}" }}
  database: {{ host: 127.0.0.1, port: {}, user: postgres, dbname: postgres, password_env: {PW_VAR} }}
  collect:
    - use: jvm
      probes:
        thread-dump: {{ every: 2s, at_phase_start: true }}
        thread-dump-json: {{ enabled: false }}
        heap: {{ enabled: false }}
        jfr: {{ enabled: false }}
    - use: postgres
      probes: {{ postgres: {{ every: 500ms }} }}
"#,
        jdk.jcmd().display(),
        pg.port
    );
    let prof = cmd::write(dir.path(), "hot-java.yaml", &prof);
    let run = dir.path().join("run");
    let (_, text) = brunt_run(&prof, &run, Some(PASSWORD));
    let s = collect::read_json(&run.join("summary.json"));
    let v = &s["verdicts"]["stress"];
    assert_eq!(v["first_breach"], "step-2", "{text}");
    let why = v["text"].as_str().expect("verdict text");
    eprintln!("the cause: {why}");
    assert!(
        why.contains("waiting to borrow from a hikari pool")
            && why.contains("← database: ")
            && why.contains("waiting on a row lock of `orders`")
            && why.contains("`hot-java`"),
        "no pool ← row lock chain in the cause: {why}"
    );
    postgres::assert_no_password(&run);
}
