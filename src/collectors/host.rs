//! The `proc-host` parser: one sample of `/proc/stat`, `/proc/meminfo`,
//! `/proc/loadavg`, `/proc/net/tcp{,6}` (raw under `@@tcp`, or counted on the
//! target under `@@tcp-counts`) and the target's `/proc/PID/{status,stat,fd}`,
//! separated by `@@section` markers (see `collectors/linux-host.yaml`).
//! CPU percentages need two samples, so the parser keeps the previous counters.

use std::collections::BTreeMap;

use super::error::CollectorError;
use crate::vocab::samples::{HostSample, ProcessSample};

#[derive(Debug, Clone, Copy)]
struct CpuTicks {
    user: u64,
    system: u64,
    idle: u64,
    iowait: u64,
    steal: u64,
    total: u64,
}

/// Stateful parser for the host stream.
#[derive(Debug, Default)]
pub struct ProcHostParser {
    port: Option<u16>,
    prev_cpu: Option<CpuTicks>,
    prev_proc: Option<(u32, u64)>,
}

pub const TCP_STATES: [&str; 12] = [
    "ESTABLISHED",
    "SYN_SENT",
    "SYN_RECV",
    "FIN_WAIT1",
    "FIN_WAIT2",
    "TIME_WAIT",
    "CLOSE",
    "CLOSE_WAIT",
    "LAST_ACK",
    "LISTEN",
    "CLOSING",
    "NEW_SYN_RECV",
];

fn perr(msg: impl Into<String>) -> CollectorError {
    CollectorError::Parse {
        parser: "proc-host".into(),
        msg: msg.into(),
    }
}

/// Split `@@name` sections.
fn sections(text: &str) -> BTreeMap<&str, Vec<&str>> {
    let mut out: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut cur: Option<&str> = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("@@") {
            cur = Some(name.trim());
            out.entry(name.trim()).or_default();
        } else if let Some(c) = cur {
            out.entry(c).or_default().push(line);
        }
    }
    out
}

fn pct(part: u64, total: u64) -> Option<f64> {
    (total > 0).then(|| ((part as f64 / total as f64) * 1000.0).round() / 10.0)
}

impl ProcHostParser {
    pub fn new(port: Option<u16>) -> Self {
        ProcHostParser {
            port,
            ..Default::default()
        }
    }

    /// Parse one sample. Returns it and the PID whose section was present
    /// (None = target process absent).
    pub fn parse(&mut self, text: &str) -> Result<(HostSample, Option<u32>), CollectorError> {
        let s = sections(text);
        let mut m = HostSample::default();
        let stat = s.get("stat").ok_or_else(|| perr("no @@stat section"))?;
        let cpu = self.stat(stat, &mut m)?;
        let mem = s
            .get("meminfo")
            .ok_or_else(|| perr("no @@meminfo section"))?;
        meminfo(mem, &mut m)?;
        let la = s
            .get("loadavg")
            .and_then(|v| v.first())
            .ok_or_else(|| perr("no @@loadavg section"))?;
        loadavg(la, &mut m)?;
        self.tcp(&s, &mut m);
        let seen_pid = match s.get("pid-status") {
            Some(status) => self.process(status, &s, cpu, &mut m),
            None => None,
        };
        Ok((m, seen_pid))
    }

    /// `/proc/stat`: `ncpu` and the CPU percentages since the previous sample
    /// (none on the first one).
    fn stat(&mut self, stat: &[&str], m: &mut HostSample) -> Result<CpuDelta, CollectorError> {
        let (cur, ncpu) = cpu_ticks(stat)?;
        m.ncpu = Some(ncpu as u64);
        let mut dtotal = 0u64;
        if let Some(p) = self.prev_cpu {
            dtotal = cur.total.saturating_sub(p.total);
            cpu_pcts(&cur, &p, dtotal, m);
        }
        self.prev_cpu = Some(cur);
        Ok(CpuDelta { dtotal, ncpu })
    }

    /// `/proc/net/tcp{,6}` (raw) and `@@tcp-counts` (counted on the target):
    /// connections per state, for the host and for the service port.
    fn tcp(&self, s: &BTreeMap<&str, Vec<&str>>, m: &mut HostSample) {
        let mut all = StateCounts::new();
        let mut port = StateCounts::new();
        for line in s.get("tcp").map(Vec::as_slice).unwrap_or_default() {
            self.tcp_line(line, &mut all, &mut port);
        }
        for line in s.get("tcp-counts").map(Vec::as_slice).unwrap_or_default() {
            self.tcp_count_line(line, &mut all, &mut port);
        }
        let named = |c: StateCounts| c.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        m.tcp = named(all);
        if let Some(p) = self.port {
            m.port = Some(p);
            m.port_tcp = Some(named(port));
        }
    }

    /// One `/proc/net/tcp` row: `sl local rem st …`.
    fn tcp_line(&self, line: &str, all: &mut StateCounts, port: &mut StateCounts) {
        let t: Vec<&str> = line.split_whitespace().collect();
        if t.len() < 4 || t[0] == "sl" {
            return;
        }
        let Some(name) = tcp_state(t[3]) else {
            return;
        };
        *all.entry(name).or_default() += 1;
        // Server side of the service: the LOCAL port is the service port
        // (a loopback connection appears twice, once per end).
        let lport = t[1]
            .rsplit(':')
            .next()
            .and_then(|p| u16::from_str_radix(p, 16).ok());
        if self.port.is_some() && lport == self.port {
            *port.entry(name).or_default() += 1;
        }
    }

    /// One count aggregated on the target: `all|port <hex state> <count>`.
    fn tcp_count_line(&self, line: &str, all: &mut StateCounts, port: &mut StateCounts) {
        let t: Vec<&str> = line.split_whitespace().collect();
        let (Some(scope), Some(st), Some(n)) = (t.first(), t.get(1), t.get(2)) else {
            return;
        };
        let (Some(name), Ok(n)) = (tcp_state(st), n.parse::<u64>()) else {
            return;
        };
        match *scope {
            "all" => *all.entry(name).or_default() += n,
            "port" if self.port.is_some() => *port.entry(name).or_default() += n,
            _ => {}
        }
    }

    /// The target's `/proc/PID/{status,stat,fd}` as the `proc` object;
    /// returns the PID from `status`.
    fn process(
        &mut self,
        status: &[&str],
        s: &BTreeMap<&str, Vec<&str>>,
        cpu: CpuDelta,
        m: &mut HostSample,
    ) -> Option<u32> {
        let pid = kv_u64(status, "Pid").map(|p| p as u32);
        let ticks = s
            .get("pid-stat")
            .and_then(|v| v.first())
            .and_then(|l| pid_ticks(l));
        m.process = Some(ProcessSample {
            pid,
            rss_kb: kv_u64(status, "VmRSS"),
            hwm_kb: kv_u64(status, "VmHWM"),
            threads: kv_u64(status, "Threads"),
            fds: s
                .get("pid-fd")
                .and_then(|v| v.first())
                .and_then(|x| x.trim().parse::<u64>().ok()),
            cpu_pct: self.process_cpu(pid, ticks, cpu),
        });
        pid
    }

    /// The process's CPU % of one core since the previous sample of the same PID.
    fn process_cpu(&mut self, pid: Option<u32>, ticks: Option<u64>, cpu: CpuDelta) -> Option<f64> {
        let (Some(t), Some(pid)) = (ticks, pid) else {
            return None;
        };
        let mut out = None;
        if let Some((ppid, pt)) = self.prev_proc {
            if ppid == pid && cpu.dtotal > 0 {
                // % of one core: process ticks over (all-cpu ticks / ncpu).
                let v = t.saturating_sub(pt) as f64 / (cpu.dtotal as f64 / cpu.ncpu as f64) * 100.0;
                out = Some((v * 10.0).round() / 10.0);
            }
        }
        self.prev_proc = Some((pid, t));
        out
    }
}

/// Connections per TCP state name.
type StateCounts = BTreeMap<&'static str, u64>;

/// The all-CPU tick delta since the previous sample (0 on the first) and the
/// CPU count, which scale the process's CPU %.
#[derive(Debug, Clone, Copy)]
struct CpuDelta {
    dtotal: u64,
    ncpu: usize,
}

/// The aggregate `cpu ` line of `/proc/stat` and the number of `cpuN` lines.
fn cpu_ticks(stat: &[&str]) -> Result<(CpuTicks, usize), CollectorError> {
    let cpu_line = stat
        .iter()
        .find(|l| l.starts_with("cpu "))
        .ok_or_else(|| perr("no `cpu` line in /proc/stat"))?;
    let f: Vec<u64> = cpu_line
        .split_whitespace()
        .skip(1)
        .map(|x| {
            x.parse::<u64>()
                .map_err(|_| perr(format!("bad cpu field `{x}`")))
        })
        .collect::<Result<_, _>>()?;
    if f.len() < 8 {
        return Err(perr("short `cpu` line"));
    }
    let ncpu = stat
        .iter()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count()
        .max(1);
    // guest/guest_nice are already inside user/nice: total = first 8 fields.
    let ticks = CpuTicks {
        user: f[0] + f[1],
        system: f[2] + f[5] + f[6],
        idle: f[3],
        iowait: f[4],
        steal: f[7],
        total: f[..8].iter().sum(),
    };
    Ok((ticks, ncpu))
}

/// CPU percentages between two `/proc/stat` samples `dtotal` ticks apart.
fn cpu_pcts(cur: &CpuTicks, p: &CpuTicks, dtotal: u64, m: &mut HostSample) {
    let d = |a: u64, b: u64| a.saturating_sub(b);
    m.cpu_user_pct = pct(d(cur.user, p.user), dtotal);
    m.cpu_system_pct = pct(d(cur.system, p.system), dtotal);
    m.cpu_iowait_pct = pct(d(cur.iowait, p.iowait), dtotal);
    m.cpu_steal_pct = pct(d(cur.steal, p.steal), dtotal);
    let idle = d(cur.idle, p.idle) + d(cur.iowait, p.iowait);
    m.cpu_busy_pct = pct(dtotal.saturating_sub(idle), dtotal);
}

/// `/proc/meminfo` (kB): total, available and used memory.
fn meminfo(mem: &[&str], m: &mut HostSample) -> Result<(), CollectorError> {
    let total = kv_u64(mem, "MemTotal").ok_or_else(|| perr("no MemTotal"))?;
    let avail = kv_u64(mem, "MemAvailable").ok_or_else(|| perr("no MemAvailable"))?;
    m.mem_total_kb = Some(total);
    m.mem_available_kb = Some(avail);
    m.mem_used_kb = Some(total.saturating_sub(avail));
    Ok(())
}

/// `/proc/loadavg`: the 1, 5 and 15 minute load averages.
fn loadavg(la: &str, m: &mut HostSample) -> Result<(), CollectorError> {
    let l: Vec<f64> = la
        .split_whitespace()
        .take(3)
        .filter_map(|x| x.parse().ok())
        .collect();
    if l.len() != 3 {
        return Err(perr(format!("bad loadavg `{la}`")));
    }
    m.load1 = Some(l[0]);
    m.load5 = Some(l[1]);
    m.load15 = Some(l[2]);
    Ok(())
}

/// The first number after `Key:` in `Key: value [unit]` lines
/// (`/proc/meminfo`, `/proc/PID/status`).
fn kv_u64(lines: &[&str], key: &str) -> Option<u64> {
    lines
        .iter()
        .find(|l| l.starts_with(key) && l[key.len()..].starts_with(':'))
        .and_then(|l| l[key.len() + 1..].split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// A hex TCP state (`01` … `0C`) by name.
pub(super) fn tcp_state(hex: &str) -> Option<&'static str> {
    let st = u8::from_str_radix(hex, 16).ok()?;
    TCP_STATES.get(usize::from(st).wrapping_sub(1)).copied()
}

/// `/proc/PID/stat`: utime + stime, fields 14-15, counted after the last `)`
/// (the command name may contain spaces and parens).
fn pid_ticks(line: &str) -> Option<u64> {
    let rest = &line[line.rfind(')')? + 1..];
    let t: Vec<&str> = rest.split_whitespace().collect();
    let u = t.get(11)?.parse::<u64>().ok()?;
    let s = t.get(12)?.parse::<u64>().ok()?;
    Some(u + s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "@@stat
cpu  100 0 50 800 10 0 0 0 0 0
cpu0 50 0 25 400 5 0 0 0 0 0
cpu1 50 0 25 400 5 0 0 0 0 0
@@meminfo
MemTotal:        2000000 kB
MemFree:          500000 kB
MemAvailable:    1500000 kB
@@loadavg
0.50 0.40 0.30 2/300 1234
@@tcp
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 100 0 0 10 0
   2: 0100007F:D431 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 100 0 0 10 0
   3: 0100007F:1F90 0100007F:D432 08 00000000:00000000 00:00000000 00000000     0        0 4 1 0000000000000000 100 0 0 10 0
@@pid-status
Name:\tjava
Pid:\t4242
VmHWM:\t  300000 kB
VmRSS:\t  250000 kB
Threads:\t42
@@pid-stat
4242 (ja va) S 1 1 1 0 -1 0 0 0 0 0 100 20 0 0 20 0 42 0 1 1 1
@@pid-fd
77
";

    #[test]
    fn parses_a_sample_and_rates_on_the_second() {
        let mut p = ProcHostParser::new(Some(8080));
        let (m, pid) = p.parse(A).unwrap();
        assert_eq!(pid, Some(4242));
        assert_eq!(m.mem_used_kb, Some(500000));
        assert_eq!(m.load1, Some(0.5));
        assert_eq!(m.tcp["ESTABLISHED"], 2);
        assert_eq!(m.connections("ESTABLISHED"), Some(1));
        assert_eq!(m.connections("CLOSE_WAIT"), Some(1));
        assert_eq!(m.connections("LISTEN"), Some(1));
        let proc = m.process.as_ref().expect("the target process");
        assert_eq!(proc.threads, Some(42));
        assert_eq!(proc.fds, Some(77));
        assert!(m.cpu_busy_pct.is_none());
        // 100 more ticks: 60 user, 20 system, 20 idle; process +50 ticks.
        let b = A
            .replace("cpu  100 0 50 800", "cpu  160 0 70 820")
            .replace("0 100 20 0 0 20", "0 140 30 0 0 20");
        let (m, _) = p.parse(&b).unwrap();
        assert_eq!(m.cpu_user_pct, Some(60.0));
        assert_eq!(m.cpu_system_pct, Some(20.0));
        assert_eq!(m.cpu_busy_pct, Some(80.0));
        // 50 ticks over (100/2 cores) = 100 % of one core.
        assert_eq!(m.process.and_then(|p| p.cpu_pct), Some(100.0));
    }

    #[test]
    fn counts_aggregated_on_the_target() {
        let mut p = ProcHostParser::new(Some(8080));
        let text = A.replace(
            "@@pid-status",
            "@@tcp-counts\nall 06 4000\nall 01 3\nport 01 2\nport 0A 1\n@@pid-status",
        );
        let (m, _) = p.parse(&text).unwrap();
        assert_eq!(m.tcp["TIME_WAIT"], 4000);
        assert_eq!(m.tcp["ESTABLISHED"], 5);
        assert_eq!(m.connections("ESTABLISHED"), Some(3));
        assert_eq!(m.connections("LISTEN"), Some(2));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut p = ProcHostParser::new(None);
        assert!(p.parse("").is_err());
        assert!(p.parse("@@stat\ncpu x y\n").is_err());
    }
}
