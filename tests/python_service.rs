//! Python services, end to end (issue 24): the Python service
//! (`tests/python/ledger.py`, ThreadingHTTPServer on 127.0.0.1) whose
//! `/post` holds one `threading.Lock` ~5 ms, stressed with the `python`
//! collector (`py-spy dump --native`, local transport) and `linux-host`:
//! the knee is found, its cause is contention, and the cause and the
//! per-phase thread table name the lock and its site — the same findings a
//! JVM or Go service gives. Needs `py-spy` (PyPI) and ptrace rights (root).

#[path = "support/load.rs"]
mod load;
#[path = "support/python.rs"]
mod python;

use brunt::judge::Cause;

#[test]
fn stress_knee_names_contention_and_the_lock_site() {
    python::require_py_spy();
    let _g = load::serial();
    let svc = python::Service::start();
    let yaml = format!(
        r#"
name: py-knee
target: {{ url: "{{url}}", timeout: 10s }}
requests: [ {{ path: "/post?ms=5" }} ]
load: {{ connections: 48 }}
shape: {{ stress: {{ start: 60/s, step: 40/s, step_duration: 4s, max: 300/s, stop_on_breach: true }} }}
budgets: [ "p99 < 150ms" ]
collectors:
  # This 2-core machine is shared with builds: see tests/go_service.rs.
  generator: {{ lag_saturation: 250ms }}
  transport: {{ kind: local }}
  target: {{ pid: {pid}, port: {port} }}
  collect:
    - use: linux-host
      probes: {{ host: {{ every: 1s }} }}
    - use: python
      probes: {{ py-spy-dump: {{ every: 2s }} }}
"#,
        pid = svc.pid(),
        port = svc.addr.rsplit(':').next().unwrap_or("0"),
    );
    let (_dir, r, st) = load::stress_judged(&yaml, &svc.url());
    let first_bad = st.first_breach.clone().expect("a knee: a breaking step");
    assert_eq!(st.cause, Cause::Contention, "{}", st.text);
    assert!(
        st.text
            .contains("`threading.Lock` in `Ledger.post (ledger.py:"),
        "the cause names the lock and its site: {}",
        st.text
    );
    let row = r
        .summary
        .threads_by_phase
        .iter()
        .find(|p| p.phase == first_bad)
        .expect("a row for the breaking step");
    eprintln!("{}", row.dump_text());
    let dump = row
        .dump
        .as_ref()
        .expect("a py-spy dump in the breaking step");
    let lock = dump.activity.top_lock.as_ref().expect("a top lock");
    assert_eq!(lock.class, "threading.Lock");
    assert!(dump.activity.blocked >= 5, "{:?}", dump.activity);
}

/// `py-spy record` (enabled) at the phase start: its collapsed stacks,
/// fetched through the transport, become the phase's CPU flame graph
/// beside them and in `report.html`.
#[test]
fn py_spy_record_makes_the_phase_cpu_flame_graph() {
    python::require_py_spy();
    let _g = load::serial();
    let svc = python::Service::start();
    let yaml = format!(
        r#"
name: py-record
target: {{ url: "{{url}}", timeout: 5s }}
requests: [ {{ path: "/cpu?n=200000" }} ]
shape: {{ constant: {{ rate: 20/s, duration: 3s }} }}
collectors:
  transport: {{ kind: local }}
  target: {{ pid: {pid} }}
  collect:
    - use: python
      probes: {{ py-spy-dump: {{ enabled: false }}, py-spy-record: {{ enabled: true }} }}
"#,
        pid = svc.pid(),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let r = load::run(&load::profile(&yaml, &svc.url()), dir.path());
    let c = r.summary.collectors.as_ref().expect("collectors");
    assert!(
        c.artifacts.iter().any(|a| a.probe == "py-spy-record"),
        "{:?} {:?}",
        c.artifacts,
        c.errors
    );
    let folded = dir.path().join("diagnostics/py-spy.main.cpu.folded");
    let text =
        std::fs::read_to_string(&folded).unwrap_or_else(|e| panic!("{}: {e}", folded.display()));
    assert!(text.contains("spin (ledger.py:"), "{text}");
    let html = std::fs::read_to_string(dir.path().join("report.html")).expect("report.html");
    assert!(html.contains("id=\"flame-cpu\""), "no CPU flame graph");
}
