//! `timeseries.csv`: one row per second and phase, written as each window
//! closes so an interrupted run keeps every second it measured.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
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
    h.push_str(",shed_retry_after,in_flight,sched_lag_ms,worker_busy_pct,p50_ms,p90_ms,p99_ms,max_ms,service_p99_ms,connections,connect_p99_ms");
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
            ",{},{},{:.3},{:.1},{:.3},{:.3},{:.3},{:.3},{:.3},{},{:.3}",
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
            ms(r.connect_p99_us)
        )
    }
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Read a time series back (for `brunt report DIR`). A torn last line (the
/// run was killed mid-write) is skipped.
pub fn read(path: &Path) -> io::Result<Vec<Row>> {
    let f = BufReader::new(File::open(path)?);
    let mut rows = Vec::new();
    // Columns after the classes: 9, and 11 since `connections`.
    let mut tail = 9;
    for (i, line) in f.lines().enumerate() {
        let line = line?;
        if i == 0 {
            if line.split(',').any(|c| c == "connections") {
                tail = 11;
            }
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let v: Vec<&str> = line.split(',').collect();
        // Classes only ever get appended: a file from before `unfinished`
        // has fewer class columns, in the same order.
        let Some(k) = v
            .len()
            .checked_sub(4 + tail)
            .filter(|k| (8..=CLASSES.len()).contains(k))
        else {
            continue;
        };
        let n = |s: &str| s.parse::<u64>().ok();
        let ms = |s: &str| s.parse::<f64>().ok().map(|x| (x * 1000.0).round() as u64);
        let parsed = (|| {
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
            })
        })();
        if let Some(r) = parsed {
            rows.push(r);
        }
    }
    Ok(rows)
}
