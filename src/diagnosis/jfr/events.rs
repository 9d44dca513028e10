//! Decoding the events brunt reads (contention, pinning, heap, samples);
//! every other event type is skipped unread.

use std::collections::HashMap;

use super::buf::Value;
use super::metadata::Metadata;
use super::pool::Chunk;
use super::recording::{HeapSample, JfrRecording};
use super::sites::Agg;

const WANTED: &[&str] = &[
    "jdk.JavaMonitorEnter",
    "jdk.JavaMonitorWait",
    "jdk.ThreadPark",
    "jdk.VirtualThreadPinned",
    "jdk.GCHeapSummary",
    "jdk.ExecutionSample",
];

/// The chunk's type ids of the events brunt decodes.
pub(super) fn wanted_types(meta: &Metadata) -> HashMap<u64, &'static str> {
    meta.classes
        .iter()
        .filter_map(|(id, c)| WANTED.iter().find(|w| **w == c.name).map(|w| (*id, *w)))
        .collect()
}

/// Adds one decoded event of type `kind` to the recording or its sites.
pub(super) fn handle_event(
    kind: &str,
    v: &Value,
    chunk: &mut Chunk,
    rec: &mut JfrRecording,
    agg: &mut Agg,
) {
    let start = chunk
        .int(chunk.get(v, "startTime"))
        .unwrap_or(chunk.start_ticks);
    let unix = chunk.ticks_to_unix(start);
    let ms = chunk
        .int(chunk.get(v, "duration"))
        .map(|d| chunk.ticks_to_ms(d))
        .unwrap_or(0.0);
    let stack = chunk
        .get(v, "stackTrace")
        .cloned()
        .map(|s| chunk.stack(&s))
        .unwrap_or_default();
    match kind {
        "jdk.JavaMonitorEnter" | "jdk.JavaMonitorWait" | "jdk.ThreadPark" => {
            let class_field = if kind == "jdk.ThreadPark" {
                "parkedClass"
            } else {
                "monitorClass"
            };
            let class = chunk.get(v, class_field).and_then(|c| chunk.class_name(c));
            let owner = match chunk.get(v, "previousOwner").cloned() {
                Some(o) if kind == "jdk.JavaMonitorEnter" => chunk.thread_name(&o),
                _ => None,
            };
            if kind != "jdk.JavaMonitorWait" {
                agg.waited(&stack, ms, unix);
            }
            agg.add(kind, class, &stack, ms, unix, owner);
        }
        "jdk.VirtualThreadPinned" => {
            agg.waited(&stack, ms, unix);
            agg.add(kind, None, &stack, ms, unix, None)
        }
        "jdk.GCHeapSummary" => rec.heap.push(heap_sample(v, chunk, unix)),
        "jdk.ExecutionSample" => agg.sample(&stack, unix),
        _ => {}
    }
}

fn heap_sample(v: &Value, chunk: &Chunk, unix: f64) -> HeapSample {
    let when = chunk
        .get(v, "when")
        .and_then(|w| chunk.get(w, "when").or(Some(w)))
        .and_then(|w| chunk.string(w))
        .unwrap_or_default();
    HeapSample {
        unix,
        gc_id: chunk.int(chunk.get(v, "gcId")).unwrap_or(-1),
        when,
        heap_used: chunk.int(chunk.get(v, "heapUsed")).unwrap_or(0).max(0) as u64,
    }
}
