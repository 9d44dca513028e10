//! Go services, end to end (issue 24): a Go service built by the test
//! (`tests/go/ledger.go`, 127.0.0.1 only) whose `/post` holds one
//! `sync.Mutex` ~5 ms (capacity ≈ 200/s), stressed with the `go`
//! collector (goroutine dumps, mutex and block profiles through its
//! net/http/pprof with `curl`, local transport) and `linux-host`: the knee
//! is found, its cause is contention, and the cause, the findings and the
//! per-phase thread table name the mutex site. Also the parsers on output
//! taken from the live service, and a cut dump as an error.

#[path = "support/go.rs"]
mod go;
#[path = "support/load.rs"]
mod load;

use brunt::diagnosis::{Analysis, InputKind, Options};
use brunt::judge::Cause;

const SITE: &str = "main.(*ledger).post";

/// Goroutine dumps and profiles from the running service read as the
/// fixtures do; a dump cut short is that file's error, never a panic.
#[test]
fn live_dumps_and_profiles_read_and_a_cut_dump_is_an_error() {
    let svc = go::Service::start();
    // Some mutex waiters to see: 40 requests on a lock held 20 ms each.
    let url = svc.url();
    let load = std::thread::spawn(move || {
        let hs: Vec<_> = (0..40)
            .map(|_| {
                let u = format!("{url}/post?ms=20");
                std::thread::spawn(move || {
                    let _ = std::process::Command::new("curl")
                        .args(["-fsS", "--max-time", "10", "-o", "/dev/null", &u])
                        .status();
                })
            })
            .collect();
        // And a channel bottleneck: 12 requests queued on 2 workers.
        let qs: Vec<_> = (0..12)
            .map(|_| {
                let u = format!("{url}/queue?ms=200");
                std::thread::spawn(move || {
                    let _ = std::process::Command::new("curl")
                        .args(["-fsS", "--max-time", "10", "-o", "/dev/null", &u])
                        .status();
                })
            })
            .collect();
        for h in hs.into_iter().chain(qs) {
            let _ = h.join();
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    let dump = svc.pprof_get("/debug/pprof/goroutine?debug=2");
    load.join().expect("load threads");
    let mutex = svc.pprof_get("/debug/pprof/mutex");
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("goroutines.txt"), &dump).expect("write");
    std::fs::write(d.join("mutex.pprof"), &mutex).expect("write");
    let cut = dump.len() / 2 + 7;
    std::fs::write(d.join("cut.txt"), &dump[..cut]).expect("write");
    std::fs::write(d.join("cut.pprof"), &mutex[..mutex.len() / 2]).expect("write");
    let a = Analysis::from_paths(&[d.to_path_buf()], &Options::default()).expect("analysis");
    let input = |n: &str| {
        a.inputs
            .iter()
            .find(|i| i.file.ends_with(n))
            .unwrap_or_else(|| panic!("{n} not read: {:?}", a.inputs))
    };
    assert_eq!(input("goroutines.txt").kind, InputKind::ThreadDumpText);
    assert!(
        input("goroutines.txt").threads > 40,
        "{:?}",
        input("goroutines.txt")
    );
    assert_eq!(input("mutex.pprof").kind, InputKind::Pprof);
    for bad in ["cut.txt", "cut.pprof"] {
        let i = input(bad);
        assert_eq!(i.kind, InputKind::Unreadable, "{i:?}");
        eprintln!("{bad}: {}", i.error.as_deref().unwrap_or(""));
    }
    // The live dump's mutex waiters are a lock finding at the site.
    let lock = a
        .findings
        .iter()
        .find(|f| f.detail.kind() == "lock")
        .expect("a lock finding from the live dump");
    assert!(lock.summary.contains(SITE), "{}", lock.summary);
    // The handlers queued on the workers' channel: a channel finding.
    let channel = a
        .findings
        .iter()
        .find(|f| f.detail.kind() == "channel")
        .expect("a channel finding from the live dump");
    assert!(
        channel.summary.contains("main.main.func2"),
        "{}",
        channel.summary
    );
    // Idle goroutines (8 idle workers, keep-alive readers) are counted idle.
    let states = a
        .dumps
        .first()
        .and_then(|d| d.activity.clone())
        .expect("activity");
    assert!(states.idle >= 8, "{states:?}");
}

#[test]
fn stress_knee_names_contention_and_the_mutex_site() {
    let _g = load::serial();
    let svc = go::Service::start();
    let yaml = format!(
        r#"
name: go-knee
target: {{ url: "{{url}}", timeout: 10s }}
requests: [ {{ path: "/post?ms=5" }} ]
load: {{ connections: 64 }}
shape: {{ stress: {{ start: 60/s, step: 40/s, step_duration: 4s, max: 300/s, stop_on_breach: true }} }}
budgets: [ "p99 < 150ms" ]
collectors:
  # This 2-core machine is shared with builds: a late scheduler there is
  # the host's, not a saturated generator (brunt itself uses a few % CPU).
  generator: {{ lag_saturation: 250ms }}
  transport: {{ kind: local }}
  target: {{ pgrep: "{bin}", port: {port}, pprof: "{pprof}" }}
  collect:
    - use: linux-host
      probes: {{ host: {{ every: 1s }} }}
    - use: go
      probes:
        goroutines: {{ every: 2s }}
        mutex: {{ every: 2s }}
        block: {{ every: 2s }}
"#,
        bin = svc.bin.display(),
        port = svc.addr.rsplit(':').next().unwrap_or("0"),
        pprof = svc.pprof_url(),
    );
    let (dir, r, st) = load::stress_judged(&yaml, &svc.url());
    let first_bad = st.first_breach.clone().expect("a knee: a breaking step");
    assert_eq!(st.cause, Cause::Contention, "{}", st.text);
    assert!(
        st.text.contains(SITE),
        "the cause names the mutex site: {}",
        st.text
    );

    // The mutex profile's finding in the breaking step: time waited per s at the site.
    let server = r.summary.clone();
    let findings =
        std::fs::read_to_string(dir.path().join("findings.json")).expect("findings.json");
    let fj: serde_json::Value = serde_json::from_str(&findings).expect("json");
    let held: Vec<String> = fj["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["detail"]["kind"] == "wait_profile" && f["detail"]["held"] == true)
        .map(|f| f["summary"].as_str().unwrap_or("").to_string())
        .collect();
    eprintln!("{held:#?}");
    assert!(
        held.iter().any(|s| s
            .starts_with(&format!("contention on `sync.(*Mutex).Lock` in `{SITE}`"))
            && s.contains(&format!("waited per s in {first_bad}"))),
        "no mutex-profile finding for {first_bad}: {held:#?}"
    );
    // The thread table's breaking step: goroutines BLOCKED on the mutex.
    let row = server
        .threads_by_phase
        .iter()
        .find(|p| p.phase == first_bad)
        .expect("a row for the breaking step");
    let dump = row
        .dump
        .as_ref()
        .expect("a goroutine dump in the breaking step");
    eprintln!("{}", row.dump_text());
    let lock = dump.activity.top_lock.as_ref().expect("a top lock");
    assert_eq!(lock.class, "sync.Mutex");
    assert!(dump.activity.blocked >= 5, "{:?}", dump.activity);
    assert!(
        dump.activity.idle >= 8,
        "idle workers are idle: {:?}",
        dump.activity
    );
    // Wait flame graphs per step from the block profile, the knee's difference in the report.
    let html = std::fs::read_to_string(dir.path().join("report.html")).expect("report.html");
    assert!(html.contains("id=\"flame-wait\""), "no wait flame graph");
    assert!(
        html.contains("id=\"flame-diff-wait\""),
        "no differential wait graph at the knee"
    );
}

/// The service killed mid-run: the run finishes, the collector's failed
/// fetches are errors (never a hang or a crash), and what was taken before
/// is still read.
#[test]
fn a_service_that_goes_away_mid_run_is_an_error_not_a_failure() {
    let _g = load::serial();
    let svc = go::Service::start();
    let yaml = format!(
        r#"
name: go-gone
target: {{ url: "{{url}}", timeout: 2s }}
requests: [ {{ path: "/post?ms=1" }} ]
shape: {{ constant: {{ rate: 20/s, duration: 4s }} }}
collectors:
  transport: {{ kind: local }}
  target: {{ pprof: "{pprof}" }}
  collect:
    - use: go
      probes: {{ goroutines: {{ every: 500ms }}, mutex: {{ every: 500ms }}, block: {{ enabled: false }} }}
"#,
        pprof = svc.pprof_url(),
    );
    let url = svc.url();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(1500));
        drop(svc);
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let r = load::run(&load::profile(&yaml, &url), dir.path());
    killer.join().expect("killer");
    let c = r.summary.collectors.as_ref().expect("collectors summary");
    assert!(c.errors_total > 0, "fetches after the kill fail: {c:?}");
    assert!(
        c.errors.iter().any(|e| e.probe == "go/goroutines"),
        "{:?}",
        c.errors
    );
    assert!(
        c.artifacts.iter().any(|a| a.probe == "goroutines"),
        "dumps before the kill are kept: {:?}",
        c.artifacts
    );
    let fj = std::fs::read_to_string(dir.path().join("findings.json")).expect("findings.json");
    assert!(fj.contains("goroutine"), "the dumps taken before were read");
}
