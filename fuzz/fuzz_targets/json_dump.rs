//! Fuzzes the JSON thread-dump parser and the findings built on it.
#![no_main]

use brunt::diagnosis::findings::{dump_findings, Options};
use brunt::diagnosis::json::parse_json_dump;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(d) = parse_json_dump(&text, "fuzz") {
        let _ = dump_findings(&d, &Options::default());
    }
});
