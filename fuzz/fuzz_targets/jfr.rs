//! Fuzzes the streaming JFR chunk parser and its findings.
#![no_main]

use std::io::Cursor;

use brunt::diagnosis::findings::jfr_findings;
use brunt::diagnosis::jfr::parse_jfr;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = parse_jfr(Cursor::new(data), data.len() as u64, "fuzz") {
        let _ = jfr_findings(&r);
    }
});
