//! Dump formats the JVMs in the test run cannot produce (JDK 8, JDK 25) and
//! the tricky lock lines the issue lists, on small dumps written in each
//! JDK's format.

use brunt::diagnosis::findings::{dump_findings, Options};
use brunt::diagnosis::model::{LockKind, ThreadState};
use brunt::diagnosis::text::parse_text_dumps;
use brunt::diagnosis::{json::parse_json_dump, Detail};

/// A JDK 8 dump: worker-1 and worker-2 wait for the Inventory monitor
/// worker-0 holds.
fn jdk8() -> String {
    let inventory_waiter = |header: &str| {
        format!(
            "{header}
   java.lang.Thread.State: BLOCKED (on object monitor)
\tat com.acme.Inventory.reserve(Inventory.java:88)
\t- waiting to lock <0x000000076ab62208> (a com.acme.Inventory)
\tat com.acme.Api.handle(Api.java:12)

   Locked ownable synchronizers:
\t- None

"
        )
    };
    format!(
        "{JDK8_HEAD}{}{}{JDK8_REST}",
        inventory_waiter(
            "\"worker-2\" #11 prio=5 os_prio=0 tid=0x00007f5c5c0f7800 nid=0x1a21 waiting for monitor entry [0x00007f5c3f6fd000]"
        ),
        inventory_waiter(
            "\"worker-1\" #10 prio=5 os_prio=0 tid=0x00007f5c5c0f6800 nid=0x1a20 waiting for monitor entry [0x00007f5c3f7fe000]"
        ),
    )
}

const JDK8_HEAD: &str = "2026-11-30 10:00:00
Full thread dump Java HotSpot(TM) 64-Bit Server VM (25.402-b06 mixed mode):

\"Attach Listener\" #12 daemon prio=9 os_prio=0 tid=0x00007f5c30001000 nid=0x1a2b waiting on condition [0x0000000000000000]
   java.lang.Thread.State: RUNNABLE

   Locked ownable synchronizers:
\t- None

";

const JDK8_REST: &str = "\"worker-0\" #9 prio=5 os_prio=0 tid=0x00007f5c5c0f5000 nid=0x1a1f waiting for monitor entry [0x00007f5c3f8ff000]
   java.lang.Thread.State: BLOCKED (on object monitor)
\tat com.acme.Audit.log(Audit.java:20)
\t- waiting to lock <0x000000076ab99999> (a com.acme.Audit)
\tat com.acme.Inventory.reserve(Inventory.java:90)
\t- locked <0x000000076ab62208> (a com.acme.Inventory)
\tat com.acme.Api.handle(Api.java:12)

   Locked ownable synchronizers:
\t- <0x000000076ab70000> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)

\"waiter\" #8 prio=5 os_prio=0 tid=0x00007f5c5c0f4000 nid=0x1a1e in Object.wait() [0x00007f5c3f9ff000]
   java.lang.Thread.State: WAITING (on object monitor)
\tat java.lang.Object.wait(Native Method)
\t- waiting on <0x000000076ab99999> (a com.acme.Audit)
\tat java.lang.Object.wait(Object.java:502)
\tat com.acme.Audit.await(Audit.java:30)
\t- locked <0x000000076ab99999> (a com.acme.Audit)

   Locked ownable synchronizers:
\t- None

\"holder-of-audit\" #7 prio=5 os_prio=0 tid=0x00007f5c5c0f3000 nid=0x1a1d waiting for monitor entry [0x00007f5c3faff000]
   java.lang.Thread.State: BLOCKED (on object monitor)
\tat com.acme.Audit.flush(Audit.java:40)
\t- locked <0x000000076ab99999> (a com.acme.Audit)
\tat com.acme.Audit.run(Audit.java:44)

   Locked ownable synchronizers:
\t- None

\"parker\" #6 prio=5 os_prio=0 tid=0x00007f5c5c0f2000 nid=0x1a1c waiting on condition [0x00007f5c3fbff000]
   java.lang.Thread.State: WAITING (parking)
\tat sun.misc.Unsafe.park(Native Method)
\t- parking to wait for  <0x000000076ab70000> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)
\tat java.util.concurrent.locks.LockSupport.park(LockSupport.java:175)
\tat com.acme.Ledger.post(Ledger.java:5)

   Locked ownable synchronizers:
\t- None

\"VM Thread\" os_prio=0 tid=0x00007f5c5c06d000 nid=0x1a11 runnable 

\"GC task thread#0 (ParallelGC)\" os_prio=0 tid=0x00007f5c5c01f000 nid=0x1a0b runnable 

JNI global references: 15
";

#[test]
fn jdk8_dump_monitor_holder_wait_and_ownable() {
    let dumps = parse_text_dumps(&jdk8(), "jdk8.txt");
    assert_eq!(dumps.len(), 1);
    let d = &dumps[0];
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(d.time.as_deref(), Some("2026-11-30 10:00:00"));
    assert_eq!(d.threads.len(), 9);
    assert_eq!(d.threads.iter().filter(|t| t.internal).count(), 2);
    let t = |n: &str| d.threads.iter().find(|t| t.name == n).expect(n);
    assert_eq!(t("worker-2").state(), ThreadState::Blocked);
    assert_eq!(t("worker-0").header_state, "waiting for monitor entry");
    // `- locked` + `- waiting on` the same address: released by Object.wait.
    assert!(t("waiter").held_monitors().is_empty());
    assert_eq!(t("holder-of-audit").held_monitors().len(), 1);
    assert_eq!(
        t("parker").parked_on().map(|l| l.kind),
        Some(LockKind::ParkingFor)
    );
    assert_eq!(t("worker-0").ownable_synchronizers.len(), 1);

    let f = dump_findings(d, &Options::default());
    let lock = |class: &str| {
        f.iter()
            .find_map(|f| match &f.detail {
                Detail::LockContention {
                    class: c,
                    holder,
                    waiters,
                    ..
                } if c == class => Some((holder.clone(), waiters.clone())),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no contention on {class}"))
    };
    // worker-0 holds Inventory while itself BLOCKED on Audit: a holder, not a waiter.
    let (holder, mut waiters) = lock("com.acme.Inventory");
    waiters.sort();
    assert_eq!(holder.as_deref(), Some("worker-0"));
    assert_eq!(waiters, vec!["worker-1", "worker-2"]);
    // Audit is held by the BLOCKED holder-of-audit, not by `waiter` (in wait()).
    let (holder, waiters) = lock("com.acme.Audit");
    assert_eq!(holder.as_deref(), Some("holder-of-audit"));
    assert_eq!(waiters, vec!["worker-0"]);
    // ReentrantLock: owner only under "Locked ownable synchronizers".
    let (holder, waiters) = lock("java.util.concurrent.locks.ReentrantLock$NonfairSync");
    assert_eq!(holder.as_deref(), Some("worker-0"));
    assert_eq!(waiters, vec!["parker"]);
}

#[test]
fn several_dumps_in_one_log_and_truncation_warning() {
    let jdk8 = jdk8();
    let log = format!(
        "starting app\n{jdk8}\nmore log\n{}",
        jdk8.replace("10:00:00", "10:00:05")
    );
    let cut = &log[..log.len() - 40];
    let dumps = parse_text_dumps(cut, "app.log");
    assert_eq!(dumps.len(), 2);
    assert_eq!(dumps[1].time.as_deref(), Some("2026-11-30 10:00:05"));
    assert!(dumps[0].warnings.is_empty());
    assert!(dumps[1].warnings.iter().any(|w| w.contains("truncated")));
}

const JDK25: &str = "12345:
2026-11-30 11:33:55
Full thread dump OpenJDK 64-Bit Server VM (25.0.2+10-LTS mixed mode, sharing):

Threads class SMR info:
_java_thread_list=0x00007f1, length=3, elements={
0x00007f4ad4, 0x00007f4ad5
}

\"ForkJoinPool-1-worker-1\" #31 [9001] daemon prio=5 os_prio=0 cpu=1.20ms elapsed=3.40s tid=0x00007f4ad434ad90 nid=9001 waiting on condition  [0x00007f4ad86ec000]
   Carrying virtual thread #40
\tat jdk.internal.vm.Continuation.run(java.base@25.0.2/Continuation.java:251)
\tat java.lang.VirtualThread.runContinuation(java.base@25.0.2/VirtualThread.java:245)

\"http-nio-8080-exec-7\" #25 [9000] prio=5 os_prio=0 cpu=5.00ms elapsed=3.40s allocated=1M defined_classes=3 tid=0x00007f4ad434ad80 nid=9000 waiting on condition  [0x00007f4ad86ed000]
   java.lang.Thread.State: TIMED_WAITING (sleeping)
\tat java.lang.Thread.sleep0(java.base@25.0.2/Native Method)
\tat com.acme.Inventory.reserve(Inventory.java:88)
\t- locked <0x000000069dc78a48> (a com.acme.Inventory)

os_prio=0 cpu=0.10ms elapsed=3.00s tid=0x00007f4 nid=9005 runnable

JNI global refs: 15, weak refs: 0
";

#[test]
fn jdk25_header_carrier_and_internal_lines() {
    let d = parse_text_dumps(JDK25, "jdk25.txt");
    assert_eq!(d.len(), 1);
    let d = &d[0];
    assert_eq!(d.pid, Some(12345));
    assert!(d.jvm.as_deref().unwrap_or("").contains("25.0.2"));
    assert_eq!(d.threads.len(), 3);
    assert_eq!(d.threads[0].carrying, Some(40));
    assert_eq!(d.threads[0].id, Some(31));
    assert_eq!(d.threads[1].frames[0].location, "Native Method");
    assert_eq!(
        d.threads[1].frames[1].short(),
        "Inventory.reserve(Inventory.java:88)"
    );
    assert!(d.threads[2].internal);
}

#[test]
fn jdk25_json_dump_fields() {
    let json = r#"{
  "threadDump": {
    "processId": "4711",
    "time": "2026-11-30T11:33:55.368Z",
    "runtimeVersion": "25.0.2+10-LTS",
    "threadContainers": [
      {"container": "<root>", "parent": null, "owner": null, "threads": [
        {"tid": "25", "name": "worker-1", "state": "BLOCKED",
         "blockedOn": "com.acme.Inventory@5e2de80c",
         "stack": ["com.acme.Inventory.reserve(Inventory.java:88)", "com.acme.Api.handle(Api.java:12)"]},
        {"tid": "26", "name": "worker-2", "state": "TIMED_WAITING",
         "monitorsOwned": [{"depth": 1, "locks": ["com.acme.Inventory@5e2de80c"]}],
         "stack": ["java.base/java.lang.Thread.sleep0(Native Method)", "com.acme.Inventory.reserve(Inventory.java:88)"]},
        {"tid": "40", "name": "", "virtual": true, "carrier": "31", "state": "WAITING",
         "parkBlocker": {"object": "java.util.concurrent.locks.ReentrantLock$NonfairSync@1"},
         "stack": ["java.base/java.lang.VirtualThread.park(VirtualThread.java:1)"]},
        {"name": 17}
      ], "threadCount": "4"}
    ]
  }
}"#;
    let d = parse_json_dump(json, "t.json").expect("parse");
    assert_eq!(d.pid, Some(4711));
    assert_eq!(d.threads.len(), 3);
    assert_eq!(d.warnings.len(), 1, "the malformed entry is reported");
    assert!(d.threads[2].is_virtual);
    assert_eq!(d.threads[2].carrier, Some(31));
    assert_eq!(d.threads[1].frames[0].method, "java.lang.Thread.sleep0");
    let f = dump_findings(&d, &Options::default());
    assert!(f.iter().any(|f| matches!(&f.detail,
        Detail::LockContention { holder: Some(h), waiters, class, .. }
            if h == "worker-2" && waiters == &vec!["worker-1".to_string()] && class == "com.acme.Inventory")));
}

#[test]
fn pinning_trace_formats() {
    use brunt::diagnosis::pinning::parse_pinning;
    // JDK 21.0.x (full) and the older two-line header; interleaved with log lines.
    let log = "INFO started
VirtualThread[#30,vthread-1]/runnable@ForkJoinPool-1-worker-1 reason:MONITOR
    java.base/java.lang.VirtualThread$VThreadContinuation.onPinned(Unknown Source)
    java.base/java.lang.Thread.sleep(Unknown Source)
    com.acme.Cache.load(Cache.java:40)
    com.acme.Cache.get(Cache.java:22) <== monitors:1
    java.base/java.lang.VirtualThread.run(Unknown Source)
INFO request done
Thread[#29,ForkJoinPool-1-worker-2,5,CarrierThreads]
VirtualThread[#31]/runnable@ForkJoinPool-1-worker-2
    java.base/java.lang.VirtualThread.parkOnCarrierThread(VirtualThread.java:661)
    com.acme.Db.query(Db.java:9) <== monitors:2
";
    let ev = parse_pinning(log, "app.log");
    assert_eq!(ev.len(), 2);
    assert_eq!(ev[0].carrier.as_deref(), Some("ForkJoinPool-1-worker-1"));
    assert_eq!(ev[0].reason.as_deref(), Some("MONITOR"));
    assert_eq!(ev[0].monitor_frames, vec![(3, 1)]);
    assert_eq!(
        ev[1].thread,
        "VirtualThread[#31]/runnable@ForkJoinPool-1-worker-2"
    );
    assert_eq!(ev[1].monitor_frames, vec![(1, 2)]);
}
