//! The SSH link drops mid-run (sshd and its sessions killed, then started
//! again on the same port): the host collector records the gap and recovers,
//! while a bounded load loop on this machine keeps going unaffected and the
//! run's observer calls stay instant.

#[path = "support/collect.rs"]
mod collect;
#[path = "support/oneshot_http.rs"]
mod oneshot_http;
#[path = "support/sshd.rs"]
mod sshd;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use brunt::profile::collectors::TransportKind;
use brunt::vocab::{PhaseInfo, RunClock, WindowStats};

// Both tests kill and restart an sshd with tight timing checks: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn link_drop_over_ssh2() {
    link_drop(TransportKind::Ssh);
}

#[test]
fn link_drop_over_system_openssh() {
    link_drop(TransportKind::Openssh);
}

fn link_drop(kind: TransportKind) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut s = sshd::Sshd::start();
    let stop = Arc::new(AtomicBool::new(false));
    let (port, server) = oneshot_http::server(stop.clone());

    let run_dir = tempfile::tempdir().expect("tempdir");
    let mut transport = s.transport();
    transport.kind = kind;
    let cfg = collect::host_of_this_process(transport, port, 500);
    let clock = RunClock::now();
    let phase = PhaseInfo {
        index: 0,
        name: "steady".into(),
        label: "loop".into(),
        start: Duration::ZERO,
        duration: Duration::from_secs(12),
        level: None,
    };
    let set = collect::start(&cfg, run_dir.path(), clock, vec![phase.clone()]);
    let obs = set.observer();
    obs.phase_started(&phase, &clock);

    // The load: bounded in count and time.
    let load = thread::spawn(move || {
        let (mut n, mut max, mut max_obs) = (0u64, Duration::ZERO, Duration::ZERO);
        let t0 = Instant::now();
        let mut second = 0u64;
        while n < 50_000 && t0.elapsed() < Duration::from_secs(11) {
            let r0 = Instant::now();
            let mut c = TcpStream::connect(("127.0.0.1", port)).expect("connect to load target");
            c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                .expect("write");
            let mut body = Vec::new();
            c.read_to_end(&mut body).expect("read");
            assert!(body.ends_with(b"ok"), "bad response");
            max = max.max(r0.elapsed());
            n += 1;
            if t0.elapsed().as_secs() > second {
                second = t0.elapsed().as_secs();
                let o0 = Instant::now();
                obs.window(&WindowStats {
                    second,
                    p99_us: 1000,
                    ..Default::default()
                });
                max_obs = max_obs.max(o0.elapsed());
            }
            thread::sleep(Duration::from_millis(2));
        }
        (n, max, max_obs)
    });

    // Each remote command costs the login shell's rc files (here root's
    // .bashrc runs `pyenv init`: 0.25 s idle, up to 1.5 s on a loaded box),
    // so the timeline leaves room for a few samples on each side of the gap.
    thread::sleep(Duration::from_millis(3500));
    s.kill();
    let killed_at = clock.elapsed().as_secs_f64();
    thread::sleep(Duration::from_millis(2500));
    s.restart();
    let restarted_at = clock.elapsed().as_secs_f64();

    let (requests, max_latency, max_observer) = load.join().expect("load thread");
    let summary = set.finish();
    stop.store(true, Ordering::Relaxed);
    let _ = server.join();

    eprintln!(
        "requests {requests}, max latency {max_latency:?}, max observer call {max_observer:?}"
    );
    eprintln!("{kind:?}: gaps {:?}", summary.gaps);
    assert!(requests > 500, "the load loop stalled: {requests} requests");
    assert!(
        max_latency < Duration::from_millis(500),
        "load latency hit: {max_latency:?}"
    );
    assert!(
        max_observer < Duration::from_millis(20),
        "observer call blocked: {max_observer:?}"
    );

    assert_eq!(
        summary.gaps.len(),
        1,
        "one outage, one gap: {:?}",
        summary.gaps
    );
    let g = &summary.gaps[0];
    assert!(
        g.from_t >= killed_at - 0.1 && g.from_t <= killed_at + 2.5,
        "gap start {g:?} vs kill {killed_at}"
    );
    assert!(
        g.to_t >= restarted_at && g.to_t <= restarted_at + 2.5,
        "gap end {g:?} vs restart {restarted_at}"
    );
    assert!(g.missed >= 1);

    let host =
        std::fs::read_to_string(run_dir.path().join("diagnostics/host.jsonl")).expect("host.jsonl");
    let rows: Vec<serde_json::Value> = host
        .lines()
        .map(|l| serde_json::from_str(l).expect("jsonl row"))
        .collect();
    let ts: Vec<f64> = rows.iter().filter_map(|r| r["t"].as_f64()).collect();
    eprintln!(
        "samples (t, took_ms): {:?}",
        rows.iter()
            .map(|r| (r["t"].as_f64(), r["took_ms"].as_f64()))
            .collect::<Vec<_>>()
    );
    assert!(
        ts.iter().filter(|&&t| t < g.from_t).count() >= 2,
        "samples before the gap: {ts:?}"
    );
    assert!(
        ts.iter().filter(|&&t| t >= g.to_t).count() >= 2,
        "samples after the gap: {ts:?}"
    );
    assert!(
        !ts.iter().any(|&t| t > g.from_t + 0.01 && t < g.to_t - 0.01),
        "samples inside the gap: {ts:?}"
    );
    let last = rows.last().expect("rows");
    assert_eq!(last["phase"], "steady");
    assert!(last["cpu_busy_pct"].is_number(), "{last}");
    assert!(last["proc"]["threads"].as_u64().unwrap_or(0) >= 3, "{last}");
    assert!(last["port_tcp"].is_object(), "{last}");
    assert!(summary
        .streams
        .iter()
        .any(|s| s.name == "host" && s.rows as usize == rows.len()));
    let gen = summary.generator.expect("generator summary");
    assert!(gen.samples >= 10, "{gen:?}");
}
