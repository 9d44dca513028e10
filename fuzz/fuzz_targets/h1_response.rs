//! Fuzzes the HTTP/1.1 codec's response parser (engine/h1.rs): the head,
//! then its body fed in pieces of a size the first byte picks; a split
//! decode must end exactly as the whole one does (same payload, same bytes
//! consumed, same error), and nothing may panic.
#![no_main]

use brunt::engine::h1::{parse_head, Body, Framing, H1Error};
use libfuzzer_sys::fuzz_target;

type Decoded = Result<(Vec<u8>, usize, bool), H1Error>;

fn decode(f: Framing, input: &[u8], step: usize) -> Decoded {
    let mut b = Body::new(f);
    let mut out = Vec::new();
    let mut used = 0;
    for piece in input.chunks(step.max(1)) {
        used += b.feed(piece, Some(&mut out))?;
        if b.done() {
            break;
        }
    }
    Ok((out, used, b.done()))
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, data)) = data.split_first() else {
        return;
    };
    let step = usize::from(pick >> 1) + 1;
    if let Ok(Some(h)) = parse_head(data, pick & 1 == 1, None) {
        assert!(h.len <= data.len());
        let body = &data[h.len..];
        assert_eq!(decode(h.framing, body, body.len()), decode(h.framing, body, step));
    }
    // The chunked decoder alone, on the raw bytes.
    assert_eq!(
        decode(Framing::Chunked, data, data.len()),
        decode(Framing::Chunked, data, step)
    );
});
