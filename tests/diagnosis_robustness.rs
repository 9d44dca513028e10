//! Robustness of the parsers on damaged input taken from a real JVM (JDK 21):
//! truncated, empty, binary garbage, mixed-up files, corrupt JFR chunk sizes,
//! and a bounded property test of random mutations. Every case must give an
//! error or a partial result with a warning — never a panic or a hang.

#[path = "support/java.rs"]
mod java;

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use brunt::diagnosis::findings::{dump_findings, Options};
use brunt::diagnosis::jfr::parse_jfr;
use brunt::diagnosis::json::parse_json_dump;
use brunt::diagnosis::pinning::parse_pinning;
use brunt::diagnosis::text::parse_text_dumps;
use brunt::diagnosis::{Analysis, DiagError, InputKind};
use java::JavaTarget;

const T: Duration = Duration::from_secs(30);

/// Real diagnostics captured once per test binary.
struct Inputs {
    text: String,
    json: String,
    jfr: Vec<u8>,
    pins: String,
}

fn inputs() -> &'static Inputs {
    static I: OnceLock<Inputs> = OnceLock::new();
    I.get_or_init(|| {
        // One JVM for all the tests of this binary, also under nextest.
        let parts = java::run_shared("robustness-inputs", 4, || {
            let t = JavaTarget::with_jvm_args(&java::jdk21(), &["-Djdk.tracePinnedThreads=full"]);
            t.proc.jfr_start("r", "profile");
            let mut reqs = t.fire("/contended?ms=1500", 5, T);
            reqs.extend(t.fire("/vthread?ms=1500", 2, T));
            t.get("/deadlock", T).expect("deadlock");
            let text = t.proc.thread_print_until(T, |d| {
                d.matches("(a com.brunt.target.Inventory)").count() >= 4
                    && d.contains("Found one Java-level deadlock")
            });
            let json = std::fs::read_to_string(t.proc.dump_json("t.json")).expect("json dump");
            for r in reqs {
                let _ = r.join();
            }
            let jfr = std::fs::read(t.proc.jfr_stop("r")).expect("jfr file");
            let pins = t.proc.stdout();
            assert!(pins.contains("<== monitors:"), "no pinning trace: {pins}");
            vec![text.into_bytes(), json.into_bytes(), jfr, pins.into_bytes()]
        });
        let text = |i: usize| String::from_utf8(parts[i].clone()).expect("shared text is UTF-8");
        Inputs {
            text: text(0),
            json: text(1),
            jfr: parts[2].clone(),
            pins: text(3),
        }
    })
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write input");
    p
}

fn jfr(bytes: &[u8]) -> Result<brunt::diagnosis::JfrRecording, brunt::diagnosis::jfr::JfrError> {
    parse_jfr(Cursor::new(bytes), bytes.len() as u64, "mem.jfr")
}

#[test]
fn empty_and_garbage_files_are_clear_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = write(dir.path(), "empty.txt", b"");
    let mut rng = fastrand::Rng::with_seed(7);
    let garbage: Vec<u8> = (0..64 * 1024).map(|_| rng.u8(..)).collect();
    let bin = write(dir.path(), "garbage.bin", &garbage);
    let prose = write(
        dir.path(),
        "notes.txt",
        b"just some \"quoted\" text\nnothing else\n",
    );
    match Analysis::from_paths(&[empty, bin, prose], &Options::default()) {
        Err(DiagError::NoInput(msg)) => {
            assert!(msg.contains("empty file"), "{msg}");
            assert!(
                msg.contains("not a thread dump, JFR recording or pinning trace"),
                "{msg}"
            );
        }
        other => panic!("expected NoInput, got {other:?}"),
    }
    // A file that is not there is an I/O error naming it.
    let err = Analysis::from_paths(&[dir.path().join("missing.txt")], &Options::default())
        .expect_err("missing file");
    assert!(err.to_string().contains("missing.txt"));
    // Garbage that starts with the JFR magic.
    let mut fake = b"FLR\0".to_vec();
    fake.extend_from_slice(&garbage[..200]);
    assert!(jfr(&fake)
        .map(|r| !r.warnings.is_empty() && r.events == 0)
        .unwrap_or(true));
}

#[test]
fn truncated_text_dumps_give_partial_results() {
    let text = &inputs().text;
    let full = parse_text_dumps(text, "full");
    assert_eq!(full.len(), 1);
    assert!(full[0].warnings.is_empty(), "{:?}", full[0].warnings);
    let n_full = full[0].threads.len();
    let footer = text.find("JNI global refs").expect("footer");
    for i in 1..=40 {
        let mut cut = text.len() * i / 41;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let part = &text[..cut];
        let dumps = parse_text_dumps(part, "cut");
        if cut > text.find("Full thread dump").unwrap_or(0) + 20 {
            assert_eq!(dumps.len(), 1, "cut at {cut}");
            let d = &dumps[0];
            assert!(d.threads.len() <= n_full);
            if cut < footer {
                assert!(
                    d.warnings.iter().any(|w| w.contains("truncated")),
                    "cut at {cut}"
                );
            }
            let _ = dump_findings(d, &Options::default());
        }
    }
}

#[test]
fn truncated_and_corrupt_json_is_an_error_not_a_panic() {
    let json = &inputs().json;
    for i in 1..20 {
        let cut = json.len() * i / 20;
        let part = json.get(..cut).unwrap_or("");
        assert!(parse_json_dump(part, "cut.json").is_err());
    }
    assert!(parse_json_dump("{\"threadDump\": 5}", "x").is_ok_and(|d| d.threads.is_empty()));
    assert!(parse_json_dump("[]", "x").is_err());
}

#[test]
fn truncated_jfr_keeps_complete_chunks_and_warns() {
    let bytes = &inputs().jfr;
    let full = jfr(bytes).expect("full recording");
    assert!(full.events > 100 && full.warnings.is_empty());
    // One byte short: the chunk's metadata is gone; a warning says so.
    let r = jfr(&bytes[..bytes.len() - 1]).expect("partial");
    assert_eq!(r.events, 0);
    assert!(
        r.warnings.iter().any(|w| w.contains("truncated")),
        "{:?}",
        r.warnings
    );
    // Two chunks with the second cut: the first chunk's events survive.
    let mut two = bytes.clone();
    two.extend_from_slice(&bytes[..bytes.len() / 2]);
    let r = jfr(&two).expect("partial");
    assert_eq!(r.chunks, 1);
    assert_eq!(r.events, full.events);
    assert_eq!(r.warnings.len(), 1);
    // Cuts everywhere, including inside the header.
    for i in 0..60 {
        let cut = bytes.len() * i / 60;
        let _ = jfr(&bytes[..cut]);
    }
}

#[test]
fn concatenated_recordings_are_read_chunk_by_chunk() {
    let bytes = &inputs().jfr;
    let one = jfr(bytes).expect("one");
    let mut many = Vec::new();
    for _ in 0..5 {
        many.extend_from_slice(bytes);
    }
    let r = jfr(&many).expect("five chunks");
    assert_eq!(r.chunks, 5);
    assert_eq!(r.events, one.events * 5);
    let n = |r: &brunt::diagnosis::JfrRecording| r.sites.iter().map(|s| s.count).sum::<u64>();
    assert_eq!(n(&r), n(&one) * 5);
}

#[test]
fn corrupt_jfr_sizes_and_offsets_are_bounded() {
    let bytes = &inputs().jfr;
    let set = |at: usize, v: u64| {
        let mut b = bytes.clone();
        b[at..at + 8].copy_from_slice(&v.to_be_bytes());
        b
    };
    // A chunk size of 2^40 once aborted `jfrs` on allocation: here a warning.
    for (field, v) in [
        (8, 1u64 << 40),
        (8, 0),
        (8, 3),
        (16, 1u64 << 40),
        (24, 1u64 << 40),
        (16, 70),
        (24, 70),
        (56, 0),
    ] {
        let started = Instant::now();
        let r = jfr(&set(field, v));
        assert!(started.elapsed() < Duration::from_secs(5));
        match r {
            Ok(r) => assert!(!r.warnings.is_empty(), "field {field} = {v}: no warning"),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
    // Unsupported version.
    let mut b = bytes.clone();
    b[4] = 0;
    b[5] = 9;
    assert!(jfr(&b).is_err_and(|e| e.to_string().contains("version")));
}

#[test]
fn mixed_run_directory() {
    let i = inputs();
    let run = tempfile::tempdir().expect("tempdir");
    let diag = run.path().join("diagnostics");
    std::fs::create_dir(&diag).expect("mkdir");
    write(&diag, "dump-step-1.txt", i.text.as_bytes());
    // A JSON dump and a recording with misleading names.
    write(&diag, "dump.txt.json", i.json.as_bytes());
    write(&diag, "recording.log", &i.jfr);
    write(&diag, "target-stdout.log", i.pins.as_bytes());
    write(&diag, "empty.txt", b"");
    write(&diag, "noise.bin", &[0xff, 0xfe, 0, 1, 2, 3]);
    let a = Analysis::from_run_dir(run.path(), &Options::default()).expect("analysis");
    let kind = |suffix: &str| {
        a.inputs
            .iter()
            .find(|f| f.file.ends_with(suffix))
            .map(|f| f.kind)
            .expect(suffix)
    };
    assert_eq!(kind("dump-step-1.txt"), InputKind::ThreadDumpText);
    assert_eq!(kind("dump.txt.json"), InputKind::ThreadDumpJson);
    assert_eq!(kind("recording.log"), InputKind::Jfr);
    assert_eq!(kind("target-stdout.log"), InputKind::PinningTrace);
    assert_eq!(kind("empty.txt"), InputKind::Unreadable);
    assert_eq!(kind("noise.bin"), InputKind::Unreadable);
    assert!(a.findings.iter().any(|f| f.summary.contains("deadlock")));
    assert!(a.findings.iter().any(|f| f.key.starts_with("pin:")));
    assert!(a.findings.iter().any(|f| f.key.starts_with("jfr:")));
    // findings.json round-trips.
    let out = a
        .write_findings_json(run.path())
        .expect("write findings.json");
    let back: Analysis =
        serde_json::from_str(&std::fs::read_to_string(out).expect("read")).expect("parse");
    // (Floats may differ in the last bit through serde_json: compare the rest.)
    assert_eq!(back.inputs, a.inputs);
    let keys = |a: &Analysis| -> Vec<(String, String)> {
        a.findings
            .iter()
            .map(|f| (f.key.clone(), f.summary.clone()))
            .collect()
    };
    assert_eq!(keys(&back), keys(&a));
    // The CLI entry point on the same directory.
    assert_eq!(
        brunt::cli::analyze::analyze_cli(&[run.path().to_path_buf()], true, None).expect("cli"),
        0
    );
    assert_eq!(
        brunt::cli::analyze::analyze_cli(&[diag.join("empty.txt")], false, None).expect("cli"),
        2
    );
}

/// Random damage: flipped bytes, deleted and duplicated ranges, truncation.
fn mutate(rng: &mut fastrand::Rng, src: &[u8]) -> Vec<u8> {
    let mut b = src.to_vec();
    for _ in 0..rng.usize(1..8) {
        if b.is_empty() {
            break;
        }
        let at = rng.usize(..b.len());
        match rng.u8(..5) {
            0 => b[at] = rng.u8(..),
            1 => {
                let end = (at + rng.usize(1..64)).min(b.len());
                b.drain(at..end);
            }
            2 => {
                let end = (at + rng.usize(1..256)).min(b.len());
                let dup = b[at..end].to_vec();
                let to = rng.usize(..=b.len());
                b.splice(to..to, dup);
            }
            3 => b.truncate(at),
            _ => {
                // Interesting values for sizes and counts.
                let v = [0u8, 0x7f, 0x80, 0xff][rng.usize(..4)];
                b[at] = v;
            }
        }
    }
    b
}

#[test]
fn random_mutations_of_real_inputs_never_panic_or_hang() {
    let i = inputs();
    let mut rng = fastrand::Rng::with_seed(0x0b5e_55ed);
    let deadline = Instant::now() + Duration::from_secs(120);
    let opts = Options::default();
    let rounds = 250;
    for round in 0..rounds {
        assert!(
            Instant::now() < deadline,
            "mutation test too slow at round {round}"
        );
        let t = mutate(&mut rng, i.text.as_bytes());
        for d in parse_text_dumps(&String::from_utf8_lossy(&t), "m") {
            let _ = dump_findings(&d, &opts);
        }
        let j = mutate(&mut rng, i.json.as_bytes());
        if let Ok(d) = parse_json_dump(&String::from_utf8_lossy(&j), "m") {
            let _ = dump_findings(&d, &opts);
        }
        let p = mutate(&mut rng, i.pins.as_bytes());
        let _ = parse_pinning(&String::from_utf8_lossy(&p), "m");
        let f = mutate(&mut rng, &i.jfr);
        let started = Instant::now();
        let _ = jfr(&f);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "JFR parse of a mutated file took {:?}",
            started.elapsed()
        );
    }
}
