//! `jcmd PID GC.class_histogram` (and `jmap -histo:live`): one row per class,
//! `  1:   1480   450440  [I (java.base@17.0.15)`, then `Total  N  BYTES`.
//! JDK 8 prints no module; JDK 9+ appends `(module@version)`, which is
//! dropped so a class keeps one name across JDK versions.

use super::{body, MemoryError};

/// One class of the histogram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassRow {
    /// As the JVM names it: `com.acme.CacheEntry`, `[I`, `[Ljava.lang.Object;`.
    pub class: String,
    pub instances: u64,
    pub bytes: u64,
}

impl ClassRow {
    /// A primitive array (`[I`, `[B`, …): its owner is not in the histogram.
    pub fn is_primitive_array(&self) -> bool {
        let b = self.class.as_bytes();
        b.len() == 2 && b[0] == b'[' && b"ZBCSIJFD".contains(&b[1])
    }

    /// The Java spelling for people: `int[]`, `java.lang.Object[]`.
    pub fn display_name(&self) -> String {
        let dims = self.class.bytes().take_while(|b| *b == b'[').count();
        if dims == 0 {
            return self.class.clone();
        }
        let elem = &self.class[dims..];
        let base = match elem {
            "Z" => "boolean",
            "B" => "byte",
            "C" => "char",
            "S" => "short",
            "I" => "int",
            "J" => "long",
            "F" => "float",
            "D" => "double",
            _ => elem
                .strip_prefix('L')
                .and_then(|e| e.strip_suffix(';'))
                .unwrap_or(elem),
        };
        format!("{base}{}", "[]".repeat(dims))
    }
}

/// A whole histogram: rows largest first, as printed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClassHistogram {
    pub rows: Vec<ClassRow>,
    pub total_instances: u64,
    pub total_bytes: u64,
}

impl ClassHistogram {
    /// Parse jcmd's output. The `Total` line is required: without it the
    /// output was cut and its rows are not the whole heap.
    pub fn parse(text: &str) -> Result<ClassHistogram, MemoryError> {
        let mut h = ClassHistogram::default();
        let mut header = false;
        for (n, line) in body(text)? {
            let t = line.trim();
            if t.is_empty() || t.starts_with("---") {
                continue;
            }
            if t.starts_with("num ") {
                header = true;
                continue;
            }
            let garbled = |what| MemoryError::Garbled {
                line: n,
                what,
                text: t.chars().take(120).collect(),
            };
            if let Some(rest) = t.strip_prefix("Total") {
                let mut f = rest.split_whitespace();
                let (Some(i), Some(b)) = (f.next(), f.next()) else {
                    return Err(garbled("a Total line needs instances and bytes"));
                };
                h.total_instances = i
                    .parse()
                    .map_err(|_| garbled("Total instances is not a number"))?;
                h.total_bytes = b
                    .parse()
                    .map_err(|_| garbled("Total bytes is not a number"))?;
                return if header {
                    Ok(h)
                } else {
                    Err(garbled("a Total line before the column header"))
                };
            }
            if !header {
                // jcmd's own complaints come before any header.
                return Err(MemoryError::Jcmd(t.to_string()));
            }
            h.rows
                .push(row(t).ok_or_else(|| garbled("expected `N: instances bytes class`"))?);
        }
        Err(MemoryError::Truncated)
    }

    /// The row of one class, by its JVM name.
    pub fn class(&self, name: &str) -> Option<&ClassRow> {
        self.rows.iter().find(|r| r.class == name)
    }
}

fn row(t: &str) -> Option<ClassRow> {
    let (rank, rest) = t.split_once(':')?;
    rank.trim().parse::<u64>().ok()?;
    let mut f = rest.split_whitespace();
    let instances = f.next()?.parse().ok()?;
    let bytes = f.next()?.parse().ok()?;
    let class = f.next()?.to_string();
    // What is left is the module, `(java.base@17.0.15)`, or nothing.
    match f.next() {
        Some(m) if m.starts_with('(') => {}
        Some(_) => return None,
        None => {}
    }
    Some(ClassRow {
        class,
        instances,
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::super::fixture;
    use super::*;

    #[test]
    fn reads_real_histograms_of_jdk_17_21_25() {
        for (f, ints) in [
            ("hist17.txt", 1480),
            ("hist21.txt", 1156),
            ("hist25.txt", 1163),
        ] {
            let h = ClassHistogram::parse(&fixture(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
            let i = h.class("[I").expect("int arrays");
            assert_eq!(i.instances, ints, "{f}");
            assert!(i.is_primitive_array() && i.display_name() == "int[]");
            // The test program kept exactly 1000 direct buffers.
            assert_eq!(
                h.class("java.nio.DirectByteBuffer").map(|r| r.instances),
                Some(1000),
                "{f}"
            );
            assert_eq!(
                h.rows.iter().map(|r| r.bytes).sum::<u64>(),
                h.total_bytes,
                "{f}"
            );
            assert_eq!(
                h.rows.iter().map(|r| r.instances).sum::<u64>(),
                h.total_instances,
                "{f}"
            );
        }
    }

    #[test]
    fn jdk8_rows_have_no_module() {
        let text = "123:\n num     #instances         #bytes  class name\n----------------------------------------------\n   1:            10            160  com.acme.CacheEntry\n   2:             3             72  [Ljava.lang.Object;\nTotal            13            232\n";
        let h = ClassHistogram::parse(text).expect("jdk8");
        assert_eq!(h.rows[0].class, "com.acme.CacheEntry");
        assert_eq!(h.rows[1].display_name(), "java.lang.Object[]");
        assert!(!h.rows[1].is_primitive_array());
    }

    #[test]
    fn cut_garbled_and_refused_outputs_are_errors() {
        let full = fixture("hist21.txt");
        let cut: String = full.lines().take(40).map(|l| format!("{l}\n")).collect();
        assert_eq!(ClassHistogram::parse(&cut), Err(MemoryError::Truncated));
        assert_eq!(ClassHistogram::parse(""), Err(MemoryError::Empty));
        let bad = full.replacen("   2:", "   2: x", 1);
        assert!(
            matches!(
                ClassHistogram::parse(&bad),
                Err(MemoryError::Garbled { line: 5, .. })
            ),
            "{:?}",
            ClassHistogram::parse(&bad)
        );
        let refused = "4711:\njava.lang.IllegalArgumentException: Unknown diagnostic command\n";
        assert!(matches!(
            ClassHistogram::parse(refused),
            Err(MemoryError::Jcmd(_))
        ));
        // Cut anywhere before the Total line: an error, never a panic or a short histogram.
        let total_at = full.find("Total").expect("Total line");
        for k in full
            .match_indices('\n')
            .flat_map(|(i, _)| [i, i + 1, i + 7])
        {
            if k < total_at && full.is_char_boundary(k) {
                assert!(ClassHistogram::parse(&full[..k]).is_err(), "cut at {k}");
            }
        }
    }
}
