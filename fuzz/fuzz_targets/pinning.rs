//! Fuzzes the `-Djdk.tracePinnedThreads` trace parser and its findings.
#![no_main]

use brunt::diagnosis::findings::pinning_findings;
use brunt::diagnosis::pinning::parse_pinning;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = pinning_findings(&parse_pinning(&text, "fuzz"));
});
