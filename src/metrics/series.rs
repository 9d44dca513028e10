//! `timeseries.csv`: one row per second and phase, written as each window
//! closes so an interrupted run keeps every second it measured.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{pct_us, Class, Stats, CLASSES};

/// One row of the time series.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Row {
    pub second: u64,
    pub phase: String,
    pub offered: u64,
    pub dropped: u64,
    /// Shed answers that carried `Retry-After`.
    pub shed_retry_after: u64,
    /// Completed per class, in [`CLASSES`] order.
    pub counts: [u64; CLASSES.len()],
    pub in_flight: u64,
    /// Worst scheduler lateness in this second (open model), µs.
    pub sched_lag_us: u64,
    /// Busiest load worker's event-loop busy share, percent (0 when unknown).
    pub busy_pct: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    /// Service time (from the actual send) p99.
    pub svc_p99_us: u64,
    /// Connections opened in this second: the connection rate per second.
    #[serde(default)]
    pub connects: u64,
    /// Their connect time (TCP + TLS) p99, kept apart from request latency.
    #[serde(default)]
    pub connect_p99_us: u64,
    /// Latency p99 of the `ok` answers and of the `shed` ones apart (fast
    /// 503s must not make a second read faster than it served); 0 when none.
    #[serde(default)]
    pub ok_p99_us: u64,
    #[serde(default)]
    pub shed_p99_us: u64,
    /// p99 of the wait from the intended start to the send: brunt's own
    /// queue for a lane (see [`super::ClassHists::wait`]).
    #[serde(default)]
    pub wait_p99_us: u64,
    /// Scenario steps that refreshed their credentials in this second.
    #[serde(default)]
    pub refreshes: u64,
}

/// One second of the run, all its rows together: the one per-second merge
/// (the judge, the live view, `brunt watch` and `brunt report` all read
/// seconds through it). A second at a phase boundary has one row per phase:
/// counts add up, percentiles keep the worse (percentiles of two histograms
/// are never averaged).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Second {
    pub t: u64,
    /// The phase running at the end of the second (its last row).
    pub phase: String,
    pub offered: u64,
    pub dropped: u64,
    /// Answers per class, in [`CLASSES`] order.
    pub counts: [u64; CLASSES.len()],
    pub ok: u64,
    pub shed: u64,
    /// Non-ok, non-shed, non-retried answers (dropped not included).
    pub errors: u64,
    pub completed: u64,
    pub in_flight: u64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    /// Service time p99 (from the actual send), the worse of the second's rows.
    pub svc_p99_us: u64,
    /// Highest p99 of the phases in this second (ms): a boundary second keeps the worse.
    pub p99_ms: f64,
    /// The open-model scheduler's lateness (µs) and the busiest worker's
    /// event-loop share (%), the worst of the second's rows.
    pub sched_lag_us: u64,
    pub busy_pct: f64,
    /// `ok` and `shed` latency p99 apart, and the wait for a lane (µs; the
    /// worse of a boundary second's rows).
    pub ok_p99_us: u64,
    pub shed_p99_us: u64,
    pub wait_p99_us: u64,
}

impl Second {
    /// The rows of one second (one per phase that ran in it).
    pub fn of(rows: &[Row]) -> Option<Second> {
        let first = rows.first()?;
        let mut s = Second {
            t: first.second,
            ..Default::default()
        };
        for r in rows {
            s.add(r);
        }
        Some(s)
    }

    fn add(&mut self, r: &Row) {
        self.phase.clone_from(&r.phase);
        self.offered += r.offered;
        self.dropped += r.dropped;
        for (a, b) in self.counts.iter_mut().zip(r.counts) {
            *a += b;
        }
        let (ok, shed) = (r.count(Class::Ok), r.count(Class::Shed));
        self.ok += ok;
        self.shed += shed;
        self.completed += r.completed();
        self.errors += r.completed() - ok - shed - r.count(Class::Retried);
        // Written on the second's first row only.
        self.in_flight = self.in_flight.max(r.in_flight);
        self.p50_us = self.p50_us.max(r.p50_us);
        self.p90_us = self.p90_us.max(r.p90_us);
        self.p99_us = self.p99_us.max(r.p99_us);
        self.max_us = self.max_us.max(r.max_us);
        self.svc_p99_us = self.svc_p99_us.max(r.svc_p99_us);
        self.p99_ms = self.p99_ms.max(r.p99_us as f64 / 1000.0);
        self.sched_lag_us = self.sched_lag_us.max(r.sched_lag_us);
        self.busy_pct = self.busy_pct.max(r.busy_pct);
        self.ok_p99_us = self.ok_p99_us.max(r.ok_p99_us);
        self.shed_p99_us = self.shed_p99_us.max(r.shed_p99_us);
        self.wait_p99_us = self.wait_p99_us.max(r.wait_p99_us);
    }

    pub fn count(&self, c: Class) -> u64 {
        self.counts[c as usize]
    }
}

/// Merge rows by second, in order of the second.
pub fn seconds(rows: &[Row]) -> Vec<Second> {
    let mut by: std::collections::BTreeMap<u64, Second> = Default::default();
    for r in rows {
        by.entry(r.second)
            .or_insert_with(|| Second {
                t: r.second,
                ..Default::default()
            })
            .add(r);
    }
    by.into_values().collect()
}

impl Row {
    pub fn from_stats(
        second: u64,
        phase: &str,
        s: &Stats,
        in_flight: u64,
        sched_lag_us: u64,
        busy_pct: f64,
    ) -> Row {
        let lat = s.latency(None);
        let svc = s.service(None);
        let mut counts = [0u64; CLASSES.len()];
        for (i, c) in CLASSES.iter().enumerate() {
            counts[i] = s.count(*c);
        }
        Row {
            second,
            phase: phase.to_string(),
            offered: s.offered,
            dropped: s.dropped,
            shed_retry_after: s.shed_retry_after,
            counts,
            in_flight,
            sched_lag_us,
            busy_pct,
            p50_us: pct_us(&lat, 0.50),
            p90_us: pct_us(&lat, 0.90),
            p99_us: pct_us(&lat, 0.99),
            max_us: if lat.is_empty() { 0 } else { lat.max() / 1000 },
            svc_p99_us: pct_us(&svc, 0.99),
            connects: s.connects,
            connect_p99_us: s.connect_time.as_ref().map_or(0, |h| pct_us(h, 0.99)),
            ok_p99_us: pct_us(&s.latency(Some(Class::Ok)), 0.99),
            shed_p99_us: pct_us(&s.latency(Some(Class::Shed)), 0.99),
            wait_p99_us: pct_us(&s.wait(None), 0.99),
            refreshes: s.refreshes,
        }
    }
    pub fn count(&self, c: Class) -> u64 {
        self.counts[c as usize]
    }
    pub fn completed(&self) -> u64 {
        self.counts.iter().sum()
    }
}

fn header() -> String {
    let mut h = String::from("second,phase,offered,dropped");
    for c in CLASSES {
        h.push(',');
        h.push_str(c.name());
    }
    h.push_str(",shed_retry_after,in_flight,sched_lag_ms,worker_busy_pct,p50_ms,p90_ms,p99_ms,max_ms,service_p99_ms,connections,connect_p99_ms,ok_p99_ms,shed_p99_ms,wait_p99_ms,refreshes");
    h
}

pub struct SeriesWriter {
    out: BufWriter<File>,
}

impl SeriesWriter {
    pub fn create(path: &Path) -> io::Result<Self> {
        let mut out = BufWriter::new(File::create(path)?);
        writeln!(out, "{}", header())?;
        out.flush()?;
        Ok(SeriesWriter { out })
    }
    pub fn row(&mut self, r: &Row) -> io::Result<()> {
        write!(
            self.out,
            "{},{},{},{}",
            r.second, r.phase, r.offered, r.dropped
        )?;
        for c in r.counts {
            write!(self.out, ",{c}")?;
        }
        let ms = |us: u64| us as f64 / 1000.0;
        writeln!(
            self.out,
            ",{},{},{:.3},{:.1},{:.3},{:.3},{:.3},{:.3},{:.3},{},{:.3},{:.3},{:.3},{:.3},{}",
            r.shed_retry_after,
            r.in_flight,
            ms(r.sched_lag_us),
            r.busy_pct,
            ms(r.p50_us),
            ms(r.p90_us),
            ms(r.p99_us),
            ms(r.max_us),
            ms(r.svc_p99_us),
            r.connects,
            ms(r.connect_p99_us),
            ms(r.ok_p99_us),
            ms(r.shed_p99_us),
            ms(r.wait_p99_us),
            r.refreshes
        )
    }
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Read a time series back (for `brunt report DIR`). A torn last line (the
/// run was killed mid-write, the disk filled) is skipped; see [`read_noting`].
pub fn read(path: &Path) -> io::Result<Vec<Row>> {
    read_noting(path).map(|(rows, _)| rows)
}

/// What [`read_noting`] left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skipped {
    /// The last line was cut short: its number (1-based) and, when that much
    /// of it is there, its second.
    pub cut_last: Option<(usize, Option<u64>)>,
    /// Other lines that are not rows of this format.
    pub unreadable: usize,
}

impl Skipped {
    pub fn is_empty(&self) -> bool {
        self.cut_last.is_none() && self.unreadable == 0
    }
    /// One line for the report, naming `file`.
    pub fn describe(&self, file: &str) -> Option<String> {
        let mut parts = vec![];
        if let Some((line, second)) = self.cut_last {
            parts.push(match second {
                Some(s) => format!("line {line} (second {s}) is cut short and skipped"),
                None => format!("line {line} is cut short and skipped"),
            });
        }
        if self.unreadable > 0 {
            parts.push(format!("{} unreadable line(s) skipped", self.unreadable));
        }
        (!parts.is_empty()).then(|| format!("{file}: {}", parts.join("; ")))
    }
}

/// [`read`], saying what was skipped.
pub fn read_noting(path: &Path) -> io::Result<(Vec<Row>, Skipped)> {
    let text = std::fs::read(path)?;
    let mut rows = Vec::new();
    let mut skipped = Skipped::default();
    let lines: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
    // A file ending in a newline has an empty last piece: not a line.
    let ends_whole = text.last() == Some(&b'\n');
    let n = lines.len() - usize::from(ends_whole);
    for (i, raw) in lines.iter().take(n).enumerate() {
        let line = String::from_utf8_lossy(raw);
        if i == 0 || line.trim().is_empty() {
            continue;
        }
        // A last line without its newline was cut, even if what is left parses.
        let cut = i + 1 == n && !ends_whole;
        match parse_row(&line).filter(|_| !cut) {
            Some(r) => rows.push(r),
            None if i + 1 == n => {
                let second = line.split(',').next().and_then(|s| s.parse().ok());
                skipped.cut_last = Some((i + 1, second));
            }
            None => skipped.unreadable += 1,
        }
    }
    Ok((rows, skipped))
}

/// One data line of the file; `None` for the header or a line that is not a
/// row (also what `brunt watch` reads as the file grows).
pub fn parse_row(line: &str) -> Option<Row> {
    let v: Vec<&str> = line.split(',').collect();
    // Classes only ever get appended, and the columns after them were 9,
    // then 11 since `connections`, 14 since `ok_p99_ms`, 15 since
    // `refreshes` (with `retried`): each layout has its own length.
    let (k, tail) = match v.len() {
        21 => (8, 9),   // before `unfinished`
        22 => (9, 9),   // before `connections`
        24 => (9, 11),  // before `body_too_large`
        25 => (10, 11), // before `ok_p99_ms`
        28 => (10, 14), // before `retried` and `refreshes`
        n if n == 4 + CLASSES.len() + 15 => (CLASSES.len(), 15),
        _ => return None,
    };
    let n = |s: &str| s.parse::<u64>().ok();
    let ms = |s: &str| s.parse::<f64>().ok().map(|x| (x * 1000.0).round() as u64);
    let mut counts = [0u64; CLASSES.len()];
    for (i, c) in counts.iter_mut().take(k).enumerate() {
        *c = n(v[4 + i])?;
    }
    let t = &v[4 + k..];
    Some(Row {
        second: n(v[0])?,
        phase: v[1].to_string(),
        offered: n(v[2])?,
        dropped: n(v[3])?,
        counts,
        shed_retry_after: n(t[0])?,
        in_flight: n(t[1])?,
        sched_lag_us: ms(t[2])?,
        busy_pct: t[3].parse().ok()?,
        p50_us: ms(t[4])?,
        p90_us: ms(t[5])?,
        p99_us: ms(t[6])?,
        max_us: ms(t[7])?,
        svc_p99_us: ms(t[8])?,
        connects: if tail > 9 { n(t[9])? } else { 0 },
        connect_p99_us: if tail > 9 { ms(t[10])? } else { 0 },
        ok_p99_us: if tail > 11 { ms(t[11])? } else { 0 },
        shed_p99_us: if tail > 11 { ms(t[12])? } else { 0 },
        wait_p99_us: if tail > 11 { ms(t[13])? } else { 0 },
        refreshes: if tail > 14 { n(t[14])? } else { 0 },
    })
}

/// A row of `ok` answers with the given p99 (the live view's and the tail's tests).
#[cfg(test)]
pub(crate) fn test_row(second: u64, phase: &str, ok: u64, p99_us: u64) -> Row {
    let mut r = Row {
        second,
        phase: phase.into(),
        offered: ok,
        p99_us,
        p50_us: p99_us / 2,
        ..Row::default()
    };
    r.counts[Class::Ok as usize] = ok;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ok_shed_and_wait_columns_round_trip_and_older_layouts_still_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("timeseries.csv");
        let mut r = test_row(3, "main", 10, 40_000);
        r.counts[Class::Shed as usize] = 5;
        (r.ok_p99_us, r.shed_p99_us, r.wait_p99_us) = (40_000, 300, 12_000);
        r.counts[Class::Retried as usize] = 2;
        r.refreshes = 2;
        let mut w = SeriesWriter::create(&path).expect("create");
        w.row(&r).expect("row");
        w.flush().expect("flush");
        assert_eq!(read(&path).expect("read"), vec![r.clone()]);
        // A line written before `retried` and `refreshes` (the class and the
        // last column fewer) reads with zeros for them.
        let text = std::fs::read_to_string(&path).expect("text");
        let line = text.lines().nth(1).expect("a row");
        let mut older: Vec<&str> = line.split(',').collect();
        older.remove(4 + Class::Retried as usize);
        older.pop();
        let before = parse_row(&older.join(",")).expect("layout before `retried`");
        assert_eq!(before.refreshes, 0);
        assert_eq!(before.count(Class::Shed), 5);
        assert_eq!(before.wait_p99_us, r.wait_p99_us);
        // A line written before `ok_p99_ms` (three columns fewer) reads with zeros.
        let old = parse_row(&older[..older.len() - 3].join(",")).expect("older layout");
        assert_eq!((old.ok_p99_us, old.shed_p99_us, old.wait_p99_us), (0, 0, 0));
        assert_eq!(old.p99_us, r.p99_us);
    }
}
