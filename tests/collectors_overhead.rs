//! Collector overhead on the generator: the same bounded load (an in-process
//! HTTP server and a paced client loop) runs without collectors, then with the
//! host collector over SSH (1 s) and generator health; the test prints the
//! process CPU of both rounds and the CPU of the collector threads themselves
//! (read per thread from /proc/self/task), and bounds the latter.

#[path = "support/collect.rs"]
mod collect;
#[path = "support/oneshot_http.rs"]
mod oneshot_http;
#[path = "support/sshd.rs"]
mod sshd;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use brunt::vocab::RunClock;

fn clk_tck() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// utime+stime ticks from a /proc stat line.
fn ticks(stat: &str) -> u64 {
    stat.rfind(')')
        .map(|i| &stat[i + 1..])
        .map(|r| r.split_whitespace().collect::<Vec<_>>())
        .and_then(|t| Some(t.get(11)?.parse::<u64>().ok()? + t.get(12)?.parse::<u64>().ok()?))
        .unwrap_or(0)
}

fn process_ticks() -> u64 {
    ticks(&std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat"))
}

/// Ticks of this process's threads whose name starts with `brunt-`.
fn collector_thread_ticks() -> (u64, Vec<String>) {
    let mut total = 0;
    let mut names = Vec::new();
    for e in std::fs::read_dir("/proc/self/task")
        .expect("tasks")
        .flatten()
    {
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        if comm.starts_with("brunt-") {
            let t = ticks(&std::fs::read_to_string(e.path().join("stat")).unwrap_or_default());
            total += t;
            names.push(format!("{}={t}", comm.trim()));
        }
    }
    (total, names)
}

/// 4000 requests paced at one per ms (bounded to 15 s): returns elapsed.
fn load(port: u16) -> Duration {
    let t0 = Instant::now();
    for i in 0..4000u32 {
        if t0.elapsed() > Duration::from_secs(15) {
            break;
        }
        let due = Duration::from_millis(u64::from(i));
        if let Some(w) = due.checked_sub(t0.elapsed()) {
            thread::sleep(w);
        }
        let mut c = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .expect("write");
        let mut b = Vec::new();
        c.read_to_end(&mut b).expect("read");
    }
    t0.elapsed()
}

#[test]
fn collector_overhead_on_the_generator() {
    let s = sshd::Sshd::start();
    let stop = Arc::new(AtomicBool::new(false));
    let (port, srv) = oneshot_http::server(stop.clone());
    let hz = clk_tck();

    let c0 = process_ticks();
    let base_wall = load(port);
    let base_cpu = (process_ticks() - c0) as f64 / hz;

    let run_dir = tempfile::tempdir().expect("tempdir");
    let cfg = collect::host_of_this_process(s.transport(), port, 1000);
    let set = collect::start(&cfg, run_dir.path(), RunClock::now(), vec![]);
    let c1 = process_ticks();
    let (k0, _) = collector_thread_ticks();
    let coll_wall = load(port);
    let coll_cpu = (process_ticks() - c1) as f64 / hz;
    let (k1, names) = collector_thread_ticks();
    let summary = set.finish();
    stop.store(true, Ordering::Relaxed);
    let _ = srv.join();

    let threads_cpu = (k1.saturating_sub(k0)) as f64 / hz;
    let pct = |cpu: f64, wall: Duration| cpu / wall.as_secs_f64() * 100.0;
    eprintln!(
        "overhead: without collectors {:.3} s CPU over {:.2} s ({:.1}% of a core); with {:.3} s over {:.2} s ({:.1}%); collector threads {names:?}: {:.3} s ({:.2}% of a core); host samples {}",
        base_cpu,
        base_wall.as_secs_f64(),
        pct(base_cpu, base_wall),
        coll_cpu,
        coll_wall.as_secs_f64(),
        pct(coll_cpu, coll_wall),
        threads_cpu,
        pct(threads_cpu, coll_wall),
        summary.streams.first().map(|s| s.rows).unwrap_or(0),
    );
    assert!(summary.streams.first().is_some_and(|s| s.rows >= 2));
    assert!(names.len() >= 2, "collector threads not found: {names:?}");
    assert!(
        pct(threads_cpu, coll_wall) < 10.0,
        "collector threads used {threads_cpu:.3} s CPU"
    );
}
