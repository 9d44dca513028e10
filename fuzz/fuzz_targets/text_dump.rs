//! Fuzzes the HotSpot text thread-dump parser and the findings built on it.
#![no_main]

use brunt::diagnosis::findings::{dump_findings, Options};
use brunt::diagnosis::text::parse_text_dumps;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for d in parse_text_dumps(&text, "fuzz") {
        let _ = dump_findings(&d, &Options::default());
    }
});
