//! Decoding the events brunt reads (contention, pinning, heap, samples,
//! direct buffers, Metaspace, loaded classes);
//! every other event type is skipped unread.

use std::collections::HashMap;

use super::buf::Value;
use super::metadata::Metadata;
use super::pool::Chunk;
use super::recording::{HeapSample, JfrRecording, JfrTotals, CLASS_COUNT_EVERY_S};
use super::sites::Agg;

const WANTED: &[&str] = &[
    "jdk.JavaMonitorEnter",
    "jdk.JavaMonitorWait",
    "jdk.ThreadPark",
    "jdk.VirtualThreadPinned",
    "jdk.GCHeapSummary",
    "jdk.ExecutionSample",
    "jdk.ObjectAllocationSample",
    "jdk.GarbageCollection",
    "jdk.DirectBufferStatistics",
    "jdk.MetaspaceSummary",
    "jdk.ClassLoadingStatistics",
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
    // Resolved only for the events that use it: allocation samples are the
    // most numerous and need just their weight.
    let stack_of = |chunk: &mut Chunk| {
        chunk
            .get(v, "stackTrace")
            .cloned()
            .map(|s| chunk.stack(&s))
            .unwrap_or_default()
    };
    match kind {
        "jdk.JavaMonitorEnter" | "jdk.JavaMonitorWait" | "jdk.ThreadPark" => {
            let stack = stack_of(chunk);
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
                let busy = agg.waited(&stack, ms, unix);
                if let Some(t) = counted(rec, agg, unix, ms) {
                    if kind == "jdk.JavaMonitorEnter" {
                        t.monitor_enter += 1;
                        t.monitor_enter_ms += ms;
                    } else if busy {
                        t.park += 1;
                        t.park_ms += ms;
                    }
                }
            }
            agg.add(kind, class, &stack, ms, unix, owner);
        }
        "jdk.VirtualThreadPinned" => {
            let stack = stack_of(chunk);
            agg.waited(&stack, ms, unix);
            if let Some(t) = counted(rec, agg, unix, ms) {
                t.pinned += 1;
                t.pinned_ms += ms;
            }
            agg.add(kind, None, &stack, ms, unix, None)
        }
        "jdk.GCHeapSummary" => rec.heap.push(heap_sample(v, chunk, unix)),
        "jdk.DirectBufferStatistics" => {
            rec.gauges.direct_buffers.push((
                unix,
                uint(chunk, v, "count"),
                uint(chunk, v, "memoryUsed"),
            ));
        }
        "jdk.MetaspaceSummary" if when(v, chunk) == "After GC" => {
            let used = chunk
                .get(v, "metaspace")
                .and_then(|m| chunk.int(chunk.get(m, "used")));
            if let Some(u) = used {
                rec.gauges.metaspace.push((unix, u.max(0) as u64));
            }
        }
        "jdk.ClassLoadingStatistics" => {
            let c = &mut rec.gauges.classes;
            // Events of one chunk come in write order; a later window's
            // earlier-timed rows are sorted when windows are absorbed.
            if c.last()
                .is_none_or(|l| (unix - l.0).abs() >= CLASS_COUNT_EVERY_S)
            {
                let loaded = uint(chunk, v, "loadedClassCount");
                c.push((
                    unix,
                    loaded.saturating_sub(uint(chunk, v, "unloadedClassCount")),
                ));
            }
        }
        "jdk.ExecutionSample" => agg.sample(&stack_of(chunk), unix),
        "jdk.ObjectAllocationSample" => {
            let w = chunk.int(chunk.get(v, "weight")).unwrap_or(0).max(0);
            if let Some(t) = counted(rec, agg, unix, ms) {
                t.alloc_bytes += w as f64;
                t.alloc_samples += 1;
            }
        }
        "jdk.GarbageCollection" => {
            let id = chunk.int(chunk.get(v, "gcId")).unwrap_or(-1);
            // `name` is a `jdk.types.GCName` constant: its own `name` is the text.
            let name = chunk.get(v, "name").and_then(|n| {
                chunk
                    .string(n)
                    .or_else(|| chunk.get(n, "name").and_then(|x| chunk.string(x)))
            });
            if let Some(name) = name {
                rec.gc_names.insert(id, name);
            }
            let pause = chunk
                .int(chunk.get(v, "sumOfPauses"))
                .map(|d| chunk.ticks_to_ms(d).max(0.0))
                .unwrap_or(0.0);
            if let Some(t) = counted(rec, agg, unix, ms) {
                t.gc += 1;
                t.gc_pause_ms += pause;
            }
        }
        _ => {}
    }
}

/// The totals to add an event to, unless it ended before the cut (an
/// earlier window counted it). Events are written when they end, so the
/// end, not the start, places an event in a window.
fn counted<'r>(
    rec: &'r mut JfrRecording,
    agg: &Agg,
    start_unix: f64,
    ms: f64,
) -> Option<&'r mut JfrTotals> {
    let end = start_unix + ms.max(0.0) / 1e3;
    if !end.is_finite() || end <= agg.cut_unix {
        return None;
    }
    rec.totals.saw(end);
    Some(&mut rec.totals)
}

/// An event's count or size field (`None` and negatives as 0).
fn uint(chunk: &Chunk, v: &Value, field: &str) -> u64 {
    chunk.int(chunk.get(v, field)).unwrap_or(0).max(0) as u64
}

/// A GC summary's `when` (`Before GC`, `After GC`), a constant or inline.
fn when(v: &Value, chunk: &Chunk) -> String {
    chunk
        .get(v, "when")
        .and_then(|w| chunk.get(w, "when").or(Some(w)))
        .and_then(|w| chunk.string(w))
        .unwrap_or_default()
}

fn heap_sample(v: &Value, chunk: &Chunk, unix: f64) -> HeapSample {
    HeapSample {
        unix,
        gc_id: chunk.int(chunk.get(v, "gcId")).unwrap_or(-1),
        when: when(v, chunk),
        heap_used: chunk.int(chunk.get(v, "heapUsed")).unwrap_or(0).max(0) as u64,
        gc: None,
    }
}
