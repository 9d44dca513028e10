//! `jcmd PID VM.native_memory summary`: the `Total:` line, then one block per
//! category, `-   Thread (reserved=24648KB, committed=1392KB)` followed by
//! detail lines in parentheses. Only the category lines and the thread and
//! class counts are kept: they are what a native leak shows in (`Other` for
//! direct buffers and JNI mallocs, `Thread` for leaked threads' stacks,
//! `Class`/`Metaspace` for a class-loader leak).

use super::{body, scaled_bytes, MemoryError};

/// One NMT category.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NmtCategory {
    /// As NMT names it: `Java Heap`, `Thread`, `Other`, `Metaspace`…
    pub name: String,
    pub reserved_bytes: u64,
    pub committed_bytes: u64,
    /// `(threads #24)` under `Thread`, `(classes #692)` under `Class`.
    pub count: Option<u64>,
}

/// A whole summary.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NativeMemory {
    pub reserved_bytes: u64,
    pub committed_bytes: u64,
    pub categories: Vec<NmtCategory>,
}

impl NativeMemory {
    pub fn parse(text: &str) -> Result<NativeMemory, MemoryError> {
        let mut m = NativeMemory::default();
        let mut total = false;
        for (n, line) in body(text)? {
            let t = line.trim();
            let garbled = |what| MemoryError::Garbled {
                line: n,
                what,
                text: t.chars().take(120).collect(),
            };
            if t.eq_ignore_ascii_case("Native memory tracking is not enabled") {
                return Err(MemoryError::NmtOff);
            }
            if let Some(rest) = t.strip_prefix("Total:") {
                let (r, c) = reserved_committed(rest)
                    .ok_or_else(|| garbled("expected `Total: reserved=…, committed=…`"))?;
                (m.reserved_bytes, m.committed_bytes, total) = (r, c, true);
            } else if let Some(rest) = t.strip_prefix('-') {
                let (name, sizes) = rest
                    .split_once('(')
                    .ok_or_else(|| garbled("expected `- Name (reserved=…, committed=…)`"))?;
                let (reserved_bytes, committed_bytes) = reserved_committed(sizes)
                    .ok_or_else(|| garbled("expected `reserved=…, committed=…`"))?;
                m.categories.push(NmtCategory {
                    name: name.trim().to_string(),
                    reserved_bytes,
                    committed_bytes,
                    count: None,
                });
            } else if let Some(k) = count(t) {
                if let Some(last) = m.categories.last_mut() {
                    last.count.get_or_insert(k);
                }
            } else if !total && !t.is_empty() && !t.starts_with('(') && !t.ends_with(':') {
                return Err(MemoryError::Jcmd(t.to_string()));
            }
        }
        if !total {
            return Err(MemoryError::Truncated);
        }
        Ok(m)
    }

    pub fn category(&self, name: &str) -> Option<&NmtCategory> {
        self.categories.iter().find(|c| c.name == name)
    }
}

/// `reserved=7723229KB, committed=74377KB` (in a category line, inside `( )`).
fn reserved_committed(s: &str) -> Option<(u64, u64)> {
    let value = |key: &str| {
        let at = s.find(key)? + key.len();
        let v: String = s[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        scaled_bytes(&v)
    };
    Some((value("reserved=")?, value("committed=")?))
}

/// `(threads #24)`, `(thread #25)` (JDK 17), `(classes #692)`.
fn count(t: &str) -> Option<u64> {
    let inner = t.strip_prefix('(')?.strip_suffix(')')?;
    let (word, n) = inner.split_once(" #")?;
    matches!(word, "thread" | "threads" | "classes")
        .then(|| n.trim().parse().ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::super::fixture;
    use super::*;

    #[test]
    fn reads_real_summaries_of_jdk_17_21_25() {
        for (f, threads) in [("nmt17.txt", 25), ("nmt21.txt", 24), ("nmt25.txt", 24)] {
            let m = NativeMemory::parse(&fixture(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
            // The test program held 1000 direct buffers of 1 KiB: NMT's `Other`.
            let other = m.category("Other").expect("Other");
            assert_eq!(other.committed_bytes, 1000 * 1024, "{f}");
            assert!(m
                .category("Java Heap")
                .is_some_and(|h| h.reserved_bytes > h.committed_bytes));
            let t = m.category("Thread").expect("Thread");
            assert!(
                t.count.is_some_and(|n| n.abs_diff(threads) <= 2),
                "{f}: {t:?}"
            );
            assert!(
                m.category("Class").is_some_and(|c| c.count.is_some()),
                "{f}"
            );
            assert!(
                m.committed_bytes
                    >= m.categories
                        .iter()
                        .map(|c| c.committed_bytes)
                        .max()
                        .unwrap_or(0)
            );
        }
    }

    #[test]
    fn tracking_off_cut_and_garbled_are_errors() {
        assert_eq!(
            NativeMemory::parse(&fixture("nmt_off.txt")),
            Err(MemoryError::NmtOff)
        );
        assert!(MemoryError::NmtOff
            .to_string()
            .contains("-XX:NativeMemoryTracking=summary"));
        assert_eq!(
            NativeMemory::parse("4711:\n\nNative Memory Tracking:\n\n"),
            Err(MemoryError::Truncated)
        );
        let bad = fixture("nmt21.txt").replacen("committed=1000KB)", "committed=lotsKB)", 1);
        assert!(matches!(
            NativeMemory::parse(&bad),
            Err(MemoryError::Garbled { .. })
        ));
        let full = fixture("nmt25.txt");
        // Cut anywhere: an error or a summary, never a panic.
        for k in full
            .match_indices('\n')
            .flat_map(|(i, _)| [i, i + 1, i + 7])
        {
            if full.is_char_boundary(k) {
                let _ = NativeMemory::parse(&full[..k]);
            }
        }
    }

    #[test]
    fn other_scales() {
        let text = "1:\nTotal: reserved=2GB, committed=3MB\n-  Other (reserved=5B, committed=0B)\n";
        let m = NativeMemory::parse(text).expect("scaled");
        assert_eq!((m.reserved_bytes, m.committed_bytes), (2 << 30, 3 << 20));
        assert_eq!(m.categories[0].reserved_bytes, 5);
    }
}
