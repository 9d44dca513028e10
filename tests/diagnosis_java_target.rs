//! The shared Java test target itself: it starts on JDK 17 and 21, every
//! endpoint answers, and the pool harness exhausts every pool kind. Other
//! suites (collectors, report, diagnosis) rely on this behaviour.

#[path = "support/java.rs"]
mod java;

use std::time::Duration;

use java::JavaTarget;

const T: Duration = Duration::from_secs(20);

fn endpoints(jdk: &java::Jdk) {
    let t = JavaTarget::sized(jdk, 8, 2, 2);
    for path in [
        "/fast",
        "/health",
        "/contended?ms=1",
        "/pool?ms=1",
        "/leak?kb=1",
    ] {
        let (status, _) = t.get(path, T).expect(path);
        assert_eq!(status, 200, "{path}");
    }
    let (status, body) = t.get("/vthread?ms=1", T).expect("vthread");
    assert_eq!(status, 200);
    let expect = if jdk.major >= 21 {
        "virtual"
    } else {
        "platform"
    };
    assert!(body.ends_with(&format!("{expect}\n")), "{body}");

    // 6 concurrent requests of 500 ms against a cap of 2: some must be shed, with Retry-After.
    let res: Vec<(u16, String)> = t
        .fire("/shed?ms=500", 6, T)
        .into_iter()
        .map(|h| h.join().expect("join").expect("shed request"))
        .collect();
    let shed: Vec<&(u16, String)> = res.iter().filter(|(s, _)| *s == 503).collect();
    assert!(!shed.is_empty(), "nothing shed: {res:?}");
    assert!(res.iter().any(|(s, _)| *s == 200), "nothing admitted");
    // Header names are case-insensitive; the JDK server prints `Retry-after`.
    assert!(shed
        .iter()
        .all(|(_, r)| r.to_ascii_lowercase().contains("retry-after: 1")));

    let (status, _) = t.get("/deadlock", T).expect("deadlock");
    assert_eq!(status, 200);
    let dump = t
        .proc
        .thread_print_until(T, |d| d.contains("Found one Java-level deadlock"));
    assert!(dump.contains("com.brunt.target.Deadlocks$LeftLock"));
}

java::per_jdk!(&endpoints:
    target_endpoints_jdk17 => jdk17,
    target_endpoints_jdk21 => jdk21,
);

#[test]
fn pool_harness_exhausts_every_kind() {
    let p = java::start_pool_harness(&java::jdk21(), java::POOL_KINDS, 2);
    let ready = p.ready_line.clone();
    for kind in java::POOL_KINDS {
        assert!(
            ready.split_whitespace().any(|k| k == *kind),
            "{kind} not in {ready}"
        );
    }
    let dump = p.thread_print();
    for kind in java::POOL_KINDS {
        assert!(dump.contains(&format!("\"{kind}-waiter-2\"")), "{kind}");
    }
}
